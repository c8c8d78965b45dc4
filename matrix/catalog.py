"""What the matrix measures, as data: every probe, the statuses it can end with, its backends.

The probe modules (``matrix/probes/<name>.py``) do the measuring; this table is what the report,
the gate and the claims read, so that they never need to import Triton. A status not listed here
for a probe is still rendered (as "unknown"), never dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

from matrix.results import COMMON_STATUSES

# Targets the aot backend compiles for, with no GPU present.
AOT_TARGETS = ("cuda:80", "cuda:90", "hip:gfx942")


@dataclass(frozen=True)
class ProbeSpec:
    """One row family of the matrix: a probe and what its statuses mean."""

    name: str
    summary: str
    statuses: tuple[str, ...]
    backends: tuple[str, ...]
    # Statuses that are good news for a team upgrading (the report colours them green).
    good: tuple[str, ...] = ()
    # True when a change of status between releases is a behaviour change worth listing.
    behavioural: bool = True

    @property
    def all_statuses(self) -> tuple[str, ...]:
        return self.statuses + COMMON_STATUSES

    def __str__(self) -> str:
        return self.name


PROBES: tuple[ProbeSpec, ...] = (
    ProbeSpec(
        "splitk",
        "split-K matmul: right numbers under the interpreter or on a GPU; compiles (aot)",
        ("pass", "fail"),
        ("interpret", "aot", "gpu"),
        good=("pass",),
        behavioural=False,
    ),
    ProbeSpec(
        "tiled",
        "tiled matmul: right numbers under the interpreter or on a GPU; compiles (aot)",
        ("pass", "fail"),
        ("interpret", "aot", "gpu"),
        good=("pass",),
        behavioural=False,
    ),
    ProbeSpec(
        "loader",
        "the tile loader compat chooses at import",
        ("pointer", "descriptor"),
        ("interpret", "gpu"),
        good=("pointer", "descriptor"),
    ),
    ProbeSpec(
        "block_ptr",
        "tl.make_block_ptr / tl.advance / boundary_check",
        ("supported", "deprecated", "removed"),
        ("interpret", "aot", "gpu"),
        good=("supported",),
    ),
    ProbeSpec(
        "tensor_descriptor",
        "an in-kernel tensor-descriptor constructor",
        ("absent", "experimental", "supported"),
        ("interpret", "aot", "gpu"),
        good=("supported", "experimental"),
    ),
    ProbeSpec(
        "descriptor_misaligned",
        "a tensor descriptor over a base or stride that is not 16-byte aligned",
        ("rejected-compile", "rejected-host", "rejected-runtime", "accepted"),
        ("interpret", "gpu"),
        good=("rejected-compile", "rejected-host", "rejected-runtime"),
    ),
    ProbeSpec(
        "dot_f32_default_precision",
        "the input precision of a float32 tl.dot with no argument",
        ("tf32", "ieee", "tf32x3", "bf16x3", "bf16x6", "hf32"),
        ("aot", "gpu"),
        good=("tf32", "ieee", "tf32x3", "bf16x3", "bf16x6", "hf32"),
    ),
    ProbeSpec(
        "dot_f32_default_precision_env_ieee",
        "the same with TRITON_F32_DEFAULT=ieee set",
        ("tf32", "ieee", "tf32x3", "bf16x3", "bf16x6", "hf32", "ignored"),
        ("aot", "gpu"),
        good=("ieee",),
    ),
    ProbeSpec(
        "dot_acc_out_dtype",
        "tl.dot(f16, f16, acc=f16) with no out_dtype",
        ("error", "fp16", "fp32"),
        ("interpret", "aot", "gpu"),
        good=("fp16", "fp32"),
    ),
)

PROBES_BY_NAME = {p.name: p for p in PROBES}
