"""The fingerprint's cells: read them out of the results, compare two releases, classify changes.

The ``fp`` probe (matrix/probes/fp/) writes one result per *group* (``fp.binary.add``,
``fp.cast.to``, ``fp.values.int_div``, ``fp.rules``, ``fp.runtime``): its status says whether the
battery ran (``observed``) or why not (``error``/``skipped``/...), and ``data.cells`` maps each
case of the group to its own status (``int16``, ``rejected``, ``absent``, ``right``, ``wrong``,
``accepted``, a default's repr). One cell is one fingerprint row; grouping them keeps a raw file
small (thousands of cells per backend) and gives the report its unit: one line per group with
its changes, one page per group.

    >>> r = Result("fp.binary.add", "interpret", None, "observed",
    ...            data={"cells": {"int8,int16": "int16"}})
    >>> [c.probe for c in expand([r])]
    ['fp.binary.add[int8,int16]']

Comparing two releases gives one ``CellChange`` per cell whose status differs:
``relaxation`` (refused or absent before, anything observed after: code that ran before cannot
be using it), ``regression`` (a value became ``wrong`` against its reference), ``fixed`` (it
stopped being wrong), ``behaviour`` (any other change: a dtype, a refusal, a default),
``unobserved`` (either side did not observe it: the group did not run, or the cell is only on
one side).
Imports only the results contract: the report and the gate both use it, neither imports Triton.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

from matrix import cli
from matrix.catalog import COMMON_MEANINGS
from matrix.core import ERROR, NO_OBSERVATION_STATUSES, Column, release_key
from matrix.exitcodes import ExitCode
from matrix.results import Result

PREFIX = "fp."
OBSERVED = "observed"
WRONG = "wrong"
# What an observe cell records where the launch stored nothing (probes.fp.fp_checks):
# as bad as a wrong value, so that leaving it is a fix and reaching it a regression.
UNWRITTEN = "unwritten"
BAD_VALUES = frozenset({WRONG, UNWRITTEN})
RIGHT_STATUSES = frozenset({"right", "accepted"})

# A fingerprint run (one backend of one cell) with fewer cells lost part of its battery.
MIN_CELLS = 1000

REGRESSION = "regression"
FIXED = "fixed"
BEHAVIOUR = "behaviour"
UNOBSERVED = "unobserved"
RELAXATION = "relaxation"

# What a release answers where it refuses (or lacks) what a cell or a probe asks: the battery's
# ``rejected``/``absent`` (matrix/probes/fp/battery.py), a probe's ``rejected-runtime``,
# ``absent``. Code that runs on that release cannot be doing it.
REFUSALS = ("rejected", "rejected-*", "absent")


def is_group(result: Result) -> bool:
    return result.probe.startswith(PREFIX)


def group_name(probe: str) -> str:
    """``fp.binary.add`` (a group row) or ``fp.binary.add[int8,int16]`` (a cell): ``binary.add``."""
    return probe[len(PREFIX) :].split("[", 1)[0]


def cell_probe(group_probe: str, case: str) -> str:
    return f"{group_probe}[{case}]"


def cell_parts(probe: str) -> tuple[str, str] | None:
    """``cell_probe`` read back: (group row, case) of a cell's name, None for any other name.

    >>> cell_parts("fp.values.maximum[bfloat16]"), cell_parts("fp.values.maximum")
    (('fp.values.maximum', 'bfloat16'), None)
    """
    group, bracket, case = probe.partition("[")
    return (group, case[:-1]) if bracket and case.endswith("]") else None


VALUES = "fp.values."  # the values groups' rows: ``fp.values.maximum``


def value_case(cell: str) -> str:
    """The values case (its label) a cell of a values group belongs to: an interpreter or GPU
    row keys one cell per input, ``bfloat16(-1,2)`` (``probes.fp.fp_checks``), a reduction and
    an ``aot`` row (the TTIR ops) one cell per case, ``bfloat16`` / ``argmax.bfloat16``; a
    label never holds ``(``.

    >>> value_case("bfloat16(-1,2)"), value_case("argmax.bfloat16"), value_case("f16->bf16(1.5)")
    ('bfloat16', 'argmax.bfloat16', 'f16->bf16')
    """
    return cell.split("(", 1)[0]


def evidence(result: Result, case: str) -> dict[str, Any]:
    """What the group row recorded about one case beyond its status: why it was refused
    (``details``), reference and got value (``values``), the warnings it raised."""
    out: dict[str, Any] = {}
    reasons = result.data.get("reasons") or []
    for part in ("details", "values", "warnings"):
        value = (result.data.get(part) or {}).get(case)
        if isinstance(value, int) and 0 <= value < len(reasons):
            value = reasons[value]  # texts are kept once per group (see the fp probe)
        if value not in (None, ""):
            out[part] = value
    return out


def expand(results: Iterable[Result]) -> Iterator[Result]:
    """Every fingerprint cell of ``results`` as a result of its own (probe ``fp.<group>[case]``);
    a group that did not run gives no cells (its own status says why). Other results pass
    through unchanged."""
    for r in results:
        if not is_group(r):
            yield r
            continue
        if r.status != OBSERVED:
            yield r
            continue
        for case, status in (r.data.get("cells") or {}).items():
            yield Result(
                cell_probe(r.probe, case), r.backend, r.target, str(status), r.detail, 0.0,
                evidence(r, case),
            )  # fmt: skip


def count_cells(results: Iterable[Result]) -> int:
    return sum(len(r.data.get("cells") or {}) for r in results if is_group(r))


def problems(results: Iterable[Result]) -> list[str]:
    """What makes a run's fingerprint untrustworthy: cells our harness broke on (``error``)
    and backends whose battery came back with fewer than MIN_CELLS cells."""
    results = list(results)
    found = []
    for backend, target in sorted(
        {(r.backend, r.target or "") for r in results if r.probe == "fp"}
    ):
        mine = [r for r in results if r.backend == backend and (r.target or "") == target]
        where = str(Column(backend, target or None))
        broken = [c.probe for c in expand(mine) if is_group(c) and c.status == ERROR]
        if broken:
            found.append(f"fp [{where}]: {len(broken)} cells error (harness), e.g. {broken[:3]}")
        n = count_cells(mine)
        if n < MIN_CELLS:
            found.append(f"fp [{where}]: {n} cells, fewer than {MIN_CELLS}")
    return found


# What a cell's status means (the names of matrix.catalog.MEANINGS). The statuses every probe
# may end with keep their common meaning (crashed: breaking; error, skipped: not measured);
# any other cell status (a dtype, ``rejected``, a default's repr, TTIR ops) is a neutral fact.
CELL_MEANINGS = {
    WRONG: "wrong",
    UNWRITTEN: "wrong",
    **{s: "good" for s in RIGHT_STATUSES},
    **COMMON_MEANINGS,
}
# Worst first: a group's colour is the meaning of its worst cell.
SEVERITY = ("breaking", "wrong", "unmeasured", "changed", "neutral", "good")


def cell_meaning(status: str) -> str:
    return CELL_MEANINGS.get(status, "neutral")


@dataclass(frozen=True)
class GroupSummary:
    """What a group row's cells add up to: ``text`` ("observed, 3 wrong, 1 crashed"),
    ``meaning`` (its worst cell's, for the colour) and the count of each problem status."""

    text: str
    meaning: str
    counts: dict[str, int]


def summarise(result: Result) -> GroupSummary:
    """The summary of one ``fp.<group>`` row. Its status stays ``observed`` (machine-readable:
    the battery ran); the cells that are not good or neutral are counted in the text, worst
    first, and the worst decides the meaning. A row that did not run keeps its own status.

    >>> r = Result("fp.values.x", "gpu", "cuda:90", "observed",
    ...            data={"cells": {"a": "right", "b": "wrong", "c": "crashed", "d": "wrong"}})
    >>> s = summarise(r); (s.text, s.meaning)
    ('observed, 1 crashed, 2 wrong', 'breaking')
    """
    cells = [str(v) for v in (result.data.get("cells") or {}).values()]
    if result.status != OBSERVED:
        meaning = cell_meaning(result.status)
        return GroupSummary(f"{result.status}: {result.detail}"[:200], meaning, {})
    counts: dict[str, int] = {}
    for status in cells:
        if cell_meaning(status) not in ("good", "neutral"):
            counts[status] = counts.get(status, 0) + 1
    order = sorted(counts, key=lambda st: (SEVERITY.index(cell_meaning(st)), st))
    text = ", ".join([OBSERVED, *(f"{counts[st]} {st}" for st in order)])
    meanings = {cell_meaning(st) for st in cells} or {"neutral"}
    worst = min(meanings, key=SEVERITY.index)
    return GroupSummary(text, worst, {st: counts[st] for st in order})


def with_summaries(results: Iterable[Result]) -> list[Result]:
    """``results`` with ``data.summary`` (text) and ``data.worst`` (meaning) on every fp group
    row: what the pages and the gate show for a group instead of its bare status."""
    out = []
    for r in results:
        if is_group(r):
            s = summarise(r)
            r = Result(r.probe, r.backend, r.target, r.status, r.detail, r.seconds,
                       {**r.data, "summary": s.text, "worst": s.meaning})  # fmt: skip
        out.append(r)
    return out


# Cell statuses a team can hit as a bug: a wrong value, a crash, a refusal.
KNOWN_ISSUE_STATUSES = ("wrong", "crashed", "rejected")


@dataclass(frozen=True)
class KnownIssue:
    """A cell that is ``status`` in every recorded release of its column: a bug that never
    changed, so no upgrade page shows it. ``evidence`` is per release (reference and got
    value, reason, the TTIR ops the release compiles the case to)."""

    group: str
    case: str
    backend: str
    target: str | None
    status: str
    releases: tuple[str, ...]
    evidence: dict[str, dict[str, Any]] = field(compare=False, hash=False)


def known_issues(
    runs: Iterable[tuple[str, Iterable[Result]]], statuses: Iterable[str] = KNOWN_ISSUE_STATUSES
) -> list[KnownIssue]:
    """Cells whose status is one of ``statuses`` in every release given (``runs``: (release,
    results) pairs; several runs of one release, e.g. numpy versions, count as that release
    only when all of them agree). A column (backend, target) counts the releases that
    observed it: a GPU cell needs every GPU row, not the interpreter's releases."""
    wanted = set(statuses)
    seen: dict[tuple[str, str, str | None], dict[str, list[str]]] = {}
    proof: dict[tuple[str, str, str | None], dict[str, dict[str, Any]]] = {}
    releases_of: dict[tuple[str, str | None], set[str]] = {}
    for release, results in runs:
        for r in results:
            if not (is_group(r) and r.status == OBSERVED):
                continue
            releases_of.setdefault((r.backend, r.target), set()).add(release)
            sem = r.data.get("semantics") or {}
            for case, status in (r.data.get("cells") or {}).items():
                key = (f"{group_name(r.probe)}\x00{case}", r.backend, r.target)
                seen.setdefault(key, {}).setdefault(release, []).append(str(status))
                ev = evidence(r, case)
                label = value_case(case)
                if label in sem:
                    ev["semantics"] = sem[label]
                proof.setdefault(key, {}).setdefault(release, ev)
    issues = []
    for key, by_release in sorted(
        seen.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2] or "")
    ):
        column = releases_of[(key[1], key[2])]
        firsts = {sts[0] for sts in by_release.values()}
        if set(by_release) != column or len(firsts) != 1:
            continue
        (status,) = firsts
        if status not in wanted or any(set(sts) != {status} for sts in by_release.values()):
            continue
        group, case = key[0].split("\x00", 1)
        releases = tuple(sorted(by_release, key=release_key))
        issues.append(KnownIssue(group, case, key[1], key[2], status, releases, proof[key]))
    return issues


@dataclass(frozen=True)
class CellChange:
    """One fingerprint cell whose status differs between two releases."""

    group: str
    case: str
    backend: str
    target: str | None
    before: str | None
    after: str | None
    kind: str
    evidence: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def __str__(self) -> str:
        where = Column(self.backend, self.target)
        return f"{self.group}[{self.case}] {where}: {self.before} -> {self.after} ({self.kind})"


def same_badness(before: str | None, after: str | None) -> bool:
    """Whether two statuses of one cell are no change to judge: equal, or both bad values
    (nothing stored -> a wrong value, or back: bad on both sides, as wrong -> wrong)."""
    return before == after or (before in BAD_VALUES and after in BAD_VALUES)


def refused(status: str | None) -> bool:
    """Whether ``status`` says the release refuses or lacks what was asked (``REFUSALS``)."""
    return status is not None and any(fnmatchcase(status, p) for p in REFUSALS)


def relaxation(before: str | None, after: str | None) -> bool:
    """Whether ``before`` -> ``after`` (one cell's or one probe row's statuses in one column)
    is a relaxation: refused on the baseline, any other observation on the candidate. Code that
    runs on the baseline cannot be using it, so it is new on the candidate and never a change
    to that code: the one rule the gate and the report apply to every cell and probe row.

    >>> relaxation("rejected", "float32"), relaxation("rejected-runtime", "accepted")
    (True, True)
    >>> relaxation("float32", "rejected"), relaxation("rejected", "skipped")
    (False, False)
    """
    return (
        refused(before)
        and after is not None
        and after != before
        and after not in NO_OBSERVATION_STATUSES
    )


def classify(before: str | None, after: str | None) -> str:
    """The kind of change from ``before`` to ``after`` (statuses of one cell; None: absent)."""
    if before is None or after is None:
        return UNOBSERVED
    if before in NO_OBSERVATION_STATUSES or after in NO_OBSERVATION_STATUSES:
        return UNOBSERVED
    if relaxation(before, after):
        return RELAXATION
    if after in BAD_VALUES and before not in BAD_VALUES:
        return REGRESSION
    if before in BAD_VALUES and after not in BAD_VALUES:
        return FIXED
    return BEHAVIOUR


def _table(results: Iterable[Result]) -> dict[tuple[str, str, str | None], tuple[str, Result]]:
    table = {}
    for r in results:
        if is_group(r) and r.status == OBSERVED:
            for case, status in (r.data.get("cells") or {}).items():
                table[(f"{group_name(r.probe)}\x00{case}", r.backend, r.target)] = (str(status), r)
    return table


def compare(before: Iterable[Result], after: Iterable[Result]) -> list[CellChange]:
    """Every cell whose status differs between two sets of results of one backend column
    (for the interpreter: the same numpy), in a stable order."""
    b, a = _table(before), _table(after)
    changes = []
    for key in sorted(set(b) | set(a), key=lambda k: (k[0], k[1], k[2] or "")):
        bs, br = b.get(key, (None, None))
        as_, ar = a.get(key, (None, None))
        if same_badness(bs, as_):
            continue
        group, case = key[0].split("\x00", 1)
        ev = {}
        if br is not None:
            ev["before"] = evidence(br, case)
        if ar is not None:
            ev["after"] = evidence(ar, case)
        changes.append(CellChange(group, case, key[1], key[2], bs, as_, classify(bs, as_), ev))
    return changes


def by_group(changes: Iterable[CellChange]) -> dict[str, list[CellChange]]:
    """Changes grouped for the report: one line per group, in group order."""
    out: dict[str, list[CellChange]] = {}
    for c in changes:
        out.setdefault(c.group, []).append(c)
    return out


def disagreements(results: Iterable[Result]) -> list[tuple[str, str, dict[str, str]]]:
    """Cells whose status differs between backends of one release: (group, case, {column:
    status}). The interpreter's and a compile's answers are both kept; this lists where they
    part."""
    cols: dict[tuple[str, str], dict[str, str]] = {}
    for r in results:
        if is_group(r) and r.status == OBSERVED:
            label = str(Column(r.backend, r.target))
            for case, status in (r.data.get("cells") or {}).items():
                cols.setdefault((group_name(r.probe), case), {})[label] = str(status)
    return [
        (g, c, s) for (g, c), s in sorted(cols.items()) if len(s) > 1 and len(set(s.values())) > 1
    ]


def summary_lines(changes: list[CellChange], per_group: int = 4) -> list[str]:
    """One line per group: how many cells changed, of which kinds, and the first few."""
    lines = []
    for group, items in by_group(changes).items():
        kinds: dict[str, int] = {}
        for c in items:
            kinds[c.kind] = kinds.get(c.kind, 0) + 1
        shown = "; ".join(f"{c.case}: {c.before} -> {c.after}" for c in items[:per_group])
        more = f" (+{len(items) - per_group} more)" if len(items) > per_group else ""
        counts = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
        lines.append(f"{group} [{items[0].backend}] {counts}: {shown}{more}")
    return lines


def main(argv: list[str] | None = None) -> int:
    """``python -m matrix fingerprint BEFORE.json AFTER.json``: changed cells, by group."""
    import argparse

    from matrix.results import read_raw

    p = argparse.ArgumentParser(
        allow_abbrev=False,  # --cand is no --candidate: a typo is refused, never guessed
        prog="python -m matrix fingerprint",
        description=main.__doc__,
    )
    p.add_argument("before", help="raw results file of the older release")
    p.add_argument("after", help="raw results file of the newer release")
    p.add_argument("--per-group", type=int, default=4, help="changes shown per group")
    args = p.parse_args(argv)
    before, after = read_raw(args.before), read_raw(args.after)
    for backend in sorted({r.backend for r in before.results} | {r.backend for r in after.results}):
        changes = compare(
            [r for r in before.results if r.backend == backend],
            [r for r in after.results if r.backend == backend],
        )
        print(f"== {backend}: {len(changes)} cells changed")
        for line in summary_lines(changes, args.per_group):
            print("  " + line)
    return ExitCode.OK


if __name__ == "__main__":
    cli.deprecated("python -m matrix.analyze.fingerprint", "fingerprint")
    raise SystemExit(cli.run(main, "matrix.analyze.fingerprint"))
