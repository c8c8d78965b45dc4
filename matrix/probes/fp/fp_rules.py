"""Fingerprint groups that need kernels of their own (language rules) or no kernel at all
(runtime defaults of the host API).

``rules``: one tiny kernel per rule, named in ``[rules].cases`` of the battery file. Each stores
a value the rule computes; under the interpreter (and on a GPU) a cell is ``accepted`` (the
value is right), ``wrong`` (data.values has expected and got) or ``rejected``; for aot it is
``accepted`` or ``rejected`` by the frontend (the compile stops after TTIR generation, see
``stop_after_frontend``). Warnings a rule raises go to ``data.warnings``.

``runtime``: what ``triton.Config({})`` holds, the defaults of ``triton.testing.do_bench`` and
``triton.autotune``, what an Autotuner built with defaults holds, and which process-wide hooks
exist. A cell is the ``repr`` of the value, ``absent`` where the release lacks the name.
"""

import inspect
import re
from typing import Any

import triton
import triton.language as tl

from matrix.probes.fp.battery import TraceComplete
from matrix.probes.support.base import (
    CannotObserve,
    Context,
    Observation,
    attempt,
    exercise,
    root_cause,
)

G_PLAIN = 3
G_CONSTEXPR = tl.constexpr(3)
G_ANNOTATED: tl.constexpr = 3


def stop_after_frontend(_builder=None, _semantic=None, _generator=None):
    """In a compile, end it once TTIR generation reached this point; a no-op when interpreted."""
    if _generator is not None:
        raise TraceComplete("the rule kernel was traced")


# A function attribute typeshed does not know: Triton's code generator reads it.
stop_after_frontend.__triton_builtin__ = True  # type: ignore[attr-defined]
# Triton 3.0-3.1's dependency finder lets a kernel call only functions whose module name starts
# with "triton"; the prefix says whose it is without claiming to be part of Triton.
stop_after_frontend.__module__ = "triton-matrix:" + __name__


@triton.jit
def global_plain(out):
    tl.store(out, G_PLAIN)
    stop_after_frontend()


@triton.jit
def global_constexpr(out):
    tl.store(out, G_CONSTEXPR)
    stop_after_frontend()


@triton.jit
def global_annotated(out):
    tl.store(out, G_ANNOTATED)
    stop_after_frontend()


@triton.jit
def builtin_min_constexpr(out, A: tl.constexpr, B: tl.constexpr):
    tl.store(out, min(A, B))
    stop_after_frontend()


@triton.jit
def builtin_max_tensor(out, x, y):
    tl.store(out, max(x, y))
    stop_after_frontend()


@triton.jit
def builtin_abs(out, x):
    tl.store(out, abs(x))
    stop_after_frontend()


@triton.jit
def builtin_len_tuple(out, A: tl.constexpr, B: tl.constexpr):
    t = (A, B, A)
    tl.store(out, len(t))
    stop_after_frontend()


@triton.jit
def builtin_range_step(out, A: tl.constexpr):
    acc = 0
    for i in range(0, A, 2):
        acc += i
    tl.store(out, acc)
    stop_after_frontend()


@triton.jit
def builtin_isinstance(out, x):
    if isinstance(x, tl.tensor):
        tl.store(out, 1)
    else:
        tl.store(out, 2)
    stop_after_frontend()


@triton.jit
def builtin_int_cast(out, A: tl.constexpr):
    tl.store(out, int(A * 2.5))
    stop_after_frontend()


@triton.jit
def builtin_float_cast(out, A: tl.constexpr):
    tl.store(out, float(A) / 2.0)
    stop_after_frontend()


@triton.jit
def builtin_print(out, x):
    print("fp rule", x)
    tl.store(out, x)
    stop_after_frontend()


@triton.jit
def static_range(out, A: tl.constexpr):
    acc = 0
    for i in tl.static_range(A):
        acc += i
    tl.store(out, acc)
    stop_after_frontend()


@triton.jit
def while_loop(out, x):
    i = 0
    while i < x:
        i += 3
    tl.store(out, i)
    stop_after_frontend()


@triton.jit
def _pair(x):
    return x + 1, x * 2


@triton.jit
def tuple_return(out, x):
    a, b = _pair(x)
    tl.store(out, a + b)
    stop_after_frontend()


@triton.jit
def _scaled(x, k: tl.constexpr = 4):
    return x * k


@triton.jit
def nested_jit_default_arg(out, x):
    tl.store(out, _scaled(x))
    stop_after_frontend()


# rule -> (scalar args, constexprs, expected stored value)
RULES: dict[str, tuple[dict[str, Any], dict[str, Any], int]] = {
    "global_plain": ({}, {}, 3),
    "global_constexpr": ({}, {}, 3),
    "global_annotated": ({}, {}, 3),
    "builtin_min_constexpr": ({}, {"A": 5, "B": 3}, 3),
    "builtin_max_tensor": ({"x": 4, "y": 9}, {}, 9),
    "builtin_abs": ({"x": -6}, {}, 6),
    "builtin_len_tuple": ({}, {"A": 1, "B": 2}, 3),
    "builtin_range_step": ({}, {"A": 7}, 12),
    "builtin_isinstance": ({"x": 5}, {}, 1),
    "builtin_int_cast": ({}, {"A": 3}, 7),
    "builtin_float_cast": ({}, {"A": 9}, 4),
    "builtin_print": ({"x": 5}, {}, 5),
    "static_range": ({}, {"A": 5}, 10),
    "while_loop": ({"x": 7}, {}, 9),
    "tuple_return": ({"x": 5}, {}, 16),
    "nested_jit_default_arg": ({"x": 5}, {}, 20),
}


def rule_rows(ctx: Context, names: list[str]) -> list[Observation]:
    import torch

    cells: dict[str, str] = {}
    details: dict[str, str] = {}
    values: dict[str, dict[str, Any]] = {}
    warned: dict[str, str] = {}
    for name in names:
        if name not in RULES:
            raise ValueError(f"[rules].cases names {name!r}; known rules: {sorted(RULES)}")
        scalars, constexprs, expected = RULES[name]
        device = ctx.tensor_device
        out = torch.zeros(1, dtype=torch.int32, device=device)
        try:
            outcome = exercise(ctx, globals()[name], {"out": out, **scalars}, constexprs)
        except CannotObserve as e:  # outside Triton (a file, a tool): this rule's cell only
            cells[name], details[name] = e.status, e.reason[:300]
            continue
        if outcome.warnings:
            warned[name] = "; ".join(sorted(set(outcome.warning_texts(160))))
        if (
            outcome.exception is not None
            and type(root_cause(outcome.exception)).__name__ == "TraceComplete"
        ):
            cells[name] = "accepted"
        elif outcome.exception is not None:
            # The rule kernel is user code: whatever it raised, the release refused it.
            cells[name], details[name] = "rejected", _reason(outcome.exception)
        elif ctx.backend == "aot":
            cells[name] = "accepted"
        else:
            got = int(out.item())
            cells[name] = "accepted" if got == expected else "wrong"
            if got != expected:
                values[name] = {"reference": str(expected), "got": str(got)}
    data: dict[str, Any] = {"cells": cells}
    for key, part in (("details", details), ("values", values), ("warnings", warned)):
        if part:
            data[key] = part
    return [Observation("observed", "", data, name="fp.rules")]


def _reason(e: BaseException) -> str:
    """The innermost cause's type and the last line of its message (a CompilationError's
    message starts with the kernel's source; its reason comes last)."""
    cause = root_cause(e)
    lines = [ln.strip() for ln in str(cause).splitlines() if ln.strip()]
    return f"{type(cause).__name__}: {lines[-1] if lines else ''}"[:300]


def stable_repr(value: Any) -> str:
    """A value's repr without addresses, so that the same default reads the same every run."""
    if callable(value) and not isinstance(value, type):
        return f"callable:{getattr(value, '__name__', type(value).__name__)}"
    return re.sub(r" at 0x[0-9a-f]+", "", repr(value))[:80]


def _default_repr(value: Any) -> str:
    if value is inspect.Parameter.empty:
        return "required"
    return stable_repr(value)


def _signature_cells(prefix: str, fn: Any, cells: dict[str, str]) -> None:
    if fn is None:
        cells[prefix] = "absent"
        return
    for pname, p in inspect.signature(fn).parameters.items():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        cells[f"{prefix}.{pname}"] = _default_repr(p.default)


@triton.jit
def _noop(x):
    pass


# Process-wide names a host program reaches for, by attribute (present or absent).
HOOKS = ("set_allocator", "knobs", "testing.do_bench_cudagraph", "runtime.driver",
         "compiler.ASTSource", "language.extra.libdevice", "tools.tensor_descriptor")  # fmt: skip


def runtime_rows() -> list[Observation]:
    """What a host program gets by default; the same on every backend, so asked once."""
    cells: dict[str, str] = {}
    details: dict[str, str] = {}
    cfg = triton.Config({})
    for attr, value in sorted(vars(cfg).items()):
        if isinstance(value, (int, float, str, bool, type(None))):
            cells[f"config.{attr}"] = repr(value)
        else:
            cells[f"config.{attr}"] = type(value).__name__
    cells["config.str"] = str(cfg)[:120]
    testing = getattr(triton, "testing", None)
    _signature_cells("do_bench", getattr(testing, "do_bench", None), cells)
    _signature_cells("autotune", getattr(triton, "autotune", None), cells)
    _signature_cells("heuristics", getattr(triton, "heuristics", None), cells)
    try:
        tuned = attempt(lambda: triton.autotune(configs=[triton.Config({})], key=[])(_noop))
    except CannotObserve as e:  # outside Triton: this cell only, with the reason
        tuned = None
        cells["autotuner"], details["autotuner"] = e.status, e.reason[:300]
    if tuned is None:
        pass
    elif tuned.raised:
        cells["autotuner"] = "rejected"
    else:
        for attr in ("num_warmups", "num_reps", "warmup", "rep", "cache_results",
                     "use_cuda_graph", "restore_value", "reset_to_zero"):  # fmt: skip
            value = getattr(tuned.value, attr, "absent")
            cells[f"autotuner.{attr}"] = value if value == "absent" else stable_repr(value)
    for hook in HOOKS:
        obj: Any = triton
        for part in hook.split("."):
            obj = getattr(obj, part, None) if obj is not None else None
        cells[f"has.{hook}"] = "present" if obj is not None else "absent"
    data: dict[str, Any] = {"cells": cells, **({"details": details} if details else {})}
    return [Observation("observed", "", data, name="fp.runtime")]
