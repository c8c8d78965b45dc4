"""A pytest plugin for a team's suite in a matrix cell: per-test events and captured launches.

Loaded as ``pytest -p matrix.measure.capture`` (the runner does this) or through the
``pytest11`` entry point of the same name once the project is installed. It does nothing unless
``MATRIX_EVENTS`` names a file: then it appends one JSON object per line to that file.

Events (the runner in ``matrix.measure.suite`` reads them):

- ``{"event": "start", "id": NODEID}`` when a test starts, and
  ``{"event": "done", "id": NODEID, "record": TEST}`` when it has finished (setup, call and
  teardown), where TEST is ``{"id", "outcome", "seconds", "detail"}``; outcome is one of
  ``passed``, ``failed``, ``error``, ``skipped``, ``xfailed``, ``xpassed``. A collection
  error is a ``done`` with outcome ``error`` and no ``start``.
- ``{"event": "partial", "id": NODEID, "record": TEST}`` once its call has run (the record so
  far): a teardown that then hangs keeps the call's failure (``supervise.timed_out_record``).
- ``{"event": "collected", "ids": [NODEID, ...]}`` the tests this run will run, and
  ``{"event": "finished", "stopped_early": WHY}`` when pytest is done with them (WHY: pytest's
  own reason for stopping early, ``-x``/``--maxfail``, or ""): a test collected and never
  done was not run (``matrix.measure.suite``), and a process still alive well after
  ``finished`` is held by what a test left running (``matrix.measure.supervise``).
- ``{"event": "overridden", "text": ...}`` when the suite's own configuration (``addopts`` of
  its ``pytest.ini``, ``PYTEST_ADDOPTS``) stops at the first failures (``-x``, ``--maxfail``):
  the plugin lifts that limit so that every test has an outcome, and says so. Given on the
  command line (``--tests-args``), the limit stays, and the tests it stops are ``not run``.
- ``{"event": "launch", "launch": LAUNCH}`` the first time each distinct specialization of a
  ``@triton.jit`` function is launched. LAUNCH is::

      {"key": "<16 hex digits: kernel + types + constexprs + options>",
       "kernel": "pkg.module:fn", "module": "pkg.module", "name": "fn",
       "file": "../pkg/module.py",   # relative to the suite's root (MATRIX_SUITE_ROOT)
       "path_root": "..",            # the sys.path entry it was imported from, relative too;
                                     # None where the environment imports it (site-packages)
       "signature": {"x_ptr": "*fp32", "n": "i32"},   # non-constexpr arguments, Triton types
                                                      # (a tuple: TUPLE_PREFIX + JSON, below)
       "constexprs": {"BLOCK": 128},                  # JSON values (bool, int, float, str, None)
       "options": {"num_warps": 4},                   # launch options given (num_stages, ...)
       "example": {"shapes": {"x_ptr": [1000]}, "strides": {"x_ptr": [1]},
                   "scalars": {"n": 1000}, "grid": [8, 1, 1]},
       "test": "<nodeid of the test that first launched it>",
       "qualname": "test_mod.test_add.<locals>.add_kernel",  # with <locals>, as defined
       "definition": "<16 hex digits>",   # the key of its KERNEL DEFINITION (below)
       "source_hash": "<16 hex digits>",  # of the definition's source text
       "autotune": {"config": "BLOCK: 64, num_warps: 4, ...", "of": 8}}   # only where the
                                  # redirect pinned its autotuner (the config it ran, of N)

  A (named) tuple argument (Triton 3.3+ takes them) is typed ``"tuple:" + JSON`` of
  ``{"items": [TYPE, ...], "fields": [NAME, ...] or null, "name": CLASS or null}``, where a
  TYPE is a Triton type string, ``"constexpr"`` (a ``None`` or ``tl.constexpr`` element: its
  value is in ``constexprs`` under ``"arg[i]"``, ``"arg[i][j]"`` for a nested one) or such an
  object again; ``example.scalars[arg]`` holds the elements' scalar values (``null`` for the
  others). A tuple holding a value the capture cannot type stays ``"unknown:tuple CLASS"``.

- ``{"event": "definition", "id": ID, "definition": KERNEL DEFINITION}`` once per distinct
  definition, before the first launch that names it. A KERNEL DEFINITION is what the kernel
  that ran was made of, so that the aot cell can rebuild exactly that function
  (``matrix.backends.kernels.rebuild_kernel``) instead of importing it by name::

      {"name": "add_kernel", "qualname": "test_add.<locals>.add_kernel", "module": "test_mod",
       "file": "test_mod.py", "line": 12,          # of the ``def`` line; file "<string>" for
                                                  # a kernel built by exec from a string
       "source": "def add_kernel(...):\n    ...",  # decorators stripped, dedented
       "source_hash": "<16 hex digits>",
       "globals": {NAME: VALUE, ...},             # the module globals its body reads
       "closure": {NAME: VALUE, ...},             # the free variables it reads
       "jit": {"noinline": true,                  # @triton.jit options that change codegen
               "do_not_specialize": ["n"]},       # (an int 1 stays an argument)
       "cut": ["..."]}                            # what was left out to bound the record

  A VALUE is ``{"kind": "module", "name": "triton.language"}``, ``{"kind": "jit", "id": ID}``
  (a nested ``@triton.jit`` helper: its own definition, recorded the same way),
  ``{"kind": "constexpr", "value": 4}``, ``{"kind": "dtype", "name": "fp16"}``,
  ``{"kind": "value", "value": 3, "tuple": false}``, ``{"kind": "float", "repr": "nan"}``,
  ``{"kind": "import", "module": "m", "qualname": "f"}``, or ``{"kind": "unrecorded",
  "type": "...", "repr": "..."}`` (a value that could not be recorded: a rebuild that needs it
  is ``skipped``, never a Triton answer).

The source of a kernel built from a string (``exec(src, globals(), ns)``, Triton's own tests
do this) is not in any file: while the plugin is active, ``exec`` and ``compile`` of source
text that mentions ``jit`` remember the text of the code objects they make (same code, same
flags, same filename ``<string>``: nothing the test sees changes).

``example`` is what one launch really passed, so that a GPU can replay it
(``matrix.backends.kernels.replay``).

``MATRIX_SKIP`` may name a file of node ids (one a line) that are deselected: the runner uses
it to resume a suite after a test crashed or hung the process. ``MATRIX_ONLY`` may name a
file of node ids that are the only ones run (a GPU leg's re-run of its regressions).

The hook wraps the interpreter's ``GridExecutor.__call__`` (every interpreted launch goes
through it on Triton 3.0-3.9, direct or via an autotuner) and ``JITFunction.run`` (compiled
launches), whichever exist: found by trying, not by version. Only the standard library is
imported here until Triton is, so the plugin costs a team's suite nothing outside a cell.
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
import tempfile
import textwrap
import threading
import time
import types
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from matrix.core import (
    COMPILE_OPTIONS,
    INT_TYPES,
    REPO_ROOT,
    TEST_ERROR,
    TEST_FAILED,
    TEST_PASSED,
    TEST_XPASSED,
    TORCH_TO_TRITON,
    TUPLE_PREFIX,
)
from matrix.measure import standin

EVENTS_ENV = "MATRIX_EVENTS"
SKIP_ENV = "MATRIX_SKIP"
ONLY_ENV = "MATRIX_ONLY"
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


class _Writer:
    """Appends events to one file, a line at a time (flushed: a crash loses nothing written)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.lock = threading.Lock()
        self.seen: set[str] = set()
        self.definitions: set[str] = set()
        self.current_test: str | None = None

    def write(self, event: dict[str, Any]) -> None:
        line = json.dumps(event, default=repr) + "\n"
        with self.lock, open(self.path, "a", encoding="utf-8") as f:
            if event.get("event") == "done":
                standin.confirm_parent()  # a test that killed the stand-in is never done
            f.write(line)
            f.flush()


_writer: _Writer | None = None
_owner: dict[str, Any] = {}  # the pytest config that made the writer


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
    states it (module docstring); None when an element has no Triton type the capture names."""
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


# ------------------------------------------------------------------------ kernel definitions

_FUTURE_FLAGS = functools.reduce(
    operator.or_, (getattr(__future__, n).compiler_flag for n in __future__.all_feature_names)
)
# Code object -> the source text that made it (exec/compile of a string; module docstring).
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
    """Builds KERNEL DEFINITIONs (module docstring) and keeps each one once, by id."""

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
    """The LAUNCH record (module docstring) of one call of the Python function ``fn`` (under
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


def _record(*launch_args: Any) -> None:
    if _writer is None:
        return
    try:
        launch = describe_launch(*launch_args)
    except Exception as e:  # capture must never break the team's test; say what was missed
        fn = launch_args[0]
        launch = {
            "key": f"error-{getattr(fn, '__name__', '?')}",
            "error": repr(e)[:300],
            "kernel": f"{getattr(fn, '__module__', '?')}:{getattr(fn, '__name__', '?')}",
        }
    if launch["key"] in _writer.seen:
        return
    _writer.seen.add(launch["key"])
    for ident, record in _definitions.records.items():
        if ident not in _writer.definitions:
            _writer.definitions.add(ident)
            _writer.write({"event": "definition", "id": ident, "definition": record})
    launch["test"] = _writer.current_test
    _writer.write({"event": "launch", "launch": launch})


def _constexprs_of(fn: Callable[..., Any]) -> set[str]:
    names = set()
    for name, ann in inspect.get_annotations(fn).items():
        text = ann if isinstance(ann, str) else getattr(ann, "__name__", repr(ann))
        if "constexpr" in str(text):
            names.add(name)
    return names


def install_hooks() -> list[str]:
    """Wrap every launch path the installed Triton has; return what was wrapped (may be [])."""
    wrapped = []
    try:
        from triton.runtime import interpreter
    except Exception:
        interpreter = None
    executor = getattr(interpreter, "GridExecutor", None)
    if executor is not None and not getattr(executor.__call__, "_matrix_capture", False):
        original = executor.__call__

        def call(self: Any, *args: Any, **kwargs: Any) -> Any:
            _record(
                self.fn,
                list(self.arg_names),
                set(getattr(self, "constexprs", ())) or _constexprs_of(self.fn),
                args,
                kwargs,
                self.grid,
            )
            return original(self, *args, **kwargs)

        # A marker on the function (typeshed knows no such attribute): already wrapped.
        call._matrix_capture = True  # type: ignore[attr-defined]
        executor.__call__ = call
        wrapped.append("interpreter.GridExecutor.__call__")
    try:
        from triton.runtime.jit import JITFunction
    except Exception:
        JITFunction = None
    run = getattr(JITFunction, "run", None)
    if run is not None and not getattr(run, "_matrix_capture", False):

        def jit_run(self: Any, *args: Any, grid: Any = None, **kwargs: Any) -> Any:
            if not kwargs.get("warmup"):
                names = list(self.arg_names)
                consts = {p.name for p in getattr(self, "params", ()) if p.is_constexpr}
                _record(self.fn, names, consts, args, kwargs, grid, self)
            return run(self, *args, grid=grid, **kwargs)

        # A marker on the function (typeshed knows no such attribute): already wrapped.
        jit_run._matrix_capture = True  # type: ignore[attr-defined]
        JITFunction.run = jit_run
        wrapped.append("jit.JITFunction.run")
    return wrapped


# ------------------------------------------------------------------------------ pytest hooks


def pytest_configure(config: Any) -> None:
    global _writer
    path = os.environ.get(EVENTS_ENV)
    if not path or _writer is not None:
        return
    _writer = _Writer(path)
    _owner["config"] = config
    standin.take_fd()
    remember_exec_sources()
    hooks = install_hooks()
    _writer.write({"event": "hooks", "wrapped": hooks})
    lifted = lift_configured_maxfail(config)
    if lifted:
        _writer.write({"event": "overridden", "text": lifted})


def _maxfail_given(args: list[str]) -> bool:
    """Whether command-line ``args`` set ``-x``/``--exitfirst``/``--maxfail`` (``-xq`` too)."""
    for arg in args:
        if arg.startswith(("--maxfail", "--exitfirst")):
            return True
        if arg.startswith("-") and not arg.startswith("--") and "x" in arg[1:2]:
            return True
    return False


def lift_configured_maxfail(config: Any) -> str:
    """Lift a stop-at-first-failures limit that came from the suite's configuration (ini
    ``addopts``, ``PYTEST_ADDOPTS``), not from the command line; return what was lifted ("")."""
    maxfail = getattr(config.option, "maxfail", 0) or 0
    given = list(getattr(getattr(config, "invocation_params", None), "args", ()) or ())
    if maxfail <= 0 or _maxfail_given([str(a) for a in given]):
        return ""
    config.option.maxfail = 0
    return (
        f"the suite's configuration stops pytest after {maxfail} failure(s) (-x or --maxfail "
        "in addopts): lifted, so that every test runs and has an outcome"
    )


def pytest_collection_finish(session: Any) -> None:
    if _writer is not None and session.config is _owner.get("config"):
        _writer.write({"event": "collected", "ids": [i.nodeid for i in session.items]})


_stopped_early = {"why": ""}


def pytest_sessionfinish(session: Any, exitstatus: Any) -> None:
    if session.config is not _owner.get("config"):
        return
    why = getattr(session, "shouldfail", False) or getattr(session, "shouldstop", False)
    _stopped_early["why"] = why if isinstance(why, str) else ""


def pytest_unconfigure(config: Any) -> None:
    # The last hook pytest calls: what runs after it is the interpreter's exit. Only the
    # session that made the writer finishes (a test running pytest in-process has its own).
    if _writer is not None and config is _owner.get("config"):
        _writer.write({"event": "finished", "stopped_early": _stopped_early["why"]})


def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    _keep_only(config, items)
    skip_file = os.environ.get(SKIP_ENV)
    if not skip_file or not Path(skip_file).exists():
        return
    skip = set(Path(skip_file).read_text(encoding="utf-8").splitlines())
    kept = [i for i in items if i.nodeid not in skip]
    deselected = [i for i in items if i.nodeid in skip]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept


def _keep_only(config: Any, items: list[Any]) -> None:
    """Deselect every item that the ``MATRIX_ONLY`` file does not name (module docstring)."""
    only_file = os.environ.get(ONLY_ENV)
    if not only_file or _writer is None:
        return
    only = set(Path(only_file).read_text(encoding="utf-8").splitlines())
    deselected = [i for i in items if i.nodeid not in only]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = [i for i in items if i.nodeid in only]


_reports: dict[str, dict[str, Any]] = {}


def pytest_runtest_logstart(nodeid: str, location: Any) -> None:
    if _writer is not None:
        _writer.current_test = nodeid
        _reports[nodeid] = {
            "id": nodeid,
            "outcome": "passed",
            "seconds": 0.0,
            "detail": "",
            "t0": time.monotonic(),
        }
        _writer.write({"event": "start", "id": nodeid})


def _places() -> list[tuple[str, str]]:
    """(absolute folder, the name a record gives it), longest first: the suite's root (its
    files are named relative to it, as the test ids are), the environment, the Python it was
    made from, the matrix's checkout, the home folder and the temporary folder."""
    named = [
        (os.environ.get(SUITE_ROOT_ENV), ""),
        (sys.prefix, "<env>/"),
        (sys.base_prefix, "<python>/"),
        (str(REPO_ROOT), "<matrix>/"),
        (os.path.expanduser("~"), "~/"),
        (tempfile.gettempdir(), "<tmp>/"),
    ]
    out: dict[str, str] = {}
    for folder, name in named:
        if folder and folder != os.sep:
            for form in (os.path.abspath(folder), os.path.realpath(folder)):
                out.setdefault(form.rstrip(os.sep) + os.sep, name)
    return sorted(out.items(), key=lambda kv: -len(kv[0]))


def scrub_paths(text: str) -> str:
    """``text`` (a failure's report) with the absolute folders of this machine replaced by
    the names ``_places`` gives them: a recorded test says the same wherever the checkout and
    the suite live, and no page built from it carries the build machine's paths."""
    for folder, name in _places():
        text = text.replace(folder, name)
    return text


def _detail(report: Any) -> str:
    text = getattr(report, "longreprtext", "") or ""
    crash = getattr(getattr(report, "longrepr", None), "reprcrash", None)
    if crash is not None and getattr(crash, "message", None):
        text = crash.message
    elif isinstance(getattr(report, "longrepr", None), tuple):  # a skip: (file, line, reason)
        text = str(report.longrepr[2])
    return scrub_paths(text.strip())[:500]


FAILURE_LINES, FAILURE_CHARS = 15, 2000


def _failure_tail(report: Any) -> str:
    """The last lines of a failure's report: where it failed and with what (the gate shows
    them beside a regression)."""
    text = scrub_paths(getattr(report, "longreprtext", "") or "")
    lines = [ln.rstrip() for ln in text.splitlines() if ln.strip()]
    return "\n".join(lines[-FAILURE_LINES:])[-FAILURE_CHARS:]


def pytest_runtest_logreport(report: Any) -> None:
    _note_report(report)
    _send_partial(report)


def _note_report(report: Any) -> None:
    """Fold one phase's report (setup, call, teardown) into its test's record."""
    rec = _reports.get(report.nodeid)
    if _writer is None or rec is None:
        return
    xfail = hasattr(report, "wasxfail")
    if report.skipped:
        outcome = "xfailed" if xfail else "skipped"
    elif report.failed:
        outcome = "failed" if report.when == "call" else "error"
    elif xfail and report.when == "call":
        outcome = "xpassed"
    else:
        return
    # The first thing that went wrong is the outcome.
    if rec["outcome"] in (TEST_PASSED, TEST_XPASSED):
        rec["outcome"], rec["detail"] = outcome, _detail(report) or getattr(report, "wasxfail", "")
        if outcome in (TEST_FAILED, TEST_ERROR):
            rec["failure"] = _failure_tail(report)
    elif outcome == TEST_ERROR and rec["outcome"] != TEST_ERROR:  # a teardown error after a failure
        rec["detail"] += f" (and in {report.when}: {_detail(report)})"


def _send_partial(report: Any) -> None:
    """Once a test's call has run, the record so far (module docstring: ``partial``)."""
    rec = _reports.get(report.nodeid)
    # After the call, or after a setup that did not pass (no call comes then).
    last = report.when == "call" or (report.when == "setup" and not report.passed)
    if _writer is not None and rec is not None and last:
        _writer.write(
            {"event": "partial", "id": report.nodeid,
             "record": {k: v for k, v in rec.items() if k != "t0"}}
        )  # fmt: skip


def pytest_runtest_logfinish(nodeid: str, location: Any) -> None:
    rec = _reports.pop(nodeid, None)
    if _writer is None or rec is None:
        return
    rec["seconds"] = round(time.monotonic() - rec.pop("t0"), 3)
    _writer.current_test = None
    _writer.write({"event": "done", "id": nodeid, "record": rec})


def pytest_collectreport(report: Any) -> None:
    if _writer is not None and report.failed:
        rec = {
            "id": report.nodeid or "<collection>",
            "outcome": "error",
            "seconds": 0.0,
            "detail": "collection failed: "
            + (_detail(report) or scrub_paths(report.longreprtext)[-500:]),
            "failure": _failure_tail(report),
        }
        _writer.write({"event": "done", "id": rec["id"], "record": rec})
