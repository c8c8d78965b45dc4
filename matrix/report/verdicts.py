"""The seed notes' claims with their verdicts, from ``matrix.report.claims`` when it is there.

``matrix.report.claims`` is written separately; the report imports it lazily so that the pages still
build (with a visible "claims not available" notice) before it exists. Only the absence of the
module itself is tolerated: an error inside it is shown on the page and makes the build fail.
"""

from __future__ import annotations

import importlib
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from matrix.measure.results import Run

CLAIMS_MODULE = "matrix.report.claims"
VERDICTS = ("holds", "fails", "partly", "untested")
# Page order: what the matrix contradicts first.
VERDICTS_SHOWN = ("fails", "partly", "holds", "untested")
# Colour family of each verdict on the pages (same tones as matrix cells).
VERDICT_TONES = {"holds": "good", "fails": "bad", "partly": "neutral", "untested": "skipped"}


@dataclass(frozen=True)
class Claim:
    """One claim as the pages show it (a copy of ``matrix.report.claims.Verdict``'s fields)."""

    id: str
    note: str
    quote: str
    verdict: str
    evidence: tuple[str, ...]

    @property
    def tone(self) -> str:
        return VERDICT_TONES[self.verdict]


@dataclass
class ClaimsOutcome:
    """The claims, or why there are none: ``missing`` (no module yet) or ``error`` (it broke)."""

    claims: list[Claim] = field(default_factory=list)
    missing: str = ""
    error: str = ""

    @property
    def available(self) -> bool:
        return not (self.missing or self.error)

    @property
    def wrong(self) -> list[Claim]:
        """Claims the matrix contradicts, fully or partly."""
        return [c for c in self.claims if c.verdict in ("fails", "partly")]

    def count(self, verdict: str) -> int:
        return sum(c.verdict == verdict for c in self.claims)


def _claim(v: Any, i: int) -> Claim:
    where = f"{CLAIMS_MODULE}.evaluate()[{i}]"
    for name in ("id", "note", "quote", "verdict", "evidence"):
        if not hasattr(v, name):
            raise TypeError(f"{where}: has no attribute {name!r} (expected a Verdict)")
    if v.verdict not in VERDICTS:
        raise ValueError(f"{where}.verdict: expected one of {VERDICTS}, got {v.verdict!r}")
    return Claim(str(v.id), str(v.note), str(v.quote), v.verdict, tuple(str(e) for e in v.evidence))


def evaluate_claims(
    runs: Sequence[Run], importer: Callable[[str], Any] = importlib.import_module
) -> ClaimsOutcome:
    """Verdicts for ``runs``: contradicted claims first, then by (note, id), so that the pages
    lead with what matters and do not depend on the module's order."""
    try:
        module = importer(CLAIMS_MODULE)
    except ModuleNotFoundError as e:
        if e.name != CLAIMS_MODULE:
            return ClaimsOutcome(error=_describe(e))
        return ClaimsOutcome(missing=f"{CLAIMS_MODULE} (matrix/report/claims.py) is not there yet")
    except Exception as e:
        return ClaimsOutcome(error=_describe(e))
    try:
        claims = [_claim(v, i) for i, v in enumerate(module.evaluate(list(runs)))]
    except Exception as e:
        return ClaimsOutcome(error=_describe(e))
    return ClaimsOutcome(
        sorted(claims, key=lambda c: (VERDICTS_SHOWN.index(c.verdict), c.note, c.id))
    )


def _describe(e: BaseException) -> str:
    return "".join(traceback.format_exception_only(type(e), e)).strip()
