"""First-use search on a real GPU: per shape, the first call's wall time (search included), the
plan it chose, its time against the table's own entry for that shape and against cuBLAS, the
error against a float64 reference, and that a second process-like call is served from the
cache (run by run45.sh with a table that claims another architecture)."""

import time

import torch
import triton

from kernels import gpu_plan, splitk
from kernels.numerics import reference, rel_err

SHAPES = [(16, 4096, 4096, torch.float16), (64, 64, 8192, torch.bfloat16),
          (256, 256, 32768, torch.float16), (128, 128, 8192, torch.float32)]
for m, n, k, dt in SHAPES:
    g = torch.Generator(device="cuda").manual_seed(m + n + k)
    a = torch.randn(m, k, device="cuda", dtype=dt, generator=g)
    b = torch.randn(k, n, device="cuda", dtype=dt, generator=g)
    t0 = time.perf_counter()
    plan = splitk.plan_splitk(a, b)
    first = time.perf_counter() - t0
    c = splitk.splitk_matmul(a, b)
    torch.cuda.synchronize()
    err = rel_err(c, reference(a, b))
    us = 1e3 * triton.testing.do_bench(lambda: splitk.splitk_matmul(a, b), warmup=10, rep=50)
    cub = 1e3 * triton.testing.do_bench(lambda: a @ b, warmup=10, rep=50)
    splitk.clear_plan_cache()
    t1 = time.perf_counter()
    again = splitk.plan_splitk(a, b)
    second = time.perf_counter() - t1
    print(f"{m}x{n}x{k} {dt}: first plan {first:.2f} s -> {plan.config}-S{plan.split_k} "
          f"[{plan.source}]; {us:.1f} us vs cuBLAS {cub:.1f} us; rel err {err:.2e}; "
          f"second plan {second * 1e3:.1f} ms [{again.source}]")
print("table entries:", len(gpu_plan.load_table()))
