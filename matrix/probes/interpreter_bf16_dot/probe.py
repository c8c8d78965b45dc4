"""The interpreter's own bfloat16 ``tl.dot``: exact on small integers, or silently wrong.

Small integers are exact in bfloat16 and their products sum exactly in float32, so any
difference is a wrong dot, not rounding. The interpreter computes with numpy and holds bfloat16
as raw 16-bit integers, so its answer can depend on the release and on numpy. ``wrong`` keeps
the first bad element; an exception is ``raises``. (``compat`` runs the same check and makes the
kernels upcast bfloat16 tiles where it fails.)
"""

from __future__ import annotations

from matrix.probes.support.base import Context, Observation, attempt, cause_text


def observe(ctx: Context) -> Observation:
    from compat import trials

    out = attempt(lambda: trials.low_precision_dot("bfloat16", ctx.device))
    if out.exception is not None:
        text = cause_text(out.exception)
        return Observation("raises", text, {"exception": text})
    if out.value == "ok":
        return Observation("correct", "16x16 bf16 dot of small integers is exact")
    return Observation("wrong", out.value)
