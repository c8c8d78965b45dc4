"""Feature detection for the installed Triton: each feature is a small cached probe.

Presence of a name proves little across Triton releases: ``tl.make_block_ptr`` still exists in
releases where calling it raises, ``tl.make_tensor_descriptor`` existed as a private experimental
name before it was public, and keyword arguments appear and disappear. So each probe here either
reads a signature (for keyword arguments) or runs the feature on a tiny input where a backend to
run it on exists (the interpreter, or a CUDA device), and records how it knows.

Only ``triton`` is imported at module level; ``torch`` is imported inside the trial runs.
"""

from __future__ import annotations

import functools
import inspect
import os
from dataclasses import asdict, dataclass
from typing import Any

import triton
import triton.language as tl


@dataclass(frozen=True)
class Features:
    """What the installed Triton can do, as found by probing (see each ``detect_*`` docstring)."""

    tensor_descriptor: str  # "supported" | "experimental" | "absent" (the in-kernel constructor)
    descriptor_constructor: str | None  # dotted name of the constructor the kernels would call
    descriptor_trial: str  # "ok", "failed: <why>" or "not tried: <why>"
    dot_input_precision: bool  # tl.dot accepts input_precision=
    dot_out_dtype: bool  # tl.dot accepts out_dtype=
    block_ptr_present: bool  # tl.make_block_ptr exists: presence only, see block_ptr_trial
    block_ptr_trial: str  # "ok", "ok, warns: ...", "failed: <why>", "not tried: <why>"
    set_allocator: bool  # triton.set_allocator exists (needed for in-kernel descriptors on GPU)
    interpreter: bool  # TRITON_INTERPRET was set when the kernels were decorated
    bf16_dot_trial: str  # "ok", "wrong: <first bad element>", "failed: ..." or "not tried: ..."

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@functools.cache
def interpreter_enabled() -> bool:
    """True when ``@triton.jit`` gives interpreted functions, found by decorating a function.

    The environment variable alone is not enough to know: its accepted spellings differ across
    releases, so this asks ``triton.jit`` itself.
    """

    def _noop(x):
        pass

    return type(triton.jit(_noop)).__name__ == "InterpretedFunction"


CONSTRUCTOR_NAMES = {
    "supported": "tl.make_tensor_descriptor",
    "experimental": "tl._experimental_make_tensor_descriptor",
}


def find_descriptor_constructor(lang: Any) -> tuple[str, Any] | None:
    """The in-kernel tensor-descriptor constructor: ``(status, function)`` or None.

    ``tl.make_tensor_descriptor`` is the public name; some releases only have the private
    ``tl._experimental_make_tensor_descriptor``. Host-built descriptors
    (``triton.tools.tensor_descriptor``) are not counted: the kernels build theirs in-kernel.
    """
    fn = getattr(lang, "make_tensor_descriptor", None)
    if callable(fn):
        return ("supported", fn)
    fn = getattr(lang, "_experimental_make_tensor_descriptor", None)
    if callable(fn):
        return ("experimental", fn)
    return None


@functools.cache
def descriptor_constructor() -> tuple[str, Any] | None:
    """``find_descriptor_constructor`` for the installed ``triton.language``."""
    return find_descriptor_constructor(tl)


def accepts_keyword(fn: Any, name: str) -> bool:
    """Whether ``fn``'s signature has a parameter ``name`` (False if it has no signature)."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return name in params


@functools.cache
def dot_accepts(keyword: str) -> bool:
    """Whether ``tl.dot`` takes ``keyword``: read from its signature, since an unknown keyword
    fails only at compile time, deep inside a kernel."""
    return accepts_keyword(tl.dot, keyword)


def trial_device() -> str | None:
    """Where a trial can run in this process: "cpu" (interpreter), "cuda", or None."""
    if interpreter_enabled():
        return "cpu"
    try:
        import torch
    except ImportError:
        return None
    return "cuda" if torch.cuda.is_available() else None


def run_trial(trial: Any, *args: Any, device: str | None = None) -> str:
    """``trial(*args, device)``'s verdict, or why it could not run; never raises."""
    device = device or trial_device()
    if device is None:
        return "not tried: no CUDA device and TRITON_INTERPRET is not set (or no torch)"
    try:
        return trial(*args, device)
    except Exception as e:  # any failure means "do not rely on it", with the reason kept
        first = str(e).splitlines()[0] if str(e) else ""
        return f"failed: {type(e).__name__}: {first}"


@functools.cache
def bf16_dot_trial() -> str:
    """Run a bfloat16 ``tl.dot`` on small integers; ``"ok"`` only if it is exact.

    Seen in this project: some interpreter releases hold bfloat16 as raw uint16 bits and multiply
    the bits as integers, giving silently wrong dots (relative error ~1e9) with no exception.
    The kernels upcast bfloat16 tiles to float32 before the dot where this trial fails.
    """
    from compat import trials

    return run_trial(trials.low_precision_dot, "bfloat16")


@functools.cache
def block_ptr_trial() -> str:
    """Run a block-pointer load with boundary check and zero padding on a tiny tensor.

    ``tl.make_block_ptr`` is present in every release this project measures, yet 3.9.0 raises
    when a kernel uses it: presence is not support. The verdict says what was tried and what
    happened ("failed: NotImplementedError: ..."), so ``python -m compat`` never reports a name
    as a working feature.
    """
    if not callable(getattr(tl, "make_block_ptr", None)):
        return "not tried: tl.make_block_ptr is absent"
    from compat import trials

    return run_trial(trials.block_ptr_load)


@functools.cache
def descriptor_trial() -> str:
    """Run a descriptor load with zero padding on a tiny tensor; ``"ok"`` only if the numbers match.

    A constructor that exists may still raise (not implemented in the interpreter, missing
    allocator, unsupported target), or pad with something other than zeros. The kernels rely on
    both working, so the loader is only chosen after seeing it work here.
    """
    found = descriptor_constructor()
    if found is None:
        return "not tried: no in-kernel constructor"
    from compat import trials

    return run_trial(trials.descriptor_load)


def detect() -> Features:
    """Probe the installed Triton once.

    Signatures are read before any trial kernel runs: the interpreter patches ``triton.language``
    builtins while it runs a kernel, and some releases leave them patched.
    """
    found = descriptor_constructor()
    dot_input_precision = dot_accepts("input_precision")
    dot_out_dtype = dot_accepts("out_dtype")
    block_ptr_present = callable(getattr(tl, "make_block_ptr", None))
    return Features(
        tensor_descriptor=found[0] if found else "absent",
        descriptor_constructor=CONSTRUCTOR_NAMES[found[0]] if found else None,
        descriptor_trial=descriptor_trial(),
        dot_input_precision=dot_input_precision,
        dot_out_dtype=dot_out_dtype,
        block_ptr_present=block_ptr_present,
        block_ptr_trial=block_ptr_trial(),
        set_allocator=callable(getattr(triton, "set_allocator", None)),
        interpreter=interpreter_enabled(),
        bf16_dot_trial=bf16_dot_trial(),
    )


def environment_override() -> str | None:
    """``COMPAT_LOADER`` as given, or None when unset or empty."""
    value = os.environ.get("COMPAT_LOADER", "").strip()
    return value or None
