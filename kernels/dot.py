"""The dot both kernels share, as a ``@triton.jit`` helper.

The two tile loaders live inline in each kernel, behind the ``USE_DESC`` compile-time switch:
pointer arithmetic with masks (every release, any strides), or an in-kernel tensor descriptor
that zero-pads outside the matrix (built by ``compat.descriptors``, used only where the host
checked its alignment rules). Descriptors stay inline because Triton 3.3 cannot pass a
descriptor to a jitted helper ("'tensor_descriptor_type' object has no attribute 'is_tuple'").

Module-level ``import triton.language as tl`` matters: older releases resolve names in jitted
functions only through the module's globals.
"""

import triton
import triton.language as tl


@triton.jit
def dot_acc(
    a, b, acc, PRECISION: tl.constexpr, HAS_INPUT_PRECISION: tl.constexpr, UPCAST: tl.constexpr
):
    """``acc + a @ b`` in float32 with the requested float32 input precision.

    Releases without ``input_precision`` only know ``allow_tf32``; the branch not taken is never
    compiled, so the unknown keyword is never seen there. ``UPCAST`` converts both tiles to
    float32 first, for backends whose low-precision dot failed compat's trial (the conversion is
    exact and float32 products of bf16 values are exact, so the numbers match a working dot).
    """
    if UPCAST:
        a = a.to(tl.float32)
        b = b.to(tl.float32)
    if HAS_INPUT_PRECISION:
        acc = tl.dot(a, b, acc, input_precision=PRECISION)
    else:
        acc = tl.dot(a, b, acc, allow_tf32=PRECISION == "tf32")
    return acc
