"""``tl.make_block_ptr`` on this release: works silently, works with a warning, or raises.

A kernel builds a block pointer, advances it, and loads a 16x16 block of a 12x12 matrix with
``boundary_check=(0, 1), padding_option="zero"``, then stores it through a second block pointer.
interpret/gpu run it and check the numbers (values inside, zeros outside); aot compiles it for
the target. Every warning is recorded with its category (Triton's are not all
DeprecationWarning); an exception is recorded with its type and text (innermost cause).

supported: no exception, no warning about block pointers; deprecated: it works and warns;
removed: it raises.
"""

import triton
import triton.language as tl

from matrix.probes.support.base import Context, Observation, cause_text, exercise

BLOCK = 16


@triton.jit
def block_ptr_copy(src, dst, M, N, stride_m, BLOCK: tl.constexpr):
    p = tl.make_block_ptr(src, shape=(M, N), strides=(stride_m, 1), offsets=(0, 0),
                          block_shape=(BLOCK, BLOCK), order=(1, 0))  # fmt: skip
    p = tl.advance(p, (0, 0))
    x = tl.load(p, boundary_check=(0, 1), padding_option="zero")
    q = tl.make_block_ptr(dst, shape=(BLOCK, BLOCK), strides=(BLOCK, 1), offsets=(0, 0),
                          block_shape=(BLOCK, BLOCK), order=(1, 0))  # fmt: skip
    tl.store(q, x)


MENTIONS = ("block_ptr", "block pointer", "advance", "boundary_check")


def classify(outcome, correct: bool | None) -> Observation:
    """Status from what calling the kernel did (see the module docstring)."""
    warns = outcome.warning_texts()
    data = {"warnings": warns, "correct": correct}
    if outcome.raised:
        data["exception"] = cause_text(outcome.exception)
        return Observation("removed", data["exception"], data)
    relevant = [w for w in warns if any(m in w.lower() for m in MENTIONS)]
    if relevant:
        return Observation("deprecated", relevant[0], data)
    detail = "no warning, no exception"
    if correct is False:
        detail += "; but the loaded block was WRONG"
    return Observation("supported", detail, data)


def observe(ctx: Context) -> Observation:
    import torch

    if ctx.backend == "aot":
        src = torch.empty(12, 12)
        args = {"src": src, "dst": src, "M": 12, "N": 12, "stride_m": 12}
        return classify(exercise(ctx, block_ptr_copy, args, {"BLOCK": BLOCK}), None)
    src = torch.randn(12, 12, device=ctx.device)
    dst = torch.full((BLOCK, BLOCK), float("nan"), device=ctx.device)
    args = {"src": src, "dst": dst, "M": 12, "N": 12, "stride_m": 12}
    outcome = exercise(ctx, block_ptr_copy, args, {"BLOCK": BLOCK})
    correct = None
    if not outcome.raised:
        expected = torch.zeros_like(dst)
        expected[:12, :12] = src
        correct = bool(torch.equal(dst, expected))
    return classify(outcome, correct)
