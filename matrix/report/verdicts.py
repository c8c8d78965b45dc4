"""The seed notes' claims with their verdicts, as the pages show them.

``matrix.report.claims`` decides the verdicts; this module sorts them for the pages and turns a
failure of that evaluation (a malformed ``claims.toml``, a bug) into a visible error on the
claims page, which also makes the build exit 1: the pages never silently drop the claims.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from matrix.report import claims as claims_module
from matrix.results import Run

VERDICTS = ("holds", "fails", "partly", "untested")
# Page order: what the matrix contradicts first.
VERDICTS_SHOWN = ("fails", "partly", "holds", "untested")
# Meaning of each verdict on the pages (matrix.catalog.MEANINGS, as matrix cells): a claim the
# matrix contradicts is wrong information, shown like a silently wrong result.
VERDICT_TONES = {"holds": "good", "fails": "wrong", "partly": "changed", "untested": "unmeasured"}


@dataclass(frozen=True)
class ShownClaim:
    """One claim as the pages show it (a copy of ``matrix.report.claims.Verdict``'s fields)."""

    id: str
    note: str
    quote: str
    verdict: str
    evidence: tuple[str, ...]
    reading: str = ""

    @property
    def tone(self) -> str:
        return VERDICT_TONES[self.verdict]

    @property
    def deciding(self) -> list[str]:
        """The evidence lines that decide the verdict, shown first: the disagreeing ones for
        a claim that fails (fully or partly), the agreeing ones for one that holds."""
        prefix = {"fails": "disagrees", "partly": "disagrees", "holds": "agrees"}.get(self.verdict)
        return [e for e in self.evidence if prefix and e.startswith(prefix)]


@dataclass
class ClaimsOutcome:
    """The claims, or the error that kept them from being evaluated."""

    claims: list[ShownClaim] = field(default_factory=list)
    error: str = ""

    @property
    def available(self) -> bool:
        return not self.error

    @property
    def wrong(self) -> list[ShownClaim]:
        """Claims the matrix contradicts, fully or partly."""
        return [c for c in self.claims if c.verdict in ("fails", "partly")]

    def count(self, verdict: str) -> int:
        return sum(c.verdict == verdict for c in self.claims)


def _claim(v: Any, i: int) -> ShownClaim:
    where = f"matrix.report.claims.evaluate()[{i}]"
    for name in ("id", "note", "quote", "verdict", "evidence"):
        if not hasattr(v, name):
            raise TypeError(f"{where}: has no attribute {name!r} (expected a Verdict)")
    if v.verdict not in VERDICTS:
        raise ValueError(f"{where}.verdict: expected one of {VERDICTS}, got {v.verdict!r}")
    return ShownClaim(
        str(v.id),
        str(v.note),
        str(v.quote),
        v.verdict,
        tuple(str(e) for e in v.evidence),
        str(getattr(v, "reading", "") or ""),
    )


def evaluate_claims(
    runs: Sequence[Run],
    evaluate: Callable[[list[Run]], Iterable[Any]] = claims_module.evaluate,
) -> ClaimsOutcome:
    """Verdicts for ``runs``: contradicted claims first, then by (note, id), so that the pages
    lead with what matters and do not depend on the evaluation's order."""
    try:
        shown = [_claim(v, i) for i, v in enumerate(evaluate(list(runs)))]
    except Exception as e:  # shown on the page and exit 1, never a silently empty claims page
        return ClaimsOutcome(error=_describe(e))
    return ClaimsOutcome(
        sorted(shown, key=lambda c: (VERDICTS_SHOWN.index(c.verdict), c.note, c.id))
    )


def _describe(e: BaseException) -> str:
    return "".join(traceback.format_exception_only(type(e), e)).strip()
