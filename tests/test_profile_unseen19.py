"""What the kernel reader and the host dtype flow read, modeled on false gate entries of
libraries nobody here had tuned against (session 19: cute-kernels, modded-nanogpt); each test
fails without its mechanism."""

from __future__ import annotations

import textwrap
from pathlib import Path

from matrix.analyze.profile.match import match_uses
from matrix.analyze.profile.model import Use
from matrix.gate.usage import build_profile
from tests.support import operand_kinds, profiled_package

HEAD = "import torch\nimport triton\nimport triton.language as tl\n\n\n"
OPEN = {"float16", "bfloat16", "float32"}


def _package(tmp_path: Path, files: dict[str, str]) -> list[Use]:
    return profiled_package(tmp_path, files)


def _kinds(found: list[Use], op: str, code_has: str, operand: int = 0) -> set[str]:
    """Every kind operand ``operand`` of ``op`` on the line holding ``code_has`` takes."""
    return operand_kinds(found, op, lambda u: code_has in u.code, operand)


def _division(found: list[Use], code_has: str, cell: list[str]) -> str:
    """What the fingerprint cell ``cell`` of ``/`` is to the divisions on that line."""
    division = [u for u in found if u.op == "binary.truediv" and code_has in u.code]
    return match_uses(division, "binary.truediv", cell).status


HELPERS = """
@triton.jit
def activation(y, KIND):
    if KIND == "relu":
        y = tl.maximum(y, 0.0)
    elif KIND == "to_int":
        y = y.to(tl.int32)
    return y


@triton.jit
def with_bias(x, bias):
    y = x * 2.0
    if bias is not None:
        y += bias
    return y


@triton.jit
def kern(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + r, mask=r < n).to(tl.float32)
    a = activation(x, "relu")
    b = with_bias(x, None)
    tl.store(out_ptr + r, a / 3.0 + b / 5.0, mask=r < n)
"""


def test_a_literal_passed_to_a_helper_folds_its_branches(tmp_path):
    # cute-kernels' _rnn_backward_update passes ACTIVATION_FUNCTION="tanh" and C=None on: Triton
    # makes a literal argument a constexpr of the callee, so `if C is not None: x += C` is not
    # compiled; read joined, `x += None` left the GRU's gradients (and its dots) untyped
    found = _package(tmp_path, {"k.py": HELPERS})
    assert _kinds(found, "binary.truediv", "a / 3.0") == {"float32"}  # never the int32 branch
    assert _kinds(found, "binary.truediv", "b / 5.0") == {"float32"}  # never `+= None`


LOADS = """
@triton.jit
def load_previous(y_ptrs, mask):
    return tl.load(y_ptrs, mask=mask)
"""
GRU = """
from .loads import load_previous


@triton.jit
def gru(y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    y = load_previous(y_ptr + r, r < n)
    tl.store(out_ptr + r, y * 0.5, mask=r < n)
"""


def test_a_pointer_a_helper_of_another_file_loads_is_a_pointer(tmp_path):
    # cute-kernels' GRU passes `y_ptr + indices` to the RNN file's _load_previous_output:
    # body_shape followed only helpers of its own file, so y_ptr was read as a scalar
    found = _package(tmp_path, {"loads.py": LOADS, "k.py": GRU})
    assert _kinds(found, "binary.mul", "y * 0.5") == OPEN


SWIZZLE = """
@triton.jit
def grouped(x_ptr, n, BLOCK: tl.constexpr):
    pid0 = tl.program_id(axis=0)
    pid1 = tl.program_id(axis=1)
    pid1, pid0 = tl.swizzle2d(pid1, pid0, tl.num_programs(1), tl.num_programs(0), 128)
    k = pid0 % n
    tl.store(x_ptr + k * BLOCK + tl.arange(0, BLOCK), tl.zeros((BLOCK,), dtype=tl.float32))
"""


def test_swizzle2d_returns_its_program_ids_types(tmp_path):
    # cute-kernels' scattermoe: `pid1, pid0 = tl.swizzle2d(...)` left pid0 untyped, and
    # `pid0 % K_BLOCK_COUNT` "may be" the float32 remainder whose lowering 3.3.1 changed
    found = _package(tmp_path, {"k.py": SWIZZLE})
    assert _kinds(found, "binary.mod", "pid0 % n") == {"int32"}


SCALED = """
@triton.jit
def relu_square(x_ptr, scale_ptr, out_ptr, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    inv = 1.0 / tl.load(scale_ptr)
    tl.store(out_ptr + r, tl.load(x_ptr + r) * inv)


def launch(x, scale, out):
    relu_square[(1,)](x, scale, out, BLOCK=x.shape[0])


def logits(x, w, x_s, w_s):
    x_f8 = x.div(x_s).to(torch.float8_e4m3fn)
    w_f8 = w.div(w_s).to(torch.float8_e4m3fn)
    return torch._scaled_mm(x_f8, w_f8.T.contiguous().T, out_dtype=torch.bfloat16)
"""


def test_an_fp8_tensor_passed_to_a_pytorch_function_is_no_evidence_for_a_kernel(tmp_path):
    # modded-nanogpt: x_f8 goes to torch._scaled_mm, never to a Triton kernel of the file; not
    # followed, it made every pointer of the file "may be" fp8 (`1.0 / tl.load(scale_ptr)`)
    fp8 = ["lit_float", "float8e4nv"]
    found = _package(tmp_path, {"k.py": SCALED})
    assert _division(found, "1.0 /", fp8) == "not used"
    # a tensor that goes to a function the flow does not follow stays the file's (fail closed)
    kept = _package(tmp_path, {"k.py": SCALED.replace("torch._scaled_mm(", "stash(")})
    assert _division(kept, "1.0 /", fp8) == "may affect"


DESCRIBED = """
from triton.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def quantize(a_ptr, o_desc, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + r)
    o_desc.store([0], (a / 3).to(tl.float8e4nv))


def run(a):
    o = torch.empty(a.shape, dtype=torch.float8_e4m3fn)
    quantize[(1,)](a, TensorDescriptor.from_tensor(o, [a.shape[0]]), BLOCK=a.shape[0])
"""


def test_a_descriptor_of_an_fp8_tensor_is_evidence_for_its_parameter_only(tmp_path):
    # modded-nanogpt builds post_fp8_desc = TensorDescriptor.from_tensor(post_fp8, ...): the
    # descriptor holds the tensor's dtype, and goes to the kernel's post_fp8_desc alone
    found = _package(tmp_path, {"k.py": DESCRIBED})
    assert _division(found, "a / 3", ["float8e4nv", "lit_int"]) == "not used"


KEPT = """
@triton.jit
def scale_rows(x_ptr, s_ptr, o_ptr, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    tl.store(o_ptr + r, tl.load(x_ptr + r) / tl.load(s_ptr))


cuda_kernel = torch.cuda._compile_kernel(SOURCE, "k")


class Loss(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, s, out):
        x_f8 = x.to(torch.float8_e4m3fn)
        g = torch.empty(x.shape, dtype=torch.float8_e5m2)
        cuda_kernel((1,), (32,), (x, g))
        ctx.save_for_backward(x_f8, s)
        scale_rows[(1,)](x, s, out, BLOCK=x.shape[0])
        return out

    @staticmethod
    def backward(ctx, grad):
        x_f8, s = ctx.saved_tensors
        return torch._scaled_mm(x_f8, x_f8.T, out_dtype=torch.bfloat16), None, None
"""


def test_a_tensor_kept_for_backward_or_given_a_compiled_cuda_kernel_is_followed(tmp_path):
    # modded-nanogpt: x_f8 is saved for backward and read back from ctx.saved_tensors into
    # torch._scaled_mm; the fp8e5 gradient goes to a kernel torch.cuda._compile_kernel built
    # from CUDA source. Neither reaches a Triton kernel of the file: no pointer "may be" fp8
    found = _package(tmp_path, {"k.py": KEPT})
    for fp8 in ("float8e4nv", "float8e5"):
        assert _division(found, "tl.load(s_ptr)", [fp8, fp8]) == "not used", fp8
    # torch.compile(f) runs f (which may launch a kernel of the file): not followed, fail closed
    compiled = KEPT.replace('torch.cuda._compile_kernel(SOURCE, "k")', "torch.compile(scale_rows)")
    found = _package(tmp_path, {"k.py": compiled})
    assert _division(found, "tl.load(s_ptr)", ["float8e5", "float8e5"]) == "may affect"


CONSTANTS = """
MXFP_BLOCK_SIZE = tl.constexpr(32)
"""
ASSERTED = """
from .consts import MXFP_BLOCK_SIZE


@triton.jit
def absmax(x, NUM_THREADS: tl.constexpr = None):
    N: tl.constexpr = tl.extra.cuda.num_threads() if NUM_THREADS is None else NUM_THREADS
    BS: tl.constexpr = x.numel
    tl.static_assert(BS % N == 0, "BLOCK_SIZE must be divisible by NUM_THREADS")
    return tl.max(tl.abs(x), axis=0)


@triton.jit
def upcast(x_ptr, out_ptr, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK % MXFP_BLOCK_SIZE == 0, "BLOCK must be a multiple of 32")
    r = tl.arange(0, BLOCK)
    tl.store(out_ptr, absmax(tl.load(x_ptr + r).to(tl.float8e4nv)))
"""


def test_a_constexpr_local_and_an_imported_constexpr_are_compile_time_ints(tmp_path):
    # Triton's triton_kernels: `N: tl.constexpr = tl.extra.cuda.num_threads()` and another
    # module's `MXFP_BLOCK_SIZE = tl.constexpr(32)` were read as tensors of any dtype, so
    # `tl.static_assert(BS % N == 0)` "may be" an fp8 remainder
    found = _package(tmp_path, {"consts.py": CONSTANTS, "k.py": ASSERTED})
    assert _kinds(found, "binary.mod", "BS % N", 1) == {"cx_int", "cx_float"}
    assert _kinds(found, "binary.mod", "BLOCK % MXFP_BLOCK_SIZE", 1) == {"lit_int"}


MAX_FINITE = """
@triton.jit
def max_finite(dtype):
    if dtype == tl.constexpr(tl.float8e5):
        return 57344.0
    return 3.4e38


@triton.jit
def scaled(x_ptr, s_ptr, o_ptr, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    inv = 1.0 / tl.load(s_ptr)
    tl.store(o_ptr + r, tl.minimum(tl.load(x_ptr + r) * inv, max_finite(o_ptr.dtype.element_ty)))
"""


def test_a_dtype_compared_through_tl_constexpr_is_evidence_for_that_dtype_only(tmp_path):
    # triton_kernels' flexpoint.py: `dtype == tl.constexpr(tl.float8e5)` in max_finite made
    # every pointer of the file "may be" fp8 (the scale too: `1.0 / tl.load(scale_ptr)`)
    found = _package(tmp_path, {"k.py": MAX_FINITE})
    assert _division(found, "1.0 /", ["lit_float", "float8e5"]) == "not used"


DTW = """
import numpy as np


@triton.jit
def dtw(cost, x, n, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    c = tl.load(cost + r, mask=r < n)
    tl.store(cost + r, tl.minimum(c, tl.load(x + r, mask=r < n)), mask=r < n)


def run(x):
    cost = torch.ones(x.shape[0] + 2) * np.inf
    cost[0] = 0
    cost = cost.to(x.device)
    dtw[(1,)](cost, x.float(), x.shape[0], BLOCK=1024)
"""


def test_a_torch_factory_without_dtype_is_float32_moved_to_a_device(tmp_path):
    # whisper's dtw: `cost = torch.ones(n, m) * np.inf`, then `cost = cost.to(x.device)`: a
    # float32 tensor (torch's default dtype), never bf16
    found = _package(tmp_path, {"k.py": DTW})
    assert _kinds(found, "binary_fn.minimum", "tl.minimum(c,") == {"float32"}
    # np.inf is a Python float: it keeps a narrow tensor's dtype as a literal does
    half = DTW.replace("torch.ones(x.shape[0] + 2)", "torch.ones(x.shape[0] + 2, dtype=torch.half)")
    found = _package(tmp_path, {"k.py": half})
    assert _kinds(found, "binary_fn.minimum", "tl.minimum(c,") == {"float16"}
    # code that changes the default dtype: no factory is taken to be float32
    changed = DTW + "\n\ntorch.set_default_dtype(torch.float64)\n"
    found = _package(tmp_path, {"k.py": changed})
    assert _kinds(found, "binary_fn.minimum", "tl.minimum(c,") != {"float32"}


def test_a_helper_imported_relatively_from_a_sibling_package_is_followed(tmp_path):
    # triton_kernels: `from ..numerics_details.flexpoint import float_to_flex` in
    # matmul_ogs_details/_matmul_ogs.py (a folder with no __init__.py) resolved to
    # `numerics_details.flexpoint.float_to_flex` while the tree named the module
    # `triton_kernels.numerics_details.flexpoint`: the helper was never followed, only read
    # alone with its parameters guessed
    pkg = tmp_path / "pkg"
    for sub in ("num", "mm"):
        (pkg / sub).mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "num" / "__init__.py").write_text("")  # mm/ is a folder without one, as there
    (pkg / "num" / "flex.py").write_text(
        HEAD
        + textwrap.dedent("""
        @triton.jit
        def to_flex(x, scale):
            return x / scale
    """)
    )
    (pkg / "mm" / "k.py").write_text(
        HEAD
        + textwrap.dedent("""
        from ..num.flex import to_flex


        @triton.jit
        def kern(out_ptr, BLOCK: tl.constexpr):
            acc = tl.zeros((BLOCK,), dtype=tl.float32)
            tl.store(out_ptr + tl.arange(0, BLOCK), to_flex(acc, 2.0))
    """)
    )
    found = build_profile([str(pkg)], [], []).uses
    assert _kinds(found, "binary.truediv", "x / scale") == {"float32"}
