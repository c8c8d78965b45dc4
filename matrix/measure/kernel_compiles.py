"""The aot step for a team's kernels: compile every captured launch for every aot target.

Runs in the aot cell of each release, after the suite, in a supervised child with no
``TRITON_INTERPRET`` (``matrix.measure.supervise``: a compile that hangs is ``timeout``, one
that kills the process is ``crashed``, and the others still run). Each record is a KERNEL
COMPILE record (``matrix.backends.kernels``), stored as the run's ``"kernel_compiles"`` list.

    python -m matrix.measure.kernel_compiles SPEC.json cuda:80,cuda:90 SUITE_ROOT  # the child

SPEC is ``{"launches": [LAUNCH, ...], "kernel_sources": {ID: KERNEL DEFINITION}}``; a launch
is rebuilt from its definition (``matrix.backends.kernels.rebuild_kernel``), never by importing
its test module, so the child imports each module a definition names at most once.

``coverage(run)`` counts what got a compiler answer (``compiled`` or ``rejected``): the report
and the gate show "N of M captured specializations compiled" from it; the runner stores it as
the run's ``"kernel_coverage"``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from matrix.core import REPO_ROOT
from matrix.measure import standin
from matrix.measure.capture import scrub_paths
from matrix.measure.supervise import supervise

EVENTS_ENV = "MATRIX_COMPILE_EVENTS"
SKIP_ENV = "MATRIX_COMPILE_SKIP"


ANSWERS = ("compiled", "rejected")  # what the compiler itself said


def coverage(records: Sequence[Mapping[str, Any]], launches: int | None = None) -> dict[str, Any]:
    """What share of a run's captured compiles got a compiler answer::

        {"specializations": M, "answered_specializations": N,   # every target answered
         "compiles": 96, "answered": 90, "compiled": 84, "rejected": 6,
         "unanswered": {"skipped": 6}}

    ``launches`` is the number of captured specializations (a launch with no compile record
    counts as unanswered); by default the distinct launch keys of ``records``."""
    by_key: dict[str, list[str]] = {}
    for r in records:
        by_key.setdefault(str(r.get("key")), []).append(str(r.get("status")))
    statuses = [s for sts in by_key.values() for s in sts]
    unanswered: dict[str, int] = {}
    for s in statuses:
        if s not in ANSWERS:
            unanswered[s] = unanswered.get(s, 0) + 1
    return {
        "specializations": len(by_key) if launches is None else launches,
        "answered_specializations": sum(all(s in ANSWERS for s in v) for v in by_key.values()),
        "compiles": len(statuses),
        "answered": sum(s in ANSWERS for s in statuses),
        "compiled": statuses.count("compiled"),
        "rejected": statuses.count("rejected"),
        "unanswered": dict(sorted(unanswered.items())),
    }


def run_coverage(run: Any) -> dict[str, Any] | None:
    """``coverage`` of a Run's ``kernel_compiles`` (None where it compiled none)."""
    records = run.extra.get("kernel_compiles")
    if not isinstance(records, list):
        return None
    launches = run.extra.get("launches")
    n = len(launches) if isinstance(launches, list) else None
    return coverage([r for r in records if isinstance(r, dict)], n)


def coverage_text(cov: Mapping[str, Any]) -> str:
    """``"40 of 42 captured specializations compiled (120 of 126 compiles answered: 114
    compiled, 6 rejected; 6 skipped)"``: answered means compiled or rejected on every target."""
    rest = "; ".join(f"{n} {s}" for s, n in cov["unanswered"].items())
    return (
        f"{cov['answered_specializations']} of {cov['specializations']} captured "
        f"specializations compiled ({cov['answered']} of {cov['compiles']} compiles answered: "
        f"{cov['compiled']} compiled, {cov['rejected']} rejected{'; ' + rest if rest else ''})"
    )


def compile_captured(
    launches: Sequence[dict[str, Any]],
    targets: Sequence[str],
    workdir: Path,
    log: Callable[..., None],
    timeout_s: float,
    suite_root: Path,
    kernel_sources: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """KERNEL COMPILE records for every (launch, target), in launch then target order; the
    launches' paths are relative to ``suite_root`` (``matrix.measure.capture``), their
    definitions are in ``kernel_sources``."""
    if not launches or not targets:
        return []
    workdir.mkdir(parents=True, exist_ok=True)
    spec = workdir / "launches.json"
    spec.write_text(
        json.dumps({"launches": list(launches), "kernel_sources": dict(kernel_sources or {})}),
        encoding="utf-8",
    )
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
            if isinstance(rec.get("detail"), str):  # a compiler's text names its files
                rec = {**rec, "detail": scrub_paths(rec["detail"])}
            records.append(
                {
                    "id": item,
                    "key": launch_key,
                    "kernel": launch.get("kernel"),
                    "target": target,
                    **rec,
                }
            )
    log("  compiles: " + coverage_text(coverage(records, len(by_launch))))
    return records


def main(argv: Sequence[str]) -> int:
    from matrix.backends.kernels import compile_launch

    spec, targets = Path(argv[0]), [t for t in argv[1].split(",") if t]
    suite_root = Path(argv[2])
    events = os.environ[EVENTS_ENV]
    skip_path = os.environ.get(SKIP_ENV)
    skip = set(Path(skip_path).read_text(encoding="utf-8").splitlines()) if skip_path else set()

    standin.take_fd()

    def emit(event: dict[str, Any]) -> None:
        if event["event"] == "done":
            standin.confirm_parent()  # a compile that killed the stand-in is never done
        with open(events, "a", encoding="utf-8") as f:
            f.write(json.dumps(event, default=repr) + "\n")

    given = json.loads(spec.read_text(encoding="utf-8"))
    if isinstance(given, list):  # launches alone (recorded before source capture)
        given = {"launches": given, "kernel_sources": {}}
    sources = given["kernel_sources"]
    for launch in given["launches"]:
        for target in targets:
            item = f"{launch['key']}@{target}"
            if item in skip:
                continue
            emit({"event": "start", "id": item})
            record = compile_launch(launch, target, suite_root, sources)
            emit({"event": "done", "id": item, "record": record})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
