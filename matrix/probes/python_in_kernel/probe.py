"""Plain Python calls inside a ``@triton.jit`` body: which ones a release compiles (issue 39, 44).

Real kernels call Python they did not write for Triton: a module-level helper
(``def half(n): return n // 2``), ``math.log2(BLOCK)``, ``triton.next_power_of_2(N)``,
``triton.cdiv(N, BLOCK)``, a plain function of Triton's own (``core.get_int_dtype``), a function
marked ``triton.constexpr_function``. Releases changed
which of these the code generator accepts; this probe compiles (aot) or runs (interpret) one
small kernel per case and records, in ``data.cells``, each case's outcome:

- ``allowed``: it compiled (aot) or ran and stored the expected value (interpret);
- ``rejected``: the release refused it; ``data.errors[case]`` keeps the innermost error text;
- ``wrong``: it ran (interpret) but stored something else (``data.values[case]``);
- ``absent``: the case's decorator does not exist on the release (``constexpr_function``).

The row's own status sums the cells up: ``restricted`` when any case is rejected, ``wrong`` when
any stored a wrong value, ``allowed`` otherwise. The scanner (rule TRI019) reads the cells: a
team's kernel line that makes such a call is decided by the cell of its kind on the candidate.
"""

import math
import re
from typing import Any

import triton
import triton.language as tl

from matrix.core import REJECTED
from matrix.probes.python_in_kernel import kernel_helpers as helpers
from matrix.probes.python_in_kernel.core_function_kernel import k_triton_function_constexpr
from matrix.probes.support.base import Context, Observation, exercise, refusal

# The decorator that marks a plain function callable at compile time, where it exists (3.9.0:
# triton.constexpr_function); None where the release has none.
CONSTEXPR_FUNCTION = getattr(triton, "constexpr_function", None) or getattr(
    tl, "constexpr_function", None
)


def host_half(n):
    # a plain module-level Python function, as a library writes one for its host code
    return n // 2


def host_add_one(x):
    return x + 1


def _cf_half(n):
    return n // 2


# Any: what the release's decorator returns (it has no stubs); None where it has none, and
# then the kernel that calls it is never launched (``_one`` reports the case absent).
cf_half: Any = CONSTEXPR_FUNCTION(_cf_half) if CONSTEXPR_FUNCTION is not None else None


@triton.jit
def k_host_helper_constexpr(out, BLOCK: tl.constexpr):
    offs = tl.arange(0, host_half(BLOCK))
    tl.store(out + offs, offs)


@triton.jit
def k_module_helper_constexpr(out, BLOCK: tl.constexpr):
    offs = tl.arange(0, helpers.host_half(BLOCK))
    tl.store(out + offs, offs)


@triton.jit
def k_host_helper_scalar(out, n):
    tl.store(out, host_half(n))


@triton.jit
def k_host_helper_tensor(out, inp, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out + offs, host_add_one(tl.load(inp + offs)))


@triton.jit
def k_math_log2_constexpr(out, BLOCK: tl.constexpr):
    tl.store(out, math.log2(BLOCK))


@triton.jit
def k_next_power_of_2_constexpr(out, N: tl.constexpr):
    offs = tl.arange(0, triton.next_power_of_2(N))
    tl.store(out + offs, offs)


@triton.jit
def k_cdiv_constexpr(out, N: tl.constexpr, BLOCK: tl.constexpr):
    tl.store(out, triton.cdiv(N, BLOCK))


@triton.jit
def k_cdiv_scalar(out, n, BLOCK: tl.constexpr):
    tl.store(out, triton.cdiv(n, BLOCK))


@triton.jit
def k_constexpr_function(out, BLOCK: tl.constexpr):
    offs = tl.arange(0, cf_half(BLOCK))
    tl.store(out + offs, offs)


# case: (kernel, output dtype, extra launch arguments, constexprs, the expected output prefix)
CASES: dict[str, tuple[Any, str, dict[str, Any], dict[str, int], list[Any]]] = {
    "host_helper_constexpr": (k_host_helper_constexpr, "int32", {}, {"BLOCK": 8}, [0, 1, 2, 3]),
    "module_helper_constexpr": (k_module_helper_constexpr, "int32", {}, {"BLOCK": 8},
                                [0, 1, 2, 3]),
    "triton_function_constexpr": (k_triton_function_constexpr, "int32", {}, {"BITS": 32},
                                  [0, 1, 2, 3]),
    "host_helper_scalar": (k_host_helper_scalar, "int32", {"n": 10}, {}, [5]),
    "host_helper_tensor": (k_host_helper_tensor, "int32", {"inp": "ones"}, {"BLOCK": 4},
                           [2, 2, 2, 2]),
    "math_log2_constexpr": (k_math_log2_constexpr, "float32", {}, {"BLOCK": 8}, [3.0]),
    "next_power_of_2_constexpr": (k_next_power_of_2_constexpr, "int32", {}, {"N": 5},
                                  [0, 1, 2, 3, 4, 5, 6, 7]),
    "cdiv_constexpr": (k_cdiv_constexpr, "int32", {}, {"N": 10, "BLOCK": 4}, [3]),
    "cdiv_scalar": (k_cdiv_scalar, "int32", {"n": 10}, {"BLOCK": 4}, [3]),
    "constexpr_function": (k_constexpr_function, "int32", {}, {"BLOCK": 8}, [0, 1, 2, 3]),
}  # fmt: skip
SIZE = 16  # every output buffer; the fill -1 marks what a case did not store
ADDRESS = re.compile(r" at 0x[0-9a-f]+")


def _error_text(detail: str) -> str:
    """The refusal itself: a CompilationError's last lines after its caret (the source it quotes
    is the probe's own), with object addresses dropped (they differ run to run)."""
    text = ADDRESS.sub("", detail)
    _head, caret, tail = text.rpartition("^\n")
    return (tail.strip() if caret and tail.strip() else text.strip())[:300]


def _one(ctx: Context, case: str) -> tuple[str, str, object]:
    """(cell, error text, stored values) of one case."""
    import torch

    kernel, dtype, extra, constexprs, expected = CASES[case]
    if case == "constexpr_function" and CONSTEXPR_FUNCTION is None:
        return "absent", "neither triton.constexpr_function nor tl.constexpr_function exists", None
    device = ctx.tensor_device
    out = torch.full((SIZE,), -1, dtype=getattr(torch, dtype), device=device)
    args: dict = {"out": out}
    for name, value in extra.items():
        args[name] = (
            torch.ones(SIZE, dtype=torch.int32, device=device) if value == "ones" else value
        )
    outcome = exercise(ctx, kernel, args, constexprs)
    refused = refusal(outcome, REJECTED)
    if refused:
        return REJECTED, _error_text(refused.detail), None
    if ctx.backend == "aot":
        return "allowed", "", None
    got = out[: len(expected)].tolist()
    if got != [type(got[0])(e) for e in expected]:
        return "wrong", "", got
    return "allowed", "", None


def observe(ctx: Context) -> Observation:
    cells: dict[str, str] = {}
    errors: dict[str, str] = {}
    values: dict[str, object] = {}
    for case in CASES:
        cell, error, got = _one(ctx, case)
        cells[case] = cell
        if error:
            errors[case] = error
        if got is not None:
            values[case] = got
    data = {"cells": cells, "errors": errors, "values": values}
    rejected = sorted(c for c, s in cells.items() if s == REJECTED)
    wrong = sorted(c for c, s in cells.items() if s == "wrong")
    if wrong:
        return Observation("wrong", f"ran with a wrong value: {', '.join(wrong)}", data)
    if rejected:
        return Observation("restricted", f"rejected: {', '.join(rejected)}", data)
    return Observation(
        "allowed", "every case compiled" if ctx.backend == "aot" else "every case ran right", data
    )
