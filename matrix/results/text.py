"""Text of the results contract: JSON that loses nothing a probe reported, numbers JSON has no
word for (``"nan"``, ``"inf"``), and text capped to what a raw file or a page keeps."""

from __future__ import annotations

import base64
import json
import math
from typing import Any

# What JSON has no number for is written as these strings (``finite_json``); readers take them
# and a bare NaN/Infinity of older files alike (``number``).
NONFINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}

# The most of one detail a raw file keeps (a probe may print 100 MB), and the most of any text
# a page shows (the rest stays in the raw file).
DETAIL_CAP = 64 * 1024
PAGE_TEXT_CAP = 4 * 1024
CUT_MARK = "[... cut: "


def cap_text(text: str, limit: int, where: str = "") -> str:
    """``text`` if it is at most ``limit`` characters; else its head and tail around a note of
    the full size (and, given ``where``, where the whole text is). Cutting an already cut text
    keeps the first note's size.

    >>> cap_text("a" * 50 + "b" * 50, 60)
    'aaaaaaaaaaaa[... cut: 100 characters in all ...]bbbbbbbbbbbb'
    """
    if len(text) <= limit:
        return text
    total = str(len(text))
    if CUT_MARK in text:  # already cut once: say the original size, not this one's
        size = text.partition(CUT_MARK)[2].partition(" characters in all")[0]
        total = size if size.isdigit() else total
    note = (
        f"{CUT_MARK}{total} characters in all"
        + (f"; the whole text is in {where}" if where else "")
        + " ...]"
    )
    keep = max(limit - len(note), 2) // 2
    return text[:keep] + note + text[-keep:]


def number(value: Any) -> float:
    """A recorded number as a float: ``"nan"``, ``"inf"``, ``"-inf"`` (how raw files spell
    what JSON cannot) and a bare NaN/Infinity of an older file alike.

    >>> number("inf"), number(1), number(float("nan")) != number("nan")
    (inf, 1.0, True)
    """
    if isinstance(value, str) and value in NONFINITE:
        return NONFINITE[value]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"expected a number or one of {sorted(NONFINITE)}, got {value!r}")
    return float(value)


def known_seconds(value: Any) -> float | None:
    """A recorded duration as seconds, or None where none is known: ``"nan"``, ``"inf"`` (valid
    in a raw file: docs/raw-files.md), a bare NaN, a negative or non-numeric value. Sums and
    charts of time leave such a value out; pages show it as unknown, never as a time.

    >>> known_seconds(1.5), known_seconds("nan"), known_seconds(float("inf")), known_seconds(None)
    (1.5, None, None, None)
    """
    try:
        seconds = number(value)
    except TypeError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def _json_default(value: Any) -> Any:
    """What JSON has no word for: bytes kept exactly (base64), anything else by its repr."""
    if isinstance(value, (bytes, bytearray)):
        return {"$bytes_b64": base64.b64encode(bytes(value)).decode("ascii")}
    return {"$repr": repr(value)}


def to_json(value: Any, **kwargs: Any) -> str:
    """JSON text for ``value`` that loses nothing and always encodes as UTF-8.

    Text stays readable (``ensure_ascii=False``) unless it holds lone surrogates, which UTF-8
    cannot encode; then the whole text is written with ``\\uXXXX`` escapes, which JSON reads
    back to the same string.

    A shape JSON has no form for (a tuple as a key, a container holding itself) is written as
    the closest plain value (``_plain``) rather than lose the whole result.

    >>> json.loads(to_json({"d": "bad \\udc80", "b": b"\\xff"}))
    {'d': 'bad \\udc80', 'b': {'$bytes_b64': '/w=='}}
    >>> to_json({"cells": {(1, 2): "x"}})
    '{"cells": {"(1, 2)": "x"}}'
    >>> to_json({"rel_err": float("nan"), "worst": [float("inf"), -float("inf"), 1.5]})
    '{"rel_err": "nan", "worst": ["inf", "-inf", 1.5]}'
    """
    kwargs = {"default": _json_default, "allow_nan": False, **kwargs}
    try:
        text = json.dumps(value, ensure_ascii=False, **kwargs)
    except (TypeError, ValueError):  # a key JSON cannot hold, a cycle, a NaN or an infinity
        value = _plain(value, ())
        text = json.dumps(value, ensure_ascii=False, **kwargs)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(value, ensure_ascii=True, **kwargs)
    return text


def _plain(value: Any, seen: tuple[int, ...]) -> Any:
    """``value`` with every dict key a string (its repr where it is not one), every cycle cut
    at ``{"$repr": "<cycle>"}`` and every non-finite float spelled ``"nan"``, ``"inf"`` or
    ``"-inf"`` (a bare ``NaN`` is not JSON: ``JSON.parse`` rejects it, ``jq`` reads null)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict | list | tuple):
        if id(value) in seen:
            return {"$repr": "<cycle>"}
        inner = (*seen, id(value))
        if isinstance(value, dict):
            return {
                k if isinstance(k, str) else repr(k): _plain(v, inner) for k, v in value.items()
            }
        return [_plain(v, inner) for v in value]
    return value


def dumps(doc: dict[str, Any], *, compact: bool = False) -> str:
    """The document's text: indented (the committed form), or ``compact`` on one line, which
    json encodes in C (an indent makes it fall back to Python: 10x slower on a cell of 5,000
    results) for the partial files a runner rewrites after every probe."""
    if compact:
        return to_json(doc, sort_keys=False) + "\n"
    return to_json(doc, indent=1, sort_keys=False) + "\n"


def dumps_merged(doc: dict[str, Any]) -> str:
    """``matrix.json``'s text: one run per line, no indentation inside a run. It stays plain
    JSON for any reader (``json.load``, ``jq``, a browser), and a third smaller than indented
    (17 MB, not 24 MB, for the committed 40 cells)."""
    runs = doc.get("runs") or []
    head = {k: v for k, v in doc.items() if k != "runs"}
    lines = [to_json(r, separators=(",", ":")) for r in runs]
    return to_json(head)[:-1] + ', "runs": [\n' + ",\n".join(lines) + "\n]}\n"
