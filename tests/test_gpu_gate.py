"""The gate on GPU results recorded on the lent GPUs (probe rows: H100, timings: H200): failed GPU
checks and slowdowns.

Baseline: the committed 3.4.0 GPU raw file and benchmark file. Candidate: the same files
relabelled as a release "3.4.1", with one change each test makes (a failed check, every split-K
time 20 % slower), so that nothing else differs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from matrix.gate import timing
from matrix.gate.verdict import main
from matrix.results import read_json
from tests.support import committed_raw

REPORTS = Path(__file__).resolve().parent.parent / "reports"
RAW = committed_raw("triton-3.4.0-numpy-2.5.2-gpu-h100")
BENCH = REPORTS / "bench" / "triton-3.4.0-gpu-h200.json"


def _setup(tmp: Path, slower: float = 1.0, fail_probe: str | None = None) -> Path:
    raw, bench = tmp / "raw", tmp / "bench"
    raw.mkdir()
    bench.mkdir()
    (raw / RAW.name).write_bytes(RAW.read_bytes())
    (bench / BENCH.name).write_text(BENCH.read_text())
    run = read_json(RAW)
    run["runs"][0]["env"]["triton"] = "3.4.1"
    run["runs"][0]["id"] = "triton-3.4.1-numpy-2.5.2-gpu-h100"
    for r in run["runs"][0]["results"]:
        if r["probe"] == fail_probe:
            r["status"], r["detail"] = "fail", "worst rel. error 3e-2 (stand-in)"
    (raw / "triton-3.4.1-numpy-2.5.2-gpu-h100.json").write_text(json.dumps(run))
    doc = json.loads(BENCH.read_text())
    doc["release"] = doc["env"]["triton"] = "3.4.1"
    for r in doc["records"]:
        if r["impl"] == "splitk" and r.get("us_graph"):
            r["us_graph"] *= slower
            r["us_graph_rounds"] = [x * slower for x in r["us_graph_rounds"]]
    for q in doc["ratios"]:
        if q["impl"] == "splitk":
            q["graph"] *= slower
            q["graph_rounds"] = [x * slower for x in q["graph_rounds"]]
    (bench / "triton-3.4.1-gpu-h200.json").write_text(json.dumps(doc))
    return tmp


def _gate(tmp: Path, accepted: str = "", *extra: str) -> tuple[int, str]:
    acc = tmp / "accepted.toml"
    acc.write_text(accepted)
    args = ["--baseline", "3.4.0", "--candidate", "3.4.1", "--results", str(tmp / "raw")]
    args += ["--no-project-scan", "--accepted", str(acc), "--out", str(tmp / "gate"), *extra]
    code = main(args)
    return code, (tmp / "gate" / "gate.md").read_text()


def test_same_gpu_results_are_safe(tmp_path: Path) -> None:
    code, md = _gate(_setup(tmp_path))
    assert code == 0, md
    assert "GPU timings gpu:cuda:90 (h200)" in md
    assert "gpu:cuda:90" in md


def test_a_gpu_check_failing_on_the_candidate_is_a_regression(tmp_path: Path) -> None:
    code, md = _gate(_setup(tmp_path, fail_probe="splitk"))
    assert code == 1, md
    assert "**splitk**: `pass` → `fail` on gpu:cuda:90" in md


def test_candidate_20_percent_slower_exits_1_with_numbers(tmp_path: Path) -> None:
    code, md = _gate(_setup(tmp_path, slower=1.2))
    assert code == 1, md
    base = json.loads(BENCH.read_text())
    q = next(r for r in base["ratios"] if r["impl"] == "splitk")
    assert f"**slowdown splitk {q['case']}**: `{q['graph']:.3f}` → `{q['graph'] * 1.2:.3f}`" in md
    assert "(+20.0%; threshold 10.0%" in md
    assert "[[slowdown]]" in md  # a ready-made acknowledgement
    report = json.loads((tmp_path / "gate" / "gate.json").read_text())
    slow = [f for f in report["findings"] if f["probe"].startswith("slowdown ")]
    assert len(slow) == len([r for r in base["ratios"] if r["impl"] == "splitk"]) == 24


def test_acknowledged_slowdown_exits_0(tmp_path: Path) -> None:
    accepted = '[[slowdown]]\ncase = "*"\nimpl = "splitk"\nreason = "stand-in: fine for us"\n'
    code, md = _gate(_setup(tmp_path, slower=1.2), accepted)
    assert code == 0, md
    assert "accepted because: stand-in: fine for us" in md


def test_acknowledgement_up_to_a_ratio_does_not_cover_a_bigger_slowdown(tmp_path: Path) -> None:
    accepted = '[[slowdown]]\ncase = "*"\nmax_ratio = 0.5\nreason = "only small ones"\n'
    code, _ = _gate(_setup(tmp_path, slower=1.2), accepted)
    assert code == 1


def test_slowdown_within_the_threshold_is_not_a_regression(tmp_path: Path) -> None:
    code, md = _gate(_setup(tmp_path, slower=1.05))
    assert code == 0, md


def test_a_higher_threshold_lets_20_percent_pass(tmp_path: Path) -> None:
    code, md = _gate(_setup(tmp_path, slower=1.2), "", "--slowdown-threshold", "0.25")
    assert code == 0, md


def test_noise_widens_the_margin() -> None:
    def doc(release: str, graph: float, noise: float) -> dict:
        return {"release": release, "column": "gpu:cuda:90", "machine": "m", "records": [],
                "ratios": [{"impl": "splitk", "case": "c", "graph": graph, "noise": noise,
                            "eager": 1.0}]}  # fmt: skip

    noisy = [doc("1.0", 1.0, 0.15), doc("1.1", 1.2, 0.15)]
    assert not timing.compare_timings(noisy, "1.0", "1.1", []).findings
    quiet = [doc("1.0", 1.0, 0.01), doc("1.1", 1.2, 0.01)]
    assert len(timing.compare_timings(quiet, "1.0", "1.1", []).findings) == 1


def test_baseline_timings_without_candidate_timings_are_undecidable(tmp_path: Path) -> None:
    tmp = _setup(tmp_path)
    (tmp / "bench" / "triton-3.4.1-gpu-h200.json").unlink()
    code, md = _gate(tmp)
    assert code == 2, md
    assert "GPU timings on gpu:cuda:90 (h200) for the baseline 3.4.0 but none" in md


def test_a_slowdown_entry_without_reason_is_refused(tmp_path: Path) -> None:
    code, md = _gate(_setup(tmp_path), '[[slowdown]]\ncase = "*"\n')
    assert code == 2
    assert "slowdown[0].reason: expected a non-empty string" in md


@pytest.mark.parametrize("bad", ["-1", "12"])
def test_bad_threshold_is_undecidable(tmp_path: Path, bad: str) -> None:
    code, md = _gate(_setup(tmp_path), "", "--slowdown-threshold", bad)
    assert code == 2, md
