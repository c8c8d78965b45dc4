"""``dot_f32_default_precision`` with ``TRITON_F32_DEFAULT=ieee`` in the environment.

Same method; the runner sets the variable for this probe's child process (see the catalog's
``env``) and the compile uses a fresh cache, so the answer cannot come from a stale entry.
A release that ignores the variable reports what it does without it.
"""

from matrix.probes.support.base import Context, Observation
from matrix.probes.support.dot_precision import observe_default_precision


def observe(ctx: Context) -> Observation:
    return observe_default_precision(ctx)
