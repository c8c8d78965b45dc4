"""Calls the kernel reader resolves beyond ``@triton.jit`` helpers, modeled on real libraries'
false gate entries: a plain Python function run at compile time on a dtype (FlagGems'
``get_scan_accum_type``), and a module-level name bound to one of several functions by an
``if`` (fla's ``softplus``, ``make_tensor_descriptor``)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from matrix.analyze.profile.dtype_fns import Dtype, Unknown, evaluate
from matrix.analyze.profile.model import Use, load_map
from matrix.gate.shapes import Sites
from matrix.gate.usage import build_profile
from matrix.scan import Imports

HEAD = "import triton\nimport triton.language as tl\n\n\n"
F32 = frozenset({"float32"})

ACCUM = """
{decorator}
def accum_type(inp_dtype):
    if inp_dtype.is_bf16() or inp_dtype.is_fp16():
        return tl.float32
    if inp_dtype.is_int():  # signed or not
        return tl.int64
    else:
        return inp_dtype


@triton.jit
def scan(in_ptr, out_ptr, N, TILE: tl.constexpr):
    offs = tl.arange(0, TILE)
    acc_dtype: tl.constexpr = accum_type(in_ptr.type.element_ty)
    x = tl.load(in_ptr + offs, mask=offs < N).to(acc_dtype)
    tl.store(out_ptr + offs, tl.cumsum(x, 0), mask=offs < N)
"""


def _profile(root: Path, files: dict[str, str]) -> list[Use]:
    root.mkdir(exist_ok=True)
    (root / "__init__.py").write_text("")
    for name, body in files.items():
        (root / name).write_text(HEAD + textwrap.dedent(body))
    return build_profile([str(root)], [], []).uses


def _one(found: list[Use], op: str, code: str = "") -> Use:
    """The one use of ``op`` on the line that has ``code`` (readings per 16-bit format that
    see it alike give one)."""
    hits = {(u.op, u.operands, u.line) for u in found if u.op == op and code in u.code}
    assert len(hits) == 1, [u.describe() for u in found if u.op == op]
    return next(u for u in found if u.op == op and code in u.code)


@pytest.mark.parametrize("decorator", ["@tl.constexpr", "@triton.constexpr_function", ""])
def test_a_plain_dtype_function_is_evaluated_per_dtype_of_its_argument(tmp_path, decorator):
    found = _profile(tmp_path / "pkg", {"k.py": ACCUM.format(decorator=decorator)})
    # in_ptr holds fp16, bf16 or fp32 by default (and int64, which the file names): the
    # accumulator is fp32 for each float, so the scan is never a 16-bit one
    (scanned,) = _one(found, "reduce.cumsum").operands
    assert scanned is not None and "float32" in scanned
    assert not scanned & {"float16", "bfloat16"}
    # each source dtype is cast to its own accumulator (paired per dtype of in_ptr)
    cast = _one(found, "cast.to")
    assert {("float16", "float32"), ("bfloat16", "float32"), ("float32", "float32")} <= cast.combos
    assert all(dst == ("int64" if src.startswith("int") else "float32")
               for src, dst in cast.combos)  # fmt: skip


def test_a_plain_function_of_another_module_is_evaluated_and_an_unknown_one_stays_open(
    tmp_path,
):
    helper = """
    def accum_type(dt):
        return tl.float32 if dt.is_floating() else tl.int64


    def opaque(dt):
        return getattr(tl, str(dt))
    """
    kernel = """
    from pkg.types import accum_type, opaque


    @triton.jit
    def k(in_ptr, out_ptr, TILE: tl.constexpr):
        offs = tl.arange(0, TILE)
        x = tl.load(in_ptr + offs)
        tl.store(out_ptr + offs, tl.cumsum(x.to(accum_type(x.dtype)), 0))
        tl.store(out_ptr + offs, tl.cumprod(x.to(opaque(x.dtype)), 0))
    """
    found = _profile(tmp_path / "pkg", {"types.py": helper, "k.py": kernel})
    assert _one(found, "reduce.cumsum").operands == (F32,)
    # a function the evaluator does not model (getattr): unknown, failing closed
    assert _one(found, "reduce.cumprod").operands == (None,)


def test_the_evaluator_refuses_what_it_does_not_model():
    import ast

    tree = ast.parse(HEAD + "def f(d, n):\n    return tl.float32 if n > 1 else d\n")
    fn = tree.body[-1]
    assert isinstance(fn, ast.FunctionDef)
    r, umap = Imports(tree), load_map()
    with pytest.raises(Unknown):  # an ordering comparison is none of the modelled tests
        evaluate(fn, r, umap, [Dtype("float16"), 2])
    tree = ast.parse(HEAD + "def f(d):\n    if d == tl.bfloat16:\n        return tl.float32\n")
    fn = tree.body[-1]
    assert isinstance(fn, ast.FunctionDef)
    assert evaluate(fn, Imports(tree), umap, [Dtype("bfloat16")]) == Dtype("float32")
    with pytest.raises(Unknown):  # falls off the end: returns None, no dtype
        evaluate(fn, Imports(tree), umap, [Dtype("float16")])


SOFTPLUS = """
IS_NVIDIA = True


@triton.jit
def softplus_nv(x):
    return tl.inline_asm_elementwise(asm="mov.f32 $0, $1;", constraints="=r,r", pack=1,
                                     args=[x], dtype=tl.float32, is_pure=True)


@triton.jit
def softplus_triton(x):
    return tl.where(x < 20.0, tl.math.log(1 + tl.math.exp(x)), x)


if IS_NVIDIA:
    softplus = softplus_nv
else:
    softplus = softplus_triton

if hasattr(triton.language, "_experimental_make_tensor_descriptor"):
    make_desc = triton.language._experimental_make_tensor_descriptor
elif hasattr(triton.language, "make_tensor_descriptor"):
    make_desc = triton.language.make_tensor_descriptor
else:
    @triton.jit
    def make_desc(base, shape, strides, block_shape):
        return None
"""

GATE = """
from pkg.ops import make_desc, softplus


@triton.jit
def k(g_ptr, a_ptr, o_ptr, T, H: tl.constexpr, BT: tl.constexpr):
    o = tl.arange(0, BT)
    b_g = tl.load(g_ptr + o).to(tl.float32)
    b_a = tl.load(a_ptr).to(tl.float32)
    b_gate = -tl.exp(b_a) * softplus(b_g)
    tl.store(o_ptr + o, tl.cumsum(b_gate, axis=0))
    desc = make_desc(g_ptr, [T, BT], [H * BT, 1], [16, 16])
    tl.store(o_ptr + o, desc.load([0, 0]))
"""


def test_a_name_bound_by_a_module_level_if_is_read_as_each_function_it_may_be(tmp_path):
    found = _profile(tmp_path / "pkg", {"ops.py": SOFTPLUS, "k.py": GATE})
    # softplus is softplus_nv (inline asm of dtype=tl.float32) or softplus_triton (a where of
    # its fp32 input): fp32 either way, so the gate is an fp32 product and an fp32 scan
    assert _one(found, "binary.mul", "softplus").operands == (F32, F32)
    assert _one(found, "reduce.cumsum").operands == (F32,)
    # make_desc is Triton's constructor or a stand-in returning None: the call is the
    # constructor's, at the call's own line, and what it builds holds g_ptr's elements
    names = [u for u in found if u.attr("name") == "triton.language.make_tensor_descriptor"]
    assert {u.path.rsplit("/", 1)[-1] for u in names} >= {"k.py"}
    assert _one(found, "descriptor.load").operands[0] == frozenset(
        {"float16", "bfloat16", "float32"}
    )


def test_an_alias_line_of_the_constructor_is_no_use_where_its_calls_are(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    found = _profile(tmp_path / "pkg", {"ops.py": SOFTPLUS, "k.py": GATE})
    names = [u for u in found if u.attr("name") == "triton.language.make_tensor_descriptor"]
    alias = [u for u in names if u.path.endswith("ops.py")]
    call = [u for u in names if u.path.endswith("k.py")]
    assert alias and len(call) == 1
    sites = Sites([tmp_path / "pkg"])
    shape = "constexpr_strides_not_16B"
    # the alias line binds a name: the call through it is the use, decided on its line
    assert all(sites.has_shape(u, shape, names) is False for u in alias)
    assert sites.has_shape(call[0], shape, names) is True  # H * BT: alignment unknown
    # a call the profile did not read as the constructor's leaves the alias line decided by
    # the calls it finds (fail closed)
    assert all(sites.has_shape(u, shape, alias) is True for u in alias)


def test_a_call_through_a_guarded_alias_runs_only_where_the_binding_does(tmp_path, monkeypatch):
    """fla's op.py binds ``make_tensor_descriptor`` to ``_experimental_make_tensor_descriptor``
    under ``hasattr`` (up to 3.3.1), to ``make_tensor_descriptor`` under ``elif hasattr``: a
    call of it in another file is a call of each only where its binding's guard holds."""
    from matrix.analyze.census import censuses_from_runs
    from matrix.core import Release
    from matrix.results import read_folder

    monkeypatch.chdir(tmp_path)
    found = _profile(tmp_path / "pkg", {"ops.py": SOFTPLUS, "k.py": GATE})
    at_call = {u.attr("name"): u for u in found if u.op == "name" and u.path.endswith("k.py")
               and "make_desc(" in u.code}  # fmt: skip
    new = at_call["triton.language.make_tensor_descriptor"]
    old = at_call["triton.language._experimental_make_tensor_descriptor"]
    assert new.attr("bound").startswith("pkg/ops.py:") and old.attr("bound") != new.attr("bound")
    runs, _ = read_folder(Path(__file__).resolve().parents[1] / "reports" / "raw")
    censuses = censuses_from_runs(runs)
    sites = Sites([tmp_path / "pkg"])
    r331, r340 = Release.parse("3.3.1"), Release.parse("3.4.0")
    assert sites.branch_runs(old, r331, censuses) and not sites.branch_runs(old, r340, censuses)
    assert not sites.branch_runs(new, r331, censuses) and sites.branch_runs(new, r340, censuses)


SOLVE = """
@triton.jit
def inv16(A, T, H: tl.constexpr, BT: tl.constexpr):
    desc = tl.make_tensor_descriptor(A, [T, BT], [H * BT, 1], [16, 16])
    tl.store(A + tl.arange(0, 16), desc.load([0, 0]))


@triton.jit
def inv32(A, T, H: tl.constexpr, BT: tl.constexpr):
    desc = tl.make_tensor_descriptor(A, [T, BT], [H * BT, 1], [16, 16])
    tl.store(A + tl.arange(0, 16), desc.load([0, 0]))


def solve(A):
    {check}
    B, T, H, BT = A.shape
    if BT == 16:
        fn = inv16
    else:
        fn = inv32
    fn[(T, B * H)](A, T=T, H=H, BT=BT)
    {after}
"""


def test_a_constexpr_stride_every_launch_makes_a_multiple_of_16_is_not_the_unaligned_case(
    tmp_path, monkeypatch
):
    """fla's solve_tril.py: ``assert A.shape[-1] in [16, 32, 64]``, ``B, T, H, BT =
    A.shape``, a kernel picked into a local by an ``if``, launched with ``BT=BT``: its
    descriptor stride ``H * BT`` is a multiple of 16 elements, never 16-byte unaligned."""
    monkeypatch.chdir(tmp_path)
    shape = "constexpr_strides_not_16B"
    ok = "assert A.shape[-1] in [16, 32, 64]"
    for i, (check, after, aligned) in enumerate([
        (ok, "pass", True),
        ("assert A.shape[-1] in [16, 24]", "pass", False),  # 24: not a multiple of 16
        ("pass", "pass", False),  # nothing says what BT is
        ("pass", ok, False),  # an assert after the launch says nothing of what it passed
    ]):  # fmt: skip
        root = tmp_path / f"case{i}"
        root.mkdir(parents=True)
        (root / "k.py").write_text(HEAD + SOLVE.format(check=check, after=after))
        profile = build_profile([str(root)], [], [])
        calls = [u for u in profile.uses if u.attr("name").endswith("make_tensor_descriptor")]
        assert {u.kernel for u in calls} == {"inv16", "inv32"}
        sites = Sites([root], profile.int_constexprs)
        assert all(sites.has_shape(u, shape) is (not aligned) for u in calls), check
        if not aligned and "24" not in check:  # what the host passes for BT is not known
            assert not any("BT" in v for v in profile.int_constexprs.values())


def test_tl_core_arithmetic_functions_are_their_operators(tmp_path):
    # FastVideo's nvfp4 quantizer: `tl.core.sub(127, e + 1, sanitize_overflow=False)` of uint32
    # exponents was left untyped, so `tl.minimum(adjusted, 31)` "may be" a bf16 minimum
    found = _profile(
        tmp_path / "pkg",
        {
            "k.py": """
            @triton.jit
            def k(x_ptr, y_ptr):
                offs = tl.arange(0, 16)
                bits = tl.load(x_ptr + offs).to(tl.uint32, bitcast=True)
                e = (bits >> 23) & 0xFF
                adjusted = tl.core.sub(127, e + 1, sanitize_overflow=False)
                shift = tl.minimum(adjusted, 31)
                tl.store(tl.core.add(y_ptr, offs), tl.core.mul(shift, 2))
            """
        },
    )
    sub = _one(found, "binary.sub", "tl.core.sub")
    assert sub.operands == (frozenset({"lit_int"}), frozenset({"uint32"}))
    assert _one(found, "binary_fn.minimum").operands[0] == frozenset({"uint32"})
    assert _one(found, "binary.mul", "tl.core.mul").operands[0] == frozenset({"uint32"})
    assert not [u for u in found if u.op == "binary.add" and "tl.core.add" in u.code]  # a pointer


def test_a_values_compile_time_description_is_a_python_int(tmp_path):
    # tritonbench's gluon epilogue: `smem.type.layout.swizzle_byte_width * 8 /
    # smem.type.element_ty.primitive_bitwidth` is Python arithmetic at compile time, read as
    # an fp8 division because the file names float8e5; a descriptor's `.shape` is run-time
    found = _profile(
        tmp_path / "pkg",
        {
            "k.py": """
            @triton.jit
            def k(x_ptr, y_ptr, desc):
                x = tl.load(x_ptr + tl.arange(0, 16))
                width: tl.constexpr = x.dtype.primitive_bitwidth * 8 / x.type.shape[0]
                y = x * x.shape[0]
                z = desc.shape[0] * desc.block_shape[1]
                tl.store(y_ptr + tl.arange(0, 16), y + width + z)
            """
        },
    )
    cx = frozenset({"cx_int"})
    assert _one(found, "binary.truediv").operands == (cx, cx)
    assert {u.operands[1] for u in found if u.op == "binary.mul" and "x.shape" in u.code} == {cx}
    assert _one(found, "binary.mul", "desc.shape").operands == (None, cx)
    width = [u for u in found if u.op == "binary.add" and "width" in u.code]
    assert {k for u in width for k in (u.operands[1] or ())} <= {"cx_float", "arg_f32"}
