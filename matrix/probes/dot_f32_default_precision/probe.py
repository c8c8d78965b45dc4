"""The precision a float32 ``tl.dot`` gets when no ``input_precision`` is given, per target.

aot: compiles ``tl.dot(x, y)`` on float32 tiles for the target and reads the TTIR attribute
(``inputPrecision``; "ieee" is the default and not printed) and the matrix instructions in the
PTX/AMDGCN as evidence. gpu: runs the default and each explicit precision on the same data and
reports the one whose numbers the default matches bit for bit, with every relative error.
"""

from matrix.probes.support.base import Context, Observation
from matrix.probes.support.dot_precision import observe_default_precision


def observe(ctx: Context) -> Observation:
    return observe_default_precision(ctx)
