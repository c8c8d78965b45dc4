"""A dtype the host picks under a condition: per dtype of what the condition tests (a float32
buffer for an fp16 or bf16 input, the input's dtype otherwise), followed through the wrapper's
calls; a choice between named dtypes whatever the condition (``torch.int32 if n < 2**31 else
torch.int64``) is one of them, never an open element type. Small kernels and wrappers written
for these tests, shaped like FlagGems' ``cummax.py`` and ``masked_select.py``."""

from __future__ import annotations

import textwrap
from pathlib import Path

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
    for pick in ("dtype = torch.int32 if n < 2**31 else torch.int64",
                 "if n < 2**31:\n    dtype = torch.int32\nelse:\n    dtype = torch.int64"):  # fmt: skip
        host = textwrap.dedent("""
            def select(x, n):
                {pick}
                sums = torch.empty(n + 1, dtype=dtype, device=x.device)
                part_sum[(1,)](x, sums, NP=128)
            """).replace("{pick}", pick.replace("\n", "\n    "))  # fmt: skip
        (u,) = [u for u in profile(tmp_path, CUMSUM, host) if u.op == "reduce.cumsum"]
        assert u.operands == (frozenset({"int32", "int64"}),), (pick, u.operands)
