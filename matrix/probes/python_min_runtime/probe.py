"""Python's ``min`` on two runtime scalars inside a kernel: works, rejected, or wrong.

``k_end = min(k_start + chunk, K)`` with both operands runtime values. ``works`` needs the
right value too (checked where it runs); ``wrong`` means it ran without an error but stored
something else (or nothing); aot only learns whether it compiles.
"""

import triton
import triton.language as tl

from matrix.probes.support.base import Context, Observation, exercise, refusal


@triton.jit
def python_min(out, a, b):
    pid = tl.program_id(0)
    tl.store(out + pid, min(a + pid, b))


def observe(ctx: Context) -> Observation:
    import torch

    device = ctx.tensor_device
    out_t = torch.full((1,), -1, dtype=torch.int32, device=device)
    outcome = exercise(ctx, python_min, {"out": out_t, "a": 7, "b": 5}, {})
    refused = refusal(outcome, "rejected")
    if refused:
        return refused
    if ctx.backend == "aot":
        return Observation("works", "min(runtime, runtime) compiled", {})
    value = int(out_t.item())
    if value != 5:
        what = "nothing (the output kept its -1 fill)" if value == -1 else str(value)
        return Observation("wrong", f"ran without error but stored {what}, expected 5",
                           {"value": value})  # fmt: skip
    return Observation("works", "min(7, 5) of runtime values gave 5", {"value": value})
