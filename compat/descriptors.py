"""One spelling of "build a 2-D tensor descriptor in a kernel", whatever the release calls it.

Two constraints shape this module:

* The interpreter runs builtins by patching ``triton.language`` attributes, so the constructor
  must be reached as ``tl.<name>`` inside the kernel body; an alias bound at import misses it.
* Old releases resolve every ``tl.<name>`` a jitted function mentions when they compute its
  cache key, even inside a branch that is never compiled, so a kernel must not mention a name
  the release lacks. Hence one definition per release family, chosen here at import by what
  ``triton.language`` has.
"""

import triton
import triton.language as tl

if callable(getattr(tl, "make_tensor_descriptor", None)):

    @triton.jit
    def make_descriptor_2d(base, R, C, stride_r, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
        """A descriptor over the row-major (R, C) matrix at ``base`` (last dimension
        contiguous), loading BLOCK_R x BLOCK_C tiles with zeros outside the matrix."""
        return tl.make_tensor_descriptor(
            base, shape=[R, C], strides=[stride_r, 1], block_shape=[BLOCK_R, BLOCK_C]
        )

elif callable(getattr(tl, "_experimental_make_tensor_descriptor", None)):

    @triton.jit
    def make_descriptor_2d(base, R, C, stride_r, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
        """As above, through the experimental constructor (the only one on these releases)."""
        return tl._experimental_make_tensor_descriptor(
            base, shape=[R, C], strides=[stride_r, 1], block_shape=[BLOCK_R, BLOCK_C]
        )

else:

    @triton.jit
    def make_descriptor_2d(base, R, C, stride_r, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
        """No descriptors on this release: the kernels never compile the branch calling this."""
        tl.static_assert(False, "this Triton release has no in-kernel tensor descriptors")
