"""The gate blocks only on what a team's code really does (issue 39), on small fixtures written
here (statuses made up: they test the gate's logic, not claims about Triton releases):

- targets inferred when none is declared: the interpreter counts only where the repository
  shows it runs (TRITON_INTERPRET, --tests-device), with the evidence named; compiled columns
  always count; a declaration wins;
- a change that only says how a removed API behaves follows from the removal (one reason);
- a descriptor case that needs constexpr strides is tied only to constructions that have them,
  an alias of the constructor decided by its calls.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

from matrix.analyze.profile import USED, Use, load_map
from matrix.analyze.profile.host_syntax import callee
from matrix.core import Release
from matrix.gate import compare as gc
from matrix.gate import roots, shapes, summary, targets
from matrix.gate import verdict as gv
from matrix.results import Result, Run, write_raw

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


def _team(tmp_path: Path) -> Path:
    """A repository (pyproject.toml without the table) with a package of kernels."""
    team = tmp_path / "team"
    (team / "pkg" / "ops").mkdir(parents=True)
    (team / "pyproject.toml").write_text('[project]\nname = "team"\n')
    (team / "pkg" / "__init__.py").write_text("")
    (team / "pkg" / "ops" / "__init__.py").write_text("")
    (team / "pkg" / "ops" / "k.py").write_text(KERNEL)
    return team


def test_no_interpreter_evidence_leaves_the_interpreter_out_and_says_so(tmp_path):
    team = _team(tmp_path)
    got = targets.infer([team / "pkg" / "ops"], {})
    assert got is not None and got.not_run == ("interpret",) and got.root == str(team)
    assert "no TRITON_INTERPRET in the repository" in got.why and not got.evidence


def test_interpreter_evidence_anywhere_in_the_repository_keeps_it_naming_the_line(tmp_path):
    team = _team(tmp_path)
    (team / ".github" / "workflows").mkdir(parents=True)
    (team / ".github" / "workflows" / "ci.yml").write_text(
        "jobs:\n  cpu:\n    env:\n      TRITON_INTERPRET: 1\n"
    )
    got = targets.infer([team / "pkg" / "ops"], {})
    assert got is not None and got.not_run == ()
    assert got.evidence == ("team/.github/workflows/ci.yml:4: TRITON_INTERPRET: 1",)


def test_tests_run_on_cpu_keep_the_interpreter(tmp_path):
    team = _team(tmp_path)
    got = targets.infer([team / "pkg" / "ops"], {"tests_device": "cpu"})
    assert got is not None and got.not_run == () and got.evidence == ("--tests-device cpu",)


def test_the_root_without_markers_is_the_folder_above_the_package(tmp_path):
    (tmp_path / "lib" / "pkg").mkdir(parents=True)
    (tmp_path / "lib" / "pkg" / "__init__.py").write_text("")
    (tmp_path / "lib" / "conftest.py").write_text(
        'import os\nos.environ["TRITON_INTERPRET"] = "1"\n'
    )
    assert targets.repository_root(tmp_path / "lib" / "pkg", [".git"]) == tmp_path / "lib"
    got = targets.infer([tmp_path / "lib" / "pkg"], {}, targets.Rule.load())
    assert got is not None and got.not_run == () and got.evidence[0].startswith("lib/conftest.py:2")


def test_a_search_cut_short_keeps_the_interpreter(tmp_path):
    team = _team(tmp_path)
    rule = targets.Rule.load()
    small = targets.Rule(**{**rule.__dict__, "max_files": 1})
    got = targets.infer([team / "pkg" / "ops"], {}, small)
    assert got is not None and got.not_run == () and "stopped" in got.why


OLD, NEW = Release.parse("3.8.0"), Release.parse("3.9.0")


def _fp(cells: dict[str, str], backend: str, target: str | None = None) -> Result:
    return Result("fp.binary.add", backend, target, "observed", "", 0.0, {"cells": cells})


def _raw(tmp_path: Path, interp_changes: bool, aot_changes: bool) -> Path:
    raw = tmp_path / "raw"
    raw.mkdir(parents=True)
    for release, new in (("3.8.0", False), ("3.9.0", True)):
        interp = "int32" if new and interp_changes else "int16"
        aot = "int32" if new and aot_changes else "int16"
        results = [_fp({"float16,float32": interp}, "interpret"),
                   _fp({"float16,float32": aot}, "aot", "cuda:90")]  # fmt: skip
        run = Run(id=f"triton-{release}-numpy-2.4.6", env={"triton": release, "numpy": "2.4.6"},
                  results=results)  # fmt: skip
        write_raw(run, raw / f"{run.id}.json")
    return raw


def _cli(tmp_path: Path, raw: Path, *extra: str) -> tuple[int, str, dict]:
    out = tmp_path / "out"
    args = ["--baseline", "3.8.0", "--candidate", "3.9.0", "--results", str(raw),
            "--out", str(out), "--no-project-scan", *extra]  # fmt: skip
    code = gv.main(args)
    return code, (out / "gate.md").read_text(), json.loads((out / "gate.json").read_text())


def _blocking(doc: dict) -> list[tuple[str, str]]:
    return [(f["probe"], f["where"]) for f in doc["findings"] if f["kind"] in gc.UNSAFE_KINDS]


def test_the_gate_infers_targets_states_them_and_a_declaration_wins(tmp_path):
    team = _team(tmp_path)
    scan = str(team / "pkg" / "ops")
    raw = _raw(tmp_path, interp_changes=True, aot_changes=False)
    code, md, doc = _cli(tmp_path, raw, "--scan", scan)
    assert _blocking(doc) == [], md  # only the interpreter changed, and nothing runs it
    assert doc["targets_inferred"]["not_run"] == ["interpret"]
    assert [(f["probe"], f["where"]) for f in doc["not_on_targets"]] == [
        ("fp.binary.add[float16,float32]", "interpret")
    ]
    first = md.split("## Details")[0]
    assert "not interpret (inferred: no TRITON_INTERPRET in the repository" in first
    # a change on a compiled column still blocks: GPU columns always count
    raw2 = _raw(tmp_path / "b", interp_changes=True, aot_changes=True)
    code, md, doc = _cli(tmp_path, raw2, "--scan", scan)
    assert _blocking(doc) == [("fp.binary.add[float16,float32]", "aot:cuda:90")], md
    # evidence: the interpreter counts, and the first screen names the file and line
    (team / "tests").mkdir()
    (team / "tests" / "conftest.py").write_text(
        'import os\nos.environ.setdefault("TRITON_INTERPRET", "1")\n'
    )
    code, md, doc = _cli(tmp_path, raw, "--scan", scan)
    assert code == gv.EXIT_UNSAFE and _blocking(doc) == [
        ("fp.binary.add[float16,float32]", "interpret")
    ]
    assert doc["targets_inferred"]["evidence"] == [
        'team/tests/conftest.py:2: os.environ.setdefault("TRITON_INTERPRET", "1")'
    ]
    assert "`team/tests/conftest.py:2" in md.split("## Details")[0]
    # a declaration wins over the evidence (and nothing is inferred)
    (team / "pyproject.toml").write_text('[tool.triton-compat]\ntargets = ["cuda:90"]\n')
    code, md, doc = _cli(tmp_path, raw, "--scan", scan)
    assert (
        _blocking(doc) == [] and doc["targets_inferred"] is None and doc["targets"] == ["cuda:90"]
    )
    (team / "pyproject.toml").write_text('[tool.triton-compat]\ntargets = ["interpret"]\n')
    code, md, doc = _cli(tmp_path, raw, "--scan", scan)
    assert _blocking(doc) == [("fp.binary.add[float16,float32]", "interpret")], md


# ------------------------------------------------------------------------- one reason per root

BLOCK_PTR = "triton.language.make_block_ptr"


def _name_use(line: int, name: str = BLOCK_PTR, path: str = "k/a.py") -> Use:
    return Use("name", attrs=(("name", name),), path=path, line=line, kernel="fwd")


def _removal() -> gc.GateFinding:
    return gc.GateFinding(gc.BREAKING, "block_ptr", "aot:cuda:90", "deprecated", "removed",
                          uses=["k/a.py:3:9 TRI001 tl.make_block_ptr(...)",
                                "k/a.py:5:9 TRI001 tl.make_block_ptr(...)"])  # fmt: skip


def _fold(tied: list[tuple[gc.GateFinding, list[Use]]]) -> tuple[list, list]:
    root = _removal()
    findings = [root, *(f for f, _ in tied)]
    folded = roots.fold(findings, tied, load_map().probes, [])
    return findings, folded


def test_behaviour_of_a_removed_api_at_its_lines_follows_from_the_removal():
    layout = gc.GateFinding(gc.BEHAVIOUR, "fp.layout[block_ptr.ok]", "aot:cuda:90", "accepted",
                            "rejected", relevance=USED)  # fmt: skip
    warn = gc.GateFinding(gc.BEHAVIOUR, "fp.warnings[block_ptr|none]", "aot:cuda:90",
                          "UserWarning", "rejected", relevance=USED)  # fmt: skip
    tied = [(layout, [_name_use(3), _name_use(5)]), (warn, [_name_use(3)])]
    findings, folded = _fold(tied)
    assert [f.probe for f in findings] == ["block_ptr"]
    assert [(f.probe, r.probe) for f, r in folded] == [
        ("fp.layout[block_ptr.ok]", "block_ptr"),
        ("fp.warnings[block_ptr|none]", "block_ptr"),
    ]
    entries = summary.entries(findings, tied, None, folded)
    assert len(entries) == 1 and "follows from it" in entries[0].line()
    assert entries[0].follows["fp.layout `accepted` → `rejected`"] == {
        "cells": ["block_ptr.ok"],
        "kernels": ["fwd"],
    }


def test_what_is_not_only_about_the_removed_api_at_its_lines_stays_a_reason():
    other_line = gc.GateFinding(gc.BEHAVIOUR, "fp.layout[block_ptr.ok]", "aot:cuda:90",
                                "accepted", "rejected")  # fmt: skip
    other_name = gc.GateFinding(gc.BEHAVIOUR, "fp.binary.add[int8,int8]", "aot:cuda:90",
                                "int16", "int32")  # fmt: skip
    other_column = gc.GateFinding(gc.BEHAVIOUR, "fp.layout[block_ptr.ok]", "aot:hip:gfx942",
                                  "accepted", "rejected")  # fmt: skip
    findings, folded = _fold([
        (other_line, [_name_use(3), _name_use(9)]),
        (other_name, [_name_use(3, "triton.language.load")]),
        (other_column, [_name_use(3)]),
    ])  # fmt: skip
    assert folded == [] and len(findings) == 4


def test_a_census_missing_keyword_of_a_removed_keyword_folds_at_the_same_lines():
    root = gc.GateFinding(gc.BREAKING, "boundary_check", "aot:cuda:90", "accepted", "removed",
                          uses=["k/a.py:4:8 TRI002 boundary_check"])  # fmt: skip
    load = gc.GateFinding(gc.BREAKING, "api_surface", "triton.language.load", "ok",
                          "no keyword boundary_check (signature: (pointer, mask=None))",
                          uses=["k/a.py:4:8 tl.load(...)"])  # fmt: skip
    elsewhere = gc.GateFinding(gc.BREAKING, "api_surface", "triton.language.store", "ok",
                               "no keyword boundary_check (signature: (pointer, value))",
                               uses=["k/a.py:11:8 tl.store(...)"])  # fmt: skip
    findings = [root, load, elsewhere]
    folded = roots.fold(findings, [], load_map().probes, [])
    assert [f.where for f, _ in folded] == ["triton.language.load"]
    assert findings == [root, elsewhere]


# ------------------------------------------------------------------------- descriptor shapes

DESC = """import triton.language as tl
make_desc = tl.make_tensor_descriptor


def kern(A, stride, H: tl.constexpr, BT: tl.constexpr):
    d = make_desc(A, [8, BT], [{stride}, 1], [16, 16])
"""


def _desc_use(tmp_path: Path, stride: str) -> tuple[shapes.Sites, Use]:
    pkg = tmp_path / "pkg"
    pkg.mkdir(exist_ok=True)
    (pkg / "d.py").write_text(DESC.format(stride=stride))
    use = Use("name", attrs=(("name", "triton.language.make_tensor_descriptor"),),
              path="pkg/d.py", line=2)  # fmt: skip
    return shapes.Sites([pkg]), use


def test_an_alias_of_the_constructor_is_decided_by_its_calls(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    unaligned = "constexpr_strides_not_16B"
    assert shapes.needed_shape("layout", "descriptor.stride_constexpr_not_16B") == unaligned
    sites, use = _desc_use(tmp_path, "H * BT")  # constexpr, alignment unknown: may be the case
    assert sites.has_shape(use, "constexpr_strides") is True
    assert sites.has_shape(use, unaligned) is True
    sites, use = _desc_use(tmp_path, "H * 16")  # constexpr, a multiple of 16 elements
    assert sites.has_shape(use, "constexpr_strides") is True
    assert sites.has_shape(use, unaligned) is False
    sites, use = _desc_use(tmp_path, "stride")  # a run-time stride: no constexpr case applies
    assert sites.has_shape(use, "constexpr_strides") is False
    sites, use = _desc_use(tmp_path, "A.stride(0)")  # cannot tell: kept (fail closed)
    assert sites.has_shape(use, "constexpr_strides") is None


def test_a_host_tensor_descriptor_never_has_constexpr_strides():
    call = ast.parse("TensorDescriptor.from_tensor(x, block_shape=[16, 16])").body[0].value
    assert isinstance(call, ast.Call)
    assert shapes._constexpr_strides(call, None) is False
    assert shapes._constexpr_strides_not_16B(call, None) is False


def test_a_census_missing_name_that_a_removal_row_names_folds_under_the_row():
    root = _removal()
    advance = gc.GateFinding(gc.BREAKING, "api_surface", "triton.language.advance", "ok",
                             "triton.language.advance does not exist on 3.9.0",
                             uses=["k/a.py:5:9 tl.advance(...)"])  # fmt: skip
    other = gc.GateFinding(gc.BREAKING, "api_surface", "triton.language.gone", "ok",
                           "triton.language.gone does not exist on 3.9.0",
                           uses=["k/a.py:5:9 tl.gone(...)"])  # fmt: skip
    findings = [root, advance, other]
    folded = roots.fold(findings, [], load_map().probes, [])
    assert [(f.where, r.probe) for f, r in folded] == [("triton.language.advance", "block_ptr")]
    assert findings == [root, other]


# ----------------------------------------------------------------------------------- notices


def test_a_change_that_only_adds_a_warning_is_listed_never_blocking():
    from matrix.gate import policy

    new_warning = gc.GateFinding(gc.BEHAVIOUR, "fp.warnings[allow_tf32_kw|none]", "aot:cuda:90",
                                 "silent", "UserWarning")  # fmt: skip
    now_rejected = gc.GateFinding(gc.BEHAVIOUR, "fp.warnings[block_ptr|none]", "aot:cuda:90",
                                  "UserWarning", "rejected")  # fmt: skip
    comparison = gc.Comparison(findings=[new_warning, now_rejected])
    assert policy.split_notices(comparison) == [new_warning]
    assert comparison.findings == [now_rejected]  # a warning that became an error still blocks


def test_a_select_on_a_comparison_combined_with_more_is_not_a_min_max():
    src = """import triton.language as tl
def k(a, b, ai, bi):
    mask = a > b
    mask |= (a == b) & (ai > bi)
    return tl.where(mask, a, b)
def plain(a, b):
    update = a > b
    return tl.where(update, a, b)
"""
    tree = ast.parse(src)
    fns = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
    calls = {
        n: next(c for c in ast.walk(f) if isinstance(c, ast.Call) and callee(c.func) == "where")
        for n, f in fns.items()
    }
    assert shapes._select_of_compare(calls["k"], fns["k"]) is False
    assert shapes._select_of_compare(calls["plain"], fns["plain"]) is True


def test_code_a_vendor_fork_compiles_is_not_on_the_targets() -> None:
    """A folder of code built by a vendor's own Triton (triton-ascend's `_ascend/`, the
    Cambricon fork's `_cambricon/`) is not what upstream Triton's changes are about: its uses
    are never tied (matrix/data/targets.toml [vendor]); ordinary folders are."""
    from matrix.gate.targets import vendor_backend

    assert vendor_backend("fla/ops/kda/backends/triton_ascend/chunk_bwd.py")
    assert vendor_backend("flag_gems/runtime/backend/_cambricon/ops/mm.py")
    assert vendor_backend("liger_kernel/ops/backends/_ascend/ops/rms_norm.py")
    # XPU-Forces/mojo_opset: one folder per device under backends/ttx/kernels/ (its ilu and mlu
    # kernels' make_block_ptr and int8 bounds were tied to upstream 3.9.0's changes)
    assert vendor_backend("mojo_opset/backends/ttx/kernels/ilu/swa.py")
    assert vendor_backend("mojo_opset/backends/ttx/kernels/mlu/rope.py")
    assert vendor_backend("mojo_opset/backends/ttx/kernels/npu/a2/rms_norm.py")
    assert vendor_backend("pkg/utils/build.py") is None
    assert vendor_backend("attorch/act_kernels.py") is None
    assert vendor_backend("pkg/ascending_sort.py") is None


def test_a_comment_that_mentions_the_interpreter_is_no_evidence(tmp_path):
    """gpu-mode lectures (``# os.environ["TRITON_INTERPRET"] = "1"``, commented out) and ROCm's
    aiter ("# Requires TRITON_INTERPRET=1 to actually print inside kernels"): a comment runs
    nothing. A Markdown heading is not a comment, and code on the next line still counts."""
    team = _team(tmp_path)
    (team / "pkg" / "debug.py").write_text('# os.environ["TRITON_INTERPRET"] = "1"\nimport os\n')
    (team / "ci.yml").write_text("jobs:\n  # TRITON_INTERPRET=1 pytest is too slow\n")
    got = targets.infer([team / "pkg" / "ops"], {})
    assert got is not None and got.not_run == ("interpret",), got
    (team / "pkg" / "debug.py").write_text(
        '# run on CPU:\nimport os\nos.environ["TRITON_INTERPRET"] = "1"  # CPU\n'
    )
    got = targets.infer([team / "pkg" / "ops"], {})
    assert (
        got is not None and got.not_run == () and got.evidence[0].startswith("team/pkg/debug.py:3")
    )
    (team / "pkg" / "debug.py").unlink()
    (team / "README.md").write_text("# TRITON_INTERPRET=1 runs the kernels on CPU\n")
    got = targets.infer([team / "pkg" / "ops"], {})
    assert got is not None and got.not_run == ()


GLUON = """import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@gluon.jit
def add_gluon(x_ptr, y_ptr, out_ptr, n, BLOCK: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [4], [0])
    offs = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout=layout)
    x = gl.load(x_ptr + offs)
    y = gl.load(y_ptr + offs)
    gl.store(out_ptr + offs, x + y)
    {tail}


__all__ = ["add_gluon"]
"""


def test_a_gluon_kernel_is_never_interpreted_and_a_vendor_namespace_holds_it(tmp_path):
    """ROCm's aiter: its gluon kernels (``@gluon.jit``, for gfx950 and gfx1250) were tied to
    interpreter-only changes and to cuda:90 cells. Gluon's jit never reads TRITON_INTERPRET
    (targets.toml [namespaces] says what was measured), and a kernel naming ``gl.amd.cdna4``
    compiles only for gfx950: a change on another column is not one of that kernel. The
    plain @triton.jit kernel beside it is still tied."""
    team = _team(tmp_path)
    (team / "tests").mkdir()
    (team / "tests" / "conftest.py").write_text('import os\nos.environ["TRITON_INTERPRET"] = "1"\n')
    ops = team / "pkg" / "ops"
    (ops / "g.py").write_text(GLUON.replace("{tail}", ""))

    def tied(raw: Path) -> tuple[set[str], str]:
        _code, md, doc = _cli(tmp_path, raw, "--scan", str(ops))
        found = [f for f in doc["findings"] if f["probe"] == "fp.binary.add[float16,float32]"]
        return {u.split(" in ")[0].split(":")[0].rsplit("/", 1)[-1] for f in found
                for u in f["uses"]}, md  # fmt: skip

    files, md = tied(_raw(tmp_path / "a", interp_changes=True, aot_changes=False))
    assert files == {"k.py"}, md
    assert "kernels that cannot run there (ops/g.py:" in md and " in add_gluon, ..." in md
    files, md = tied(_raw(tmp_path / "b", interp_changes=False, aot_changes=True))
    assert files == {"k.py", "g.py"}, md  # a gluon kernel compiles for cuda:90
    (ops / "g.py").write_text(GLUON.replace("{tail}", "gl.amd.cdna4.async_copy.commit_group()"))
    files, md = tied(_raw(tmp_path / "c", interp_changes=False, aot_changes=True))
    assert files == {"k.py"}, md


def test_interpreter_evidence_in_one_folder_holds_for_that_folder_only(tmp_path):
    """gpu-mode/lectures: lecture_014's helper reads TRITON_INTERPRET, and lecture_018's
    kernel was tied to 3.9.0's interpreter-only bf16 ``maximum`` regression. A module that sets
    or reads the variable says how the code around it runs: its top folder of the repository.
    A test suite, a CI or config file, docs, or a module at the root hold for everything."""
    team = _team(tmp_path)
    scan = str(team / "pkg" / "ops")
    (team / "lecture_014").mkdir()
    (team / "lecture_014" / "util.py").write_text(
        'import os\nif os.environ.get("TRITON_INTERPRET") == "1":\n    pass\n'
    )
    got = targets.infer([scan], {})
    assert got is not None and got.not_run == ()
    assert got.scopes == (str(team.resolve() / "lecture_014"),), got
    raw = _raw(tmp_path, interp_changes=True, aot_changes=False)
    _code, md, doc = _cli(tmp_path, raw, "--scan", scan)
    assert _blocking(doc) == [], md
    assert "in code outside the folders where the repository runs the interpreter" in md, md
    assert doc["targets_inferred"]["scopes"] == [str(team.resolve() / "lecture_014")]
    # the same module beside the kernels: they run under it
    (team / "pkg" / "debug.py").write_text((team / "lecture_014" / "util.py").read_text())
    _code, md, doc = _cli(tmp_path, raw, "--scan", scan)
    assert _blocking(doc) == [("fp.binary.add[float16,float32]", "interpret")], md
    (team / "pkg" / "debug.py").unlink()
    # a test suite holds for the whole repository
    (team / "tests").mkdir()
    (team / "tests" / "conftest.py").write_text('import os\nos.environ["TRITON_INTERPRET"] = "1"\n')
    got = targets.infer([scan], {})
    assert got is not None and got.scopes == (), got


def test_turning_the_interpreter_off_is_no_evidence_of_running_it(tmp_path):
    """unsloth-zoo sets ``os.environ["TRITON_INTERPRET"] = "0"``: the interpreter off."""
    team = _team(tmp_path)
    for line in ('os.environ["TRITON_INTERPRET"] = "0"', "env = {'TRITON_INTERPRET': '0'}"):
        (team / "pkg" / "setup_env.py").write_text(f"import os\n{line}\n")
        (team / "ci.sh").write_text("TRITON_INTERPRET=0 pytest tests\n")
        got = targets.infer([team / "pkg" / "ops"], {})
        assert got is not None and got.not_run == ("interpret",), (line, got)
    (team / "ci.sh").write_text("TRITON_INTERPRET=1 pytest tests\n")
    got = targets.infer([team / "pkg" / "ops"], {})
    assert got is not None and got.not_run == () and got.scopes == (), got
