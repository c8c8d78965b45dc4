"""Whether ``tl.load``/``tl.store`` still take the ``boundary_check`` keyword.

Independent of block pointers: a plain pointer load and store pass ``boundary_check=()`` (the
empty value every release documents as the default). ``removed`` if the keyword is refused,
``deprecated`` if it warns, ``accepted`` if silent. Run on the interpreter, compiled for aot.
"""

import triton
import triton.language as tl

from matrix.probes.support.base import Context, Observation, exercise
from matrix.probes.support.keywords import classify_keyword

BLOCK = 16


@triton.jit
def copy_with_boundary_check(src, dst, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(src + offs, boundary_check=())
    tl.store(dst + offs, x, boundary_check=())


def observe(ctx: Context) -> Observation:
    import torch

    device = ctx.tensor_device
    src = torch.randn(BLOCK, device=device)
    dst = torch.full((BLOCK,), float("nan"), device=device)
    out = exercise(ctx, copy_with_boundary_check, {"src": src, "dst": dst}, {"BLOCK": BLOCK})
    correct = bool(torch.equal(src, dst)) if ctx.backend != "aot" and not out.raised else None
    return classify_keyword(out, "boundary_check", correct)
