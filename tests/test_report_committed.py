"""No committed verdict can go stale: every verdict the committed report states (a page's
``data-verdict``, a feed file, the Markdown table) must be the gate's fresh decision on the
committed results, and no gate output (gate.md, gate.json) is committed at all.

A failure here means the gate's policy, the project's code or the results changed since the
pages were built: rebuild them (``python -m matrix.report``), do not edit the expectation."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import fastjsonschema
import pytest

from matrix.core import REPO_ROOT
from matrix.gate import verdict as gv
from matrix.report import upgrade, workers
from matrix.results import read_folder

REPORTS = REPO_ROOT / "reports"
RAW = REPORTS / "raw"
# The pages checked: the committed ones (REPORT_SITE: another build of the committed results).
SITE = Path(os.environ.get("REPORT_SITE", REPORTS))
DATA = REPO_ROOT / "matrix" / "data"
TAG = re.compile(r"<[a-z]+\b[^>]*\bdata-verdict=\"([A-Z]+)\"[^>]*>")
ATTR = re.compile(r'\bdata-(baseline|candidate)="([^"]+)"')
# "| 3.8.0 → 3.9.0 | ✖ UNSAFE |" (a Markdown table row of reports/README.md)
MD_ROW = re.compile(r"^\| (\d[\w.]*) → (\d[\w.]*)[^|]*\| \S+ (SAFE|UNSAFE|UNDECIDABLE) \|", re.M)


def committed_verdicts(root: Path) -> dict[tuple[str, str], set[tuple[str, str]]]:
    """(baseline, candidate) -> {(verdict, where it is stated)} over every page, the feed and
    the Markdown summary under ``root``. A page's verdict without its pair is an error: the
    test could not check it."""
    out: dict[tuple[str, str], set[tuple[str, str]]] = {}
    for page in sorted(root.rglob("*.html")):
        rel = str(page.relative_to(root))
        for m in TAG.finditer(page.read_text(encoding="utf-8")):
            attrs = dict(ATTR.findall(m.group(0)))
            assert set(attrs) == {"baseline", "candidate"}, f"{rel}: a verdict without its pair"
            out.setdefault((attrs["baseline"], attrs["candidate"]), set()).add((m.group(1), rel))
    for feed in sorted((root / "feed").glob("*.json")):
        doc = json.loads(feed.read_text(encoding="utf-8"))
        for p in doc["pairs"] if feed.name == "index.json" else [doc]:
            verdict = gv.VERDICTS[p["exit_code"]]
            assert p["verdict"] == verdict, f"{feed.name}: verdict and exit code disagree"
            out.setdefault((p["baseline"], p["candidate"]), set()).add((verdict, feed.name))
    readme = root / "README.md"
    if readme.is_file():
        for a, b, verdict in MD_ROW.findall(readme.read_text(encoding="utf-8")):
            out.setdefault((a, b), set()).add((verdict, "README.md"))
    return out


@pytest.fixture(scope="module")
def committed() -> tuple[list, upgrade.GateInputs]:
    """The committed runs and the gate's inputs on them, read once for the module (reading
    reports/raw and scanning kernels/ took seconds per test that decides a pair)."""
    runs, unreadable = read_folder(RAW)
    assert not unreadable, unreadable
    return runs, upgrade.gate_inputs(str(RAW), runs=runs)


def fresh_verdicts(
    pairs: list[tuple[str, str]], committed: tuple[list, upgrade.GateInputs]
) -> dict[tuple[str, str], str]:
    runs, g = committed
    calls = [lambda a=a, b=b: upgrade.decide_pair(runs, a, b, g).verdict for a, b in pairs]
    return dict(zip(pairs, workers.run_all(calls), strict=True))


def test_no_gate_output_is_committed() -> None:
    """A gate.md written once and committed outlives the results it was decided on."""
    assert not sorted(REPORTS.rglob("gate.md")) + sorted(REPORTS.rglob("gate.json"))


# Every ordered pair of the committed releases decided afresh (about 90 gate runs: minutes of the
# 2-core CI machine), so in ``tests_slow``, which CI runs after ``tests``.
@pytest.mark.slow
def test_every_committed_verdict_is_a_fresh_gate_decision(committed) -> None:
    stated = committed_verdicts(SITE)
    assert stated, "no verdict found in the committed pages: rebuild them (python -m matrix.report)"
    fresh = fresh_verdicts(sorted(stated), committed)
    stale = {
        pair: sorted(where for v, where in stated[pair] if v != fresh[pair]) for pair in stated
    }
    stale = {pair: w for pair, w in stale.items() if w}
    assert not stale, f"verdicts that differ from the gate's now (rebuild the pages): {stale}"


def test_a_changed_verdict_is_caught(tmp_path: Path, committed) -> None:
    """The check above can fail: one page whose verdict a later gate would not give."""
    (tmp_path / "p.html").write_text(
        '<div data-baseline="3.2.0" data-candidate="3.3.1" data-verdict="SAFE"></div>\n'
        '<td data-verdict="UNSAFE"></td>'
    )
    with pytest.raises(AssertionError, match="without its pair"):
        committed_verdicts(tmp_path)
    (tmp_path / "p.html").write_text(
        '<div data-baseline="3.2.0" data-candidate="3.3.1" data-verdict="SAFE"></div>'
    )
    (tmp_path / "README.md").write_text("| 3.2.0 → 3.3.1 | ✔ SAFE | 0 |\n")
    stated = committed_verdicts(tmp_path)
    assert stated == {("3.2.0", "3.3.1"): {("SAFE", "p.html"), ("SAFE", "README.md")}}
    # 3.2.0 -> 3.3.1: the project's loader switches from pointers to descriptors: UNSAFE
    assert fresh_verdicts([("3.2.0", "3.3.1")], committed) == {("3.2.0", "3.3.1"): "UNSAFE"}


@pytest.mark.parametrize("pair", [("3.8.0", "3.9.0"), ("3.9.0", "3.6.0")])
def test_the_pages_verdict_is_the_command_lines(pair: tuple[str, str], committed) -> None:
    """``decide_pair`` is ``python -m matrix.gate --scan kernels`` (the parser's
    own defaults), upgrade and downgrade."""
    a, b = pair
    runs, g = committed
    mine = upgrade.decide_pair(runs, a, b, g)
    argv = ["--baseline", a, "--candidate", b, "--results", str(RAW)]
    for path in upgrade.own_paths():
        argv += ["--scan", path]
    cli = gv.run_gate(gv.parser().parse_args(argv))
    cli.decide()
    assert (mine.verdict, mine.exit_code) == (cli.verdict, cli.exit_code)
    assert gv.render_markdown(mine).splitlines()[0] == gv.render_markdown(cli).splitlines()[0]


def test_committed_feed_follows_its_schema() -> None:
    files = sorted((SITE / "feed").glob("*.json"))
    assert files, "no committed feed: rebuild the pages (python -m matrix.report)"
    pair = fastjsonschema.compile(json.loads((DATA / "pair_feed.schema.json").read_text()))
    index = fastjsonschema.compile(json.loads((DATA / "pair_feed_index.schema.json").read_text()))
    for f in files:
        doc = json.loads(f.read_text(encoding="utf-8"))
        (index if f.name == "index.json" else pair)(doc)
