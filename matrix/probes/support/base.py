"""What a probe module provides, and the helpers probes share.

A probe module (``matrix/probes/<name>.py``) has a docstring that says what it establishes and
how, and defines one function::

    def observe(ctx: Context) -> Observation

Its name (the row in the results), the backends where it means something, its extra
environment, its statuses and which of them are good are data in ``matrix/catalog.py``, not
attributes of the module; a test checks that every catalog entry has a module and every module
an entry.

``observe`` runs in a child process (see ``matrix.measure.child``) whose backend is fixed
before Triton is imported: ``TRITON_INTERPRET=1`` for ``interpret``, unset for ``aot`` and
``gpu``. A probe returns its own status; an exception it does not expect escapes and becomes
``error`` with the traceback, a crash becomes ``crashed``, a hang ``timeout``; never a pass.
A release that refuses the probed code is the probe's own refusal status (``rejected``,
``removed``), never ``error``.

Not every exception is the release refusing. A compile tool missing (``ld.lld``,
``AotUnavailable``), a tool outside Triton failing (``gcc`` building the launcher stub:
``CalledProcessError``), or the harness unable to run on the release (``No module named
'triton.backends'``) say nothing about Triton. ``attempt``, through which every probe calls
Triton, sorts them out in one place (``outside_triton``, by the rules in ``OUTSIDE_TRITON``)
and raises ``CannotObserve``, which no probe's own handling catches: the child records it as
``skipped`` or ``error`` with the reason.
"""

from __future__ import annotations

import subprocess
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from matrix.backends.targets import TargetUnsupported
from matrix.core import AotUnavailable


class CannotObserve(BaseException):
    """The probe could not look, for a reason outside Triton: ``status`` is ``skipped`` or
    ``error``, ``reason`` says why. A BaseException, so that a probe's ``except Exception``
    cannot turn it into an observation; ``matrix.measure.child`` records it."""

    def __init__(self, status: str, reason: str, cause: str = "", what: str = "") -> None:
        super().__init__(reason)
        self.status, self.reason, self.cause = status, reason, cause
        self.what = what or reason  # the evidence alone (which tool, which file), for one cell


def _is_triton_import(e: BaseException) -> bool:
    name = getattr(e, "name", None) or ""
    return isinstance(e, ImportError) and (name == "triton" or name.startswith("triton."))


def _tool_failed(e: BaseException) -> bool:
    return isinstance(e, subprocess.CalledProcessError)


# (what the exception is, status, what it means): the first rule that matches any exception in
# the chain (the exception, its causes and contexts) decides. Extend here, not in probes.
OUTSIDE_TRITON: tuple[tuple[Callable[[BaseException], bool], str, str], ...] = (
    # Before AotUnavailable, which it is: the release predates the target (its own words follow).
    (lambda e: isinstance(e, TargetUnsupported), "skipped", "no compile for this target"),
    (lambda e: isinstance(e, AotUnavailable), "skipped", "a compile tool is missing"),
    (
        lambda e: isinstance(e, FileNotFoundError | PermissionError),
        "skipped",
        "a tool or file outside Triton is missing or not executable",
    ),
    (
        lambda e: "ld.lld" in str(e) and ("not found" in str(e) or "No such file" in str(e)),
        "skipped",
        "the linker ld.lld (outside Triton) is missing",
    ),
    (_tool_failed, "error", "a tool outside Triton failed"),
    (_is_triton_import, "error", "the harness cannot run on this release (a module it needs)"),
)


def _chain(e: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = e
    while current is not None and all(current is not s for s in seen):
        seen.append(current)
        current = current.__cause__ or (
            None if current.__suppress_context__ else current.__context__
        )
    return seen


def _describe(e: BaseException) -> str:
    if isinstance(e, subprocess.CalledProcessError):
        cmd = e.cmd if isinstance(e.cmd, str) else " ".join(map(str, e.cmd))
        out = e.stderr or e.output or ""
        if isinstance(out, bytes):
            out = out.decode("utf-8", "replace")
        tail = f": {out.strip()[-400:]}" if str(out).strip() else ""
        return f"{cmd[:200]} exited with {e.returncode}{tail}"
    if isinstance(e, OSError) and e.filename is not None:  # the path first: texts get cut
        return f"{type(e).__name__}: {e.filename}: {e.strerror}"[:500]
    return f"{type(e).__name__}: {str(e).strip()}"[:500]


def outside_triton(e: BaseException) -> CannotObserve | None:
    """``CannotObserve`` when ``e`` (or what caused it) is a failure outside Triton, else None.

    >>> import subprocess
    >>> err = RuntimeError("launcher"); err.__cause__ = subprocess.CalledProcessError(1, ["gcc"])
    >>> outside_triton(err).status, outside_triton(ValueError("x")) is None
    ('error', True)
    """
    for link in _chain(e):
        for matches, status, meaning in OUTSIDE_TRITON:
            if matches(link):
                what = _describe(link)
                return CannotObserve(status, f"{meaning}: {what}", cause_text(e), what)
    return None


@dataclass(frozen=True)
class Context:
    """Where an observation is made: ``backend`` and, for aot and gpu, the ``target``."""

    backend: str
    target: str | None
    # aot: the kept compile cache this probe may use (``matrix.backends.compile_cache``); None:
    # every compile in a fresh folder. The runner gives it to probes that ask in the catalog.
    compile_cache: str | None = None

    @property
    def device(self) -> str:
        """The torch device tensors go to: CPU for the interpreter, CUDA on a GPU."""
        if self.backend == "aot":
            raise ValueError("the aot backend compiles only; it has no device to run on")
        return "cpu" if self.backend == "interpret" else "cuda"

    @property
    def tensor_device(self) -> str:
        """Where a probe allocates its tensors: the run device, or the CPU for aot, whose
        tensors only describe the launch arguments (``exercise`` reads their dtypes)."""
        return "cpu" if self.backend == "aot" else self.device

    @property
    def compile_target(self) -> str:
        """The target aot compiles for; a context without one is a bug in the runner."""
        if self.target is None:
            raise ValueError(f"Context(backend={self.backend!r}): no target to compile for")
        return self.target


@dataclass
class Observation:
    """What a probe saw. A probe that answers many questions at once (``fp``) returns its own
    summary with ``rows``: each row is one more result with its own ``name`` (``fp.<group>``),
    written to the raw file as a result of its own, on the same backend and target."""

    status: str
    detail: str = ""
    data: dict[str, Any] = field(default_factory=dict)
    name: str | None = None
    rows: list[Observation] = field(default_factory=list)


@dataclass
class Outcome:
    """What calling something did: its value, or the exception; and the warnings it raised."""

    value: Any = None
    exception: BaseException | None = None
    warnings: list[warnings.WarningMessage] = field(default_factory=list)

    @property
    def raised(self) -> bool:
        return self.exception is not None

    def exception_text(self, limit: int = 400) -> str:
        e = self.exception
        if e is None:
            return ""
        text = str(e).strip()
        return f"{type(e).__name__}: {text}"[:limit]

    def warning_texts(self, limit: int = 300) -> list[str]:
        return [f"{w.category.__name__}: {str(w.message).strip()}"[:limit] for w in self.warnings]


def attempt(fn: Callable[[], Any]) -> Outcome:
    """Call ``fn`` recording every warning (all categories, each time) and any exception.

    Triton's warnings are not all DeprecationWarning, so nothing is filtered by category.
    An exception from outside Triton (``outside_triton``) is raised as ``CannotObserve``.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = fn()
        except Exception as e:  # recorded and classified by the probe, never dropped
            cannot = outside_triton(e)
            if cannot is not None:
                raise cannot from e
            return Outcome(exception=e, warnings=list(caught))
    return Outcome(value=value, warnings=list(caught))


def root_cause(e: BaseException) -> BaseException:
    """The innermost exception: Triton wraps frontend errors in CompilationError chains."""
    while True:
        inner = e.__cause__ or (None if e.__suppress_context__ else e.__context__)
        if inner is None:
            return e
        e = inner


def cause_text(e: BaseException, limit: int = 500) -> str:
    """``Type: message`` of the innermost cause; an empty message gets the raising line instead,
    so that a bare ``assert`` inside Triton still says where it failed."""
    cause = root_cause(e)
    text = f"{type(cause).__name__}: {str(cause).strip()}"
    if not str(cause).strip():
        frames = traceback.extract_tb(cause.__traceback__)
        if frames:
            f = frames[-1]
            where = "/".join(f.filename.split("/")[-3:])
            text += f"(raised at {where}:{f.lineno}: {(f.line or '').strip()})"
    return text[:limit]


def refusal(outcome: Outcome, status: str) -> Observation | None:
    """For an outcome that raised: ``status`` with the innermost cause as detail and data
    (``attempt`` has already raised what is not Triton's doing). None when nothing was raised."""
    if not outcome.raised:
        return None
    e = outcome.exception
    assert e is not None
    cannot = outside_triton(e)  # an Outcome built without ``attempt`` is sorted here too
    if cannot is not None:
        return Observation(cannot.status, cannot.reason)
    text = cause_text(e)
    return Observation(status, text, {"exception": text, "warnings": outcome.warning_texts()})


def first_line(text: str, limit: int = 300) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:limit]
    return ""


def format_exception(e: BaseException, limit: int = 2000) -> str:
    return "".join(traceback.format_exception(type(e), e, e.__traceback__))[-limit:]


TORCH_TYPE_STRINGS = {
    "torch.float32": "fp32",
    "torch.float16": "fp16",
    "torch.bfloat16": "bf16",
    "torch.int32": "i32",
    "torch.int64": "i64",
    "torch.int8": "i8",
    "torch.int16": "i16",
}


@dataclass(frozen=True)
class Pointer:
    """An aot launch argument described without a tensor: a pointer to ``element`` ("fp32").
    A child whose probes describe every argument so never imports torch (2.3 s of the 3.3 s
    ``dot_f32_default_precision_env_ieee`` took in a child of its own, 3.9.0)."""

    element: str


def type_string(value: Any) -> str:
    """Triton's signature type for a launch argument: a tensor or a ``Pointer`` is a pointer, an
    int is i32 (i64 beyond i32's range, as the JIT specialises it), a float is fp32."""
    if isinstance(value, Pointer):
        return "*" + value.element
    if isinstance(value, bool):
        return "i1"
    if isinstance(value, int):
        return "i32" if -(2**31) <= value < 2**31 else "i64"
    if isinstance(value, float):
        return "fp32"
    dtype = str(getattr(value, "dtype", ""))
    if dtype in TORCH_TYPE_STRINGS:
        return "*" + TORCH_TYPE_STRINGS[dtype]
    raise TypeError(f"no Triton signature type for {type(value).__name__} {dtype}")


def exercise(
    ctx: Context, kernel: Any, args: dict[str, Any], constexprs: dict[str, Any], grid=(1,)
) -> Outcome:
    """Launch ``kernel`` (interpret, gpu) or compile it for ``ctx.target`` (aot).

    For aot, the launch arguments are only described: tensors give pointer types, ints ``i32``.
    The Outcome's value is the compile ``Artifacts`` for aot, what the launch returned (a
    GPU launch's ``CompiledKernel``) otherwise.
    """
    if ctx.backend == "aot":
        from matrix.backends.aot import compile_for_target

        signature = {name: type_string(v) for name, v in args.items()}
        target = ctx.compile_target
        kept = None
        if ctx.compile_cache is not None:
            from matrix.backends import compile_cache

            kept = str(compile_cache.folder_for(ctx.compile_cache))
        return attempt(
            lambda: compile_for_target(kernel, signature, constexprs, target, cache_dir=kept)
        )

    def launch() -> Any:
        compiled = kernel[grid](**args, **constexprs)
        if ctx.device == "cuda":
            import torch

            torch.cuda.synchronize()
        return compiled  # a GPU launch's CompiledKernel (its .asm); None under the interpreter

    return attempt(launch)
