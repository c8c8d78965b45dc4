"""Compile seconds with a noise band: the samples of one kernel's compile on this release.

One compile's wall time on a shared machine is noise as much as signal, so a kernel is
compiled ``RULES.repeats`` times in all (the first, then fresh compiles with no cache), unless
its first compile took under ``RULES.repeat_from`` seconds; the gate compares bands, not single
numbers (``matrix.backends.resource_rules``).

A compile Triton answered from the kept cache (``Artifacts.cached``) took no compile time:
its samples are the ones measured when the entry was made, kept beside it in
``SECONDS_FILE`` of the same folder, keyed by the target and the assembly. Only where none were
kept (a cache filled before this file existed) are fresh compiles done, and kept.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from matrix.backends.aot import Artifacts
from matrix.backends.resource_rules import RULES

SECONDS_FILE = "matrix-compile-seconds.json"


def key_of(art: Artifacts) -> str:
    """What identifies a compile's output: its target and its final assembly (or TTGIR)."""
    text = art.ir.get("ptx") or art.ir.get("amdgcn") or art.ir.get("ttgir") or ""
    return hashlib.sha256(f"{art.target}\0{text}".encode()).hexdigest()[:20]


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _keep(path: Path, key: str, samples: list[float]) -> None:
    data = _read(path)
    data[key] = samples
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".seconds-")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(data, f)
    os.replace(tmp, path)


def samples(
    art: Artifacts, recompile: Callable[[], Artifacts], cache_dir: str | None = None
) -> tuple[list[float], str]:
    """(compile seconds, where they come from) for the compile that gave ``art``;
    ``recompile`` compiles the same kernel again with no cache; ``cache_dir`` is the kept
    folder ``art`` was compiled in, if any."""
    kept = Path(cache_dir) / SECONDS_FILE if cache_dir else None
    key = key_of(art)
    if art.cached and kept is not None:
        known = _read(kept).get(key)
        if isinstance(known, list) and known:
            return [float(s) for s in known], "kept: measured when the cache entry was made"
    measured = [] if art.cached or art.seconds is None else [art.seconds]
    while not measured or (len(measured) < RULES.repeats and measured[0] >= RULES.repeat_from):
        again = recompile().seconds
        if again is None:
            break
        measured.append(again)
    if kept is not None:
        _keep(kept, key, measured)
    return measured, "measured in this run"
