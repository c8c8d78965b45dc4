"""``tl.dot(f32, f32, out_dtype=tl.float16)``: refused, or which dtype it returns.

A team that asks a float32 dot for a float16 result (to halve what it stores) depends on the
frontend taking ``out_dtype`` at its word. The kernel asks, at trace time, which dtype the dot
returned (``d.dtype == tl.float16``) and stores a code (16 or 32); interpret/gpu run it. aot
compiles it and reads the result type of ``tt.dot`` in the TTIR. An exception from the
frontend is this probe's ``rejected``, with the exception in the detail, not a broken probe;
a kernel that ran and stored nothing is ``skipped`` (the dtype was not observed).
"""

import triton
import triton.language as tl

from matrix.probes.support.base import Context, Observation, exercise
from matrix.probes.support.dot_precision import load_square, store_square
from matrix.probes.support.dot_result import dot_result, store_dtype_code

BLOCK = 16
# The code's fill: what it reads when the kernel stored nothing.
NOTHING_STORED = -1


@triton.jit
def f32_dot_out_f16(a, b, c, code, BLOCK: tl.constexpr):
    x, y = load_square(a, BLOCK), load_square(b, BLOCK)
    d = tl.dot(x, y, out_dtype=tl.float16)
    # Storing d keeps the dot alive in compiled IR, where its result type is read.
    store_square(c, d.to(tl.float32), BLOCK)
    store_dtype_code(d, code)


def observe(ctx: Context) -> Observation:
    import torch

    if ctx.backend == "aot":
        t = torch.empty(BLOCK, BLOCK, dtype=torch.float32)
        args = {"a": t, "b": t, "c": t, "code": torch.empty(1, dtype=torch.int32)}
    else:
        gen = torch.Generator().manual_seed(2)
        a = torch.randn(BLOCK, BLOCK, generator=gen).to(ctx.device)
        b = torch.randn(BLOCK, BLOCK, generator=gen).to(ctx.device)
        code = torch.full((1,), NOTHING_STORED, dtype=torch.int32, device=ctx.device)
        c = torch.full((BLOCK, BLOCK), float("nan"), device=ctx.device)
        args = {"a": a, "b": b, "c": c, "code": code}
    out = exercise(ctx, f32_dot_out_f16, args, {"BLOCK": BLOCK})
    return dot_result(ctx, out, args["code"], NOTHING_STORED)
