"""What compiling does to a kernel's values that the interpreter does not: a Python scalar bound
to a name is a 0-d tensor (``m = float("-inf")`` is an fp32 tensor: code_generator.visit_Assign
-> semantic.to_tensor), a loop-carried value must keep its type (the compiler refuses the loop
otherwise, so a dtype under which it would not is not one the code is compiled with), and a
result type only the interpreter records types nothing of code that runs compiled. Each is
read only where the team's targets leave the interpreter out. Kernels written for these tests;
the real cases are lightllm's flash_decoding_stage2 kernels (``max_logic = -float("inf")``)
and ``_gen_cumsum_pad0_kernel`` (an int64 running total)."""

from __future__ import annotations

import textwrap
from functools import lru_cache
from pathlib import Path

import pytest

from matrix.analyze.profile.declaration import Declaration
from matrix.analyze.profile.match import match_uses
from matrix.analyze.profile.model import NOT_USED
from matrix.gate.usage import build_profile
from matrix.results import Run, raw_files, read_runs

HEAD = "import triton\nimport triton.language as tl\n\n\n"
BF16 = frozenset({"bfloat16"})
COMPILED = Declaration.parse({"targets": ["cuda:90"]}, "test")
INTERPRETED = Declaration.parse({"targets": ["interpret"]}, "test")

RUNNING_MAX = """
@triton.jit
def k(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    m = -float("inf")
    for i in range(0, n):
        t = tl.load(x_ptr + r + i * BLOCK).to(tl.bfloat16)
        m = tl.maximum(t, m)
    tl.store(o_ptr + r, m)
"""

RUNNING_TOTAL = """
@triton.jit
def k(len_ptr, out_ptr, size, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    total = tl.cast(0, dtype=tl.int64)
    for start in range(0, size, BLOCK):
        x = tl.load(len_ptr + start + offs, mask=start + offs < size, other=0)
        x = tl.cumsum(x) + total
        total = tl.max(x, 0)
        tl.store(out_ptr + start + offs, x, mask=start + offs < size)
"""


@lru_cache(maxsize=1)
def measured() -> tuple[Run, ...]:
    """3.8.0's and 3.9.0's committed rows with both an interpreter and a compiled column."""
    raw = Path(__file__).resolve().parents[1] / "reports" / "raw"
    names = ("triton-3.8.0-numpy-2.4.6", "triton-3.9.0-numpy-2.4.6")
    files = [f for f in raw_files(raw) if f.name.startswith(names)]
    if len(files) != len(names):
        pytest.skip("no committed raw results for 3.8.0 and 3.9.0")
    return tuple(r for f in files for r in read_runs(f))


def read(tmp_path: Path, body: str, declaration: Declaration, types: bool = False):
    (tmp_path / "k.py").write_text(HEAD + textwrap.dedent(body))
    runs = list(measured()) if types else []
    pair = {"baseline": "3.8.0", "candidate": "3.9.0"} if types else {}
    return build_profile([str(tmp_path)], [], runs, declaration, **pair).uses


def operands(uses, op: str) -> set[tuple]:
    return {u.operands for u in uses if u.op == op}


def test_a_scalar_bound_to_a_name_is_a_0d_fp32_tensor_compiled_and_a_literal_interpreted(
    tmp_path,
):
    body = """
    @triton.jit
    def k(x_ptr, o_ptr, BLOCK: tl.constexpr):
        r = tl.arange(0, BLOCK)
        floor = 0.0
        scale: tl.constexpr = 2.0
        x = tl.load(x_ptr + r).to(tl.bfloat16)
        tl.store(o_ptr + r, tl.maximum(x, floor) * scale)
    """
    compiled = read(tmp_path, body, COMPILED)
    assert operands(compiled, "binary_fn.maximum") == {(BF16, frozenset({"arg_f32"}))}
    # an annotated constexpr stays a compile-time scalar
    assert all("arg_f32" not in o[1] for o in operands(compiled, "binary.mul"))
    interpreted = read(tmp_path, body, INTERPRETED)
    assert operands(interpreted, "binary_fn.maximum") == {
        (BF16, frozenset({"arg_f32", "lit_float"}))
    }


def test_a_running_max_from_a_bound_minus_inf_is_fp32_so_no_bf16_pair_compiled(tmp_path):
    # compiled, maximum(bf16, fp32 0-d tensor) is fp32 on 3.8.0 and 3.9.0: m stays fp32, and
    # the cell that changed (maximum[bfloat16,bfloat16] fp32 -> bf16) is not this code's
    uses = read(tmp_path, RUNNING_MAX, COMPILED, types=True)
    mx = [u for u in uses if u.op == "binary_fn.maximum"]
    assert mx and all(u.operands[0] == frozenset({"bfloat16"}) for u in mx)
    assert all("bfloat16" not in u.operands[1] for u in mx), [u.describe() for u in mx]
    assert match_uses(uses, "binary_fn.maximum", ["bfloat16", "bfloat16"]).status == NOT_USED
    # under the interpreter the bound literal stays a Python float, and 3.9.0's interpreter
    # keeps bf16 for it: the running max may be bf16 there
    interp = read(tmp_path, RUNNING_MAX, INTERPRETED, types=True)
    assert match_uses(interp, "binary_fn.maximum", ["bfloat16", "bfloat16"]).status != NOT_USED


def test_a_dtype_under_which_a_loop_carried_total_changes_type_is_not_compiled(tmp_path):
    # a float element type would make `total` (int64 on entry) a float at the end of the
    # body, which the compiler refuses: the open element type of len_ptr is an integer
    cumsum = operands(read(tmp_path, RUNNING_TOTAL, COMPILED), "reduce.cumsum")
    assert cumsum and all(o[0] and o[0] <= {"int32", "int64"} for o in cumsum), cumsum
    # the interpreter checks no loop types: there a float input still runs
    interp = operands(read(tmp_path, RUNNING_TOTAL, INTERPRETED), "reduce.cumsum")
    assert any(o[0] and "bfloat16" in o[0] for o in interp), interp


def test_math_constants_div_rn_and_join_split_keep_an_fp32_accumulator_typed(tmp_path):
    # lmdeploy's attention: `qk * tl_log2(math.e)` (tl_log2 = tl.log2), then a running max; a
    # math constant or an fp32-only function left unknown made every later op "may affect"
    body = """
    import math

    @triton.jit
    def k(q_ptr, o_ptr, s, BLOCK: tl.constexpr):
        r = tl.arange(0, BLOCK)
        qk = tl.zeros((BLOCK,), dtype=tl.float32) + tl.load(q_ptr + r).to(tl.float32)
        qk = qk * tl.log2(math.e)
        inv = tl.div_rn(1.0, s)
        a, b = tl.split(tl.join(qk, qk))
        m = tl.maximum(a * inv, b)
        tl.store(o_ptr + r, m)
    """
    uses = read(tmp_path, body, COMPILED)
    f32 = frozenset({"float32"})
    assert operands(uses, "binary.mul") >= {(f32, frozenset({"arg_f32"}))}
    assert operands(uses, "binary_fn.maximum") == {(f32, f32)}


def test_an_untyped_fp32_partner_and_an_untyped_shift_keep_their_results_typed(tmp_path):
    # fla's `-exp(b_A) * softplus(b_g)` (fp32 times a helper the reader cannot type), gemlite's
    # `1.0 / (1 << (-e))` (e untyped): fp32 (or fp64) and an integer, never a 16-bit float
    body = """
    @triton.jit
    def k(x_ptr, o_ptr, BLOCK: tl.constexpr):
        r = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + r).to(tl.float32)
        g = x * untyped(x)
        s = 1.0 / (1 << untyped(x))
        tl.store(o_ptr + r, tl.maximum(g, 0.5) + tl.maximum(s, 0.5))
    """
    uses = read(tmp_path, body, COMPILED)
    lit = frozenset({"lit_float"})
    assert operands(uses, "binary_fn.maximum") == {
        (frozenset({"float32", "float64"}), lit),  # g: fp32 x untyped
        (frozenset({"float32"}), lit),  # s: a float literal over an integer
    }
