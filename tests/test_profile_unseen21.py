"""What the host reading types and what the gate sets aside, modeled on false gate entries of
libraries nobody here had tuned against (session 21: conch, gemlite, fla's copy in nmoe, verl);
each test fails without its mechanism."""

from __future__ import annotations

import json
from pathlib import Path

from matrix.gate import compare as gc
from matrix.gate import verdict as gv
from matrix.results import Result, Run, write_raw
from tests.support import operand_kinds, profiled_package

KERNEL = """
@triton.jit
def k(g, o, BT: tl.constexpr):
    x = tl.load(g + tl.arange(0, BT))
    tl.store(o + tl.arange(0, BT), tl.minimum(x, 80.0))


def launch(g):
    o = torch.empty_like(g)
    k[(1,)](g, o, BT=16)
"""


def _minimum_kinds(tmp_path: Path, host: str) -> set[str]:
    found = profiled_package(tmp_path, {"k.py": KERNEL + host})
    return operand_kinds(found, "binary_fn.minimum", lambda u: True)


def test_a_left_out_argument_is_the_parameters_default(tmp_path):
    """fla's ``chunk_local_cumsum(g, ..., output_dtype=torch.float)`` (vendored in nmoe): its
    callers leave ``output_dtype`` out, so the cumsum is float32. A left-out argument was read
    as unknown, the gates' pointer open to fp16/bf16."""
    host = """
def cumsum(g, output_dtype=torch.float):
    return torch.empty_like(g, dtype=output_dtype)

def fwd(g):
    launch(cumsum(g))
"""
    assert _minimum_kinds(tmp_path, host) == {"float32"}
    # passed, it is what is passed; a ``**kw`` may pass it: unknown
    passed = host.replace("launch(cumsum(g))", "launch(cumsum(g, torch.float16))")
    assert _minimum_kinds(tmp_path, passed) == {"float16"}
    spread = host.replace("launch(cumsum(g))", "launch(cumsum(g, **OPTS))")
    assert _minimum_kinds(tmp_path, spread) == {"float16", "bfloat16", "float32"}


def test_a_named_dtype_or_another_is_the_named_one(tmp_path):
    """``torch.empty_like(g, dtype=output_dtype or g.dtype)``: a dtype object is true, so a
    named ``output_dtype`` wins; an unknown one leaves it unknown."""
    host = """
def cumsum(g, output_dtype=torch.float32):
    return torch.empty_like(g, dtype=output_dtype or g.dtype)

def fwd(g):
    launch(cumsum(g))
"""
    assert _minimum_kinds(tmp_path, host) == {"float32"}
    unknown = host.replace("output_dtype=torch.float32", "output_dtype=None")
    assert _minimum_kinds(tmp_path, unknown) == {"float16", "bfloat16", "float32"}


def test_a_return_in_every_branch_that_does_not_raise_types_the_call(tmp_path):
    """``if len(g.shape) == 3: return f(...) elif ...: return h(...) else: raise``: the body
    always ends in a return or a raise, so the call gives what the returns give. It was read as
    a body that may fall off its end (``None``), and the call stayed unknown."""
    host = """
def made(g):
    return torch.empty_like(g, dtype=torch.float32)

def pick(g):
    if len(g.shape) == 3:
        return made(g)
    elif len(g.shape) == 4:
        return made(g)
    else:
        raise ValueError("shape")

def fwd(g):
    launch(pick(g))
"""
    assert _minimum_kinds(tmp_path, host) == {"float32"}
    falls_off = host.replace('        raise ValueError("shape")', "        pass")
    assert _minimum_kinds(tmp_path, falls_off) == {"float16", "bfloat16", "float32"}


FLAGGED = """
@triton.jit
def k(x_ptr, o, FLAG: tl.constexpr, BT: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BT))
    if FLAG:
        x = x.to(tl.float32)
    tl.store(o + tl.arange(0, BT), tl.maximum(x, 0.0))
"""


def test_a_flag_the_host_passes_picks_the_kernels_branch(tmp_path):
    """gemlite's ``scale_activations_per_token_triton(..., fp32_scale: bool = True)`` passes
    ``fp32_scale`` to the kernel's ``if fp32_scale: tensor = tensor.to(tl.float32)``; every
    call (through the module alias ``scale_activations_per_token = ..._triton``) leaves it
    out. The kernel was read with the flag both true and false, and ``tl.maximum`` of the
    untouched input tied to 3.9.0's bf16 change. A constexpr value the host passes (a literal,
    a parameter's default or what its callers pass) now picks the readings."""
    cases = {
        "literal": "def launch(x):\n    k[(1,)](x, torch.empty_like(x), FLAG=True, BT=16)\n",
        "default through an alias": (
            "def launch(x, flag: bool = True):\n"
            "    k[(1,)](x, torch.empty_like(x), FLAG=flag, BT=16)\n"
            "other = launch\n"
            "def user(x):\n    other(x)\n"
        ),
    }
    for name, host in cases.items():
        found = profiled_package(tmp_path, {"k.py": FLAGGED + host})
        kinds = operand_kinds(found, "binary_fn.maximum", lambda u: True)
        assert kinds == {"float32"}, (name, kinds)
    # a caller that passes False: both readings (the untouched input is open again)
    both = cases["default through an alias"] + "def other_user(x):\n    launch(x, False)\n"
    found = profiled_package(tmp_path, {"k.py": FLAGGED + both})
    kinds = operand_kinds(found, "binary_fn.maximum", lambda u: True)
    assert kinds == {"float16", "bfloat16", "float32"}


def test_a_dtype_chosen_by_a_conditional_and_only_cast_to_says_nothing_of_inputs(tmp_path):
    """conch: ``fp8_dtype = tl.float8e4b8 if cxpr_is_rocm else tl.float8e4nv`` then only
    ``x.to(fp8_dtype, bitcast=True)``: the kernel makes fp8 values, its pointers do not hold
    them. The choice was read as evidence that any pointer of the file may hold fp8, and
    ``output /= l_i`` of an fp16/bf16/fp32 scratchpad tied to 3.9.0's fp8 division change."""
    src = """
@triton.jit
def k(out_ptr, s_ptr, IS_HIP: tl.constexpr, BT: tl.constexpr):
    fp8 = tl.float8e4b8 if IS_HIP else tl.float8e4nv
    r = tl.arange(0, BT)
    acc = tl.load(out_ptr + r)
    l_i = tl.load(s_ptr + r)
    acc /= l_i
    tl.store(out_ptr + r, acc.to(fp8, bitcast=True).to(acc.dtype))
"""
    found = profiled_package(tmp_path, {"k.py": src})
    kinds = operand_kinds(found, "binary.truediv", lambda u: True)
    assert not {k for k in kinds if k.startswith("float8")}, kinds
    # compared with a pointer's dtype, it is evidence for that pointer
    compared = src.replace("    acc /= l_i\n", "    if out_ptr.dtype.element_ty == fp8:\n"
                           "        acc /= l_i\n")  # fmt: skip
    found = profiled_package(tmp_path, {"k.py": compared})
    kinds = operand_kinds(found, "binary.truediv", lambda u: True)
    assert {"float8e4nv"} <= kinds, kinds


# ------------------------------------------------------------------------ kernels nothing reaches

RELU = """import torch
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    r = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + r, mask=r < n)
    tl.store(y_ptr + r, tl.maximum(x, 0.0), mask=r < n)


def relu(x):
    y = torch.empty_like(x)
    relu_kernel[(triton.cdiv(x.numel(), 128),)](x, y, x.numel(), BLOCK=128)
    return y
"""


def _raw(tmp_path: Path) -> Path:
    raw = tmp_path / "raw"
    raw.mkdir(parents=True)
    for release, result in (("3.8.0", "fp32"), ("3.9.0", "bf16")):
        cells = {"bfloat16,lit_float": result, "float32,lit_float": "fp32"}
        run = Run(
            id=f"triton-{release}-numpy-2.4.6",
            env={"triton": release, "numpy": "2.4.6"},
            results=[
                Result(
                    "fp.binary_fn.maximum", "aot", "cuda:90", "observed", "", 0.0, {"cells": cells}
                )
            ],
        )
        write_raw(run, raw / f"{run.id}.json")
    return raw


def _gate(tmp_path: Path, files: dict[str, str]) -> tuple[int, str, dict]:
    team = tmp_path / "team"
    (team / "pkg").mkdir(parents=True, exist_ok=True)
    (team / "pyproject.toml").write_text("[project]\nname = 'team'\n")
    (team / "pkg" / "__init__.py").write_text("")
    for name, body in files.items():
        (team / name).parent.mkdir(parents=True, exist_ok=True)
        (team / name).write_text(body)
    out = tmp_path / "out"
    args = ["--baseline", "3.8.0", "--candidate", "3.9.0", "--results", str(_raw(tmp_path)),
            "--out", str(out), "--no-project-scan", "--scan", str(team / "pkg")]  # fmt: skip
    code = gv.main(args)
    return code, (out / "gate.md").read_text(), json.loads((out / "gate.json").read_text())


def _blocking(doc: dict) -> list[str]:
    return [f["probe"] for f in doc["findings"] if f["kind"] in gc.UNSAFE_KINDS]


def test_may_affect_in_a_kernel_nothing_reaches_does_not_block(tmp_path):
    """verl's ``efficient_entropy_backward_kernel_d_hidden`` and a vendored fla
    ``chunk_bwd_dv`` (nmoe): kernels no code of the repository launches, or launched only from
    a function nothing calls or imports. Their "may affect" entries wait on a launch to give a
    dtype, and there is none: set aside with a note. Named anywhere else (a test, an import,
    ``__all__``, a caller), the kernel is reached and the entry blocks as before."""
    # (exit 2, not 0: the synthetic results carry no API census; what matters is nothing blocks)
    code, md, doc = _gate(tmp_path / "a", {"pkg/ops.py": RELU})
    assert code == gv.EXIT_UNDECIDABLE and _blocking(doc) == [], md
    assert "not reached: fp.binary_fn.maximum[bfloat16,lit_float]" in md, md
    assert "pkg/ops.py:10 in relu_kernel" in md
    # a chain of functions nothing calls is unreached too
    chain = RELU + "\n\ndef relu_twice(x):\n    return relu(relu(x))\n"
    code, md, doc = _gate(tmp_path / "b", {"pkg/ops.py": chain})
    assert code == gv.EXIT_UNDECIDABLE and _blocking(doc) == [], md
    # commented-out code calls nothing (aiter: ``#  mla_decode_ref.decode_attention_fwd,``)
    commented = {"pkg/ops.py": RELU, "tests/test_ops.py": "def test_it():\n    # relu(x)\n"}
    code, md, doc = _gate(tmp_path / "c", commented)
    assert code == gv.EXIT_UNDECIDABLE and _blocking(doc) == [], md
    for where, more in (
        ("a test", {"tests/test_ops.py": "from pkg.ops import relu\n\ndef test_it():\n    relu\n"}),
        ("an import", {"pkg/__init__.py": "from .ops import relu\n"}),
        ("module code", {"pkg/ops.py": RELU + "\nRELU = relu\n"}),
        ("a caller of a caller", {"pkg/ops.py": chain, "pkg/model.py": "from .ops import "
                                  "relu_twice\n\nclass M:\n    def f(self, x):\n"
                                  "        return relu_twice(x)\n"}),
    ):  # fmt: skip
        code, md, doc = _gate(tmp_path / where.replace(" ", "_"), {"pkg/ops.py": RELU, **more})
        assert code == gv.EXIT_UNSAFE, (where, md)
        assert _blocking(doc) == ["fp.binary_fn.maximum[bfloat16,lit_float]"], (where, md)
        assert "not reached" not in md, where


def test_the_type_of_a_scalar_is_its_dtype_as_a_tensor(tmp_path):
    """aiter's ``remap_xcd``: ``tall_xcds = GRID_MN % NUM_XCDS`` then ``tl.cast(NUM_XCDS,
    tall_xcds.type)``. ``.type`` of a scalar was unknown, so the remapped program id, and every
    offset and bound computed from it, was left open (``tl.minimum(split_k_start + ..., K)``
    tied to bf16 changes). A run-time int's ``.type`` is its int dtype, a constexpr int's
    int32."""
    src = """
@triton.jit
def remap(pid, GRID_MN, NUM_XCDS: tl.constexpr = 8):
    tall = GRID_MN % NUM_XCDS
    if tall == 0:
        tall = tl.cast(NUM_XCDS, tall.type)
    return pid + tall


@triton.jit
def k(x_ptr, K: int, GRID_MN: int, BT: tl.constexpr):
    pid = remap(tl.program_id(0), GRID_MN)
    end = tl.minimum(pid * BT + BT, K)
    tl.store(x_ptr + tl.arange(0, BT), end)
"""
    found = profiled_package(tmp_path, {"k.py": src})
    assert operand_kinds(found, "binary_fn.minimum", lambda u: True) == {"int32", "int64"}


def test_a_script_style_import_of_a_sibling_module_finds_its_helper(tmp_path):
    """triton-gym's ``6_gemm_fp8/quantize_fp8.py`` does ``from utils import bf16_maxexp``: the
    folder is run as scripts, so ``utils`` is the sibling ``utils.py`` (the folder has an
    ``__init__.py`` but a name no package import can spell). The helper was not found, its
    int exponent unknown, and ``tl.where(e < m - 127, m - 127, e)`` tied to 3.9.0's uint32
    select change. A top-level module of that name would win, as Python's package import."""
    helper = """
@triton.jit
def maxexp(x):
    x_i16 = tl.cast(x, dtype=tl.int16, bitcast=True)
    return tl.max((x_i16 & 0x7F80) >> 7, axis=0) - 127
"""
    kernel = """
from utils import maxexp


@triton.jit
def quant(x_ptr, o_ptr, BT: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BT)).to(tl.bfloat16)
    e = maxexp(x)
    tl.store(o_ptr, tl.where(e < 8 - 127, 8 - 127, e))
"""
    found = profiled_package(tmp_path, {"utils.py": helper, "k.py": kernel})
    kinds = operand_kinds(found, "where", lambda u: "tl.where" in u.code, 1)
    assert "?" not in kinds and not kinds & {"uint32", "uint16"}, kinds


def test_a_chained_dtype_equality_types_every_member(tmp_path):
    """triton-gym's ``assert lhs.dtype == rhs.dtype == torch.float32``: a chain of ``==`` says
    each member is float32. Only single comparisons were read, and the public ``relu(lhs +
    rhs)`` op stayed open to bf16."""
    src = """
@triton.jit
def add_relu(a_ptr, b_ptr, o_ptr, BT: tl.constexpr):
    r = tl.arange(0, BT)
    tl.store(o_ptr + r, tl.maximum(tl.load(a_ptr + r) + tl.load(b_ptr + r), 0))


def add_relu_fwd(lhs, rhs):
    assert lhs.dtype == rhs.dtype == torch.float32
    out = torch.empty_like(lhs)
    add_relu[(1,)](lhs, rhs, out, BT=128)
    return out
"""
    found = profiled_package(tmp_path, {"k.py": src})
    assert operand_kinds(found, "binary_fn.maximum", lambda u: True) == {"float32"}
