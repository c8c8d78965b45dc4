"""The gate's report: what it decided (``GateReport``) and why, the verdicts and exit codes,
and the sections its findings are listed in; rendered by ``matrix.gate.markdown`` and as JSON."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from matrix.analyze.profile import Profile
from matrix.analyze.profile.declaration import Declaration
from matrix.exitcodes import ExitCode
from matrix.gate import compare as gc
from matrix.gate import summary

EXIT_SAFE, EXIT_UNSAFE, EXIT_UNDECIDABLE = ExitCode.OK, ExitCode.FAILED, ExitCode.UNDECIDABLE
VERDICTS: dict[int, str] = {
    EXIT_SAFE: "SAFE",
    EXIT_UNSAFE: "UNSAFE",
    EXIT_UNDECIDABLE: "UNDECIDABLE",
}


SECTIONS = (
    (gc.BREAKING, "Breaking API"),
    (gc.REGRESSION, "Regressions"),
    (gc.BEHAVIOUR, "Behaviour changes, not acknowledged"),
    (gc.ACCEPTED, "Behaviour changes, acknowledged"),
    (gc.RELAXATION, "New on the candidate (relaxations, never blocking)"),
    (gc.MAY_SLOW, "May slow your kernel (resources, not blocking: matrix/data/resource_gate.toml)"),
    (gc.LOWERING_EQUAL, "Lowering changed, values equal on the GPU (never blocking)"),
)


@dataclass
class GateReport:
    """What the gate decided and why; rendered as Markdown and JSON."""

    baseline: str | None
    candidate: str | None
    results: str | None
    exit_code: int = EXIT_UNDECIDABLE
    errors: list[str] = field(default_factory=list)
    comparison: gc.Comparison = field(default_factory=gc.Comparison)
    scanned: list[str] = field(default_factory=list)
    scan_findings: list[dict[str, Any]] = field(default_factory=list)
    accepted_file: str = ""
    # With a team's code (--scan/--tests): its usage profile, and what changed that it does
    # not use (never blocking) or that the candidate fixed where it does (never blocking).
    profile: Profile | None = None
    unused: list[gc.GateFinding] = field(default_factory=list)
    unused_undecidable: list[str] = field(default_factory=list)
    fixed: list[gc.GateFinding] = field(default_factory=list)
    coverage: str = ""  # "N of M captured specializations compiled", per side
    # Each blocking (or acknowledged, or fixed) finding with the profile's uses it maps onto:
    # what the pages lay out kernel by kernel.
    tied: list[tuple[gc.GateFinding, list[Any]]] = field(default_factory=list)
    # acknowledgements for this upgrade that matched nothing (never blocking; listed)
    stale_accepted: list[str] = field(default_factory=list)
    # The team's declaration ([tool.triton-compat]: targets, dtypes); Declaration() when none.
    # The profile's type inference reads its dtypes (``declaration.dtypes_of``).
    declaration: Declaration = field(default_factory=Declaration)
    # What changed only in columns outside the declared targets (never blocking).
    off_target: list[gc.GateFinding] = field(default_factory=list)
    off_target_undecidable: list[str] = field(default_factory=list)
    # Changes that only add a warning (``policy.split_notices``): listed, never blocking.
    notices: list[gc.GateFinding] = field(default_factory=list)
    # Findings that only say how an API the candidate removed behaves, with the removal they
    # follow from (``matrix.gate.roots``): listed under it, never a reason of their own.
    folded: list[tuple[gc.GateFinding, gc.GateFinding]] = field(default_factory=list)
    # Lowering changes that follow from a result-dtype change of the same operation at the
    # same lines, with it (``matrix.gate.lowering.fold_dtype``): listed under it.
    folded_dtype: list[tuple[gc.GateFinding, gc.GateFinding]] = field(default_factory=list)
    # Why each "may affect" finding may (by identity): what decides it when no use says.
    may_why: dict[int, str] = field(default_factory=dict)
    _entries: tuple[Any, list[summary.Entry]] | None = field(default=None, repr=False)

    def blocking(self) -> list[summary.Entry]:
        """The blocking findings as entries, one per change x kernel (``matrix.gate.summary``);
        gate.md and gate.json both ask, once the report is decided: kept while the findings
        and their ties are the same lists."""
        key = (id(self.comparison.findings), len(self.comparison.findings), len(self.tied))
        if self._entries is None or self._entries[0] != key:
            entries = summary.entries(
                self.comparison.findings, self.tied, self.may_why,
                [*self.folded, *self.folded_dtype],
            )  # fmt: skip
            self._entries = (key, entries)
        return self._entries[1]

    @property
    def verdict(self) -> str:
        return VERDICTS[self.exit_code]

    def decide(self) -> int:
        """Unsafe if proven unsafe; else undecidable if something is unknown; else safe."""
        if self.errors:
            self.exit_code = EXIT_UNDECIDABLE
        elif self.comparison.unsafe:
            self.exit_code = EXIT_UNSAFE
        elif self.comparison.undecidable or not self.comparison.compared:
            if not self.comparison.compared and not self.comparison.undecidable:
                self.comparison.undecidable.append("nothing was compared")
            self.exit_code = EXIT_UNDECIDABLE
        else:
            self.exit_code = EXIT_SAFE
        return self.exit_code

    def to_dict(self) -> dict[str, Any]:
        c = self.comparison
        return {
            "verdict": self.verdict.lower(),
            "exit_code": self.exit_code,
            "baseline": self.baseline,
            "candidate": self.candidate,
            "results": self.results,
            "errors": self.errors,
            "findings": [f.to_dict() for f in c.findings],
            "undecidable": c.undecidable,
            "suite_problems": c.suite_problems,
            "notes": c.notes,
            "compared": c.compared,
            "scanned": self.scanned,
            "scan_findings": self.scan_findings,
            "profile": self.profile.to_dict() if self.profile is not None else None,
            "not_used": [f.to_dict() for f in self.unused],
            "not_used_undecidable": self.unused_undecidable,
            "fixed_used": [f.to_dict() for f in self.fixed],
            "coverage": self.coverage,
            "stale_accepted": self.stale_accepted,
            "counts": summary.counts(self, blocking := self.blocking()),
            "blocking": [e.to_dict() for e in blocking],
            "may_affect_kernels": (
                summary.may_affect_kernels(blocking, self.profile.uses)
                if self.profile is not None
                else None
            ),
            "relaxations": [f.to_dict() for f in c.findings if f.kind == gc.RELAXATION],
            "new_warnings": [f.to_dict() for f in self.notices],
            "follows_from_removed": [
                {**f.to_dict(), "root": root.probe, "root_where": root.where}
                for f, root in self.folded
            ],
            "targets": list(self.declaration.targets or []) or None,
            "targets_inferred": (
                self.declaration.inferred.to_dict() if self.declaration.inferred else None
            ),
            "declaration": self.declaration.source or None,
            "follows_from_dtype": [
                {**f.to_dict(), "root": root.probe, "root_where": root.where}
                for f, root in self.folded_dtype
            ],
            "lowering_values_equal": [
                f.to_dict() for f in c.findings if f.kind == gc.LOWERING_EQUAL
            ],
            # what open element types were assumed to be (nothing decided them), said once
            "open_types": (
                {"assumed": len(self.profile.assumed), "assumption": self.profile.assumption}
                if self.profile is not None
                else None
            ),
            "not_on_targets": [f.to_dict() for f in self.off_target],
            "not_on_targets_undecidable": self.off_target_undecidable,
        }
