"""Compile a ``@triton.jit`` function for a named GPU target with no GPU present (``aot``).

``triton.compile(ASTSource(...), target=GPUTarget(...))`` works without a device, but its
spelling changed across Triton 3.x: ``ASTSource`` took ``constants=`` keyed by argument index
(3.0, 3.1), then by argument name (3.2), then ``constexprs=`` with every argument in the signature
and constexprs typed ``"constexpr"`` (3.3 on); divisibility hints went from
``AttrsDescriptor(divisible_by_16=...)`` to ``AttrsDescriptor.from_hints(...)`` to a plain dict
keyed by argument path. This module is the one place that knows, and it finds out by inspecting
what the installed release accepts, never by reading its version string.

>>> art = compile_for_target(kernel, {"a_ptr": "*fp32", "n": "i32"}, {"BLOCK": 16}, "cuda:90")
... # doctest: +SKIP
>>> sorted(art.ir)                                                           # doctest: +SKIP
['llir', 'ptx', 'ttgir', 'ttir']

Triton is imported lazily so that the report and gate can import ``matrix`` without it.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import re
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from matrix.backends import compile_cache, resources, targets
from matrix.backends.lld import LLD_ENV, LldNotFound, find_lld
from matrix.core import AotUnavailable

if TYPE_CHECKING:  # pragma: no cover
    from triton.backends.compiler import GPUTarget


class SpellingNotRecognised(TypeError):
    """The installed Triton's ``ASTSource`` takes none of the spellings this module knows."""


class TupleArgumentsNotSpelled(ValueError):
    """A tuple argument, and the installed release's ``ASTSource`` spelling (before 3.3's, where
    every argument is in the signature) has no tuple type to state it with."""


@dataclass(frozen=True)
class Artifacts:
    """What one compile produced: stage name ("ttir", "ttgir", "llir", "ptx", "amdgcn") -> text.

    Binary stages (cubin, hsaco) are left out; their presence is recorded as ``binaries``.
    """

    target: str
    ir: dict[str, str]
    binaries: tuple[str, ...] = ()
    # The compile's metadata where it is plain JSON (``shared``, ``num_warps``, ...).
    metadata: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    # True when Triton answered from a kept cache folder (``cache_dir``) without compiling.
    cached: bool = field(default=False, compare=False)
    # What the kernel uses (``matrix.backends.resources.of_compile``): registers, local_bytes,
    # shared and where the numbers came from; read from the binary before it is dropped.
    resources: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    # Wall seconds of ``triton.compile`` (a cached answer's are the cache lookup's).
    seconds: float | None = field(default=None, compare=False)


@dataclass(frozen=True)
class TargetKind:
    """How a target family's string maps onto ``GPUTarget``."""

    arch_pattern: str
    arch_type: Callable[[str], int | str]
    warp_size: int
    example: str


TARGET_KINDS: dict[str, TargetKind] = {
    "cuda": TargetKind(r"[0-9]{2,3}", int, 32, "cuda:90"),
    "hip": TargetKind(r"gfx[0-9a-f]{3,4}", str, 64, "hip:gfx942"),
}


def split_target(target: str) -> tuple[str, int | str, int]:
    """``"cuda:90"`` -> ``("cuda", 90, 32)``; ``"hip:gfx942"`` -> ``("hip", "gfx942", 64)``.

    Raises ValueError naming the value and the accepted forms.
    """
    if not isinstance(target, str):
        raise ValueError(f"target must be a string like 'cuda:90', got {target!r}")
    backend, sep, arch = target.partition(":")
    kind = TARGET_KINDS.get(backend)
    if not sep or kind is None or not re.fullmatch(kind.arch_pattern, arch):
        forms = ", ".join(f"{k!r}" for k in (k.example for k in TARGET_KINDS.values()))
        raise ValueError(
            f"target {target!r} is not '<backend>:<arch>' with a known backend and arch; "
            f"expected one of the forms {forms}"
        )
    return backend, kind.arch_type(arch), kind.warp_size


def make_gpu_target(gpu_target_cls: Any, backend: str, arch: int | str, warp_size: int) -> Any:
    """Build ``GPUTarget``, passing ``warp_size`` only where the class takes it."""
    params = inspect.signature(gpu_target_cls).parameters
    if "warp_size" in params:
        return gpu_target_cls(backend, arch, warp_size)
    return gpu_target_cls(backend, arch)


def parse_target(target: str) -> GPUTarget:
    """The installed Triton's ``GPUTarget`` for a target string; ValueError on a bad string."""
    backend, arch, warp_size = split_target(target)
    from triton.backends.compiler import GPUTarget

    return make_gpu_target(GPUTarget, backend, arch, warp_size)


@dataclass(frozen=True)
class SourceSpelling:
    """How the installed ``ASTSource`` wants its arguments.

    constexpr_keyword: "constexprs" or "constants".
    keys: "name" or "index" (what signature and constexpr dicts are keyed by).
    constexpr_in_signature: every argument is in the signature, constexprs typed "constexpr".
    attrs: "path-dict" ({(i,): [["tt.divisibility", 16]]}), "hints" (AttrsDescriptor.from_hints)
        or "sets" (AttrsDescriptor(divisible_by_16=..., equal_to_1=...)).
    """

    constexpr_keyword: str
    keys: str
    constexpr_in_signature: bool
    attrs: str


def _rejects_index_keys(ast_source_cls: Any, fn: Any) -> bool:
    # 3.2 checks key types in __init__ and raises TypeError; 3.0/3.1 accept int keys silently.
    try:
        ast_source_cls(fn, signature={0: "i32"})
    except TypeError:
        return True
    return False


def detect_spelling(
    ast_source_cls: Any, fn: Any, attrs_descriptor_cls: Any | None
) -> SourceSpelling:
    """Find the spelling by inspecting ``ASTSource.__init__`` and the ``AttrsDescriptor`` class.

    ``attrs_descriptor_cls`` is None where the release has none (3.3 on: attrs is a plain dict).
    """
    params = inspect.signature(ast_source_cls.__init__).parameters
    if "constexprs" in params:
        keyword, keys, in_sig = "constexprs", "name", True
    elif "constants" in params:
        keyword, in_sig = "constants", False
        keys = "name" if _rejects_index_keys(ast_source_cls, fn) else "index"
    else:
        raise SpellingNotRecognised(
            f"ASTSource.__init__ takes {list(params)}; expected a 'constexprs' or 'constants' "
            "parameter"
        )
    if attrs_descriptor_cls is None:
        attrs = "path-dict"
    elif hasattr(attrs_descriptor_cls, "from_hints"):
        attrs = "hints"
    elif "divisible_by_16" in inspect.signature(attrs_descriptor_cls.__init__).parameters:
        attrs = "sets"
    else:
        raise SpellingNotRecognised(
            f"AttrsDescriptor {attrs_descriptor_cls!r} has neither from_hints nor divisible_by_16"
        )
    return SourceSpelling(keyword, keys, in_sig, attrs)


def check_arguments(
    arg_names: Sequence[str], signature: Mapping[str, Any], constexprs: Mapping[Any, object]
) -> None:
    """Every kernel argument must be in exactly one of ``signature`` and ``constexprs``. A
    signature type is a Triton type string or, for a tuple argument, a (named) tuple of them
    (nested, ``"constexpr"`` for a constant element); a constant element's value is keyed by
    its path of indices, ``(argument, element, ...)``, below a tuple-typed argument."""
    tuples = [
        arg_names.index(k) for k, v in signature.items() if isinstance(v, tuple) and k in arg_names
    ]
    paths = [k for k in constexprs if isinstance(k, tuple)]
    bad_paths = [k for k in paths if len(k) < 2 or k[0] not in tuples]
    if bad_paths:
        raise ValueError(f"constexprs paths {bad_paths} name no element of a tuple-typed argument")
    constexprs = {k: v for k, v in constexprs.items() if not isinstance(k, tuple)}
    for label, given in (("signature", signature), ("constexprs", constexprs)):
        unknown = [k for k in given if k not in arg_names]
        if unknown:
            raise ValueError(
                f"{label} names {unknown}, which are not arguments of {list(arg_names)}"
            )
    both = sorted(set(signature) & set(constexprs))
    if both:
        raise ValueError(f"arguments {both} are in both signature and constexprs; give each once")
    missing = [a for a in arg_names if a not in signature and a not in constexprs]
    if missing:
        raise ValueError(
            f"arguments {missing} are in neither signature nor constexprs; every argument needs "
            "a type string (signature) or a value (constexprs)"
        )
    bad_types = {k: v for k, v in signature.items() if not _is_type(v)}
    if bad_types:
        raise ValueError(
            f"signature types must be Triton type strings like '*fp32', got {bad_types}"
        )


def _is_type(value: Any) -> bool:
    if isinstance(value, tuple):
        return all(_is_type(v) for v in value)
    return isinstance(value, str) and bool(value)


def build_source_kwargs(
    arg_names: Sequence[str],
    signature: Mapping[str, Any],
    constexprs: Mapping[Any, object],
    spelling: SourceSpelling,
    attrs_descriptor_cls: Any | None,
) -> dict[str, Any]:
    """The keyword arguments for ``ASTSource(fn, **kwargs)`` in the installed spelling.

    Pointer arguments get a 16-byte divisibility hint, as a JIT launch on torch tensors would.
    """
    check_arguments(arg_names, signature, constexprs)
    index = {name: i for i, name in enumerate(arg_names)}
    tuples = sorted(n for n, v in signature.items() if isinstance(v, tuple))
    if tuples and not spelling.constexpr_in_signature:
        raise TupleArgumentsNotSpelled(
            f"tuple arguments {tuples}: this release's ASTSource (the spelling before 3.3's) "
            "states no tuple types, so the harness cannot compile them ahead of time here"
        )

    def key(name: str) -> str | int:
        return name if spelling.keys == "name" else index[name]

    sig: dict[str | int, Any]
    if spelling.constexpr_in_signature:
        sig = {n: signature.get(n, "constexpr") for n in arg_names}
    else:
        sig = {key(n): signature[n] for n in arg_names if n in signature}
    consts: dict[Any, object] = {key(n): constexprs[n] for n in arg_names if n in constexprs}
    consts.update({k: v for k, v in constexprs.items() if isinstance(k, tuple)})
    # Top-level pointers only: a pointer inside a tuple is compiled without the hint.
    pointers = [
        index[n]
        for n in arg_names
        if isinstance(signature.get(n), str) and str(signature[n]).startswith("*")
    ]

    if spelling.attrs == "path-dict":
        attrs: Any = {(i,): [["tt.divisibility", 16]] for i in pointers}
    elif attrs_descriptor_cls is None:
        raise ValueError(
            f"spelling.attrs={spelling.attrs!r} needs the release's AttrsDescriptor class, "
            "and none was found"
        )
    elif spelling.attrs == "hints":
        attrs = attrs_descriptor_cls.from_hints({i: 16 for i in pointers})
    else:
        attrs = attrs_descriptor_cls(divisible_by_16=set(pointers), equal_to_1=set())
    return {"signature": sig, spelling.constexpr_keyword: consts, "attrs": attrs}


def _find_attrs_descriptor() -> Any | None:
    import triton.backends.compiler as backends_compiler
    import triton.compiler as compiler

    for module in (compiler, backends_compiler):
        cls = getattr(module, "AttrsDescriptor", None)
        if cls is not None:
            return cls
    return None


def _hip_lld_env() -> dict[str, str]:
    """``{TRITON_HIP_LLD_PATH: path}`` where the HIP backend shells out to ld.lld, else ``{}``."""
    from triton.backends.amd import compiler as amd_compiler

    if not hasattr(amd_compiler.HIPBackend, "path_to_rocm_lld"):
        return {}  # links in-process (amd.link_hsaco)
    try:
        lld = find_lld(Path(amd_compiler.__file__).parent)
    except LldNotFound as exc:
        raise AotUnavailable(str(exc)) from exc
    return {LLD_ENV: str(lld)}


@contextlib.contextmanager
def _environ(updates: Mapping[str, str]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in updates}
    os.environ.update(updates)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def compile_for_target(
    fn: Any,
    signature: Mapping[str, Any],
    constexprs: Mapping[Any, object],
    target: str,
    *,
    options: Mapping[str, Any] | None = None,
    cache_dir: str | None = None,
    check_target: bool = True,
) -> Artifacts:
    """Compile ``fn`` for ``target`` ("cuda:90", "cuda:100", "hip:gfx950", ...); its IR texts.

    Each call compiles into a fresh temporary ``TRITON_CACHE_DIR`` unless ``cache_dir`` is
    given, so an environment variable that changes codegen (``TRITON_F32_DEFAULT``) cannot be
    answered from a stale cache entry. With ``cache_dir`` (``matrix.backends.compile_cache``),
    a compile Triton answers from it without adding an entry is ``cached``. Raises
    AotUnavailable when a tool is missing, ``targets.TargetUnsupported`` (an AotUnavailable:
    skipped, never a failure) when the release cannot compile for ``target`` at all
    (``matrix.backends.targets``; ``check_target=False`` is the trial itself), ValueError on
    bad arguments; compiler errors propagate unchanged.
    """
    gpu_target = parse_target(target)
    if check_target:
        targets.check(target)
    import triton
    from triton.compiler import ASTSource
    from triton.runtime.jit import JITFunction

    if not isinstance(fn, JITFunction):
        raise TypeError(
            f"fn must be a @triton.jit function (JITFunction), got {type(fn).__name__}; "
            "TRITON_INTERPRET=1 at decoration time makes an InterpretedFunction, which cannot be "
            "compiled: run aot compiles in a process without it"
        )

    attrs_cls = _find_attrs_descriptor()
    spelling = detect_spelling(ASTSource, fn, attrs_cls)
    kwargs = build_source_kwargs(fn.arg_names, signature, constexprs, spelling, attrs_cls)
    env = _hip_lld_env() if gpu_target.backend == "hip" else {}

    kept = cache_dir is not None
    with contextlib.ExitStack() as stack:
        if cache_dir is None:
            cache_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="triton-aot-"))
        before = compile_cache.entries(cache_dir)
        stack.enter_context(_environ({**env, "TRITON_CACHE_DIR": cache_dir}))
        src = ASTSource(fn, **kwargs)
        started = time.monotonic()
        compiled = triton.compile(src, target=gpu_target, options=dict(options or {}))
        seconds = round(time.monotonic() - started, 3)
        asm = dict(compiled.asm.items())  # read before the temporary cache disappears
        metadata = _plain_metadata(compiled.metadata)
        used = resources.of_compile(asm, metadata)
        cached = kept and bool(before) and compile_cache.entries(cache_dir) == before
    texts = {k: v for k, v in asm.items() if isinstance(v, str)}
    binaries = tuple(sorted(k for k, v in asm.items() if not isinstance(v, str)))
    return Artifacts(target=target, ir=texts, binaries=binaries, metadata=metadata,
                     cached=cached, resources=used, seconds=seconds)  # fmt: skip


def _plain_metadata(metadata: Any) -> dict[str, Any]:
    """The JSON-plain fields of a compile's metadata (a namedtuple in 3.x, a dict in some)."""
    items = metadata._asdict() if hasattr(metadata, "_asdict") else dict(vars(metadata))
    return {k: v for k, v in items.items() if v is None or isinstance(v, bool | int | float | str)}
