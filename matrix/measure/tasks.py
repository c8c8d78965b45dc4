"""What a cell observes: one ``Task`` per probe, backend and target of the catalog (or of the
test package ``MATRIX_PROBE_PACKAGE`` names), planned without importing Triton."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matrix.catalog import PROBES, ProbeSpec
from matrix.measure.child import probe_package


@dataclass(frozen=True)
class Task:
    """One probe on one backend (and target): one result."""

    probe: str
    backend: str
    target: str | None
    env: tuple[tuple[str, str], ...] = ()
    isolated: bool = False
    # May its compiles be answered from the cell's kept compile cache (the catalog's
    # ``compile_cache``; aot only)?
    compile_cache: bool = False

    @property
    def key(self) -> tuple[str, str, str | None]:
        return (self.probe, self.backend, self.target)

    def to_json(self, compile_cache: Path | None = None) -> dict[str, Any]:
        """What the child is told; ``compile_cache``: the cell's kept cache, if there is one."""
        told: dict[str, Any] = {"probe": self.probe, "backend": self.backend,
                                "target": self.target}  # fmt: skip
        if self.compile_cache and compile_cache is not None:
            told["compile_cache"] = str(compile_cache)
        return told

    def __str__(self) -> str:
        return f"{self.probe}[{self.backend}{':' + self.target if self.target else ''}]"


def registry() -> tuple[ProbeSpec, ...]:
    """The catalog, or the ``PROBES`` of the package MATRIX_PROBE_PACKAGE names (tests)."""
    package = probe_package()
    if package == "matrix.probes":
        return PROBES
    import importlib

    return tuple(importlib.import_module(package).PROBES)


def plan_tasks(
    specs: Iterable[ProbeSpec], backends: Sequence[str], gpu_target: str | None
) -> list[Task]:
    """Every (probe, backend, target) to observe; gpu rows only where a GPU was found."""
    tasks: list[Task] = []
    for spec in specs:
        for backend in spec.backends:
            if backend not in backends:
                continue
            if backend == "aot":
                targets: Sequence[str | None] = spec.aot_targets
            elif backend == "gpu":
                if gpu_target is None:
                    continue
                targets = (gpu_target,)
            else:
                targets = (None,)
            # Isolation guards a CUDA context; elsewhere a child of its own only costs imports.
            isolated = spec.isolated and backend == "gpu"
            cached = spec.compile_cache and backend == "aot"
            tasks.extend(Task(spec.name, backend, t, spec.env, isolated, cached) for t in targets)
    return tasks
