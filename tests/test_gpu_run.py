"""The GPU run's driver off the GPU: a failed preflight stops before any probe and says why in
the install status; a release that did not run gets a raw file with its reason; the benchmark
ratios and the suite-file conversion; the runner's --env lands in the raw file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import triton

from matrix.measure import gpu_bench, gpu_run
from matrix.results import raw_files, read_raw

ROOT = Path(__file__).resolve().parent.parent


def test_wrong_release_stops_before_any_probe(tmp_path: Path) -> None:
    """The installed Triton is not the release asked for: install error, no results."""
    assert gpu_run.main(["--release", "0.0.1", "--out-dir", str(tmp_path), "--no-bench"]) == 1
    (raw,) = (tmp_path / "raw").glob("triton-0.0.1-*-gpu-h200.json.gz")
    run = read_raw(raw)
    assert run.install["status"] == "error"
    assert run.results == []
    # One check for the GPU and the CPU cells (matrix.measure.triton_identity), naming both.
    assert f"found first is {triton.__version__}" in run.install["detail"]
    assert "not 0.0.1" in run.install["detail"]
    assert "no probe run" in run.install["detail"]
    assert run.env["torch_pairing"].startswith("machine's torch")


def test_no_device_stops_at_the_device_stage(tmp_path: Path) -> None:
    """Here (no GPU) the right release still cannot launch: that is recorded, not probed."""
    code = gpu_run.main(["--release", triton.__version__, "--out-dir", str(tmp_path), "--no-bench"])
    assert code == 1
    (raw,) = raw_files(tmp_path / "raw")
    run = read_raw(raw)
    assert run.install["status"] == "error" and run.results == []
    assert "preflight failed at device" in run.install["detail"]


def test_not_run_records_why(tmp_path: Path) -> None:
    why = "no device time left"
    assert gpu_run.main(["--release", "3.2.0", "--out-dir", str(tmp_path), "--not-run", why]) == 0
    run = read_raw(tmp_path / "raw" / "triton-3.2.0-numpy-2.5.2-gpu-h200.json.gz")
    assert run.install == {"status": "skipped", "seconds": 0.0, "detail": f"not run on h200: {why}"}
    assert run.env["triton"] == "3.2.0" and run.results == []


def _rec(impl: str, graph: list[float], us: float, ok: bool = True) -> dict:
    return {"m": 64, "n": 64, "k": 8192, "dtype": "fp16", "layout": "kn", "impl": impl,
            "ok": ok, "us": us, "us_graph_rounds": graph}  # fmt: skip


def test_ratios_per_round_noise_and_failed_checks() -> None:
    records = [_rec("cublas", [10.0, 10.0], 20.0), _rec("splitk", [12.0, 13.0], 30.0),
               _rec("tiled", [50.0, 50.0], 60.0, ok=False)]  # fmt: skip
    (q,) = gpu_bench.ratios(records)
    assert q["impl"] == "splitk" and q["case"] == "64x64x8192 fp16 kn"
    assert q["graph_rounds"] == [1.2, 1.3]
    assert abs(q["graph"] - 1.25) < 1e-12
    assert abs(q["noise"] - 0.1 / 1.25) < 1e-12
    assert q["eager"] == 1.5


def test_subset_is_24_cases_of_the_suite() -> None:
    from kernels.bench import suite as bench

    cases = gpu_bench.subset()
    assert len(cases) == 24 and set(map(str, cases)) <= set(map(str, bench.suite()))


def test_convert_suite_file_has_no_noise() -> None:
    doc = json.loads((ROOT / "reports" / "bench" / "h200.json").read_text())
    out = gpu_bench.convert_suite(doc, "3.6.0", "h200", "h200.json")
    assert out["kind"] == gpu_bench.KIND and out["column"] == "gpu:cuda:90"
    assert len(out["ratios"]) == 48 and all(q["noise"] is None for q in out["ratios"])


def test_runner_env_fields_land_in_the_raw_file(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    env = {**os.environ, "MATRIX_PROBE_PACKAGE": "tests.fixtures.probes", "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "matrix.run", "--out", str(out), "--backends", "interpret",
           "--probes", "ok_first", "--quiet", "--env", '{"torch_pairing": "stand-in"}']  # fmt: skip
    assert subprocess.run(cmd, cwd=ROOT, env=env, timeout=120).returncode == 0
    assert read_raw(out).env["torch_pairing"] == "stand-in"


def test_time_case_adds_graph_rounds_to_the_bench_record(monkeypatch) -> None:
    """kernels.bench's record is kept; the extra rounds are timed on the same seed's inputs."""
    from kernels.bench import checks, cli, timing

    seen = []

    def bench_case(case, env, bw, seed, impls):
        return [{"impl": i, "us_graph": 10.0, "ok": True} for i in impls] + [{"impl": "x"}]

    monkeypatch.setattr(cli, "bench_case", bench_case)
    monkeypatch.setattr(checks, "make_operands", lambda case, seed: seen.append(seed) or "ops")
    monkeypatch.setattr(timing, "rotating_sets", lambda case, ops, l2: ["sets"])
    monkeypatch.setattr(timing, "time_graph", lambda case, fn, sets: 12.0)
    monkeypatch.setattr(gpu_bench, "impl_fn", lambda case, impl: impl)
    case = gpu_bench.subset()[0]
    recs = gpu_bench.time_case(case, {"l2_bytes": 1}, 4000.0, seed=7, impls=("cublas", "splitk"))
    assert seen == [7]
    assert [r.get("us_graph_rounds") for r in recs] == [[10.0, 12.0], [10.0, 12.0], None]
    assert recs[0]["us_graph"] == 11.0
