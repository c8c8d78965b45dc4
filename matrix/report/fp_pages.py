"""Fingerprint pages: one line per group with its changes between releases, a page per group.

The ``fp`` probe writes one result per group (``fp.<group>``, thousands of cells a run in
``data.cells``); ``matrix.analyze.fingerprint`` owns reading and comparing them (``compare``,
``by_group``). This module only lays its changes out per adjacent release pair and column, so
``index.html`` stays small: the grid never carries fingerprint cells. Where
``matrix.analyze.fingerprint`` is not in the checkout, or no run has fingerprint results, there
are no fingerprint pages and the report says so.
"""

from __future__ import annotations

import importlib
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from matrix.core import Column, pair_numpy, release_key
from matrix.report.model import is_gpu_run, slug
from matrix.results import Result, Run

# Changed cells listed on a group page per release pair and column; the rest are counted.
CELLS_SHOWN = 400

# A cell change the fingerprint calls "unobserved" because one side is a process death is an
# observation: a crash or hang is what a team's kernel would see too (catalog: breaking). The
# pages name it so; "unobserved" is left only for cells one side did not measure.
DEATHS = frozenset({"crashed", "timeout"})
SHOWN_KIND_MEANINGS = {"crashed": "breaking", "stopped crashing": "good"}


def shown_kind(change: Any) -> str:
    """The kind a page shows for a fingerprint ``CellChange``."""
    if change.kind == "unobserved":
        if change.after in DEATHS and change.before not in DEATHS:
            return "crashed"
        if change.before in DEATHS and change.after is not None and change.after not in DEATHS:
            return "stopped crashing"
    return str(change.kind)


def _fingerprint() -> Any:
    try:
        return importlib.import_module("matrix.analyze.fingerprint")
    except ModuleNotFoundError:
        return None


@dataclass
class GroupPair:
    """One group's changes from one release to the next, in one column."""

    before: str
    after: str
    where: str
    changes: list[Any] = field(default_factory=list)  # matrix.analyze.fingerprint.CellChange

    @property
    def kinds(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for c in self.changes:
            kind = shown_kind(c)
            out[kind] = out.get(kind, 0) + 1
        return dict(sorted(out.items()))


@dataclass
class Group:
    name: str
    pairs: list[GroupPair] = field(default_factory=list)
    # Per release and column: the wrong cells by their case's first word (the dtype of a
    # values case, ``bfloat16(-1,2)``), or None where the runs stored nothing (``unwritten``):
    # which releases compute what wrong, read without comparing pairs.
    wrong: dict[str, dict[str, dict[str, int] | None]] = field(default_factory=dict)

    @property
    def wrong_columns(self) -> list[str]:
        return sorted({w for per in self.wrong.values() for w in per})

    @property
    def slug(self) -> str:
        return slug(self.name)

    @property
    def changed(self) -> int:
        return sum(len(p.changes) for p in self.pairs)


def _columns(runs: Sequence[Run], fp: Any) -> dict[tuple[str, str | None, str | None], list]:
    """Fingerprint results by (backend, target, numpy of interpreter cells)."""
    out: dict[tuple[str, str | None, str | None], list[Result]] = {}
    for run in runs:
        numpy = run.env.get("numpy") if not is_gpu_run(run) else None
        for r in run.results:
            if fp.is_group(r):
                key = (r.backend, r.target, numpy if r.backend == "interpret" else None)
                out.setdefault(key, []).append(r)
    return out


def build_groups(runs: Sequence[Run]) -> list[Group] | None:
    """Every group with its changes per adjacent release pair; None without the module or
    without fingerprint results."""
    fp = _fingerprint()
    if fp is None:
        return None
    by_release: dict[str, list[Run]] = {}
    for run in runs:
        by_release.setdefault(str(run.triton), []).append(run)
    cols = {v: _columns(rs, fp) for v, rs in by_release.items()}
    if not any(cols.values()):
        return None
    groups: dict[str, Group] = {}
    names = {fp.group_name(r.probe) for c in cols.values() for rs in c.values() for r in rs}
    for name in sorted(names):
        groups[name] = Group(name)
    releases = sorted((v for v in cols if cols[v]), key=release_key)
    for v in releases:
        for (backend, target, numpy), results in sorted(cols[v].items(), key=str):
            where = str(Column(backend, target)) + (f" (numpy {numpy})" if numpy else "")
            for r in results:
                cells = {str(c): str(st) for c, st in (r.data.get("cells") or {}).items()}
                name = fp.group_name(r.probe)
                per = groups[name].wrong.setdefault(v, {})
                values = set(cells.values())
                # No value at all came back (what was refused aside): the run stored nothing.
                if fp.UNWRITTEN in values and not values & {fp.WRONG, *fp.RIGHT_STATUSES}:
                    per[where] = None
                    continue
                for case, st in cells.items():
                    if st == fp.WRONG:
                        counts = per.setdefault(where, {}) or {}
                        per[where] = counts
                        word = fp.value_case(case)
                        counts[word] = counts.get(word, 0) + 1
    for before, after in itertools.pairwise(releases):
        b, a = cols[before], cols[after]
        places = sorted({(k[0], k[1]) for k in b} & {(k[0], k[1]) for k in a}, key=str)
        for backend, target in places:
            nb = {k[2] for k in b if k[:2] == (backend, target)}
            na = {k[2] for k in a if k[:2] == (backend, target)}
            numpys = pair_numpy(nb, na) if backend == "interpret" else [(None, None)]
            for n_b, n_a in numpys:
                where = str(Column(backend, target))
                if n_b is not None:
                    where += f" (numpy {n_b})" if n_b == n_a else f" (numpy {n_b} vs {n_a})"
                found = fp.by_group(
                    fp.compare(b[(backend, target, n_b)], a[(backend, target, n_a)])
                )
                for name, changes in found.items():
                    group = groups.setdefault(name, Group(name))
                    group.pairs.append(GroupPair(before, after, where, list(changes)))
    return list(groups.values())
