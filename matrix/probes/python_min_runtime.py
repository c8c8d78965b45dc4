"""Python's ``min`` on two runtime scalars inside a kernel: works, or rejected.

``k_end = min(k_start + chunk, K)`` with both operands runtime values. ``works`` needs the
right value too (checked on the interpreter); aot only learns whether it compiles.
"""

from __future__ import annotations

import triton
import triton.language as tl

from matrix.probes.base import Context, Observation, exercise, root_cause


@triton.jit
def python_min(out, a, b):
    pid = tl.program_id(0)
    tl.store(out + pid, min(a + pid, b))


def observe(ctx: Context) -> Observation:
    import torch

    device = "cpu" if ctx.backend == "aot" else ctx.device
    out_t = torch.full((1,), -1, dtype=torch.int32, device=device)
    outcome = exercise(ctx, python_min, {"out": out_t, "a": 7, "b": 5}, {})
    if outcome.raised:
        from matrix.aot import AotUnavailable

        if isinstance(outcome.exception, AotUnavailable):
            return Observation("skipped", str(outcome.exception))
        cause = root_cause(outcome.exception)
        text = f"{type(cause).__name__}: {str(cause).strip()}"[:500]
        return Observation("rejected", text, {"exception": text})
    if ctx.backend == "aot":
        return Observation("works", "min(runtime, runtime) compiled", {})
    value = int(out_t.item())
    if value != 5:
        return Observation("rejected", f"ran but gave {value}, expected 5", {"value": value})
    return Observation("works", "min(7, 5) of runtime values gave 5", {"value": value})
