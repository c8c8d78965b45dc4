"""Run-to-run differences of split-K on a GPU: atomic mode's, in ulps; deterministic mode's, none.

``kernels.splitk_matmul`` on one float32 problem with many splits (64x64x32768, 64 splits: the
float32 atomic adds land in whatever order the programs finish) is run ``RUNS`` times on the
same inputs in each mode. The largest difference from the first run, in units in the last place
(the distance between the float32 bit patterns), is ``max_ulps``. Status: ``nondeterministic``
when atomic mode's results differ between runs, ``deterministic`` when they never did; ``broken``
when deterministic mode was not bitwise stable (a kernel bug). Both modes are also checked
against a float64 product, so a stable but wrong result cannot pass.
"""

from __future__ import annotations

from matrix.probes.support.base import Context, Observation

M = N = 64
K = 32768
SPLIT = 64
RUNS = 50


def ulp_distance(x, y) -> int:
    """Largest distance in float32 ulps between same-shaped tensors (bit patterns mapped onto
    a monotonic integer line, so that -0.0 and +0.0 are one apart and signs cross correctly)."""
    import torch

    def line(t):
        i = t.float().contiguous().view(torch.int32).to(torch.int64)
        return torch.where(i < 0, -(i & 0x7FFFFFFF), i)

    return int((line(x) - line(y)).abs().max())


def observe(ctx: Context) -> Observation:
    import torch

    from kernels import plan_splitk, splitk_matmul
    from kernels.numerics import random_operands

    a, b = random_operands(M, N, K, torch.float32, seed=17, device=ctx.device)
    ref = a.double() @ b.double()
    data = {"shape": [M, N, K], "split_k": SPLIT, "runs": RUNS}
    for mode, det in (("atomic", False), ("deterministic", True)):
        plan = plan_splitk(a, b, SPLIT, deterministic=det)
        first = splitk_matmul(a, b, SPLIT, deterministic=det)
        worst, differing = 0, 0
        for _ in range(RUNS - 1):
            c = splitk_matmul(a, b, SPLIT, deterministic=det)
            d = ulp_distance(c, first)
            worst = max(worst, d)
            differing += d > 0
        torch.cuda.synchronize() if ctx.device == "cuda" else None
        err = float((first.double() - ref).norm() / ref.norm())
        data[mode] = {"max_ulps": worst, "runs_differing": differing, "rel_err": err,
                      "plan": f"{plan.config}-S{plan.split_k} fused={plan.fused} "
                              f"loader={plan.loader.loader}"}  # fmt: skip
        if not err < 1e-5:
            return Observation("broken", f"{mode} mode: relative error {err:.2e}", data)
    data["max_ulps"] = data["atomic"]["max_ulps"]
    if data["deterministic"]["max_ulps"]:
        return Observation(
            "broken",
            f"deterministic mode differed by {data['deterministic']['max_ulps']} ulps",
            data,
        )
    status = "nondeterministic" if data["max_ulps"] else "deterministic"
    return Observation(
        status,
        f"atomic mode: max {data['max_ulps']} ulps over {RUNS} runs "
        f"({data['atomic']['runs_differing']} differed); deterministic mode bitwise stable",
        data,
    )
