"""The public API of the installed Triton release, as data: the census.

It imports and inspects only; nothing is compiled or launched. It is registered on the ``aot``
backend with no target (``ProbeSpec.aot_targets=(None,)``) for one reason: the aot backend runs
once per release (in the ``aot_numpy`` cell), while interpreter rows repeat for every numpy, and
the census does not depend on numpy (measured: ~330 kB a copy; thirty copies would be a sixth of
the committed reports' budget). ``python -m matrix.run --probes api_surface --backends aot``
records it; any backend works (``interpret`` too), since importing is all it does.

One row per release, status ``recorded`` (``error`` when the inspection itself breaks);
``data["census"]`` holds::

    {"format": 1, "version": "3.9.0",
     "modules": {"triton.language": {"status": "ok", "file": "language/__init__.py", "names": {
                     "dot": "triton.language.core.dot",          # a definition: key of "defs"
                     "float32": {"kind": "value", "type": "dtype", "repr": "..."},
                     "math": {"kind": "module", "module": "triton.language.math"}}},
                 "triton.ops": {"status": "missing", "error": "ModuleNotFoundError: ..."}},
     "defs": {"triton.language.core.dot": {
                  "kind": "builtin", "file": "language/core.py", "line": 2001,
                  "params": ["input", "other", "acc=None", "input_precision=None", ...]},
              "triton.runtime.autotuner.Config": {"kind": "class", ..., "params": [...],
                  "fields": {"kwargs": "{}", "num_warps": "4", ...},   # triton.Config({})
                  "members": {"all_kwargs": ["self"], ...}},
              "triton.knobs.runtime_knobs": {"kind": "class", ...,      # a DEEP_FILES class:
                  "members": {"interpret": {"knob": "env_bool", "env": "TRITON_INTERPRET",
                                            "default": "False"}, "_private": [...], ...},
                  "attrs": ["cache", ...]}},                    # what its methods set on self
     "env": {"TRITON_INTERPRET": {"sites": [["runtime/interpreter.py", 12]], "count": 3,
                                  "knobs": ["runtime_knobs.interpret"]}}}

Kinds: ``class``, ``function``, ``builtin`` (a ``tl`` builtin), ``jit`` (a ``@triton.jit``
function), ``autotuned``, ``value``, ``module``, ``uninspectable`` (inspection raised; the error
is kept). ``params`` is Python's own spelling, one parameter a string (``/`` and ``*`` markers
included). Files are relative to the triton package. A module that fails to import is recorded
with its error (``missing`` when the module itself does not exist, ``import-error`` otherwise),
so one broken module never loses the release's census. The INTERNAL_MODULES (the runtime's
jit, autotuner, cache and driver modules, the compiler, the backends' compiler and driver
modules) are recorded by the names they define (not by what they import), and the classes of
DEEP_FILES also by their single-underscore methods, launch-path dunders, knob descriptors and
the attributes their methods set on ``self``. Environment variables come from the
Python source only (``os.getenv``/``os.environ``/``getenv*`` calls and the knobs tables'
``env_*`` descriptors); variables read only by the C++ side are not seen. The reader is
``matrix.analyze.census``.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import os
import pkgutil
import re
import sys
import types
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from matrix.probes.support.base import Context, Observation

FORMAT = 1

# The modules a team's kernels and host code reach (issue 16). Each is recorded if it imports;
# the packages in WALKED also have every public submodule recorded (names starting with "_"
# are private and skipped). triton.ops and triton.knobs exist only in some releases.
ROOTS = (
    "triton",
    "triton.language",
    "triton.testing",
    "triton.runtime",
    "triton.compiler",
    "triton.tools",
    "triton.knobs",
    "triton.ops",
    "triton.experimental",
)
INTERNAL_MODULES = (
    # The internals teams subclass, patch or call (a launcher, a cache manager, a backend
    # hook): recorded by every public module-level name, not walked. Real breakages live
    # here: triton.runtime.cache.default_cache_dir went at 3.4.0, CUDABackend.make_ttir
    # gained a parameter.
    "triton.runtime.jit",
    "triton.runtime.autotuner",
    "triton.runtime.cache",
    "triton.runtime.driver",
    "triton.runtime.build",
    "triton.runtime.errors",
    "triton.compiler.compiler",
    "triton.compiler.errors",
    "triton.backends",
    "triton.backends.compiler",
    "triton.backends.driver",
    "triton.backends.nvidia.compiler",
    "triton.backends.nvidia.driver",
    "triton.backends.amd.compiler",
    "triton.backends.amd.driver",
)
# A package walked and how deep (None: all the way). triton.runtime and triton.compiler are
# recorded by what they export, not by their implementation modules; the tools' own helper
# packages (the Gluon translator's internals) are below the depth a team imports from.
WALKED: dict[str, int | None] = {"triton.language": None, "triton.ops": None, "triton.tools": 1}

# Classes whose instance defaults matter to host code, with the arguments that build one:
# what ``triton.Config({})`` holds (num_warps, num_stages, ...) changes between releases.
INSTANCES: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {
    "triton.Config": (({},), {}),
}

# Files (relative to the triton package; a trailing "/" is a folder) whose classes are recorded
# deep: beside their public members, their single-underscore methods (``Autotuner._bench``,
# ``JITFunction._do_compile``: what subclasses override), the dunders of the launch path, the
# attributes their methods set on ``self`` (``CompiledKernel.metadata``, ``JITFunction.arg_names``)
# and the knobs' environment descriptors (``runtime_knobs.interpret = env_bool(...)``).
DEEP_FILES = (
    "runtime/jit.py",
    "runtime/autotuner.py",
    "runtime/cache.py",
    "runtime/driver.py",
    "compiler/compiler.py",
    "backends/",
    "knobs.py",
)
DEEP_DUNDERS = ("__call__", "__getitem__", "__get__", "__set__")

REPR_LIMIT = 120
# Where an environment variable is read: the first few sites, and how many there are.
SITE_LIMIT = 5

_PYBIND_ENUM = re.compile(r"<([A-Za-z_][\w.]*): -?\d+>")
_SIMPLE = (int, float, str, bool, type(None), tuple, frozenset)


# tl.constexpr's own repr: 3.6.0 turned random.py's N_ROUNDS_DEFAULT = 10 into
# tl.constexpr(10), so every tl.rand*/philox default read ``constexpr[10]`` beside ``10``.
_CONSTEXPR = re.compile(r"constexpr\[(.*)\]", re.DOTALL)


def short_repr(value: Any) -> str:
    # A tl.constexpr default is its value to every caller (a kernel unwraps it; host code
    # reads .value), so the census records the value's own repr: exact, even for strings.
    if type(value).__name__ == "constexpr" and hasattr(value, "value"):
        value = value.value
    try:
        text = repr(value)
    except Exception as e:  # a repr that raises is itself worth seeing, not a probe failure
        text = f"<repr failed: {type(e).__name__}>"
    return normal_repr(text)[:REPR_LIMIT]


def normal_repr(text: str) -> str:
    """A repr that means the same across releases: no addresses (they differ run to run), a
    pybind11 enum's ``<PROPAGATE_NAN.NONE: 0>`` spelled ``PROPAGATE_NAN.NONE`` as newer
    pybind11 prints it (the binding library changed, not Triton's default), and a
    ``tl.constexpr``'s ``constexpr[10]`` as its value ``10`` (wrapping a default in constexpr
    does not change it). ``matrix.analyze.census`` reads every recorded repr through this too, so
    censuses recorded before a rule was added compare as if recorded after it; there a
    constexpr string reads ``constexpr[global]`` -> ``global``, without the quotes that
    ``short_repr`` keeps when it sees the value itself."""
    if " at 0x" in text:
        text = text.split(" at 0x")[0] + ">"
    match = _PYBIND_ENUM.fullmatch(text)
    if match:
        return match.group(1)
    match = _CONSTEXPR.fullmatch(text)
    return normal_repr(match.group(1)) if match else text


def params_of(obj: Any) -> list[str] | None:
    """The signature as Python writes it, one parameter a string: ``["x", "acc=None", "*",
    "out_dtype=triton.language.float32", "**kwargs"]`` with ``/`` after positional-only ones
    and a bare ``*`` before keyword-only ones; None when the object has no signature.
    ``matrix.analyze.census.parse_params`` reads it back."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    out: list[str] = []
    kinds = inspect.Parameter
    star_seen = False
    previous = None
    for p in sig.parameters.values():
        if previous == kinds.POSITIONAL_ONLY and p.kind != kinds.POSITIONAL_ONLY:
            out.append("/")
        if p.kind == kinds.VAR_POSITIONAL:
            out.append("*" + p.name)
            star_seen = True
        elif p.kind == kinds.VAR_KEYWORD:
            out.append("**" + p.name)
        else:
            if p.kind == kinds.KEYWORD_ONLY and not star_seen:
                out.append("*")
                star_seen = True
            text = p.name
            if p.default is not inspect.Parameter.empty:
                text += "=" + short_repr(p.default)
            out.append(text)
        previous = p.kind
    if previous == kinds.POSITIONAL_ONLY:
        out.append("/")
    return out


class Inspector:
    """Builds the census of the triton package found at ``root`` (its ``__init__``'s folder)."""

    def __init__(self, root: Path, preloaded: Iterable[str] = ()) -> None:
        self.root = root
        # The triton modules loaded by ``import triton`` alone, before the census imports more.
        self.preloaded = {m for m in preloaded if m.split(".")[0] == "triton"}
        self.defs: dict[str, dict[str, Any]] = {}
        self._key_of: dict[int, str] = {}
        self._class_lines: dict[str, dict[str, int]] = {}
        self._class_attrs: dict[str, dict[str, list[str]]] = {}

    # -- where a definition lives ---------------------------------------------------------
    def relative(self, filename: str | None) -> str | None:
        if not filename:
            return None
        try:
            return Path(filename).resolve().relative_to(self.root).as_posix()
        except ValueError:
            return None  # defined outside triton (a re-exported stdlib or torch object)

    def class_line(self, filename: str, qualname: str) -> int | None:
        """A class's line from one parse of its file (inspect re-parses for every class)."""
        if filename not in self._class_lines:
            lines: dict[str, int] = {}
            try:
                tree = ast.parse(Path(filename).read_text(encoding="utf-8"))
            except (OSError, SyntaxError, UnicodeDecodeError):
                tree = None

            attrs: dict[str, list[str]] = {}

            def visit(node: ast.AST, prefix: str) -> None:
                for child in ast.iter_child_nodes(node):
                    if isinstance(child, ast.ClassDef):
                        name = prefix + child.name
                        lines.setdefault(name, child.lineno)
                        attrs.setdefault(name, self_attributes(child))
                        visit(child, name + ".")

            if tree is not None:
                visit(tree, "")
            self._class_lines[filename] = lines
            self._class_attrs[filename] = attrs
        return self._class_lines[filename].get(qualname)

    def class_attrs(self, cls: type) -> list[str]:
        """The attributes the methods of a class and of its Triton bases set on ``self``
        (from their source): 3.9.0's JITFunction gets ``fn`` and ``hash`` from its base."""
        found: set[str] = set()
        for klass in cls.__mro__:
            if (klass.__module__ or "").split(".")[0] != "triton":
                continue
            filename = getattr(inspect.getmodule(klass), "__file__", None)
            if filename and self.class_line(filename, klass.__qualname__) is not None:
                found.update(self._class_attrs[filename].get(klass.__qualname__, []))
        return sorted(found)

    @staticmethod
    def deep(file: str | None) -> bool:
        if not file:
            return False
        return any(file == d or (d.endswith("/") and file.startswith(d)) for d in DEEP_FILES)

    @staticmethod
    def unwrap(obj: Any) -> Any:
        """The Python function behind a JITFunction (or an autotuned/heuristics wrapper)."""
        seen = 0
        while hasattr(obj, "fn") and not isinstance(obj, (types.FunctionType, type)) and seen < 5:
            obj = obj.fn
            seen += 1
        return obj

    def where(self, obj: Any) -> tuple[str | None, int | None]:
        target = self.unwrap(obj)
        if isinstance(target, type):
            module = inspect.getmodule(target)
            filename = getattr(module, "__file__", None)
            line = self.class_line(filename, target.__qualname__) if filename else None
            return self.relative(filename), line
        target = inspect.unwrap(target) if callable(target) else target
        code = getattr(target, "__code__", None)
        if code is None:
            return None, None
        return self.relative(code.co_filename), code.co_firstlineno

    # -- what a name is -------------------------------------------------------------------
    @staticmethod
    def kind_of(obj: Any) -> str:
        if isinstance(obj, type):
            return "class"
        if type(obj).__name__ in ("JITFunction", "InterpretedFunction"):
            return "jit"
        if type(obj).__name__ in ("Autotuner", "Heuristics"):
            return "autotuned"
        if getattr(obj, "__triton_builtin__", False):
            return "builtin"
        if callable(obj):
            return "function"
        return "value"

    def is_triton(self, obj: Any) -> bool:
        file, _ = self.where(obj)
        if file is not None:
            return True
        module = getattr(obj, "__module__", None) or ""
        return isinstance(module, str) and module.split(".")[0] == "triton"

    def key(self, obj: Any) -> str:
        """The definition's key: its defining module and qualified name."""
        existing = self._key_of.get(id(obj))
        if existing is not None:
            return existing
        target = self.unwrap(obj)
        base = f"{getattr(target, '__module__', '?')}.{getattr(target, '__qualname__', '?')}"
        key, n = base, 1
        while key in self.defs:
            n += 1
            key = f"{base}#{n}"
        self._key_of[id(obj)] = key
        return key

    def define(self, qualname: str, obj: Any) -> str:
        """Record ``obj``'s definition once; return its key."""
        if id(obj) in self._key_of:
            return self._key_of[id(obj)]
        key = self.key(obj)
        try:
            self.defs[key] = self.describe(qualname, obj)
        except Exception as e:  # one odd object must not lose the release's census
            self.defs[key] = {"kind": "uninspectable", "error": f"{type(e).__name__}: {e}"[:200]}
        return key

    def describe(self, qualname: str, obj: Any) -> dict[str, Any]:
        kind = self.kind_of(obj)
        file, line = self.where(obj)
        entry: dict[str, Any] = {"kind": kind, "file": file, "line": line}
        if kind == "class":
            entry["params"] = params_of(obj)
            # Members of C++ bindings (file libtriton.so) are the binding library's, not Triton's.
            if file is None or file.endswith(".py"):
                deep = self.deep(file)
                entry["members"] = self.members(obj, deep)
                if deep:
                    attrs = [a for a in self.class_attrs(obj) if a not in entry["members"]]
                    if attrs:
                        entry["attrs"] = attrs
            fields = self.fields(qualname, obj)
            if fields:
                entry["fields"] = fields
        else:
            entry["params"] = params_of(self.unwrap(obj))
        return entry

    def members(self, cls: type, deep: bool = False) -> dict[str, Any]:
        """Public methods and properties a class defines (not those of ``object``); ``deep``:
        also its single-underscore methods, the launch-path dunders and environment
        descriptors (see DEEP_FILES)."""
        out: dict[str, Any] = {}
        for name in sorted(dir(cls)):
            if name.startswith("_") and not (
                deep and (name in DEEP_DUNDERS or not name.startswith("__"))
            ):
                continue
            owner = next((c for c in cls.__mro__ if name in vars(c)), None)
            if owner is None or (owner.__module__ or "").split(".")[0] != "triton":
                continue  # inherited from object, Exception, Enum, dict: not Triton's API
            try:
                raw = inspect.getattr_static(cls, name)
            except AttributeError:
                continue
            if isinstance(raw, property):
                out[name] = "property"
            elif isinstance(raw, (staticmethod, classmethod)):
                out[name] = params_of(raw.__func__) or []
            elif callable(raw):
                out[name] = params_of(self.unwrap(raw)) or []
            elif isinstance(raw, _SIMPLE):
                if not name.startswith("_"):
                    out[name] = {"value": short_repr(raw)}
            elif deep and isinstance(getattr(raw, "key", None), str):
                # A knob: ``interpret = env_bool("TRITON_INTERPRET")`` (its class says how the
                # value is parsed; its default, what an unset variable gives).
                knob = {"knob": type(raw).__name__, "env": raw.key}
                if hasattr(raw, "default") and not callable(raw.default):
                    knob["default"] = short_repr(raw.default)
                out[name] = knob
        return out

    def fields(self, qualname: str, cls: type) -> dict[str, str]:
        """Instance fields and their defaults: dataclass defaults, or an instance built from
        INSTANCES (its public ``vars``)."""
        import dataclasses

        if qualname in INSTANCES:
            args, kwargs = INSTANCES[qualname]
            instance = cls(*args, **kwargs)
            return {k: short_repr(v) for k, v in sorted(vars(instance).items()) if k[:1] != "_"}
        if dataclasses.is_dataclass(cls):
            out = {}
            for f in dataclasses.fields(cls):
                if f.default is not dataclasses.MISSING:
                    out[f.name] = short_repr(f.default)
                elif f.default_factory is not dataclasses.MISSING:
                    out[f.name] = "<factory>"
                else:
                    out[f.name] = "<required>"
            return out
        return {}

    # -- modules --------------------------------------------------------------------------
    @staticmethod
    def public_names(module: types.ModuleType) -> tuple[list[str], set[str]]:
        """Every name ``__all__`` lists, and every other public attribute: code reaches
        ``triton.runtime.jit`` or ``tl.core`` whatever ``__all__`` says."""
        listed = {str(n) for n in getattr(module, "__all__", None) or ()}
        public = {n for n in vars(module) if not n.startswith("_")}
        return sorted(listed | public), listed

    def module_entry(self, modname: str, module: types.ModuleType) -> dict[str, Any]:
        names: dict[str, Any] = {}
        every, listed = self.public_names(module)
        imported = imported_names(getattr(module, "__file__", None))
        internal = modname in INTERNAL_MODULES
        for name in every:
            # A name __all__ lists is the module's API whatever it is; an unlisted one counts
            # only when Triton defines it (not ``from functools import wraps``, ``typing.Any``).
            explicit = name in listed
            if internal and not explicit and name in imported:
                # An internal module's imports (autotuner.py's ``from .jit import
                # JITFunction``) are not its names: the defining module records them.
                continue
            if not hasattr(module, name):
                names[name] = {"kind": "missing", "error": "listed in __all__, not defined"}
                continue
            obj = getattr(module, name)
            if isinstance(obj, types.ModuleType):
                # An unlisted submodule counts when ``import triton`` itself loads it: one the
                # census's own walk imported is an attribute only because the walk ran.
                # ``module`` bound to triton.language.extra.hip is a loop variable, not an API.
                own_name = obj.__name__.rsplit(".", 1)[-1] == name
                if explicit or (obj.__name__ in self.preloaded and own_name):
                    names[name] = {"kind": "module", "module": obj.__name__}
                continue
            if isinstance(obj, _SIMPLE) or not (callable(obj) or isinstance(obj, type)):
                # Unlisted where __all__ exists (a leftover loop variable), or a stray import
                # (typing.Any, a logger) where it does not: only a triton value still counts.
                stray = not explicit and (
                    bool(listed) or not isinstance(obj, _SIMPLE) or name in imported
                )
                if stray and not self.is_triton_value(obj):
                    continue
                names[name] = {
                    "kind": "value",
                    "type": type(obj).__name__,
                    "repr": short_repr(obj),
                }
                continue
            if not explicit and not self.is_triton(obj):
                continue
            names[name] = self.define(f"{modname}.{name}", obj)
        return {
            "status": "ok",
            "file": self.relative(getattr(module, "__file__", None)),
            "names": names,
        }

    @staticmethod
    def is_triton_value(obj: Any) -> bool:
        return (type(obj).__module__ or "").split(".")[0] == "triton"


def self_attributes(cls: ast.ClassDef) -> list[str]:
    """Names a class's own methods assign on their first parameter (``self.cache = {}``),
    sorted; dunder names left out."""
    found: set[str] = set()
    for method in cls.body:
        if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)) or not method.args.args:
            continue
        me = method.args.args[0].arg
        for node in ast.walk(method):
            targets: list[ast.AST] = []
            if isinstance(node, ast.Assign):
                targets = list(node.targets)
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
                targets = [node.target]
            for t in targets:
                for leaf in ast.walk(t):
                    if (
                        isinstance(leaf, ast.Attribute)
                        and isinstance(leaf.value, ast.Name)
                        and leaf.value.id == me
                        and isinstance(leaf.ctx, ast.Store)
                        and not leaf.attr.startswith("__")
                    ):
                        found.add(leaf.attr)
    return sorted(found)


def imported_names(filename: str | None) -> set[str]:
    """Names a module's top level binds by importing (``from typing import TYPE_CHECKING``):
    a plain value under such a name is someone else's, not this module's API."""
    if not filename or not filename.endswith(".py"):
        return set()
    try:
        tree = ast.parse(Path(filename).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return set()
    out: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.update((a.asname or a.name).split(".")[0] for a in node.names)
    return out


def import_status(modname: str) -> tuple[types.ModuleType | None, dict[str, Any] | None]:
    try:
        return importlib.import_module(modname), None
    except ModuleNotFoundError as e:
        status = "missing" if e.name and modname.startswith(e.name) else "import-error"
        return None, {"status": status, "error": f"{type(e).__name__}: {e}"[:300]}
    except BaseException as e:
        if isinstance(e, KeyboardInterrupt):
            raise
        return None, {"status": "import-error", "error": f"{type(e).__name__}: {e}"[:300]}


def module_names(package: types.ModuleType, depth: int | None) -> list[str]:
    """Public submodules of ``package`` down to ``depth`` levels (None: all), found from its
    files; ``walk_packages`` imports the subpackages it descends into, as importing them would."""
    path = getattr(package, "__path__", None)
    if not path:
        return []
    base = package.__name__.count(".")
    out = []
    for info in pkgutil.walk_packages(path, package.__name__ + ".", onerror=lambda _: None):
        if any(part.startswith("_") for part in info.name.split(".")):
            continue
        if depth is not None and info.name.count(".") - base > depth:
            continue
        out.append(info.name)
    return out


# -- environment variables ------------------------------------------------------------------
_ENV_CALLS = {"getenv", "getenv_bool", "get_env", "getenv_int"}
_ENV_METHODS = {"get", "setdefault", "pop"}
_ENV_WORDS = re.compile(r"environ|getenv|get_env|env_")


def _env_name(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        text = node.value
        if text and text.upper() == text and text.replace("_", "").isalnum() and text[0].isalpha():
            return text
    return None


def _is_environ(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or (
        isinstance(node, ast.Name) and node.id == "environ"
    )


def env_reads(tree: ast.AST) -> list[tuple[str, int, str | None]]:
    """(variable, line, knob) for every read of an environment variable in a module: calls to
    ``os.getenv``/``getenv*``, ``os.environ.get/[...]/setdefault/pop``, ``"X" in os.environ``,
    and the knobs tables' ``env_*("X")`` descriptors (the knob is ``class.attribute``)."""
    found: list[tuple[str, int, str | None]] = []
    knob_of: dict[int, str] = {}
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        for stmt in cls.body:
            target = value = None
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                target, value = stmt.target.id, stmt.value
            elif (
                isinstance(stmt, ast.Assign)
                and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)
            ):
                target, value = stmt.targets[0].id, stmt.value
            if target and isinstance(value, ast.Call):
                knob_of[id(value)] = f"{cls.name}.{target}"
    for node in ast.walk(tree):
        name = None
        if isinstance(node, ast.Call) and node.args:
            func = node.func
            fname = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if (
                fname in _ENV_CALLS
                or fname.startswith("env_")
                or (
                    fname in _ENV_METHODS
                    and isinstance(func, ast.Attribute)
                    and _is_environ(func.value)
                )
            ):
                name = _env_name(node.args[0])
        elif isinstance(node, ast.Subscript) and _is_environ(node.value):
            name = _env_name(node.slice)
        elif (
            isinstance(node, ast.Compare)
            and len(node.comparators) == 1
            and isinstance(node.ops[0], (ast.In, ast.NotIn))
            and _is_environ(node.comparators[0])
        ):
            name = _env_name(node.left)
        if name and isinstance(node, ast.expr):  # each branch above matched an expression
            found.append((name, node.lineno, knob_of.get(id(node))))
    return found


def environment(root: Path) -> dict[str, Any]:
    """Every environment variable the release's Python source reads, with where. A variable read
    only in private files (a path part starting with ``_``: Triton's own test runner and CI
    warm-up) is marked ``"private": true``."""
    env: dict[str, dict[str, Any]] = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        try:
            text = path.read_text(encoding="utf-8")
            # Parsing is most of the cost; a file with none of these words reads no variable.
            if not _ENV_WORDS.search(text):
                continue
            tree = ast.parse(text)
        except (SyntaxError, UnicodeDecodeError, OSError):
            continue
        for name, line, knob in env_reads(tree):
            entry = env.setdefault(name, {"sites": [], "count": 0, "private": True})
            entry["count"] += 1
            if not any(part.startswith("_") for part in Path(rel).parts):
                entry["private"] = False
            if len(entry["sites"]) < SITE_LIMIT:
                entry["sites"].append([rel, line])
            if knob:
                entry.setdefault("knobs", [])
                if knob not in entry["knobs"]:
                    entry["knobs"].append(knob)
    for entry in env.values():
        if not entry["private"]:
            del entry["private"]
    return dict(sorted(env.items()))


def census() -> dict[str, Any]:
    import triton

    root = Path(triton.__file__).resolve().parent
    inspector = Inspector(root, list(sys.modules))
    modules: dict[str, Any] = {}
    queue = [*ROOTS, *INTERNAL_MODULES]
    while queue:
        modname = queue.pop(0)
        if modname in modules:
            continue
        module, failure = import_status(modname)
        if module is None:
            modules[modname] = failure
            continue
        modules[modname] = inspector.module_entry(modname, module)
        for package, depth in WALKED.items():
            if modname == package:
                queue.extend(n for n in module_names(module, depth) if n not in modules)
    return {
        "format": FORMAT,
        "version": triton.__version__,
        "modules": dict(sorted(modules.items())),
        "defs": dict(sorted(inspector.defs.items())),
        "env": environment(root),
    }


def observe(ctx: Context) -> Observation:
    doc = census()
    by_status: dict[str, list[str]] = {}
    for modname, entry in doc["modules"].items():
        by_status.setdefault(entry["status"], []).append(modname)
    n_names = sum(len(e.get("names", {})) for e in doc["modules"].values())
    detail = (
        f"{len(by_status.get('ok', []))} modules, {n_names} names, {len(doc['defs'])} "
        f"definitions, {len(doc['env'])} environment variables"
    )
    if by_status.get("missing"):
        detail += f"; absent: {', '.join(sorted(by_status['missing']))}"
    if by_status.get("import-error"):
        detail += f"; not importable: {', '.join(sorted(by_status['import-error']))}"
    return Observation("recorded", detail, {"census": doc})


if __name__ == "__main__":  # python -m matrix.probes.api_surface: the census as JSON
    import json

    os.environ.setdefault("TRITON_INTERPRET", "1")
    json.dump(census(), sys.stdout, indent=1)
