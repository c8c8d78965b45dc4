"""Tiny kernels that decide a GPU-path option by running it once, checked exactly."""

import triton
import triton.language as tl


@triton.jit
def _relaxed_add(dst, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.atomic_add(dst + offs, offs.to(tl.float32) + 1.0, sem="relaxed")


def relaxed_atomic_add(device: str) -> str:
    """``"ok"`` if two programs' ``sem="relaxed"`` atomic adds sum exactly; else why not."""
    import torch

    block = 32
    try:
        dst = torch.zeros(block, dtype=torch.float32, device=device)
        _relaxed_add[(2,)](dst, BLOCK=block)
        expected = 2.0 * (torch.arange(block, dtype=torch.float32, device=device) + 1.0)
        return "ok" if torch.equal(dst, expected) else f"wrong: {dst.tolist()[:4]}..."
    except Exception as e:  # a release without the keyword or value: do not use it
        return f"failed: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
