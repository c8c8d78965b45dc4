"""The columns the gate compares, and how the two sides' columns pair (the results contract):

- interpreter results pair by numpy (every numpy both sides recorded; if none is shared, the
  newest numpy of each side), because the interpreter's numerics come from numpy;
- ``aot`` and ``gpu`` results pair by (backend, target), whatever numpy their cell had.

A column of one side that pairs with none of the other's becomes an ``undecidable`` item.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from matrix.analyze import fingerprint
from matrix.core import Column, Release, pair_numpy
from matrix.gate.findings import Comparison
from matrix.gate.sides import DataError
from matrix.results import Result, Run


def gpu_machines(runs: Sequence[Run]) -> dict[str | None, set[str]]:
    """``{gpu target: {device name}}`` of the runs with gpu results."""
    machines: dict[str | None, set[str]] = {}
    for run in runs:
        gpu = run.env.get("gpu")
        name = str(gpu.get("name")) if isinstance(gpu, dict) else str(gpu)
        for r in run.results:
            if r.backend == "gpu":
                machines.setdefault(r.target, set()).add(name)
    return machines


Columns = dict[tuple[str, str | None, str | None], dict[str, Result]]

# Kept per run (``_expanded``) and per set of runs (``columns_of``): the pages judge 45 pairs, so
# each release's runs are compared up to 9 times; expanding their ~100,000 fingerprint cells
# and tabling them was most of a report build. An entry is used only while it holds the very
# run objects and result lists, of the same lengths (it keeps them, so their ids are not reused).
_KEPT_MAX = 256
_EXPANDED: dict[int, tuple[tuple[Any, ...], list[Result]]] = {}
_COLUMNS: dict[tuple[int, ...], tuple[tuple[Any, ...], Columns]] = {}


def _identity(runs: Sequence[Run]) -> tuple[Any, ...]:
    """What a kept entry must still match (compared item by item: the same objects compare
    equal at once)."""
    return tuple(x for run in runs for x in (run, run.results, len(run.results)))


def _kept(store: dict, key: Any, runs: Sequence[Run]) -> Any:
    hit = store.get(key)
    return hit[1] if hit is not None and hit[0] == _identity(runs) else None


def _keep(store: dict, key: Any, runs: Sequence[Run], value: Any) -> Any:
    if len(store) >= _KEPT_MAX:
        store.clear()
    store[key] = (_identity(runs), value)
    return value


def _expanded(run: Run) -> list[Result]:
    """``fingerprint.expand(run.results)``, kept per run."""
    hit = _kept(_EXPANDED, id(run), [run])
    if hit is not None:
        return hit
    return _keep(_EXPANDED, id(run), [run], list(fingerprint.expand(run.results)))


def columns_of(runs: Sequence[Run]) -> Columns:
    """``{(backend, target, numpy-or-None): {probe: Result}}``; conflicting duplicates raise.
    Kept per set of runs: the caller only reads it."""
    key = tuple(id(run) for run in runs)
    hit = _kept(_COLUMNS, key, runs)
    if hit is not None:
        return hit
    table: Columns = {}
    origin: dict[tuple[Any, ...], str] = {}
    for run in runs:
        numpy = run.env.get("numpy")
        # Fingerprint groups compare cell by cell: each cell is a probe of its own here.
        for r in _expanded(run):
            np_key = str(numpy) if r.backend == "interpret" else None
            col = (r.backend, r.target, np_key)
            cell = table.setdefault(col, {})
            previous = cell.get(r.probe)
            if previous is not None and previous.status != r.status:
                raise DataError(
                    f"conflicting results for {r.probe} on {Column(r.backend, r.target)}"
                    f" (Triton {run.triton}): {previous.status!r} in run "
                    f"{origin[(*col, r.probe)]!r}, {r.status!r} in run {run.id!r}"
                )
            cell[r.probe] = previous or r
            origin.setdefault((*col, r.probe), run.id)
    return _keep(_COLUMNS, key, runs, table)


# One compared pair: the baseline's column key, the candidate's, and the label listed.
Pair = tuple[tuple[Any, ...], tuple[Any, ...], str]


def pair_columns(
    out: Comparison,
    base_cols: Columns,
    cand_cols: Columns,
    baseline: Release,
    candidate: Release,
    uninstalled: Mapping[str, set[str]],
) -> list[Pair]:
    """The columns of both sides that pair; each that cannot pair is an undecidable item in
    ``out`` (``uninstalled``: the numpy of each side's cells that did not install, already
    accounted for)."""
    pairs = _interpreter_pairs(out, base_cols, cand_cols, baseline, candidate, uninstalled)
    other_base = {c for c in base_cols if c[0] != "interpret"}
    other_cand = {c for c in cand_cols if c[0] != "interpret"}
    for col in sorted(other_base & other_cand, key=str):
        pairs.append((col, col, str(Column(col[0], col[1]))))
    for col in sorted(other_base - other_cand, key=str):
        out.undecided(
            f"{Column(col[0], col[1])}: results for the baseline {baseline} but none for "
            f"the candidate {candidate}",
            column=str(Column(col[0], col[1])),
        )
    for col in sorted(other_cand - other_base, key=str):
        out.undecided(
            f"{Column(col[0], col[1])}: results for the candidate {candidate} but none for "
            f"the baseline {baseline}, so not compared",
            column=str(Column(col[0], col[1])),
        )
    return pairs


def _interpreter_pairs(
    out: Comparison,
    base_cols: Columns,
    cand_cols: Columns,
    baseline: Release,
    candidate: Release,
    uninstalled: Mapping[str, set[str]],
) -> list[Pair]:
    """The interpreter columns that pair by numpy, per target."""
    pairs: list[Pair] = []
    interp_base = {c[2] for c in base_cols if c[0] == "interpret"}
    interp_cand = {c[2] for c in cand_cols if c[0] == "interpret"}
    targets_base = {c[1] for c in base_cols if c[0] == "interpret"}
    targets_cand = {c[1] for c in cand_cols if c[0] == "interpret"}
    for target in sorted(targets_base & targets_cand, key=str):
        nb = {n for (b, t, n) in base_cols if b == "interpret" and t == target}
        nc = {n for (b, t, n) in cand_cols if b == "interpret" and t == target}
        paired = pair_numpy(nb, nc)
        # A numpy cell of one side that pairs with none of the other's was not compared: the
        # upgrade may break exactly there (a CI job that failed to upload its raw file).
        for side, release, numpys, used in (
            ("baseline", baseline, nb, {b for b, _ in paired}),
            ("candidate", candidate, nc, {c for _, c in paired}),
        ):
            other_side = "candidate" if side == "baseline" else "baseline"
            for numpy in sorted(numpys - used - uninstalled.get(other_side, set()), key=str):
                other = candidate if side == "baseline" else baseline
                out.undecided(
                    f"{Column('interpret', target)} (numpy {numpy}): results for the {side} "
                    f"{release} but none with that numpy for {other}, so not compared",
                    column=str(Column("interpret", target)),
                )
        for b_np, c_np in paired:
            label = str(Column("interpret", target))
            shown = (
                f"{label} (numpy {b_np})" if b_np == c_np else f"{label} (numpy {b_np} vs {c_np})"
            )
            pairs.append((("interpret", target, b_np), ("interpret", target, c_np), shown))
    if interp_base and not interp_cand:
        out.undecidable.append(
            f"the baseline {baseline} has interpreter results and the candidate {candidate} none"
        )
    if interp_cand and not interp_base:
        out.undecidable.append(
            f"the candidate {candidate} has interpreter results and the baseline {baseline} "
            "none: not compared"
        )
    for target in sorted(targets_base ^ targets_cand, key=str):
        if interp_base and interp_cand:
            only = baseline if target in targets_base else candidate
            out.undecided(
                f"{Column('interpret', target)}: recorded for {only} only, so not compared",
                column=str(Column("interpret", target)),
            )
    return pairs


def machines_on_one_side(
    out: Comparison,
    base_runs: Sequence[Run],
    cand_runs: Sequence[Run],
    baseline: Release,
    candidate: Release,
) -> None:
    """A GPU target measured on a device of one side only: undecidable items in ``out``."""
    base_gpus, cand_gpus = gpu_machines(base_runs), gpu_machines(cand_runs)
    for target in sorted(set(base_gpus) & set(cand_gpus), key=str):
        for side, release, names in (
            ("baseline", baseline, base_gpus[target] - cand_gpus[target]),
            ("candidate", candidate, cand_gpus[target] - base_gpus[target]),
        ):
            for name in sorted(names):
                out.undecided(
                    f"{Column('gpu', target)}: the {side} {release} was measured on GPU "
                    f"{name!r}, the other side not: a machine on one side only",
                    column=str(Column("gpu", target)),
                )
