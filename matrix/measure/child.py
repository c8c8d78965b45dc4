"""The child process that runs probes: ``python -m matrix.measure.child TASKS.json EVENTS.jsonl``.

Its backend was fixed by the parent through the environment before Triton is imported. For each
task it appends a ``start`` event, runs the probe, then appends a ``result`` event, flushing each
line, so the parent knows which probe was running if this process dies or hangs.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time
from typing import Any

from matrix.probes.support.base import Context, Observation, format_exception


def probe_package() -> str:
    """Where probe modules live; tests point this at fixture probes that crash or hang."""
    return os.environ.get("MATRIX_PROBE_PACKAGE", "matrix.probes")


def _emit(stream: Any, event: dict[str, Any]) -> None:
    stream.write(json.dumps(event) + "\n")
    stream.flush()


def run_task(task: dict[str, Any]) -> dict[str, Any]:
    ctx = Context(backend=task["backend"], target=task.get("target"))
    start = time.perf_counter()
    try:
        module = importlib.import_module(f"{probe_package()}.{task['probe']}")
        obs = module.observe(ctx)
        if not isinstance(obs, Observation):
            raise TypeError(f"probe {task['probe']} returned {type(obs).__name__}, not Observation")
        status, detail, data = obs.status, obs.detail, obs.data
    except Exception as e:  # an unexpected exception is an `error` result, with its traceback
        status, detail, data = "error", format_exception(e), {}
    return {
        "probe": task["probe"],
        "backend": ctx.backend,
        "target": ctx.target,
        "status": status,
        "detail": detail,
        "seconds": round(time.perf_counter() - start, 3),
        "data": data,
    }


def main(argv: list[str]) -> int:
    tasks_path, events_path = argv
    with open(tasks_path, encoding="utf-8") as f:
        tasks = json.load(f)
    with open(events_path, "a", encoding="utf-8") as events:
        for i, task in enumerate(tasks):
            _emit(events, {"event": "start", "index": i})
            _emit(events, {"event": "result", "index": i, "result": run_task(task)})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
