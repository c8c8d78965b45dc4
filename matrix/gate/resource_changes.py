"""Resource changes of one kernel between two releases: "may slow your kernel", and whether
that blocks.

One compile record (a team's captured kernel: ``matrix.backends.kernels``; a variant of this
project's splitk/tiled aot rows: ``matrix.probes.support.matmul.resource_row``) has registers,
local memory (``local_bytes``, where spills live; team records also call it ``spills``), shared
memory and compile seconds (samples). ``changes`` compares two such records measure by measure:

- registers and compile seconds beyond the noise rule of ``matrix/data/resource_rules.toml``
  (``matrix.backends.resource_rules``), in either direction; compile seconds only where both
  sides were compiled more than once (one sample has no noise band: not a change);
- local memory: any growth or shrinkage;
- shared memory: beyond ``matrix.gate.kernel_compiles.SHARED_GROWTH``.

Whether a change that grew blocks the verdict is data, per scope (a team's captured kernels,
this project's kernels): ``matrix/data/resource_gate.toml`` (``BLOCKS``). Nothing here imports
Triton or the gate's comparison.

>>> [c.text for c in changes({"registers": 96}, {"registers": 128})]
['registers 96 -> 128 per thread']
>>> changes({"compile_seconds": [0.3]}, {"compile_seconds": [4.0]})
[]
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matrix.backends.resource_rules import MAY_SLOW, seconds_band
from matrix.backends.resource_rules import RULES as RESOURCE_RULES
from matrix.core import DATA_DIR, DataFileError, load_toml, table_keys
from matrix.gate.kernel_compiles import SHARED_GROWTH

GATE_PATH = DATA_DIR / "resource_gate.toml"
MEASURES = ("registers", "spills", "shared", "compile_seconds")
# The gate's finding kind for a resource change the rule does not let block: listed under its
# own heading, never making the verdict unsafe (a change that blocks is a behaviour change).
MAY_SLOW_KIND = "may-slow"
ONE_SAMPLE = "one sample, no noise band"


SCOPES = ("team_kernels", "project_kernels")
TEAM, PROJECT = SCOPES


def load_blocks(path: str | Path = GATE_PATH) -> dict[str, dict[str, bool]]:
    """``{scope: {measure: blocks}}`` for both ``SCOPES`` and every measure of ``MEASURES``;
    a DataFileError names the key at fault."""
    doc = table_keys(path, "", load_toml(path), {"blocks"})
    scopes = table_keys(path, "blocks", doc.get("blocks"), set(SCOPES))
    out: dict[str, dict[str, bool]] = {}
    for scope in SCOPES:
        where = f"blocks.{scope}"
        table = table_keys(path, where, scopes.get(scope), set(MEASURES))
        for m in MEASURES:
            if not isinstance(table.get(m), bool):
                raise DataFileError(path, f"{where}.{m}", "true or false", table.get(m))
        out[scope] = {m: table[m] for m in MEASURES}
    return out


BLOCKS = load_blocks()


@dataclass(frozen=True)
class Change:
    """One measure of one kernel that moved beyond its rule between two compiles."""

    measure: str  # one of MEASURES
    before: str  # the baseline's number(s), as shown
    after: str
    text: str  # "registers 96 -> 128 per thread"
    worse: bool  # it grew (may slow the kernel); False: it shrank

    def blocks(
        self, scope: str = PROJECT, rule: Mapping[str, Mapping[str, bool]] | None = None
    ) -> bool:
        """Whether this change makes the verdict unsafe for a kernel of ``scope`` (only a
        growth ever does)."""
        return self.worse and (BLOCKS if rule is None else rule)[scope][self.measure]

    @property
    def said(self) -> str:
        """The gate's words: ``may slow your kernel: registers 96 -> 128 per thread``."""
        return f"{MAY_SLOW}: {self.text}" if self.worse else f"improved: {self.text}"


def samples(value: Any) -> int:
    """How many compile-time samples a record holds (a list, or one number)."""
    if isinstance(value, list):
        return len(value)
    return 0 if seconds_band(value) is None else 1


def local_bytes(record: Mapping[str, Any]) -> Any:
    """Local memory per thread: ``local_bytes`` (the aot rows), else ``spills`` (team records)."""
    value = record.get("local_bytes")
    return value if value is not None else record.get("spills")


def _ints(b: Any, c: Any) -> bool:
    return all(isinstance(v, int) and not isinstance(v, bool) for v in (b, c))


def _band(value: Any) -> str:
    band = seconds_band(value)
    assert band is not None
    return f"{band[0]:.2f}-{band[1]:.2f} s" if band[0] != band[1] else f"{band[0]:.2f} s"


def _registers(b: Any, c: Any) -> Iterator[Change]:
    if not _ints(b, c):
        return
    if RESOURCE_RULES.more_registers(b, c):
        yield Change("registers", str(b), str(c), f"registers {b} -> {c} per thread", True)
    elif RESOURCE_RULES.more_registers(c, b):
        yield Change("registers", str(b), str(c), f"registers {b} -> {c} per thread", False)


def _spills(b: Any, c: Any) -> Iterator[Change]:
    if _ints(b, c) and b != c:
        text = f"local memory (spills) {b} -> {c} bytes per thread"
        yield Change("spills", str(b), str(c), text, c > b)


def _shared(b: Any, c: Any) -> Iterator[Change]:
    if not _ints(b, c):
        return
    if SHARED_GROWTH.exceeded(b, c) or SHARED_GROWTH.exceeded(c, b):
        yield Change("shared", str(b), str(c), f"shared memory {b} -> {c} bytes", c > b)


def _seconds(b: Any, c: Any) -> Iterator[Change]:
    if samples(b) < 2 or samples(c) < 2:
        return  # ONE_SAMPLE: a compile under the rule's repeat_from is timed once
    text = f"compile {_band(b)} -> {_band(c)}"
    if RESOURCE_RULES.slower_compile(b, c):
        yield Change("compile_seconds", _band(b), _band(c), text, True)
    elif RESOURCE_RULES.slower_compile(c, b):
        yield Change("compile_seconds", _band(b), _band(c), text, False)


def changes(base: Mapping[str, Any], cand: Mapping[str, Any]) -> list[Change]:
    """Every measure that moved beyond its rule from ``base`` to ``cand`` (module docstring)."""
    return [
        *_registers(base.get("registers"), cand.get("registers")),
        *_spills(local_bytes(base), local_bytes(cand)),
        *_shared(base.get("shared"), cand.get("shared")),
        *_seconds(base.get("compile_seconds"), cand.get("compile_seconds")),
    ]


def variant_rows(data: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    """``{variant: record}`` of a project aot result's ``data`` (splitk/tiled: pointer,
    descriptor, fused) that carry resource numbers; a variant that did not compile has none."""
    out: dict[str, dict[str, Any]] = {}
    for name, rec in (data or {}).items():
        if isinstance(rec, dict) and "error" not in rec and "compile_seconds" in rec:
            out[str(name)] = rec
    return out


# Where a team kernel's rule (matrix.gate.kernel_compiles._changes) says a measure, the words
# its reason starts with: the one place the gate reads the measure back from that text.
_REASON_STARTS = (
    (f"{MAY_SLOW}: registers", "registers"),
    (f"{MAY_SLOW}: compile", "compile_seconds"),
    ("spills", "spills"),
    ("shared memory", "shared"),
)


def measure_of(reason: str) -> str | None:
    """The measure a team kernel's change reason is about; None for one that is not a resource
    (a lost instruction class), which always blocks."""
    for start, measure in _REASON_STARTS:
        if reason.startswith(start):
            return measure
    return None


def reason_blocks(reason: str, rule: Mapping[str, Mapping[str, bool]] | None = None) -> bool:
    """Whether a team kernel's change reason blocks (a growth: that rule names only growths)."""
    measure = measure_of(reason)
    return measure is None or (BLOCKS if rule is None else rule)[TEAM][measure]
