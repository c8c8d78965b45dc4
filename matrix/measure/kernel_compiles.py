"""The aot step for a team's kernels: compile every captured launch for every aot target.

Runs in the aot cell of each release, after the suite, in a supervised child with no
``TRITON_INTERPRET`` (``matrix.measure.supervise``: a compile that hangs is ``timeout``, one
that kills the process is ``crashed``, and the others still run). Each record is a KERNEL
COMPILE record (``matrix.backends.kernels``), stored as the run's ``"kernel_compiles"`` list.

    python -m matrix.measure.kernel_compiles LAUNCHES.json cuda:80,cuda:90 SUITE_ROOT  # the child
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from matrix.core import REPO_ROOT
from matrix.measure.supervise import supervise

EVENTS_ENV = "MATRIX_COMPILE_EVENTS"
SKIP_ENV = "MATRIX_COMPILE_SKIP"


def compile_captured(
    launches: Sequence[dict[str, Any]],
    targets: Sequence[str],
    workdir: Path,
    log: Callable[..., None],
    timeout_s: float,
    suite_root: Path,
) -> list[dict[str, Any]]:
    """KERNEL COMPILE records for every (launch, target), in launch then target order; the
    launches' paths are relative to ``suite_root`` (``matrix.measure.capture``)."""
    if not launches or not targets:
        return []
    workdir.mkdir(parents=True, exist_ok=True)
    spec = workdir / "launches.json"
    spec.write_text(json.dumps(list(launches)), encoding="utf-8")
    env = dict(os.environ)
    env.pop("TRITON_INTERPRET", None)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    env["TRITON_CACHE_DIR"] = str(workdir / "triton-cache")
    cmd = [
        sys.executable,
        "-m",
        "matrix.measure.kernel_compiles",
        str(spec),
        ",".join(targets),
        str(suite_root),
    ]
    log(f"compiling {len(launches)} captured kernel specializations for {', '.join(targets)}")
    result = supervise(
        cmd,
        workdir / "child",
        env,
        events_env=EVENTS_ENV,
        skip_env=SKIP_ENV,
        item_timeout_s=timeout_s,
        cwd=REPO_ROOT,
    )
    by_launch = {launch["key"]: launch for launch in launches}
    records = []
    for launch_key, launch in by_launch.items():
        for target in targets:
            item = f"{launch_key}@{target}"
            rec = result.records.get(item)
            if rec is None:
                rec = {
                    "status": "error",
                    "detail": "the compile child ended before this "
                    f"compile ({result.stopped or 'exit ' + str(result.last_exit)}): "
                    f"{result.output_tail[-400:]}",
                }
            elif "outcome" in rec:  # a supervisor record: the compile hung or crashed
                rec = {
                    "status": rec["outcome"],
                    "detail": rec["detail"],
                    "seconds": rec.get("seconds", 0.0),
                }
            records.append(
                {
                    "id": item,
                    "key": launch_key,
                    "kernel": launch.get("kernel"),
                    "target": target,
                    **rec,
                }
            )
    counts: dict[str, int] = {}
    for r in records:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    log("  compiles: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    return records


def main(argv: Sequence[str]) -> int:
    from matrix.backends.kernels import compile_launch

    spec, targets = Path(argv[0]), [t for t in argv[1].split(",") if t]
    suite_root = Path(argv[2])
    events = os.environ[EVENTS_ENV]
    skip_path = os.environ.get(SKIP_ENV)
    skip = set(Path(skip_path).read_text(encoding="utf-8").splitlines()) if skip_path else set()

    def emit(event: dict[str, Any]) -> None:
        with open(events, "a", encoding="utf-8") as f:
            f.write(json.dumps(event, default=repr) + "\n")

    for launch in json.loads(spec.read_text(encoding="utf-8")):
        for target in targets:
            item = f"{launch['key']}@{target}"
            if item in skip:
                continue
            emit({"event": "start", "id": item})
            emit(
                {"event": "done", "id": item, "record": compile_launch(launch, target, suite_root)}
            )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
