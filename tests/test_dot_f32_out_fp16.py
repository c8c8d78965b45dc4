"""The probe ``dot_f32_out_fp16`` (one folder: matrix/probes/dot_f32_out_fp16/): its catalog
entry, how it classifies what it observes (recorded TTIR, stored codes), what it does under
the interpreter of the test environment's Triton, and which team code it concerns."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import torch

from matrix.analyze.profile import NOT_USED, USED, Matcher
from matrix.catalog import PROBES, PROBES_BY_NAME
from matrix.gate.usage import build_profile
from matrix.probes.dot_f32_out_fp16 import probe
from matrix.probes.support.base import Context, Outcome

NAME = "dot_f32_out_fp16"
# Recorded: Triton 3.9.0's TTIR of this probe's kernel (aot, cuda:90).
TTIR_F32 = (
    "%d_0 = tt.dot %8, %13, %d, inputPrecision = tf32 : tensor<16x16xf32> * "
    "tensor<16x16xf32> -> tensor<16x16xf32> loc(#loc18)"
)


def test_the_catalog_reads_it_from_its_folder_next_to_dot_acc_out_dtype() -> None:
    spec = PROBES_BY_NAME[NAME]
    names = [p.name for p in PROBES]
    assert names.index(NAME) == names.index("dot_acc_out_dtype") + 1
    assert (
        spec.backends == ("interpret", "aot") and spec.version == "9186cdd12fc6b1e4"
    )  # its first measurement, pinned
    assert (spec.meaning("fp16"), spec.meaning("fp32"), spec.meaning("rejected")) == (
        "good", "changed", "breaking"
    )  # fmt: skip


def _observe(monkeypatch, backend: str, outcome: Outcome, code: int | None = None):
    """``observe`` with the launch or compile replaced: ``outcome`` is what it did, ``code``
    what the kernel stored (None: nothing)."""

    def fake(ctx, kernel, args, constexprs):
        assert kernel is probe.f32_dot_out_f16 and constexprs == {"BLOCK": probe.BLOCK}
        assert args["a"].dtype == args["b"].dtype == torch.float32
        if code is not None:
            args["code"][0] = code
        return outcome

    monkeypatch.setattr(probe, "exercise", fake)
    return probe.observe(Context(backend, "cuda:90" if backend == "aot" else None))


@pytest.mark.parametrize(("code", "status"), [(16, "fp16"), (32, "fp32"), (1, "other(1)")])
def test_the_interpreter_code_names_the_dtype(monkeypatch, code: int, status: str) -> None:
    obs = _observe(monkeypatch, "interpret", Outcome(), code)
    assert obs.status == status and obs.data["code"] == code


def test_a_kernel_that_stored_nothing_is_not_an_answer(monkeypatch) -> None:
    """The 3.0/3.1 interpreter ran the kernel and wrote nothing back (observed): skipped."""
    obs = _observe(monkeypatch, "interpret", Outcome(), None)
    assert obs.status == "skipped" and "stored nothing" in obs.detail


def test_a_refusal_and_the_compiled_result_type(monkeypatch) -> None:
    refused = Outcome(exception=AssertionError("out_dtype must be float32"))
    obs = _observe(monkeypatch, "interpret", refused)
    assert obs.status == "rejected" and "out_dtype must be float32" in obs.detail

    class Artifacts:
        def __init__(self, ttir: str) -> None:
            self.ir = {"ttir": ttir}

    assert _observe(monkeypatch, "aot", Outcome(Artifacts(TTIR_F32))).status == "fp32"
    f16 = TTIR_F32.replace("-> tensor<16x16xf32>", "-> tensor<16x16xf16>")
    assert _observe(monkeypatch, "aot", Outcome(Artifacts(f16))).status == "fp16"
    assert _observe(monkeypatch, "aot", Outcome(Artifacts("no dot"))).status == "error"


def test_the_interpreter_of_this_triton_gives_a_status_of_the_catalog() -> None:
    """Real Triton (the test environment's, TRITON_INTERPRET=1): whatever it answers is one
    of the probe's statuses, with the stored code as evidence."""
    obs = probe.observe(Context("interpret", None))
    assert obs.status in PROBES_BY_NAME[NAME].statuses, (obs.status, obs.detail)
    if obs.status != "rejected":
        assert obs.data["code"] == {"fp16": 16, "fp32": 32}[obs.status]


def test_a_team_kernel_asking_float16_of_a_float32_dot_uses_it(tmp_path: Path) -> None:
    kernel = """\
        import triton
        import triton.language as tl

        @triton.jit
        def k(p, B: tl.constexpr):
            x = tl.zeros((B, B), dtype={dtype})
            d = tl.dot(x, x, out_dtype=tl.float16)
            tl.store(p + tl.arange(0, B)[:, None] * B + tl.arange(0, B)[None, :], d)
        """
    for dtype, expected in (("tl.float32", USED), ("tl.float16", NOT_USED)):
        folder = tmp_path / dtype
        folder.mkdir()
        (folder / "k.py").write_text(textwrap.dedent(kernel.format(dtype=dtype)))
        assert Matcher(build_profile([str(folder)], [], [])).probe(NAME).status == expected
