"""How every line is timed: CUDA-graph replay (GPU time), ``do_bench`` median (eager, as a user
calls it), host time per call, and the two ceilings (copy bandwidth, matmul rate).

Graph replay cycles through enough input copies that they do not fit in L2. ``do_bench``
flushes L2 before each run, which takes about 60 µs, so a call whose host time exceeds that
measures the host: both are recorded. Host time is measured with back-to-back calls and no
synchronization, fewer calls than the launch queue holds, so the GPU never pushes back.
"""

from __future__ import annotations

import math
import statistics
import time
from typing import Any

from kernels.bench.checks import Operands, torch_dtype
from kernels.bench.impls import Fn, cublas_mode
from kernels.bench.suite import DTYPES, Case

# Below the ~1024-entry launch queue, so back-to-back calls never wait for the GPU.
HOST_CALLS = 200
HOST_REPEATS = 7


def time_do_bench(case: Case, fn: Fn, ops: Operands, rep: int = 100, warmup: int = 25) -> float:
    import triton.testing

    with cublas_mode(case):
        ms = triton.testing.do_bench(
            lambda: fn(ops.a, ops.b), warmup=warmup, rep=rep, return_mode="median"
        )
    return ms * 1e3


def time_graph(case: Case, fn: Fn, sets: list[tuple[Any, Any]], replays: int = 10) -> float:
    """Microseconds per call under CUDA-graph replay, cycling through ``sets`` of inputs."""
    import torch

    calls = max(len(sets), 20)
    stream = torch.cuda.Stream()
    with cublas_mode(case):
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for i in range(3):  # warm up on the capture stream (scratch buffers, handles)
                fn(*sets[i % len(sets)])
        torch.cuda.current_stream().wait_stream(stream)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=stream):
            for i in range(calls):
                fn(*sets[i % len(sets)])
        for _ in range(3):
            g.replay()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(replays):
            g.replay()
        end.record()
        torch.cuda.synchronize()
    return start.elapsed_time(end) * 1e3 / (replays * calls)


def host_time(
    case: Case, fn: Fn, ops: Operands, calls: int = HOST_CALLS, repeats: int = HOST_REPEATS
) -> float:
    """Host microseconds per call: median over ``repeats`` of ``calls`` back-to-back calls with
    no synchronization in between (the queue drained before each repeat)."""
    import torch

    samples = []
    with cublas_mode(case):
        fn(ops.a, ops.b)
        for _ in range(repeats):
            torch.cuda.synchronize()
            t = time.perf_counter()
            for _ in range(calls):
                fn(ops.a, ops.b)
            samples.append((time.perf_counter() - t) / calls * 1e6)
        torch.cuda.synchronize()
    return statistics.median(samples)


def rotating_sets(case: Case, ops: Operands, l2_bytes: int) -> list[tuple[Any, Any]]:
    """Copies of the inputs (same values, new buffers) whose total is at least 3x the L2."""
    count = max(1, min(64, math.ceil(3 * l2_bytes / case.min_bytes)))
    sets = [(ops.a, ops.b)]
    for _ in range(count - 1):
        b = ops.b.t().contiguous().t() if case.layout == "nk_t" else ops.b.clone()
        sets.append((ops.a.clone(), b))
    return sets


def ceilings() -> dict[str, Any]:
    """Device-to-device copy bandwidth and matmul rates at 8192^3 on random data."""
    import torch
    import triton.testing

    n = 1 << 30
    src = torch.randn(n // 4, device="cuda")
    dst = torch.empty_like(src)
    ms = triton.testing.do_bench(lambda s=src, d=dst: d.copy_(s), return_mode="median")
    out: dict[str, Any] = {"copy_bytes": 2 * n, "copy_us": ms * 1e3,
                           "copy_gbps": 2 * n / (ms * 1e-3) / 1e9}  # fmt: skip
    del src, dst
    size = 8192
    for name in DTYPES:
        case = Case(size, size, size, name, "kn")
        a = torch.randn(size, size, device="cuda").to(torch_dtype(name))
        b = torch.randn(size, size, device="cuda").to(torch_dtype(name))
        with cublas_mode(case):
            ms = triton.testing.do_bench(lambda a=a, b=b: a @ b, return_mode="median")
        out[f"matmul_tflops_{name}"] = case.flops / (ms * 1e-3) / 1e12
    return out
