"""Name resolution: the dotted Triton name each local name stands for, across the tree."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from matrix.scan.rules import MAX_RESOLVE_DEPTH, TL, TL_MODULES, Rule

# ------------------------------------------------------------------------------ name resolution


def module_name(path: Path) -> tuple[str, bool]:
    """The dotted module name of a file, from the ``__init__.py`` files above it, and whether
    it is a package's ``__init__``. ``src/pkg/sub/x.py`` -> ``pkg.sub.x``."""
    path = path.resolve()
    is_package = path.name == "__init__.py"
    parts = [] if is_package else [path.stem]
    folder = path.parent
    while (folder / "__init__.py").is_file():
        parts.append(folder.name)
        folder = folder.parent
    return ".".join(reversed(parts)) or path.stem, is_package


ABOVE = 3  # folders above a module's own root searched for the package an import names
# Triton's names that a shim outside the tree hands out under the same name (Imports._reexported)
REEXPORTED = {"triton": "triton", "tl": "triton.language"}


def imported_files(modules: Iterable[SourceModule], limit: int = 200) -> list[Path]:
    """Files of the team's own code that ``modules`` import but that are not among them: for
    each module, the folder its top package sits in (``kernels/splitk.py`` is
    ``kernels.splitk``: two folders up) is where its absolute imports are looked for, as
    Python would find them with that folder on ``sys.path`` (``compat.descriptors`` ->
    ``compat/descriptors.py`` or ``compat/descriptors/__init__.py``), else in the first of the
    ``ABOVE`` folders above it that holds that package (a folder scanned inside its package
    without an ``__init__.py`` of its own: Triton-distributed's ``kernels/`` importing
    ``triton_dist`` from ``python/``, as the installed package resolves). Triton's names are
    never followed; at most ``limit`` files, one level deep (the imports of the given modules
    only)."""
    modules = list(modules)
    have = {Path(m.path).resolve() for m in modules}
    found: list[Path] = []
    for m in modules:
        depth = len(m.name.split(".")) - (0 if m.is_package else 1)
        path = Path(m.path).resolve()
        if depth >= len(path.parents):
            continue
        roots = path.parents[depth : depth + 1 + ABOVE]
        for target in [*m.bindings.values(), *m.stars]:
            parts = target.split(".")
            if parts[0] in ("triton", ""):
                continue
            root = next((r for r in roots if (r / parts[0] / "__init__.py").is_file()), None)
            if root is None:
                root = roots[0]
                if not (root / parts[0]).is_dir():
                    continue
            for cut in range(len(parts), 0, -1):  # the longest prefix that is a module
                base = root.joinpath(*parts[:cut])
                # a package before a module of the same name, as Python's finder looks
                file = next((f for f in (base / "__init__.py", base.with_suffix(".py"))
                             if f.is_file()), None)  # fmt: skip
                if file is None:
                    continue
                if file.resolve() not in have:
                    have.add(file.resolve())
                    found.append(file)
                    if len(found) >= limit:
                        return found
                break
    return found


def absolute_module(modname: str, is_package: bool, level: int, module: str | None) -> str:
    """The absolute module a relative ``from ... import`` in ``modname`` names."""
    if level == 0:
        return module or ""
    package = modname.split(".") if is_package else modname.split(".")[:-1]
    base = package[: len(package) - (level - 1)] if level > 1 else package
    return ".".join([*base, module] if module else base)


@dataclass
class SourceModule:
    """One parsed file of the scanned tree and what its module-level names refer to."""

    path: str
    name: str
    is_package: bool
    source: str
    tree: ast.Module
    bindings: dict[str, str] = field(default_factory=dict)  # local name -> absolute qualname
    stars: list[str] = field(default_factory=list)  # modules imported with `*`
    nodes: list[ast.AST] = field(default_factory=list)
    # Names bound in a branch (if/else, try/except): (first line, last line, target) of the
    # branch, so that a use inside it gets that branch's target; elsewhere the unconditional
    # binding wins, else the first branch's (the try body, the if body: the primary path).
    branches: dict[str, list[tuple[int, int, str]]] = field(default_factory=dict)
    # module-level `x = a.b.c` (an alias of a dotted name), resolved by Imports
    aliases: dict[str, ast.expr] = field(default_factory=dict)
    # the same, bound in a branch: (first line, last line, value) per branch, so that a use in
    # the branch gets that branch's alias (``triton_tanh = tl.math.tanh`` under ``else:``)
    alias_branches: dict[str, list[tuple[int, int, ast.expr]]] = field(default_factory=dict)
    # module-level names bound to something computed (``triton_jit = try_decorate(lambda:
    # triton.jit)``) and module-level functions: what may wrap ``triton.jit`` (Project.jit_wrappers)
    made: dict[str, ast.AST] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.nodes = list(ast.walk(self.tree))
        for stmt in self.tree.body:
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
                self.made.setdefault(stmt.name, stmt)
        unconditional: set[str] = set()
        for node, span in _binding_statements(self.tree.body, None):
            if span is not None and isinstance(node, ast.Assign) and len(node.targets) == 1:
                target_node = node.targets[0]
                if isinstance(target_node, ast.Name) and isinstance(
                    node.value, (ast.Attribute, ast.Name)
                ):
                    spans = self.alias_branches.setdefault(target_node.id, [])
                    spans.append((*span, node.value))
            for name, target in self._targets(node):
                if span is None:
                    self.bindings[name] = target
                    unconditional.add(name)
                    continue
                self.branches.setdefault(name, []).append((*span, target))
                if name not in unconditional:
                    self.bindings.setdefault(name, target)
        for inner in self.nodes:  # imports inside functions: as before, file-wide
            if isinstance(inner, (ast.Import, ast.ImportFrom)):
                for name, target in self._targets(inner):
                    self.bindings.setdefault(name, target)

    def _targets(self, node: ast.stmt) -> list[tuple[str, str]]:
        if isinstance(node, ast.Import):
            return [
                (a.asname, a.name) if a.asname else (a.name.split(".")[0], a.name.split(".")[0])
                for a in node.names
            ]
        if isinstance(node, ast.ImportFrom):
            base = absolute_module(self.name, self.is_package, node.level, node.module)
            out = []
            for alias in node.names:
                if alias.name == "*":
                    if base not in self.stars:
                        self.stars.append(base)
                else:
                    out.append((alias.asname or alias.name, f"{base}.{alias.name}"))
            return out
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if not isinstance(target, ast.Name):
                return []
            module = _import_module_literal(node.value)
            if module is not None:  # tl = importlib.import_module("triton.language")
                return [(target.id, module)]
            if isinstance(node.value, (ast.Attribute, ast.Name)):
                self.aliases.setdefault(target.id, node.value)
            else:
                self.made.setdefault(target.id, node.value)
        return []


def _names_jit(node: ast.AST, imports: Imports, wrappers: set[str]) -> bool:
    """Whether ``node`` (a function's body, an assigned value) names ``triton.jit`` or one of
    ``wrappers``."""
    body = node.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) else [node]
    for stmt in body:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Name | ast.Attribute):
                q = imports.qualname(n) or imports.own(n)
                if q in wrappers or is_triton_jit(q):
                    return True
    return False


def is_triton_jit(qualname: str) -> bool:
    """``triton.jit`` in any of its homes (``triton.runtime.jit.jit``, gluon's ``jit``)."""
    return qualname.startswith("triton.") and qualname.rsplit(".", 1)[-1] == "jit"


def _import_module_literal(expr: ast.expr) -> str | None:
    """``importlib.import_module("x.y")`` / ``import_module("x.y")`` -> ``"x.y"``."""
    if not (isinstance(expr, ast.Call) and expr.args and not expr.keywords):
        return None
    func = expr.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    arg = expr.args[0]
    if name == "import_module" and isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    return None


def _binding_statements(
    body: list[ast.stmt], span: tuple[int, int] | None
) -> Iterator[tuple[ast.stmt, tuple[int, int] | None]]:
    """Module-level statements that bind names, with the line span of the innermost branch
    they sit in (None: unconditional)."""
    for stmt in body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom, ast.Assign)):
            yield stmt, span
        elif isinstance(stmt, ast.If):
            for part in (stmt.body, stmt.orelse):
                if part:
                    yield from _binding_statements(part, _span(part))
        elif isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
            parts = [stmt.body, *(h.body for h in stmt.handlers), stmt.orelse]  # type: ignore[attr-defined]
            for part in parts:
                if part:
                    yield from _binding_statements(part, _span(part))
            if stmt.finalbody:  # type: ignore[attr-defined]
                yield from _binding_statements(stmt.finalbody, span)  # type: ignore[attr-defined]
        elif isinstance(stmt, ast.With):
            yield from _binding_statements(stmt.body, span)


def _span(body: list[ast.stmt]) -> tuple[int, int]:
    return body[0].lineno, max(getattr(s, "end_lineno", s.lineno) or s.lineno for s in body)


def getattr_literal(expr: ast.expr) -> tuple[ast.expr, str] | None:
    """``getattr(obj, "name")`` (two arguments, a literal name) -> (obj, "name")."""
    if (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Name)
        and expr.func.id == "getattr"
        and len(expr.args) == 2
        and not expr.keywords
        and isinstance(expr.args[1], ast.Constant)
        and isinstance(expr.args[1].value, str)
    ):
        return expr.args[0], expr.args[1].value
    return None


class Project:
    """The scanned tree: resolves a dotted name through the tree's own re-exports.

    ``mypkg.triton_utils.tl`` -> ``triton.language`` when ``mypkg/triton_utils.py`` does
    ``import triton.language as tl``; ``triton.*`` names are Triton's and never resolved
    further (scanning Triton's own tree must not rename its public API)."""

    def __init__(self, modules: Iterable[SourceModule] = (), tl_names: Iterable[str] = ()) -> None:
        # the names `from triton.language import *` binds (the census's, the rules' calls)
        self.tl_names = frozenset(tl_names)
        self.modules: dict[str, SourceModule] = {}
        self._imports: dict[str, Imports] = {}
        self._resolved: dict[str, str] = {}  # resolve()'s answers, per scan
        self._starred: dict[tuple[str, str], str | None] = {}  # _through_stars()'s
        self._jit_wrappers: frozenset[str] | None = None
        self._tops: frozenset[str] | None = None
        for m in modules:
            self.modules.setdefault(m.name, m)
        self._script_style_imports()

    def _script_style_imports(self) -> None:
        """``from utils import f`` in ``6_gemm_fp8/quantize_fp8.py`` beside ``utils.py``: where
        no module of the tree is named ``utils`` at the top but the importing module's own
        package has one, the import is of that sibling, as Python finds it when the folder is
        run as scripts (its folder first on ``sys.path``; triton-gym, lecture code). A top-level
        module of that name wins, as Python's package import would."""
        tops = {n.split(".")[0] for n in self.modules}
        for m in self.modules.values():
            package = m.name if m.is_package else m.name.rpartition(".")[0]
            if not package:
                continue

            def sibling(target: str, package: str = package) -> str:
                first = target.split(".")[0]
                if (
                    first in tops
                    or first in ("", "triton")
                    or f"{package}.{first}" not in self.modules
                ):
                    return target
                return f"{package}.{target}"

            m.bindings = {k: sibling(v) for k, v in m.bindings.items()}
            m.stars = [sibling(v) for v in m.stars]

    def jit_wrappers(self) -> frozenset[str]:
        """The qualnames of the tree's own ``triton.jit`` wrappers: a module-level name bound to
        an expression that names ``triton.jit`` or another wrapper (Fast-LLM's ``triton_jit =
        try_decorate(lambda: triton.jit)``, ``jit = partial(triton.jit, debug=True)``), or a
        module-level function whose body does (``def my_jit(fn): return triton.jit(fn)``). A
        function they decorate, called or not (``@triton_jit()``), is a kernel."""
        if self._jit_wrappers is None:
            self._jit_wrappers = frozenset()  # (asked again while computing: none yet)
            candidates = [
                (f"{m.name}.{name}", m, node)
                for m in self.modules.values()
                for name, node in m.made.items()
            ]
            found: set[str] = set()
            changed = True
            while changed:
                changed = False
                for qualname, m, node in candidates:
                    if qualname not in found and _names_jit(node, self.imports(m), found):
                        found.add(qualname)
                        changed = True
            self._jit_wrappers = frozenset(found)
        return self._jit_wrappers

    def tops(self) -> frozenset[str]:
        """The top-level package names of the tree's modules."""
        if self._tops is None:
            self._tops = frozenset(n.split(".")[0] for n in self.modules)
        return self._tops

    def imports(self, module: SourceModule) -> Imports:
        """The module's resolved imports, built once per scan."""
        if module.path not in self._imports:
            self._imports[module.path] = Imports(module, self)
        return self._imports[module.path]

    def resolve(self, qualname: str, depth: int = 0) -> str:
        if depth > MAX_RESOLVE_DEPTH or qualname == "triton" or qualname.startswith("triton."):
            return qualname
        if qualname in self._resolved:  # (a chain past MAX_RESOLVE_DEPTH: cut where first met)
            return self._resolved[qualname]
        got = qualname
        parts = qualname.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            mod = self.modules.get(".".join(parts[:cut]))
            if mod is None:
                continue
            first, rest = parts[cut], parts[cut + 1 :]
            target = mod.bindings.get(first) or self._through_stars(mod, first, depth)
            if target is not None and target != qualname:
                got = self.resolve(".".join([target, *rest]), depth + 1)
            break
        self._resolved[qualname] = got
        return got

    def _through_stars(self, mod: SourceModule, first: str, depth: int) -> str | None:
        """What ``first`` is where ``mod`` has it only from a ``from X import *``: the first of
        its star modules, depth first, that binds it (or a Triton module's name). Each module
        is searched once: a package whose files star-import each other (ROCm's aiter) made
        the old recursion over every path exponential (minutes on one folder)."""
        key = (mod.name, first)
        if key not in self._starred:
            self._starred[key] = None  # a star cycle back here binds nothing new
            self._starred[key] = self._search_stars(mod, first, depth)
        return self._starred[key]

    def _search_stars(self, mod: SourceModule, first: str, depth: int) -> str | None:
        stack, seen = list(reversed(mod.stars)), {mod.name}
        while stack:
            star = stack.pop()
            if star in seen:
                continue
            seen.add(star)
            if star.split(".")[0] == "triton":
                return f"{star}.{first}"
            src = self.modules.get(star)
            if src is None:  # not a module of the tree: perhaps a name one of them binds
                resolved = self.resolve(f"{star}.{first}", depth + 1)
                if resolved != f"{star}.{first}":
                    return resolved
                continue
            if first in src.bindings:
                return self.resolve(src.bindings[first], depth + 1)
            stack.extend(reversed(src.stars))
        return None


class Imports:
    """What each name of one file refers to, through its imports and the scanned tree.

    ``import triton.language as tl`` binds ``tl`` to ``triton.language``; ``from triton import
    language as tl`` too; ``from triton.language import dot as d`` binds ``d`` to
    ``triton.language.dot``; plain ``import triton.language`` binds ``triton``;
    ``from .utils import tl`` binds ``tl`` to whatever ``utils`` bound it to.
    """

    def __init__(self, module: SourceModule | ast.AST, project: Project | None = None) -> None:
        if not isinstance(module, SourceModule):  # a bare tree (tests, the gate's old callers)
            module = SourceModule("<ast>", "__scan__", False, "", module)  # type: ignore[arg-type]
        self.project = project or Project([module])
        self.module_name = module.name
        self.made = module.made
        self._memo: dict[int, tuple[str | None, ast.expr]] = {}
        self.names: dict[str, str] = {}
        for star in module.stars:
            src = self.project.modules.get(star)
            if src is not None:
                self.names.update({k: v for k, v in src.bindings.items() if not k.startswith("_")})
            elif star.split(".")[0] == "triton" and star in TL_MODULES:
                self.names["tl"] = star  # `from triton.language import *`: its names, see below
        self.star_tl = any(s in TL_MODULES for s in module.stars)
        for stmt in getattr(module.tree, "body", []):
            # the file's own classes and functions, so that a subclass found elsewhere in the
            # tree is recognised where it is used here
            if isinstance(stmt, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                self.names[stmt.name] = f"{module.name}.{stmt.name}"
        for name, target in module.bindings.items():
            self.names[name] = self._reexported(name, self.project.resolve(target))
        self.branches = {
            name: [(a, b, self.project.resolve(t)) for a, b, t in spans]
            for name, spans in module.branches.items()
            if len({t for _, _, t in spans}) > 1 or name not in module.bindings
        }
        self.star_names: frozenset[str] = frozenset()
        if self.star_tl:
            self.star_names = frozenset(self.project.tl_names)
        for name, expr in module.aliases.items():
            if name in self.names:
                continue
            q = self._qualname(expr)
            if q is not None and (q == "triton" or q.startswith("triton.")):
                self.names[name] = q  # _bench = triton.testing.do_bench
        for name, alias_spans in module.alias_branches.items():
            if name in module.bindings:
                continue  # an import binds it too: the import's branches decide
            resolved = [(a, b, self._qualname(expr)) for a, b, expr in alias_spans]
            kept = [(a, b, q) for a, b, q in resolved if q is not None and q.startswith("triton")]
            if len({q for _, _, q in kept}) > 1:
                self.branches[name] = kept
        self.imports_triton = any(
            q == "triton" or q.startswith("triton.") for q in self.names.values()
        ) or bool(self.star_tl)

    def _reexported(self, name: str, target: str) -> str:
        """``from vllm.triton_utils import tl, triton``: a module outside the tree, named for
        Triton (a path part holding ``triton``), that hands out ``triton`` or ``tl`` under those
        very names re-exports Triton (a shim that makes Triton optional), by the same
        convention that reads an unbound ``tl`` as ``triton.language``; its kernels are
        ``@triton.jit`` kernels (NeMo-RL's fp8 kernels were read as none: SAFE on 0 kernels).
        Not ``from tvm import tl`` (TileLang) nor ``from jax.experimental.pallas import
        triton`` (a Pallas backend): their modules are not named for Triton."""
        module, _, last = target.rpartition(".")
        if last != name or not module or module.split(".")[0] == "triton":
            return target
        if not any("triton" in part for part in module.split(".")):
            return target  # `from tvm import tl` (TileLang), `from jax...pallas import triton`
        if module in self.project.modules or module.split(".")[0] in self.project.tops():
            return target  # the tree's own module: resolved through its bindings, or not
        return REEXPORTED.get(name, target)

    def qualname(self, expr: ast.expr) -> str | None:
        """The dotted name ``expr`` refers to (``tl.dot`` -> ``triton.language.dot``), if known."""
        key = id(expr)
        if key not in self._memo:  # trees outlive the scan of their file: ids are stable
            self._memo[key] = (self._qualname(expr), expr)
        return self._memo[key][0]

    def _qualname(self, expr: ast.expr) -> str | None:
        parts: list[str] = []
        while isinstance(expr, ast.Attribute):
            parts.append(expr.attr)
            expr = expr.value
        attr = getattr_literal(expr)
        if attr is not None:  # getattr(tl, "advance")
            inner = self.qualname(attr[0])
            if inner is None:
                return None
            return self.project.resolve(".".join([inner, attr[1], *reversed(parts)]))
        if not isinstance(expr, ast.Name):
            return None
        base = self.names.get(expr.id)
        for first, last, target in self.branches.get(expr.id, ()):
            if first <= getattr(expr, "lineno", 0) <= last:
                base = target  # a use inside the branch that bound it: that branch's target
                break
        if base is None and expr.id in self.star_names:
            base = f"{TL}.{expr.id}"  # from triton.language import *: a name it has
        if base is None:
            # A file that imports triton but uses `tl` unbound (a kernel fragment pasted in
            # without its import) still means triton.language by the universal convention.
            if expr.id != "tl" or not self.imports_triton:
                return None
            base = TL
        return self.project.resolve(".".join([base, *reversed(parts)]))

    def tl_name(self, expr: ast.expr) -> str | None:
        """``dot`` for any spelling of ``triton.language.dot``; None for anything else."""
        q = self.qualname(expr)
        if q is None:
            return None
        for mod in TL_MODULES:
            if q.startswith(mod + ".") and "." not in q[len(mod) + 1 :]:
                return q[len(mod) + 1 :]
        return None

    def is_jit(self, decorator: ast.expr) -> bool:
        """``@triton.jit`` in any spelling, or a wrapper of it (``Project.jit_wrappers``),
        called or not."""
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        q = self.qualname(target) or self.own(target)
        return is_triton_jit(q) or (bool(q) and q in self.project.jit_wrappers())

    def own(self, expr: ast.expr) -> str:
        """``module.name`` for a bare name the file binds to something computed (``made``),
        which ``qualname`` leaves unknown; "" otherwise."""
        if isinstance(expr, ast.Name) and expr.id in self.made:
            return f"{self.module_name}.{expr.id}"
        return ""


# ------------------------------------------------------------------------------------ matchers


@dataclass
class Module:
    """One parsed file: its tree, its imports, its ``@triton.jit`` functions, and the names of
    the scanned tree that carry a name rule's hazard (``carriers[rule id]``)."""

    tree: ast.Module
    imports: Imports
    kernels: list[ast.FunctionDef | ast.AsyncFunctionDef]
    carriers: dict[str, dict[str, str]] = field(default_factory=dict)
    nodes: list[ast.AST] = field(default_factory=list)
    # name rules: the dotted name each finding's node refers to (for census_decides)
    qualnames: dict[int, str] = field(default_factory=dict)
    # what a matcher says of a finding's node beyond its rule's message (the "{detail}")
    details: dict[int, str] = field(default_factory=dict)
    source: SourceModule | None = None  # the parsed file (its name, for relative imports)

    def __post_init__(self) -> None:
        if not self.nodes:
            self.nodes = list(ast.walk(self.tree))
        self._in_kernel = {id(n) for fn in self.kernels for n in ast.walk(fn)}

    def in_kernel(self, node: ast.AST) -> bool:
        return id(node) in self._in_kernel


Matcher = Callable[[Rule, Module], Iterator[tuple[ast.AST, str]]]
