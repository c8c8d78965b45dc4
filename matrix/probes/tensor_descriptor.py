"""The in-kernel tensor-descriptor constructor on this release, tried, not just looked up.

Looks for ``tl.make_tensor_descriptor`` (supported) and then the private
``tl._experimental_make_tensor_descriptor`` (experimental); host-built descriptors don't count.
Then uses it: interpret/gpu load the ragged corner block of a 12x12 matrix through it and check
the values and the zero padding exactly; aot compiles that kernel for the target. A constructor
that exists but raises or gives wrong numbers is ``broken``.
"""

from __future__ import annotations

from matrix.probes.base import Context, Observation, attempt, exercise, root_cause


def observe(ctx: Context) -> Observation:
    import triton.language as tl

    from compat import trials
    from compat.features import find_descriptor_constructor

    found = find_descriptor_constructor(tl)
    if found is None:
        return Observation("absent", "neither tl.make_tensor_descriptor nor "
                           "tl._experimental_make_tensor_descriptor exists")  # fmt: skip
    status, constructor = found
    name = f"tl.{constructor.__name__}"
    if ctx.backend == "aot":
        import torch

        src = torch.empty(12, 16)
        args = {"src": src, "dst": src, "R": 12, "C": 12, "stride_r": 16}
        consts = {"BLOCK": 8, "EXPERIMENTAL": status == "experimental"}
        outcome = exercise(ctx, trials._padded_load, args, consts)
        verdict = "compiled" if not outcome.raised else None
    else:
        outcome = attempt(lambda: trials.descriptor_load(constructor, ctx.device))
        verdict = outcome.value
    data = {"constructor": name, "warnings": outcome.warning_texts()}
    if outcome.raised:
        cause = root_cause(outcome.exception)
        data["exception"] = f"{type(cause).__name__}: {str(cause).strip()}"[:500]
        return Observation("broken", f"{name} exists but raised {data['exception']}", data)
    if verdict not in ("ok", "compiled"):
        return Observation("broken", f"{name} exists but its padded load was {verdict}", data)
    what = "compiled a padded load" if verdict == "compiled" else "padded load exact"
    return Observation(status, f"{name}: {what}", data)
