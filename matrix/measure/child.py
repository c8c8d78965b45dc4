"""The child process that runs probes: ``python -m matrix.measure.child TASKS.json EVENTS.jsonl``.

Its backend was fixed by the parent through the environment before Triton is imported. For each
task it appends a ``start`` event, runs the probe, then appends a ``row`` event for each of the
observation's ``rows`` (a probe answering many questions at once: ``fp``) and a ``result`` event,
flushing each line, so the parent knows which probe was running if this process dies or hangs.
Before a task's rows and result, a ``triton`` event says which Triton the process imported (its
file and version; again only when that changed), which the runner checks against the cell's.

Events are written with ``results.to_json``: a detail with lone surrogates or bytes, or data
holding bytes, reaches the raw file unchanged. A probe that could not observe for a reason
outside Triton (``CannotObserve``: a tool missing, the harness unable to run on this release)
ends with the status and reason it carries, never a status of its own.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import sys
import time
from typing import Any

from matrix.catalog import probe_module
from matrix.measure import triton_identity
from matrix.probes.support.base import (
    CannotObserve,
    Context,
    Observation,
    format_exception,
    outside_triton,
)
from matrix.results import DETAIL_CAP, cap_text, to_json


def probe_package() -> str:
    """Where probe modules live; tests point this at fixture probes that crash or hang."""
    return os.environ.get("MATRIX_PROBE_PACKAGE", "matrix.probes")


def _emit(stream: Any, event: dict[str, Any]) -> None:
    stream.write(to_json(event) + "\n")
    stream.flush()


def _result(probe: str, ctx: Context, obs: Observation, seconds: float) -> dict[str, Any]:
    return {
        "probe": probe,
        "backend": ctx.backend,
        "target": ctx.target,
        "status": obs.status,
        # A probe may print 100 MB: the raw file keeps its head and tail, with the size.
        "detail": cap_text(_text(obs.detail), DETAIL_CAP),
        "seconds": round(seconds, 3),
        "data": obs.data,
    }


def _text(detail: Any) -> str:
    """A detail as text, losslessly: bytes keep every byte (``surrogateescape``)."""
    if isinstance(detail, (bytes, bytearray)):
        return bytes(detail).decode("utf-8", "surrogateescape")
    return detail if isinstance(detail, str) else repr(detail)


def run_task(task: dict[str, Any]) -> list[dict[str, Any]]:
    """The task's results: its rows (each named ``<probe>.<row>``), then its own result last."""
    ctx = Context(
        backend=task["backend"], target=task.get("target"), compile_cache=task.get("compile_cache")
    )
    start = time.perf_counter()
    probe = task["probe"]
    try:
        module = importlib.import_module(probe_module(probe_package(), probe))
        obs = module.observe(ctx)
        if not isinstance(obs, Observation):
            raise TypeError(f"probe {probe} returned {type(obs).__name__}, not Observation")
        bad = [r.name for r in obs.rows if not (r.name or "").startswith(probe + ".")]
        if bad:
            raise ValueError(f"probe {probe}: row names must start with '{probe}.', got {bad}")
    except CannotObserve as e:
        obs = Observation(e.status, e.reason, {"exception": e.cause})
    except Exception as e:  # an unexpected exception is an `error` result, with its traceback
        # ... unless it came from outside Triton outside any attempt(): then it is sorted the
        # same way (a missing tool is `skipped`), with the traceback kept as evidence.
        cannot = outside_triton(e)
        if cannot is None:
            obs = Observation("error", format_exception(e))
        else:
            obs = Observation(cannot.status, cannot.reason, {"exception": format_exception(e)})
    seconds = time.perf_counter() - start
    rows = [_result(r.name or "", ctx, r, 0.0) for r in obs.rows]
    return [*rows, _result(probe, ctx, obs, seconds)]


def main(argv: list[str]) -> int:
    tasks_path, events_path = argv
    with open(tasks_path, encoding="utf-8") as f:
        tasks = json.load(f)
    said = None
    with open(events_path, "a", encoding="utf-8") as events:
        for i, task in enumerate(tasks):
            _emit(events, {"event": "start", "index": i})
            *rows, result = run_task(task)
            # Which Triton the probe ran on, before its result: the runner refuses a result
            # from another Triton than the cell's (matrix.measure.triton_identity).
            identity = triton_identity.imported()
            if identity != said:
                _emit(events, {"event": "triton", "index": i, **identity.to_json()})
                said = identity
            for row in rows:
                _emit(events, {"event": "row", "index": i, "result": row})
            _emit(events, {"event": "result", "index": i, "result": result})
    return 0


def exit_now(code: int) -> None:
    """End the process without the interpreter's teardown: every event is on disk by now, and
    tearing down torch and Triton took 0.4-0.9 s per child (the runner waits for the exit)."""
    for stream in (sys.stdout, sys.stderr):
        # A probe may have closed or broken the stream: then there is nothing to keep.
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    exit_now(main(sys.argv[1:]))
