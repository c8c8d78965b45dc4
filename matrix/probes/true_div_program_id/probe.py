"""``/`` on a program id used in pointer arithmetic: rejected (with the error) or works.

``/`` is true division in Triton, so ``pid / 2`` is a float; adding it to a pointer should fail.
The detail keeps the exception text (the seed note names ``IncompatibleTypeErrorImpl``).
"""

import triton
import triton.language as tl

from matrix.probes.support.base import Context, Observation, exercise, refusal


@triton.jit
def true_div_index(out):
    pid = tl.program_id(0)
    half = pid / 2
    tl.store(out + half, 1.0)


def observe(ctx: Context) -> Observation:
    import torch

    device = ctx.tensor_device
    out_t = torch.zeros(4, device=device)
    outcome = exercise(ctx, true_div_index, {"out": out_t}, {})
    refused = refusal(outcome, "rejected")
    if refused:
        return refused
    return Observation("works", "a float offset was accepted in pointer arithmetic", {})
