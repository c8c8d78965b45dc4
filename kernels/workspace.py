"""Scratch memory for the single-launch split-K, kept between calls so no call needs a memset.

The fused kernel (``kernels.fused``) leaves its arrival counters at zero and its atomic
workspace zeroed when it ends, so both are allocated (zeroed) once and reused. They are kept
per device and per CUDA stream: two streams running split-K at the same time must not share
counters. A buffer too small for a call is replaced by a larger zeroed one; the caching
allocator's stream ordering keeps the old one alive until earlier launches on that stream end.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class Scratch:
    """One stream's zeroed float32 workspace, int32 arrival counters, and the float32 slices
    ordered mode writes (one per split; fully written before they are read, so never zeroed)."""

    ws: torch.Tensor
    locks: torch.Tensor
    slices: torch.Tensor


_SCRATCH: dict[tuple[str, int, int], Scratch] = {}


def _grown(
    have: torch.Tensor | None, need: int, dtype: torch.dtype, zero: bool, dev: torch.device
) -> torch.Tensor:
    """``have`` if it holds ``need`` elements, else a new buffer of at least twice its size."""
    old = have.numel() if have is not None else 0
    if have is not None and old >= need:
        return have
    make = torch.zeros if zero else torch.empty
    return make(max(need, 2 * old, 1), dtype=dtype, device=dev)


def scratch(
    device: torch.device, ws_elems: int, lock_elems: int, slice_elems: int = 0,
    stream: int | None = None,
) -> Scratch:  # fmt: skip
    """Buffers of at least ``ws_elems`` zeroed floats, ``lock_elems`` zeroed counters and
    ``slice_elems`` floats for ``device``'s ``stream`` (the raw handle; None: its current
    stream), grown geometrically, so a sweep of shapes reallocates rarely."""
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        dev = torch.device("cuda", index)
        if stream is None:
            stream = torch.cuda.current_stream(index).cuda_stream
        key = (device.type, index, stream)
    else:  # the interpreter runs launches one after another: one set is enough
        dev = device
        key = (device.type, 0, 0)
    have = _SCRATCH.get(key)
    new = Scratch(
        _grown(have.ws if have else None, ws_elems, torch.float32, True, dev),
        _grown(have.locks if have else None, lock_elems, torch.int32, True, dev),
        _grown(have.slices if have else None, slice_elems, torch.float32, False, dev),
    )
    if have is None or any(x is not y for x, y in ((new.ws, have.ws), (new.locks, have.locks),
                                                   (new.slices, have.slices))):  # fmt: skip
        _SCRATCH[key] = have = new
    return have


def clear() -> None:
    """Drop every cached buffer (tests; or to give the memory back)."""
    _SCRATCH.clear()
