"""Performance across releases (matrix/report/perf.py): the HUD table from per-release GPU
benchmark files, in absolute µs, flagged only beyond the run-to-run noise band measured across
runs (cuBLAS over every release's run, split-K over a repeated run); the gate's own timing
finding is named in the cell."""

from __future__ import annotations

import json
import types
from pathlib import Path

import pytest

from matrix.gate.compare import REGRESSION, Comparison, GateFinding
from matrix.report import perf
from matrix.report.charts import load_bench


def _rec(impl: str, us: float) -> dict:
    return {"m": 64, "n": 64, "k": 8192, "dtype": "fp16", "layout": "kn", "impl": impl,
            "ok": True, "us_graph": us}  # fmt: skip


def _doc(
    release: str, graph: float, noise: float = 0.01, splitk_us: float = 5.0, cublas_us: float = 10.0
) -> dict:
    return {
        "schema": 1,
        "kind": "triton-gpu-bench",
        "release": release,
        "column": "gpu:cuda:90",
        "machine": "h200",
        "records": [_rec("splitk", splitk_us), _rec("cublas", cublas_us)],
        "ratios": [
            {"case": "64x64x8192 fp16 kn", "impl": "splitk", "graph": graph, "eager": 0.5,
             "noise": noise},
            {"case": "64x64x8192 fp16 kn", "impl": "tiled", "graph": 5.0, "eager": 4.0,
             "noise": noise},
        ],
    }  # fmt: skip


def _write(folder: Path, docs: list[dict]) -> None:
    for d in docs:
        (folder / f"triton-{d['release']}-gpu-h200.json").write_text(json.dumps(d))


def test_one_row_per_case_one_cell_per_release(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(perf, "_gate_timing", lambda: None)
    _write(tmp_path, [_doc("3.9.0", 1.2), _doc("3.4", 0.9)])
    view = perf.build_view(perf.read_release_benches(tmp_path))
    assert view is not None and view.releases == ["3.4.0", "3.9.0"]
    assert len(view.rows) == 1  # split-K only; tiled is not this view's line
    row = view.rows[0]
    assert row.case == "64x64x8192 fp16 kn" and row.place == "gpu:cuda:90 (h200)"
    assert (row.cells["3.4.0"].graph, row.cells["3.9.0"].graph) == (0.9, 1.2)
    assert not view.flagged_by_gate and all(not c.flag for c in row.cells.values())
    assert "<polyline" in row.sparkline(view.releases)
    # The single-file split-K chart does not take a per-release file for a records file.
    assert load_bench(tmp_path) == []


def test_gate_findings_are_named_in_the_cell(tmp_path: Path, monkeypatch) -> None:
    calls = []

    def compare_timings(docs, baseline, candidate, accepted):
        calls.append((str(baseline), str(candidate)))
        out = Comparison()
        out.findings.append(
            GateFinding(REGRESSION, "slowdown splitk 64x64x8192 fp16 kn", "gpu:cuda:90 (h200)",
                        "0.900", "1.200", ["splitk/cuBLAS 0.900 -> 1.200 (+33.3%)"])
        )  # fmt: skip
        return out

    fake = types.SimpleNamespace(compare_timings=compare_timings, SLOWDOWN_PREFIX="slowdown ")
    monkeypatch.setattr(perf, "_gate_timing", lambda: fake)
    _write(tmp_path, [_doc("3.4.0", 0.9), _doc("3.9.0", 1.2, splitk_us=6.0)])
    view = perf.build_view(perf.read_release_benches(tmp_path))
    assert calls == [("3.4.0", "3.9.0")]
    cell = view.rows[0].cells["3.9.0"]
    assert "the gate: splitk/cuBLAS 0.900 -> 1.200 (+33.3%)" in cell.title
    assert view.rows[0].cells["3.4.0"].flag == ""


def test_flags_only_beyond_the_noise_band_measured_across_runs(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(perf, "_gate_timing", lambda: None)
    # cuBLAS (the same library each run) spreads 2% over the runs; split-K ran twice on 3.4.0
    # and spread 15% between those runs: the band is the larger, 15% (above the gate's 10%).
    _write(
        tmp_path,
        [
            _doc("3.4.0", 0.5, splitk_us=5.0, cublas_us=10.0),
            _doc("3.5.1", 0.5, splitk_us=5.25, cublas_us=10.2),  # +5%: inside the band
            _doc("3.6.0", 0.7, splitk_us=7.35, cublas_us=10.1),  # +40%: beyond it
            _doc("3.7.1", 0.5, splitk_us=5.0, cublas_us=10.0),  # -32%: faster
            _doc("3.8.0", 0.5, splitk_us=5.6, cublas_us=10.0),  # +12%: past 10%, not 15%
        ],
    )
    history = tmp_path / "history"
    history.mkdir()
    _write(history, [_doc("3.4.0", 0.5, splitk_us=5.75, cublas_us=10.0)])
    view = perf.build_view(perf.read_release_benches(tmp_path), perf.read_repeats(tmp_path))
    assert view is not None and view.repeats == ["3.4.0"]
    row = view.rows[0]
    assert row.band == pytest.approx(0.15) and "run twice on 3.4.0" in row.band_from
    flags = {r: c.flag for r, c in row.cells.items()}
    assert flags == {"3.4.0": "", "3.5.1": "", "3.6.0": "slower", "3.7.1": "faster", "3.8.0": ""}
    assert row.cells["3.6.0"].meaning == "regression"
    assert view.newest_first == ["3.8.0", "3.7.1", "3.6.0", "3.5.1", "3.4.0"]
    worst = view.biggest_regression
    assert worst is not None and (worst.before, worst.after) == ("3.5.1", "3.6.0")
    assert worst.factor == pytest.approx(7.35 / 5.25)


def test_a_change_beyond_a_narrow_band_but_below_the_gates_threshold_is_not_flagged(
    tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setattr(perf, "_gate_timing", lambda: None)
    _write(
        tmp_path,
        [_doc("3.4.0", 0.5, splitk_us=5.0, cublas_us=10.0),
         _doc("3.5.1", 0.5, splitk_us=5.2, cublas_us=10.05)],  # +4%, band 0.5%
    )  # fmt: skip
    row = perf.build_view(perf.read_release_benches(tmp_path)).rows[0]
    assert row.band == pytest.approx(0.005) and row.cells["3.5.1"].flag == ""


def test_no_band_no_flag(tmp_path: Path, monkeypatch) -> None:
    """One run per release and no cuBLAS records: nothing measured the noise, nothing flags."""
    monkeypatch.setattr(perf, "_gate_timing", lambda: None)
    docs = [_doc("3.4.0", 0.5, splitk_us=5.0), _doc("3.9.0", 5.0, splitk_us=50.0)]
    for d in docs:
        d["records"] = [r for r in d["records"] if r["impl"] != "cublas"]
    _write(tmp_path, docs)
    view = perf.build_view(perf.read_release_benches(tmp_path))
    assert view.rows[0].band is None
    assert all(not c.flag for c in view.rows[0].cells.values())


def test_a_file_missing_a_field_is_refused(tmp_path: Path) -> None:
    doc = _doc("3.9.0", 1.0)
    del doc["ratios"]
    _write(tmp_path, [doc])
    with pytest.raises(Exception, match="ratios"):
        perf.read_release_benches(tmp_path)


def test_no_files_no_view(tmp_path: Path) -> None:
    assert perf.build_view(perf.read_release_benches(tmp_path)) is None
