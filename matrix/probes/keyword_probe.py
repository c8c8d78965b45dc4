"""Shared by probes that ask whether a keyword argument is still accepted: run or compile a
kernel that passes it, then classify: raised -> removed, warned -> deprecated, else accepted."""

from __future__ import annotations

from matrix.probes.base import Observation, Outcome, cause_text


def classify_keyword(outcome: Outcome, keyword: str, correct: bool | None) -> Observation:
    warns = outcome.warning_texts()
    data = {"warnings": warns, "correct": correct}
    if outcome.raised:
        from matrix.aot import AotUnavailable

        if isinstance(outcome.exception, AotUnavailable):
            return Observation("skipped", str(outcome.exception))
        data["exception"] = cause_text(outcome.exception)
        return Observation("removed", data["exception"], data)
    relevant = [w for w in warns if keyword in w or "deprecat" in w.lower()]
    if relevant:
        return Observation("deprecated", relevant[0], data)
    detail = f"{keyword}= accepted silently"
    if correct is False:
        detail += "; but the result was WRONG"
    return Observation("accepted", detail, data)
