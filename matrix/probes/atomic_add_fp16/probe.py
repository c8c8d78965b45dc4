"""``tl.atomic_add`` into a float16 tensor: accepted (and exact on small integers) or rejected.

Same method as ``atomic_add_bf16``.
"""

from matrix.probes.support.atomic import observe_atomic
from matrix.probes.support.base import Context, Observation


def observe(ctx: Context) -> Observation:
    return observe_atomic(ctx, "float16")
