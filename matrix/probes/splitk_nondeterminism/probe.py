"""Run-to-run differences of split-K's float32 atomic reduction on a GPU, in ulps.

The probe has a kernel of its own, so the row describes the release's ``tl.atomic_add``, not
whichever mode or tuned tile ``kernels.splitk_matmul`` picks for a shape (on 3.9.0 the project's
shape entered the tuned table and the row turned ``deterministic`` with no change in Triton).
The data is what split-K reduces: the float32 partial products of one problem (64x64x32768,
64 splits of 512, computed once on the device by torch), each program adding one split's
``BLOCK`` partials into the output with ``tl.atomic_add``, splits fastest so programs adding
into the same elements run together. It runs ``RUNS`` times on the same partials; the largest
difference from the first run, in units in the last place (the distance between the float32 bit
patterns), is ``max_ulps``.

Status: ``nondeterministic`` when runs differ, ``deterministic`` when they never did;
``broken`` when a run's sum breaks the error bound of float32 summation in any order
(``(SPLIT - 1) * 2**-24 * sum(|partials|)`` per element, against a float64 sum): an atomic that
drops or doubles an addition, which no ordering explains.
"""

from __future__ import annotations

import triton
import triton.language as tl

from matrix.probes.support.base import Context, Observation

M = N = 64
K = 32768
SPLIT = 64
BLOCK = 256
RUNS = 50
UNIT_ROUNDOFF = 2.0**-24


@triton.jit
def atomic_split_sum(partials, out, MN, SPLIT: tl.constexpr, BLOCK: tl.constexpr):
    """out[j] += partials[s, j] for this program's split s and block of j."""
    pid = tl.program_id(0)
    split = pid % SPLIT
    offs = (pid // SPLIT) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < MN
    x = tl.load(partials + split * MN + offs, mask=mask, other=0.0)
    tl.atomic_add(out + offs, x, mask=mask)


def ulp_distance(x, y) -> int:
    """Largest distance in float32 ulps between same-shaped tensors (bit patterns mapped onto
    a monotonic integer line: -0.0 and +0.0 coincide, and the smallest subnormals of either
    sign are two apart)."""
    import torch

    def line(t):
        i = t.float().contiguous().view(torch.int32).to(torch.int64)
        return torch.where(i < 0, -(i & 0x7FFFFFFF), i)

    return int((line(x) - line(y)).abs().max())


def split_partials(device: str):
    """(SPLIT, M*N) float32 partial products of one random problem, as split-K makes them."""
    import torch

    from kernels.numerics import random_operands

    a, b = random_operands(M, N, K, torch.float32, seed=17, device=device)
    chunk = K // SPLIT
    # ieee float32 products, so the partials do not depend on the TF32 setting.
    parts = [
        (a[:, s * chunk : (s + 1) * chunk].double() @ b[s * chunk : (s + 1) * chunk].double())
        for s in range(SPLIT)
    ]
    return torch.stack(parts).reshape(SPLIT, M * N).float().contiguous()


def observe(ctx: Context) -> Observation:
    import torch

    partials = split_partials(ctx.device)
    mn = M * N
    grid = (triton.cdiv(mn, BLOCK) * SPLIT,)
    exact = partials.double().sum(0)
    bound = (SPLIT - 1) * UNIT_ROUNDOFF * partials.double().abs().sum(0)
    data: dict = {"shape": [M, N, K], "split_k": SPLIT, "runs": RUNS, "block": BLOCK}
    first = None
    worst, differing, worst_excess = 0, 0, 0.0
    for _ in range(RUNS):
        out = torch.zeros(mn, dtype=torch.float32, device=ctx.device)
        atomic_split_sum[grid](partials, out, mn, SPLIT=SPLIT, BLOCK=BLOCK)
        excess = float(((out.double() - exact).abs() / bound.clamp_min(1e-300)).max())
        worst_excess = max(worst_excess, excess)
        if first is None:
            first = out
            continue
        d = ulp_distance(out, first)
        worst = max(worst, d)
        differing += d > 0
    if ctx.device == "cuda":
        torch.cuda.synchronize()
    data.update(max_ulps=worst, runs_differing=differing, error_over_bound=worst_excess)
    if not worst_excess <= 1.0:
        return Observation(
            "broken",
            f"an atomic sum is off by {worst_excess:.2f}x the float32 summation bound",
            data,
        )
    status = "nondeterministic" if worst else "deterministic"
    return Observation(
        status,
        f"tl.atomic_add float32 split sums: max {worst} ulps over {RUNS} runs "
        f"({differing} of {RUNS - 1} differed from the first); all within the summation bound",
        data,
    )
