"""The report's page model (matrix.report.model) on the synthetic fixture runs and small cases."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from packaging.version import Version

from matrix.catalog import PROBES
from matrix.report import model
from matrix.results import Result, Run, read_runs

FIXTURES = Path(__file__).parent / "fixtures" / "raw"


@pytest.fixture(scope="module")
def runs() -> list[Run]:
    return read_runs(FIXTURES)


@pytest.fixture(scope="module")
def m(runs: list[Run]) -> model.Matrix:
    return model.build(runs)


def cell(m: model.Matrix, probe: str, backend: str, target: str | None, release: str, numpy=None):
    row = next(r for r in m.rows if r.key == model.RowKey(probe, backend, target))
    return next(c for c in row.cells if c.release == release and c.numpy == numpy)


def test_releases_are_sorted_by_version_not_text(runs: list[Run]) -> None:
    m = model.build(runs)
    expected = sorted({r.env["triton"] for r in runs}, key=Version)
    assert [r.version for r in m.releases] == expected
    odd = [
        Run(
            f"r{v}",
            {"triton": v, "numpy": "2.4.6"},
            results=[Result("splitk", "aot", "cuda:90", "pass")],
        )
        for v in ("3.10.0", "3.9.0", "3.9.0rc1", "main")
    ]
    assert [r.version for r in model.build(odd).releases] == ["3.9.0rc1", "3.9.0", "3.10.0", "main"]


def test_numpy_axis_is_every_numpy_of_non_gpu_runs(runs: list[Run], m: model.Matrix) -> None:
    expected = sorted({r.env["numpy"] for r in runs if not r.env.get("gpu")}, key=Version)
    assert all(rel.numpys == expected for rel in m.releases)
    gpu_numpys = {r.env["numpy"] for r in runs if r.env.get("gpu")}
    assert gpu_numpys and not gpu_numpys & set(expected)


def test_every_result_lands_in_exactly_one_cell(runs: list[Run], m: model.Matrix) -> None:
    shown = {id(c.result) for row in m.rows for c in row.cells if c.result is not None}
    results = [res for run in runs for res in run.results]
    # Each (release, numpy, row) has at most one result in these fixtures, so none is hidden.
    assert len(shown) == len(results)


def test_rows_follow_catalog_order_and_unknown_probes_come_last(m: model.Matrix) -> None:
    order = [p.name for p in PROBES]
    probes = list(dict.fromkeys(r.key.probe for r in m.rows))
    known = [p for p in probes if p in order]
    assert known == sorted(known, key=order.index)
    assert probes[-1] == "dot_scaled_fp8"
    unknown = [r for r in m.rows if r.key.probe == "dot_scaled_fp8"]
    assert unknown and not any(r.known for r in unknown)
    assert "dot_scaled_fp8" not in [p.name for p in PROBES]


def test_interpreter_rows_split_by_numpy_and_others_span(m: model.Matrix) -> None:
    for row in m.rows:
        for rel in m.releases:
            cells = [c for c in row.cells if c.release == rel.version]
            if row.key.backend == "interpret":
                assert [c.numpy for c in cells] == rel.numpys
                assert all(c.span == 1 for c in cells)
            else:
                assert len(cells) == 1 and cells[0].span == len(rel.numpys)


def test_no_run_for_a_numpy_is_a_missing_cell(m: model.Matrix) -> None:
    c = cell(m, "splitk", "interpret", None, "3.6.0", "2.3.5")
    assert (c.status, c.reason, c.tone) == ("missing", "no-run", "unmeasured")
    assert c.result is None and "no run" in c.note


def test_install_failure_is_not_installed_with_its_detail(m: model.Matrix) -> None:
    raw = json.loads((FIXTURES / "triton-3.3.1-numpy-2.3.5.json").read_text())["runs"][0]
    assert raw["install"]["status"] == "failed"
    c = cell(m, "block_ptr", "interpret", None, "3.3.1", "2.3.5")
    assert c.status == model.NOT_INSTALLED and c.tone == "unmeasured"
    assert raw["install"]["detail"] in c.note
    assert m.release("3.3.1").install_status == "failed (1 of 2 runs)"


def test_interrupted_run_says_so(m: model.Matrix) -> None:
    c = cell(m, "block_ptr", "interpret", None, "3.9.0", "2.3.5")
    assert c.status == "missing" and c.reason == "no-result"
    assert "interrupted" in c.note


def test_crash_and_timeout_are_failures(m: model.Matrix) -> None:
    crashed = cell(m, "descriptor_misaligned", "interpret", None, "3.7.1", "1.26.4")
    assert (crashed.status, crashed.tone) == ("crashed", "breaking")
    assert "signal 11" in crashed.result.detail
    timeout = cell(m, "dot_acc_out_dtype", "aot", "hip:gfx942", "3.9.0")
    assert (timeout.status, timeout.tone) == ("timeout", "breaking")


def test_no_gpu_run_means_missing_gpu_cells(m: model.Matrix) -> None:
    c = cell(m, "splitk", "gpu", "cuda:90", "3.7.1")
    assert c.status == "missing" and c.reason == "no-run"
    assert cell(m, "splitk", "gpu", "cuda:90", "3.9.0").status == "pass"


# The tone of each status, by probe (a probe the catalog does not know gets the common ones).
TONES = {
    "splitk": {"pass": "good", "fail": "breaking", "missing": "unmeasured"},
    "block_ptr": {"supported": "good", "deprecated": "changed", "removed": "breaking",
                  "error": "unmeasured", "skipped": "unmeasured"},
    "not_a_probe": {"pass": "changed", "crashed": "breaking"},
    "descriptor_misaligned_stride": {"accepted": "wrong"},
}  # fmt: skip


@pytest.mark.parametrize(
    ("probe", "status", "expected"),
    [(probe, status, tone) for probe, tones in TONES.items() for status, tone in tones.items()],
)
def test_tone(probe: str, status: str, expected: str) -> None:
    from matrix.catalog import PROBES_BY_NAME

    assert model.tone(PROBES_BY_NAME.get(probe), status) == expected


def test_status_outside_the_catalog_is_flagged() -> None:
    run = Run(
        "x",
        {"triton": "3.9.0", "numpy": "2.4.6"},
        results=[Result("block_ptr", "interpret", None, "sideways")],
    )
    c = model.build([run]).rows[0].cells[0]
    assert c.unknown_status and c.tone == "changed" and c.status == "sideways"


def test_block_ptr_progression_is_listed_as_changes(m: model.Matrix) -> None:
    got = [
        (c.before_release, c.after_release, c.before, c.after)
        for c in m.changes
        if c.key == model.RowKey("block_ptr", "interpret", None) and c.numpy == "1.26.4"
    ]
    assert got == [
        ("3.6.0", "3.7.1", "supported", "deprecated"),
        ("3.7.1", "3.9.0", "deprecated", "removed"),
    ]
    change = next(c for c in m.changes if c.key.probe == "block_ptr" and c.after == "deprecated")
    assert change.text.startswith(
        "3.6.0 -> 3.7.1: block_ptr supported -> deprecated (UserWarning: "
    )


def test_changes_compare_interpreter_cells_at_the_same_numpy() -> None:
    def run(rel: str, np_: str, status: str) -> Run:
        return Run(
            f"{rel}-{np_}",
            {"triton": rel, "numpy": np_},
            results=[Result("dot_acc_out_dtype", "interpret", None, status)],
        )

    # Each numpy keeps its own status across releases: comparing across numpys would invent changes.
    same = [
        run("3.5.0", "1.26.4", "fp16"),
        run("3.5.0", "2.4.6", "fp32"),
        run("3.6.0", "1.26.4", "fp16"),
        run("3.6.0", "2.4.6", "fp32"),
    ]
    assert model.build(same).changes == []
    # No numpy in common: the newest of each is compared, and the change says so.
    disjoint = [run("3.5.0", "1.26.4", "fp16"), run("3.6.0", "2.4.6", "fp32")]
    (c,) = model.build(disjoint).changes
    assert (c.before_numpy, c.numpy, c.before, c.after) == ("1.26.4", "2.4.6", "fp16", "fp32")
    assert "1.26.4 -> 2.4.6" in c.where


def test_changes_skip_releases_without_an_observation() -> None:
    def run(rel: str, status: str | None) -> Run:
        res = [Result("block_ptr", "aot", "cuda:90", status)] if status else []
        install = {"status": "ok" if status else "no-wheel", "seconds": 1.0, "detail": "no wheel"}
        return Run(rel, {"triton": rel, "numpy": "2.4.6"}, install=install, results=res)

    m = model.build([run("3.6.0", "supported"), run("3.7.1", None), run("3.8.0", "deprecated")])
    (c,) = m.changes
    assert (c.before_release, c.after_release, c.skipped_releases) == ("3.6.0", "3.8.0", ("3.7.1",))
    assert m.kernels[1].verdict == model.NOT_INSTALLED


def test_kernel_verdicts(m: model.Matrix) -> None:
    verdicts = {k.release: k for k in m.kernels}
    assert verdicts["3.9.0"].verdict == "fail"
    assert verdicts["3.9.0"].failures == ("splitk [interpret, numpy 1.26.4]: fail",)
    assert {v for r, k in verdicts.items() if r != "3.9.0" for v in [k.verdict]} == {"pass"}
    # 3.3.1's numpy 2.3.5 cell did not install: counted as kernel cells without a result.
    assert verdicts["3.3.1"].other == 2


def test_highlights_group_rows_newest_first(m: model.Matrix) -> None:
    groups = m.highlights
    assert [Version(g.after_release) for g in groups] == sorted(
        (Version(g.after_release) for g in groups), reverse=True
    )
    bp = next(g for g in groups if g.probe == "block_ptr" and g.after == "removed")
    assert bp.where_summary.startswith("interpret (numpy 1.26.4, 2.4.6); aot (cuda:80, cuda:90")
    # A kernel that stops passing is a highlight even though kernel probes are not behavioural.
    assert any(g.probe == "splitk" and g.after == "fail" for g in groups)


def test_empty_input_builds_an_empty_matrix() -> None:
    m = model.build([])
    assert (m.releases, m.rows, m.changes, m.kernels) == ([], [], [], [])
    assert m.unmeasured_probes == [p.name for p in PROBES]


def test_long_evidence_is_clipped_and_says_so() -> None:
    text = "x" * (model.EVIDENCE_TEXT_LIMIT + 10)
    out = model.clip(text)
    assert out.startswith("x" * model.EVIDENCE_TEXT_LIMIT) and f"{len(text)} characters" in out
