"""Host launch sites decide a kernel's type variables: pointers the host gives one dtype share
one variable, a dtype constexpr passed as a dtype (or a table lookup of a tensor's dtype) is
read, and the wrapper's checks of ``x.dtype`` narrow the variable. Small kernels written for
these tests, modelled on the shapes real kernel libraries use; where the host code is not
understood the variables stay open (fail closed)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from matrix.analyze.profile.declaration import Declaration
from matrix.analyze.profile.model import ELEM_DTYPES, Use
from matrix.gate.usage import build_profile

HEAD = "import torch\nimport triton\nimport triton.language as tl\n\n\n"
# What the host decides, on variables open to every dtype their code admits (a declared "*"):
# the default of an undecided one (fp16/bf16/fp32, open_types.py) is tests/test_open_types.py's
WIDE = Declaration.parse({"dtypes": {"*": ["*"]}}, "test")

KERNEL = """
@triton.jit
def k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + r)
    y = tl.load(y_ptr + r)
    tl.store(y_ptr + r, x - y)

"""


def uses(tmp_path: Path, host: str, kernel: str = KERNEL, **fill: str) -> list[Use]:
    """The profile of ``kernel`` and ``host`` (``{name}`` in it filled from ``fill``, each
    line of a filled value at the indentation of the placeholder)."""
    text = textwrap.dedent(host)
    for key, value in fill.items():
        line = next(x for x in text.splitlines() if "{" + key + "}" in x)
        pad = line[: len(line) - len(line.lstrip())]
        text = text.replace("{" + key + "}", value.replace("\n", "\n" + pad))
    (tmp_path / "k.py").write_text(HEAD + textwrap.dedent(kernel) + text)
    return build_profile([str(tmp_path)], [], [], WIDE).uses


def sub(found: list[Use]) -> Use:
    (u,) = [u for u in found if u.op == "binary.sub"]
    return u


def pairs(u: Use) -> set[tuple[str, ...]]:
    """The operand pairs the use can have (its combos where operands share a variable)."""
    if u.combos:
        return set(u.combos)
    a, b = u.operands
    return {(x, y) for x in a or () for y in b or ()}


def test_empty_like_ties_two_pointers_to_one_type_variable(tmp_path):
    u = sub(uses(tmp_path, """
        def run(x):
            y = torch.empty_like(x)
            k[(1,)](x, y, x.numel(), BLOCK=128)
        """))  # fmt: skip
    assert pairs(u) == {(d, d) for d in ELEM_DTYPES}  # never fp16 with bf16
    assert "`x_ptr`" in u.decides and "`y_ptr`" not in u.decides


def test_each_host_spelling_of_the_same_dtype_ties(tmp_path):
    for make in ("x.new_empty(x.shape)", "torch.empty(x.shape, dtype=x.dtype, device=x.device)",
                 "x.clone()", "x.view(-1)", "x.reshape(4, -1)", "x.contiguous()",
                 "torch.zeros_like(x) if x.is_cuda else x.detach()"):  # fmt: skip
        found = uses(tmp_path, f"""
            def run(x):
                x = x.contiguous()
                y = {make}
                k[(1,)](x, y, x.numel(), BLOCK=128)
            """)  # fmt: skip
        assert pairs(sub(found)) == {(d, d) for d in ELEM_DTYPES}, make


def test_unrelated_tensors_or_a_dtype_change_stay_independent(tmp_path):
    for make in ("torch.empty_like(x, dtype=out_dtype)", "x.view(torch.int8)", "x.to(out_dtype)",
                 "torch.empty_like(z)", "x.to(z)"):  # fmt: skip
        found = uses(tmp_path, f"""
            def run(x, z, out_dtype):
                y = {make}
                k[(1,)](x, y, x.numel(), BLOCK=128)
            """)  # fmt: skip
        u = sub(found)
        assert not u.combos, make
        assert "`y_ptr`" in u.decides or "int8" in (u.operands[1] or ()), make


def test_a_reassigned_name_is_not_tied(tmp_path):
    u = sub(uses(tmp_path, """
        def run(x, z, flag):
            y = torch.empty_like(x)
            if flag:
                y = z
            k[(1,)](x, y, x.numel(), BLOCK=128)
        """))  # fmt: skip
    assert not u.combos and "`y_ptr`" in u.decides


def test_a_fixed_torch_dtype_types_the_other_pointer(tmp_path):
    u = sub(uses(tmp_path, """
        def run(x):
            y = torch.empty(x.shape, dtype=torch.float32, device=x.device)
            k[(1,)](x, y, x.numel(), BLOCK=128)
        """))  # fmt: skip
    assert u.operands[1] == frozenset({"float32"})


def test_wrapper_checks_narrow_the_shared_variable(tmp_path):
    for check in ("assert x.dtype in (torch.float16, torch.bfloat16)",
                  "if x.dtype not in (torch.float16, torch.bfloat16):\n    raise TypeError()",
                  "torch._check(x.dtype == torch.float16 or x.dtype == torch.bfloat16)",
                  "if not x.is_cuda or x.dtype not in SUPPORTED:\n    raise ValueError()",
                  "if x is not None:\n    assert x.dtype in SUPPORTED",
                  ):  # fmt: skip
        u = sub(uses(tmp_path, """
            SUPPORTED = (torch.float16, torch.bfloat16)

            def run(x):
                {check}
                y = torch.empty_like(x)
                k[(1,)](x, y, x.numel(), BLOCK=128)
            """, check=check))  # fmt: skip
        assert pairs(u) == {("float16", "float16"), ("bfloat16", "bfloat16")}, check


def test_a_check_under_a_branch_or_about_something_else_narrows_nothing(tmp_path):
    for check in ("if x.is_cuda:\n    assert x.dtype in (torch.float16,)",
                  "use_tc = x.dtype in (torch.float16, torch.bfloat16)",
                  "if x is None:\n    assert x.dtype in (torch.float16,)",
                  "assert x.dtype in (torch.float16,) or x.is_cpu"):  # fmt: skip
        u = sub(uses(tmp_path, """
            def run(x):
                {check}
                y = torch.empty_like(x)
                k[(1,)](x, y, x.numel(), BLOCK=128)
            """, check=check))  # fmt: skip
        assert pairs(u) == {(d, d) for d in ELEM_DTYPES}, check


DTYPE_KERNEL = """
@triton.jit
def c(x_ptr, o_ptr, DTYPE: tl.constexpr, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + r).to(tl.float32)
    acc = tl.zeros((BLOCK,), dtype=tl.float32) + x
    tl.store(o_ptr + r, (acc - 1.0).to(DTYPE))

"""


def casts(found: list[Use]) -> list[Use]:
    return [u for u in found if u.op.startswith("cast") and ".to(DTYPE)" in u.code]


def test_a_dtype_constexpr_passed_as_a_dtype_is_read(tmp_path):
    for given in ("tl.bfloat16", "torch.bfloat16"):
        found = uses(tmp_path, f"""
            def run(x):
                o = torch.empty_like(x)
                c[(1,)](x, o, {given}, BLOCK=128)
            """, DTYPE_KERNEL)  # fmt: skip
        (u,) = casts(found)
        assert u.operands[-1] == frozenset({"bfloat16"}), (given, u)


def test_a_table_lookup_of_a_tensor_dtype_ties_the_constexpr_to_its_pointer(tmp_path):
    found = uses(tmp_path, """
        TO_TL = {torch.float32: tl.float32, torch.float16: tl.float16, torch.bfloat16: tl.bfloat16}

        def run(x):
            o = torch.empty_like(x)
            c[(1,)](x, o, TO_TL[x.dtype], BLOCK=128)
        """, DTYPE_KERNEL)  # fmt: skip
    (u,) = casts(found)
    assert u.operands[-1] == frozenset({"float32", "float16", "bfloat16"})  # the table's keys
    loads = [x for x in found if x.op.startswith("cast") and "tl.load(x_ptr" in x.code]
    assert loads and all(set(x.operands[0] or ()) <= {"float32", "float16", "bfloat16"}
                         for x in loads)  # fmt: skip


def test_a_starred_argument_stops_positional_binding(tmp_path):
    u = sub(uses(tmp_path, """
        def run(x, shape):
            y = torch.empty(shape, dtype=torch.float16)
            k[(1,)](*shape, y, x, BLOCK=128)
        """))  # fmt: skip
    # after *shape the positions are unknown: nothing is typed from them
    assert u.operands[0] == ELEM_DTYPES and not u.combos


def test_a_launch_site_that_types_nothing_still_counts(tmp_path):
    found = uses(tmp_path, """
        def typed(n):
            x = torch.zeros(n, dtype=torch.float16)
            k[(1,)](x, torch.empty_like(x), n, BLOCK=128)

        def untyped(a, b):
            k[(1,)](a, b, 4, BLOCK=128)
        """)  # fmt: skip
    subs = [x for x in found if x.op == "binary.sub"]
    assert any(x.operands[0] == frozenset({"float16"}) for x in subs)
    assert any(x.operands[0] == ELEM_DTYPES for x in subs)  # the other site: open


def test_block_sizes_passed_from_one_host_variable_stay_block_sizes(tmp_path):
    found = uses(tmp_path, """
        def run(x, n):
            B = pick(n)
            y = torch.empty_like(x)
            m[(1,)](x, y, n, B, B)
        """, """
        @triton.jit
        def m(x_ptr, y_ptr, n, BT: tl.constexpr, BS: tl.constexpr):
            r = tl.arange(0, BS)
            e = tl.minimum(n, BT)
            tl.store(y_ptr + r, tl.load(x_ptr + r), mask=r < e)

        """)  # fmt: skip
    (u,) = [u for u in found if u.op == "binary_fn.minimum"]
    # a constexpr scalar (not read as a dtype because the host ties BT to BS)
    assert u.operands[1] is not None and u.operands[1] <= {"cx_int", "cx_float"}, u.operands


def test_an_assignment_after_the_launch_is_not_what_it_passed_unless_in_a_loop(tmp_path):
    after = """
        def run(x, z):
            y = torch.empty_like(x)
            k[(1,)](x, y, x.numel(), BLOCK=128)
            y = y.sum(0)
        """
    assert pairs(sub(uses(tmp_path, after))) == {(d, d) for d in ELEM_DTYPES}
    looped = """
        def run(x, z):
            y = torch.empty_like(x)
            for _ in range(2):
                k[(1,)](x, y, x.numel(), BLOCK=128)
                y = y.sum(0)
        """
    assert not sub(uses(tmp_path, looped)).combos  # the second launch passes another y


def test_a_launch_of_a_kernel_imported_by_name_types_it_though_a_copy_has_its_name(tmp_path):
    # Liger: ops/fused_moe.py imports _moe_router_prefix_sum_kernel from ops/fused_moe_kernels,
    # and a vendor copy (backends/_ascend/...) defines the same name: the launch with int32
    # tensors still types the imported kernel (it used to be dropped as "another file's").
    from matrix.gate.usage import build_profile

    pkg = tmp_path / "pkg"
    (pkg / "other").mkdir(parents=True)
    for d in (pkg, pkg / "other"):
        (d / "__init__.py").write_text("")
    kernel = (
        "import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
        "def prefix(x_ptr, o_ptr, B: tl.constexpr):\n"
        "    o = tl.arange(0, B)\n"
        "    tl.store(o_ptr + o, tl.cumsum(tl.load(x_ptr + o), 0))\n"
    )
    (pkg / "kernels.py").write_text(kernel)
    (pkg / "other" / "kernels.py").write_text(kernel)
    (pkg / "host.py").write_text(
        "import torch\n\nfrom pkg.kernels import prefix\n\n\ndef run(n):\n"
        "    x = torch.zeros(n, dtype=torch.int32)\n"
        "    o = torch.empty(n, dtype=torch.int32)\n"
        "    prefix[(1,)](x, o, B=128)\n"
    )
    uses = build_profile([str(pkg)], [], []).uses
    cumsum = {u.path: u.operands for u in uses if u.op == "reduce.cumsum"}
    assert cumsum["pkg/kernels.py"] == (frozenset({"int32"}),)
    assert cumsum["pkg/other/kernels.py"] != (frozenset({"int32"}),)  # nothing launches it


def test_two_kernels_of_one_name_in_one_file_each_take_their_own_launch(tmp_path):
    # triton-lang/kernels test_inductor.py: two tests each define `fn` and launch it below; the
    # first is launched with int64 tensors (it used to take the second's launch, by name).
    from matrix.gate.usage import build_profile

    (tmp_path / "t.py").write_text(
        "import torch\nimport triton\nimport triton.language as tl\n\n\n"
        "def test_a():\n"
        "    @triton.jit\n"
        "    def fn(x_ptr, o_ptr, B: tl.constexpr):\n"
        "        o = tl.arange(0, B)\n"
        "        tl.store(o_ptr + o, tl.cumsum(tl.load(x_ptr + o), 0))\n\n"
        "    x = torch.randint(0, 9, (16,), dtype=torch.int64)\n"
        "    fn[(1,)](x, torch.empty_like(x), 16)\n\n\n"
        "def test_b():\n"
        "    @triton.jit\n"
        "    def fn(o_ptr, n, B: tl.constexpr):\n"
        "        tl.store(o_ptr + tl.arange(0, B), tl.arange(0, B))\n\n"
        "    fn[(1,)](torch.empty(16, dtype=torch.int32), 16, 16)\n"
    )
    uses = build_profile([str(tmp_path)], [], []).uses
    (cumsum,) = [u.operands for u in uses if u.op == "reduce.cumsum"]
    assert cumsum == (frozenset({"int64"}),)


def test_an_attribute_launch_in_another_file_counts_only_through_the_kernels_module(tmp_path):
    # triton-lang/kernels: blocksparse/matmul.py's `_matmul.fn[mode](...)` (a dict of its own
    # kernels) was taken for a launch of test_inductor.py's kernel `fn`, giving it an open
    # reading beside its own int64 launch; `kernels.fn[grid](...)` through the module counts.
    from matrix.gate.usage import build_profile

    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "kernels.py").write_text(
        "import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
        "def fn(x_ptr, o_ptr, B: tl.constexpr):\n"
        "    o = tl.arange(0, B)\n"
        "    tl.store(o_ptr + o, tl.cumsum(tl.load(x_ptr + o), 0))\n"
    )
    (pkg / "other.py").write_text(
        "class _matmul:\n    fn = {}\n\n\ndef run(a, b):\n    return _matmul.fn['x'](a, b)\n"
    )
    (pkg / "host.py").write_text(
        "import torch\n\nimport pkg.kernels as kernels\n\n\ndef run(n):\n"
        "    x = torch.zeros(n, dtype=torch.int64)\n"
        "    kernels.fn[(1,)](x, torch.empty_like(x), B=128)\n"
    )
    uses = build_profile([str(pkg)], [], []).uses
    assert [u.operands for u in uses if u.op == "reduce.cumsum"] == [(frozenset({"int64"}),)]


def test_a_closure_launching_the_kernel_reads_its_enclosing_functions_tensors(tmp_path):
    # mamba3_mimo_utils.py's benchmark: `def triton_impl(): return wrapper(da, ...)` inside the
    # function that makes `da` float32; a name a nested function does not bind is the outer's
    u = sub(uses(tmp_path, """
        def bench():
            x = torch.randn(64, dtype=torch.float32)
            y = torch.empty(64, dtype=torch.float16)

            def launch():
                k[(1,)](x, y, x.numel(), BLOCK=128)

            launch()
        """))  # fmt: skip
    assert u.operands == (frozenset({"float32"}), frozenset({"float16"}))
    # bound in the nested function itself: its own value, not the outer one
    u = sub(uses(tmp_path, """
        def bench(z):
            x = torch.randn(64, dtype=torch.float32)

            def launch():
                x = z
                k[(1,)](x, x, x.numel(), BLOCK=128)

            launch()
        """))  # fmt: skip
    assert u.operands[0] != frozenset({"float32"})
