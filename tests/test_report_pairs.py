"""Every pair's verdict (matrix/report/all_pairs.py: decide_all), the freshness footer, known
issues, and the API-by-name data: the report's new pages, checked against the gate and the
recorded results rather than against themselves."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import fastjsonschema
import pytest

from matrix.analyze.census import censuses_from_runs
from matrix.core import Release
from matrix.gate import verdict as gv
from matrix.gate.markdown import _group_key
from matrix.report import all_pairs, api_pages, build, freshness, known, model, upgrade
from matrix.report import without_fingerprint_groups as without_fp
from matrix.results import Result, Run, read_folder
from matrix.scan import load_rules

FIXTURES = Path(__file__).parent / "fixtures"
REPORTS = Path(__file__).resolve().parent.parent / "reports"
DATA = Path(__file__).resolve().parent.parent / "matrix" / "data"


@pytest.fixture(scope="module")
def fixture_runs():
    runs, _ = read_folder(FIXTURES / "raw")
    return runs


@pytest.fixture(scope="module")
def fixture_inputs(fixture_runs):
    """The gate's inputs on the fixture results (a scan and profile of kernels/: seconds), once
    for the module."""
    return upgrade.gate_inputs(str(FIXTURES / "raw"), runs=fixture_runs)


@pytest.fixture(scope="module")
def fixture_pairs(fixture_runs, fixture_inputs):
    runs, inputs = fixture_runs, fixture_inputs
    matrix = model.build([without_fp(r) for r in runs])
    decided = all_pairs.decide_all(matrix, runs, results=str(FIXTURES / "raw"), inputs=inputs)
    return matrix, runs, decided.pages, decided.every


# Twenty gate runs from the command line, each reading and scanning everything again (the
# cross-check is that they share nothing with the pages' decisions): in ``tests_slow``.
@pytest.mark.slow
def test_every_ordered_pair_has_the_gates_verdict(fixture_pairs) -> None:
    matrix, _, _, every = fixture_pairs
    versions = [r.version for r in matrix.releases if r.installed_runs]
    assert len(every.records) == len(versions) * (len(versions) - 1) == 20  # downgrades too
    assert {r["direction"] for r in every.records} == {"upgrade", "downgrade"}
    for record in every.records:
        # The gate's own parser, so every option has its real default: this project's own
        # code through --scan, as a team's.
        argv = ["--baseline", record["baseline"], "--candidate", record["candidate"],
                "--results", str(FIXTURES / "raw")]  # fmt: skip
        for path in upgrade.own_paths():
            argv += ["--scan", path]
        report = gv.run_gate(gv.parser().parse_args(argv))
        report.decide()
        assert (record["verdict"], record["exit_code"]) == (report.verdict, report.exit_code)
        markdown = gv.render_markdown(report)
        headline = markdown.splitlines()[0].replace("**", "")
        assert headline.endswith(record["own_code"]["headline"])
        unsafe = sum(len({_group_key(f) for f in report.comparison.findings if f.kind == k})
                     for k in upgrade.gc.UNSAFE_KINDS)  # fmt: skip
        assert len(record["own_code"]["reasons"]) == unsafe


def test_feed_records_follow_the_schema(fixture_pairs) -> None:
    *_, every = fixture_pairs
    schema = json.loads((DATA / "pair_feed.schema.json").read_text())
    check = fastjsonschema.compile(schema)
    for record in every.records:
        check(json.loads(json.dumps(record)))
    index = all_pairs.feed_index(every.records)
    fastjsonschema.compile(json.loads((DATA / "pair_feed_index.schema.json").read_text()))(index)
    bad = json.loads(json.dumps(every.records[0]))
    bad["verdict"] = "MAYBE"
    with pytest.raises(fastjsonschema.JsonSchemaException):
        check(bad)


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
    assert uses, "the project's own code uses tl.minimum, casts, block pointers: uses expected"
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


def test_upgrade_page_names_a_crash_apart_from_gaps(fixture_pairs, fixture_inputs) -> None:
    *_, pages, _ = fixture_pairs
    page = dataclasses.replace(pages[0])
    gate = page.gate
    gate.comparison.undecidable.append("fp.dot[x] on aot:cuda:90: `int32` -> `crashed`")
    matrix = fixture_pairs[0]
    again = upgrade.upgrade_page(matrix, gate, fixture_inputs, False, None)
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


@pytest.fixture(scope="module")
def committed_runs():
    runs, _ = read_folder(REPORTS / "raw")
    return runs


def test_triton_changes_name_removals_the_project_acknowledges(committed_runs) -> None:
    """3.8.0 -> 3.9.0: block pointers and boundary_check= are removed. This project
    acknowledges them for its kernels; Triton's changes for any code name them breaking."""
    g = upgrade.gate_inputs(str(REPORTS / "raw"), runs=committed_runs)
    changes = upgrade.triton_changes(committed_runs, "3.8.0", "3.9.0", g)
    items = upgrade.items_of(changes, g.fixes, shown_uses=False)
    breaking = {i.probe: i for i in items if i.kind == upgrade.gc.BREAKING}
    assert {"block_ptr", "boundary_check"} <= set(breaking)
    assert breaking["block_ptr"].after == "removed" and not breaking["block_ptr"].interpreter_only
    assert not [i for i in items if i.acknowledged]
    # A use refused on both sides is not a change between them.
    assert not [i for i in items if i.kind == upgrade.gc.BREAKING and i.before == i.after]
    # The interpreter-only label is the columns', nothing else.
    interp = [i for i in items if i.interpreter_only]
    assert interp and all(i.wheres == ["interpret"] for i in interp)
    # The project's own verdict is about kernels/, which builds no block pointer: the removal
    # does not block it (compat/trials.py tries them on purpose, its caller catching the raise)
    own = upgrade.items_of(upgrade.decide_pair(committed_runs, "3.8.0", "3.9.0", g), g.fixes)
    assert not [i for i in own if i.probe == "block_ptr"], own


def test_api_names_that_raise_are_gone_there(committed_runs) -> None:
    censuses = censuses_from_runs([r for r in committed_runs if r.env.get("gpu") is None])
    statuses = api_pages.probe_statuses(committed_runs)
    names = {n.name: n for n in api_pages.build_names(censuses, load_rules(), statuses)}
    mbp = names["triton.language.make_block_ptr"]
    assert "3.9.0" in mbp.present and mbp.removed_in is None  # the census: it exists
    assert mbp.raises == [("3.9.0", "block_ptr: removed")] and mbp.stops_working == "3.9.0"
    assert "3.9.0" not in mbp.works
    # TRI002 needs boundary_check=: tl.load itself works on 3.9.0.
    assert names["triton.language.load"].raises == []
    # Without probe statuses nothing raises (the census alone cannot tell).
    bare = {n.name: n for n in api_pages.build_names(censuses, load_rules())}
    assert bare["triton.language.make_block_ptr"].stops_working is None


def test_known_issues_name_the_runs_that_stored_nothing() -> None:
    def run(release: str, numpy: str, cells: dict[str, str]) -> Run:
        r = _fp_run(release, cells)
        return dataclasses.replace(r, id=f"{r.id}-{numpy}", env={**r.env, "numpy": numpy})

    runs = [
        run("3.0.0", "1.26.4", {"a": "wrong", "b": "wrong"}),
        run("3.0.0", "2.3.5", {"a": "unwritten", "b": "unwritten"}),
        run("3.1.0", "2.3.5", {"a": "unwritten", "b": "unwritten"}),
        run("3.8.0", "2.3.5", {"a": "wrong", "b": "right"}),
        run("3.9.0", "2.3.5", {"a": "wrong", "b": "wrong"}),
    ]
    (issue,) = known.known_issues(runs)
    assert (issue.status, issue.cases) == ("wrong", ["a"])
    assert issue.wrote_none == ["3.0.0 (numpy 2.3.5)", "3.1.0 (numpy 2.3.5)"]
    # One release alone that wrote is not "every release".
    assert known.known_issues(runs[1:3] + runs[4:]) == []
