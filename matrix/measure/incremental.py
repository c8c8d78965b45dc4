"""Which probes a recorded cell still lacks: a new probe costs only itself, not a full redo.

A raw file records, beside its results, a hash of each probe it measured
(``probe_hashes``: name -> 16 hex digits of the probe's sources, its module and every module
of ours it imports with the data files they name, and its catalog row). A
cell is *stale* for a probe of the current catalog when

- the probe has a task (backend, target) in the cell with no result (a probe added to the
  catalog, a new target), or
- the recorded hash differs from the current one (the probe's code or row changed).

A recorded result with no hash at all was measured before hashes were kept (every raw file
committed before this module existed): its probe's source then is not known, so it counts as
current ("unknown, kept"), and ``verify`` says how many cells are in that state. Such a cell
gets hashes as soon as one of its probes is measured again (``--probes NAME`` or ``--force``).

What the hash does not see: helpers shared between probes (``matrix/probes/support``), the
kernels and data files a probe reads (``fingerprint.toml``). After changing those, re-measure
the probes that use them with ``--probes NAME,...`` (or everything with ``--force``).

>>> from matrix.results import Result, Run
>>> from matrix.catalog import ProbeSpec
>>> specs = [ProbeSpec("a", "a", ("pass",), ("interpret",)),
...          ProbeSpec("b", "b", ("pass",), ("interpret",))]
>>> run = Run(id="x", results=[Result("a", "interpret", None, "pass")])
>>> staleness(run, specs, {"a": "1", "b": "2"}).missing
('b',)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from matrix.catalog import ProbeSpec
from matrix.measure.cell_env import gpu_target_of
from matrix.measure.child import probe_package
from matrix.measure.probe_hashes import catalog_hashes, recorded_hashes
from matrix.measure.tasks import plan_tasks, registry
from matrix.results import Run


@dataclass(frozen=True)
class Staleness:
    """What a recorded cell lacks against the current catalog (probe names, catalog order)."""

    missing: tuple[str, ...] = ()  # a task of the probe has no result in the cell
    changed: tuple[str, ...] = ()  # the recorded hash is not the current one
    unknown: tuple[str, ...] = ()  # results without a recorded hash: kept as current

    @property
    def stale(self) -> tuple[str, ...]:
        """The probes to measure (again) to bring the cell up to the catalog."""
        return self.missing + self.changed

    def describe(self) -> str:
        parts = []
        if self.missing:
            parts.append(f"lacks {', '.join(self.missing)}")
        if self.changed:
            parts.append(f"{', '.join(self.changed)} changed since measured")
        return "; ".join(parts)


def cell_backends(run: Run) -> tuple[str, ...]:
    """The backends a recorded cell ran: those its results name (a cell records every probe
    on each of its backends, so any one result shows that the backend ran there)."""
    return tuple(dict.fromkeys(r.backend for r in run.results))


def expected_keys(
    run: Run, specs: Iterable[ProbeSpec], backends: Sequence[str] | None = None
) -> dict[str, set[tuple[str, str, str | None]]]:
    """Per probe, the (probe, backend, target) results the cell should hold."""
    gpu = run.env.get("gpu")
    chosen = cell_backends(run) if backends is None else tuple(backends)
    keys: dict[str, set[tuple[str, str, str | None]]] = {}
    for task in plan_tasks(specs, chosen, gpu_target_of(gpu) if isinstance(gpu, dict) else None):
        keys.setdefault(task.probe, set()).add(task.key)
    return keys


def staleness(
    run: Run,
    specs: Sequence[ProbeSpec],
    hashes: Mapping[str, str],
    backends: Sequence[str] | None = None,
) -> Staleness:
    """What ``run`` lacks against ``specs`` (with their current ``hashes``), on ``backends``
    (default: the backends its results show). A cell that recorded no results (its install
    failed) lacks nothing here: the install decides it."""
    if not run.results:
        return Staleness()
    have = {r.key for r in run.results}
    recorded = recorded_hashes(run)
    missing, changed, unknown = [], [], []
    for name, keys in expected_keys(run, specs, backends).items():
        if not keys <= have:
            missing.append(name)
        elif name not in recorded:
            unknown.append(name)
        elif recorded[name] != hashes.get(name):
            changed.append(name)
    return Staleness(tuple(missing), tuple(changed), tuple(unknown))


@dataclass(frozen=True)
class Catalog:
    """The probes a run measures now (the catalog, or a test's fixture package), hashed."""

    specs: tuple[ProbeSpec, ...]
    hashes: dict[str, str]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.specs)


def current_catalog() -> Catalog:
    """The runner's registry (``MATRIX_PROBE_PACKAGE`` included) with each probe's hash."""
    specs = tuple(registry())
    return Catalog(specs, catalog_hashes(specs, probe_package()))


def parse_probe_names(value: str, catalog: Catalog) -> tuple[str, ...]:
    """``"splitk, fp"`` -> ``("splitk", "fp")``; a name the catalog lacks raises ValueError."""
    names = tuple(dict.fromkeys(n.strip() for n in value.split(",") if n.strip()))
    unknown = [n for n in names if n not in catalog.names]
    if unknown or not names:
        raise ValueError(
            f"--probes: unknown probe(s) {unknown or [value]}; known: {', '.join(catalog.names)}"
        )
    return names


def redo_plan(
    run: Run, backends: Sequence[str], catalog: Catalog, forced: Sequence[str] = ()
) -> tuple[tuple[str, ...], str]:
    """For a recorded cell: the probes to measure (again) and why, ``((), "")`` when it is up
    to date. ``forced`` (the matrix's ``--probes``) is measured again whatever was recorded."""
    found = staleness(run, catalog.specs, catalog.hashes, backends)
    here = expected_keys(run, catalog.specs, backends)
    forced = tuple(n for n in forced if n in here)  # a probe with no task here costs nothing
    redo = tuple(dict.fromkeys((*found.stale, *forced)))
    why = "; ".join(filter(None, [found.describe(),
                                  f"--probes {','.join(forced)}" if forced else ""]))  # fmt: skip
    return redo, why
