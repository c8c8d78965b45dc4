"""Scratch memory for in-kernel tensor descriptors on a GPU.

Releases that build descriptors inside kernels ask the host for global scratch through
``triton.set_allocator``; without one, the launch fails with "no allocator was set". Releases
without ``set_allocator`` need none. Installing the torch-backed allocator once is harmless for
kernels that need no scratch.
"""

from __future__ import annotations

import functools

import triton


@functools.cache
def ensure_allocator() -> bool:
    """Install a torch-backed allocator if this release has ``triton.set_allocator``.

    Returns True when one was installed.
    """
    set_allocator = getattr(triton, "set_allocator", None)
    if set_allocator is None:
        return False
    import torch

    def _alloc(size: int, alignment: int, stream):  # signature fixed by Triton
        return torch.empty(size, dtype=torch.int8, device="cuda")

    set_allocator(_alloc)
    return True
