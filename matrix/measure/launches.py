"""What a captured launch is: its LAUNCH record and the KERNEL DEFINITION it ran.

The record shapes are in matrix.measure.capture's docstring (the plugin that writes them as
events); here is how one call of a @triton.jit function becomes them: Triton types of its
arguments, the kernel's own source (a kernel built by exec from a string included), the
globals and closure it reads, and a key that names one specialization. Only the standard
library is imported here until Triton is, as in the plugin.
"""

from __future__ import annotations
import __future__

import ast
import builtins
import functools
import hashlib
import inspect
import json
import math
import operator
import os
import sys
import textwrap
import types
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from matrix.core import (
    COMPILE_OPTIONS,
    INT_TYPES,
    TORCH_TO_TRITON,
    TUPLE_PREFIX,
)

# The suite's root: recorded paths are relative to it, so that they do not depend on where
# the checkout lives (``matrix.backends.kernels.load_kernel`` resolves them again).
SUITE_ROOT_ENV = "MATRIX_SUITE_ROOT"


# Keyword arguments of a launch that are options, not kernel arguments.
OPTION_NAMES = frozenset(
    {
        "num_warps",
        "num_stages",
        "num_ctas",
        "maxnreg",
        "enable_fp_fusion",
        "waves_per_eu",
        "matrix_instr_nonkdim",
        "kpack",
        "launch_cooperative_grid",
        "launch_pdl",
        "debug",
        "enable_warp_specialization",
        "num_buffers_warp_spec",
        "num_consumer_groups",
    }
)


# Bounds of one KERNEL DEFINITION (the record says what was cut).
MAX_SOURCE_CHARS = 40_000


MAX_NAMES = 64


MAX_REPR_CHARS = 300


MAX_HELPER_DEPTH = 8


MAX_REMEMBERED_SOURCES = 20_000


def triton_type(value: Any) -> str | None:
    """The Triton type a launch gives ``value``; None for a value that is a constexpr."""
    if value is None:
        return None
    if hasattr(value, "data_ptr") and hasattr(value, "dtype"):
        dtype = str(value.dtype).removeprefix("torch.")
        return "*" + TORCH_TO_TRITON.get(dtype, dtype)
    if type(value).__name__ == "TensorDescriptor" and hasattr(value, "block_shape"):
        base = getattr(value, "base", None)
        base_type = triton_type(base)
        elem = base_type[1:] if base_type else "?"
        return f"tensordesc<{elem}{list(value.block_shape)}>"
    if isinstance(value, bool):
        return "i1"
    if isinstance(value, int):
        if -(2**31) <= value < 2**31:
            return "i32"
        return "i64" if -(2**63) <= value < 2**63 else "u64"
    if isinstance(value, float):
        return "fp32"
    if isinstance(value, tuple):  # a (named) tuple of arguments: Triton 3.3+ takes them
        return f"unknown:tuple {type(value).__name__}"
    return f"unknown:{type(value).__name__}"


def tuple_signature(
    label: str, value: tuple[Any, ...]
) -> tuple[dict[str, Any], dict[str, Any], list[Any]] | None:
    """(type, constexprs, scalars) of a tuple argument named ``label`` as a LAUNCH record
    states it (capture docstring); None when an element has no Triton type the capture names."""
    items: list[Any] = []
    constexprs: dict[str, Any] = {}
    scalars: list[Any] = []
    for i, element in enumerate(value):
        where = f"{label}[{i}]"
        if isinstance(element, tuple):
            inner = tuple_signature(where, element)
            if inner is None:
                return None
            items.append(inner[0])
            constexprs.update(inner[1])
            scalars.append(inner[2])
            continue
        kind = None if type(element).__name__ == "constexpr" else triton_type(element)
        if kind is None:  # None and tl.constexpr(...) are constants of the compiled kernel
            items.append("constexpr")
            constexprs[where] = _json_value(element)
            scalars.append(None)
        elif kind.startswith("unknown:"):
            return None
        else:
            items.append(kind)
            scalars.append(None if kind.startswith(("*", "tensordesc")) else _json_value(element))
    fields = list(getattr(type(value), "_fields", None) or []) or None
    spelled = {"items": items, "fields": fields, "name": type(value).__name__ if fields else None}
    return spelled, constexprs, scalars


def tuple_ones(label: str, spelled: dict[str, Any], scalars: list[Any]) -> list[str]:
    """The elements of a tuple argument (``tuple_signature``'s type and scalars) that are an
    integer 1: the JIT specializes on them as on a plain argument."""
    found: list[str] = []
    for i, (kind, value) in enumerate(zip(spelled["items"], scalars, strict=True)):
        if isinstance(kind, dict):
            found += tuple_ones(f"{label}[{i}]", kind, value)
        elif kind in INT_TYPES and value == 1 and not isinstance(value, bool):
            found.append(f"{label}[{i}]")
    return found


def _json_value(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    inner = getattr(value, "value", None)  # tl.constexpr wraps its value
    if inner is not None and inner is not value:
        return _json_value(inner)
    return repr(value)


def _relative(path: str | None) -> str | None:
    """``path`` relative to the suite's root (POSIX), or as it is without one."""
    base = os.environ.get(SUITE_ROOT_ENV)
    if not path or not base or path.startswith("<"):  # "<string>": made by exec, no file
        return path
    return Path(os.path.relpath(path, os.path.abspath(base))).as_posix()


def _path_root(file: str | None) -> str | None:
    """The longest ``sys.path`` entry that holds ``file``: where to import its module from,
    relative to the suite's root; None for a module the environment itself imports (one under
    the interpreter's prefix, e.g. an installed package)."""
    if not file or file.startswith("<"):
        return None
    best = None
    for entry in sys.path:
        root = os.path.abspath(entry or os.getcwd())
        if file.startswith(root + os.sep) and (best is None or len(root) > len(best)):
            best = root
    prefixes = {os.path.abspath(p) + os.sep for p in (sys.prefix, sys.base_prefix)}
    if best is None or any((best + os.sep).startswith(p) for p in prefixes):
        return None
    return _relative(best)


_FUTURE_FLAGS = functools.reduce(
    operator.or_, (getattr(__future__, n).compiler_flag for n in __future__.all_feature_names)
)


# Code object -> the source text that made it (exec/compile of a string; capture docstring).
_made_from: dict[types.CodeType, str] = {}


_real_exec, _real_compile = builtins.exec, builtins.compile


def _remember(source: Any, code: Any) -> None:
    if not isinstance(code, types.CodeType) or len(_made_from) >= MAX_REMEMBERED_SOURCES:
        return
    text = source.decode("utf-8", "replace") if isinstance(source, bytes) else source
    if not isinstance(text, str) or "jit" not in text:
        return
    stack = [code]
    while stack:
        c = stack.pop()
        _made_from[c] = text
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))


def _compile(
    source: Any, filename: Any, mode: str, flags: int = 0, dont_inherit: bool = False,
    optimize: int = -1, **kwargs: Any,
) -> Any:  # fmt: skip
    if not dont_inherit:  # the caller's __future__ flags, as the builtin would inherit them
        flags |= sys._getframe(1).f_code.co_flags & _FUTURE_FLAGS
    code = _real_compile(source, filename, mode, flags, True, optimize, **kwargs)
    if isinstance(source, str | bytes):
        _remember(source, code)
    return code


def _exec(source: Any, globals: Any = None, locals: Any = None, /, **kwargs: Any) -> Any:
    if isinstance(source, str | bytes) and globals is not None:
        flags = sys._getframe(1).f_code.co_flags & _FUTURE_FLAGS
        code = _real_compile(source, "<string>", "exec", flags, True)
        _remember(source, code)
        source = code
    if globals is None:  # the caller's own namespaces: only the builtin can find them
        frame = sys._getframe(1)
        globals, locals = frame.f_globals, frame.f_locals if locals is None else locals
    return _real_exec(source, globals, locals, **kwargs)


def remember_exec_sources() -> None:
    """Wrap ``exec`` and ``compile`` so that kernels built from strings keep their source."""
    builtins.exec, builtins.compile = _exec, _compile


def _interpreted_class() -> Any:
    try:
        from triton.runtime.interpreter import InterpretedFunction
    except Exception:
        return None
    return InterpretedFunction


_rewritten_to_original: dict[int, Any] = {}


def original_function(fn: Any) -> Any:
    """The team's own function behind ``fn``: under the interpreter a launch runs a rewritten
    copy (module-level, so its ``__qualname__`` has lost ``<locals>``); Triton 3.0-3.9 keep the
    pairs in ``InterpretedFunction.rewritten_fn``, found by trying."""
    table = getattr(_interpreted_class(), "rewritten_fn", None)
    if not isinstance(table, dict):
        return fn
    if id(fn) not in _rewritten_to_original and len(table) != len(_rewritten_to_original):
        _rewritten_to_original.clear()
        _rewritten_to_original.update({id(v): k for k, v in table.items()})
    return _rewritten_to_original.get(id(fn), fn)


def _is_jit(value: Any) -> bool:
    kinds = tuple(k for k in (_interpreted_class(),) if k is not None)
    try:
        from triton.runtime.jit import JITFunction

        kinds += (JITFunction,)
    except Exception:
        pass
    return bool(kinds) and isinstance(value, kinds)


def strip_decorators(source: str) -> tuple[str, int]:
    """(``source`` dedented from its ``def`` line on, the index of that line in ``source``);
    ValueError when it holds no function definition."""
    text = textwrap.dedent(source)
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            lines = text.splitlines(keepends=True)
            return "".join(lines[node.lineno - 1 :]), node.lineno - 1
    raise ValueError("no function definition in the source")


def _source_of(fn: Any, jit: Any) -> tuple[str, int]:
    """The text of ``fn`` (decorators stripped) and the file line of its ``def``."""
    code = fn.__code__
    src = getattr(jit, "src", None)  # a JITFunction's, which _unsafe_update_src may have changed
    if isinstance(src, str):
        text, _ = strip_decorators(src)
        return text, code.co_firstlineno
    made = _made_from.get(code)
    if made is not None:
        lines = made.splitlines(keepends=True)
        block = "".join(inspect.getblock(lines[code.co_firstlineno - 1 :]))
    else:
        block = inspect.getsource(fn)
    text, offset = strip_decorators(block)
    return text, code.co_firstlineno + offset


def _decorator_literal(fn: Any, keyword: str) -> Any:
    """The literal value of ``keyword=`` in ``fn``'s decorators as written (``@triton.jit(
    do_not_specialize=["n"])``), None where none gives it: under the interpreter the launch
    path holds no JITFunction to ask, and the stripped source has lost the decorator."""
    code = fn.__code__
    made = _made_from.get(code)
    try:
        if made is not None:
            lines = made.splitlines(keepends=True)
            block = "".join(inspect.getblock(lines[code.co_firstlineno - 1 :]))
        else:
            block = inspect.getsource(fn)
        tree = ast.parse(textwrap.dedent(block))
    except (OSError, TypeError, ValueError, SyntaxError):
        return None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for dec in node.decorator_list:
                for kw in dec.keywords if isinstance(dec, ast.Call) else ():
                    if kw.arg == keyword:
                        try:
                            return ast.literal_eval(kw.value)
                        except ValueError:
                            return None
    return None


def _do_not_specialize(fn: Any, jit: Any) -> list[str | int] | None:
    """The arguments a launch does not specialize on their value (an integer 1 stays an
    argument): the JITFunction's own list where the launch path holds one, else the
    decorator's literal."""
    given = getattr(jit, "do_not_specialize", None)
    if given is None:
        given = _decorator_literal(fn, "do_not_specialize")
    if isinstance(given, list | tuple) and all(isinstance(g, str | int) for g in given):
        return list(given)
    return None


def _names_read(code: types.CodeType) -> list[str]:
    names: list[str] = []
    stack = [code]
    while stack:
        c = stack.pop()
        names.extend(n for n in c.co_names if n not in names)
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    return names


def _short_repr(value: Any) -> str:
    try:
        return repr(value)[:MAX_REPR_CHARS]
    except Exception as e:
        return f"<repr failed: {type(e).__name__}>"


def _plain(value: Any) -> Any:
    """``value`` as JSON if it is a constant JSON holds exactly, else raise ValueError."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    if isinstance(value, tuple | list) and len(value) <= MAX_NAMES:
        return [_plain(v) for v in value]
    raise ValueError(type(value).__name__)


class _Definitions:
    """Builds KERNEL DEFINITIONs (capture docstring) and keeps each one once, by id."""

    def __init__(self) -> None:
        self.by_fn: dict[Any, str] = {}
        self.records: dict[str, dict[str, Any]] = {}
        self.active: set[Any] = set()

    def value(self, value: Any, depth: int) -> dict[str, Any]:
        if isinstance(value, types.ModuleType):
            return {"kind": "module", "name": value.__name__}
        if _is_jit(value):
            if depth >= MAX_HELPER_DEPTH:
                return self._unrecorded(value, f"helpers nested deeper than {MAX_HELPER_DEPTH}")
            fn = getattr(value, "fn", None)
            if fn is None or fn in self.active:
                return self._unrecorded(value, "a helper that calls itself")
            return {"kind": "jit", "id": self.define(fn, value, depth + 1)}
        type_name = type(value).__name__
        module = type(value).__module__ or ""
        if module.startswith("triton") and type_name == "constexpr":
            try:
                return {"kind": "constexpr", "value": _plain(value.value)}
            except ValueError:
                return self._unrecorded(value, "a constexpr whose value is not a JSON constant")
        if (
            module.startswith("triton")
            and type_name == "dtype"
            and isinstance(getattr(value, "name", None), str)
        ):
            return {"kind": "dtype", "name": value.name}
        if isinstance(value, float) and not math.isfinite(value):
            return {"kind": "float", "repr": repr(value)}
        try:
            return {"kind": "value", "value": _plain(value), "tuple": isinstance(value, tuple)}
        except ValueError:
            pass
        qualname, owner = getattr(value, "__qualname__", None), getattr(value, "__module__", None)
        if isinstance(qualname, str) and isinstance(owner, str) and "<" not in qualname:
            return {"kind": "import", "module": owner, "qualname": qualname}
        return self._unrecorded(value, "")

    @staticmethod
    def _unrecorded(value: Any, why: str) -> dict[str, Any]:
        out = {"kind": "unrecorded", "type": type(value).__name__, "repr": _short_repr(value)}
        return {**out, "why": why} if why else out

    def define(self, fn: Any, jit: Any = None, depth: int = 0) -> str:
        """The id of ``fn``'s definition (recorded on first sight; its helpers too)."""
        known = self.by_fn.get(fn)
        if known is not None:
            return known
        self.active.add(fn)
        try:
            record = self._build(fn, jit, depth)
        finally:
            self.active.discard(fn)
        ident = json.dumps(record, sort_keys=True, default=repr)
        key = hashlib.sha256(ident.encode()).hexdigest()[:16]
        self.records.setdefault(key, record)
        self.by_fn[fn] = key
        return key

    def stable_digest(self, ident: str, seen: frozenset[str] = frozenset()) -> str:
        """A digest of what a definition is that does not depend on the release: its source,
        its constant values and its helpers' digests (module paths and import paths are left
        out: they move between releases, and one kernel must pair with itself across them)."""
        record = self.records[ident]
        values = {**record["globals"], **record["closure"]}
        parts: list[Any] = [record["qualname"], record["source_hash"]]
        for name in sorted(values):
            v = values[name]
            if v["kind"] in ("value", "constexpr", "float", "dtype"):
                parts.append([name, v])
            elif v["kind"] == "jit" and v["id"] not in seen:
                parts.append([name, self.stable_digest(v["id"], seen | {ident})])
        text = json.dumps(parts, sort_keys=True, default=repr)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def _build(self, fn: Any, jit: Any, depth: int) -> dict[str, Any]:
        code = fn.__code__
        cut: list[str] = []
        try:
            source, line = _source_of(fn, jit)
        except (OSError, TypeError, ValueError, SyntaxError) as e:
            source, line = "", code.co_firstlineno
            cut.append(f"source not available: {type(e).__name__}: {e}"[:MAX_REPR_CHARS])
        if len(source) > MAX_SOURCE_CHARS:
            cut.append(f"source of {len(source)} characters, over {MAX_SOURCE_CHARS}: not kept")
            source = ""
        qualname = getattr(fn, "__qualname__", None) or getattr(code, "co_qualname", fn.__name__)
        fn_globals = getattr(fn, "__globals__", {})
        # Annotations and defaults are evaluated when the rebuilt ``def`` runs: their names
        # (``tl`` of ``tl.constexpr``) are the module's, not in the function's own co_names.
        read = _names_read(code)
        if source:
            # ... but a parameter or local (``T`` of fla's kernels, whose modules also hold a
            # ``T = TypeVar("T")``) is the function's own: never a global it reads
            read += sorted(
                {n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name)}
                - set(read)
                - set(code.co_varnames)
            )
        names = [n for n in read if n in fn_globals]
        if len(names) > MAX_NAMES:
            cut.append(f"{len(names)} globals read, only the first {MAX_NAMES} kept")
            names = names[:MAX_NAMES]
        closure: dict[str, Any] = {}
        for name, cell in zip(code.co_freevars, fn.__closure__ or (), strict=False):
            try:
                closure[name] = self.value(cell.cell_contents, depth)
            except ValueError:  # an empty cell: the name is not bound yet
                closure[name] = {"kind": "unrecorded", "type": "cell", "repr": "<empty>"}
        options: dict[str, Any] = {}
        for key in ("noinline",):
            given = getattr(jit, key, None)
            given = given if given is not None else (getattr(jit, "kwargs", None) or {}).get(key)
            if given is not None:
                options[key] = bool(given)
        unspecialized = _do_not_specialize(fn, jit)
        if unspecialized:
            options["do_not_specialize"] = unspecialized
        return {
            "name": fn.__name__,
            "qualname": qualname,
            "module": getattr(fn, "__module__", None),
            "file": _relative(code.co_filename),
            "line": line,
            "source": source,
            "source_hash": hashlib.sha256(source.encode()).hexdigest()[:16],
            "globals": {n: self.value(fn_globals[n], depth) for n in names},
            "closure": closure,
            "jit": options,
            "cut": cut,
        }


_definitions = _Definitions()


def describe_launch(
    fn: Callable[..., Any],
    arg_names: list[str],
    constexpr_names: set[str],
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any],
    grid: Any,
    jit: Any = None,
) -> dict[str, Any]:
    """The LAUNCH record (capture docstring) of one call of the Python function ``fn`` (under
    the interpreter, the rewritten copy Triton runs: its original is found); ``jit`` is the
    ``@triton.jit`` object where the launch path holds it (its ``src`` is what compiles)."""
    fn = original_function(fn)
    kernel_kwargs = {k: v for k, v in kwargs.items() if k in arg_names}
    options = {k: _json_value(v) for k, v in kwargs.items() if k in OPTION_NAMES}
    bound = inspect.signature(fn).bind_partial(*args, **kernel_kwargs)
    bound.apply_defaults()
    signature: dict[str, str] = {}
    constexprs: dict[str, Any] = {}
    shapes: dict[str, list[int]] = {}
    strides: dict[str, list[int]] = {}
    scalars: dict[str, Any] = {}
    tuple_one_paths: list[str] = []
    for arg in arg_names:
        value: Any = bound.arguments.get(arg)  # whatever the caller passed (None: not passed)
        kind = None if arg in constexpr_names else triton_type(value)
        if kind is None:
            constexprs[arg] = _json_value(value)
            continue
        if kind.startswith("unknown:tuple") and (typed := tuple_signature(arg, value)):
            spelled, inner_constexprs, scalars[arg] = typed
            signature[arg] = TUPLE_PREFIX + json.dumps(spelled, sort_keys=True)
            constexprs.update(inner_constexprs)
            tuple_one_paths += tuple_ones(arg, spelled, scalars[arg])
            continue
        signature[arg] = kind
        # A tensor's shape and strides (a namedtuple with ``shape`` and ``stride`` fields, as
        # Triton's test_tuple.py passes, is an argument of another kind: no example for it).
        if hasattr(value, "data_ptr") and hasattr(value, "shape") and callable(value.stride):
            shapes[arg] = [int(s) for s in value.shape]
            strides[arg] = [int(s) for s in value.stride()]
        elif not kind.startswith(("*", "tensordesc")):
            scalars[arg] = _json_value(value)
    try:
        g = grid(dict(bound.arguments)) if callable(grid) else grid
        grid_dims = [int(d) for d in (g if isinstance(g, tuple | list) else (g,))]
    except Exception:  # a grid lambda reading something we do not pass: no example grid
        grid_dims = None
    module = getattr(fn, "__module__", None) or "?"
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", "?")
    file = fn.__code__.co_filename if hasattr(fn, "__code__") else None
    definition = _definitions.define(fn, jit)
    source_hash = _definitions.records[definition]["source_hash"]
    # Options a release's Config adds with defaults (None) must not split one specialization.
    shaping = {k: v for k, v in options.items() if k in COMPILE_OPTIONS and v is not None}
    # What the kernel is belongs to its identity (two kernels of one name are two kernels),
    # in a form that one kernel keeps on every release (stable_digest).
    what = _definitions.stable_digest(definition)
    # An integer argument equal to 1 is a constant in the compiled kernel (the JIT specializes
    # on it: matrix.backends.kernels.specialized): a launch with it is another specialization.
    ones = sorted(n for n, v in scalars.items() if v == 1 and signature.get(n) in INT_TYPES)
    ones += tuple_one_paths
    identity = json.dumps(
        [module, name, what, signature, constexprs, shaping] + ([ones] if ones else []),
        sort_keys=True,
    )
    launch = {
        "key": hashlib.sha256(identity.encode()).hexdigest()[:16],
        "kernel": f"{module}:{name}",
        "module": module,
        "name": name,
        "qualname": name,
        "definition": definition,
        "source_hash": source_hash,
        "file": _relative(file),
        "path_root": _path_root(file),
        "signature": signature,
        "constexprs": constexprs,
        "options": options,
        "example": {"shapes": shapes, "strides": strides, "scalars": scalars, "grid": grid_dims},
    }
    # The autotuner pinned to its first configuration (``matrix.measure.redirect``): which one.
    pinned = getattr(fn, "_matrix_pinned", None)
    if isinstance(pinned, dict):
        launch["autotune"] = pinned
    return launch
