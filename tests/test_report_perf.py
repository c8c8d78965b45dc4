"""Performance across releases (matrix/report/perf.py): the HUD table from per-release GPU
benchmark files, and slowdown flags taken from the gate's timing rule, never a second rule."""

from __future__ import annotations

import json
import types
from pathlib import Path

import pytest

from matrix.gate.compare import REGRESSION, Comparison, GateFinding
from matrix.report import perf
from matrix.report.charts import load_bench


def _doc(release: str, graph: float, noise: float = 0.01) -> dict:
    return {
        "schema": 1,
        "kind": "triton-gpu-bench",
        "release": release,
        "column": "gpu:cuda:90",
        "machine": "h200",
        "records": [],
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


def test_flags_are_the_gates_findings(tmp_path: Path, monkeypatch) -> None:
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
    _write(tmp_path, [_doc("3.4.0", 0.9), _doc("3.9.0", 1.2)])
    view = perf.build_view(perf.read_release_benches(tmp_path))
    assert calls == [("3.4.0", "3.9.0")]
    cell = view.rows[0].cells["3.9.0"]
    assert cell.flag == "slower" and cell.meaning == "breaking" and "+33.3%" in cell.title
    assert view.rows[0].cells["3.4.0"].flag == ""


def test_a_file_missing_a_field_is_refused(tmp_path: Path) -> None:
    doc = _doc("3.9.0", 1.0)
    del doc["ratios"]
    _write(tmp_path, [doc])
    with pytest.raises(Exception, match="ratios"):
        perf.read_release_benches(tmp_path)


def test_no_files_no_view(tmp_path: Path) -> None:
    assert perf.build_view(perf.read_release_benches(tmp_path)) is None
