"""The gate on a team's own kernels: their captured launches compiled on both releases.

Reads each run's ``"kernel_compiles"`` (KERNEL COMPILE records, ``matrix.backends.kernels``)
and pairs them by (kernel, launch key, target):

- compiled on the baseline, ``rejected`` on the candidate: breaking (the compiler's error is
  the evidence);
- compiled on both: a behaviour change, with its numbers, when the candidate loses the
  baseline's matrix-instruction class (wgmma, mma.sync, mfma, wmma), spills where the
  baseline did not (or more), needs more shared memory than ``SHARED_GROWTH`` allows, or
  "may slow your kernel": more registers or slower compiles than ``matrix.backends.
  resource_rules`` lets pass as noise;
- compiled on the baseline and not observed on the candidate (skipped, error, crashed,
  timeout, or the launch not captured there): undecidable;
- rejected on the baseline: a note (nothing is lost by upgrading).

The decisions are made here; ``matrix.gate.compare.compare_kernels`` turns them into the
gate's findings (this module imports ``matrix.gate.sides``, never the comparison).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from matrix.backends.resource_rules import MAY_SLOW
from matrix.backends.resource_rules import RULES as RESOURCE_RULES
from matrix.core import COMPILED, REJECTED
from matrix.gate.sides import DataError, Sides
from matrix.measure.kernel_compiles import coverage, coverage_text
from matrix.results import Run


@dataclass(frozen=True)
class SharedGrowth:
    """Shared memory may grow by ``ratio`` of the baseline or ``bytes``, whichever is larger,
    before the gate calls it a change (a few bytes of a reduction's scratch are not)."""

    ratio: float = 0.10
    bytes: int = 1024

    def exceeded(self, base: int, cand: int) -> bool:
        return cand - base > max(self.ratio * base, self.bytes)


SHARED_GROWTH = SharedGrowth()
MATRIX_CLASSES = frozenset({"tcgen05", "wgmma", "mma.sync", "mfma", "wmma"})

Key = tuple[str, str, str]


def records_of(runs: Sequence[Run]) -> dict[Key, dict[str, Any]] | None:
    """``{(kernel, key, target): record}``; None when no run recorded kernel compiles."""
    table: dict[Key, dict[str, Any]] = {}
    seen = False
    for run in runs:
        recs = run.extra.get("kernel_compiles")
        if recs is None:
            continue
        seen = True
        if not isinstance(recs, list):
            raise DataError(f"run {run.id!r}: 'kernel_compiles' must be a list, got {recs!r}")
        for i, r in enumerate(recs):
            if not isinstance(r, dict) or not all(
                isinstance(r.get(k), str) for k in ("kernel", "key", "target", "status")
            ):
                raise DataError(
                    f"run {run.id!r}: kernel_compiles[{i}]: expected an object with string "
                    f"kernel, key, target and status, got {r!r}"
                )
            table[(r["kernel"], r["key"], r["target"])] = r
    return table if seen else None


def side_coverage(runs: Sequence[Run]) -> dict[str, Any] | None:
    """``matrix.measure.kernel_compiles.coverage`` over the kernel compiles of ``runs`` (one
    side of an upgrade: its aot cell compiles; interpreter-only cells have none), the captured
    specializations counted from their launches; None where no run compiled any."""
    records: list[dict[str, Any]] = []
    keys: set[str] = set()
    seen = False
    for run in runs:
        recs = run.extra.get("kernel_compiles")
        if not isinstance(recs, list):
            continue
        seen = True
        records += [r for r in recs if isinstance(r, dict)]
        keys |= {
            str(launch.get("key"))
            for launch in run.extra.get("launches") or ()
            if isinstance(launch, dict)
        }
    if not seen:
        return None
    keys |= {str(r.get("key")) for r in records}
    return coverage(records, len(keys))


def coverage_line(sides: Sides) -> str:
    """``"baseline 3.4.0: 40 of 42 captured specializations compiled (...); candidate ..."``:
    the words of the matrix's console line (``coverage_text``), per side, for gate.md and the
    pages; "" where neither side compiled a captured kernel."""
    return pair_coverage(sides.base, sides.cand, str(sides.baseline), str(sides.candidate))


def pair_coverage(base: Sequence[Run], cand: Sequence[Run], baseline: str, candidate: str) -> str:
    """``coverage_line`` of two sides given as their runs."""
    parts = []
    for label, release, runs in (("baseline", baseline, base), ("candidate", candidate, cand)):
        cov = side_coverage(runs)
        if cov is not None:
            parts.append(f"{label} {release}: {coverage_text(cov)}")
    return "; ".join(parts)


def _first_line(text: str, limit: int = 300) -> str:
    lines = [ln for ln in str(text).splitlines() if ln.strip()]
    # A Triton CompilationError puts its reason last, after the source excerpt.
    picked = lines[-1] if len(lines) > 1 else (lines[0] if lines else "")
    return " ".join(picked.split())[:limit]


def _changes(b: dict[str, Any], c: dict[str, Any]) -> list[str]:
    """What got worse between two successful compiles, each with its numbers."""
    out = []
    b_class = b.get("instruction_class")
    if b_class in MATRIX_CLASSES and b_class not in (c.get("classes") or []):
        out.append(f"instruction class {b_class} lost: now {c.get('instruction_class')}")
    b_sp, c_sp = b.get("spills"), c.get("spills")
    if isinstance(b_sp, int) and isinstance(c_sp, int) and c_sp > b_sp:
        out.append(
            f"spills {b_sp} -> {c_sp} bytes (registers {b.get('registers')} -> "
            f"{c.get('registers')})"
        )
    b_sh, c_sh = b.get("shared"), c.get("shared")
    if isinstance(b_sh, int) and isinstance(c_sh, int) and SHARED_GROWTH.exceeded(b_sh, c_sh):
        out.append(f"shared memory {b_sh} -> {c_sh} bytes")
    # Registers and compile seconds beyond their noise band and minimum (the rule's data:
    # matrix/data/resource_rules.toml); below it nothing is said.
    out.extend(f"{MAY_SLOW}: {s}" for s in RESOURCE_RULES.slowdowns(b, c))
    return out


def finding_name(kernel: str) -> str:
    """The name the gate's findings give ``kernel`` (``pkg.mod:fn``)."""
    return f"kernel {kernel}"


# What the gate decided for one (kernel, launch, target) of an upgrade.
BREAKS, CHANGES, UNDECIDABLE, IMPROVES, SAME, NOT_COMPILED = (
    "breaking",
    "behaviour-change",
    "undecidable",
    "improved",
    "no finding",
    "not compiled on the baseline",
)


@dataclass(frozen=True)
class KernelDecision:
    """The gate's decision for one captured launch on one target (module docstring): what the
    report's upgrade pages show beside each kernel, so that they never re-derive the rule."""

    kernel: str
    key: str
    target: str
    decision: str  # BREAKS, CHANGES, UNDECIDABLE, IMPROVES, SAME or NOT_COMPILED
    reasons: tuple[str, ...]  # the numbers of a change, the why of an undecidable
    base: dict[str, Any] | None
    cand: dict[str, Any] | None

    @property
    def name(self) -> str:
        return finding_name(self.kernel)

    @property
    def where(self) -> str:
        return f"aot:{self.target}"


def decide_kernels(sides: Sides) -> list[KernelDecision] | None:
    """A decision per (kernel, key, target) the baseline recorded, sorted; None when the
    baseline recorded no kernel compiles, [] when only the candidate did not."""
    candidate = sides.candidate
    base, cand = records_of(sides.base), records_of(sides.cand)
    if base is None or cand is None:
        return None
    out = []
    for k in sorted(base):
        b, c = base[k], cand.get(k)
        reasons: tuple[str, ...] = ()
        if b["status"] != COMPILED:
            improved = b["status"] == REJECTED and c is not None and c["status"] == COMPILED
            decision = IMPROVES if improved else NOT_COMPILED
        elif c is None:
            decision, reasons = UNDECIDABLE, (f"not captured on {candidate}",)
        elif c["status"] == REJECTED:
            decision, reasons = BREAKS, (_first_line(c.get("detail", "")),)
        elif c["status"] != COMPILED:
            decision = UNDECIDABLE
            reasons = (f"`{c['status']}` on {candidate}: {_first_line(c.get('detail', ''))}",)
        else:
            reasons = tuple(_changes(b, c))
            decision = CHANGES if reasons else SAME
        out.append(KernelDecision(k[0], k[1], k[2], decision, reasons, b, c))
    return out
