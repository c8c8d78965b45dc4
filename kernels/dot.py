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
def _opaque(x):
    """``x`` through an identity the compiler cannot see through (inline PTX ``mov``): a
    ``tl.dot`` operand made here is in registers, not a load Triton may stage in shared memory."""
    return tl.inline_asm_elementwise(
        "mov.b32 $0, $1;", "=r,r", [x], dtype=tl.float32, is_pure=True, pack=1
    )


@triton.jit
def product_acc(
    a, b, acc, PRODUCT: tl.constexpr, PRECISION: tl.constexpr,
    HAS_INPUT_PRECISION: tl.constexpr, UPCAST: tl.constexpr, ASM: tl.constexpr,
):  # fmt: skip
    """``acc + a @ b`` in one of the product forms a tuned entry names (``kernels.gpu_plan``):

    * ``"dot"``: ``dot_acc``, the plain ``tl.dot``;
    * ``"swap"``: the transposed product ``acc^T + b^T @ a^T``; ``acc`` is then the (BN, BM)
      transposed accumulator, and the kernel transposes it once after the K loop. Hopper's
      tf32 wgmma reads shared-memory operands only K-major; with ``b`` N-contiguous (``kn``)
      the swap puts ``a^T`` (K-contiguous) in the B slot and ``b^T`` in the A slot, which
      wgmma can also take from registers. ``b^T`` goes through ``_opaque`` so that it does
      (``ASM``, off in the interpreter): without it Triton 3.6 staged ``b^T`` in shared
      memory with the same transposing layout as the plain dot, and it timed the same;
    * ``"fma3d"``: ``acc + a[:, None, :] * b^T[None, :, :]``, a broadcast multiply-add into
      a (BM, BN, BK) accumulator that the kernel sums over K once after the loop: float32
      multiply-adds like the FMA ``tl.dot`` an ieee fp32 dot runs on (the tuned BLOCK_K is
      short: the accumulator is BM x BN x BK registers). K is the last axis on purpose:
      ``sum(a[:, :, None] * b[None, :, :], 1)`` is rewritten by Triton's combine pass into a
      ``tl.dot`` of default (tf32) precision (rel. error 7.6e-4 on an H200, Triton 3.6,
      against 1e-7 for ieee);
    * ``"nmajor"``: the plain ``tl.dot`` on a B tile the fused kernel first passed through an
      N-contiguous register layout (``kernels.fused``). For ``nk_t`` (B read K-contiguous)
      Triton stages an FMA dot's B operand in an unswizzled K-major shared tile, which the
      dot reads with the lanes of a warp on different rows at one K: one bank for all of
      them (TTGIR and PTX on 3.6, cuda:90). Through the N-contiguous layout the tile is read
      once from the K-major buffer, stored N-major, and the dot reads that without conflicts.
    """
    if PRODUCT == "swap":
        bt = tl.trans(b)
        if ASM:
            bt = _opaque(bt.to(tl.float32))
        acc = dot_acc(bt, tl.trans(a), acc, PRECISION, HAS_INPUT_PRECISION, UPCAST)
    elif PRODUCT == "fma3d":
        bt = tl.trans(b.to(tl.float32))
        acc += a.to(tl.float32)[:, None, :] * bt[None, :, :]
    else:
        acc = dot_acc(a, b, acc, PRECISION, HAS_INPUT_PRECISION, UPCAST)
    return acc
