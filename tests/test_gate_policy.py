"""The gate's decision policy and its first screen, on small synthetic runs (statuses made up:
they test the gate's logic, not claims about Triton releases).

- a relaxation (refused on the baseline, anything else on the candidate) never blocks;
- with declared targets, what changed only in other columns is "not on your targets";
- every catalog probe has one usage row, and one marked never team-relevant never blocks;
- gate.md opens with the verdict, counts and one line per change x kernel, lines folded.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from matrix.analyze.profile import MAY_AFFECT, USED, Profile, Use
from matrix.analyze.profile.declaration import Declaration
from matrix.core import DataFileError, Release
from matrix.gate import compare as gc
from matrix.gate import policy, summary
from matrix.gate import verdict as gv
from matrix.results import Result, Run, write_raw
from matrix.scan import ScanReport

OLD, NEW = Release.parse("3.8.0"), Release.parse("3.9.0")


def _run(release: str, results: list[Result]) -> Run:
    return Run(id=f"triton-{release}-numpy-2.4.6", env={"triton": release, "numpy": "2.4.6"},
               results=results)  # fmt: skip


def _fp(cells: dict[str, str], backend: str = "interpret", target: str | None = None) -> Result:
    return Result("fp.binary.add", backend, target, "observed", "", 0.0, {"cells": cells})


def _both(base: list[Result], cand: list[Result]) -> list[Run]:
    return [_run("3.8.0", base), _run("3.9.0", cand)]


def _decide(runs, profile=None, declaration=None) -> gv.GateReport:
    report = gv.GateReport("3.8.0", "3.9.0", "raw")
    gv.decide_runs(report, runs, OLD, NEW, [], ScanReport(), profile=profile,
                   declaration=declaration)  # fmt: skip
    report.decide()
    return report


# ------------------------------------------------------------------------------- relaxations


def test_a_cell_refused_on_the_baseline_is_new_on_the_candidate_never_blocking():
    runs = _both([_fp({"int8,fp8e5": "rejected", "float16,float32": "int16"})],
                 [_fp({"int8,fp8e5": "fp8e5", "float16,float32": "int16"})])  # fmt: skip
    report = _decide(runs)
    assert report.exit_code == gv.EXIT_SAFE, gv.render_markdown(report)
    [f] = report.comparison.findings
    assert (f.kind, f.probe, f.baseline, f.candidate) == (
        gc.RELAXATION,
        "fp.binary.add[int8,fp8e5]",
        "rejected",
        "fp8e5",
    )
    md = gv.render_markdown(report)
    assert "1 new on the candidate (relaxations)" in md
    assert "### New on the candidate (relaxations, never blocking) (1)" in md


def test_a_cell_refused_on_the_baseline_and_unobserved_on_the_candidate_is_not_undecidable():
    runs = _both([_fp({"int8,fp8e5": "rejected", "float16,float32": "int16"})],
                 [_fp({"int8,fp8e5": "skipped", "float16,float32": "int16"})])  # fmt: skip
    report = _decide(runs)
    assert report.exit_code == gv.EXIT_SAFE, gv.render_markdown(report)
    assert any("refused on 3.8.0" in n for n in report.comparison.notes)
    # observed on the baseline, unobserved on the candidate: still undecidable
    runs = _both([_fp({"int8,fp8e5": "fp8e5"})], [_fp({"int8,fp8e5": "skipped"})])
    assert _decide(runs).exit_code == gv.EXIT_UNDECIDABLE


def test_the_reverse_a_cell_the_candidate_refuses_still_blocks():
    runs = _both([_fp({"int8,fp8e5": "fp8e5"})], [_fp({"int8,fp8e5": "rejected"})])
    report = _decide(runs)
    assert report.exit_code == gv.EXIT_UNSAFE
    assert [f.kind for f in report.comparison.findings] == [gc.BEHAVIOUR]


def test_a_probe_row_refused_at_runtime_then_accepted_is_a_relaxation_even_if_scanned():
    """``rejected-runtime`` -> ``accepted`` (a check the candidate dropped) and ``absent`` ->
    anything: no code that runs on the baseline does it, whatever the scanner saw."""
    row = "descriptor_misaligned_stride"
    runs = _both([Result(row, "interpret", None, "rejected-runtime"),
                  Result("tensor_descriptor", "interpret", None, "absent")],
                 [Result(row, "interpret", None, "accepted"),
                  Result("tensor_descriptor", "interpret", None, "broken")])  # fmt: skip
    report = _decide(runs)
    assert report.exit_code == gv.EXIT_SAFE, gv.render_markdown(report)
    assert {f.kind for f in report.comparison.findings} == {gc.RELAXATION}


# ----------------------------------------------------------------------------------- targets


def _on_two_columns(change_on_aot: bool) -> list[Run]:
    base = [_fp({"float16,float32": "int16"}), _fp({"float16,float32": "int16"}, "aot", "cuda:90")]
    aot = "int32" if change_on_aot else "int16"
    cand = [_fp({"float16,float32": "int32"}), _fp({"float16,float32": aot}, "aot", "cuda:90")]
    return _both(base, cand)


def test_a_change_only_outside_the_declared_targets_does_not_block():
    cuda = Declaration(targets=("cuda:90",), source="pyproject.toml")
    report = _decide(_on_two_columns(change_on_aot=False), declaration=cuda)
    assert report.exit_code == gv.EXIT_SAFE, gv.render_markdown(report)
    assert [(f.probe, f.where) for f in report.off_target] == [
        ("fp.binary.add[float16,float32]", "interpret")
    ]
    md = gv.render_markdown(report)
    assert "1 not on your targets" in md and "### Not on your targets (1)" in md
    # undeclared: every column counts (fail closed)
    assert _decide(_on_two_columns(change_on_aot=False)).exit_code == gv.EXIT_UNSAFE
    # the same change on a column the team runs on still blocks, and only there
    report = _decide(_on_two_columns(change_on_aot=True), declaration=cuda)
    assert report.exit_code == gv.EXIT_UNSAFE
    assert [f.where for f in report.comparison.unsafe] == ["aot:cuda:90"]


def test_an_unobserved_cell_outside_the_targets_is_not_a_reason_to_be_undecided():
    base = [_fp({"a,b": "int16"}), _fp({"a,b": "int16"}, "aot", "cuda:90")]
    cand = [_fp({"a,b": "error"}), _fp({"a,b": "int16"}, "aot", "cuda:90")]
    assert _decide(_both(base, cand)).exit_code == gv.EXIT_UNDECIDABLE
    interp = Declaration(targets=("cuda:90",))
    report = _decide(_both(base, cand), declaration=interp)
    assert report.exit_code == gv.EXIT_SAFE, gv.render_markdown(report)
    assert len(report.off_target_undecidable) == 1


def test_columns_the_policy_reads():
    assert policy.column_of("aot:cuda:90") == "aot:cuda:90"
    assert policy.column_of("interpret") == "interpret"
    # an API name, the census's target-less column and the tests are about every target
    assert policy.column_of("triton.language.advance") is None
    assert policy.column_of("aot") is None
    assert policy.column_of("tests (numpy 2.4.6)") is None


def _raw(tmp_path: Path, runs: list[Run]) -> Path:
    raw = tmp_path / "raw"
    raw.mkdir()
    for run in runs:
        write_raw(run, raw / f"{run.id}.json")
    return raw


def _cli(tmp_path: Path, raw: Path, *extra: str) -> tuple[int, str, dict]:
    out = tmp_path / "out"
    args = ["--baseline", "3.8.0", "--candidate", "3.9.0", "--results", str(raw),
            "--out", str(out), "--no-project-scan", *extra]  # fmt: skip
    code = gv.main(args)
    return code, (out / "gate.md").read_text(), json.loads((out / "gate.json").read_text())


KERNEL = """import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.store(out_ptr + offs, x + y)


__all__ = ["add_kernel"]  # exported: a kernel nothing names is unreached (gate/reach.py)
"""


def test_the_declaration_is_found_above_the_scanned_code_and_narrows_the_columns(tmp_path):
    team = tmp_path / "team"
    (team / "src").mkdir(parents=True)
    (team / "src" / "k.py").write_text(KERNEL)
    # the team's code runs under the interpreter (matrix.gate.targets reads that)
    (team / "src" / "conftest.py").write_text('import os\nos.environ["TRITON_INTERPRET"] = "1"\n')
    raw = _raw(tmp_path, _on_two_columns(change_on_aot=False))
    code, md, doc = _cli(tmp_path, raw, "--scan", str(team / "src"))
    assert code == gv.EXIT_UNSAFE, md  # nothing declared: the interpreter's change counts
    (team / "pyproject.toml").write_text('[tool.triton-compat]\ntargets = ["cuda:90"]\n')
    code, md, doc = _cli(tmp_path, raw, "--scan", str(team / "src"))
    # (undecidable only because these made-up runs hold no API census for the names it uses)
    assert code == gv.EXIT_UNDECIDABLE and doc["counts"]["blocking"] == 0, md
    assert not [f for f in doc["findings"] if f["kind"] in gc.UNSAFE_KINDS], md
    assert doc["targets"] == ["cuda:90"] and doc["declaration"].endswith("pyproject.toml")
    assert doc["counts"]["not_on_targets"] == 1 and doc["not_on_targets"]
    # --config names the file instead: one that is the table itself
    other = tmp_path / "decl.toml"
    other.write_text('targets = ["interpret"]\n')
    code, md, doc = _cli(tmp_path, raw, "--scan", str(team / "src"), "--config", str(other))
    assert code == gv.EXIT_UNSAFE, md


@pytest.mark.parametrize(
    ("table", "key"),
    [('targets = "cuda:90"', "targets"), ('targets = ["cuda90"]', "targets"),
     ('target = ["cuda:90"]', "target"),
     ('[tool.triton-compat.dtypes]\n"k.x" = ["fp17"]', '"k.x"')],
)  # fmt: skip
def test_a_bad_declaration_is_exit_2_naming_the_file_and_the_key(tmp_path, table, key):
    team = tmp_path / "team"
    team.mkdir()
    (team / "k.py").write_text(KERNEL)
    (team / "pyproject.toml").write_text(f"[tool.triton-compat]\n{table}\n")
    raw = _raw(tmp_path, _on_two_columns(change_on_aot=False))
    code, md, doc = _cli(tmp_path, raw, "--scan", str(team))
    assert code == gv.EXIT_UNDECIDABLE, md
    [error] = doc["errors"]
    assert str(team / "pyproject.toml") in error and key in error and "\n" not in error


# -------------------------------------------------------------------- usage rows, one owner


def test_every_catalog_probe_has_a_usage_row_and_a_missing_one_is_refused(tmp_path):
    from matrix.analyze.profile.model import FINGERPRINT_PATH, MAP_PATH, load_map
    from matrix.catalog import PROBES, PROBES_DIR, load_catalog

    rows = load_map().probes
    assert {p.name for p in PROBES} == set(rows) and all(rows.values())
    # The usage entry lives in the probe's folder; the catalog refuses a folder without one.
    shutil.copytree(PROBES_DIR / "allocator_required", tmp_path / "probes" / "allocator_required")
    toml = tmp_path / "probes" / "allocator_required" / "probe.toml"
    text = toml.read_text()
    assert "\n[usage]\n" in text
    toml.write_text(text.split("\n[usage]\n")[0])
    with pytest.raises(DataFileError, match=r"allocator_required/probe\.toml: usage: expected"):
        load_catalog(tmp_path / "probes")
    # A [probes] table back in the usage map is refused: one owner of a probe's usage.
    stale = tmp_path / "usage_map.toml"
    stale.write_text(MAP_PATH.read_text() + "\n[probes.allocator_required]\nproject = true\n")
    with pytest.raises(DataFileError, match=r"usage is in its probe\.toml"):
        load_map(stale, FINGERPRINT_PATH)


def test_a_never_relevant_or_project_row_never_blocks_a_team_but_decides_the_project():
    runs = _both([Result("splitk", "interpret", None, "pass")],
                 [Result("splitk", "interpret", None, "fail")])  # fmt: skip
    assert _decide(runs).exit_code == gv.EXIT_UNSAFE  # the project's own verdict
    team = Profile(uses=[Use("binary.add", (frozenset({"int8"}),) * 2, path="k.py", line=3,
                             kernel="k")])  # fmt: skip
    report = _decide(runs, profile=team)
    assert report.exit_code == gv.EXIT_SAFE, gv.render_markdown(report)
    assert [f.probe for f in report.unused] == ["splitk"]
    rows = {"api_surface": {"never": "why"}, "splitk": {"project": True}}
    assert policy.never_team_relevant("api_surface", rows) == "why"
    assert policy.never_team_relevant("splitk", rows)
    assert policy.never_team_relevant("allocator_required", rows)  # unmapped: never blocks
    assert policy.never_team_relevant("fp.binary.add[a,b]", rows) == ""


def test_the_projects_own_profile_keeps_its_own_rows_and_drops_what_it_never_uses():
    # the project's verdict through its kernels/' profile (own=True): the rows that measure
    # its kernels still block; a change of a name its kernels never use does not
    runs = _both([Result("splitk", "interpret", None, "pass"),
                  Result("block_ptr", "interpret", None, "deprecated")],
                 [Result("splitk", "interpret", None, "fail"),
                  Result("block_ptr", "interpret", None, "removed")])  # fmt: skip
    mine = Profile(uses=[Use("binary.add", (frozenset({"int32"}),) * 2, path="kernels/k.py",
                             line=3, kernel="k")])  # fmt: skip
    report = gv.GateReport("3.8.0", "3.9.0", "raw")
    gv.decide_runs(report, runs, OLD, NEW, [], ScanReport(), profile=mine, own=True)
    report.decide()
    assert report.exit_code == gv.EXIT_UNSAFE
    assert {f.probe for f in report.comparison.findings if f.kind in gc.UNSAFE_KINDS} == {"splitk"}
    assert "block_ptr" in {f.probe for f in report.unused}


def test_allocator_required_concerns_only_code_that_builds_descriptors_in_kernels():
    runs = _both([Result("allocator_required", "gpu", "cuda:90", "not-required")],
                 [Result("allocator_required", "gpu", "cuda:90", "required")])  # fmt: skip
    plain = Profile(uses=[Use("binary.add", (frozenset({"int8"}),) * 2, path="k.py", line=3,
                              kernel="k")])  # fmt: skip
    assert _decide(runs, profile=plain).exit_code == gv.EXIT_SAFE
    builds = Profile(uses=[Use("name", attrs=(("name", "triton.language.make_tensor_descriptor"),),
                               path="d.py", line=7, kernel="d")])  # fmt: skip
    assert _decide(runs, profile=builds).exit_code == gv.EXIT_UNSAFE


# ------------------------------------------------------------------------------ first screen


def _use(line: int, kernel: str = "_fwd", kinds=None, path: str = "a.py", **extra) -> Use:
    u = Use("binary.add", (kinds, kinds), path=path, line=line, kernel=kernel, code="x + y")
    for k, v in extra.items():
        object.__setattr__(u, k, v)
    return u


def _report_with(uses_by_finding) -> gv.GateReport:
    report = gv.GateReport("3.8.0", "3.9.0", "raw", exit_code=gv.EXIT_UNSAFE)
    for f, uses in uses_by_finding:
        f.uses = [u.describe() for u in uses]
        report.comparison.findings.append(f)
        report.tied.append((f, uses))
    return report


def test_blocking_entries_are_one_line_per_change_and_kernel_with_lines_folded():
    bf16 = frozenset({"bfloat16"})
    f1 = gc.GateFinding(gc.BEHAVIOUR, "fp.binary.add[bfloat16,bfloat16]", "aot:cuda:90",
                        "bf16", "fp32", relevance=USED)  # fmt: skip
    f2 = gc.GateFinding(gc.BEHAVIOUR, "fp.binary.add[bfloat16,lit_int]", "interpret",
                        "bf16", "fp32", relevance=USED)  # fmt: skip
    f3 = gc.GateFinding(gc.BEHAVIOUR, "fp.binary.add[bfloat16,bfloat16]", "aot:cuda:90",
                        "bf16", "fp32", relevance=USED)  # fmt: skip
    report = _report_with([
        (f1, [_use(12, kinds=bf16), _use(88, kinds=bf16)]),
        (f2, [_use(40, kinds=bf16), _use(12, kinds=bf16)]),
        (f3, [_use(7, "_bwd", kinds=bf16, path="b.py")]),
    ])  # fmt: skip
    entries = report.blocking()
    assert [(e.kernel, e.folded()) for e in entries] == [
        ("_bwd", "b.py:7"),
        ("_fwd", "a.py:12, 40, 88"),
    ]
    fwd = entries[1]
    assert fwd.columns == ["aot:cuda:90", "interpret"]
    assert fwd.cells == ["bfloat16,bfloat16", "bfloat16,lit_int"]
    md = gv.render_markdown(report)
    head = md.split("## Details")[0].splitlines()
    assert head[0].startswith("**UNSAFE**")
    assert "**2** blocking, **0** may affect" in head[2]
    line = next(ln for ln in head if "kernel `_fwd`" in ln)
    assert line.endswith("— kernel `_fwd` at a.py:12, 40, 88")
    assert "`bf16` → `fp32`" in line
    many = summary.Entry(gc.BEHAVIOUR, "g", "a", "b", USED, "k",
                         locations={f"f{i}.py": list(range(1, 12)) for i in range(5)})  # fmt: skip
    assert many.folded() == "; ".join(f"f{i}.py:1, 2, 3, 4, 5, 6, 7, 8 +3" for i in range(3)) + (
        " and 2 more file(s)"
    )
    doc = report.to_dict()
    assert doc["counts"]["blocking"] == 2
    assert {"path": "a.py", "lines": [12, 40, 88]} in doc["blocking"][1]["locations"]
    assert doc["findings"]  # the existing fields stay


def test_a_may_affect_entry_says_what_decides_it(tmp_path):
    src = tmp_path / "k.py"
    src.write_text(KERNEL)
    f = gc.GateFinding(gc.BEHAVIOUR, "fp.binary.add[bfloat16,bfloat16]", "interpret", "bf16",
                       "fp32", relevance=MAY_AFFECT)  # fmt: skip
    g = gc.GateFinding(gc.BEHAVIOUR, "fp.binary.add[int8,int8]", "interpret", "int16", "int32",
                       relevance=MAY_AFFECT)  # fmt: skip
    named = _use(10, "add_kernel", path=str(src), decides="declare `x_ptr` of `add_kernel`")
    report = _report_with([(f, [_use(10, "add_kernel", path=str(src))]), (g, [named])])
    # one op whose cells change two ways in one kernel is one entry, naming both changes
    [entry] = report.blocking()
    assert entry.transitions == [("bf16", "fp32"), ("int16", "int32")]
    generated, named = entry.decides
    assert generated == (
        "declare the element types of `x_ptr`, `y_ptr`, `out_ptr` of `add_kernel` in "
        f"[tool.triton-compat].dtypes, or run a test that launches `add_kernel` of {src} (--tests)"
    )
    assert named == "declare `x_ptr` of `add_kernel`"
    md = gv.render_markdown(report)
    assert "**0** blocking, **1** may affect" in md
    assert "**fp.binary.add** changed `bf16` → `fp32`; `int16` → `int32`" in md
    assert md.split("## Details")[0].count("  - decides: ") == 1  # the first; gate.json: all


def test_one_kernel_name_in_two_files_is_two_kernels(tmp_path):
    """Liger-Kernel defines `_rms_norm_backward_kernel` in ops/rms_norm.py and again in
    ops/backends/_ascend/ops/rms_norm.py: a test launches the first (its uses typed, `used`);
    the second, which no test launched, keeps its own "may affect" entry, named by its file."""
    cuda, npu = tmp_path / "rms_norm.py", tmp_path / "npu" / "rms_norm.py"
    npu.parent.mkdir()
    cuda.write_text(KERNEL.replace("add_kernel", "_bwd"))
    npu.write_text(KERNEL.replace("add_kernel", "_bwd"))
    f = gc.GateFinding(gc.BEHAVIOUR, "fp.binary.add[bfloat16,bfloat16]", "interpret", "bf16",
                       "fp32", relevance=MAY_AFFECT)  # fmt: skip
    g = gc.GateFinding(gc.BEHAVIOUR, "fp.binary.add[bfloat16,bfloat16]", "interpret", "bf16",
                       "fp32", relevance=USED)  # fmt: skip
    typed = _use(10, "_bwd", path=str(cuda), test="t.py::test_bwd")
    report = _report_with([
        (f, [_use(10, "_bwd", path=str(npu)), _use(11, "_bwd", path=str(npu))]),
        (g, [typed]),
    ])  # fmt: skip
    entries = report.blocking()
    assert [(e.relevance, e.kernel_path, e.folded()) for e in entries] == [
        (USED, str(cuda), f"{cuda}:10"),
        (MAY_AFFECT, str(npu), f"{npu}:10, 11"),
    ]
    assert entries[1].decides[0].endswith(f"launches `_bwd` of {npu} (--tests)")
    split = summary.may_affect_kernels(entries, [typed, _use(10, "_bwd", path=str(npu))])
    assert split == {"launched": [], "not_launched": [f"{npu}:_bwd"]}
    # the same name, launched and still not typed there, is counted as launched
    launched_too = summary.may_affect_kernels(entries, [_use(10, "_bwd", path=str(npu), test="t")])
    assert launched_too == {"launched": [f"{npu}:_bwd"], "not_launched": []}
    assert report.to_dict()["blocking"][1]["kernel_file"] == str(npu)
    # one finding met in both files: an entry per file, never one merged by name
    both = _report_with([(f, [_use(10, "_bwd", path=str(cuda)), _use(10, "_bwd", path=str(npu))])])
    assert sorted(e.kernel_path for e in both.blocking()) == sorted([str(cuda), str(npu)])


def test_the_first_screen_stays_short_however_many_entries():
    fs = [(gc.GateFinding(gc.BEHAVIOUR, f"fp.binary.add[c{i}]", "interpret", "a", f"b{i}",
                          relevance=USED), [_use(i + 1, f"k{i}")]) for i in range(60)]  # fmt: skip
    md = gv.render_markdown(_report_with(fs))
    head = md.split("## Details")[0].splitlines()
    assert len(head) <= 30
    shown = summary.FIRST_SCREEN_LINES
    assert f"- ... and {60 - shown} more entries (details below)" in head


def test_a_target_the_baseline_cannot_compile_for_is_new_not_undecidable() -> None:
    """hip:gfx950 on 3.1.0 -> 3.2.0: the baseline's trial refused the target, so no code ran
    there; the reverse (a target the candidate lost) is not new and stays for the gate to doubt."""
    from matrix.gate.probe_compare import TARGET_UNSUPPORTED, _target_new_on_candidate
    from matrix.results import Result

    why = f"{TARGET_UNSUPPORTED}: TargetUnsupported: this release cannot compile"
    refused = Result("dot_f32_default_precision", "aot", "hip:gfx950", "skipped", why)
    looked = Result("dot_f32_default_precision", "aot", "hip:gfx950", "ieee", "")
    other_skip = Result("dot_f32_default_precision", "aot", "hip:gfx950", "skipped", "no ld.lld")
    assert _target_new_on_candidate(refused, looked)
    assert not _target_new_on_candidate(looked, refused)
    assert not _target_new_on_candidate(other_skip, looked)
    assert not _target_new_on_candidate(refused, refused)


def test_a_warning_cell_that_changed_as_its_control_did_is_a_note_not_a_use() -> None:
    """3.9.0 warns at every compile (TRITON_DEFAULT_FP_FUSION unset): the `allow_tf32=` kernel's
    warning cell changes exactly as the control kernel's, so the change is no change of the
    `allow_tf32=` spelling; a cell that differs from its control (its own warning text) is."""
    from matrix.gate import controls
    from matrix.results import Result

    def cell(case: str, status: str, text: str | None) -> Result:
        data = {"warnings": text} if text else {}
        return Result(f"fp.warnings[{case}]", "aot", "cuda:90", status, "", 0.0, data)

    fusion = "UserWarning: TRITON_DEFAULT_FP_FUSION is unset"
    own = "DeprecationWarning: allow_tf32 is deprecated"
    probe = "fp.warnings[allow_tf32_kw|none]"
    control = controls.control_probe(probe)
    assert control == "fp.warnings[plain_kernel|none]"
    assert controls.control_probe(control) is None
    base_c, cand_c = (
        cell("plain_kernel|none", "silent", None),
        cell("plain_kernel|none", "UserWarning", fusion),
    )
    assert controls.explained(
        cell("allow_tf32_kw|none", "silent", None),
        cell("allow_tf32_kw|none", "UserWarning", fusion),
        base_c,
        cand_c,
    )
    assert not controls.explained(
        cell("allow_tf32_kw|none", "silent", None),
        cell("allow_tf32_kw|none", "UserWarning", own),
        base_c,
        cand_c,
    )
    assert not controls.explained(
        cell("allow_tf32_kw|none", "silent", None),
        cell("allow_tf32_kw|none", "UserWarning", fusion),
        base_c,
        None,
    )


ANNOTATED = """import triton
import triton.language as tl

LIMIT: tl.constexpr = 3


@triton.jit
def k(o_ptr):
    tl.store(o_ptr, LIMIT)
"""


def _rules(global_annotated_base: str, global_annotated_cand: str) -> list[Run]:
    def row(status: str) -> Result:
        cells = {"global_annotated": status, "global_plain": "accepted"}
        return Result("fp.rules", "aot", "cuda:90", "observed", "", 0.0, {"cells": cells})

    return _both([row(global_annotated_base)], [row(global_annotated_cand)])


@pytest.mark.parametrize(
    ("base", "cand", "code", "kind"),
    [("accepted", "rejected", gv.EXIT_UNSAFE, "breaking-api"),  # the release that breaks it
     ("rejected", "rejected", gv.EXIT_SAFE, None)],  # broken before: the upgrade changes nothing
)  # fmt: skip
def test_a_scanner_rule_on_one_fingerprint_cell_is_judged_on_that_cell(
    tmp_path: Path, base: str, cand: str, code: int, kind: str | None
) -> None:
    """`X: tl.constexpr = 3` at module level (scanner TRI0xx, probe fp.rules, cell
    global_annotated): the use is compared where the cell is (no "probe never recorded"
    undecidable because the group row is only seen through its cells), breaks where the
    candidate refuses it, and is a note where the baseline refused it already."""
    (tmp_path / "team").mkdir()
    (tmp_path / "team" / "k.py").write_text(ANNOTATED)
    raw = _raw(tmp_path, _rules(base, cand))
    got, md, doc = _cli(tmp_path, raw, "--scan", str(tmp_path / "team"))
    # (these results hold no API census: that alone is undecidable, named as such)
    assert got == code or (code == gv.EXIT_SAFE and got == gv.EXIT_UNDECIDABLE), md
    assert not [u for u in doc["undecidable"] if "fp.rules" in u], md
    assert [f["kind"] for f in doc["findings"] if f["kind"] == "breaking-api"] == (
        [kind] if kind else []
    ), md
    if kind is None:
        assert any(n.startswith("breaks on both: fp.rules[global_annotated]") for n in doc["notes"])


def test_a_use_in_a_branch_the_guard_keeps_off_a_release_is_not_tied_to_its_change(tmp_path):
    """compat/descriptors.py's shape: one definition per release family, chosen by a feature
    test. A change between two releases concerns the definition that runs on both; a use
    whose branch does not run on the candidate, or (for a change, not a break) did not run on
    the baseline, is not a use of it (matrix.gate.shapes.Sites.branch_runs)."""
    from matrix.analyze.census import censuses_from_runs
    from matrix.gate.shapes import Sites
    from matrix.results import read_folder

    root = Path(__file__).resolve().parents[1]
    runs, _ = read_folder(root / "reports" / "raw")
    censuses = censuses_from_runs(runs)
    team = tmp_path / "team"
    team.mkdir()
    (team / "k.py").write_text(
        "import triton\nimport triton.language as tl\n"
        'if callable(getattr(tl, "make_tensor_descriptor", None)):\n'
        "    make = 1\n"  # line 4: from 3.4.0 (where tl.make_tensor_descriptor exists)
        "else:\n"
        "    make = 2\n"  # line 6: up to 3.3.1
    )
    sites = Sites([str(team)])
    new, old = Use("name", path="team/k.py", line=4), Use("name", path="team/k.py", line=6)
    r331, r340 = Release.parse("3.3.1"), Release.parse("3.4.0")
    assert not sites.branch_runs(new, r331, censuses) and sites.branch_runs(new, r340, censuses)
    assert sites.branch_runs(old, r331, censuses) and not sites.branch_runs(old, r340, censuses)
