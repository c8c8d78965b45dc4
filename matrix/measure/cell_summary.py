"""What each cell of a matrix run came to (``CellOutcome``) and the summaries the run prints at
its end: a table of the cells, and one line per release that ran a team's suite."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from matrix.core import COMPILED, Release, passed_test, release_key
from matrix.measure.cells import Cell
from matrix.measure.kernel_compiles import coverage_text, run_coverage
from matrix.results import Run


@dataclass
class CellOutcome:
    cell: Cell
    install: str = ""
    counts: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    note: str = ""
    tests: str = ""  # what the team's suite did here (test_counts), "" without --tests
    kept: bool = False  # an existing complete raw file was reused, nothing measured
    failed: bool = False  # the cell could not be (re)measured or recorded: the run exits 1
    unrecorded: bool = False  # no raw file was written (a release that does not exist)


def status_counts(run: Run) -> dict[str, int]:
    counts: dict[str, int] = {}
    for r in run.results:
        counts[r.status] = counts.get(r.status, 0) + 1
    return counts


def test_counts(run: Run) -> str:
    """``"7/8 tests passed, 14/24 kernel compiles"`` for a cell that ran a suite, else ``""``."""
    tests = run.extra.get("tests")
    if not isinstance(tests, list):
        return ""
    passed = sum(isinstance(t, dict) and passed_test(t) for t in tests)
    text = f"{passed}/{len(tests)} tests passed"
    cov = run_coverage(run)
    if cov is not None:
        text += f", {coverage_text(cov)}"
    return text


def suite_summary(runs: Sequence[Run]) -> list[str]:
    """One line per release that ran the team's suite: tests passed per cell (numpy), the
    tests that did not pass, and the kernel compiles per target."""
    by_release: dict[Release, list[Run]] = {}
    for run in runs:
        if isinstance(run.extra.get("tests"), list):
            release = run.release
            if release is None:  # read_raw refuses a file without env.triton (raw.schema.json)
                raise ValueError(f"run {run.id!r}: env.triton missing")
            by_release.setdefault(release, []).append(run)
    lines = []
    for release in sorted(by_release):
        cells: list[str] = []
        failing: set[str] = set()
        targets: dict[str, list[int]] = {}
        for run in sorted(by_release[release], key=lambda r: release_key(r.env.get("numpy"))):
            tests = [t for t in run.extra["tests"] if isinstance(t, dict)]
            passed = [t for t in tests if passed_test(t)]
            cells.append(f"{len(passed)}/{len(tests)} (numpy {run.env.get('numpy')})")
            failing |= {f"{t.get('id')} {t.get('outcome')}" for t in tests if t not in passed}
            for c in run.extra.get("kernel_compiles") or ():
                if isinstance(c, dict):
                    n = targets.setdefault(str(c.get("target")), [0, 0])
                    n[0] += c.get("status") == COMPILED
                    n[1] += 1
        line = f"  {release}: tests passed {', '.join(cells)}"
        if targets:
            ok, total = sum(n[0] for n in targets.values()), sum(n[1] for n in targets.values())
            per = ", ".join(f"{t} {n[0]}/{n[1]}" for t, n in targets.items())
            line += f"; kernel compiles {ok}/{total} ({per})"
        else:
            line += "; no kernel compiles (no aot cell of this release ran the suite)"
        if failing:
            line += "; not passed: " + ", ".join(sorted(failing))
        lines.append(line)
    return lines


def summary_table(outcomes: Sequence[CellOutcome]) -> str:
    with_tests = any(o.tests for o in outcomes)
    rows = [("cell", "install", "seconds", "results") + (("tests",) if with_tests else ())]
    for o in outcomes:
        counts = ", ".join(f"{n} {s}" for s, n in sorted(o.counts.items())) or "-"
        row = (o.cell.id, o.install, f"{o.seconds:.0f}", counts + o.note)
        rows.append(row + ((o.tests or "-",) if with_tests else ()))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    w0, w1, w2 = widths
    if with_tests:  # the tests column before the (long) results column
        rows = [(r[0], r[1], r[2], r[4], r[3]) for r in rows]
        w3 = max(len(r[3]) for r in rows)
        lines = [f"{r[0]:<{w0}}  {r[1]:<{w1}}  {r[2]:>{w2}}  {r[3]:<{w3}}  {r[4]}" for r in rows]
    else:
        lines = [f"{r[0]:<{w0}}  {r[1]:<{w1}}  {r[2]:>{w2}}  {r[3]}" for r in rows]
    lines.insert(1, "-" * min(120, max(len(ln) for ln in lines)))
    return "\n".join(lines)
