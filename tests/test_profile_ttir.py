"""The TTIR side of the usage profile: real TTIR of team kernels from four releases.

tests/fixtures/ttir/ holds what ``triton.compile`` gave for the kernels under
tests/fixtures/team_kernels/ on 3.1.0, 3.2.0, 3.8.0 and 3.9.0 (``generate.py`` there remakes
them); the summaries are read from that text, and a profile typed by them is checked against
the source reading alone.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from matrix.analyze.profile import MAY_AFFECT, NOT_USED, USED, Matcher
from matrix.analyze.profile.ttir import kinds_of, load_ttir_map
from matrix.backends.ttir_ops import summarize
from matrix.gate.usage import build_profile
from matrix.gate.verdict import main
from matrix.results import Run, raw_files, read_json, run_id_of
from tests.support import committed_raw

ROOT = Path(__file__).resolve().parent.parent
TTIR = ROOT / "tests" / "fixtures" / "ttir"
TEAM = ROOT / "tests" / "fixtures" / "team_kernels"
RAW = ROOT / "reports" / "raw"
RELEASES = ("3.1.0", "3.2.0", "3.8.0", "3.9.0")


def ops(kernel: str, release: str) -> list[dict]:
    return summarize((TTIR / f"{kernel}-{release}.ttir").read_text(encoding="utf-8"))


def at(summary: list[dict], op: str, line: int) -> list[dict]:
    return [r for r in summary if r["op"] == op and r["line"] == line]


def test_maximum_of_bf16_is_fp32_on_3_8_and_bf16_on_3_9():
    """The fingerprint's fp.binary_fn.maximum[bfloat16,lit_float] change, as the compiler
    wrote it: 3.8.0 widens the bfloat16 operand (the origin is still bf16), 3.9.0 does not."""
    old = at(ops("relu", "3.8.0"), "arith.maxnumf", 12)
    new = at(ops("relu", "3.9.0"), "arith.maxnumf", 12)
    assert [(r["operands"], r["result"]) for r in old] == [(["bf16", "c:f32"], "f32")]
    assert old[0]["direct"] == ["f32", "c:f32"]  # what the op itself was given
    assert [(r["operands"], r["result"]) for r in new] == [(["bf16", "c:bf16"], "bf16")]
    assert old[0]["file"].endswith("team_kernels/bf16_maximum/relu.py")


def test_uint8_minus_constexpr_is_int32_on_3_1_and_wraps_in_uint8_on_3_2_and_later():
    """No value names nor 1-based columns on 3.1.0; the bitcast to uint8 is an i8 either way,
    and the unsigned reading (extui, uitofp) tells the sign."""
    for release, result, const in (("3.1.0", "s32", "c:i32"), ("3.2.0", "u8", "c:i8"),
                                   ("3.8.0", "u8", "c:i8"), ("3.9.0", "u8", "c:i8")):  # fmt: skip
        sub = at(ops("dequant", release), "arith.subi", 15)
        assert [(r["operands"], r["result"]) for r in sub] == [(["u8", const], result)], release
    loads = at(ops("dequant", "3.9.0"), "tt.load", 13)
    assert loads[0]["operands"][0] == "p:i8" and loads[0]["attrs"]["masked"] == "true"


@pytest.mark.parametrize("release", RELEASES)
def test_a_helper_inlined_keeps_its_own_line_and_a_library_scan_the_callers(release):
    act = ops("act", release)
    # tl.load inside _load_row (line 11), called from line 18
    assert [r["operands"][0] for r in at(act, "tt.load", 11)] == ["p:bf16"]
    assert at(act, "arith.maxnumf", 19)[0]["operands"][0] == "bf16"
    scan = ops("cumsum", release)
    scans = [r for r in scan if r["op"] == "tt.scan"]
    # tl.cumsum is a function in Triton's library: its scan is put at the team's line 11, its
    # operand is the bfloat16 value before the library's own upcast, and the combine
    # function's add (Triton's code) is not the team's
    assert [(r["line"], r["operands"]) for r in scans] == [(11, ["bf16"])]
    assert not [r for r in scan if r["op"] == "arith.addf"]
    assert all("/triton/" not in r["file"] for r in act + scan)


@pytest.mark.parametrize("release", RELEASES)
def test_a_dot_in_a_loop_has_its_carried_accumulator_and_pointer_types(release):
    summary = ops("matmul", release)
    dots = [r for r in summary if r["op"] == "tt.dot"]
    assert [(r["line"], r["operands"], r["result"]) for r in dots] == [
        (38, ["f16", "f16", "f32"], "f32")
    ]
    assert dots[0]["attrs"]["inputPrecision"] in ("tf32", "ieee")
    loads = [r for r in summary if r["op"] == "tt.load"]
    assert {r["line"] for r in loads} == {36, 37}
    assert {r["operands"][0] for r in loads} == {"p:f16"}


def test_an_fp8_cast_and_a_scalar_argument():
    for release in RELEASES:
        quant = ops("quant", release)
        cast = at(quant, "tt.fp_to_fp", 12)
        assert [(r["operands"], r["result"]) for r in cast] == [(["f32"], "f8E5M2")], release
        mul = at(quant, "arith.mulf", 12)
        assert [r["operands"] for r in mul] == [["f16", "a:f32"]], release


def test_summary_spellings_map_to_the_profiles_kinds():
    tmap = load_ttir_map()
    assert kinds_of("bf16", tmap) == {"bfloat16"}
    assert kinds_of("u8", tmap) == {"uint8"}
    assert kinds_of("i8", tmap) == {"int8", "uint8"}  # the IR did not say: either
    assert kinds_of("a:f32", tmap) == {"arg_f32"}
    assert kinds_of("c:i32", tmap) == {"lit_int", "cx_int", "int32", "uint32"}
    assert kinds_of("p:f8E5M2", tmap) == {"float8e5"}
    assert kinds_of("?", tmap) is None and kinds_of("f8E9M9", tmap) is None


def _run_with(kernel: str, releases: tuple[str, ...]) -> Run:
    records = []
    for release in releases:
        summary = ops(kernel, release)
        for r in summary:  # recorded where the cell ran, not here: matched by path suffix
            r["file"] = r["file"].replace("/ci/checkout/", "/runner/work/")
        records.append(
            {"id": "k@cuda:80", "key": "k", "kernel": f"{kernel}:k", "target": "cuda:80",
             "status": "compiled", "ttir_ops": summary}
        )  # fmt: skip
    return Run("r", extra={"kernel_compiles": records})


def test_the_ttir_types_a_generic_kernel_the_source_cannot():
    """A dtype-generic kernel reads x through a helper: from the source, a change to
    tl.maximum on any float dtype may affect it; with the TTIR of its bfloat16 launch, the
    bfloat16 cell is used and the float16 one is not."""
    scan = [str(TEAM / "generic_helper" / "act.py")]  # the kernel without its test
    alone = Matcher(build_profile(scan, [], []))
    assert alone.cell("binary_fn.maximum", "bfloat16,lit_float").status == MAY_AFFECT
    assert alone.cell("binary_fn.maximum", "float16,lit_float").status == MAY_AFFECT
    typed = build_profile(scan, [], [_run_with("act", ("3.8.0", "3.9.0"))])
    m = Matcher(typed)
    hit = m.cell("binary_fn.maximum", "bfloat16,lit_float")
    assert hit.status == USED and hit.uses[0].line == 19
    assert hit.uses[0].attr("dtypes") == "ttir"
    assert m.cell("binary_fn.maximum", "float16,lit_float").status == NOT_USED
    assert any("typed by the compiled TTIR" in n for n in typed.notes)


def test_a_noop_cast_and_a_constexpr_are_typed_and_never_contradicted():
    # x = tl.load(x_ptr).to(tl.bfloat16) of a bfloat16 pointer leaves no conversion: from the
    # source the load's dtype is unknown (a cast from fp8e4b8 may affect it); the TTIR says no
    m = Matcher(build_profile([str(TEAM / "bf16_cumsum")], [], [_run_with("cumsum", RELEASES)]))
    assert m.cell("cast.to", "float8e4b8->bfloat16").status == NOT_USED
    assert m.cell("cast.to", "bfloat16->bfloat16").status == USED
    # ZERO (a constexpr with no default) is an int constant in the IR: cx_int, not cx_float;
    # the source's uint8 (from the bitcast) stays, the IR's i32 constant does not widen it
    m = Matcher(build_profile([str(TEAM / "uint8_dequant")], [], [_run_with("dequant", RELEASES)]))
    assert m.cell("binary.sub", "uint8,cx_int").status == USED
    assert m.cell("binary.sub", "uint8,cx_float").status == NOT_USED
    assert m.cell("binary.sub", "int8,cx_int").status == NOT_USED


def _results_with_team_runs(tmp_path: Path, kernel: str, folder: str, pair: tuple[str, str]):
    """The committed aot cells of ``pair`` with a team suite's launch and TTIR added, as a
    cell that ran ``--tests`` records them."""
    out = tmp_path / "raw"
    out.mkdir()
    written = set()
    for release in pair:
        run_id = f"triton-{release}-numpy-2.4.6"
        doc = read_json(committed_raw(run_id))  # either stored form
        run = doc["runs"][0]
        run["suite"] = {"path": str(TEAM / folder)}
        run["kernel_compiles"] = _run_with(kernel, (release,)).extra["kernel_compiles"]
        (out / f"{run_id}.json").write_text(json.dumps(doc), encoding="utf-8")
        written.add(run_id)
    for other in raw_files(RAW):
        if run_id_of(other) not in written:
            shutil.copy(other, out / other.name)
    return out


@pytest.mark.skipif(not RAW.is_dir(), reason="no committed results in reports/raw")
def test_the_gate_blocks_once_precisely_on_the_ttir_typed_kernel(tmp_path, monkeypatch):
    """From the kernel's source alone, tl.maximum of an untyped value and 0.0 may be hit by
    all four float changes of 3.8.0 -> 3.9.0; with its compiled TTIR, by the bfloat16 one."""
    monkeypatch.chdir(ROOT)
    raw = _results_with_team_runs(tmp_path, "act", "generic_helper", ("3.8.0", "3.9.0"))
    kernel = str(TEAM / "generic_helper" / "act.py")  # without its test: nothing types x
    args = ["--baseline", "3.8.0", "--candidate", "3.9.0", "--scan", kernel]
    code = main(["--results", str(RAW), *args, "--out", str(tmp_path / "src")])
    md = (tmp_path / "src" / "gate.md").read_text()
    head = md.split("### Your code")[0]
    # entries counted once: in the details (the first screen repeats them, grouped)
    source_only = head.split("## Details", 1)[-1].count("\n- **")
    assert code == 1 and "may affect" in head, head  # bf16, fp16, fp8e4nv, fp8e5: may
    code = main(["--results", str(raw), *args, "--out", str(tmp_path / "ttir")])
    md = (tmp_path / "ttir" / "gate.md").read_text()
    head = md.split("### Your code")[0]
    assert code == 1, md
    # typed by the TTIR: only the bfloat16 entries are left (the type change and 3.9.0's
    # wrong bf16 maximum values), each "used" at the line, none "may affect"
    entries = [e for e in head.split("## Details", 1)[-1].split("\n- **")[1:]]
    assert 1 <= len(entries) < source_only, head
    assert all("bfloat16" in e and "used at `" in e and "may affect" not in e
               for e in entries), head  # fmt: skip
    assert "bfloat16,lit_float" in head and "used at `" in head
    assert "generic_helper/act.py:19 in leaky_floor_kernel" in head


# The aot cell's own call, in a child without the interpreter: compile_launch imports the
# kernel (no recorded definition) and its record carries the TTIR summary the gate reads.
COMPILE_ONE = """
import json, sys
from matrix.backends.kernels import compile_launch
launch = {"key": "k1", "kernel": "act:leaky_floor_kernel", "name": "leaky_floor_kernel",
          "module": "act", "file": "act.py", "path_root": sys.argv[1],
          "signature": {"x_ptr": "*bf16", "out_ptr": "*bf16", "n": "i32"},
          "constexprs": {"BLOCK": 64}, "options": {}}
print(json.dumps(compile_launch(launch, "cuda:80", sys.argv[1])))
"""


@pytest.mark.interpreter
def test_a_compile_record_carries_the_ttir_summary():
    from tests.support import compile_in_child

    rec = compile_in_child(COMPILE_ONE, str(TEAM / "generic_helper"), timeout=300)
    assert rec["status"] == "compiled", rec
    maxes = [r for r in rec["ttir_ops"] if r["op"] == "arith.maxnumf"]
    assert [(Path(r["file"]).name, r["line"]) for r in maxes] == [("act.py", 19)]
    assert maxes[0]["operands"][0] == "bf16"
    typed = build_profile(
        [str(TEAM / "generic_helper" / "act.py")], [], [Run("r", extra={"kernel_compiles": [rec]})]
    )
    assert Matcher(typed).cell("binary_fn.maximum", "bfloat16,lit_float").status == USED


def test_a_launched_kernels_line_that_no_compile_kept_says_its_branch_was_not_taken():
    """Liger-Kernel's cross-entropy kernel, launched with HAS_WEIGHT=False: its `if HAS_WEIGHT:`
    lines leave no op in any captured compile, so their operands stay open; the entry says
    that no launch took the branch, not only what to declare."""
    from matrix.analyze.profile.model import Profile, Use
    from matrix.analyze.profile.ttir import compile_records, refine

    rec = {"op": "arith.addf", "file": "<captured ../src/pkg/k.py:3 abc>", "line": 10, "col": 5,
           "operands": ["f32", "f32"], "result": "f32", "attrs": {}}  # fmt: skip
    run = Run("r", extra={"kernel_compiles": [
        {"kernel": "pkg.k:k", "status": "compiled", "ttir_ops": [rec]},
        {"kernel": "pkg.k:k2", "status": "skipped"},  # k2, in the same file, compiled nothing
    ]})  # fmt: skip
    taken = Use("binary.add", (None, None), path="pkg/k.py", line=10, col=4, kernel="k",
                test="t.py::a")  # fmt: skip
    pruned = Use("binary.truediv", (None, None), path="pkg/k.py", line=20, kernel="k",
                 test="t.py::a", decides="declare x")  # fmt: skip
    unlaunched = Use("binary.truediv", (None, None), path="pkg/k.py", line=20, kernel="k")
    other_file = Use("binary.truediv", (None, None), path="pkg/j.py", line=20, kernel="j",
                     test="t.py::a")  # fmt: skip
    not_compiled = Use("binary.truediv", (None, None), path="pkg/k.py", line=30, kernel="k2",
                       test="t.py::a")  # fmt: skip
    profile = Profile(uses=[taken, pruned, unlaunched, other_file, not_compiled])
    refine(profile, compile_records([run]))
    assert profile.uses[0].attr("dtypes") == "ttir"
    said = profile.uses[1].decides
    assert said.startswith("no captured launch of `k` compiled line 20 (a branch its constexprs")
    assert said.endswith("; or declare x")
    assert profile.uses[2].decides == ""  # not launched: typed from the source only
    assert profile.uses[3].decides == ""  # no compile of its file: nothing to say
    assert profile.uses[4].decides == ""  # its own kernel compiled nothing: nothing to say
