"""When two compiles of one kernel (baseline, candidate) "may slow your kernel": the rule.

Its numbers are data (``matrix/data/resource_rules.toml``): compile seconds count only beyond
the noise band the repeats give (the candidate's fastest against the baseline's slowest) and a
minimum; registers only beyond a ratio and a minimum. Spills (local memory) and shared memory
are judged by the gate's own kernel rule (``matrix.gate.kernel_compiles``). No Triton here.

A compile record gives ``compile_seconds`` as a list of samples (``matrix.backends.
compile_time``) or one number; ``registers`` as an int or None (not readable there).

>>> RULES.slowdowns({"registers": 96}, {"registers": 128})
['registers 96 -> 128 per thread']
>>> RULES.slowdowns({"compile_seconds": [1.0, 1.2]}, {"compile_seconds": [1.5, 1.6]})
[]
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matrix.core import DATA_DIR, DataFileError, load_toml, table_keys

RULES_PATH = DATA_DIR / "resource_rules.toml"
# What every finding of this rule starts with on the gate's pages.
MAY_SLOW = "may slow your kernel"


def seconds_band(value: Any) -> tuple[float, float] | None:
    """(fastest, slowest) of a record's compile seconds (a list of samples or one number)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value), float(value)
    if (
        isinstance(value, list)
        and value
        and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
    ):
        return float(min(value)), float(max(value))
    return None


@dataclass(frozen=True)
class ResourceRules:
    repeats: int
    repeat_from: float
    seconds_ratio: float
    min_seconds: float
    registers_ratio: float
    min_registers: int

    def slower_compile(self, base: Any, cand: Any) -> str | None:
        b, c = seconds_band(base), seconds_band(cand)
        if b is None or c is None:
            return None
        fastest, slowest = c[0], b[1]
        if fastest > slowest * self.seconds_ratio and fastest - slowest >= self.min_seconds:
            return f"compile {b[0]:.2f}-{b[1]:.2f} s -> {c[0]:.2f}-{c[1]:.2f} s"
        return None

    def more_registers(self, base: Any, cand: Any) -> str | None:
        if not (isinstance(base, int) and isinstance(cand, int)):
            return None
        if cand > base * self.registers_ratio and cand - base >= self.min_registers:
            return f"registers {base} -> {cand} per thread"
        return None

    def slowdowns(self, base: dict[str, Any], cand: dict[str, Any]) -> list[str]:
        """What grew beyond the rule between two compile records of one kernel and target."""
        found = [
            self.more_registers(base.get("registers"), cand.get("registers")),
            self.slower_compile(base.get("compile_seconds"), cand.get("compile_seconds")),
        ]
        return [f for f in found if f]


def load_rules(path: str | Path = RULES_PATH) -> ResourceRules:
    """The rule of a rules file; a DataFileError names the key at fault."""
    doc = table_keys(path, "", load_toml(path), {"compile_seconds", "registers"})
    secs = table_keys(path, "compile_seconds", doc.get("compile_seconds"),
                      {"repeats", "repeat_from", "ratio", "min_seconds"})  # fmt: skip
    regs = table_keys(path, "registers", doc.get("registers"), {"ratio", "min_registers"})

    def number(table: dict[str, Any], where: str, key: str, low: float, integer: bool) -> Any:
        value = table.get(key)
        kinds = (int,) if integer else (int, float)
        if isinstance(value, bool) or not isinstance(value, kinds) or value < low:
            what = f"{'an integer' if integer else 'a number'} >= {low}"
            raise DataFileError(path, f"{where}.{key}", what, value)
        return value

    return ResourceRules(
        repeats=number(secs, "compile_seconds", "repeats", 1, True),
        repeat_from=float(number(secs, "compile_seconds", "repeat_from", 0, False)),
        seconds_ratio=float(number(secs, "compile_seconds", "ratio", 1, False)),
        min_seconds=float(number(secs, "compile_seconds", "min_seconds", 0, False)),
        registers_ratio=float(number(regs, "registers", "ratio", 1, False)),
        min_registers=number(regs, "registers", "min_registers", 0, True),
    )


RULES = load_rules()
