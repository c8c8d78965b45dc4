"""``tl.dot(..., allow_tf32=True)``: still accepted, accepted with a warning, or refused.

``allow_tf32`` predates ``input_precision``. A float32 dot passing it is run (interpret) or
compiled (aot); an exception is ``removed``, a warning mentioning it or deprecation is
``deprecated``, silence is ``accepted``.
"""

import triton
import triton.language as tl

from matrix.probes.support.base import Context, Observation, exercise
from matrix.probes.support.dot_precision import load_square, store_square
from matrix.probes.support.keywords import classify_keyword

BLOCK = 16


@triton.jit
def dot_allow_tf32(a, b, c, BLOCK: tl.constexpr):
    x, y = load_square(a, BLOCK), load_square(b, BLOCK)
    store_square(c, tl.dot(x, y, allow_tf32=True), BLOCK)


def observe(ctx: Context) -> Observation:
    import torch

    device = ctx.tensor_device
    gen = torch.Generator().manual_seed(3)
    a = torch.randn(BLOCK, BLOCK, generator=gen).to(device)
    b = torch.randn(BLOCK, BLOCK, generator=gen).to(device)
    c = torch.full((BLOCK, BLOCK), float("nan"), device=device)
    out = exercise(ctx, dot_allow_tf32, {"a": a, "b": b, "c": c}, {"BLOCK": BLOCK})
    correct = None
    if ctx.backend != "aot" and not out.raised:
        ref = a.double() @ b.double()
        correct = bool(((c.double() - ref).norm() / ref.norm()) < 1e-2)
    return classify_keyword(out, "allow_tf32", correct)
