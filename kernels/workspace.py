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
    """One stream's zeroed float32 workspace and int32 arrival counters."""

    ws: torch.Tensor
    locks: torch.Tensor


_SCRATCH: dict[tuple[str, int, int], Scratch] = {}


def scratch(device: torch.device, ws_elems: int, lock_elems: int) -> Scratch:
    """Zeroed buffers of at least ``ws_elems`` floats and ``lock_elems`` counters for
    ``device``'s current stream (grown geometrically, so a sweep of shapes reallocates rarely)."""
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        dev = torch.device("cuda", index)
        key = (device.type, index, torch.cuda.current_stream(index).cuda_stream)
    else:  # the interpreter runs launches one after another: one set is enough
        dev = device
        key = (device.type, 0, 0)
    have = _SCRATCH.get(key)
    if have is None or have.ws.numel() < ws_elems or have.locks.numel() < lock_elems:
        old_ws = have.ws.numel() if have else 0
        old_locks = have.locks.numel() if have else 0
        ws_n = max(ws_elems, 2 * old_ws if ws_elems > old_ws else old_ws, 1)
        lock_n = max(lock_elems, 2 * old_locks if lock_elems > old_locks else old_locks, 1)
        have = Scratch(
            torch.zeros(ws_n, dtype=torch.float32, device=dev),
            torch.zeros(lock_n, dtype=torch.int32, device=dev),
        )
        _SCRATCH[key] = have
    return have


def clear() -> None:
    """Drop every cached buffer (tests; or to give the memory back)."""
    _SCRATCH.clear()
