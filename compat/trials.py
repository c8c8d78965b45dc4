"""Tiny kernels that ``compat.features`` runs to see a feature work, each checked exactly.

Presence of an API proves nothing about its results: a trial runs it on a small input with a
known answer, on the interpreter or a CUDA device, whichever this process uses.
"""

from typing import Any

import triton
import triton.language as tl

from compat.descriptors import make_descriptor_2d


@triton.jit
def _padded_load(src, dst, R, C, stride_r, BLOCK: tl.constexpr):
    desc = make_descriptor_2d(src, R, C, stride_r, BLOCK, BLOCK)
    tile = desc.load([BLOCK, BLOCK])
    offs = tl.arange(0, BLOCK)
    tl.store(dst + offs[:, None] * BLOCK + offs[None, :], tile)


@triton.jit
def _dot(a, b, c, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(a + offs[:, None] * BLOCK + offs[None, :])
    y = tl.load(b + offs[:, None] * BLOCK + offs[None, :])
    acc = tl.dot(x, y, tl.zeros((BLOCK, BLOCK), dtype=tl.float32))
    tl.store(c + offs[:, None] * BLOCK + offs[None, :], acc)


@triton.jit
def _block_ptr_load(src, dst, R, C, stride_r, BLOCK: tl.constexpr):
    ptr = tl.make_block_ptr(src, (R, C), (stride_r, 1), (BLOCK, BLOCK), (BLOCK, BLOCK), (1, 0))
    tile = tl.load(ptr, boundary_check=(0, 1), padding_option="zero")
    offs = tl.arange(0, BLOCK)
    tl.store(dst + offs[:, None] * BLOCK + offs[None, :], tile)


def _first_mismatch(got: Any, expected: Any) -> str:
    bad = (got != expected).nonzero()[0].tolist()
    return f"element {bad} is {got[tuple(bad)].item()}, expected {expected[tuple(bad)].item()}"


def descriptor_load(device: str) -> str:
    """``"ok"`` if loading the ragged corner block of a 12x12 float32 matrix gives its values with
    zeros outside; ``"failed: ..."`` with the first wrong element otherwise."""
    import torch

    if device == "cuda":
        from compat.allocator import ensure_allocator

        ensure_allocator()
    block, rows, cols = 8, 12, 12
    src = torch.arange(rows * 16, dtype=torch.float32, device=device).reshape(rows, 16) + 1.0
    dst = torch.full((block, block), float("nan"), dtype=torch.float32, device=device)
    _padded_load[(1,)](src, dst, rows, cols, src.stride(0), BLOCK=block)
    expected = torch.zeros((block, block), dtype=torch.float32, device=device)
    expected[: rows - block, : cols - block] = src[block:rows, block:cols]
    return "ok" if torch.equal(dst, expected) else f"failed: {_first_mismatch(dst, expected)}"


def low_precision_dot(dtype_name: str, device: str) -> str:
    """``"ok"`` if ``tl.dot`` of two 16x16 ``dtype_name`` tiles of small integers is exact.

    Small integers are exact in float16 and bfloat16 and their products sum exactly in float32,
    so any difference from the integer product is a wrong dot, not rounding.
    """
    import torch

    dtype = getattr(torch, dtype_name)
    block = 16
    gen = torch.Generator().manual_seed(0)
    a = torch.randint(-4, 5, (block, block), generator=gen).to(dtype).to(device)
    b = torch.randint(-4, 5, (block, block), generator=gen).to(dtype).to(device)
    c = torch.full((block, block), float("nan"), dtype=torch.float32, device=device)
    _dot[(1,)](a, b, c, BLOCK=block)
    expected = a.float() @ b.float()
    return "ok" if torch.equal(c, expected) else f"wrong: {_first_mismatch(c, expected)}"


def block_ptr_load(device: str) -> str:
    """``"ok"`` if a block-pointer load of the ragged corner block of a 12x12 float32 matrix
    (``tl.make_block_ptr``, ``boundary_check``, zero padding) gives its values with zeros
    outside; ``"ok, warns: <category>: <text>"`` when it works and warns (a deprecation);
    ``"failed: ..."`` with the first wrong element otherwise (a raise is ``run_trial``'s)."""
    import warnings

    import torch

    block, rows, cols = 8, 12, 12
    src = torch.arange(rows * 16, dtype=torch.float32, device=device).reshape(rows, 16) + 1.0
    dst = torch.full((block, block), float("nan"), dtype=torch.float32, device=device)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _block_ptr_load[(1,)](src, dst, rows, cols, src.stride(0), BLOCK=block)
    expected = torch.zeros((block, block), dtype=torch.float32, device=device)
    expected[: rows - block, : cols - block] = src[block:rows, block:cols]
    if not torch.equal(dst, expected):
        return f"failed: {_first_mismatch(dst, expected)}"
    if caught:
        w = caught[0]
        return f"ok, warns: {w.category.__name__}: {str(w.message).splitlines()[0][:160]}"
    return "ok"
