"""Resource rows on the performance page: what each of this project's kernels uses, compiled
ahead of time for each target, release by release (no GPU).

Read from the aot rows of the probes that compile this project's kernels (splitk, tiled: one
record per variant, ``matrix.probes.support.matmul.resource_row``): registers per thread,
local memory per thread (where spills live), shared memory, the strongest matrix instruction
and the compile seconds with their samples. One row per kernel (probe and variant) and target;
one cell per release. A cell is highlighted against the previous release that compiled the
kernel, where the gate's rule says a measure moved (``matrix.gate.resource_changes.changes``:
the same decision as the gate's "may slow your kernel"). Compile seconds timed once (a compile
under the rule's ``repeat_from``) are shown as "one sample, no noise band", never as a change.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from matrix.backends.resource_rules import seconds_band
from matrix.core import release_key
from matrix.gate import resource_changes as rc
from matrix.results import Run

BACKEND = "aot"


@dataclass(frozen=True)
class ResourceCell:
    release: str
    record: dict[str, Any]
    # Against the previous release that compiled this kernel for this target (none: first).
    changes: tuple[rc.Change, ...] = ()
    previous: str = ""

    def _int(self, key: str) -> int | None:
        value = self.record.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    @property
    def registers(self) -> int | None:
        return self._int("registers")

    @property
    def local_bytes(self) -> int | None:
        value = rc.local_bytes(self.record)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    @property
    def shared(self) -> int | None:
        return self._int("shared")

    @property
    def instruction(self) -> str:
        """The matrix instructions seen in the assembly (``mma.sync``, ``wgmma``, ...)."""
        found = self.record.get("matrix_instructions")
        return ", ".join(found) if isinstance(found, list) and found else "no MMA"

    @property
    def seconds(self) -> str:
        band = seconds_band(self.record.get("compile_seconds"))
        if band is None:
            return "not timed"
        if rc.samples(self.record.get("compile_seconds")) < 2:
            return f"{band[0]:.2f} s"
        return f"{band[0]:.2f}-{band[1]:.2f} s"

    @property
    def one_sample(self) -> bool:
        return rc.samples(self.record.get("compile_seconds")) == 1

    @property
    def worse(self) -> list[rc.Change]:
        return [c for c in self.changes if c.worse]

    @property
    def better(self) -> list[rc.Change]:
        return [c for c in self.changes if not c.worse]

    @property
    def meaning(self) -> str:
        """The chip's tone: a growth the rule names ("regression"), only shrinkage ("good")."""
        return "regression" if self.worse else ("good" if self.better else "neutral")

    def changed(self, measure: str) -> str:
        """Whether ``measure`` got "worse" or "better" here, or "" where it did not move."""
        for c in self.changes:
            if c.measure == measure:
                return "worse" if c.worse else "better"
        return ""

    @property
    def title(self) -> str:
        parts = [
            f"registers {self.registers}, local memory {self.local_bytes} B, "
            f"shared {self.shared} B, {self.instruction}; compile {self.seconds}"
            + (f" ({rc.ONE_SAMPLE})" if self.one_sample else "")
        ]
        if self.changes:
            parts.append(f"against {self.previous}: " + "; ".join(c.said for c in self.changes))
        return "; ".join(parts)


@dataclass
class ResourceRow:
    kernel: str  # "splitk (fused)"
    target: str
    cells: dict[str, ResourceCell] = field(default_factory=dict)

    @property
    def flagged(self) -> int:
        return sum(bool(c.worse) for c in self.cells.values())


@dataclass
class ResourceView:
    releases: list[str]
    rows: list[ResourceRow]

    @property
    def newest_first(self) -> list[str]:
        return list(reversed(self.releases))

    @property
    def counts(self) -> dict[str, int]:
        cells = [c for row in self.rows for c in row.cells.values()]
        return {
            "may_slow": sum(bool(c.worse) for c in cells),
            "blocking": sum(any(ch.blocks() for ch in c.worse) for c in cells),
            "improved": sum(bool(c.better) and not c.worse for c in cells),
            "one_sample": sum(c.one_sample for c in cells),
            "cells": len(cells),
        }


def records(runs: Iterable[Run]) -> dict[tuple[str, str], dict[str, dict[str, Any]]]:
    """``{(kernel, target): {release: record}}`` from the aot rows of ``runs`` (the first run of
    a release that holds one; every numpy cell compiles the same kernel)."""
    out: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    for run in runs:
        release = str(run.release) if run.release is not None else None
        if release is None:
            continue
        for res in run.results:
            if res.backend != BACKEND or res.target is None:
                continue
            for variant, rec in rc.variant_rows(res.data).items():
                kernel = f"{res.probe} ({variant})"
                out.setdefault((kernel, res.target), {}).setdefault(release, rec)
    return out


def build_view(runs: Sequence[Run]) -> ResourceView | None:
    """The rows of every kernel the aot rows compiled; None where no run recorded any."""
    table = records(runs)
    if not table:
        return None
    releases = sorted({r for per in table.values() for r in per}, key=release_key)
    rows = []
    for (kernel, target), per in sorted(table.items()):
        row = ResourceRow(kernel, target)
        prev: tuple[str, dict[str, Any]] | None = None
        for r in releases:
            rec = per.get(r)
            if rec is None:
                continue
            found = tuple(rc.changes(prev[1], rec)) if prev is not None else ()
            row.cells[r] = ResourceCell(r, rec, found, prev[0] if prev else "")
            prev = (r, rec)
        rows.append(row)
    return ResourceView(releases, rows)
