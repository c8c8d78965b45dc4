"""Host-side decisions shared by the wrappers: which loader a call can use, and launch options."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

import torch

import compat
from compat.allocator import ensure_allocator
from kernels.config import CPU_TARGET_PROGRAMS, PROGRAMS_PER_SM, TileConfig

DESCRIPTOR_ALIGN_BYTES = 16


@dataclass(frozen=True)
class LoaderPlan:
    """The loader one call uses: ``compat.LOADER`` unless these inputs break descriptor rules."""

    loader: str
    b_kmajor: bool  # the descriptor for B covers the (N, K) tensor b is a transposed view of
    reason: str


def _aligned(nbytes: int) -> bool:
    return nbytes % DESCRIPTOR_ALIGN_BYTES == 0


def descriptor_violation(t: torch.Tensor, name: str, block_cols: int) -> str | None:
    """Why ``t`` (row-major view, last dimension contiguous) cannot back a descriptor, or None.

    Descriptors need a 16-byte aligned base, 16-byte aligned leading strides and a contiguous
    last dimension; the interpreter also asserts 16-byte aligned block offsets, which the tile
    width guarantees when ``block_cols * element_size`` is a multiple of 16.
    """
    size = t.element_size()
    if t.stride(1) != 1:
        return f"{name} has last-dimension stride {t.stride(1)}, not 1"
    if not _aligned(t.data_ptr()):
        return f"{name}'s base address {t.data_ptr():#x} is not 16-byte aligned"
    if not _aligned(t.stride(0) * size):
        return f"{name}'s row stride {t.stride(0)} x {size} bytes is not a multiple of 16"
    if not _aligned(block_cols * size):
        return f"tile width {block_cols} x {size} bytes is not a multiple of 16"
    return None


def loader_plan(a: torch.Tensor, b: torch.Tensor, cfg: TileConfig) -> LoaderPlan:
    """Use descriptors when compat chose them and both operands meet their rules; else pointers.

    Falling back per call (rather than failing) keeps the contract: never an error, never wrong
    numbers, whatever strides or offsets the caller passes.
    """
    if compat.LOADER != "descriptor":
        return LoaderPlan("pointer", False, f"compat.LOADER is {compat.LOADER!r}")
    why = descriptor_violation(a, "a", cfg.block_k)
    b_kmajor = b.stride(1) != 1 and b.stride(0) == 1 and b.shape[1] > 1
    if why is None:
        if b_kmajor:
            why = descriptor_violation(b.t(), "b (as the transposed (N, K) tensor)", cfg.block_k)
        else:
            why = descriptor_violation(b, "b", cfg.block_n)
    if why is not None:
        return LoaderPlan("pointer", False, f"descriptor rules broken: {why}")
    return LoaderPlan("descriptor", b_kmajor, "inputs meet descriptor alignment rules")


@functools.cache
def _sm_count(index: int) -> int:
    return torch.cuda.get_device_properties(index).multi_processor_count


def target_programs(device: torch.device) -> int:
    """How many programs a launch should aim for on ``device`` (see kernels.config)."""
    if device.type == "cuda":
        return PROGRAMS_PER_SM * _sm_count(device.index or 0)
    return CPU_TARGET_PROGRAMS


def launch_options(device: torch.device, cfg: TileConfig, plan: LoaderPlan) -> dict[str, int]:
    """Keyword options for a kernel launch: warps and stages on a GPU, none for the interpreter."""
    if device.type != "cuda":
        return {}
    if plan.loader == "descriptor":
        ensure_allocator()
    return {"num_warps": cfg.num_warps, "num_stages": cfg.num_stages}


def interpreted() -> bool:
    return compat.FEATURES.interpreter


def compile_flags(dtype: torch.dtype) -> dict[str, bool]:
    """Compile-time switches: how to spell tl.dot's precision on this release, and whether
    ``dtype`` tiles must be upcast because this backend's bf16 dot failed its trial."""
    return {
        "HAS_INPUT_PRECISION": compat.FEATURES.dot_input_precision,
        "UPCAST": dtype == torch.bfloat16 and compat.FEATURES.bf16_dot_trial != "ok",
    }


RELAXED_ENV = "KERNELS_RELAXED_ATOMICS"


@functools.cache
def relaxed_atomics() -> bool:
    """Whether the fused split-K may add partials with ``sem="relaxed"`` atomics.

    Found by trying (``kernels.trials.relaxed_atomic_add``): a release may lack the keyword or
    reject the value. The counter that publishes the partials stays acq_rel either way, so
    relaxed adds are correct. ``KERNELS_RELAXED_ATOMICS=0/1`` forces the choice (benchmarks).
    """
    forced = os.environ.get(RELAXED_ENV, "").strip()
    if forced in ("0", "1"):
        return forced == "1"
    if forced:
        raise ValueError(f"{RELAXED_ENV}={forced!r}: expected 0 or 1")
    from kernels.trials import relaxed_atomic_add

    device = "cpu" if interpreted() else "cuda"
    return relaxed_atomic_add(device) == "ok"
