"""Every ordered pair of releases, upgrades and downgrades, decided: a page per pair
(``matrix.report.upgrade`` decides one), a machine-readable feed file per pair
(``matrix/data/pair_feed.schema.json``) with their index, and the readiness table the front
page shows.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matrix.core import REPO_ROOT, DataFileError, Release
from matrix.gate import compare as gc
from matrix.gate.config import ACCEPTED_PATH, PINNED_PATH, pinned_release
from matrix.report import workers
from matrix.report.model import Matrix
from matrix.report.team import TeamView
from matrix.report.team_verdict import TeamGate
from matrix.report.upgrade import (
    CHANGE_KINDS,
    GateInputs,
    Item,
    UpgradePage,
    decide_pair,
    gate_inputs,
    items_of,
    pairs,
    team_coverage,
    triton_changes,
    upgrade_page,
    upgrade_slug,
)
from matrix.results import Run


@dataclass
class Upgrades:
    """Every ordered pair's page (both questions), the record of each (the feed), and what the
    ``also`` calls given to ``decide_all`` returned."""

    pages: list[UpgradePage]
    every: AllPairs
    also: list[Any]


def decide_all(
    matrix: Matrix,
    runs: Sequence[Run],
    *,
    results: str,
    pinned_path: Path = PINNED_PATH,
    accepted_path: Path = ACCEPTED_PATH,
    team: TeamView | None = None,
    inputs: GateInputs | None = None,
    also: Sequence[Callable[[], Any]] = (),
) -> Upgrades:
    """The gate decides every ordered pair on ``runs`` (the matrix's own runs), downgrades
    included: a page per pair with this project's verdict and Triton's changes, and a feed
    record each. Adjacent pairs and pinned -> newest are ``featured`` (listed first, with the
    team suite's verdict). The decisions and the ``also`` calls (other work of the build that
    reads the same runs) share forked workers (``matrix.report.workers``); ``also`` goes first,
    as the longest."""
    try:
        pinned: Release | None = pinned_release(pinned_path)
    except DataFileError:
        pinned = None
    g = inputs or gate_inputs(results, accepted_path, runs)
    team_gate = TeamGate(runs, REPO_ROOT, team) if team is not None and team.present else None
    featured = {(a, b): is_pinned for a, b, is_pinned in pairs(matrix, pinned)}
    every = every_pair(matrix)

    def page_of(baseline: str, candidate: str) -> UpgradePage:
        own = decide_pair(runs, baseline, candidate, g)
        changes = triton_changes(runs, baseline, candidate, g)
        is_featured = (baseline, candidate) in featured
        page = upgrade_page(matrix, own, g, featured.get((baseline, candidate), False), team)
        page.changes = items_of(changes, g.fixes, shown_uses=False)
        page.triton = changes
        page.featured = is_featured
        if is_featured:
            page.kernel_coverage = team_coverage(runs, baseline, candidate)
            if team_gate is not None:
                page.team_gate = team_gate.verdict(baseline, candidate, results)
        return page

    calls: list[Callable[[], Any]] = [*also]
    calls += [functools.partial(page_of, *pair) for pair in every]
    done = workers.run_all(calls)
    extra, pages = done[: len(also)], done[len(also) :]
    return Upgrades(pages, AllPairs([pair_record(p) for p in pages]), extra)


EVIDENCE_CHARS = 240  # of each entry's first evidence line in the feed


CELLS_LISTED = 6  # cell names per entry in the feed (the entry's count is exact)


FEED_SCHEMA = "pair-feed/1"  # matrix/data/pair_feed.schema.json


# The rule the verdict follows, stated in every feed file (matrix.gate.verdict's docstring).
VERDICT_RULE = (
    "UNSAFE (exit 1) if this project's own kernels (kernels/, read through their usage "
    "profile, on the targets kernels/triton-compat.toml declares) use or may be affected by "
    "a regression, a breaking API or a behaviour change "
    "(none acknowledged); else UNDECIDABLE (exit 2) if anything it uses could not be compared "
    "on both releases (missing, failed or incomplete data); else SAFE (exit 0). Changes the "
    "code does not use never block. Triton's changes (`triton`) are listed for any code and "
    "decide nothing."
)


def every_pair(matrix: Matrix) -> list[tuple[str, str]]:
    """Every ordered pair of installed releases, upgrades and downgrades (90 for ten)."""
    versions = [r.version for r in matrix.releases if r.installed_runs]
    return list(itertools.permutations(versions, 2))


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _candidate_evidence(evidence: Sequence[str]) -> str:
    """The evidence line that says what the candidate does (the gate puts the baseline's first)."""
    for e in evidence:
        if e.startswith("candidate"):
            return e
    return evidence[0] if evidence else ""


def _entry(i: Item) -> dict[str, Any]:
    return {
        "kind": i.kind,
        "name": i.probe,
        "before": i.before,
        "after": i.after,
        "columns": list(i.wheres),
        "interpreter_only": i.interpreter_only,
        "cells": len(i.cells),
        "some_cells": i.cells[:CELLS_LISTED],
        "evidence": _clip(_candidate_evidence(i.evidence), EVIDENCE_CHARS),
        "fix": _clip("; ".join(i.fixes), EVIDENCE_CHARS),
    }


def counts_of(items: Sequence[Item], kinds: Sequence[str]) -> dict[str, Any]:
    """Entries per kind, per kind seen only under the interpreter, and per column and kind."""
    by_kind = {k: sum(i.kind == k for i in items) for k in kinds}
    interp = {k: sum(i.kind == k and i.interpreter_only for i in items) for k in kinds}
    by_column: dict[str, dict[str, int]] = {}
    for i in items:
        if i.kind in kinds:
            for w in i.wheres:
                col = by_column.setdefault(w, {k: 0 for k in kinds})
                col[i.kind] += 1
    return {"by_kind": by_kind, "interpreter_only": interp, "by_column": by_column}


def pair_record(page: UpgradePage) -> dict[str, Any]:
    """One pair's feed document (matrix/data/pair_feed.schema.json): this project's verdict
    with its reasons, and Triton's changes for any code, counted per class and column."""
    gate = page.gate
    own_kinds = (*gc.UNSAFE_KINDS, gc.ACCEPTED)
    triton = page.triton
    return {
        "schema": FEED_SCHEMA,
        "baseline": page.baseline,
        "candidate": page.candidate,
        "direction": "downgrade" if page.downgrade else "upgrade",
        "rule": VERDICT_RULE,
        "page": f"upgrades/{page.slug}.html",
        "verdict": gate.verdict,
        "exit_code": gate.exit_code,
        "own_code": {
            "scanned": list(gate.scanned),
            "headline": page.headline_reasons,
            "counts": counts_of(page.items, own_kinds),
            "reasons": [_entry(i) for i in page.items if i.kind in gc.UNSAFE_KINDS],
            "not_used": len(gate.unused),
            "cannot_decide": len(page.cannot_decide),
            "crashed": [_clip(c, EVIDENCE_CHARS) for c in page.crashed],
        },
        "triton": {
            "counts": counts_of(page.changes, CHANGE_KINDS),
            "entries": [_entry(i) for i in page.changes],
            "cannot_decide": len(triton.errors + triton.comparison.undecidable) if triton else 0,
            "compared": list(triton.comparison.compared) if triton else [],
        },
    }


def feed_index(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The feed's index: every pair's verdict and counts, and the file with the rest."""
    return {
        "schema": FEED_SCHEMA,
        "rule": VERDICT_RULE,
        "pairs": [
            {
                "baseline": r["baseline"],
                "candidate": r["candidate"],
                "direction": r["direction"],
                "verdict": r["verdict"],
                "exit_code": r["exit_code"],
                "own_code": r["own_code"]["counts"]["by_kind"],
                "triton": r["triton"]["counts"]["by_kind"],
                "file": feed_file(r["baseline"], r["candidate"]),
                "page": r["page"],
            }
            for r in records
        ],
    }


def feed_file(baseline: str, candidate: str) -> str:
    return f"{upgrade_slug(baseline, candidate)}.json"


@dataclass
class AllPairs:
    """Every pair's verdict (``records``, in ``every_pair`` order)."""

    records: list[dict[str, Any]]

    def get(self, baseline: str, candidate: str) -> dict[str, Any] | None:
        for r in self.records:
            if (r["baseline"], r["candidate"]) == (baseline, candidate):
                return r
        return None


@dataclass(frozen=True)
class Readiness:
    """One release's row: is moving to it from the pinned release safe (the gate's verdict)."""

    release: str
    relation: str  # "pinned", "newer", "older"
    record: dict[str, Any] | None  # the pair's record (pinned -> newer, or older -> pinned)
    link: str  # a page or the any-pair chooser, relative to upgrades/

    def count(self, kind: str) -> int:
        """Entries of ``kind`` on this project's code (the verdict's reasons)."""
        return int(
            (self.record or {})
            .get("own_code", {})
            .get("counts", {})
            .get("by_kind", {})
            .get(kind, 0)
        )

    def changes(self, kind: str) -> int:
        """Triton's changes of ``kind`` for any code."""
        return int(
            (self.record or {}).get("triton", {}).get("counts", {}).get("by_kind", {}).get(kind, 0)
        )


def readiness(every: AllPairs, pages: Sequence[UpgradePage]) -> list[Readiness]:
    """A row per release, newest first, from the pinned release (matrix/data/pinned.toml)."""
    try:
        pinned = str(pinned_release(PINNED_PATH))
    except DataFileError:
        return []
    versions = sorted(
        {v for r in every.records for v in (r["baseline"], r["candidate"])}, key=Release.parse
    )
    if pinned not in versions:
        return []
    rows = []
    for v in reversed(versions):
        if v == pinned:
            rows.append(Readiness(v, "pinned", None, ""))
            continue
        # Moving from the pinned release to ``v``: a downgrade for an older one.
        relation = "newer" if Release.parse(v) > Release.parse(pinned) else "older"
        record = every.get(pinned, v)
        rows.append(Readiness(v, relation, record, f"{upgrade_slug(pinned, v)}.html"))
    return rows


def status_table(matrix: Matrix) -> dict[str, object]:
    """Compact statuses for the page's any-pair script: rows, releases, and per row and
    release the statuses of its cells with their meanings (no evidence: that is on the grid)."""
    releases = [r.version for r in matrix.releases]
    rows = []
    for row in matrix.rows:
        cells: dict[str, list[list[str | None]]] = {}
        for c in row.cells:
            if c.observed:
                cells.setdefault(c.release, []).append([c.numpy, c.status, c.tone])
        rows.append(
            {
                "probe": row.key.probe,
                "where": row.key.label,
                "problem": row.problem,
                "cells": cells,
            }
        )
    return {"releases": releases, "rows": rows}
