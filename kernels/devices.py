"""What decides a GPU's speed for split-K, read off the device, and which measured device a
tuned table of another card can stand for.

A tuned plan belongs to what the hardware is, not to what it is called: the H100 ("NVIDIA H100
80GB HBM3") and the H200 ("NVIDIA H200") share the architecture (sm90, 132 multiprocessors,
the same shared memory per block) and differ in L2 and memory speed. Keyed by the exact name,
an H100 ran every case untuned at 0.56x cuBLAS; given the H200's table it ran at 1.05x (issue
45, measured on one H100 lease). So a device matches a measured one when the traits below are
equal; otherwise the nearest measured device *of the same architecture* lends its table; an
architecture never measured gets no borrowed table (``kernels.plan_search`` may time one).

>>> h200 = DeviceTraits("NVIDIA H200", "9.0", 132, 62914560, 232448)
>>> h100 = DeviceTraits("NVIDIA H100 80GB HBM3", "9.0", 132, 52428800, 232448)
>>> a100 = DeviceTraits("NVIDIA A100-SXM4-80GB", "8.0", 108, 41943040, 166912)
>>> h200.same_hardware(h200), h100.same_hardware(h200)
(True, False)
>>> nearest_measured(h100, [a100, h200]).name
'NVIDIA H200'
>>> nearest_measured(DeviceTraits("B200", "10.0", 148, 0, 0), [a100, h200]) is None
True
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

# The fields a table's ``[[device]]`` row must hold, and those compared for "the same hardware"
# (a row may leave shared memory or L2 out as 0 = not measured: then it is not compared).
ROW_FIELDS = ("name", "capability", "sms", "l2_bytes", "smem_per_block")


@dataclass(frozen=True)
class DeviceTraits:
    """A CUDA device as split-K sees it; ``name`` is a note, never a key."""

    name: str
    capability: str  # "9.0"
    sms: int
    l2_bytes: int = 0  # 0: unknown
    smem_per_block: int = 0  # the opt-in maximum per block; 0: unknown

    @property
    def arch(self) -> str:
        return "sm" + self.capability.replace(".", "")

    def same_hardware(self, other: DeviceTraits) -> bool:
        """Equal capability and SM count, and equal L2 and shared memory where both know them."""
        if (self.capability, self.sms) != (other.capability, other.sms):
            return False
        return all(
            a == b or not a or not b
            for a, b in ((self.l2_bytes, other.l2_bytes),
                         (self.smem_per_block, other.smem_per_block))
        )  # fmt: skip

    def distance(self, other: DeviceTraits) -> float:
        """Log-distance over SMs, L2 and shared memory (unknowns count as equal)."""
        return sum(
            abs(math.log2(a) - math.log2(b)) if a and b else 0.0
            for a, b in ((self.sms, other.sms), (self.l2_bytes, other.l2_bytes),
                         (self.smem_per_block, other.smem_per_block))
        )  # fmt: skip

    def describe(self) -> str:
        l2 = f", L2 {self.l2_bytes // 2**20} MiB" if self.l2_bytes else ""
        return f"{self.name} ({self.arch}, {self.sms} SMs{l2})"

    def as_row(self) -> dict[str, Any]:
        return {f: getattr(self, f) for f in ROW_FIELDS}


def traits_of_row(row: Mapping[str, Any], where: str) -> DeviceTraits:
    """A table's ``[[device]]`` row; a missing or mistyped field names itself."""
    missing = [f for f in ROW_FIELDS[:3] if f not in row]
    if missing:
        raise ValueError(f"{where}: device row lacks {missing}; expected fields {ROW_FIELDS}")
    try:
        return DeviceTraits(
            str(row["name"]), str(row["capability"]), int(row["sms"]),
            int(row.get("l2_bytes", 0)), int(row.get("smem_per_block", 0)),
        )  # fmt: skip
    except (TypeError, ValueError) as e:
        raise ValueError(f"{where}: device row {dict(row)!r}: {e}") from None


def nearest_measured(device: DeviceTraits, measured: Iterable[DeviceTraits]) -> DeviceTraits | None:
    """The measured device ``device`` takes its table from: the same hardware, else the nearest
    of its architecture, else None (another architecture's tiles are no evidence)."""
    same_arch = [m for m in measured if m.capability == device.capability]
    for m in same_arch:
        if device.same_hardware(m):
            return m
    return min(same_arch, key=device.distance, default=None)


@functools.cache
def current(index: int = 0) -> DeviceTraits:
    """The traits of CUDA device ``index``, read once per process."""
    import torch

    props = torch.cuda.get_device_properties(index)
    return DeviceTraits(
        name=torch.cuda.get_device_name(index),
        capability=f"{props.major}.{props.minor}",
        sms=props.multi_processor_count,
        l2_bytes=int(getattr(props, "L2_cache_size", 0) or 0),
        smem_per_block=int(getattr(props, "shared_memory_per_block_optin", 0) or 0),
    )
