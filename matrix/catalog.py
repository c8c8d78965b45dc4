"""What the matrix measures, as data: every probe, the statuses it can end with, its backends.

This table is the registry: the runner runs ``matrix/probes/<name>.py`` for each entry on each
of its backends, and the report, the gate and the claims read it without importing Triton.
A status not listed here for a probe is still rendered (as "unknown"), never dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

from matrix.core import COMMON_STATUSES

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
    # Extra environment for the probe's child process (e.g. TRITON_F32_DEFAULT).
    env: tuple[tuple[str, str], ...] = ()
    # The aot targets it compiles for; frontend-only questions need one target, not three;
    # (None,) for a probe that compiles nothing but must run once per release (api_surface).
    aot_targets: tuple[str | None, ...] = AOT_TARGETS
    # On a GPU, run alone in its own child process: what it provokes (a misaligned access) can
    # poison the CUDA context for every later probe in the same process.
    isolated: bool = False

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
        ("absent", "experimental", "supported", "broken"),
        ("interpret", "aot", "gpu"),
        good=("supported", "experimental"),
    ),
    ProbeSpec(
        "descriptor_misaligned",
        "a tensor descriptor over a base or stride that is not 16-byte aligned",
        ("rejected-compile", "rejected-host", "rejected-runtime", "accepted"),
        ("interpret", "gpu"),
        good=("rejected-compile", "rejected-host", "rejected-runtime"),
        isolated=True,
    ),
    ProbeSpec(
        "descriptor_misaligned_stride",
        "a tensor descriptor whose row stride is not a multiple of 16 bytes",
        ("rejected-compile", "rejected-host", "rejected-runtime", "accepted"),
        ("interpret", "gpu"),
        good=("rejected-compile", "rejected-host", "rejected-runtime"),
        isolated=True,
    ),
    ProbeSpec(
        "dot_f32_default_precision",
        "the input precision of a float32 tl.dot with no argument",
        ("tf32", "ieee", "tf32x3", "bf16x3", "bf16x6", "hf32", "unknown"),
        ("aot", "gpu"),
        good=("tf32", "ieee", "tf32x3", "bf16x3", "bf16x6", "hf32"),
    ),
    ProbeSpec(
        "dot_f32_default_precision_env_ieee",
        "the same with TRITON_F32_DEFAULT=ieee set",
        ("tf32", "ieee", "tf32x3", "bf16x3", "bf16x6", "hf32", "unknown"),
        ("aot", "gpu"),
        good=("ieee",),
        env=(("TRITON_F32_DEFAULT", "ieee"),),
    ),
    ProbeSpec(
        "dot_acc_out_dtype",
        "tl.dot(f16, f16, acc=f16) with no out_dtype",
        ("rejected", "fp16", "fp32"),
        ("interpret", "aot", "gpu"),
        good=("fp16", "fp32"),
    ),
    ProbeSpec(
        "allow_tf32",
        "tl.dot(..., allow_tf32=True), the keyword input_precision replaced",
        ("accepted", "deprecated", "removed"),
        ("interpret", "aot", "gpu"),
        good=("accepted",),
        aot_targets=("cuda:90",),
    ),
    ProbeSpec(
        "boundary_check",
        "the boundary_check keyword of tl.load / tl.store",
        ("accepted", "deprecated", "removed"),
        ("interpret", "aot", "gpu"),
        good=("accepted",),
        aot_targets=("cuda:90",),
    ),
    ProbeSpec(
        "atomic_add_fp16",
        "tl.atomic_add into a float16 tensor",
        ("accepted", "rejected"),
        ("interpret", "aot", "gpu"),
        good=("accepted",),
    ),
    ProbeSpec(
        "atomic_add_bf16",
        "tl.atomic_add into a bfloat16 tensor",
        ("accepted", "rejected"),
        ("interpret", "aot", "gpu"),
        good=("accepted",),
    ),
    ProbeSpec(
        "python_min_runtime",
        "Python min() on runtime scalars in a kernel",
        ("works", "rejected", "wrong"),
        ("interpret", "aot", "gpu"),
        good=("works",),
        aot_targets=("cuda:90",),
    ),
    ProbeSpec(
        "true_div_program_id",
        "/ on a program id, used as a pointer offset",
        ("rejected", "works"),
        ("interpret", "aot", "gpu"),
        good=("rejected",),
        aot_targets=("cuda:90",),
    ),
    ProbeSpec(
        "interpreter_bf16_dot",
        "the interpreter's own bfloat16 tl.dot (numpy-backed)",
        ("correct", "wrong", "raises"),
        ("interpret",),
        good=("correct",),
    ),
    ProbeSpec(
        "splitk_nondeterminism",
        "split-K's float32 tl.atomic_add reduction run to run on a GPU, with a kernel of the "
        "probe's own: largest difference in ulps (data.max_ulps); broken when a sum breaks "
        "the float32 summation bound",
        ("nondeterministic", "deterministic", "broken"),
        ("gpu",),
        good=("nondeterministic", "deterministic"),
    ),
    ProbeSpec(
        "dot_f32_precision_error",
        "the error of a float32 tl.dot's default precision against ieee and tf32x3 (K = 4096)",
        ("ieee", "tf32", "tf32x3", "near-ieee", "near-tf32", "near-tf32x3", "unknown"),
        ("gpu",),
        good=("ieee", "tf32", "tf32x3"),
    ),
    ProbeSpec(
        "allocator_required",
        "whether an in-kernel tensor descriptor needs triton.set_allocator on a GPU",
        ("required", "not-required", "absent", "broken"),
        ("gpu",),
        good=("required", "not-required"),
    ),
    ProbeSpec(
        "api_surface",
        "the release's public API (names, signatures, defaults, class fields) and the "
        "environment variables it reads, as data (data.census; read by matrix.census)",
        ("recorded",),
        ("aot",),
        good=("recorded",),
        # Observed once per release (imports only, no target); a change is listed by the
        # census diff entry by entry, not as a status change of this row.
        behavioural=False,
        aot_targets=(None,),
    ),
    ProbeSpec(
        "fp",
        "the semantic fingerprint: result dtypes, refusals, edge values, dot and atomic "
        "combinations, language rules, runtime defaults; one row fp.<group> per group, each "
        "with data.cells (matrix/fingerprint.py reads them)",
        ("observed",),
        ("interpret", "aot", "gpu"),
        good=("observed",),
        behavioural=False,  # its cells carry the behaviour; matrix.fingerprint compares them
        aot_targets=("cuda:90",),
    ),
)

PROBES_BY_NAME = {p.name: p for p in PROBES}
