"""``tl.atomic_add`` into a bfloat16 tensor: accepted (and exact on small integers) or rejected.

Two atomic adds of small integers into a zeroed bfloat16 buffer; interpret/gpu check the sum
exactly, aot compiles for the target. The seed note says low-precision atomics "may not be
supported"; this records where.
"""

from matrix.probes.support.atomic import observe_atomic
from matrix.probes.support.base import Context, Observation


def observe(ctx: Context) -> Observation:
    return observe_atomic(ctx, "bfloat16")
