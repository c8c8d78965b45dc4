"""The profile's type inference, one rule per test, on small kernels written for these tests:
every expression gets a dtype set (or a scalar kind), a dtype that only a pointer parameter
gives is a named type variable, and what would decide it is said on the use."""

from __future__ import annotations

import textwrap
from pathlib import Path

from matrix.analyze.profile.declaration import Declaration
from matrix.analyze.profile.model import ELEM_DTYPES, Use
from matrix.gate.usage import build_profile
from matrix.results import Result, Run

HEAD = "import torch\nimport triton\nimport triton.language as tl\n\n\n"


def uses(tmp_path: Path, body: str, declaration: Declaration | None = None) -> list[Use]:
    (tmp_path / "k.py").write_text(HEAD + textwrap.dedent(body))
    return build_profile([str(tmp_path)], [], [], declaration).uses


def ops(found: list[Use], op: str, line_has: str = "") -> list[tuple[frozenset[str] | None, ...]]:
    return [u.operands for u in found if u.op == op and line_has in u.code]


F32, I32, F16 = frozenset({"float32"}), frozenset({"int32"}), frozenset({"float16"})
# What an undecided element type admits by default ([open_types]), and the declaration that
# opens it to every dtype its code admits (the rules below that narrow from every dtype)
OPEN = frozenset({"float16", "bfloat16", "float32"})
WIDE = Declaration.parse({"dtypes": {"*": ["*"]}}, "test")


def test_an_fp32_accumulator_stays_fp32_through_dot_and_augmented_assignment(tmp_path):
    found = uses(
        tmp_path,
        """
        @triton.jit
        def k(a_ptr, b_ptr, o_ptr, BM: tl.constexpr):
            r = tl.arange(0, BM)
            acc = tl.zeros((BM, BM), dtype=tl.float32)
            l_i = tl.full((BM,), 1.0, tl.float32) + tl.zeros((BM,), tl.float32)
            for i in range(4):
                a = tl.load(a_ptr + r[:, None] * BM + r[None, :])
                b = tl.load(b_ptr + r[:, None] * BM + r[None, :])
                acc += tl.dot(a, b)
            out = acc / l_i[:, None]
            tl.store(o_ptr + r[:, None] * BM + r[None, :], out)
        """,
    )
    # acc keeps float32 through the loop; the dot of what a_ptr holds (fp16, bf16 or fp32 by
    # default) gives float32
    (add,) = [u for u in found if u.op == "binary.add" and "acc +=" in u.code]
    assert add.operands == (F32, F32) and not add.decides
    assert ops(found, "binary.truediv", "acc / l_i") == [(F32, F32)]
    # open to every dtype (declared "*"), the dot depends on a_ptr's element type (an int8
    # dot gives int32), which nothing here decides: a named type variable
    wide = uses(
        tmp_path,
        """
        @triton.jit
        def k(a_ptr, b_ptr, BM: tl.constexpr):
            r = tl.arange(0, BM)
            acc = tl.zeros((BM, BM), dtype=tl.float32)
            a = tl.load(a_ptr + r[:, None] * BM + r[None, :])
            b = tl.load(b_ptr + r[:, None] * BM + r[None, :])
            acc += tl.dot(a, b)
        """,
        WIDE,
    )
    (add,) = [u for u in wide if u.op == "binary.add" and "acc +=" in u.code]
    assert add.operands[0] == F32 and {"float32", "int32"} <= (add.operands[1] or set())
    assert "the element type of `a_ptr`, the element type of `b_ptr` of `k`" in add.decides


def test_dot_result_follows_out_dtype_and_acc(tmp_path):
    found = uses(
        tmp_path,
        """
        @triton.jit
        def k(a_ptr, o_ptr, BM: tl.constexpr):
            r = tl.arange(0, BM)
            a = tl.load(a_ptr + r[:, None] * BM + r[None, :]).to(tl.float16)
            x = tl.dot(a, a, out_dtype=tl.float16)
            y = tl.dot(a, a, acc=tl.zeros((BM, BM), dtype=tl.float32))
            z = tl.dot(a.to(tl.int8), a.to(tl.int8))
            tl.store(o_ptr + r, x * 2.0 + y * 2.0 + z * 2)
        """,
    )
    assert ops(found, "binary.mul", "x * 2.0")[0][0] == F16
    assert ops(found, "binary.mul", "y * 2.0")[1][0] == F32
    assert ops(found, "binary.mul", "z * 2")[2][0] == I32


def test_index_arithmetic_is_int32(tmp_path):
    found = uses(
        tmp_path,
        """
        @triton.jit
        def k(x_ptr, n, N, BLOCK: tl.constexpr):
            pid = tl.program_id(0)
            a = pid % n
            offs = (pid * BLOCK + tl.arange(0, BLOCK)) % N
            tl.store(x_ptr + offs, a)
        """,
    )
    mods = ops(found, "binary.mod")
    assert len(mods) == 2 and all(o[0] == I32 for o in mods)
    # N sits in a pointer's offset: an integer argument, never a pointer nor a float
    assert mods[1][1] == frozenset({"arg_i32", "arg_i64"})


def test_comparisons_are_int1_and_where_promotes_its_branches(tmp_path):
    found = uses(
        tmp_path,
        """
        @triton.jit
        def k(o_ptr, BLOCK: tl.constexpr):
            r = tl.arange(0, BLOCK)
            m = r > 3
            v = tl.where(m, tl.zeros((BLOCK,), dtype=tl.float32), 1.0)
            w = m & m
            tl.store(o_ptr + r, v + w.to(tl.float32))
        """,
    )
    assert ops(found, "binary.and") == [(frozenset({"int1"}), frozenset({"int1"}))]
    assert ops(found, "binary.add", "v + w") == [(F32, F32)]


def test_reductions_widen_narrow_integers_and_keep_floats(tmp_path):
    found = uses(
        tmp_path,
        """
        @triton.jit
        def k(o_ptr, BLOCK: tl.constexpr):
            r = tl.arange(0, BLOCK)
            s = tl.sum(r.to(tl.int8), axis=0)
            m = tl.max(r.to(tl.float16), axis=0)
            i = tl.argmax(r.to(tl.float16), axis=0)
            tl.store(o_ptr, s + 1, m * 2.0, i - 1)
        """,
    )
    assert ops(found, "binary.add", "s + 1")[0][0] == I32
    assert ops(found, "binary.mul", "m * 2.0")[0][0] == F16
    assert ops(found, "binary.sub", "i - 1")[0][0] == I32


def test_a_pointers_element_type_is_a_named_type_variable_and_the_use_says_what_decides_it(
    tmp_path,
):
    found = uses(
        tmp_path,
        """
        @triton.jit
        def scale(x_ptr, o_ptr, BLOCK: tl.constexpr):
            r = tl.arange(0, BLOCK)
            x = tl.load(x_ptr + r)
            tl.store(o_ptr + r, x * 2.0)
        """,
    )
    (mul,) = [u for u in found if u.op == "binary.mul" and "x * 2.0" in u.code]
    assert mul.operands[0] == OPEN  # what tensors carry by default, not "unknown"
    assert "declare the element type of `x_ptr` of `scale`" in mul.decides
    assert "[tool.triton-compat]" in mul.decides
    assert "run a test that launches `scale`" in mul.decides


def test_a_loaded_value_used_as_an_offset_is_an_integer(tmp_path):
    found = uses(
        tmp_path,
        """
        @triton.jit
        def nll(x_ptr, y_ptr, o_ptr, ignore_index, V: tl.constexpr):
            row = tl.program_id(0)
            y = tl.load(y_ptr + row)
            keep = y == ignore_index
            x = tl.load(x_ptr + row * V + y)
            tl.store(o_ptr + row, tl.where(keep, 0.0, x))
        """,
    )
    (eq,) = ops(found, "binary.eq")
    assert eq[0] is not None and eq[0] <= frozenset(
        {"int1", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"}
    )
    assert "float8e4nv" not in eq[0]


def test_a_declaration_types_the_pointers_one_reading_per_declared_dtype(tmp_path):
    body = """
        @triton.jit
        def act(x_ptr, o_ptr, BLOCK: tl.constexpr):
            r = tl.arange(0, BLOCK)
            x = tl.load(x_ptr + r)
            tl.store(o_ptr + r, tl.maximum(x, 0.0))
        """
    decl = Declaration.parse({"dtypes": {"act": ["bfloat16", "float16"]}}, "pyproject.toml")
    found = uses(tmp_path, body, decl)
    got = {o[0] for o in ops(found, "binary_fn.maximum")}
    assert got == {frozenset({"bfloat16"}), frozenset({"float16"})}
    assert all(not u.decides for u in found if u.op == "binary_fn.maximum")


def test_host_code_types_a_launch_with_a_torch_dtype(tmp_path):
    found = uses(
        tmp_path,
        """
        @triton.jit
        def deq(q_ptr, o_ptr, Z: tl.constexpr, BLOCK: tl.constexpr):
            r = tl.arange(0, BLOCK)
            tl.store(o_ptr + r, (tl.load(q_ptr + r) - Z).to(tl.float32))


        def run(n):
            q = torch.zeros(n, dtype=torch.uint8)
            o = torch.empty(n, dtype=torch.float32)
            deq[(1,)](q, o, Z=8, BLOCK=128)
        """,
    )
    assert ops(found, "binary.sub") == [(frozenset({"uint8"}), frozenset({"cx_int"}))]


def test_a_jit_helper_is_typed_per_call_site_not_as_scalar_arguments(tmp_path):
    found = uses(
        tmp_path,
        """
        @triton.jit
        def _add(a, b):
            return a + b


        @triton.jit
        def k(o_ptr, BLOCK: tl.constexpr):
            r = tl.arange(0, BLOCK)
            h = _add(r.to(tl.float16), r.to(tl.float16))
            f = _add(r.to(tl.float32), 1.0)
            tl.store(o_ptr + r, h * f)
        """,
    )
    adds = set(ops(found, "binary.add", "a + b"))
    assert adds == {(F16, F16), (F32, frozenset({"lit_float"}))}
    assert ops(found, "binary.mul", "h * f") == [(F32, F32)] or ops(
        found, "binary.mul", "h * f"
    ) == [(F16, F32)]


def test_tuple_results_of_a_helper_unpack_by_position(tmp_path):
    found = uses(
        tmp_path,
        """
        @triton.jit
        def _pair(x):
            return x.to(tl.float16), x.to(tl.int32)


        @triton.jit
        def k(o_ptr, BLOCK: tl.constexpr):
            r = tl.arange(0, BLOCK)
            h, i = _pair(r)
            tl.store(o_ptr + r, h * 2.0 + (i % 3).to(tl.float16))
        """,
    )
    assert ops(found, "binary.mul", "h * 2.0")[0][0] == F16
    assert ops(found, "binary.mod")[0][0] == I32


def test_a_loop_carried_scalar_takes_its_loop_type(tmp_path):
    found = uses(
        tmp_path,
        """
        @triton.jit
        def k(x_ptr, o_ptr, BLOCK: tl.constexpr):
            r = tl.arange(0, BLOCK)
            m = float("-inf")
            for i in range(4):
                x = tl.load(x_ptr + i * BLOCK + r).to(tl.float32)
                m = tl.maximum(m, tl.max(x, axis=0))
            tl.store(o_ptr, m)
        """,
    )
    assert ops(found, "binary_fn.maximum") == [(F32, F32)]


def test_if_branches_join(tmp_path):
    found = uses(
        tmp_path,
        """
        @triton.jit
        def k(o_ptr, flag, BLOCK: tl.constexpr):
            r = tl.arange(0, BLOCK)
            if flag > 0:
                v = r.to(tl.float16)
            else:
                v = r.to(tl.bfloat16)
            tl.store(o_ptr + r, v * 2.0)
        """,
    )
    # a run-time condition: one reading, both sides joined
    assert ops(found, "binary.mul", "v * 2.0") == [
        (frozenset({"float16", "bfloat16"}), frozenset({"lit_float"}))
    ]
    # a constexpr flag: Triton compiles each value apart; one reading each, never joined
    found = uses(
        tmp_path,
        """
        @triton.jit
        def k(o_ptr, FLAG: tl.constexpr, BLOCK: tl.constexpr):
            r = tl.arange(0, BLOCK)
            if FLAG:
                v = r.to(tl.float16)
            else:
                v = r.to(tl.bfloat16)
            tl.store(o_ptr + r, v * 2.0)
        """,
    )
    assert sorted(map(str, ops(found, "binary.mul", "v * 2.0"))) == sorted(
        map(str, [(frozenset({"float16"}), frozenset({"lit_float"})),
                  (frozenset({"bfloat16"}), frozenset({"lit_float"}))])
    )  # fmt: skip


def test_compile_time_comparisons_of_constexprs_are_not_unknown(tmp_path):
    found = uses(
        tmp_path,
        """
        MODE_A: tl.constexpr = tl.constexpr(0)


        @triton.jit
        def k(o_ptr, mode: tl.constexpr, reduction: tl.constexpr, BLOCK: tl.constexpr):
            r = tl.arange(0, BLOCK)
            if mode == MODE_A:
                r = r + 1
            if reduction == "mean":
                r = r + 2
            tl.store(o_ptr + r, r)
        """,
    )
    eqs = ops(found, "binary.eq")
    assert len(eqs) == 2 and all(None not in o for o in eqs)


def test_a_type_annotation_is_no_use_of_a_triton_name(tmp_path):
    found = uses(
        tmp_path,
        """
        def configs() -> list[triton.Config]:
            return [triton.Config({"B": 64}, num_warps=4)]
        """,
    )
    names = [u for u in found if u.op == "name" and u.attr("name") == "triton.Config"]
    assert [u.line for u in names] == [8]  # the call, not the annotation (line 7)


def _fp_run(release: str, backend: str, group: str, cells: dict[str, str]) -> Run:
    data = {"cells": cells}
    return Run(f"{release}-{backend}", {"triton": release}, results=[
        Result(f"fp.{group}", backend, None, "observed", data=data)
    ])  # fmt: skip


def test_what_the_baseline_refuses_everywhere_narrows_a_type_variable(tmp_path):
    body = """
        @triton.jit
        def relu_grad(x_ptr, o_ptr, BLOCK: tl.constexpr):
            r = tl.arange(0, BLOCK)
            x = tl.load(x_ptr + r)
            keep = x < 0
            tl.store(o_ptr + r, tl.where(keep, 0.0, x * 2))
        """
    (tmp_path / "k.py").write_text(HEAD + textwrap.dedent(body))
    refused = {"float8e5,lit_int": "rejected", "float16,lit_int": "int1"}
    runs = [
        _fp_run("3.8.0", "interpret", "binary.lt", refused),
        _fp_run("3.8.0", "aot", "binary.lt", refused),
        # refused on the interpreter only: compiled code may do it, so it stays admitted
        _fp_run("3.8.0", "interpret", "binary.lt", {"bfloat16,lit_int": "rejected"}),
        _fp_run("3.8.0", "aot", "binary.lt", {"bfloat16,lit_int": "int1"}),
        # another release's refusals say nothing of the baseline
        _fp_run("3.9.0", "interpret", "binary.lt", {"float16,lit_int": "rejected"}),
    ]
    found = build_profile([str(tmp_path)], [], runs, WIDE, baseline="3.8.0").uses
    (mul,) = ops(found, "binary.mul")
    assert mul[0] is not None
    assert "float8e5" not in mul[0] and {"float16", "bfloat16"} <= mul[0]
    without = build_profile([str(tmp_path)], [], runs, WIDE).uses
    assert "float8e5" in ops(without, "binary.mul")[0][0]


def test_a_constexpr_dtype_parameter_is_a_type_variable_and_a_dtype_call_a_scalar(tmp_path):
    body = """
        @triton.jit
        def norm(x_ptr, o_ptr, OUT_DTYPE: tl.constexpr, BLOCK: tl.constexpr):
            r = tl.arange(0, BLOCK)
            m = tl.float32(-float("inf"))
            x = tl.load(x_ptr + r).to(tl.float32)
            m = tl.maximum(m, tl.max(x, axis=0))
            tl.store(o_ptr + r, (x - m).to(OUT_DTYPE))
        """
    found = uses(tmp_path, body)
    assert ops(found, "binary_fn.maximum") == [(F32, F32)]
    (cast,) = [u for u in found if u.op == "cast.to" and "OUT_DTYPE" in u.code]
    assert cast.operands[0] == F32 and cast.operands[1] == OPEN
    assert "the dtype `OUT_DTYPE` holds of `norm`" in cast.decides
    (cast,) = [u for u in uses(tmp_path, body, WIDE) if u.op == "cast.to" and "OUT" in u.code]
    assert cast.operands[1] == ELEM_DTYPES
    decl = Declaration.parse({"dtypes": {"norm.OUT_DTYPE": ["bfloat16"]}}, "pyproject.toml")
    (cast,) = [u for u in uses(tmp_path, body, decl) if u.op == "cast.to" and "OUT" in u.code]
    assert cast.operands == (F32, frozenset({"bfloat16"})) and not cast.decides


def test_a_refusal_with_every_kind_the_other_operand_may_have_rules_a_dtype_out(tmp_path):
    body = """
        @triton.jit
        def skip(y_ptr, o_ptr, ignore_index, BLOCK: tl.constexpr):
            r = tl.arange(0, BLOCK)
            y = tl.load(y_ptr + r)
            tl.store(o_ptr + r, (y == ignore_index) * 1)
        """
    (tmp_path / "k.py").write_text(HEAD + textwrap.dedent(body))
    every = {f"float8e5,{k}": "rejected" for k in ("arg_i32", "arg_i64", "arg_f32")}
    some = {"float8e4nv,arg_i32": "rejected", "float8e4nv,arg_f32": "int1"}
    runs = [_fp_run("3.8.0", b, "binary.eq", {**every, **some}) for b in ("interpret", "aot")]
    (eq,) = ops(build_profile([str(tmp_path)], [], runs, WIDE, baseline="3.8.0").uses, "binary.eq")
    assert eq[0] is not None and "float8e5" not in eq[0] and "float8e4nv" in eq[0]


def test_a_helper_of_another_module_called_through_its_module_is_followed(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "ext.py").write_text(
        HEAD
        + textwrap.dedent("""
        @triton.jit
        def program_id(axis):
            return tl.program_id(axis).to(tl.int64)
        """)
    )
    (pkg / "k.py").write_text(
        HEAD
        + "from pkg import ext as tle\n\n\n"
        + textwrap.dedent("""
        @triton.jit
        def k(o_ptr, n, BLOCK: tl.constexpr):
            pid = tle.program_id(0)
            tl.store(o_ptr + pid, pid % n)
        """)
    )
    found = build_profile([str(pkg)], [], []).uses
    (mod,) = ops(found, "binary.mod")
    assert mod[0] == frozenset({"int64"})


def test_a_values_cell_is_tied_only_where_the_op_computes_in_its_dtype_in_that_column(tmp_path):
    # fp.values.maximum[bfloat16] measures a maximum computed in bf16. A bf16 tensor with a
    # run-time scalar argument computes in fp32 on cuda:90 on both releases (the recorded
    # fp.binary_fn.maximum[bfloat16,arg_*] cells), so `tl.maximum(x, eps)` does not use the
    # cell there; with a float literal 3.9.0 keeps bf16, so `tl.maximum(x, 0.0)` does.
    from matrix.analyze.profile.match import MAY_AFFECT, NOT_USED, USED, Matcher
    from matrix.analyze.profile.promotion import ReleaseTypes, SidedTypes

    def recorded(release: str, lit: str) -> ReleaseTypes:
        columns = {("binary_fn.maximum", f"bfloat16,{s}"): {"aot:cuda:90": "float32"}
                   for s in ("arg_f32", "arg_i32", "arg_i64")}  # fmt: skip
        columns[("binary_fn.maximum", "bfloat16,lit_float")] = {"aot:cuda:90": lit}
        return ReleaseTypes(release, columns=columns)

    def match(kernel: str, column: str | None, types: bool = True) -> str:
        folder = tmp_path / kernel
        folder.mkdir(exist_ok=True)
        second = "eps" if kernel == "runtime" else "0.0"
        (folder / "k.py").write_text(
            HEAD
            + textwrap.dedent(f"""
            @triton.jit
            def {kernel}(x_ptr, o_ptr, eps):
                x = tl.load(x_ptr).to(tl.bfloat16)
                tl.store(o_ptr, tl.maximum(x, {second}))
            """)
        )
        profile = build_profile([str(folder)], [], [])
        if types:
            profile.types = SidedTypes(recorded("3.8.0", "float32"), recorded("3.9.0", "bfloat16"))
        return Matcher(profile).cell("values.maximum", "bfloat16", column).status

    assert match("runtime", "aot:cuda:90") == NOT_USED
    assert match("literal", "aot:cuda:90") == USED
    # a column where nothing was recorded for the pair, or no recorded types: fail closed
    assert match("runtime", "gpu:cuda:90") == MAY_AFFECT
    assert match("runtime", "aot:cuda:90", types=False) == MAY_AFFECT


def test_an_address_cast_to_a_pointer_type_is_a_pointer_not_a_value_cast(tmp_path):
    """lightllm kv_trans_v2.py: ``tl.load(mems + i).to(tl.pointer_type(out.dtype.element_ty))``
    makes an integer address a pointer (tt.int_to_ptr). No ``cast.to`` between dtypes is
    recorded; a load through it reads ``out``'s element type (one variable with the store to
    ``out``); the address table holds integers, and so does what indexes the new pointer."""
    found = uses(
        tmp_path,
        """
        @triton.jit
        def k(mems_ptr, idx_ptr, out_ptr, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            i = tl.load(idx_ptr)
            src = tl.load(mems_ptr).to(tl.pointer_type(out_ptr.dtype.element_ty))
            x = tl.load(src + i * BLOCK + offs)
            tl.store(out_ptr + offs, x * 2)
        """,
    )
    assert ops(found, "cast.to") == []
    [(held,)] = ops(found, "load", "src + i")
    assert held == OPEN
    [(table,)] = ops(found, "load", "mems_ptr")
    assert table and not table & OPEN  # an address: an integer, never a float
    [(index,)] = ops(found, "load", "idx_ptr")
    assert index and not index & OPEN
    assert ops(found, "binary.mul", "x * 2") == [(OPEN, frozenset({"lit_int"}))]


def test_a_pointer_a_helper_loads_and_the_constexprs_it_is_passed_reach_the_helper(tmp_path):
    """FlagGems attention.py: ``_attn_fwd`` builds ``mask_ptrs = M + offs`` (``None`` when
    ``HAS_MASK`` is off) and its helper loads through it under ``if HAS_MASK:``. ``M`` is a
    pointer (the helper loads it), and the helper takes the caller's constexpr values: with
    ``HAS_MASK`` off its mask branch is not read, so nothing in it is unknown; with it on,
    what ``M`` holds is ``M``'s type variable. Either way ``acc / l`` divides two fp32s."""
    found = uses(
        tmp_path,
        """
        @triton.jit
        def inner(acc, l, x_ptrs, mask_ptrs, HAS_MASK: tl.constexpr):
            x = tl.load(x_ptrs).to(tl.float32)
            if HAS_MASK:
                x = x + tl.load(mask_ptrs)
            return acc + x, l + tl.sum(x, 0)

        @triton.jit
        def fwd(X, M, O, HAS_MASK: tl.constexpr, BLOCK: tl.constexpr):
            r = tl.arange(0, BLOCK)
            if HAS_MASK:
                mask_ptrs = M + r
            else:
                mask_ptrs = None
            acc = tl.zeros((BLOCK,), dtype=tl.float32)
            l = tl.zeros((1,), dtype=tl.float32)
            acc, l = inner(acc, l, X + r, mask_ptrs, HAS_MASK)
            tl.store(O + r, acc / l)
        """,
    )
    assert set(ops(found, "binary.truediv", "acc / l")) == {(F32, F32)}
    masked = {u.operands for u in found if u.op == "binary.add" and "tl.load(mask_ptrs)" in u.code}
    assert masked and all(None not in ops and F32 in ops for ops in masked)
    assert all(u.operands != (None,) for u in found if u.op == "load")
