"""Fingerprint group ``warnings``: the Python warnings a small fixed set of kernels raises when
compiled all the way to the target's binary (aot: TTIR, TTGIR, LLIR, PTX, cubin; not stopped
after the frontend as the battery is), with each variable of ``[warnings].env`` unset or set.

The kernels and variables are named in ``[warnings]`` of the battery file. Every (kernel,
setting) compiles in a forked child of its own with a fresh cache folder, because some warnings
fire once per process and a cached kernel is not compiled again. A cell ``kernel|VAR=value``
(``kernel|none`` with nothing set) is ``silent``, the sorted categories of what it raised
(``DeprecationWarning``, ``UserWarning+DeprecationWarning``), ``rejected`` (the compile
raised: ``data.details``), ``not-read`` (the release's Python source never names the
variable: no compile is spent on it) or the status of a failure outside Triton. The texts, once
each, are in ``data.warnings``. Only Python warnings are seen: what ptxas or LLVM print on
stderr is not.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

import triton
import triton.language as tl

from matrix.probes.support.base import CannotObserve, Context, Observation, attempt, root_cause
from matrix.probes.support.dot_precision import load_square, store_square

BLOCK = 16
# Seconds one compile may take before its cell is a timeout.
COMPILE_TIMEOUT = 120.0


@triton.jit
def plain_kernel(a, c, BLOCK: tl.constexpr):
    store_square(c, load_square(a, BLOCK) + 1.0, BLOCK)


@triton.jit
def allow_tf32_kw(a, b, c, BLOCK: tl.constexpr):
    store_square(c, tl.dot(load_square(a, BLOCK), load_square(b, BLOCK), allow_tf32=True), BLOCK)


@triton.jit
def block_ptr(a, c, BLOCK: tl.constexpr):
    p = tl.make_block_ptr(a, shape=(BLOCK, BLOCK), strides=(BLOCK, 1), offsets=(0, 0),
                          block_shape=(BLOCK, BLOCK), order=(1, 0))  # fmt: skip
    x = tl.load(tl.advance(p, (0, 0)), boundary_check=(0, 1), padding_option="zero")
    store_square(c, x, BLOCK)


@triton.jit
def tl_math_alias(a, c, BLOCK: tl.constexpr):
    store_square(c, tl.math.exp(load_square(a, BLOCK)), BLOCK)


KERNELS = {
    "plain_kernel": (plain_kernel, ("a", "c")),
    "allow_tf32_kw": (allow_tf32_kw, ("a", "b", "c")),
    "block_ptr": (block_ptr, ("a", "c")),
    "tl_math_alias": (tl_math_alias, ("a", "c")),
}


@cache
def source_names(var: str) -> bool:
    """Whether any Python file of the installed triton package names ``var``."""
    root = Path(triton.__file__).resolve().parent
    for path in root.rglob("*.py"):
        try:
            if var in path.read_text(encoding="utf-8"):
                return True
        except (OSError, UnicodeDecodeError):
            continue
    return False


def _compile(ctx: Context, name: str, var: str, value: str) -> tuple[str, list[str], str]:
    """In the child: (status, warning texts, detail) of one compile."""
    from matrix.backends.aot import compile_for_target

    if var != "none":
        os.environ[var] = value
    kernel, names = KERNELS[name]
    signature = {n: "*fp32" for n in names}  # every argument a float32 pointer
    target = ctx.compile_target
    with tempfile.TemporaryDirectory(prefix="fp-warn-") as cache_dir:
        outcome = attempt(lambda: compile_for_target(
            kernel, signature, {"BLOCK": BLOCK}, target, cache_dir=cache_dir))  # fmt: skip
    texts = sorted({f"{w.category.__name__}: {w.message}"[:300] for w in outcome.warnings})
    if outcome.exception is not None:
        cause = root_cause(outcome.exception)
        lines = [ln.strip() for ln in str(cause).splitlines() if ln.strip()]
        return "rejected", texts, f"{type(cause).__name__}: {lines[-1] if lines else ''}"[:300]
    categories = sorted({w.category.__name__ for w in outcome.warnings})
    return ("+".join(categories) if categories else "silent"), texts, ""


def _child(ctx: Context, name: str, var: str, value: str, out: str) -> None:
    try:
        payload: Any = ("ok", _compile(ctx, name, var, value))
    except CannotObserve as e:  # a tool outside Triton: the cell says so
        payload = ("cannot", (e.status, e.reason[:300]))
    except BaseException as e:  # our own failure: the cell is error, with the reason
        payload = ("error", f"{type(e).__name__}: {e}"[:300])
    with open(out, "wb") as f:
        pickle.dump(payload, f)
    os._exit(0)


def compile_in_child(ctx: Context, name: str, var: str, value: str) -> tuple[str, list[str], str]:
    fd, out = tempfile.mkstemp(prefix="fp-warn-", suffix=".pickle")
    os.close(fd)
    try:
        child = multiprocessing.get_context("fork").Process(
            target=_child, args=(ctx, name, var, value, out)
        )
        child.start()
        child.join(COMPILE_TIMEOUT)
        if child.is_alive():
            child.kill()
            child.join()
            return "timeout", [], f"no answer in {COMPILE_TIMEOUT:.0f} s"
        with open(out, "rb") as f:
            data = f.read()
    finally:
        os.unlink(out)
    if not data:
        return "crashed", [], f"exit code {child.exitcode}"
    kind, value_ = pickle.loads(data)
    if kind == "ok":
        return value_
    if kind == "cannot":
        return value_[0], [], value_[1]
    return "error", [], value_


def warning_rows(
    ctx: Context,
    kernels: list[str],
    env: list[list[str]],
    env_kernels: list[str],
    fresh: bool = True,
) -> list[Observation]:
    """Every kernel of ``kernels`` compiled with no variable set (the ``none`` setting), and
    those of ``env_kernels`` also with each other setting: a compile is the cost here.

    ``fresh``: the compiles fork from a newly spawned interpreter, not from this process: a
    warning Triton gives once per process (3.9.0's ``warn_once``) that this process already
    gave would be missing from every forked child. One spawn (~2 s) per call, then a fork per
    compile. ``fresh=False`` forks from here (tests that replace the compile)."""
    if fresh:
        return _in_fresh_interpreter(ctx, kernels, env, env_kernels)
    unknown = [k for k in [*kernels, *env_kernels] if k not in KERNELS]
    if unknown:
        raise ValueError(f"[warnings].kernels names {unknown}; known: {sorted(KERNELS)}")
    cells: dict[str, str] = {}
    details: dict[str, str] = {}
    texts: dict[str, str] = {}
    for var, value in env:
        for name in kernels if var == "none" else env_kernels:
            key = f"{name}|none" if var == "none" else f"{name}|{var}={value}"
            if var != "none" and not source_names(var):
                cells[key] = "not-read"
                continue
            cells[key], warned, detail = compile_in_child(ctx, name, var, value)
            if detail:
                details[key] = detail
            if warned:
                texts[key] = "; ".join(warned)[:600]
    data: dict[str, Any] = {"cells": cells}
    for part, values in (("details", details), ("warnings", texts)):
        if values:
            data[part] = values
    return [Observation("observed", "", data, name="fp.warnings")]


# Where a release keeps ``triton_key`` (a hash of its whole package and libtriton, cached per
# process): 3.0-3.8 in the compiler, 3.9 in the runtime cache.
_TRITON_KEY_HOMES = ("triton.runtime.cache", "triton.compiler.compiler")


def warm_compiler() -> list[str]:
    """Pay the first compile's once-per-process costs that raise nothing: import the code
    generator (with its gluon modules) and hash the package into ``triton_key``. The fresh
    interpreter does it before forking one compile per child, so each child starts warm
    (measured on 3.9.0: the first compile of a 16x16 kernel 1.19 s, the second 0.13 s;
    ``triton_key`` 0.62 s and the imports 0.33 s of the difference). Returns the texts of any
    warning raised while warming: a caller that observes compile warnings must not fork from a
    process that gave one (it could be one Triton gives once per process)."""
    import importlib
    import warnings

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        importlib.import_module("triton.compiler.code_generator")
        for home in _TRITON_KEY_HOMES:
            try:
                key = getattr(importlib.import_module(home), "triton_key", None)
            except ImportError:
                continue
            if callable(key):
                key()
                break
    return [f"{w.category.__name__}: {w.message}" for w in seen]


def _fresh_main(ctx: Context, args: tuple[list[str], list[list[str]], list[str]], out: str,
                warm: bool) -> None:  # fmt: skip
    try:
        # Warm before the forks, so that each compile's child does not pay the first compile's
        # imports and package hash again (~1 s of each of the 8 compiles). A warm-up that
        # warned would hide that warning from every child: the parent then asks a cold one.
        warned = warm_compiler() if warm else []
        payload: Any = (
            ("tainted", warned) if warned else ("ok", warning_rows(ctx, *args, fresh=False)[0].data)
        )
    except BaseException as e:  # the parent reports it as this group's error
        payload = ("error", f"{type(e).__name__}: {e}"[:500])
    with open(out, "wb") as f:
        pickle.dump(payload, f)


def _in_fresh_interpreter(ctx: Context, *args: Any, warm: bool = True) -> list[Observation]:
    fd, out = tempfile.mkstemp(prefix="fp-warn-", suffix=".pickle")
    os.close(fd)
    try:
        child = multiprocessing.get_context("spawn").Process(
            target=_fresh_main, args=(ctx, args, out, warm)
        )
        child.start()
        child.join()
        with open(out, "rb") as f:
            data = f.read()
    finally:
        os.unlink(out)
    if not data:
        why = f"the warnings' interpreter died (exit code {child.exitcode})"
        return [Observation("error", why, {}, name="fp.warnings")]
    kind, value = pickle.loads(data)
    if kind == "tainted":
        return _in_fresh_interpreter(ctx, *args, warm=False)
    if kind != "ok":
        return [Observation("error", value, {}, name="fp.warnings")]
    return [Observation("observed", "", value, name="fp.warnings")]
