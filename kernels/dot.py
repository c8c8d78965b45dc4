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


@triton.jit
def product_acc(
    a, b, acc, PRODUCT: tl.constexpr, PRECISION: tl.constexpr,
    HAS_INPUT_PRECISION: tl.constexpr, UPCAST: tl.constexpr,
):  # fmt: skip
    """``acc + a @ b`` in one of the product forms a tuned entry names (``kernels.gpu_plan``):

    * ``"dot"``: ``dot_acc``, the plain ``tl.dot``;
    * ``"swap"``: the transposed product ``acc^T + b^T @ a^T``; ``acc`` is then the (BN, BM)
      transposed accumulator, and the kernel transposes it once after the K loop. Hopper's
      tf32 wgmma reads its shared-memory B operand only K-major: with ``b`` N-contiguous
      (``kn``) the swap puts ``a`` (K-contiguous) in the B slot and ``b`` in the A slot, which
      may come from registers;
    * ``"fma3d"``: ``acc + sum(a[:, :, None] * b[None, :, :], axis=1)``, a broadcast multiply
      summed over the tile's K (kept small by the tuned BLOCK_K). Float32 multiply-adds in
      the order the compiler picks within a tile, like the FMA ``tl.dot`` an ieee fp32 dot
      runs on; it takes the operands in the layout they were loaded in, where the ieee dot
      first converts them into its operand layout.
    """
    if PRODUCT == "swap":
        acc = dot_acc(tl.trans(b), tl.trans(a), acc, PRECISION, HAS_INPUT_PRECISION, UPCAST)
    elif PRODUCT == "fma3d":
        acc += tl.sum(a.to(tl.float32)[:, :, None] * b.to(tl.float32)[None, :, :], axis=1)
    else:
        acc = dot_acc(a, b, acc, PRECISION, HAS_INPUT_PRECISION, UPCAST)
    return acc
