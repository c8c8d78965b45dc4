"""The in-kernel tensor-descriptor constructor on this release, tried, not just looked up.

Looks for ``tl.make_tensor_descriptor`` (supported) and then the private
``tl._experimental_make_tensor_descriptor`` (experimental); host-built descriptors don't count.
Then uses it: interpret/gpu load the ragged corner block of a 12x12 matrix through it and check
the values and the zero padding exactly; aot compiles that kernel for the target. A constructor
that exists but raises or gives wrong numbers is ``broken``.
"""

from __future__ import annotations

from matrix.probes.support.base import Context, Observation, attempt, cause_text, exercise


def observe(ctx: Context) -> Observation:
    import triton.language as tl

    from compat import trials
    from compat.features import CONSTRUCTOR_NAMES, find_descriptor_constructor

    found = find_descriptor_constructor(tl)
    if found is None:
        return Observation("absent", "neither tl.make_tensor_descriptor nor "
                           "tl._experimental_make_tensor_descriptor exists")  # fmt: skip
    status = found[0]
    name = CONSTRUCTOR_NAMES[status]
    if ctx.backend == "aot":
        import torch

        src = torch.empty(12, 16)
        args = {"src": src, "dst": src, "R": 12, "C": 12, "stride_r": 16}
        consts = {"BLOCK": 8}
        outcome = exercise(ctx, trials._padded_load, args, consts)
        verdict = "compiled" if not outcome.raised else None
    else:
        outcome = attempt(lambda: trials.descriptor_load(ctx.device))
        verdict = outcome.value
    data = {"constructor": name, "warnings": outcome.warning_texts()}
    if outcome.exception is not None:
        data["exception"] = cause_text(outcome.exception)
        return Observation("broken", f"{name} exists but raised {data['exception']}", data)
    if verdict not in ("ok", "compiled"):
        return Observation("broken", f"{name} exists but its padded load was {verdict}", data)
    what = "compiled a padded load" if verdict == "compiled" else "padded load exact"
    return Observation(status, f"{name}: {what}", data)
