"""Each captured launch of a team's kernels replayed and timed on the GPU, in one release's
environment (a GPU leg: ``matrix.measure.legs``).

    python -m matrix.measure.kernel_timing --launches LAUNCHES.json --out TIMINGS.json \\
        [--suite-root DIR] [--warmup 10] [--loops 100] [--rounds 5]

LAUNCHES.json is ``{"launches": [LAUNCH, ...], "kernel_sources": {...}}`` as the capture plugin
records them (``matrix.measure.capture``). For each launch: the kernel is rebuilt from its
recorded definition (or imported), given fresh inputs of the recorded shapes, dtypes, scalars
and grid (``matrix.backends.kernels.replay``: one launch, which also compiles it), then timed:
``warmup`` launches, one untimed round (the graph's capture and first replay: on an H100 it
cost 1-2 us per launch of a 100-launch round more than the later replays, whatever the
kernel), then ``rounds`` rounds of ``loops`` launches each, every round one CUDA-graph replay
of ``loops`` captured launches timed with CUDA events (eager launches timed with events where
the capture fails, and ``mode`` says so). A round lasts at least ``min_round_us``: a launch
faster than ``min_round_us / loops`` gets more loops (the next power of two, at most
``max_loops``; the record's ``loops`` says how many), so that a 1 us kernel is timed over
about a millisecond, not 100 us. A round's time is per launch.

TIMINGS.json (with ``--release``, also ``"triton": {"file", "version"}``, the Triton imported,
and ``"error"`` where it is not that release)::

    {"plan": {"warmup": 10, "loops": 100, "rounds": 5, "min_round_us": 1000.0, ...},
     "timings": [{"key": LAUNCH KEY, "kernel": "pkg.mod:fn", "test": NODEID,
                  "shapes": {"x_ptr": [4096]}, "grid": [16, 1, 1],
                  "status": "timed" | "error",      # error: could not replay; detail says why
                  "mode": "graph" | "eager",
                  "rounds_us": [2.1, 2.0, ...],     # microseconds per launch, one per round
                  "median_us": 2.05,
                  "loops": 1024,                    # launches per round (min_round_us)
                  "noise": 0.05,                    # noise_of(rounds_us)
                  "registers": 32, "spills": 0, "shared": 0,   # of this release's compile,
                  "detail": ""}, ...]}                          # None where not available

Only ``CudaGraphTimer`` and ``main`` touch a GPU; the rest is tested with a fake timer.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

from matrix import cli
from matrix.core import COMPILE_OPTIONS
from matrix.measure import triton_identity


@dataclass(frozen=True)
class TimingPlan:
    """Fixed warm-up and loop counts, several rounds (the same on both sides of a pair)."""

    warmup: int = 10
    loops: int = 100
    rounds: int = 5
    # A round lasts at least this long (more loops for a faster launch, up to max_loops):
    # the timing's resolution and per-replay overheads then weigh little on a 1 us kernel.
    min_round_us: float = 1000.0
    max_loops: int = 16384


class Timer(Protocol):
    """Times ``loops`` calls of ``fn``; returns seconds per call, and how (``graph``/``eager``)."""

    def time_loops(self, fn: Callable[[], Any], loops: int) -> tuple[float, str]: ...


def noise_of(rounds: Sequence[float]) -> float:
    """The run-to-run noise of one side: (max - min) / median of its rounds, the slowest
    round left out when there are at least 4 (0 for one round). Interference (a neighbour, a
    clock change, a replay's upload) only ever adds time, so one straggler says nothing of
    how far apart the other rounds lie; measured on an H100, it alone made the noise 45-128%
    of 1-2.5 us kernels whose medians agreed within 0.06 us on both sides."""
    med = statistics.median(rounds)
    kept = sorted(rounds)[:-1] if len(rounds) >= 4 else list(rounds)
    return (max(kept) - min(kept)) / med if med > 0 else 0.0


def loops_for(seconds_per_call: float, plan: TimingPlan) -> int:
    """The launches per round so that a round lasts at least ``plan.min_round_us``: ``loops``,
    or the next power of two above what the minimum asks, at most ``plan.max_loops``."""
    us = seconds_per_call * 1e6
    if us <= 0 or us * plan.loops >= plan.min_round_us:
        return plan.loops
    need = math.ceil(plan.min_round_us / us)
    return max(plan.loops, min(plan.max_loops, 1 << (need - 1).bit_length()))


def time_rounds(
    fn: Callable[[], Any], timer: Timer, plan: TimingPlan
) -> tuple[list[float], str, int]:
    """``plan.warmup`` calls of ``fn``, one untimed round (a graph's capture and first
    replay), then ``plan.rounds`` timed rounds of ``loops_for`` launches each (after one more
    untimed round where that is not ``plan.loops``: a new graph); returns (seconds per call of
    each round, the timer's mode of the last round, the loops per round)."""
    for _ in range(plan.warmup):
        fn()
    first, mode = timer.time_loops(fn, plan.loops)
    loops = loops_for(first, plan)
    if loops != plan.loops:
        timer.time_loops(fn, loops)
    rounds = []
    for _ in range(plan.rounds):
        seconds, mode = timer.time_loops(fn, loops)
        rounds.append(seconds)
    return rounds, mode, loops


def resources(compiled: Any) -> dict[str, Any]:
    """Registers, spills and shared memory of a compiled kernel (what ``fn[grid](...)``
    returns on Triton 3.x); None for each that this release does not expose."""
    meta = getattr(compiled, "metadata", None)
    shared = getattr(meta, "shared", None)
    if shared is None and isinstance(meta, Mapping):
        shared = meta.get("shared")
    return {
        "registers": getattr(compiled, "n_regs", None),
        "spills": getattr(compiled, "n_spills", None),
        "shared": shared,
    }


def launcher(
    launch: Mapping[str, Any],
    definitions: Mapping[str, Any] | None,
    suite_root: str | Path | None,
    device: str = "cuda",
) -> tuple[Callable[[], Any], dict[str, Any]]:
    """(a call that launches the captured specialization again with the same inputs, the
    compile's resources). The first launch goes through ``kernels.replay`` (inputs, compile)."""
    from matrix.backends import kernels

    given = kernels.replay(dict(launch), device, suite_root=suite_root, definitions=definitions)
    if launch.get("definition") and definitions is not None:
        fn, _ = kernels.rebuild_kernel(dict(launch), definitions)
    else:
        fn = kernels.load_kernel(dict(launch), None, suite_root)
    grid = tuple(launch["example"]["grid"])
    options = {k: v for k, v in launch.get("options", {}).items() if k in COMPILE_OPTIONS}
    args = {**given, **{k: v for k, v in launch.get("constexprs", {}).items() if k not in given}}
    args = {n: args[n] for n in fn.arg_names if n in args}

    def run() -> Any:
        return fn[grid](**args, **options)

    return run, resources(run())


def time_launch(
    launch: Mapping[str, Any],
    prepare: Callable[[Mapping[str, Any]], tuple[Callable[[], Any], dict[str, Any]]],
    timer: Timer,
    plan: TimingPlan,
) -> dict[str, Any]:
    """One TIMINGS record (module docstring) of ``launch``; ``prepare`` is ``launcher`` bound
    to its definitions (a fake in tests). A launch that cannot be replayed is ``error``."""
    example = launch.get("example") or {}
    rec: dict[str, Any] = {
        "key": launch.get("key"),
        "kernel": launch.get("kernel"),
        "test": launch.get("test"),
        "shapes": example.get("shapes", {}),
        "grid": example.get("grid"),
        "registers": None,
        "spills": None,
        "shared": None,
        "detail": "",
    }
    try:
        fn, res = prepare(launch)
        rounds, mode, loops = time_rounds(fn, timer, plan)
    except Exception as e:  # the kernel's own failure, or a launch that cannot be replayed
        return {**rec, "status": "error", "detail": f"{type(e).__name__}: {e}"[:500]}
    us = [s * 1e6 for s in rounds]
    return {
        **rec,
        **res,
        "status": "timed",
        "mode": mode,
        "loops": loops,
        "rounds_us": [round(u, 4) for u in us],
        "median_us": round(statistics.median(us), 4),
        "noise": round(noise_of(us), 4),
    }


class CudaGraphTimer:
    """GPU only: ``loops`` launches captured in one CUDA graph, its replay timed with CUDA
    events; eager launches timed with events where the capture fails."""

    def __init__(self) -> None:
        import torch

        self.torch = torch
        # The launch whose graph is held: one at a time (its tensors stay alive with it).
        self.fn: Callable[[], Any] | None = None
        self.graph: Any = None
        self.loops = 0

    def _capture(self, fn: Callable[[], Any], loops: int) -> Any:
        torch = self.torch
        try:
            stream = torch.cuda.Stream()
            with torch.cuda.stream(stream):
                fn()  # once on a side stream first, as torch asks before a capture
            torch.cuda.synchronize()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                for _ in range(loops):
                    fn()
            return graph
        except Exception:
            torch.cuda.synchronize()
            return None

    def time_loops(self, fn: Callable[[], Any], loops: int) -> tuple[float, str]:
        torch = self.torch
        if self.fn is not fn or self.loops != loops:  # a graph holds a fixed launch count
            self.fn, self.graph, self.loops = fn, None, loops
            self.graph = self._capture(fn, loops)
        graph = self.graph
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start.record()
        if graph is not None:
            graph.replay()
        else:
            for _ in range(loops):
                fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3 / loops, "graph" if graph is not None else "eager"


def time_all(
    launches: Sequence[Mapping[str, Any]],
    prepare: Callable[[Mapping[str, Any]], tuple[Callable[[], Any], dict[str, Any]]],
    timer: Timer,
    plan: TimingPlan,
    log: Callable[[str], None] = lambda s: None,
    budget_s: float | None = None,
) -> list[dict[str, Any]]:
    """A TIMINGS record per launch; past ``budget_s`` the rest are ``error`` (not timed)."""
    t0 = time.monotonic()
    out = []
    for launch in launches:
        if budget_s is not None and time.monotonic() - t0 > budget_s:
            out.append(
                {
                    "key": launch.get("key"),
                    "kernel": launch.get("kernel"),
                    "test": launch.get("test"),
                    "status": "error",
                    "detail": f"not timed: the {budget_s:g} s timing budget was spent",
                }
            )
            continue
        rec = time_launch(launch, prepare, timer, plan)
        log(
            f"  {rec['kernel']} {rec.get('shapes')}: {rec['status']} "
            f"{rec.get('median_us', '')} us {rec.get('detail', '')[:120]}"
        )
        out.append(rec)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m matrix.measure.kernel_timing", description=__doc__.split("\n")[0]
    )
    ap.add_argument("--launches", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--suite-root", type=Path, default=None)
    ap.add_argument("--warmup", type=int, default=TimingPlan.warmup)
    ap.add_argument("--loops", type=int, default=TimingPlan.loops)
    ap.add_argument("--rounds", type=int, default=TimingPlan.rounds)
    ap.add_argument(
        "--min-round-us",
        type=float,
        default=TimingPlan.min_round_us,
        help="a round lasts at least this long: more loops for a faster launch",
    )
    ap.add_argument("--budget-s", type=float, default=None, help="stop timing after this long")
    ap.add_argument(
        "--release", help="the Triton release this side is: the one imported must be it"
    )
    args = ap.parse_args(argv)
    for name in ("warmup", "loops", "rounds"):
        if getattr(args, name) < (0 if name == "warmup" else 1):
            ap.error(
                f"--{name}: expected a count >= {0 if name == 'warmup' else 1}, "
                f"got {getattr(args, name)}"
            )
    doc = json.loads(args.launches.read_text(encoding="utf-8"))
    if not args.min_round_us >= 0:
        ap.error(f"--min-round-us: expected microseconds >= 0, got {args.min_round_us}")
    plan = TimingPlan(args.warmup, args.loops, args.rounds, args.min_round_us)
    sources = doc.get("kernel_sources") or {}

    def prepare(launch: Mapping[str, Any]) -> tuple[Callable[[], Any], dict[str, Any]]:
        return launcher(launch, sources, args.suite_root)

    timings = time_all(
        doc.get("launches") or [],
        prepare,
        CudaGraphTimer(),
        plan,
        lambda s: print(s, flush=True),
        args.budget_s,
    )
    doc_out: dict[str, Any] = {"plan": asdict(plan), "timings": timings}
    if args.release:
        # The Triton that compiled and ran what was timed must be the side's release.
        import triton  # noqa: F401  (the replays imported it; a run of no launch did not)

        seen = triton_identity.imported()
        doc_out["triton"] = seen.to_json()
        wrong = triton_identity.mismatch(seen, args.release, triton_identity.distribution())
        if wrong:
            doc_out["error"] = f"the timings ran on another Triton: {wrong}"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc_out, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(cli.run(main, "matrix.measure.kernel_timing"))
