"""What the matrix measures, as data: every probe, the statuses it can end with, its backends.

This table is the registry: the runner runs ``matrix/probes/<name>.py`` for each entry on each
of its backends, and the report, the gate and the claims read it without importing Triton.
A status not listed here for a probe is still rendered (as "unknown"), never dropped.

It is also the one table of what a status *means* for a team upgrading (``MEANINGS``): every
status of every probe is good, breaking, silently wrong, changed (needs a look), neutral or not
measured. Pages, the Markdown report and the gate read ``meaning_of``; nothing else decides it.

>>> meaning_of("block_ptr", "removed")
'breaking'
>>> meaning_of("block_ptr", "supported", {"correct": False})
'wrong'
>>> meaning_of("no_such_probe", "fail")
'breaking'
"""

from __future__ import annotations

from dataclasses import dataclass

from matrix.core import COMMON_STATUSES


@dataclass(frozen=True)
class Meaning:
    """What a status means for a team deciding an upgrade; shown as icon, label and colour."""

    name: str
    label: str
    icon: str
    text: str
    # True when a cell with this meaning is a problem ("only problems" filter, upgrade page).
    problem: bool = False


MEANINGS: tuple[Meaning, ...] = (
    Meaning("breaking", "breaking", "✖", "code that worked stops compiling or running, or a "
            "check fails", problem=True),
    Meaning("wrong", "silently wrong", "⚠", "runs without complaint and gives a wrong result",
            problem=True),
    Meaning("changed", "changed", "△", "still works, differently: a warning, another default; "
            "needs a look"),
    Meaning("good", "good", "✔", "works as a team expects"),
    Meaning("neutral", "neutral", "●", "a fact about the release, neither good nor bad"),
    Meaning("unmeasured", "not measured", "∅", "nothing observed: skipped, the probe broke, "
            "no run, or the release did not install"),
)  # fmt: skip
MEANINGS_BY_NAME = {m.name: m for m in MEANINGS}

# What the statuses every probe may end with mean (DESIGN.md): ``error`` is our probe breaking,
# so nothing about Triton was seen; a crash or a hang of the child is what a kernel would see too.
COMMON_MEANINGS = {"skipped": "unmeasured", "error": "unmeasured", "crashed": "breaking",
                   "timeout": "breaking", "fail": "breaking"}  # fmt: skip
# A status the catalog does not list for the probe: someone has to look at it.
UNLISTED_MEANING = "changed"

# Targets the aot backend compiles for, with no GPU present.
AOT_TARGETS = ("cuda:80", "cuda:90", "hip:gfx942")


@dataclass(frozen=True)
class ProbeSpec:
    """One row family of the matrix: a probe and what its statuses mean."""

    name: str
    summary: str
    statuses: tuple[str, ...]
    backends: tuple[str, ...]
    # What each status means for a team (MEANINGS): statuses listed in none of these four are
    # neutral. Good news for a team upgrading:
    good: tuple[str, ...] = ()
    # Code that worked stops working (removed, refused, failing):
    breaking: tuple[str, ...] = ()
    # Runs and gives a wrong result (a misaligned descriptor accepted, a wrong value):
    wrong: tuple[str, ...] = ()
    # Works, differently (a deprecation warning, an experimental spelling): needs a look.
    changed: tuple[str, ...] = ()
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

    def meaning(self, status: str) -> str:
        """The MEANINGS name of ``status`` for this probe."""
        for name in ("good", "breaking", "wrong", "changed"):
            if status in getattr(self, name):
                return name
        if status in COMMON_MEANINGS:
            return COMMON_MEANINGS[status]
        return "neutral" if status in self.statuses else UNLISTED_MEANING

    def __str__(self) -> str:
        return self.name


PROBES: tuple[ProbeSpec, ...] = (
    ProbeSpec(
        "splitk",
        "split-K matmul: right numbers under the interpreter or on a GPU; compiles (aot)",
        ("pass", "fail"),
        ("interpret", "aot", "gpu"),
        good=("pass",),
        breaking=("fail",),
        behavioural=False,
    ),
    ProbeSpec(
        "tiled",
        "tiled matmul: right numbers under the interpreter or on a GPU; compiles (aot)",
        ("pass", "fail"),
        ("interpret", "aot", "gpu"),
        good=("pass",),
        breaking=("fail",),
        behavioural=False,
    ),
    ProbeSpec(
        "loader",
        "the tile loader compat chooses at import",
        ("pointer", "descriptor"),
        ("interpret", "gpu"),
    ),
    ProbeSpec(
        "block_ptr",
        "tl.make_block_ptr / tl.advance / boundary_check",
        ("supported", "deprecated", "removed"),
        ("interpret", "aot", "gpu"),
        good=("supported",),
        changed=("deprecated",),
        breaking=("removed",),
    ),
    ProbeSpec(
        "tensor_descriptor",
        "an in-kernel tensor-descriptor constructor",
        ("absent", "experimental", "supported", "broken"),
        ("interpret", "aot", "gpu"),
        good=("supported",),
        changed=("experimental",),
        breaking=("broken",),
    ),
    ProbeSpec(
        "descriptor_misaligned",
        "a tensor descriptor over a base or stride that is not 16-byte aligned",
        ("rejected-compile", "rejected-host", "rejected-runtime", "accepted"),
        ("interpret", "gpu"),
        good=("rejected-compile", "rejected-host", "rejected-runtime"),
        isolated=True,
        wrong=("accepted",),
    ),
    ProbeSpec(
        "descriptor_misaligned_stride",
        "a tensor descriptor whose row stride is not a multiple of 16 bytes",
        ("rejected-compile", "rejected-host", "rejected-runtime", "accepted"),
        ("interpret", "gpu"),
        good=("rejected-compile", "rejected-host", "rejected-runtime"),
        isolated=True,
        wrong=("accepted",),
    ),
    ProbeSpec(
        "dot_f32_default_precision",
        "the input precision of a float32 tl.dot with no argument",
        ("tf32", "ieee", "tf32x3", "bf16x3", "bf16x6", "hf32", "unknown"),
        ("aot", "gpu"),
        changed=("unknown",),
    ),
    ProbeSpec(
        "dot_f32_default_precision_env_ieee",
        "the same with TRITON_F32_DEFAULT=ieee set",
        ("tf32", "ieee", "tf32x3", "bf16x3", "bf16x6", "hf32", "unknown"),
        ("aot", "gpu"),
        good=("ieee",),
        env=(("TRITON_F32_DEFAULT", "ieee"),),
        wrong=("tf32", "tf32x3", "bf16x3", "bf16x6", "hf32"),
        changed=("unknown",),
    ),
    ProbeSpec(
        "dot_acc_out_dtype",
        "tl.dot(f16, f16, acc=f16) with no out_dtype",
        ("rejected", "fp16", "fp32"),
        ("interpret", "aot", "gpu"),
        good=("fp16", "fp32"),
        breaking=("rejected",),
    ),
    ProbeSpec(
        "allow_tf32",
        "tl.dot(..., allow_tf32=True), the keyword input_precision replaced",
        ("accepted", "deprecated", "removed"),
        ("interpret", "aot", "gpu"),
        good=("accepted",),
        aot_targets=("cuda:90",),
        changed=("deprecated",),
        breaking=("removed",),
    ),
    ProbeSpec(
        "boundary_check",
        "the boundary_check keyword of tl.load / tl.store",
        ("accepted", "deprecated", "removed"),
        ("interpret", "aot", "gpu"),
        good=("accepted",),
        aot_targets=("cuda:90",),
        changed=("deprecated",),
        breaking=("removed",),
    ),
    ProbeSpec(
        "atomic_add_fp16",
        "tl.atomic_add into a float16 tensor",
        ("accepted", "rejected"),
        ("interpret", "aot", "gpu"),
        good=("accepted",),
        breaking=("rejected",),
    ),
    ProbeSpec(
        "atomic_add_bf16",
        "tl.atomic_add into a bfloat16 tensor",
        ("accepted", "rejected"),
        ("interpret", "aot", "gpu"),
        good=("accepted",),
        breaking=("rejected",),
    ),
    ProbeSpec(
        "python_min_runtime",
        "Python min() on runtime scalars in a kernel",
        ("works", "rejected", "wrong"),
        ("interpret", "aot", "gpu"),
        good=("works",),
        aot_targets=("cuda:90",),
        breaking=("rejected",),
        wrong=("wrong",),
    ),
    ProbeSpec(
        "true_div_program_id",
        "/ on a program id, used as a pointer offset",
        ("rejected", "works"),
        ("interpret", "aot", "gpu"),
        good=("rejected",),
        aot_targets=("cuda:90",),
        wrong=("works",),
    ),
    ProbeSpec(
        "interpreter_bf16_dot",
        "the interpreter's own bfloat16 tl.dot (numpy-backed)",
        ("correct", "wrong", "raises"),
        ("interpret",),
        good=("correct",),
        wrong=("wrong",),
        breaking=("raises",),
    ),
    ProbeSpec(
        "splitk_nondeterminism",
        "split-K's float32 tl.atomic_add reduction run to run on a GPU, with a kernel of the "
        "probe's own: largest difference in ulps (data.max_ulps); broken when a sum breaks "
        "the float32 summation bound",
        ("nondeterministic", "deterministic", "broken"),
        ("gpu",),
        good=("nondeterministic", "deterministic"),
        wrong=("broken",),
    ),
    ProbeSpec(
        "dot_f32_precision_error",
        "the error of a float32 tl.dot's default precision against ieee and tf32x3 (K = 4096)",
        ("ieee", "tf32", "tf32x3", "near-ieee", "near-tf32", "near-tf32x3", "unknown"),
        ("gpu",),
        good=("ieee", "tf32", "tf32x3"),
        changed=("near-ieee", "near-tf32", "near-tf32x3", "unknown"),
    ),
    ProbeSpec(
        "allocator_required",
        "whether an in-kernel tensor descriptor needs triton.set_allocator on a GPU",
        ("required", "not-required", "absent", "broken"),
        ("gpu",),
        good=("required", "not-required"),
        breaking=("broken",),
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


def meaning_of(probe: str, status: str, data: dict | None = None) -> str:
    """What ``status`` of ``probe`` means for a team, given the result's evidence ``data``.

    Evidence overrides the status: a result whose data says ``correct: false`` is silently wrong
    whatever the status word (``block_ptr`` "supported" with wrong numbers is not good news).
    A probe the catalog does not know gets the common meanings, else "changed".
    """
    if data and data.get("correct") is False:
        return "wrong"
    spec = PROBES_BY_NAME.get(probe)
    if spec is not None:
        return spec.meaning(status)
    return COMMON_MEANINGS.get(status, UNLISTED_MEANING)
