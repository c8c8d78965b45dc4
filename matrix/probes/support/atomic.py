"""Shared by the low-precision atomic probes: ``tl.atomic_add`` on a float16/bfloat16 pointer."""

from typing import Any

import triton
import triton.language as tl

from matrix.probes.support.base import Context, Observation, exercise, refusal

N = 64


@triton.jit
def atomic_add_twice(dst, src, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(src + offs)
    tl.atomic_add(dst + offs, x)
    tl.atomic_add(dst + offs, x)


def observe_atomic(ctx: Context, dtype_name: str) -> Observation:
    """accepted (with data.correct: dst == 2*src, exact for small integers) or rejected."""
    import torch

    dtype = getattr(torch, dtype_name)
    device = ctx.tensor_device
    src = torch.randint(-8, 9, (N,)).to(dtype).to(device)
    dst = torch.zeros(N, dtype=dtype, device=device)
    out = exercise(ctx, atomic_add_twice, {"dst": dst, "src": src}, {"N": N})
    refused = refusal(out, "rejected")
    if refused:
        return refused
    data: dict[str, Any] = {"warnings": out.warning_texts()}
    if ctx.backend == "aot":
        return Observation("accepted", f"atomic_add on *{dtype_name} compiled", data)
    data["correct"] = bool(torch.equal(dst, src * 2))
    verdict = "exact" if data["correct"] else "WRONG numbers"
    return Observation("accepted", f"atomic_add on {dtype_name} ran: {verdict}", data)
