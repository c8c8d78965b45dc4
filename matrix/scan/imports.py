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

    def __post_init__(self) -> None:
        self.nodes = list(ast.walk(self.tree))
        for node in self.nodes:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self.bindings[alias.asname] = alias.name
                    else:
                        top = alias.name.split(".")[0]
                        self.bindings[top] = top
            elif isinstance(node, ast.ImportFrom):
                base = absolute_module(self.name, self.is_package, node.level, node.module)
                for alias in node.names:
                    if alias.name == "*":
                        self.stars.append(base)
                    else:
                        self.bindings[alias.asname or alias.name] = f"{base}.{alias.name}"


class Project:
    """The scanned tree: resolves a dotted name through the tree's own re-exports.

    ``mypkg.triton_utils.tl`` -> ``triton.language`` when ``mypkg/triton_utils.py`` does
    ``import triton.language as tl``; ``triton.*`` names are Triton's and never resolved
    further (scanning Triton's own tree must not rename its public API)."""

    def __init__(self, modules: Iterable[SourceModule] = ()) -> None:
        self.modules: dict[str, SourceModule] = {}
        self._imports: dict[str, Imports] = {}
        for m in modules:
            self.modules.setdefault(m.name, m)

    def imports(self, module: SourceModule) -> Imports:
        """The module's resolved imports, built once per scan."""
        if module.path not in self._imports:
            self._imports[module.path] = Imports(module, self)
        return self._imports[module.path]

    def resolve(self, qualname: str, depth: int = 0) -> str:
        if depth > MAX_RESOLVE_DEPTH or qualname == "triton" or qualname.startswith("triton."):
            return qualname
        parts = qualname.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            mod = self.modules.get(".".join(parts[:cut]))
            if mod is None:
                continue
            first, rest = parts[cut], parts[cut + 1 :]
            target = mod.bindings.get(first)
            if target is None:
                for star in mod.stars:
                    resolved = self.resolve(f"{star}.{first}", depth + 1)
                    if resolved != f"{star}.{first}" or star.split(".")[0] == "triton":
                        target = resolved
                        break
            if target is None or target == qualname:
                return qualname
            return self.resolve(".".join([target, *rest]), depth + 1)
        return qualname


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
            self.names[name] = self.project.resolve(target)
        self.imports_triton = any(
            q == "triton" or q.startswith("triton.") for q in self.names.values()
        ) or bool(self.star_tl)

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
        if not isinstance(expr, ast.Name):
            return None
        base = self.names.get(expr.id)
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
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        q = self.qualname(target) or ""
        return q.startswith("triton.") and q.rsplit(".", 1)[-1] == "jit"


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

    def __post_init__(self) -> None:
        if not self.nodes:
            self.nodes = list(ast.walk(self.tree))
        self._in_kernel = {id(n) for fn in self.kernels for n in ast.walk(fn)}

    def in_kernel(self, node: ast.AST) -> bool:
        return id(node) in self._in_kernel


Matcher = Callable[[Rule, Module], Iterator[tuple[ast.AST, str]]]
