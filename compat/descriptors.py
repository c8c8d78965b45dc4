"""One spelling of "build a 2-D tensor descriptor in a kernel", whatever the release calls it.

The interpreter runs builtins by patching ``triton.language`` attributes, so the constructor must
be reached as ``tl.<name>`` inside the kernel; an alias bound at import would miss the patch.
``EXPERIMENTAL`` is a compile-time switch: the branch not taken is never compiled, so a release
lacking one of the names still compiles this helper.
"""

import triton
import triton.language as tl


@triton.jit
def make_descriptor_2d(
    base, R, C, stride_r, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr, EXPERIMENTAL: tl.constexpr
):
    """A descriptor over the row-major (R, C) matrix at ``base`` (last dimension contiguous),
    loading BLOCK_R x BLOCK_C tiles with zeros outside the matrix."""
    if EXPERIMENTAL:
        desc = tl._experimental_make_tensor_descriptor(
            base, shape=[R, C], strides=[stride_r, 1], block_shape=[BLOCK_R, BLOCK_C]
        )
    else:
        desc = tl.make_tensor_descriptor(
            base, shape=[R, C], strides=[stride_r, 1], block_shape=[BLOCK_R, BLOCK_C]
        )
    return desc
