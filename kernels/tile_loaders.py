"""The two tile loaders and the dot both kernels share, as ``@triton.jit`` helpers.

* pointer: pointer arithmetic with masks, works on every release and any strides;
* descriptor: an in-kernel tensor descriptor that zero-pads outside the matrix (built by
  ``compat.descriptors``), used only where the host checked its alignment rules.

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
def load_b_descriptor_tile(b_desc, k, n, B_KMAJOR: tl.constexpr):
    """The (BLOCK_K, BLOCK_N) tile of B at (k, n).

    With B_KMAJOR the descriptor covers the (N, K) weight that ``b`` is a transposed view of
    (what a linear layer passes), and the tile is loaded as (BLOCK_N, BLOCK_K) then transposed.
    """
    if B_KMAJOR:
        tile = tl.trans(b_desc.load([n, k]))
    else:
        tile = b_desc.load([k, n])
    return tile
