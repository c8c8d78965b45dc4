"""Every pair's verdict (matrix/report/upgrade.py: decide_all), the freshness footer, known
issues, and the API-by-name data: the report's new pages, checked against the gate and the
recorded results rather than against themselves."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from matrix.analyze.census import censuses_from_runs
from matrix.core import Release
from matrix.gate import verdict as gv
from matrix.measure.results import Result, Run, read_folder
from matrix.report import api_pages, build, freshness, known, model, upgrade
from matrix.report import without_fingerprint_groups as without_fp
from matrix.scan import load_rules

FIXTURES = Path(__file__).parent / "fixtures"
REPORTS = Path(__file__).resolve().parent.parent / "reports"


@pytest.fixture(scope="module")
def fixture_pairs():
    runs, _ = read_folder(FIXTURES / "raw")
    matrix = model.build([without_fp(r) for r in runs])
    inputs = upgrade.gate_inputs(str(FIXTURES / "raw"))
    decided = upgrade.decide_all(matrix, runs, results=str(FIXTURES / "raw"), inputs=inputs)
    return matrix, runs, decided.pages, decided.every


def test_every_ordered_pair_has_the_gates_verdict(fixture_pairs) -> None:
    matrix, _, _, every = fixture_pairs
    versions = [r.version for r in matrix.releases if r.installed_runs]
    assert len(every.records) == len(versions) * (len(versions) - 1) // 2 == 10
    for record in every.records:
        # The gate's own parser, so every option has its real default.
        args = gv.parser().parse_args(
            ["--baseline", record["baseline"], "--candidate", record["candidate"],
             "--results", str(FIXTURES / "raw")]
        )  # fmt: skip
        report = gv.run_gate(args)
        report.decide()
        assert (record["verdict"], record["exit"]) == (report.verdict, report.exit_code), record
        markdown = gv.render_markdown(report)
        assert record["headline"] == markdown.splitlines()[0].replace("**", "")
        titles = re.findall(r"^### (.+) \((\d+)\)$", markdown, re.M)
        gate_entries = sum(int(n) for t, n in titles if t != "Undecidable")
        assert len(record["entries"]) == gate_entries


def test_compact_pair_data_reads_back_exactly(fixture_pairs) -> None:
    *_, every = fixture_pairs
    data = json.loads(json.dumps(upgrade.compact(every.records)))
    assert upgrade.expand(data) == json.loads(json.dumps(every.records))
    # Shared strings are stored once.
    assert len(data["texts"]) == len(set(data["texts"]))


def test_entries_follow_the_gates_grouping(fixture_pairs) -> None:
    *_, pages, _ = fixture_pairs
    for page in pages:
        groups = gv.finding_groups(page.gate)
        assert [(k, gv.split_cell(m[0].probe)[0]) for k, _, m in groups] == [
            (i.kind, i.probe) for i in page.items
        ]
        unsafe = [i for i in page.items if i.kind in upgrade.gc.UNSAFE_KINDS]
        assert page.top_reasons() == unsafe[: upgrade.TOP_REASONS]


def test_scanned_uses_never_carry_an_absolute_path(fixture_pairs) -> None:
    *_, pages, _ = fixture_pairs
    uses = [u for p in pages for i in p.items for u in i.uses]
    assert uses, "the project's kernels use block pointers and tl.dot: some use is expected"
    assert not [u for u in uses if u.startswith("/")]


def test_footer_freshness_is_git_input_not_the_clock(tmp_path: Path) -> None:
    f = freshness.of_raw_folder(FIXTURES / "raw")
    assert re.fullmatch(r"[0-9a-f]{7,}", f.commit) and re.fullmatch(r"\d{4}-\d\d-\d\d", f.date)
    assert set(f.measured) == {p.name for p in (FIXTURES / "raw").glob("*.json")}
    outside = freshness.of_raw_folder(tmp_path)
    assert (outside.commit, outside.measured_range) == (freshness.UNKNOWN, freshness.UNKNOWN)
    given = freshness.of_raw_folder(FIXTURES / "raw", commit="abc1234", date="2026-01-02")
    assert (given.commit, given.date) == ("abc1234", "2026-01-02")


def test_a_rebuild_gives_the_same_bytes_and_no_absolute_path(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    for out in (a, b):
        build(FIXTURES / "raw", out, bench_dir=FIXTURES / "bench")
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    for rel in files:
        assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel
    roots = [str(tmp_path), str(Path(__file__).resolve().parent.parent), str(Path.home())]
    for rel in files:
        if rel.suffix not in (".html", ".md"):
            continue
        text = (a / rel).read_text()
        for root in roots:
            assert root not in text, f"{rel} names {root}"
        if rel.suffix == ".html":
            assert 'id="built-from"' in text and "commit <code>" in text, rel


def _fp_run(release: str, cells: dict[str, str], backend: str = "interpret") -> Run:
    group = Result("fp.values.add", backend, None, "observed", "", 0.0, {"cells": cells})
    return Run(
        id=f"triton-{release}-x", env={"triton": release}, install={"status": "ok"},
        results=[group],
    )  # fmt: skip


def test_known_issues_are_bad_on_every_release() -> None:
    runs = [
        _fp_run("3.8.0", {"a": "wrong", "b": "wrong", "c": "crashed", "d": "rejected"}),
        _fp_run("3.9.0", {"a": "wrong", "b": "right", "c": "crashed", "d": "rejected"}),
    ]
    found = {(i.status, tuple(i.cases)) for i in known.known_issues(runs)}
    # b was right on 3.9.0: not a known issue; d refused everywhere: listed apart.
    assert found == {("wrong", ("a",)), ("crashed", ("c",)), ("rejected", ("d",))}
    issues = known.known_issues(runs)
    assert [i.refused for i in issues] == [False, False, True]
    # A release that did not observe the cell: not "every release".
    runs.append(_fp_run("3.7.1", {"b": "wrong"}))
    assert known.known_issues(runs) == []


def test_fingerprint_crash_is_shown_as_crashed_not_unobserved() -> None:
    from matrix.analyze.fingerprint import CellChange
    from matrix.report.fp_pages import shown_kind
    from matrix.report.render import FP_KIND_MEANINGS

    died = CellChange("dot", "f16,int32", "aot", "cuda:90", "int32", "crashed", "unobserved")
    assert shown_kind(died) == "crashed" and FP_KIND_MEANINGS["crashed"] == "breaking"
    gap = CellChange("dot", "x", "aot", "cuda:90", "int32", None, "unobserved")
    assert shown_kind(gap) == "unobserved" and FP_KIND_MEANINGS["unobserved"] == "unmeasured"
    wrong = CellChange("values.add", "x", "interpret", None, "right", "wrong", "regression")
    assert FP_KIND_MEANINGS[shown_kind(wrong)] == "regression"


def test_upgrade_page_names_a_crash_apart_from_gaps(fixture_pairs) -> None:
    *_, pages, _ = fixture_pairs
    page = dataclasses.replace(pages[0])
    gate = page.gate
    gate.comparison.undecidable.append("fp.dot[x] on aot:cuda:90: `int32` -> `crashed`")
    matrix = fixture_pairs[0]
    again = upgrade.upgrade_page(matrix, gate, upgrade.gate_inputs("x"), False, None)
    assert again.crashed == ["fp.dot[x] on aot:cuda:90: `int32` -> `crashed`"]
    assert not [n for n in again.not_measured if "crashed" in n]


def test_api_names_from_the_committed_census() -> None:
    runs, _ = read_folder(REPORTS / "raw")
    censuses = censuses_from_runs([r for r in runs if r.env.get("gpu") is None])
    names = {n.name: n for n in api_pages.build_names(censuses, load_rules())}
    assert len(names) > 1000
    releases = sorted(censuses, key=Release.parse)
    advance = names["triton.language.advance"]
    # Removed in the first release whose census lacks it; TRI001 (block pointers) finds it.
    first_missing = next(
        r for r in releases if "triton.language.advance" not in censuses[r].names()
    )
    assert advance.removed_in == first_missing
    assert "TRI001" in [r for r, _ in advance.rules]
    assert "TRI100" in [r for r, _ in advance.rules]  # census-missing
    dot = names["triton.language.dot"]
    assert dot.changes, "tl.dot's out_dtype default changed in the recorded releases"
    for release, old, new in dot.changes:
        assert old != new and release in releases
    assert api_pages.ranges(["a", "b", "c", "d"], ["a", "b", "d"]) == "a–b, d"
