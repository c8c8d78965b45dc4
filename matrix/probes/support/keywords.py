"""Shared by probes that ask whether a keyword argument is still accepted: run or compile a
kernel that passes it, then classify: raised -> removed, warned -> deprecated, else accepted."""

from __future__ import annotations

from matrix.probes.support.base import Observation, Outcome, refusal


def classify_keyword(outcome: Outcome, keyword: str, correct: bool | None) -> Observation:
    warns = outcome.warning_texts()
    data = {"warnings": warns, "correct": correct}
    refused = refusal(outcome, "removed")
    if refused:
        return refused
    relevant = [w for w in warns if keyword in w or "deprecat" in w.lower()]
    if relevant:
        return Observation("deprecated", relevant[0], data)
    detail = f"{keyword}= accepted silently"
    if correct is False:
        detail += "; but the result was WRONG"
    return Observation("accepted", detail, data)
