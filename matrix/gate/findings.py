"""What the gate finds: the finding kinds, one finding (``GateFinding``) and everything one
comparison learned (``Comparison``)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from matrix.core import FAILED_TEST_OUTCOMES, TEST_PASSED
from matrix.gate import resource_changes as rc

REGRESSION = "regression"
BREAKING = "breaking-api"
BEHAVIOUR = "behaviour-change"
ACCEPTED = "accepted-change"
# Refused (or absent) on the baseline, anything else on the candidate: new on the candidate,
# never blocking (``fingerprint.relaxation`` is the rule).
RELAXATION = "relaxation"
# A kernel's resource change that the rule (matrix/data/resource_gate.toml) lets pass: named as
# "may slow your kernel", never blocking (``matrix.gate.resource_changes``).
MAY_SLOW = rc.MAY_SLOW_KIND
# An ``aot`` column's change of a values case's TTIR ops whose values the GPU column of the same
# target measured equal on both sides: listed, never blocking (``matrix.gate.lowering``).
LOWERING_EQUAL = "lowering-values-equal"
# Finding kinds that make the upgrade unsafe (exit 1).
UNSAFE_KINDS = (BREAKING, REGRESSION, BEHAVIOUR)

PASSED_TEST = TEST_PASSED
FAILED_TESTS = FAILED_TEST_OUTCOMES


@dataclass
class GateFinding:
    """Something the gate found, with its evidence and, where known, the fix."""

    kind: str
    probe: str
    where: str
    baseline: str | None
    candidate: str | None
    evidence: list[str] = field(default_factory=list)
    fix: str = ""
    reason: str = ""
    uses: list[str] = field(default_factory=list)
    # With a team's code (--scan/--tests): "used" or "may affect" (matrix.gate.usage).
    relevance: str = ""
    # ``path:line`` of scanned uses of this probe that the change is not about (their own case
    # did not change, or a feature guard keeps them off the candidate): the profile's uses on
    # those lines are not tied to it either (matrix.gate.profiled.apply_profile)
    ruled_out: list[str] = field(default_factory=list)
    # A change of a values case's TTIR ops that still blocks: what the GPU column said of it
    # (lowering only and what would decide it, or what changed beside the ops), in words
    # (``matrix.gate.lowering.judge``)
    lowering: str = ""

    def to_dict(self) -> dict[str, Any]:
        """``dataclasses.asdict`` less its deep copy (every field is text, None or a list of
        texts: a copy of each list is the same): a gate writes thousands of findings, and
        asdict's recursion was a tenth of a gate run."""
        return {f.name: _copied(getattr(self, f.name)) for f in fields(self)}


def _copied(value: Any) -> Any:
    return list(value) if isinstance(value, list) else value


@dataclass
class Comparison:
    """Everything the gate learned: findings, what it could not decide, what it compared."""

    findings: list[GateFinding] = field(default_factory=list)
    undecidable: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    compared: list[str] = field(default_factory=list)
    # The team's kernels, one decision per (kernel, launch, target) the baseline compiled
    # (matrix.gate.kernel_compiles.KernelDecision): what the upgrade pages list beside them.
    kernels: list[Any] = field(default_factory=list)
    # The probe (or fingerprint cell) each undecidable item is about, where it is about one:
    # with a team's code, one the code does not use is not a reason to be undecided.
    undecidable_probe: dict[str, str] = field(default_factory=dict)
    # The column (``aot:cuda:90``, ``interpret``) each undecidable item is about, where it is
    # about one: with declared targets, one the team does not run on is not a reason.
    undecidable_column: dict[str, str] = field(default_factory=dict)
    # The team's suite where it could not start, or left test modules it could not import,
    # with the failing imports: gate.md's first screen names them (a suite that could not
    # start is undecidable too; modules that import on neither side are named, not counted).
    suite_problems: list[str] = field(default_factory=list)

    @property
    def unsafe(self) -> list[GateFinding]:
        return [f for f in self.findings if f.kind in UNSAFE_KINDS]

    def undecided(self, text: str, probe: str | None = None, column: str | None = None) -> None:
        """Add an undecidable item, with the probe and the column it is about where known."""
        self.undecidable.append(text)
        if probe is not None:
            self.undecidable_probe[text] = probe
        if column is not None:
            self.undecidable_column[text] = column
