"""A dtype the host picks under a condition: per dtype of what the condition tests (a float32
buffer for an fp16 or bf16 input, the input's dtype otherwise), followed through the wrapper's
calls; a choice between named dtypes whatever the condition (``torch.int32 if n < 2**31 else
torch.int64``) is one of them, never an open element type. Small kernels and wrappers written
for these tests, shaped like FlagGems' ``cummax.py`` and ``masked_select.py``."""

from __future__ import annotations

import textwrap
from pathlib import Path

from matrix.analyze.profile.declaration import Declaration
from matrix.analyze.profile.model import Use
from matrix.gate.usage import build_profile

HEAD = "import torch\nimport triton\nimport triton.language as tl\n\n\n"

# FlagGems cummax's add_base_max_kernel: the running maxima of the parts, kept in a buffer of
# the "compute" dtype, merged into the output
ADD_BASE = """
@triton.jit
def add_base(out_ptr, part_ptr, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    a = tl.load(out_ptr + r)
    b = tl.load(part_ptr)
    tl.store(out_ptr + r, tl.maximum(a, b).to(a.dtype))

"""

# the wrapper: ``fan`` makes the parts' buffer with the dtype it is passed and recurses on it
FAN = """
def fan(out, n, dtype):
    part = None
    if n > 1:
        part = torch.empty(n, dtype=dtype, device=out.device)
        fan(part, n // 2, dtype)
    add_base[(1,)](out, part, BLOCK=128)


def cummax(x, z):
    out = torch.empty_like(x)
    {pick}
    fan(out, 4, compute_dtype)
"""

HALVES = {"float16", "bfloat16"}


def profile(tmp_path: Path, kernel: str, host: str) -> list[Use]:
    (tmp_path / "k.py").write_text(HEAD + textwrap.dedent(kernel) + textwrap.dedent(host))
    return build_profile([str(tmp_path)], [], []).uses


def pairs(u: Use) -> set[tuple[str, ...]]:
    if u.combos:
        return set(u.combos)
    a, b = u.operands
    return {(x, y) for x in a or () for y in b or ()}


def maxima(tmp_path: Path, pick: str) -> set[tuple[str, ...]]:
    host = textwrap.dedent(FAN).replace("{pick}", pick.replace("\n", "\n    "))
    found = profile(tmp_path, ADD_BASE, host)
    got: set[tuple[str, ...]] = set()
    for u in found:
        if u.op == "binary_fn.maximum":
            got |= pairs(u)
    assert got, [u.op for u in found]
    return got


def test_a_dtype_promoted_for_half_inputs_is_float32_for_them(tmp_path):
    # FlagGems cummax: compute_dtype = out.dtype, float32 where the input is fp16 or bf16;
    # the parts' buffer is made with it in a wrapper (and its recursion), so the maximum of
    # an output value and a part's maximum is never two bf16 (or two fp16)
    for pick in (
        "compute_dtype = out.dtype\n"
        "if x.dtype == torch.float16 or x.dtype == torch.bfloat16:\n"
        "    compute_dtype = torch.float32",
        "if x.dtype in (torch.float16, torch.bfloat16):\n"
        "    compute_dtype = torch.float32\n"
        "else:\n"
        "    compute_dtype = x.dtype",
        "compute_dtype = torch.float32 if x.dtype in (torch.float16, torch.bfloat16) else x.dtype",
    ):
        got = maxima(tmp_path, pick)
        assert not any(a == b for a, b in got if a in HALVES), (pick, got)
        # the output is the input (either 16-bit format, one per launch) or a float32 part
        assert ("bfloat16", "float32") in got and ("float16", "float32") in got, (pick, got)
        assert ("float16", "bfloat16") not in got and ("bfloat16", "float16") not in got
        assert ("float32", "float32") in got, (pick, got)


def test_a_test_of_another_tensor_does_not_split_the_dtype(tmp_path):
    # the promotion depends on z, not on the input: for a bf16 input the part may be bf16 too
    got = maxima(tmp_path, "compute_dtype = out.dtype\n"
                           "if z.dtype == torch.float16:\n"
                           "    compute_dtype = torch.float32")  # fmt: skip
    assert ("bfloat16", "bfloat16") in got, got


CUMSUM = """
@triton.jit
def part_sum(x_ptr, sums_ptr, NP: tl.constexpr):
    r = tl.arange(0, NP)
    s = tl.load(sums_ptr + r)
    tl.store(sums_ptr + r, tl.cumsum(s, axis=0) - s)

"""


def test_a_choice_between_named_dtypes_is_one_of_them(tmp_path):
    # FlagGems masked_select: the part sums are int32 or int64 by the size, never a float
    for pick in (
        "dtype = torch.int32 if n < 2**31 else torch.int64",
        "if n < 2**31:\n    dtype = torch.int32\nelse:\n    dtype = torch.int64",
    ):
        host = textwrap.dedent("""
            def select(x, n):
                {pick}
                sums = torch.empty(n + 1, dtype=dtype, device=x.device)
                part_sum[(1,)](x, sums, NP=128)
            """).replace("{pick}", pick.replace("\n", "\n    "))  # fmt: skip
        (u,) = [u for u in profile(tmp_path, CUMSUM, host) if u.op == "reduce.cumsum"]
        assert u.operands == (frozenset({"int32", "int64"}),), (pick, u.operands)


def test_a_wrapper_takes_the_calls_of_its_own_file_where_another_file_has_its_name(tmp_path):
    # FlagGems: cummax.py and cummin.py each define scan_then_fan_col and call their own; the
    # other file's call (another input's dtype) is no call of this one
    host = textwrap.dedent(FAN).replace(
        "{pick}", "compute_dtype = torch.float32 if x.dtype in (torch.float16, torch.bfloat16) "
        "else x.dtype")  # fmt: skip
    (tmp_path / "a.py").write_text(HEAD + textwrap.dedent(ADD_BASE) + host)
    # b.py: the same wrapper, launching nothing; its call passes b's own input's dtype
    (tmp_path / "b.py").write_text(
        HEAD + host.replace("add_base[(1,)](out, part, BLOCK=128)", "pass")
    )
    got = {p for u in build_profile([str(tmp_path)], [], []).uses
           if u.op == "binary_fn.maximum" for p in pairs(u)}  # fmt: skip
    assert got and not any(a == b for a, b in got if a in HALVES), got


def test_callers_passing_named_dtypes_and_an_input_dtype_leave_one_dtype_per_launch(tmp_path):
    # lightllm flash_decode_stage2: its callers pass float32, float16 and q.dtype buffers; a
    # running maximum over loads of one pointer never pairs a bf16 load with an fp16 one
    found = profile(tmp_path, """
        @triton.jit
        def stage2(m_ptr, o_ptr, n, BLOCK: tl.constexpr):
            best = -float("inf")
            for i in range(0, n):
                t = tl.load(m_ptr + i)
                best = tl.maximum(t, best)
            tl.store(o_ptr, best)

        """, """
        def run(m, o, n):
            stage2[(1,)](m, o, n, BLOCK=128)

        def a(q, o, n):
            run(torch.empty(n, dtype=torch.float32), o, n)

        def b(q, o, n):
            run(torch.empty(n, dtype=torch.float16), o, n)

        def c(q, o, n):
            run(torch.empty(n, dtype=q.dtype), o, n)
        """)  # fmt: skip
    got = {p for u in found if u.op == "binary_fn.maximum" for p in pairs(u)}
    assert got and not {("bfloat16", "float16"), ("float16", "bfloat16")} & got, got


def test_what_the_host_decides_outranks_a_declared_star(tmp_path):
    # a team declaring every pointer bf16 (`"*" = ["bfloat16"]`): the host's choice of named
    # dtypes (int32/int64 part sums) and its per-dtype image (a float32 parts buffer for a
    # bf16 input) are stronger than the declaration; the input takes the declared bf16
    decl = Declaration.parse({"dtypes": {"*": ["bfloat16"]}}, "test")
    host = textwrap.dedent("""
        def select(x, n):
            dtype = torch.int32 if n < 2**31 else torch.int64
            sums = torch.empty(n + 1, dtype=dtype, device=x.device)
            part_sum[(1,)](x, sums, NP=128)
        """)  # fmt: skip
    (tmp_path / "k.py").write_text(HEAD + textwrap.dedent(CUMSUM) + host)
    (u,) = [u for u in build_profile([str(tmp_path)], [], [], decl).uses if u.op == "reduce.cumsum"]
    assert u.operands == (frozenset({"int32", "int64"}),), u.operands
    pick = "compute_dtype = torch.float32 if x.dtype == torch.bfloat16 else x.dtype"
    fan = textwrap.dedent(FAN).replace("{pick}", pick)
    (tmp_path / "k.py").write_text(HEAD + textwrap.dedent(ADD_BASE) + fan)
    found = build_profile([str(tmp_path)], [], [], decl).uses
    got = {p for u in found if u.op == "binary_fn.maximum" for p in pairs(u)}
    assert got == {("bfloat16", "float32")}, got


def test_a_dtype_test_on_a_declared_dtype_takes_its_side(tmp_path):
    # FlagGems amax: `acc = tl.float32 if dtype is tl.bfloat16 else dtype` with the input
    # declared bf16: the accumulator is fp32, never the union of both sides
    kernel = """
    @triton.jit
    def amax(x_ptr, o_ptr, BLOCK: tl.constexpr):
        r = tl.arange(0, BLOCK)
        dtype = x_ptr.type.element_ty
        acc_type = tl.float32 if dtype is tl.bfloat16 else dtype
        acc = tl.full([BLOCK], value=0, dtype=acc_type)
        acc = tl.maximum(acc, tl.load(x_ptr + r))
        tl.store(o_ptr + r, acc)
    """
    (tmp_path / "k.py").write_text(HEAD + textwrap.dedent(kernel))
    decl = Declaration.parse({"dtypes": {"*": ["bfloat16"]}}, "test")
    found = build_profile([str(tmp_path)], [], [], decl).uses
    (u,) = [u for u in found if u.op == "binary_fn.maximum"]
    assert u.operands == (frozenset({"float32"}), frozenset({"bfloat16"})), u.operands
