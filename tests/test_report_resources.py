"""The performance page's resource rows (matrix/report/resource_rows.py): this project's kernels
per target across releases, flagged by the gate's own rule, compile seconds timed once shown as
"one sample, no noise band" and never as a change. A small synthetic raw set (the gate's
resource tests build the same runs)."""

from __future__ import annotations

from matrix.report import render, resource_rows
from tests.test_gate_resources import _run


def _runs():
    return [
        _run("3.8.0"),
        _run("3.9.0", registers=255, local_bytes=800, compile_seconds=[0.4]),
        _run("3.7.1", local_bytes=900),
    ]


def test_one_row_per_kernel_and_target_one_cell_per_release() -> None:
    view = resource_rows.build_view(_runs())
    assert view is not None and view.releases == ["3.7.1", "3.8.0", "3.9.0"]
    assert [(r.kernel, r.target) for r in view.rows] == [
        ("splitk (fused)", "cuda:90"),
        ("splitk (pointer)", "cuda:90"),
    ]
    fused = view.rows[0]
    assert [c.local_bytes for c in fused.cells.values()] == [900, 640, 800]


def test_a_cell_is_flagged_against_the_previous_release_by_the_gates_rule() -> None:
    fused = resource_rows.build_view(_runs()).rows[0]
    first, shrank, grew = (fused.cells[r] for r in ("3.7.1", "3.8.0", "3.9.0"))
    assert first.changes == () and first.meaning == "neutral"
    assert shrank.meaning == "good" and shrank.changed("spills") == "better"
    assert grew.meaning == "regression" and grew.previous == "3.8.0"
    assert [c.text for c in grew.worse] == ["local memory (spills) 640 -> 800 bytes per thread"]
    assert "may slow your kernel: local memory (spills) 640 -> 800" in grew.title


def test_compile_seconds_timed_once_are_one_sample_never_a_change() -> None:
    runs = [_run("3.8.0", compile_seconds=[0.3]), _run("3.9.0", compile_seconds=[9.0, 9.4])]
    fused = resource_rows.build_view(runs).rows[0]
    before, after = fused.cells["3.8.0"], fused.cells["3.9.0"]
    assert before.one_sample and before.seconds == "0.30 s" and after.changes == ()
    assert "one sample, no noise band" in before.title
    # With a band on both sides the same growth is a change.
    runs[0] = _run("3.8.0", compile_seconds=[1.0, 1.1])
    (ch,) = resource_rows.build_view(runs).rows[0].cells["3.9.0"].worse
    assert ch.measure == "compile_seconds" and ch.text == "compile 1.00-1.10 s -> 9.00-9.40 s"


def test_no_aot_rows_no_view() -> None:
    run = _run("3.9.0")
    run.results[0].data.clear()
    assert resource_rows.build_view([run]) is None


def test_the_page_section_is_small_and_names_what_moved() -> None:
    view = resource_rows.build_view(_runs())
    html = (
        render.environment()
        .get_template("_resources.html")
        .render(
            resources=view,
            resource_blocks=resource_rows.rc.BLOCKS[resource_rows.rc.PROJECT],
            MEANINGS_BY_NAME=render.TONES_BY_NAME,
        )
    )
    assert 'id="resource-table"' in html and "splitk (fused)" in html
    assert "may slow: local memory (spills) 640 -&gt; 800" in html
    assert "<b>800</b>" in html and 'title="one sample, no noise band">1×' in html
    assert len(html) < 20_000
