"""The page model: runs grouped into a matrix that templates only have to walk.

Everything a page shows is decided here, in plain data, so that it can be unit-tested without
rendering and so that rendering stays a dumb walk over sorted lists (the same runs always give
the same bytes). Nothing here imports Triton, torch or numpy.

Layout of the matrix:

- columns are releases sorted by ``packaging.version.Version``; each release has a numpy
  sub-axis (every numpy of any non-GPU run) that interpreter rows are split over;
- rows are ``(probe, backend, target)`` in catalog order (unknown probes last, flagged);
- an interpreter row has one cell per (release, numpy); an aot or gpu row has one cell per
  release, spanning that release's numpy sub-columns.

>>> from matrix.results import Result, Run, known_seconds
>>> run = Run("a", {"triton": "3.9.0", "numpy": "2.4.6"},
...           results=[Result("splitk", "interpret", None, "pass")])
>>> m = build([run])
>>> [c.status for c in m.rows[0].cells]
['pass']
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from matrix.catalog import MEANINGS_BY_NAME, PROBES, PROBES_BY_NAME
from matrix.core import pair_numpy, release_key
from matrix.report.cells import CENSUS_NOTE as CENSUS_NOTE
from matrix.report.cells import EVIDENCE_TEXT_LIMIT as EVIDENCE_TEXT_LIMIT
from matrix.report.cells import MISSING as MISSING
from matrix.report.cells import (
    NOT_INSTALLED,
    Box,
    ReleaseGroup,
    Row,
    RowKey,
    build_rows,
    clip,
    group_releases,
    is_problem,
    row_keys,
    tone,
)
from matrix.report.cells import evidence_id as evidence_id
from matrix.report.cells import fmt_seconds as fmt_seconds
from matrix.report.cells import icon as icon
from matrix.report.cells import install_seconds as install_seconds
from matrix.report.cells import is_gpu_run as is_gpu_run
from matrix.report.cells import probe_seconds as probe_seconds
from matrix.report.cells import run_seconds as run_seconds
from matrix.report.cells import slug as slug
from matrix.report.cells import sorted_results as sorted_results
from matrix.results import Run

# (``X as X`` above: names whose home was here before the rows had a module of their own;
# callers still import them from here.)

# The probes that run the project's own kernels: the summary says where they pass.
KERNEL_PROBES = ("splitk", "tiled")


@dataclass(frozen=True)
class Change:
    """An observation that differs from the previous release that observed the same row."""

    key: RowKey
    numpy: str | None
    before_release: str
    after_release: str
    before: str
    after: str
    before_detail: str
    after_detail: str
    # Releases in between with no observation for this row (not installed, missing).
    skipped_releases: tuple[str, ...] = ()
    # For interpreter rows compared at the newest numpy each release has (no common numpy).
    before_numpy: str | None = None

    @property
    def behavioural(self) -> bool:
        spec = PROBES_BY_NAME.get(self.key.probe)
        return spec is None or spec.behavioural

    @property
    def where(self) -> str:
        if self.key.backend != "interpret":
            return self.key.label
        if self.before_numpy is not None and self.before_numpy != self.numpy:
            return f"interpret, numpy {self.before_numpy} -> {self.numpy}"
        return f"interpret, numpy {self.numpy}"

    @property
    def text(self) -> str:
        """``3.6.0 -> 3.7.1: block_ptr supported -> deprecated (UserWarning: ...)``"""
        line = f"{self.before_release} -> {self.after_release}: {self.key.probe} "
        line += f"{self.before} -> {self.after}"
        first = self.after_detail.splitlines()[0] if self.after_detail else ""
        return f"{line} ({clip(first, 160)})" if first else line


@dataclass(frozen=True)
class ChangeGroup:
    """One summary line: a probe whose status changed the same way on several rows."""

    probe: str
    before_release: str
    after_release: str
    before: str
    after: str
    changes: tuple[Change, ...]

    @property
    def wheres(self) -> list[str]:
        return [c.where for c in self.changes]

    @property
    def where_summary(self) -> str:
        """Where, per backend: ``interpret (numpy 1.26.4, 2.4.6); aot (cuda:80, cuda:90)``."""
        parts: dict[str, list[str]] = {}
        for c in self.changes:
            if c.key.backend == "interpret":
                item = f"numpy {c.numpy}" if not parts.get("interpret") else str(c.numpy)
                if c.before_numpy is not None and c.before_numpy != c.numpy:
                    item = f"numpy {c.before_numpy} -> {c.numpy}"
            else:
                item = c.key.target or "-"
            parts.setdefault(c.key.backend, []).append(item)
        return "; ".join(f"{b} ({', '.join(items)})" for b, items in parts.items())

    @property
    def detail(self) -> str:
        """The first line of the newer release's evidence (the same for most members)."""
        for c in self.changes:
            if c.after_detail:
                return clip(c.after_detail.splitlines()[0], 200)
        return ""


@dataclass(frozen=True)
class KernelVerdict:
    """Where one release stands for the kernel probes: pass, fail, untested, not installed."""

    release: str
    verdict: str
    passed: int
    failed: int
    other: int
    failures: tuple[str, ...]


@dataclass
class Matrix:
    releases: list[ReleaseGroup]
    rows: list[Row]
    changes: list[Change]
    kernels: list[KernelVerdict]
    runs: list[Run]
    unmeasured_probes: list[str]

    @property
    def highlights(self) -> list[ChangeGroup]:
        """Behaviour changes and anything that flipped colour (a kernel that stopped passing),
        grouped per probe and release pair, newest release first."""
        out = []
        for c in self.changes:
            flipped = tone(c.key.probe, c.before) != tone(c.key.probe, c.after)
            if c.behavioural or flipped:
                out.append(c)
        return group_changes(out)

    @property
    def changes_text(self) -> str:
        """Every change, one line each (the "As text" block: lines are joined here, not by the
        template, whose trim_blocks would eat the line ends)."""
        lines = []
        for c in self.changes:
            where = f" [{c.where}]" if c.key.backend != "interpret" or c.numpy else ""
            lines.append(c.text + where)
        return "\n".join(lines)

    def rows_for(self, probe: str) -> list[Row]:
        return [r for r in self.rows if r.key.probe == probe]

    def since(self, probe: str) -> list[Since]:
        return since(self.rows_for(probe), self.releases)

    def release(self, version: str) -> ReleaseGroup:
        for r in self.releases:
            if r.version == version:
                return r
        raise KeyError(
            f"release: no runs for {version!r}; have {[r.version for r in self.releases]}"
        )


def _changes_in(key: RowKey, series: list[tuple[Box, str | None]]) -> list[Change]:
    """Changes along one series of cells (ordered by release), skipping cells with no result."""
    out = []
    prev: tuple[Box, str | None] | None = None
    gap: list[str] = []
    for cell, numpy in series:
        if not cell.observed:
            gap.append(cell.release)
            continue
        if prev is not None and prev[0].status != cell.status:
            p = prev[0]
            out.append(
                Change(
                    key,
                    numpy,
                    p.release,
                    cell.release,
                    p.status,
                    cell.status,
                    p.result.detail if p.result else "",
                    cell.result.detail if cell.result else "",
                    tuple(gap),
                    prev[1],
                )
            )
        prev, gap = (cell, numpy), []
    return out


def compute_changes(releases: Sequence[ReleaseGroup], rows: Sequence[Row]) -> list[Change]:
    """Every status that differs from the previous release observing the same row.

    Interpreter rows compare at the same numpy; where two consecutive releases share no numpy,
    they compare the newest numpy each has.
    """
    changes: list[Change] = []
    for row in rows:
        if not row.split_by_numpy:
            changes += _changes_in(row.key, [(c, None) for c in row.cells])
            continue
        by_release: dict[str, dict[str | None, Box]] = {}
        for c in row.cells:
            by_release.setdefault(c.release, {})[c.numpy] = c
        versions = [r.version for r in releases]
        # Pairwise over consecutive releases that have at least one observation in this row.
        observed = [v for v in versions if any(c.observed for c in by_release[v].values())]
        for before, after in itertools.pairwise(observed):
            b, a = by_release[before], by_release[after]
            gap = tuple(v for v in versions[versions.index(before) + 1 : versions.index(after)])
            pairs = pair_numpy((n for n in b if b[n].observed), (n for n in a if a[n].observed))
            for nb, na in pairs:
                cb, ca = b[nb], a[na]
                if cb.status != ca.status:
                    changes.append(
                        Change(
                            row.key,
                            na,
                            before,
                            after,
                            cb.status,
                            ca.status,
                            cb.result.detail if cb.result else "",
                            ca.result.detail if ca.result else "",
                            gap,
                            nb,
                        )
                    )
    order = {r.version: i for i, r in enumerate(releases)}
    keys = {row.key: i for i, row in enumerate(rows)}
    changes.sort(key=lambda c: (order[c.after_release], keys[c.key], release_key(c.numpy)))
    return changes


def kernel_verdicts(releases: Sequence[ReleaseGroup], rows: Sequence[Row]) -> list[KernelVerdict]:
    """Per release: fail if any kernel cell failed, pass if some passed and none failed.

    Cells without a pass or a failure (skipped, missing, not installed) do not decide the
    verdict; their count (``other``, leaving out cells with no run at all) is kept so that the
    pages can say how much of what was run gave no kernel result.
    """
    out = []
    kernel_rows = [r for r in rows if r.key.probe in KERNEL_PROBES]
    for release in releases:
        cells = [
            (row.key, c) for row in kernel_rows for c in row.cells if c.release == release.version
        ]
        passed = [c for _, c in cells if c.tone == "good"]
        failed = [(k, c) for k, c in cells if is_problem(c.tone)]
        # A backend or numpy this release was never run with is not a gap in its kernel results.
        other = sum(
            c.tone != "good" and not is_problem(c.tone) and c.reason != "no-run" for _, c in cells
        )
        if not release.installed_runs:
            verdict = NOT_INSTALLED
        elif failed:
            verdict = "fail"
        elif passed:
            verdict = "pass"
        else:
            verdict = "untested"
        failures = tuple(
            f"{k.probe} [{k.label}{'' if c.numpy is None else f', numpy {c.numpy}'}]: {c.status}"
            for k, c in failed
        )
        out.append(
            KernelVerdict(release.version, verdict, len(passed), len(failed), other, failures)
        )
    return out


def group_changes(changes: Iterable[Change]) -> list[ChangeGroup]:
    """Changes with the same probe, releases and statuses as one line, newest release first."""
    groups: dict[tuple[str, str, str, str, str], list[Change]] = {}
    for c in changes:
        key = (c.key.probe, c.before_release, c.after_release, c.before, c.after)
        groups.setdefault(key, []).append(c)
    out = [ChangeGroup(*key, tuple(members)) for key, members in groups.items()]
    out.sort(
        key=lambda g: (release_key(g.after_release), release_key(g.before_release)), reverse=True
    )
    return out


# The exception or warning class an evidence text starts with or names: "UserWarning: ...".
_CAUSE = re.compile(r"\b([A-Z][A-Za-z]*(?:Warning|Error|Exception))\b")


@dataclass(frozen=True)
class Since:
    """One step of a probe's history: from ``release`` on, most of its cells say ``status``."""

    release: str
    status: str
    meaning: str
    cause: str = ""

    @property
    def text(self) -> str:
        return f"{self.status} {self.release}" + (f" ({self.cause})" if self.cause else "")


def since(rows: Sequence[Row], releases: Sequence[ReleaseGroup]) -> list[Since]:
    """A probe's history, caniuse style: ``supported 3.0.0, deprecated 3.7.1 (UserWarning),
    removed 3.9.0 (NotImplementedError)``.

    Per release, the status most of the probe's observed cells have (ties: the more serious
    meaning, then by name); a step wherever that changes. Cells that measured nothing are left
    out, so a release with no observation does not make a step.
    """
    order = {m: i for i, m in enumerate(MEANINGS_BY_NAME)}
    out: list[Since] = []
    for release in releases:
        cells = [
            c
            for row in rows
            for c in row.cells
            if c.release == release.version and c.observed and c.tone != "unmeasured"
        ]
        if not cells:
            continue
        counts = Counter((c.status, c.tone) for c in cells)
        (status, meaning), _ = min(
            counts.items(), key=lambda kv: (-kv[1], order[kv[0][1]], kv[0][0])
        )
        if out and out[-1].status == status:
            continue
        cause = ""
        for c in cells:
            found = _CAUSE.search(c.result.detail if c.result and c.status == status else "")
            if found:
                cause = found.group(1)
                break
        out.append(Since(release.version, status, meaning, cause))
    return out


def build(runs: Iterable[Run]) -> Matrix:
    """The whole page model for ``runs`` (any order; the result is sorted)."""
    runs = sorted(runs, key=lambda r: r.id)
    releases = group_releases(runs)
    keys = row_keys(runs)
    rows = build_rows(releases, keys)
    measured = {k.probe for k in keys}
    return Matrix(
        releases=releases,
        rows=rows,
        changes=compute_changes(releases, rows),
        kernels=kernel_verdicts(releases, rows),
        runs=runs,
        unmeasured_probes=[p.name for p in PROBES if p.name not in measured],
    )
