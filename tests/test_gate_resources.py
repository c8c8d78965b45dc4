"""The gate's "may slow your kernel": a kernel's resource change between two releases, named with
its kernel, target and both numbers, blocking only where matrix/data/resource_gate.toml says.

Two kinds of kernel: a team's captured kernels (the recorded teamlib fixture's compiles,
``tests/test_gate_kernels``' helpers) and this project's kernels (the variants of the
splitk/tiled aot rows; small synthetic runs here).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from matrix.core import DataFileError, Release
from matrix.gate import compare as gc
from matrix.gate import resource_changes as rc
from matrix.gate import verdict as gate
from matrix.gate.config import AcceptedChange
from matrix.results import Result, Run, raw_name, write_raw
from tests.test_gate_kernels import ACCEPT_NONE, _edit, _kernel_findings, _runs

B, C = Release.parse("3.8.0"), Release.parse("3.9.0")


def _row(registers: int = 168, local: int = 0, shared: int = 16384, secs=(0.6, 0.5)) -> dict:
    return {"stages": ["ptx"], "matrix_instructions": ["wgmma"], "cached": False,
            "registers": registers, "local_bytes": local, "shared": shared,
            "resource_source": "cubin .nv.info", "compile_seconds": list(secs),
            "seconds_from": "measured in this run"}  # fmt: skip


def _run(release: str, **fused: object) -> Run:
    data = {"pointer": _row(), "fused": {**_row(255, 640, 16384, (2.2, 2.4)), **fused}}
    return Run(
        f"triton-{release}-numpy-2.4.6",
        {"triton": release, "numpy": "2.4.6", "python": "3.11.7", "platform": "linux-x86_64"},
        results=[Result("splitk", "aot", "cuda:90", "pass", "compiled", 1.0, data)],
    )


def _project(cand: Run, accepted=()) -> list[gc.GateFinding]:
    out = gc.compare([_run("3.8.0")], [cand], B, C, list(accepted), [])
    return [f for f in out.findings if f.probe == "splitk"]


# ---------------------------------------------------------------- the rule itself


def test_a_change_names_both_numbers_and_its_direction() -> None:
    (grew,) = rc.changes(_row(registers=128), _row(registers=168))
    assert (grew.measure, grew.worse, grew.said) == (
        "registers", True, "may slow your kernel: registers 128 -> 168 per thread"
    )  # fmt: skip
    (shrank,) = rc.changes(_row(local=720), _row(local=640))
    assert shrank.measure == "spills" and not shrank.worse and not shrank.blocks()


def test_compile_seconds_count_only_with_a_noise_band_on_both_sides() -> None:
    slow = _row(secs=(4.0, 4.4))
    assert [c.measure for c in rc.changes(_row(secs=(1.0, 1.1)), slow)] == ["compile_seconds"]
    # Timed once (a compile under the rule's repeat_from): no band, so never a change.
    assert rc.changes(_row(secs=(0.3,)), slow) == []
    assert rc.changes(_row(secs=(1.0, 1.1)), _row(secs=(1.5, 1.6))) == []  # within the band


def test_the_rule_file_is_checked_key_by_key(tmp_path: Path) -> None:
    good = rc.GATE_PATH.read_text(encoding="utf-8")
    bad = tmp_path / "r.toml"
    bad.write_text(good.replace("shared = false", 'shared = "no"'), encoding="utf-8")
    with pytest.raises(DataFileError, match=r"blocks\.project_kernels\.shared.*true or false"):
        rc.load_blocks(bad)
    bad.write_text(good.replace("[blocks.team_kernels]", "[blocks.teams]"), encoding="utf-8")
    with pytest.raises(DataFileError, match="teams"):
        rc.load_blocks(bad)
    assert set(rc.load_blocks()) == set(rc.SCOPES)


# ---------------------------------------------------------------- this project's kernels


def test_a_project_kernel_that_grew_may_slow_and_does_not_block() -> None:
    (f,) = _project(_run("3.9.0", registers=255, local_bytes=800))
    assert f.kind == gc.MAY_SLOW and f.where == "aot:cuda:90"
    assert (f.baseline, f.candidate) == ("fused: spills 640", "fused: spills 800")
    assert f.evidence == [
        "may slow your kernel: local memory (spills) 640 -> 800 bytes per thread: kernel "
        "splitk (fused) on aot:cuda:90, 3.8.0 -> 3.9.0"
    ]
    assert gc.MAY_SLOW not in gc.UNSAFE_KINDS


def test_where_the_rule_says_block_it_is_a_behaviour_change_and_can_be_acknowledged(
    monkeypatch,
) -> None:
    rule = copy.deepcopy(rc.BLOCKS)
    rule[rc.PROJECT]["spills"] = True
    monkeypatch.setattr(rc, "BLOCKS", rule)
    cand = _run("3.9.0", local_bytes=800)
    (f,) = _project(cand)
    assert f.kind == gc.BEHAVIOUR
    ack = AcceptedChange("splitk", "aot:cuda:90", "fused: spills 640", "fused: spills 800",
                         "measured on the GPU: no slower")  # fmt: skip
    (f,) = _project(cand, [ack])
    assert f.kind == gc.ACCEPTED and f.reason.startswith("measured")


def test_nothing_within_the_rule_and_nothing_for_a_shrink() -> None:
    assert _project(_run("3.9.0", registers=250, local_bytes=600, shared=16384)) == []


def test_the_gate_lists_it_apart_and_stays_safe(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    raw.mkdir()
    for run in (_run("3.8.0"), _run("3.9.0", registers=255, shared=32768)):
        write_raw(run, raw / raw_name(run.id))
    out = tmp_path / "out"
    code = gate.main(["--baseline", "3.8.0", "--candidate", "3.9.0", "--results", str(raw),
                      "--out", str(out), "--accepted", str(ACCEPT_NONE),
                      "--no-project-scan"])  # fmt: skip
    doc = json.loads((out / "gate.json").read_text())
    md = (out / "gate.md").read_text()
    assert code == 0 and doc["verdict"] == "safe"
    (f,) = [f for f in doc["findings"] if f["kind"] == gc.MAY_SLOW]
    said = "shared memory 16384 -> 32768 bytes: kernel splitk (fused) on aot:cuda:90"
    assert said in f["evidence"][0]
    assert "### May slow your kernel" in md and "kernel splitk (fused) on aot:cuda:90" in md


# ---------------------------------------------------------------- a team's captured kernels


def test_a_team_kernel_with_more_registers_may_slow_without_blocking() -> None:
    base, _ = _runs()
    base = _edit(base, ":matmul_kernel", "cuda:90", registers=128)
    cand = _edit(base, ":matmul_kernel", "cuda:90", registers=200)
    (f,) = _kernel_findings(base, cand).findings
    assert f.kind == gc.MAY_SLOW and f.probe.endswith(":matmul_kernel")
    assert f.where == "aot:cuda:90" and f.evidence == [
        "may slow your kernel: registers 128 -> 200 per thread"
    ]


def test_a_team_kernel_blocks_by_the_rule_not_by_the_code(monkeypatch) -> None:
    base, _ = _runs()
    base = _edit(base, ":matmul_kernel", "cuda:90", registers=128)
    cand = _edit(base, ":matmul_kernel", "cuda:90", registers=200, spills=64)
    kinds = {f.kind: f.evidence for f in _kernel_findings(base, cand).findings}
    assert set(kinds) == {gc.BEHAVIOUR, gc.MAY_SLOW}  # spills block, registers do not
    assert kinds[gc.BEHAVIOUR][0].startswith("spills 0 -> 64 bytes")
    rule = copy.deepcopy(rc.BLOCKS)
    rule[rc.TEAM] = dict.fromkeys(rc.MEASURES, False)
    monkeypatch.setattr(rc, "BLOCKS", rule)
    assert {f.kind for f in _kernel_findings(base, cand).findings} == {gc.MAY_SLOW}


def test_every_resource_reason_of_the_team_rule_has_a_measure() -> None:
    assert rc.measure_of("may slow your kernel: compile 1.00-1.10 s -> 4.00-4.20 s") == (
        "compile_seconds"
    )
    assert rc.measure_of("shared memory 4096 -> 8192 bytes") == "shared"
    assert rc.measure_of("instruction class wgmma lost: now fma") is None
    assert rc.reason_blocks("instruction class wgmma lost: now fma")
