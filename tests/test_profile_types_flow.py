"""Type inference on patterns seen in real kernel libraries (written for these tests, modeled
on what made their gate entries false): values of one type variable stay paired per dtype,
dtype objects survive joins, reductions with indices, shims of libdevice math, combine
functions, float fill values and loop bounds. Then the gate on small team kernels: a clean
fp16 matmul passes, the kernels that use a changed op still fail naming op and line."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from matrix.analyze.profile.declaration import Declaration
from matrix.analyze.profile.match import match_uses
from matrix.analyze.profile.model import FLOAT_DTYPES, INT_DTYPES, Use
from matrix.gate.usage import build_profile
from matrix.results import raw_files

HEAD = "import torch\nimport triton\nimport triton.language as tl\n\n\n"
ROOT = Path(__file__).resolve().parents[1]
RAW = ROOT / "reports" / "raw"


# Every pointer open to every dtype its code admits (a declared "*"), not only what tensors
# carry by default (fp16/bf16/fp32, one 16-bit format per launch: open_types.py)
WIDE = Declaration.parse({"dtypes": {"*": ["*"]}}, "test")


def uses(tmp_path: Path, body: str, declaration: Declaration | None = None) -> list[Use]:
    (tmp_path / "k.py").write_text(HEAD + textwrap.dedent(body))
    return build_profile([str(tmp_path)], [], [], declaration).uses


def one(found: list[Use], op: str, line_has: str) -> Use:
    hits = [u for u in found if u.op == op and line_has in u.code]
    assert len(hits) == 1, [u.describe() for u in found if u.op == op]
    return hits[0]


def test_a_cast_back_to_the_dtype_a_value_came_from_is_never_a_cross_dtype_cast(tmp_path):
    body = """
        @triton.jit
        def k(x_ptr, y_ptr, o_ptr, BLOCK: tl.constexpr):
            r = tl.arange(0, BLOCK)
            x = tl.load(x_ptr + r)
            part = tl.sum(x * (1 - r % 2), 0)
            tl.store(o_ptr, part.to(x.dtype))
            tl.store(o_ptr + r, (x * 2).to(y_ptr.dtype.element_ty))
        """
    for decl in (None, WIDE):
        found = uses(tmp_path, body, decl)
        back = [u for u in found if u.op == "cast.to" and "part.to(x.dtype)" in u.code]
        assert match_uses(back, "cast.to", ["bfloat16", "float16"]).status == "not used"
        assert match_uses(back, "cast.to", ["bfloat16", "bfloat16"]).status == "may affect"
    # two pointers, two type variables: a bf16 x stored through an fp16 y_ptr is possible only
    # where they may take any dtype; by default one launch takes one 16-bit format
    across = [u for u in found if u.op == "cast.to" and "y_ptr.dtype" in u.code]
    assert match_uses(across, "cast.to", ["bfloat16", "float16"]).status == "may affect"
    across = [u for u in uses(tmp_path, body) if u.op == "cast.to" and "y_ptr.dtype" in u.code]
    assert match_uses(across, "cast.to", ["bfloat16", "float16"]).status == "not used"
    assert match_uses(across, "cast.to", ["float32", "bfloat16"]).status == "may affect"


def test_a_dtype_picked_by_a_condition_keeps_both_dtypes_and_type_element_ty_names_the_pointee(
    tmp_path,
):
    found = uses(
        tmp_path,
        """
        @triton.jit
        def k(x_ptr, o_ptr, UPCAST: tl.constexpr, BLOCK: tl.constexpr):
            r = tl.arange(0, BLOCK)
            dt = x_ptr.type.element_ty
            acc_t = tl.float32 if dt is tl.bfloat16 else dt
            if UPCAST:
                cdt = tl.float32
            else:
                cdt = x_ptr.dtype.element_ty
            x = tl.load(x_ptr + r)
            tl.store(o_ptr + r, x.to(acc_t) + x.to(cdt))
        """,
    )
    for text in ("x.to(acc_t)", "x.to(cdt)"):
        cast = [u for u in found if u.op == "cast.to" and text in u.code]
        assert cast and all(u.operands[1] is not None for u in cast), text
        assert all("float32" in (u.operands[1] or ()) for u in cast)
        assert all(
            match_uses([u], "cast.to", ["bfloat16", "float16"]).status == "not used" for u in cast
        )


def test_max_with_indices_is_a_value_and_an_int32_index(tmp_path):
    found = uses(
        tmp_path,
        """
        @triton.jit
        def k(x_ptr, o_ptr, BLOCK: tl.constexpr):
            r = tl.arange(0, BLOCK)
            x = tl.load(x_ptr + r).to(tl.float32)
            best = tl.full([BLOCK], float("-inf"), tl.float32)
            v, i = tl.max(x, 0, return_indices=True)
            best = tl.where(v > best, v, best)
            tl.store(o_ptr, i + 1)
        """,
    )
    assert one(found, "binary.add", "i + 1").operands == (
        frozenset({"int32"}),
        frozenset({"lit_int"}),
    )
    assert one(found, "where", "tl.where(v > best").operands == (
        frozenset({"float32"}),
        frozenset({"float32"}),
    )


def test_a_shims_math_keeps_its_input_dtype_and_a_combine_function_is_typed_by_its_inputs(
    tmp_path,
):
    found = uses(
        tmp_path,
        """
        from mylib import shim
        exp2 = shim.exp2

        @triton.jit
        def pick(a, ai, b, bi):
            keep = a > b
            return tl.where(keep, a, b), tl.where(keep, ai, bi)

        @triton.jit
        def k(x_ptr, o_ptr, BLOCK: tl.constexpr):
            r = tl.arange(0, BLOCK)
            x = tl.load(x_ptr + r).to(tl.float32)
            s = 1 / (1 + exp2(-x))
            t = 1 / (1 + shim.tanh(x))
            m, mi = tl.reduce((s + t, r), 0, pick)
            tl.store(o_ptr, m / mi)
        """,
    )
    for text in ("exp2(-x)", "shim.tanh(x)"):
        assert one(found, "binary.truediv", text).operands[1] == frozenset({"float32"})
    # the combine function is read with the reduced values' types, not as scalar arguments
    wheres = [u.operands for u in found if u.op == "where" and u.kernel == "pick"]
    assert (frozenset({"float32"}), frozenset({"float32"})) in wheres
    assert (frozenset({"int32"}), frozenset({"int32"})) in wheres
    assert one(found, "binary.truediv", "m / mi").operands == (
        frozenset({"float32"}),
        frozenset({"int32"}),
    )


def test_a_float_fill_value_and_a_loop_bound_tell_a_loaded_value_floats_from_integers(tmp_path):
    found = uses(
        tmp_path,
        """
        @triton.jit
        def k(len_ptr, start_ptr, s_ptr, o_ptr, BLOCK: tl.constexpr):
            b = tl.program_id(0)
            n = tl.load(len_ptr + b)
            st = tl.load(start_ptr + b)
            end = tl.minimum(n, st + BLOCK)
            r = tl.arange(0, BLOCK)
            s = tl.load(s_ptr + r, mask=r < n, other=float("-inf"))
            acc = tl.zeros([BLOCK], dtype=tl.float32)
            for j in range(st, end):
                acc += tl.maximum(s, 0.0)
            tl.store(o_ptr + r, acc)
        """,
    )
    bound = one(found, "binary_fn.minimum", "tl.minimum(n")
    assert all(k is not None and k <= INT_DTYPES | {"int1"} for k in bound.operands)
    score = one(found, "binary_fn.maximum", "tl.maximum(s")
    assert score.operands[0] is not None and score.operands[0] <= FLOAT_DTYPES
    # still open among the floats: a bf16 score is possible, and says what decides it
    assert "bfloat16" in score.operands[0] and "s_ptr" in score.decides


def test_a_branch_on_a_dtype_is_read_per_side_for_the_dtypes_it_takes(tmp_path):
    found = uses(
        tmp_path,
        """
        @triton.jit
        def k(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
            r = tl.arange(0, BLOCK)
            v = tl.load(x_ptr + r, mask=r < n)
            if tl.constexpr(v.dtype.is_int64()) or tl.constexpr(v.dtype.is_fp64()):
                v = v
            elif tl.constexpr(v.dtype.is_int()):
                v = v.to(tl.int32)
            else:
                v = v.to(tl.float32)
            tl.store(o_ptr + r, tl.cumsum(v, axis=0))
            dt = x_ptr.dtype.element_ty
            acc_t = tl.float32 if dt is tl.bfloat16 else dt
            best = tl.full([BLOCK], 0, dtype=acc_t)
            w = tl.load(x_ptr + r, mask=r < n, other=0)
            best = tl.maximum(best, w)
            tl.store(o_ptr, tl.max(best, 0))
        """,
        WIDE,
    )
    scan = one(found, "reduce.cumsum", "tl.cumsum(v")
    assert scan.operands == (frozenset({"float32", "float64", "int32", "int64"}),)
    assert match_uses([scan], "reduce.cumsum", ["bfloat16"]).status == "not used"
    top = one(found, "binary_fn.maximum", "tl.maximum(best")
    # a bf16 x is accumulated in fp32: never bf16 with bf16; fp16 with fp16 stays possible
    assert match_uses([top], "binary_fn.maximum", ["bfloat16", "bfloat16"]).status == "not used"
    assert match_uses([top], "binary_fn.maximum", ["float32", "bfloat16"]).status == "may affect"
    assert match_uses([top], "binary_fn.maximum", ["float16", "float16"]).status == "may affect"
    assert "bfloat16" not in (one(found, "reduce.max", "tl.max(best").operands[0] or ())


def test_a_shims_program_id_and_an_int_annotation_type_index_arithmetic(tmp_path):
    found = uses(
        tmp_path,
        """
        from mylib import lang_ext as ext

        @triton.jit
        def k(x_ptr, tiles: int, BLOCK: tl.constexpr):
            pid = ext.program_id(0)
            n = ext.num_programs(0)
            first = tl.maximum(pid - tiles, 0)
            tl.store(x_ptr + tl.arange(0, BLOCK), tl.minimum(first, n))
        """,
    )
    assert one(found, "binary.sub", "pid - tiles").operands == (
        frozenset({"int32"}),
        frozenset({"arg_i32", "arg_i64"}),
    )
    low = one(found, "binary_fn.minimum", "tl.minimum(first")
    assert match_uses([low], "binary_fn.minimum", ["int16", "*"]).status == "not used"


def test_a_helper_takes_the_callers_tensor_for_a_parameter_it_guessed_a_pointer(tmp_path):
    """``tl.load(sums_ptr + tile - 1)`` makes ``tile`` look like a pointer to the helper alone;
    the caller passes an int32 index: the helper computes with that."""
    found = uses(
        tmp_path,
        """
        @triton.jit
        def helper(tile, sums_ptr, n: int):
            prev = tl.load(sums_ptr + tile - 1)
            first = tl.maximum(tile - n, 0)
            return prev + first

        @triton.jit
        def k(sums_ptr, out_ptr, n: int, steps: int):
            pid = tl.program_id(0)
            for j in range(0, steps):
                tl.store(out_ptr + j, helper(pid + j * n, sums_ptr, n))
        """,
    )
    top = one(found, "binary_fn.maximum", "tl.maximum(tile")
    assert top.operands[0] is not None and top.operands[0] <= INT_DTYPES
    assert match_uses([top], "binary_fn.maximum", ["int16", "lit_int"]).status == "not used"


def test_a_kernel_name_defined_in_two_files_takes_only_its_own_files_launches(tmp_path):
    (tmp_path / "a.py").write_text(HEAD + textwrap.dedent(
        """
        @triton.jit
        def _kernel(x_ptr, n_ptr, BLOCK: tl.constexpr):
            n = tl.load(n_ptr)
            tl.store(x_ptr + tl.arange(0, BLOCK), tl.maximum(n, 0))
        """
    ))  # fmt: skip
    (tmp_path / "b.py").write_text(HEAD + textwrap.dedent(
        """
        @triton.jit
        def _kernel(x_ptr, scale, BLOCK: tl.constexpr):
            tl.store(x_ptr + tl.arange(0, BLOCK), scale)

        def run():
            x = torch.empty(4, dtype=torch.float16)
            _kernel[(1,)](x, 3, BLOCK=4)
        """
    ))  # fmt: skip
    found = build_profile([str(tmp_path)], [], [], None).uses
    top = [u for u in found if u.op == "binary_fn.maximum" and u.path.endswith("a.py")]
    # b.py's launch (an int where a.py has a pointer) never types a.py's kernel
    assert top and all(u.operands[0] is not None for u in top), [u.describe() for u in top]


def test_a_values_cell_of_one_dtype_is_not_an_op_against_an_accumulator_of_another():
    """fp.values.maximum[bfloat16(...)] measures two bf16 operands (or bf16 and a scalar);
    tl.maximum(bf16_load, fp32_acc) computes in fp32."""
    from matrix.analyze.profile.match import Matcher
    from matrix.analyze.profile.model import Profile

    bf16, f32, lit = frozenset({"bfloat16"}), frozenset({"float32"}), frozenset({"lit_float"})
    against_acc = Matcher(Profile(uses=[Use("binary_fn.maximum", (bf16, f32))]))
    assert against_acc.cell("values.maximum", "bfloat16(-1,2)").status == "not used"
    with_literal = Matcher(Profile(uses=[Use("binary_fn.maximum", (bf16, lit))]))
    assert with_literal.cell("values.maximum", "bfloat16(-1,2)").status == "used"
    both = Matcher(Profile(uses=[Use("binary_fn.maximum", (f32, bf16 | f32))]))
    assert both.cell("values.maximum", "bfloat16(-1,2)").status == "not used"


def test_an_untyped_operand_still_may_affect(tmp_path):
    """Fail closed: a value from a pointer nothing types stays open on what tensors carry
    (fp16/bf16/fp32), on a dtype its file names (``tl.int8``), or on every dtype its code
    admits where the team declares ``"*"``."""
    body = """
        @triton.jit
        def k(x_ptr, o_ptr, BLOCK: tl.constexpr):
            r = tl.arange(0, BLOCK)
            x = tl.load(x_ptr + r)
            tl.store(o_ptr + r, tl.maximum(x, 0))
        """
    use = one(uses(tmp_path, body), "binary_fn.maximum", "tl.maximum(x")
    assert match_uses([use], "binary_fn.maximum", ["bfloat16", "lit_int"]).status == "may affect"
    assert match_uses([use], "binary_fn.maximum", ["int8", "lit_int"]).status == "not used"
    named = "\n        Q_DTYPE = tl.int8  # the file names int8\n" + body
    use = one(uses(tmp_path, named), "binary_fn.maximum", "tl.maximum(x")
    assert match_uses([use], "binary_fn.maximum", ["int8", "lit_int"]).status == "may affect"
    use = one(uses(tmp_path, body, WIDE), "binary_fn.maximum", "tl.maximum(x")
    assert match_uses([use], "binary_fn.maximum", ["int8", "lit_int"]).status == "may affect"


# --------------------------------------------------------------- the gate on small kernels

MATMUL = """
@triton.jit
def matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.float16))
"""
ELEMENTWISE = """
@triton.jit
def kern(x_ptr, y_ptr, BLOCK: tl.constexpr{extra}):
    r = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + r).to(tl.{dtype})
    tl.store(y_ptr + r, {expr})
"""
FAILING = [  # (dtype, expression, extra parameters, baseline, candidate, op)
    ("bfloat16", "tl.maximum(x, 0.0)", "", "3.8.0", "3.9.0", "maximum"),
    ("int8", "tl.minimum(x, 100)", "", "3.8.0", "3.9.0", "minimum"),
    ("uint8", "x - ZERO", ", ZERO: tl.constexpr = 3", "3.1.0", "3.2.0", "binary.sub"),
    ("int16", "x * 3", "", "3.1.0", "3.2.0", "binary.mul"),
]


def _gate(tmp_path: Path, source: str, baseline: str, candidate: str) -> tuple[int, str]:
    if not raw_files(RAW):
        pytest.skip("reports/raw has no committed results")
    src = tmp_path / "team"
    src.mkdir()
    (src / "k.py").write_text(HEAD + textwrap.dedent(source))
    out = tmp_path / "gate"
    cmd = [sys.executable, "-m", "matrix.gate", "--baseline", baseline, "--candidate", candidate,
           "--results", str(RAW), "--scan", str(src), "--out", str(out)]  # fmt: skip
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert (out / "gate.json").is_file(), proc.stdout + proc.stderr
    json.loads((out / "gate.json").read_text())
    return proc.returncode, (out / "gate.md").read_text()


@pytest.mark.parametrize(("baseline", "candidate"), [("3.8.0", "3.9.0"), ("3.1.0", "3.2.0")])
def test_a_clean_fp16_matmul_accumulating_in_fp32_is_safe(tmp_path, baseline, candidate):
    code, md = _gate(tmp_path, MATMUL, baseline, candidate)
    assert code == 0, md[:3000]


@pytest.mark.parametrize(("dtype", "expr", "extra", "baseline", "candidate", "op"), FAILING)
def test_a_kernel_using_a_changed_op_still_fails_naming_op_and_line(
    tmp_path, dtype, expr, extra, baseline, candidate, op
):
    code, md = _gate(tmp_path, ELEMENTWISE.format(dtype=dtype, expr=expr, extra=extra),
                     baseline, candidate)  # fmt: skip
    assert code == 1, md[:3000]
    first = md.split("## Details", 1)[0]
    assert op in first and "team/k.py:11" in first, first
