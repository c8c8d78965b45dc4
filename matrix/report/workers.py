"""A report build's independent pieces of work, in forked processes.

The pages' gate decisions (45 pairs for ten releases), the fingerprint group pages and the
known-issues list each read the same ~100,000 fingerprint cells and share nothing else: on this
2-core machine they were most of a report build run one after another (2026-12-03). Workers are
forked, so the calls and what they read are inherited, never pickled; only the results travel
back.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

MAX_WORKERS = 4
# Calls below which forking workers and pickling their results costs more than it saves.
MIN_CALLS = 4

# The calls of the ``run_all`` in progress, read by the forked workers by index.
_CALLS: Sequence[Callable[[], Any]] | None = None


def _call(index: int) -> Any:
    assert _CALLS is not None, "run_all sets the calls before its workers start"
    return _CALLS[index]()


def _fork_context() -> Any:
    """The fork start method, or None where this platform has none (then: in this process)."""
    try:
        return multiprocessing.get_context("fork")
    except ValueError:
        return None


def run_all(calls: Sequence[Callable[[], Any]]) -> list[Any]:
    """``[call() for call in calls]``, in forked processes on a machine with more than one CPU.

    Workers take the calls in order, one at a time: put the longest first. A worker that dies
    raises ``BrokenProcessPool``, never a hang; an exception in a call is raised here."""
    global _CALLS
    workers = min(os.cpu_count() or 1, MAX_WORKERS, len(calls))
    context = _fork_context() if workers >= 2 and len(calls) >= MIN_CALLS else None
    if context is None:
        return [call() for call in calls]
    _CALLS = calls
    try:
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            return list(pool.map(_call, range(len(calls))))
    finally:
        _CALLS = None
