"""``tl.dot(f16, f16, acc=f16)`` with no ``out_dtype``: an error, or which dtype it returns.

The kernel asks, at trace time, which dtype the dot returned (``d.dtype == tl.float16``) and
stores a code (16 or 32); interpret/gpu run it. aot compiles it and reads the result type of
``tt.dot`` in the TTIR. An exception (the frontend refusing an f16 accumulator without
``out_dtype``) is ``error``-as-observed: status ``error`` here is this probe's own verdict, with
the exception in the detail, not a broken probe.
"""

import triton
import triton.language as tl

from matrix.probes.support.base import Context, Observation, exercise
from matrix.probes.support.dot_result import dot_result, store_dtype_code

BLOCK = 16


@triton.jit
def f16_acc_dot(a, b, c, code, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(a + offs[:, None] * BLOCK + offs[None, :])
    y = tl.load(b + offs[:, None] * BLOCK + offs[None, :])
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float16)
    d = tl.dot(x, y, acc)
    # Storing d keeps the dot alive in compiled IR, where its result type is read.
    tl.store(c + offs[:, None] * BLOCK + offs[None, :], d.to(tl.float32))
    store_dtype_code(d, code)


def observe(ctx: Context) -> Observation:
    import torch

    if ctx.backend == "aot":
        t = torch.empty(BLOCK, BLOCK, dtype=torch.float16)
        args = {"a": t, "b": t, "c": t.float(), "code": torch.empty(1, dtype=torch.int32)}
    else:
        gen = torch.Generator().manual_seed(2)
        a = torch.randn(BLOCK, BLOCK, generator=gen).half().to(ctx.device)
        b = torch.randn(BLOCK, BLOCK, generator=gen).half().to(ctx.device)
        code = torch.zeros(1, dtype=torch.int32, device=ctx.device)
        c = torch.full((BLOCK, BLOCK), float("nan"), device=ctx.device)
        args = {"a": a, "b": b, "c": c, "code": code}
    out = exercise(ctx, f16_acc_dot, args, {"BLOCK": BLOCK})
    return dot_result(ctx, out, args["code"])
