"""The GPU legs' kernel timings: each captured launch timed on both sides, and the noise rule that
says whether a slowdown blocks (``slowdown_verdict``; docs/gpu-legs.md).

Pairing and labelling the two sides' tests, the verdict and gate.md are ``matrix.gate.legs``.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

DEFAULT_SLOWDOWN_MIN = 0.10


# Above the largest gap between the two sides' medians of an unchanged kernel measured on an
# H100 (0.06 us over 57 launches of 1.2-11 us, Triton 3.5.1 vs 3.6.0, session 13): below it
# a sub-microsecond kernel's "slowdown" of more than 10% is the clock, not the compile.
DEFAULT_SLOWDOWN_FLOOR_US = 0.1


@dataclass(frozen=True)
class SlowdownRule:
    """When a kernel's slowdown blocks: relative ``minimum``, absolute ``floor_us``; the
    noise of both sides' rounds is measured per launch (``slowdown_verdict``)."""

    minimum: float = DEFAULT_SLOWDOWN_MIN
    floor_us: float = DEFAULT_SLOWDOWN_FLOOR_US


@dataclass
class KernelTiming:
    """One captured launch timed on both sides, and what the noise rule says of it."""

    key: str
    kernel: str
    test: str
    shapes: Any
    base_us: float | None
    cand_us: float | None
    base_noise: float | None
    cand_noise: float | None
    change: float | None  # cand / base - 1
    verdict: str  # "slower" (blocks), "within noise", "faster", "not timed"
    detail: str = ""
    resources: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def slowdown_verdict(
    base_rounds: Sequence[float], cand_rounds: Sequence[float], rule: SlowdownRule
) -> tuple[float, float, str]:
    """(change, the threshold it was held to, verdict). The candidate's median over the
    baseline's, less 1; it is ``slower`` (blocks) only above both ``rule.minimum`` and the
    noise of the two sides added (``noise_of``: each side's spread of its rounds over their
    median, a straggler round left out), and only where the medians differ by more than
    ``rule.floor_us``; ``faster`` is held to the same bounds."""
    from matrix.measure.kernel_timing import noise_of

    base, cand = statistics.median(base_rounds), statistics.median(cand_rounds)
    change = cand / base - 1 if base > 0 else 0.0
    threshold = max(rule.minimum, noise_of(base_rounds) + noise_of(cand_rounds))
    beyond_floor = abs(cand - base) > rule.floor_us
    if change > threshold and beyond_floor:
        return change, threshold, SLOWER
    if change < -threshold and beyond_floor:
        return change, threshold, FASTER
    return change, threshold, WITHIN_NOISE


SLOWER, WITHIN_NOISE, FASTER, NOT_TIMED = "slower", "within noise", "faster", "not timed"


def confirm_slowdowns(first: list[KernelTiming], again: Sequence[KernelTiming]) -> None:
    """Keep ``slower`` only where the second timing of both sides says ``slower`` too; else
    the launch is ``within noise`` and its detail says the slowdown did not repeat."""
    second = {t.key: t for t in again}
    for t in first:
        if t.verdict != SLOWER:
            continue
        t2 = second.get(t.key)
        seen = f"{pct(t2.change)} ({t2.verdict})" if t2 is not None else "not timed"
        t.detail += f"; timed again: {seen}"
        if t2 is None or t2.verdict != SLOWER:
            t.verdict = WITHIN_NOISE
            t.detail += ": the slowdown did not repeat"


def compare_timings(
    base: Sequence[Mapping[str, Any]], cand: Sequence[Mapping[str, Any]], rule: SlowdownRule
) -> list[KernelTiming]:
    """Pair the two sides' TIMINGS records (``matrix.measure.kernel_timing``) by launch key."""
    c = {str(t.get("key")): t for t in cand}
    out = []
    for tb in base:
        key = str(tb.get("key"))
        tc = c.get(key, {})
        res = {f"{k}": (tb.get(k), tc.get(k)) for k in ("registers", "spills", "shared")}
        common: dict[str, Any] = dict(
            key=key,
            kernel=str(tb.get("kernel")),
            test=str(tb.get("test")),
            shapes=tb.get("shapes"),
            resources=res,
        )
        if tb.get("status") != "timed" or tc.get("status") != "timed":
            why = "; ".join(
                f"{side}: {t.get('detail') or t.get('status') or 'no record'}"
                for side, t in (("baseline", tb), ("candidate", tc))
                if t.get("status") != "timed"
            )
            out.append(
                KernelTiming(
                    **common,
                    base_us=tb.get("median_us"),
                    cand_us=tc.get("median_us"),
                    base_noise=tb.get("noise"),
                    cand_noise=tc.get("noise"),
                    change=None,
                    verdict=NOT_TIMED,
                    detail=why,
                )
            )
            continue
        change, threshold, verdict = slowdown_verdict(tb["rounds_us"], tc["rounds_us"], rule)
        modes = {tb.get("mode"), tc.get("mode")}
        out.append(
            KernelTiming(
                **common,
                base_us=tb["median_us"],
                cand_us=tc["median_us"],
                base_noise=tb["noise"],
                cand_noise=tc["noise"],
                change=round(change, 4),
                verdict=verdict,
                detail=f"threshold {threshold:.1%} (max of the minimum and both "
                f"sides' noise) and {rule.floor_us:g} us; timed by "
                f"{'/'.join(sorted(map(str, modes)))}"
                + (f", {_loops(tb, tc)} launches a round" if _loops(tb, tc) else ""),
            )
        )
    return out


def _loops(tb: Mapping[str, Any], tc: Mapping[str, Any]) -> str:
    """The launches per round of both sides ("1024", "1024/2048"; "" where not recorded)."""
    seen = list(dict.fromkeys(str(t["loops"]) for t in (tb, tc) if t.get("loops")))
    return "/".join(seen)


def pct(x: float | None) -> str:
    return "-" if x is None else f"{x:+.1%}"
