"""A kernel that calls a plain function of Triton's own language module through a module
global, as libraries write it (``from triton.language import core``;
``core.get_int_dtype(...)`` in the body), for ``python_in_kernel``'s ``triton_function_constexpr``.

It lives in a module of its own: ``core`` beside ``tl`` among a module's globals makes
3.0.0/3.1.0's interpreter refuse every kernel of that module ("triton.language must be visible
from within jit'd function"), which would otherwise reach the probe's other cases too. Reached
as ``tl.core.get_int_dtype`` instead, 3.9.0 compiles it: the spelling is what decides.
"""

import triton
import triton.language as tl
from triton.language import core


@triton.jit
def k_triton_function_constexpr(out, BITS: tl.constexpr):
    offs = tl.arange(0, 4)
    tl.store(out + offs, offs.to(core.get_int_dtype(BITS, True)))
