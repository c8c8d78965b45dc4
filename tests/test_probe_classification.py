"""Each probe's classification of what it observed, fed with observations recorded from real
runs of the matrix (the strings below were copied from raw files of Triton 3.0.0-3.9.0), so no
Triton runs here."""

import warnings

import pytest

from matrix.backends.aot import AotUnavailable
from matrix.probes.block_ptr import probe as block_ptr
from matrix.probes.support import dot_result, keywords
from matrix.probes.support.base import Outcome, cause_text, refusal
from matrix.probes.support.descriptor_rules import classify_rejection
from matrix.probes.support.dot_precision import classify_precision
from matrix.probes.support.precision_evidence import asm_instructions, ttir_precision

# Recorded TTIR lines of `tl.dot(x, y)` on float32 tiles.
TTIR_TF32 = (
    "%19 = tt.dot %9, %14, %cst, inputPrecision = tf32 : tensor<32x32xf32> * "
    "tensor<32x32xf32> -> tensor<32x32xf32> loc(#loc14)"
)  # 3.0.0 cuda:80
TTIR_NO_ATTRIBUTE = (
    "%19 = tt.dot %9, %14, %cst : tensor<32x32xf32> * tensor<32x32xf32> -> "
    "tensor<32x32xf32> loc(#loc14)"
)  # 3.0.0 hip:gfx942 and TRITON_F32_DEFAULT=ieee
TTIR_TF32X3 = "%4 = tt.dot %a, %b, %c, inputPrecision = tf32x3 : tensor<16x16xf32> * x"
# Recorded TTIR of tl.dot(f16, f16, acc=f16) without out_dtype, 3.9.0.
TTIR_F16_ACC = (
    "%d = tt.dot %x_7, %y_11, %acc, inputPrecision = tf32 : tensor<16x16xf16> * "
    "tensor<16x16xf16> -> tensor<16x16xf16> loc(#loc28)"
)
# Recorded assembly lines (notes/aot-and-numpy.md).
PTX_MMA_TF32 = "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%f1, %f2}, ..."
PTX_WGMMA_TF32 = "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {%f1}, ..."
PTX_FMA = "fma.rn.f32 %f5, %f3, %f4, %f5;\nfma.rn.f32 %f6, %f3, %f4, %f6;"
AMDGCN_XF32 = "v_mfma_f32_16x16x8_xf32 v[0:3], v[4:5], v[6:7], v[0:3]"
AMDGCN_F32 = "v_mfma_f32_16x16x4_f32 v[0:3], v4, v5, v[0:3]"

# Recorded messages.
# 3.7.1 and 3.8.0, category UserWarning:
BLOCK_PTR_WARNING = (
    "tl.make_block_ptr is deprecated. Use TensorDescriptor or tl.make_tensor_descriptor instead."
)
BLOCK_PTR_REMOVED = "Block pointers have been removed in favor of the tensor descriptor API"  # 3.9
FP_FUSION_WARNING = "TRITON_DEFAULT_FP_FUSION is unset: defaulting to FP fusion ENABLED"  # 3.9
BOUNDARY_CHECK_REMOVED = "load() got an unexpected keyword argument 'boundary_check'"  # 3.9.0
MISALIGNED_BASE = "base must be 16-byte aligned"  # interpreter, 3.3.1-3.9.0


def _warning(message: str, category=UserWarning) -> warnings.WarningMessage:
    return warnings.WarningMessage(message, category, "core.py", 1)


class TestDotPrecision:
    @pytest.mark.parametrize(
        "line,expected",
        [(TTIR_TF32, "tf32"), (TTIR_NO_ATTRIBUTE, "ieee"), (TTIR_TF32X3, "tf32x3"),
         ("%3 = tt.dot %1, %2, %0 {allowTF32 = true} : ...", "tf32"),
         ("%3 = tt.dot %1, %2, %0 {allowTF32 = false} : ...", "ieee")],
    )  # fmt: skip
    def test_ttir_attribute(self, line, expected):
        assert ttir_precision("module {\n  " + line + "\n}") == expected

    def test_no_dot_is_none_and_an_error_observation(self):
        assert ttir_precision("tt.func @k() { tt.return }") is None
        assert classify_precision("tt.return", "", {}).status == "error"

    def test_assembly_counts(self):
        assert asm_instructions(PTX_MMA_TF32)["mma_tf32"] == 1
        assert asm_instructions(PTX_WGMMA_TF32)["wgmma_tf32"] == 1
        assert asm_instructions(PTX_FMA)["fma_f32"] == 2
        assert asm_instructions(AMDGCN_XF32) == {**dict.fromkeys(
            ("wgmma_tf32", "mma_tf32", "fma_f32", "mfma_f32"), 0), "mfma_xf32": 1}  # fmt: skip
        assert asm_instructions(AMDGCN_F32)["mfma_f32"] == 1

    def test_observation_carries_evidence(self):
        obs = classify_precision(TTIR_TF32, PTX_MMA_TF32, {"TRITON_F32_DEFAULT": None})
        assert obs.status == "tf32"
        assert "inputPrecision = tf32" in obs.detail and "mma_tf32=1" in obs.detail


class TestDotAccOutDtype:
    def test_fp16_result(self):
        obs = dot_result.classify_ttir(TTIR_F16_ACC)
        assert obs.status == "fp16" and "tensor<16x16xf16>" in obs.detail

    def test_fp32_result(self):
        line = TTIR_F16_ACC.replace("-> tensor<16x16xf16>", "-> tensor<16x16xf32>")
        assert dot_result.classify_ttir(line).status == "fp32"

    def test_unreadable_is_an_error(self):
        assert dot_result.classify_ttir("no dot here").status == "error"

    def test_frontend_assertion_is_the_error_status_with_where(self):
        try:
            raise AssertionError()  # as semantic.py's bare `assert acc.type == ret_ty` does
        except AssertionError as e:
            obs = refusal(Outcome(exception=e), "error")
        assert obs.status == "error" and "raised at" in obs.detail


class TestBlockPtr:
    def test_removed(self):
        obs = block_ptr.classify(Outcome(exception=NotImplementedError(BLOCK_PTR_REMOVED)), None)
        assert obs.status == "removed" and obs.detail.startswith("NotImplementedError: Block")

    def test_deprecated_records_category_and_text(self):
        outcome = Outcome(warnings=[_warning(FP_FUSION_WARNING), _warning(BLOCK_PTR_WARNING)])
        obs = block_ptr.classify(outcome, True)
        assert obs.status == "deprecated"
        assert obs.detail == f"UserWarning: {BLOCK_PTR_WARNING}"

    def test_unrelated_warning_is_not_a_deprecation(self):
        obs = block_ptr.classify(Outcome(warnings=[_warning(FP_FUSION_WARNING)]), True)
        assert obs.status == "supported"
        assert obs.data["warnings"] == [f"UserWarning: {FP_FUSION_WARNING}"]

    def test_silently_wrong_is_called_out(self):
        obs = block_ptr.classify(Outcome(), False)
        assert obs.status == "supported" and "WRONG" in obs.detail


class TestKeywords:
    def test_removed(self):
        obs = keywords.classify_keyword(
            Outcome(exception=TypeError(BOUNDARY_CHECK_REMOVED)), "boundary_check", None
        )
        assert obs.status == "removed" and "unexpected keyword" in obs.detail

    def test_deprecated(self):
        w = _warning("allow_tf32 is deprecated, use input_precision", DeprecationWarning)
        obs = keywords.classify_keyword(Outcome(warnings=[w]), "allow_tf32", True)
        assert obs.status == "deprecated" and obs.detail.startswith("DeprecationWarning")

    def test_accepted(self):
        w = _warning(FP_FUSION_WARNING)
        assert keywords.classify_keyword(Outcome(warnings=[w]), "allow_tf32", True).status \
            == "accepted"  # fmt: skip

    def test_missing_tool_is_a_skip(self):
        obs = keywords.classify_keyword(
            Outcome(exception=AotUnavailable("no ld.lld found")), "allow_tf32", None
        )
        assert obs.status == "skipped" and "no ld.lld found" in obs.detail


class TestDescriptorRejection:
    def test_interpreter_assert_is_runtime(self):
        obs = classify_rejection(AssertionError(MISALIGNED_BASE), "launch", "interpret", {})
        assert obs.status == "rejected-runtime" and MISALIGNED_BASE in obs.detail

    def test_device_error_is_runtime(self):
        e = RuntimeError("CUDA error: misaligned address")
        assert classify_rejection(e, "device", "gpu", {}).status == "rejected-runtime"

    def test_compilation_error_is_compile(self):
        class CompilationError(Exception):
            pass

        obs = classify_rejection(CompilationError("at 3:4: ..."), "launch", "gpu", {})
        assert obs.status == "rejected-compile"

    def test_other_launch_error_is_host(self):
        e = ValueError("base must be 16-byte aligned")
        assert classify_rejection(e, "launch", "gpu", {}).status == "rejected-host"


def test_cause_text_follows_the_chain():
    try:
        try:
            raise NotImplementedError(BLOCK_PTR_REMOVED)
        except NotImplementedError as inner:
            raise RuntimeError("CompilationError at 1:2") from inner
    except RuntimeError as e:
        assert cause_text(e) == f"NotImplementedError: {BLOCK_PTR_REMOVED}"


class TestNumerics:
    """The splitk/tiled probes' judgement, with stand-in matmuls instead of Triton kernels."""

    @pytest.fixture(autouse=True)
    def _torch(self):
        pytest.importorskip("torch")

    def _observe(self, run):
        from matrix.probes.support.base import Context
        from matrix.probes.support.matmul import numerics

        return numerics(Context("interpret", None), run, (False, True))

    def test_right_answers_pass(self):
        obs = self._observe(lambda a, b, s, d: (a.double() @ b.double()).to(a.dtype))
        assert obs.status == "pass" and obs.data["checked"] == 18

    def test_a_dropped_k_tile_fails_with_its_error_and_case(self):
        def dropped(a, b, s, d):
            return (a[:, 32:].double() @ b[32:, :].double()).to(a.dtype)

        obs = self._observe(dropped)
        assert obs.status == "fail"
        assert "relative error" in obs.detail and "37x53x200" in obs.detail
        assert obs.data["rel_err"] > 0.05

    def test_unwritten_elements_fail(self):
        def poisoned(a, b, s, d):
            c = (a.double() @ b.double()).to(a.dtype)
            c[-1, -1] = float("nan")
            return c

        obs = self._observe(poisoned)
        assert obs.status == "fail" and obs.data["unwritten"] == 1

    def test_a_raising_kernel_fails(self):
        def raises(a, b, s, d):
            raise RuntimeError("InterpreterError: only 0-dimensional arrays can be converted")

        obs = self._observe(raises)
        assert obs.status == "fail" and "0-dimensional" in obs.detail
