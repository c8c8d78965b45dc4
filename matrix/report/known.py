"""Known issues: fingerprint cells that are wrong, crashed or refused in every recorded release.

A cell that never changes between releases never shows on an upgrade page, yet a team can hit
it on any release. This lists, per column (backend and target; interpreter cells over every
numpy they ran with), the cells whose status is bad in every run of every release that recorded
the column and wrote output, with the evidence of the newest release; a release whose runs of a
cell stored nothing (``unwritten``) is named, not counted. ``wrong`` and ``crashed`` (also
``timeout``) are problems; ``rejected`` in every release is listed apart, since a refusal that
never changed is often the language's rule rather than a bug: its evidence says which.

Written here, in the report, because ``matrix.analyze.fingerprint`` has no such function in
this checkout; it reads the group rows the same way (``is_group``, ``evidence``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from matrix.analyze.fingerprint import OBSERVED, UNWRITTEN, evidence, group_name, is_group
from matrix.core import Column, release_key
from matrix.results import Run

PROBLEMS = ("wrong", "crashed", "timeout")
REFUSED = ("rejected",)
CASES_SHOWN = 30  # per group and column on the page; the count is exact
# Releases that must have written a cell's output for "bad on every release that wrote" (one
# release alone is that release's issue, not a known one).
MIN_WRITING = 2


@dataclass
class KnownIssue:
    """The cells of one group and column that are bad in every release, by status."""

    group: str
    where: str
    status: str
    releases: list[str]
    cases: list[str] = field(default_factory=list)
    evidence: dict[str, dict[str, Any]] = field(default_factory=dict)  # per case, newest release
    # The runs (release, numpy) of the column that stored nothing for these cells
    # (``unwritten``: the launch returned, no output was written, e.g. 3.0.0/3.1.0 under numpy
    # 2.x): named, not counted.
    wrote_none: list[str] = field(default_factory=list)

    @property
    def cases_count(self) -> int:
        return len(self.cases)

    @property
    def refused(self) -> bool:
        return self.status in REFUSED


def known_issues(runs: Sequence[Run]) -> list[KnownIssue]:
    """Problems first (by group), then refusals; see the module docstring."""
    # (group, case, column) -> release -> the statuses its runs recorded
    seen: dict[tuple[str, str, str], dict[str, set[str]]] = {}
    releases_of: dict[str, set[str]] = {}
    newest: dict[tuple[str, str, str], tuple[str, Any]] = {}
    silent_runs: dict[tuple[str, str, str], set[str]] = {}  # the runs that stored nothing
    for run in runs:
        release = str(run.triton)
        for r in run.results:
            if not is_group(r) or r.status != OBSERVED:
                continue
            where = str(Column(r.backend, r.target))
            releases_of.setdefault(where, set()).add(release)
            group = group_name(r.probe)
            for case, status in (r.data.get("cells") or {}).items():
                key = (group, case, where)
                seen.setdefault(key, {}).setdefault(release, set()).add(str(status))
                if str(status) == UNWRITTEN:
                    numpy = run.env.get("numpy")
                    silent_runs.setdefault(key, set()).add(
                        f"{release} (numpy {numpy})" if numpy else release
                    )
                if str(status) in PROBLEMS + REFUSED:
                    old = newest.get(key)
                    if old is None or release_key(release) > release_key(old[0]):
                        newest[key] = (release, r)
    found: dict[tuple[str, str, str], KnownIssue] = {}
    for (group, case, where), by_release in seen.items():
        everywhere = releases_of[where]
        if set(by_release) != everywhere:
            continue  # some release has no observation of this cell: not "every release"
        wrote = [r for r, st in by_release.items() if st != {UNWRITTEN}]
        if len(wrote) < MIN_WRITING:
            continue
        # A run that stored nothing (numpy 2.x on 3.0.0) beside one that did: the latter speaks.
        statuses = set().union(*(by_release[r] for r in wrote)) - {UNWRITTEN}
        if len(statuses) != 1:
            continue
        (status,) = statuses
        if status not in PROBLEMS + REFUSED:
            continue
        issue = found.setdefault(
            (group, where, status),
            KnownIssue(group, where, status, sorted(everywhere, key=release_key)),
        )
        issue.cases.append(case)
        for label in sorted(silent_runs.get((group, case, where), ())):
            if label not in issue.wrote_none:
                issue.wrote_none.append(label)
        release, result = newest[(group, case, where)]
        issue.evidence[case] = {"release": release, **evidence(result, case)}
    return sorted(
        found.values(), key=lambda i: (i.refused, PROBLEMS.index(i.status) if not i.refused else 0,
                                       i.group, i.where)
    )  # fmt: skip
