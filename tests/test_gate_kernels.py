"""The gate on a team's kernels and tests, read from what the matrix really wrote.

``tests/fixtures/teamlib_raw`` holds two raw files of a real run (its README has the commands):
the fixture library's suite and its kernels' compiles on Triton 3.8.0 and 3.9.0.
"""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

import pytest

from matrix.core import Release
from matrix.gate import compare as gc
from matrix.gate import verdict as gate
from matrix.gate.compare import compare_kernels
from matrix.gate.kernel_compiles import SHARED_GROWTH
from matrix.results import Run, read_raw, read_runs, write_raw

FIXTURES = Path(__file__).parent / "fixtures"
RAW = FIXTURES / "teamlib_raw"
ACCEPT_NONE = FIXTURES / "gate" / "accepted_none.toml"
B, C = Release.parse("3.8.0"), Release.parse("3.9.0")
BLOCK_PTR = "kernel teamlib.kernels:matmul_block_ptr_kernel"


def gate_on(tmp_path: Path, raw: Path) -> tuple[int, dict]:
    import json

    out = tmp_path / "gate-out"
    args = ["--baseline", "3.8.0", "--candidate", "3.9.0", "--results", str(raw)]
    args += ["--out", str(out), "--accepted", str(ACCEPT_NONE), "--no-project-scan"]
    code = gate.main(args)
    return code, json.loads((out / "gate.json").read_text())


def test_recorded_runs_hold_tests_launches_and_compiles_per_target() -> None:
    for run in read_runs(RAW):
        assert {"suite", "tests", "launches", "kernel_compiles"} <= set(run.extra)
        assert {c["target"] for c in run.extra["kernel_compiles"]} == {
            "cuda:80", "cuda:90", "hip:gfx942"
        }  # fmt: skip
        assert len(run.extra["launches"]) == 7
        # The gate reads exactly what the matrix wrote: no entry it cannot parse.
        assert len(gc.parse_tests(run)) == len(run.extra["tests"]) == 8


def test_a_kernel_that_compiles_on_the_baseline_only_is_breaking(tmp_path: Path) -> None:
    code, doc = gate_on(tmp_path, RAW)
    assert code == 1
    breaking = {(f["probe"], f["where"]) for f in doc["findings"] if f["kind"] == gc.BREAKING}
    assert breaking == {(BLOCK_PTR, f"aot:{t}") for t in ("cuda:80", "cuda:90", "hip:gfx942")}
    (ev,) = {e for f in doc["findings"] if f["probe"] == BLOCK_PTR for e in f["evidence"][1:]}
    assert "Block pointers have been removed" in ev
    # Its test passed on 3.8.0 and fails on 3.9.0: a regression, found by the test's id.
    regressions = [f["probe"] for f in doc["findings"] if f["kind"] == gc.REGRESSION]
    assert regressions == [
        "test tests/fixtures/teamlib/tests/test_teamlib.py::test_matmul_block_ptr"
    ]


def _runs() -> tuple[list[Run], list[Run]]:
    runs = read_runs(RAW)
    return [r for r in runs if r.release == B], [r for r in runs if r.release == C]


def _edit(runs: list[Run], kernel: str, target: str, **fields: object) -> list[Run]:
    runs = copy.deepcopy(runs)
    for run in runs:
        for rec in run.extra["kernel_compiles"]:
            if rec["kernel"].endswith(kernel) and rec["target"] == target:
                rec.update(fields)
    return runs


def _kernel_findings(base: list[Run], cand: list[Run]) -> gc.Comparison:
    out = gc.Comparison()
    compare_kernels(out, gc.Sides(base, cand, B, C))
    return out


def test_identical_compiles_are_silent() -> None:
    base, _ = _runs()
    out = _kernel_findings(base, copy.deepcopy(base))
    assert out.findings == [] and out.undecidable == []


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"classes": ["fma"], "instruction_class": "fma"}, "instruction class mma.sync lost"),
        ({"spills": 128, "registers": 255}, "spills 0 -> 128 bytes"),
        ({"shared": 4096 + 2048}, "shared memory 4096 -> 6144 bytes"),
    ],
)
def test_a_worse_compile_is_a_behaviour_change_with_numbers(fields: dict, says: str) -> None:
    base, _ = _runs()
    cand = _edit(base, ":matmul_kernel", "cuda:90", **fields)
    out = _kernel_findings(base, cand)
    # (more registers beside the spills are "may slow your kernel", apart: test_gate_resources)
    (f,) = [x for x in out.findings if x.kind != gc.MAY_SLOW]
    assert f.kind == gc.BEHAVIOUR and f.where == "aot:cuda:90" and says in f.evidence[0]


def test_small_shared_memory_growth_is_not_a_change() -> None:
    base, _ = _runs()
    cand = _edit(base, ":matmul_kernel", "cuda:90", shared=4096 + SHARED_GROWTH.bytes)
    assert _kernel_findings(base, cand).findings == []


@pytest.mark.parametrize("status", ["skipped", "error", "crashed", "timeout"])
def test_a_compile_not_observed_on_the_candidate_is_undecidable(status: str) -> None:
    base, _ = _runs()
    cand = _edit(base, ":add_kernel", "hip:gfx942", status=status, detail="ld.lld not found")
    out = _kernel_findings(base, cand)
    assert out.findings == [] and len(out.undecidable) == 1 and status in out.undecidable[0]


def test_candidate_without_kernel_compiles_is_undecidable(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    shutil.copytree(RAW, raw)
    for path in raw.glob("triton-3.9.0-*.json"):
        run = read_raw(path)
        del run.extra["kernel_compiles"]
        write_raw(run, path)
    code, doc = gate_on(tmp_path, raw)
    assert code == 1  # the test regression still stands; the compiles cannot be vouched for
    assert not any(f["probe"].startswith("kernel ") for f in doc["findings"])
    assert any("compiled on 3.8.0 but not on 3.9.0" in u for u in doc["undecidable"])


def test_tests_in_another_shape_are_a_data_error() -> None:
    (run, *_), _ = _runs()
    run = copy.deepcopy(run)
    run.extra["tests"] = [{"nodeid": "t::x", "outcome": "passed"}]  # not what the matrix writes
    with pytest.raises(gc.DataError, match="tests\\[0\\]"):
        gc.parse_tests(run)
