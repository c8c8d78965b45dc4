"""Find Triton upgrade hazards in a team's kernel sources, by reading them with ``ast``.

Why ``ast`` and not regular expressions: a hazard depends on how a name was imported
(``import triton.language as tl``, ``from mypkg.triton_utils import tl``, ``from .. import
language as tl``), on which arguments a call passes (by keyword or by position), and on where a
value came from; text patterns get all three wrong.

Two sources of findings:

- hand-written rules (``matrix/data/scan_rules.toml``) for what no API listing shows: semantics
  (block pointers, precision defaults, module globals, driver internals, ...);
- the API census (the ``api_surface`` probe, read through ``matrix.analyze.census``): any
  ``triton.*`` name, keyword or positional argument that a recorded release lacks, and any
  default the code relies on (argument omitted) that differs between releases, with no rule
  written for the name.
  With a census each file and each finding also gets a *works-on* range.

Names are resolved across the scanned tree: re-exports (``from mypkg.triton_utils import tl``),
relative imports and ``from X import *`` are followed; a project class that subclasses a
matched internal (``class LibTuner(triton.runtime.Autotuner)``) and module-level functions that
use it carry the finding to the files that use them.

    python -m matrix.scan src/ --results reports/raw --candidate 3.9.0

Exit status: 0 nothing breaks or changes the candidate; 1 a finding of severity ``breaking`` or
``change`` that affects the candidate (or whose effect is unknown: it fails closed); advisory
findings and findings that do not affect the candidate never fail; 2 bad arguments, a missing
path, a malformed rules or baseline file. Files that cannot be decoded or parsed (newer syntax)
are reported and skipped. This module must not import triton, torch or numpy.
"""

from __future__ import annotations

import argparse
import ast
import fnmatch
import io
import json
import re
import sys
import time
import tokenize
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from matrix import cli
from matrix.analyze.census import (
    Census,
    CensusError,
    censuses_from_runs,
    omitted_defaults,
    works_on,
)
from matrix.core import DATA_DIR, Column, DataFileError, Release, ReleaseError, load_toml
from matrix.measure.results import Run, SchemaError, read_runs

RULES_PATH = DATA_DIR / "scan_rules.toml"

TL = "triton.language"
# Modules whose attributes are the same triton.language builtins.
TL_MODULES = (TL, "triton.language.core")
SCOPES = ("anywhere", "jit")
SEVERITIES = ("breaking", "change", "advisory")
# What a finding means for the chosen candidate.
AFFECTS, NOT_AFFECTED, UNKNOWN = "affects", "does-not-affect", "unknown"
# Folders nobody means to scan.
DEFAULT_EXCLUDE = (".*", "__pycache__", "node_modules", "venv", "build", "dist")
MAX_RESOLVE_DEPTH = 12


class RuleError(DataFileError):
    """The rules file is malformed; the message names the file, the rule and the field."""

    def __init__(self, message: str) -> None:
        ValueError.__init__(self, message)


class BaselineError(ValueError):
    """The baseline file is malformed; the message names the file and what was expected."""


@dataclass(frozen=True)
class ArgSpec:
    """An argument of a call: given by ``keyword`` or at 0-based ``position``."""

    keyword: str
    position: int | None = None

    def given(self, call: ast.Call) -> bool:
        if any(k.arg == self.keyword for k in call.keywords):
            return True
        positional = _positional_count(call)
        return self.position is not None and positional is not None and positional > self.position

    def maybe_given(self, call: ast.Call) -> bool:
        """True if the argument is, or may be, given (a ``*args``/``**kwargs`` may hold it)."""
        if self.given(call):
            return True
        if any(k.arg is None for k in call.keywords):
            return True
        return self.position is not None and _positional_count(call) is None

    def value(self, call: ast.Call) -> ast.expr | None:
        for k in call.keywords:
            if k.arg == self.keyword:
                return k.value
        count = _positional_count(call)
        if self.position is not None and count is not None and count > self.position:
            return call.args[self.position]
        return None


@dataclass(frozen=True)
class SameDefault:
    """A census default change that gives the same behaviour (census-default rules, data in
    the rules file): ``param`` of any of ``names`` went from a value to a sentinel that
    resolves to that value, unless one of ``unless`` is passed (then the finding stays)."""

    names: tuple[str, ...]
    param: str
    reason: str
    unless: tuple[ArgSpec, ...] = ()

    def covers(self, qualname: str, param: str, keywords: Sequence[str], positional: int) -> bool:
        if qualname not in self.names or param != self.param:
            return False
        return not any(
            a.keyword in keywords or (a.position is not None and positional > a.position)
            for a in self.unless
        )


@dataclass(frozen=True)
class Rule:
    """One hazard: what it matches, how bad it is, the probe that tells which releases it
    concerns, and the fix."""

    id: str
    name: str
    message: str
    fix: str
    scope: str
    kind: str
    severity: str = "change"
    calls: tuple[str, ...] = ()
    methods: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()
    value: Any = None
    any_present: tuple[ArgSpec, ...] = ()
    all_present: tuple[ArgSpec, ...] = ()
    absent: tuple[ArgSpec, ...] = ()
    max_positional: int | None = None
    probe: str | None = None
    concerns: tuple[str, ...] = ()
    breaking: tuple[str, ...] = ()
    census_decides: bool = False
    same_default: tuple[SameDefault, ...] = ()

    def __str__(self) -> str:
        return self.id

    @property
    def census(self) -> bool:
        return self.kind.startswith("census-")


@dataclass
class Finding:
    """One use of a hazard in one file. ``effect`` says what it means for the candidate."""

    path: str
    line: int
    col: int  # 1-based
    rule: Rule
    snippet: str
    detail: str = ""  # census findings: the releases concerned
    effect: str = UNKNOWN
    note: str = ""  # why it does (not) affect the candidate
    works_on: tuple[str, str] | None = None
    end_line: int = 0
    source_line: str = ""
    census: Any = None  # census findings: the CensusProblem behind it
    also: list[int] = field(default_factory=list)  # census findings: the same use on these lines

    @property
    def message(self) -> str:
        text = self.rule.message.replace("{call}", self.snippet).replace("{detail}", self.detail)
        if self.also:
            shown = ", ".join(map(str, self.also[:5])) + (", ..." if len(self.also) > 5 else "")
            text += f" (also line{'s' if len(self.also) > 1 else ''} {shown})"
        return text

    @property
    def fails(self) -> bool:
        """Whether this finding makes the scan exit 1 (breaks or changes the candidate)."""
        return self.rule.severity != "advisory" and self.effect != NOT_AFFECTED

    def text(self, note: str = "") -> str:
        where = f"{self.path}:{self.line}:{self.col}"
        extra = f" [{note}]" if note else ""
        return f"{where}: {self.rule.id} {self.message}{extra}; fix: {self.rule.fix}"

    def key(self) -> tuple[str, str, str]:
        """What a baseline file remembers: stable under edits that only move lines."""
        return (Path(self.path).as_posix(), self.rule.id, self.source_line.strip())

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "line": self.line,
            "col": self.col,
            "rule": self.rule.id,
            "name": self.rule.name,
            "severity": self.rule.severity,
            "message": self.message,
            "fix": self.rule.fix,
            "probe": self.rule.probe,
            "effect": self.effect,
            "note": self.note,
            "works_on": list(self.works_on) if self.works_on else None,
            "also_lines": self.also,
        }


@dataclass
class ScanReport:
    """Findings over a set of paths, plus the files skipped (undecodable or unparsable).

    ``errors`` stays empty: a file that cannot be read is skipped and listed in ``skipped``,
    never a reason to stop (the gate reads ``errors`` as undecidable)."""

    findings: list[Finding] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    suppressed: int = 0  # by `a noqa comment`
    known: int = 0  # by the baseline file
    works_on: dict[str, tuple[str, str] | None] = field(default_factory=dict)
    releases: list[str] = field(default_factory=list)  # the census's, oldest first
    uses: list[ApiUse] = field(default_factory=list)  # for matrix.gate.api


# --------------------------------------------------------------------------------------- rules


def _tables(raw: Any, where: str, keys: set[str], shape: str) -> list[tuple[str, dict]]:
    """``[(where[i], table)]`` for a list of tables with only ``keys``; None is no tables."""
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(item, dict) for item in raw):
        raise RuleError(f"{where}: expected a list of {shape}, got {raw!r}")
    for i, item in enumerate(raw):
        if set(item) - keys:
            raise RuleError(f"{where}[{i}]: unknown keys {sorted(set(item) - keys)}")
    return [(f"{where}[{i}]", item) for i, item in enumerate(raw)]


def _argspecs(raw: Any, where: str) -> tuple[ArgSpec, ...]:
    specs = []
    for at, item in _tables(raw, where, {"keyword", "position"}, "{keyword=..., position=...}"):
        if not isinstance(item.get("keyword"), str):
            raise RuleError(f'{at}: expected {{keyword = "name"}}, got {item!r}')
        pos = item.get("position")
        if pos is not None and (not isinstance(pos, int) or pos < 0):
            raise RuleError(f"{at}.position: expected an integer >= 0, got {pos!r}")
        specs.append(ArgSpec(item["keyword"], pos))
    return tuple(specs)


def _same_defaults(raw: Any, where: str) -> tuple[SameDefault, ...]:
    out = []
    keys = {"names", "param", "reason", "unless"}
    for at, item in _tables(raw, where, keys, "[[rule.same_default]] tables"):
        for key in ("param", "reason"):
            if not isinstance(item.get(key), str) or not item[key]:
                raise RuleError(f"{at}.{key}: expected a non-empty string")
        names = _strings(item.get("names"), f"{at}.names")
        if not names:
            raise RuleError(f"{at}.names: expected at least one qualified name")
        unless = _argspecs(item.get("unless"), f"{at}.unless")
        out.append(SameDefault(names, item["param"], item["reason"], unless))
    return tuple(out)


def _strings(raw: Any, where: str) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(s, str) for s in raw):
        raise RuleError(f"{where}: expected a list of strings, got {raw!r}")
    return tuple(raw)


MATCH_KEYS = {
    "kind",
    "calls",
    "methods",
    "names",
    "keywords",
    "value",
    "any_present",
    "all_present",
    "absent",
    "max_positional",
}


# The lists of names a rule's match may give, and which kind of rule needs which (one at least).
NAME_LISTS = ("calls", "methods", "names", "keywords")
NEEDS_NAMES = {
    "call": (("calls", "methods"), "call name"),
    "name": (("names",), "name"),
    "keyword": (("keywords",), "keyword"),
}


def load_rules(path: str | Path = RULES_PATH) -> list[Rule]:
    """Read and validate the rules file; raises RuleError naming the rule and field at fault."""
    doc = load_toml(path)
    raw_rules = doc.get("rule")
    if not isinstance(raw_rules, list) or not raw_rules:
        raise RuleError(f"{path}: expected at least one [[rule]] table")
    rules: list[Rule] = []
    for i, raw in enumerate(raw_rules):
        where = f"{path}: rule[{i}] ({raw.get('id', '?')})"
        for key in ("id", "name", "message", "fix", "scope"):
            if not isinstance(raw.get(key), str) or not raw[key]:
                raise RuleError(f"{where}.{key}: expected a non-empty string, got {raw.get(key)!r}")
        if not re.fullmatch(r"TRI\d{3}", raw["id"]):
            raise RuleError(f"{where}.id: expected TRI followed by three digits, got {raw['id']!r}")
        if raw["scope"] not in SCOPES:
            raise RuleError(f"{where}.scope: expected one of {SCOPES}, got {raw['scope']!r}")
        severity = raw.get("severity", "change")
        if severity not in SEVERITIES:
            raise RuleError(f"{where}.severity: expected one of {SEVERITIES}, got {severity!r}")
        match = raw.get("match")
        if not isinstance(match, dict):
            raise RuleError(f"{where}.match: expected a [rule.match] table")
        kind = match.get("kind")
        if kind not in MATCHERS:
            raise RuleError(f"{where}.match.kind: expected one of {sorted(MATCHERS)}, got {kind!r}")
        if set(match) - MATCH_KEYS:
            raise RuleError(f"{where}.match: unknown keys {sorted(set(match) - MATCH_KEYS)}")
        lists = {key: _strings(match.get(key), f"{where}.match.{key}") for key in NAME_LISTS}
        if kind in NEEDS_NAMES:
            keys, what = NEEDS_NAMES[kind]
            if not any(lists[key] for key in keys):
                raise RuleError(f"{where}.match.{keys[0]}: a {kind} rule needs at least one {what}")
        max_pos = match.get("max_positional")
        if max_pos is not None and (not isinstance(max_pos, int) or max_pos < 0):
            raise RuleError(f"{where}.match.max_positional: expected an integer >= 0")
        probe = raw.get("probe")
        if probe is not None and not isinstance(probe, str):
            raise RuleError(f"{where}.probe: expected a probe name, got {probe!r}")
        rule = Rule(
            id=raw["id"],
            name=raw["name"],
            message=raw["message"],
            fix=raw["fix"],
            scope=raw["scope"],
            kind=kind,
            severity=severity,
            **lists,
            value=match.get("value"),
            any_present=_argspecs(match.get("any_present"), f"{where}.match.any_present"),
            all_present=_argspecs(match.get("all_present"), f"{where}.match.all_present"),
            absent=_argspecs(match.get("absent"), f"{where}.match.absent"),
            max_positional=max_pos,
            probe=probe,
            concerns=_strings(raw.get("concerns"), f"{where}.concerns"),
            breaking=_strings(raw.get("breaking"), f"{where}.breaking"),
            census_decides=raw.get("census_decides", False),
            same_default=_same_defaults(raw.get("same_default"), f"{where}.same_default"),
        )
        if rule.same_default and kind != "census-default":
            raise RuleError(f"{where}.same_default: only a census-default rule takes it")
        if not isinstance(rule.census_decides, bool):
            raise RuleError(f"{where}.census_decides: expected true or false")
        if (rule.concerns or rule.breaking) and rule.probe is None:
            raise RuleError(f"{where}: concerns/breaking need a probe")
        rules.append(rule)
    ids = [r.id for r in rules]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise RuleError(f"{path}: rule ids must be unique, repeated: {dupes}")
    return rules


def select_rules(
    rules: Sequence[Rule], select: Sequence[str] = (), ignore: Sequence[str] = ()
) -> list[Rule]:
    """Rules whose id starts with one of ``select`` (all when empty) and none of ``ignore``.

    Raises RuleError for a code that matches no rule (a typo would silently select nothing)."""
    for code in (*select, *ignore):
        if not any(r.id.startswith(code) for r in rules):
            raise RuleError(f"--select/--ignore {code!r}: no rule id starts with it")
    return [
        r
        for r in rules
        if (not select or any(r.id.startswith(c) for c in select))
        and not any(r.id.startswith(c) for c in ignore)
    ]


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


def _positional_count(call: ast.Call) -> int | None:
    """Number of positional arguments, or None when a ``*args`` splat makes it unknowable."""
    if any(isinstance(a, ast.Starred) for a in call.args):
        return None
    return len(call.args)


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


def _call_filters(rule: Rule, node: ast.Call) -> bool:
    if rule.any_present and not any(s.given(node) for s in rule.any_present):
        return False
    if rule.all_present and not all(s.given(node) for s in rule.all_present):
        return False
    if rule.absent and any(s.maybe_given(node) for s in rule.absent):
        return False
    if rule.max_positional is not None:
        count = _positional_count(node)
        if count is None or count <= rule.max_positional:
            return False
    return True


def match_call(rule: Rule, module: Module) -> Iterator[tuple[ast.AST, str]]:
    """Calls to ``triton.language.<calls>``, and inside kernels method calls ``x.<methods>()``
    on a value (not a module: ``desc.advance(...)``), whose arguments fit the rule's filters."""
    for node in module.nodes:
        if not isinstance(node, ast.Call):
            continue
        in_kernel = module.in_kernel(node)
        if rule.scope == "jit" and not in_kernel:
            continue
        name = module.imports.tl_name(node.func)
        hit = name is not None and name in rule.calls
        if not hit and rule.methods and in_kernel and isinstance(node.func, ast.Attribute):
            hit = node.func.attr in rule.methods and module.imports.qualname(node.func) is None
        if hit and _call_filters(rule, node):
            yield node, f"{ast.unparse(node.func)}(...)"


def _matches_prefix(qualname: str, prefixes: Sequence[str]) -> str | None:
    for p in prefixes:
        if p.endswith("."):
            if qualname.startswith(p) and len(qualname) > len(p):
                return p
        elif qualname == p or qualname.startswith(p + "."):
            return p
    return None


def _outer_references(module: Module) -> list[tuple[ast.expr, str]]:
    """Every maximal ``a.b.c`` chain or bare name with the dotted name it resolves to."""
    cached = getattr(module, "_references", None)
    if cached is None:
        cached = module._references = list(_find_references(module))  # type: ignore[attr-defined]
    return cached


def _find_references(module: Module) -> Iterator[tuple[ast.expr, str]]:
    inner: set[int] = set()
    for node in module.nodes:
        if isinstance(node, ast.Attribute):
            inner.add(id(node.value))
    for node in module.nodes:
        if isinstance(node, (ast.Attribute, ast.Name)) and id(node) not in inner:
            # the longest prefix of the chain that resolves (``driver.active.utils`` stops at
            # whatever the imports know)
            q = module.imports.qualname(node)
            if q is not None:
                yield node, q


def match_name(rule: Rule, module: Module) -> Iterator[tuple[ast.AST, str]]:
    """Imports of, and references to, names under the rule's prefixes (``triton.runtime.driver``,
    ``triton.ops``...), and uses of the scanned tree's own names that carry them (a subclass of
    a matched class, a module-level function that uses one). A name bound by a matching import
    is reported at the import, not again at every use."""
    imported_here: set[str] = set()
    for node in module.nodes:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                local = alias.asname or alias.name.split(".")[0]
                q = module.imports.names.get(local) if alias.name != "*" else None
                if q is None:
                    continue
                full = q if isinstance(node, ast.ImportFrom) or alias.asname else alias.name
                full = module.imports.project.resolve(full)
                if _matches_prefix(full, rule.names):
                    imported_here.add(local)
                    module.qualnames[id(node)] = full
                    yield node, full
                elif full in module.carriers.get(rule.id, {}):
                    imported_here.add(local)
                    yield node, f"{full} (it uses {module.carriers[rule.id][full]})"
    carriers = module.carriers.get(rule.id, {})
    for node, q in _outer_references(module):
        root = node
        while isinstance(root, ast.Attribute):
            root = root.value
        if isinstance(root, ast.Name) and root.id in imported_here:
            continue
        if rule.scope == "jit" and not module.in_kernel(node):
            continue
        if _matches_prefix(q, rule.names):
            module.qualnames[id(node)] = q
            yield node, ast.unparse(node)
        else:
            for carrier, via in carriers.items():
                if q == carrier or q.startswith(carrier + "."):
                    yield node, f"{ast.unparse(node)} (it uses {via})"
                    break


def match_keyword(rule: Rule, module: Module) -> Iterator[tuple[ast.AST, str]]:
    """Any call in a file that uses Triton passing one of ``keywords`` (launches,
    ``triton.Config``, ``tl.range``...), optionally only with the literal ``value``."""
    if not module.imports.imports_triton:
        return
    for node in module.nodes:
        if not isinstance(node, ast.Call):
            continue
        if rule.scope == "jit" and not module.in_kernel(node):
            continue
        for kw in node.keywords:
            if kw.arg not in rule.keywords:
                continue
            if rule.value is not None:
                if not (isinstance(kw.value, ast.Constant) and kw.value.value == rule.value):
                    continue
                if isinstance(kw.value.value, bool) != isinstance(rule.value, bool):
                    continue
            yield kw.value, f"{ast.unparse(node.func)}(..., {kw.arg}={ast.unparse(kw.value)})"


def _constexpr_annotation(module: Module, ann: ast.expr) -> bool:
    q = module.imports.qualname(ann)
    return q is not None and q.rsplit(".", 1)[-1] == "constexpr" and q.startswith("triton.")


def match_annotated_constexpr_global(rule: Rule, module: Module) -> Iterator[tuple[ast.AST, str]]:
    """Module-level ``X: tl.constexpr = v``: an annotation, not a constexpr value (unless
    ``v`` itself is ``tl.constexpr(...)``, which is what the rule asks for)."""
    for stmt in module.tree.body:
        if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
            continue
        value = stmt.value
        if value is None or not _constexpr_annotation(module, stmt.annotation):
            continue
        if isinstance(value, ast.Call) and _constexpr_annotation(module, value.func):
            continue
        yield stmt, f"{stmt.target.id}: {ast.unparse(stmt.annotation)} = {ast.unparse(value)}"


def _literal(expr: ast.expr) -> bool:
    if isinstance(expr, ast.Constant):
        return not isinstance(expr.value, type(Ellipsis)) and expr.value is not None
    if isinstance(expr, (ast.Tuple, ast.List)):
        return all(_literal(e) for e in expr.elts)
    if isinstance(expr, ast.UnaryOp):
        return _literal(expr.operand)
    if isinstance(expr, ast.BinOp):
        return _literal(expr.left) and _literal(expr.right)
    return False


def _local_names(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    args = fn.args
    names = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
    names.update(a.arg for a in (args.vararg, args.kwarg) if a is not None)
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
    return names


def match_global_read(rule: Rule, module: Module) -> Iterator[tuple[ast.AST, str]]:
    """A kernel body reading a module-level name bound to a plain literal (``BLOCK = 128``):
    not a ``tl.constexpr(...)``, a dtype, a module or a function. Argument defaults may read
    globals, so they are not looked at."""
    plain: dict[str, int] = {}
    for stmt in module.tree.body:
        if isinstance(stmt, ast.Assign) and _literal(stmt.value):
            for t in stmt.targets:
                if isinstance(t, ast.Name):
                    plain[t.id] = stmt.lineno
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.FunctionDef, ast.ClassDef)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else []
            if isinstance(stmt, ast.AnnAssign):
                targets = [stmt.target]
            for t in targets:
                if isinstance(t, ast.Name):
                    plain.pop(t.id, None)
    if not plain:
        return
    for fn in module.kernels:
        local = _local_names(fn)
        for stmt in fn.body:
            for node in ast.walk(stmt):
                if (
                    isinstance(node, ast.Name)
                    and isinstance(node.ctx, ast.Load)
                    and node.id in plain
                    and node.id not in local
                ):
                    yield node, f"{node.id} (a plain global, line {plain[node.id]})"


# Calls whose result is an integer index (program ids, ranges, integer ceil-division).
INT_CALLS = frozenset({"program_id", "num_programs", "arange", "cdiv"})
# Calls whose result is a float/int as their arguments are: a float stays a float through them.
PASS_THROUGH_CALLS = frozenset(
    {"minimum", "maximum", "where", "multiple_of", "max_contiguous", "abs", "floor", "ceil"}
)
LOOP_CALLS = frozenset({"range", "static_range"})
# Operations a float operand makes fail (or makes a pointer offset a float).
INT_ONLY_OPS = (ast.LShift, ast.RShift, ast.BitAnd, ast.BitOr, ast.BitXor)
# Loads, stores and atomics: the first argument is a pointer.
POINTER_CALLS = frozenset({"load", "store", "make_block_ptr"}) | {
    f"atomic_{op}" for op in ("add", "max", "min", "and", "or", "xor", "xchg", "cas")
}


def _is_float_expr(expr: ast.expr, imports: Imports) -> bool:
    """An operand that makes ``/`` deliberate float maths: a float literal or a float cast."""
    if isinstance(expr, ast.Constant) and isinstance(expr.value, float):
        return True
    is_cast = isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute)
    if is_cast and expr.func.attr == "to" and expr.args:  # type: ignore[union-attr]
        q = imports.qualname(expr.args[0]) or ""  # type: ignore[union-attr]
        return q.rsplit(".", 1)[-1] in {"float16", "bfloat16", "float32", "float64"}
    return False


class DivisionFlow:
    """Where the result of a ``/`` goes, inside one kernel, in source order.

    ``/`` is true division: its result is a float. That is a hazard only where an integer is
    needed: a pointer offset (``ptr + pid / 2``), a subscript, a ``range``/``tl.arange`` bound,
    a shift or bitwise operation. Deliberate float maths (``x / n`` into ``tl.exp``, a store,
    a mean) is left alone; a cast (``.to(tl.int32)``) or any other call ends the flow.
    """

    def __init__(self, fn: ast.FunctionDef | ast.AsyncFunctionDef, imports: Imports) -> None:
        self.imports = imports
        self.float_from: dict[str, ast.AST] = {}  # name -> the `/` it came from
        self.pointers: set[str] = set()
        params = [a.arg for a in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]]
        for node in ast.walk(fn):
            is_call = isinstance(node, ast.Call) and node.args
            if is_call and imports.tl_name(node.func) in POINTER_CALLS:  # type: ignore[union-attr]
                self.pointers.update(_root_names(node.args[0]))  # type: ignore[union-attr]
        self.pointers.update(p for p in params if "ptr" in p.lower())
        self.pointers &= set(params) | self.pointers
        self.hits: dict[int, ast.AST] = {}

    def source(self, expr: ast.expr | None) -> ast.AST | None:
        """The `/` whose float result ``expr`` carries, if any."""
        if expr is None:
            return None
        if isinstance(expr, ast.BinOp):
            if isinstance(expr.op, ast.Div):
                if _is_float_expr(expr.left, self.imports) or _is_float_expr(
                    expr.right, self.imports
                ):
                    return None
                return expr
            return self.source(expr.left) or self.source(expr.right)
        if isinstance(expr, ast.Name):
            return self.float_from.get(expr.id)
        if isinstance(expr, ast.UnaryOp):
            return self.source(expr.operand)
        if isinstance(expr, ast.IfExp):
            return self.source(expr.body) or self.source(expr.orelse)
        if isinstance(expr, ast.Subscript):
            return self.source(expr.value)
        if isinstance(expr, ast.Call) and self.imports.tl_name(expr.func) in PASS_THROUGH_CALLS:
            for a in expr.args:
                found = self.source(a)
                if found is not None:
                    return found
        return None

    def is_pointer(self, expr: ast.expr) -> bool:
        if isinstance(expr, ast.Name):
            return expr.id in self.pointers
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Add, ast.Sub)):
            return self.is_pointer(expr.left) or self.is_pointer(expr.right)
        if isinstance(expr, ast.Subscript):
            return self.is_pointer(expr.value)
        return False

    def sink(self, expr: ast.expr | None) -> None:
        found = self.source(expr)
        if found is not None:
            self.hits.setdefault(id(found), found)

    def check(self, node: ast.AST) -> None:
        """Record a hit where ``node`` uses a float from `/` as an integer."""
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, (ast.Add, ast.Sub)):
                if self.is_pointer(node.left):
                    self.sink(node.right)
                elif self.is_pointer(node.right):
                    self.sink(node.left)
            elif isinstance(node.op, INT_ONLY_OPS):
                self.sink(node.left)
                self.sink(node.right)
        elif isinstance(node, ast.Subscript):
            self.sink(node.slice)
        elif isinstance(node, ast.AugAssign) and isinstance(node.op, (ast.Add, ast.Sub)):
            if self.is_pointer(node.target):
                self.sink(node.value)
        elif isinstance(node, ast.Call):
            builtin_range = isinstance(node.func, ast.Name) and node.func.id == "range"
            name = self.imports.tl_name(node.func)
            if builtin_range or name in LOOP_CALLS or name == "arange":
                for a in node.args:
                    self.sink(a)

    def assign(self, target: ast.expr, value: ast.expr | None) -> None:
        if not isinstance(target, ast.Name):
            return
        found = self.source(value)
        if found is None:
            self.float_from.pop(target.id, None)
        else:
            self.float_from[target.id] = found
        if value is not None and self.is_pointer(value):
            self.pointers.add(target.id)

    def walk(self, node: ast.AST) -> None:
        if isinstance(node, ast.For):
            self.walk(node.iter)
            for child in [*node.body, *node.orelse]:
                self.walk(child)
            return
        for child in ast.iter_child_nodes(node):
            self.walk(child)
        self.check(node)
        if isinstance(node, ast.Assign):
            for t in node.targets:
                self.assign(t, node.value)
        elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
            self.assign(node.target, node.value)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            whole = ast.BinOp(left=node.target, op=node.op, right=node.value)
            self.assign(node.target, whole)


def _root_names(expr: ast.expr) -> set[str]:
    """Names a pointer expression is built on (``a_ptr + offs`` -> {a_ptr, offs})."""
    if isinstance(expr, ast.Name):
        return {expr.id}
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Add, ast.Sub)):
        left = _root_names(expr.left)
        return left if left else _root_names(expr.right)
    if isinstance(expr, ast.Subscript):
        return _root_names(expr.value)
    return set()


def match_int_true_division(rule: Rule, module: Module) -> Iterator[tuple[ast.AST, str]]:
    """``/`` whose float result is used where an integer is needed, inside each kernel."""
    for fn in module.kernels:
        if not any(isinstance(n, ast.Div) for n in ast.walk(fn)):
            continue
        flow = DivisionFlow(fn, module.imports)
        for stmt in fn.body:
            flow.walk(stmt)
        for node in flow.hits.values():
            yield node, ast.unparse(node)


F32 = "float32"
F32_MAKERS = frozenset({"zeros", "full", "zeros_like", "full_like", "empty"})


class Float32Names:
    """Which names of a kernel provably hold float32 values, in source order: built with
    ``dtype=tl.float32``, cast with ``.to(tl.float32)``, a ``tl.dot`` into a float32
    accumulator (its result is float32), or arithmetic on float32 values."""

    def __init__(self, imports: Imports) -> None:
        self.imports = imports
        self.names: set[str] = set()
        self.ever: set[str] = set()  # names float32 at some point (what a call may pass)

    def _is_f32_dtype(self, expr: ast.expr | None) -> bool:
        if expr is None:
            return False
        q = self.imports.qualname(expr) or ""
        if q.startswith("triton.") and q.rsplit(".", 1)[-1] == F32:
            return True
        return isinstance(expr, ast.Constant) and expr.value in (F32, "fp32")

    def is_f32(self, expr: ast.expr | None) -> bool:
        if isinstance(expr, ast.Name):
            return expr.id in self.names
        if isinstance(expr, ast.Call):
            func = expr.func
            method = isinstance(func, ast.Attribute) and self.imports.qualname(func) is None
            if method and func.attr == "to" and expr.args:  # type: ignore[union-attr]
                return self._is_f32_dtype(expr.args[0])
            name = self.imports.tl_name(func)
            dtype = next((k.value for k in expr.keywords if k.arg == "dtype"), None)
            if name in F32_MAKERS:
                return self._is_f32_dtype(dtype)
            if name == "dot":
                acc = ArgSpec("acc", 2).value(expr)
                out = ArgSpec("out_dtype", 6).value(expr)
                return self.is_f32(acc) or self._is_f32_dtype(out) or (acc is None and not out)
            return False
        if isinstance(expr, ast.BinOp):
            return self.is_f32(expr.left) or self.is_f32(expr.right)
        if isinstance(expr, ast.UnaryOp):
            return self.is_f32(expr.operand)
        return False

    def assign(self, target: ast.expr, value: ast.expr | None) -> None:
        if isinstance(target, ast.Name):
            if self.is_f32(value):
                self.names.add(target.id)
                self.ever.add(target.id)
            else:
                self.names.discard(target.id)


def _dot_acc_visit(
    node: ast.AST, rule: Rule, module: Module, f32: Float32Names, pending: list[ast.Call]
) -> None:
    """Children first (a statement's calls see the names as they were before it assigns)."""
    for child in ast.iter_child_nodes(node):
        _dot_acc_visit(child, rule, module, f32, pending)
    is_dot = isinstance(node, ast.Call) and module.imports.tl_name(node.func) in rule.calls
    if (
        is_dot
        and _call_filters(rule, node)  # type: ignore[arg-type]
        and not f32.is_f32(ArgSpec("acc", 2).value(node))  # type: ignore[arg-type]
    ):
        pending.append(node)  # type: ignore[arg-type]
    if isinstance(node, ast.Assign):
        for t in node.targets:
            f32.assign(t, node.value)
    elif isinstance(node, ast.AnnAssign) and node.value is not None:
        f32.assign(node.target, node.value)
    elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
        keep = node.target.id in f32.names  # `acc += x` keeps a float32 accumulator float32
        f32.assign(node.target, ast.BinOp(node.target, node.op, node.value))
        if keep:
            f32.names.add(node.target.id)


def _float32_params(rule: Rule, module: Module) -> dict[str, set[str]]:
    """Parameters of the file's jit helpers that every call from the file's kernels fills with
    a float32 value (``_attn_fwd_inner(acc, ...)`` called with ``acc = tl.zeros(...,
    dtype=tl.float32)``): ``{helper: {param}}``. Calls through ``*args``/``**kwargs`` or from
    outside the file leave a parameter unknown."""
    by_name = {fn.name: fn for fn in module.kernels}
    seen: dict[str, dict[str, list[bool]]] = {}
    for fn in module.kernels:
        f32 = Float32Names(module.imports)
        calls = [
            node
            for node in ast.walk(fn)
            if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in by_name
            and node.func.id != fn.name
        ]
        for stmt in fn.body:
            _dot_acc_visit(stmt, rule, module, f32, [])
        for call in calls:
            callee = by_name[call.func.id]  # type: ignore[attr-defined]
            params = [a.arg for a in [*callee.args.posonlyargs, *callee.args.args]]
            if any(isinstance(a, ast.Starred) for a in call.args):
                continue
            given = dict(zip(params, call.args, strict=False))
            given.update({k.arg: k.value for k in call.keywords if k.arg})
            for name, value in given.items():
                ok = isinstance(value, ast.Name) and value.id in f32.ever
                seen.setdefault(callee.name, {}).setdefault(name, []).append(
                    ok or f32.is_f32(value)
                )
    return {fn: {p for p, oks in ps.items() if oks and all(oks)} for fn, ps in seen.items()}


def match_dot_acc_dtype(rule: Rule, module: Module) -> Iterator[tuple[ast.AST, str]]:
    """``tl.dot`` calls fitting the rule's argument filters whose accumulator is not provably
    float32 (a float32 accumulator gives the same result dtype on every release)."""
    seeded = _float32_params(rule, module) if len(module.kernels) > 1 else {}
    for fn in module.kernels:
        f32 = Float32Names(module.imports)
        f32.names.update(seeded.get(fn.name, set()))
        pending: list[ast.Call] = []
        for stmt in fn.body:
            _dot_acc_visit(stmt, rule, module, f32, pending)
        for node in pending:
            yield node, f"{ast.unparse(node.func)}(...)"


def _no_match(rule: Rule, module: Module) -> Iterator[tuple[ast.AST, str]]:
    """Census rules: their findings come from ``census_findings``, not from a matcher."""
    return iter(())


MATCHERS: dict[str, Matcher] = {
    "call": match_call,
    "name": match_name,
    "keyword": match_keyword,
    "annotated-constexpr-global": match_annotated_constexpr_global,
    "global-read": match_global_read,
    "int-true-division": match_int_true_division,
    "dot-acc-dtype": match_dot_acc_dtype,
    "census-missing": _no_match,
    "census-keyword": _no_match,
    "census-positional": _no_match,
    "census-default": _no_match,
}


# ---------------------------------------------------------------------------------- API census

# The census's releases and documents: ``{release: Census}``, oldest first (matrix.analyze.census).
Censuses = Mapping[str, Census]


@dataclass(frozen=True)
class ApiUse:
    """A reference to a ``triton.*`` name in a file, with the call's arguments if it is called
    (the shape ``matrix.gate.api`` reads: qualname, path, line, keywords, positional)."""

    qualname: str
    path: str
    line: int
    keywords: tuple[str, ...] = ()
    positional: int = 0
    positional_known: bool = True  # False when a ``*args`` splat hides the count
    splat_kwargs: bool = False
    called: bool = False
    node: ast.AST | None = field(default=None, compare=False, repr=False)


def api_uses(module: Module, path: str) -> list[ApiUse]:
    """Every public ``triton.*`` name the file references (private ``_x`` parts are skipped:
    the census records public names only)."""
    parents: dict[int, ast.Call] = {}
    for node in module.nodes:
        if isinstance(node, ast.Call):
            parents[id(node.func)] = node
    uses = []
    for node, q in _outer_references(module):
        if not q.startswith("triton.") or any(p.startswith("_") for p in q.split(".")):
            continue
        line = getattr(node, "lineno", 0)
        call = parents.get(id(node))
        if call is None:
            uses.append(ApiUse(q, path, line, node=node))
            continue
        count = _positional_count(call)
        uses.append(
            ApiUse(
                q,
                path,
                line,
                tuple(k.arg for k in call.keywords if k.arg is not None),
                count or 0,
                count is not None,
                any(k.arg is None for k in call.keywords),
                True,
                node,
            )
        )
    return uses


def _spans(releases: Sequence[str], chosen: Iterable[str]) -> str:
    """``3.0.0-3.2.0, 3.5.0``: runs of consecutive recorded releases."""
    picked = set(chosen)
    runs: list[list[str]] = []
    for i, r in enumerate(releases):
        if r not in picked:
            continue
        if runs and i > 0 and runs[-1][-1] == releases[i - 1]:
            runs[-1].append(r)
        else:
            runs.append([r])
    return ", ".join(run[0] if len(run) == 1 else f"{run[0]}-{run[-1]}" for run in runs)


@dataclass(frozen=True)
class CensusProblem:
    """What the census says is wrong with one use: the rule kind, the text, the releases."""

    kind: str
    detail: str
    releases: tuple[str, ...]
    defaults: Mapping[str, str] = field(default_factory=dict)  # census-default: {release: repr}
    param: str = ""  # census-default: the parameter left to its default


def census_problems(censuses: Censuses, use: ApiUse) -> tuple[list[CensusProblem], list[str]]:
    """(problems, releases on which the use works) from the census's works-on query."""
    releases = list(censuses)
    positional = use.positional if use.positional_known else 0
    keywords = use.keywords if use.called else ()
    w = works_on(censuses, use.qualname, keywords, positional)
    seen = [r for r, s in w.per_release.items() if s.status in ("ok", "rejects")]
    if not seen:
        return [], []  # absent (or unknown) everywhere: no difference between releases
    problems: list[CensusProblem] = []
    absent = [r for r, s in w.per_release.items() if s.status == "absent"]
    if absent:
        problems.append(
            CensusProblem("census-missing", f"absent on {_spans(releases, absent)}", tuple(absent))
        )
    by_reason: dict[tuple[str, str], list[str]] = {}
    for r, s in w.per_release.items():
        if s.status == "rejects":
            kind = "census-keyword" if s.reason.startswith("no keyword") else "census-positional"
            # the reason without the release's signature, so that releases group
            by_reason.setdefault((kind, s.reason.split(" (", 1)[0]), []).append(r)
    for (kind, reason), rs in by_reason.items():
        if set(rs) == set(seen):
            continue  # refused by every release that has the name (a fork's keyword): no change
        detail = f"{reason} on {_spans(releases, rs)}"
        problems.append(CensusProblem(kind, detail, tuple(rs)))
    if use.called and use.positional_known and not use.splat_kwargs:
        changed = omitted_defaults(censuses, use.qualname, use.keywords, use.positional)
        for name, per in changed.items():
            values = dict.fromkeys(per[r] for r in releases if r in per)
            shown = "; ".join(
                f"{v} on {_spans(releases, [r for r in per if per[r] == v])}" for v in values
            )
            problems.append(CensusProblem("census-default", f"{name} = {shown}", (), per, name))
    return problems, w.ok


def census_findings(
    module: Module,
    path: str,
    rules: Sequence[Rule],
    censuses: Censuses,
    memo: dict[tuple[Any, ...], tuple[list[CensusProblem], list[str]]] | None = None,
    uses: list[ApiUse] | None = None,
) -> tuple[list[Finding], list[ApiUse], set[str]]:
    """Findings from the census, the uses checked, and the releases every use works on.
    ``memo`` keeps the census's answer per distinct use across files (a library calls
    tl.load a thousand times)."""
    memo = {} if memo is None else memo
    works = set(censuses)
    by_kind = {r.kind: r for r in rules if r.census}
    out: list[Finding] = []
    uses = api_uses(module, path) if uses is None else uses
    for use in uses:
        key = (
            use.qualname,
            use.keywords,
            use.positional,
            use.positional_known,
            use.splat_kwargs,
            use.called,
        )
        if key not in memo:
            memo[key] = census_problems(censuses, use)
        problems, ok = memo[key]
        if not problems and not ok:
            continue
        works &= set(ok)
        span = (ok[0], ok[-1]) if ok else None
        for p in problems:
            rule = by_kind.get(p.kind)
            if rule is None or use.node is None:
                continue
            if any(
                same.covers(use.qualname, p.param, use.keywords, use.positional)
                for same in rule.same_default
            ):
                continue  # the default changed in spelling only (the rules file says why)
            snippet = use.qualname + ("(...)" if use.called else "")
            f = _finding(path, use.node, rule, snippet, module)
            f.detail, f.works_on, f.census = p.detail, span, p
            out.append(f)
    return out, uses, works


# ---------------------------------------------------------------------------------------- scan


def _jit_functions(
    nodes: Iterable[ast.AST], imports: Imports
) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [
        n
        for n in nodes
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
        and any(imports.is_jit(d) for d in n.decorator_list)
    ]


def _finding(path: str, node: ast.AST, rule: Rule, snippet: str, module: Module) -> Finding:
    line, col = getattr(node, "lineno", 0), getattr(node, "col_offset", -1) + 1
    lines = getattr(module, "lines", [])
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    return Finding(
        path,
        line,
        col,
        rule,
        snippet,
        end_line=getattr(node, "end_lineno", line) or line,
        source_line=text,
    )


NOQA = re.compile(r"#\s*noqa:\s*([A-Z]+\d+(?:[\s,]+[A-Z]+\d+)*)", re.IGNORECASE)


def noqa_codes(source: str) -> dict[int, set[str]]:
    """``{line: {"TRI001", ...}}`` from ``# noqa: TRI001, TRI004`` comments (a bare ``# noqa``,
    which libraries write for flake8, suppresses nothing here)."""
    out: dict[int, set[str]] = {}
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.COMMENT:
                m = NOQA.search(tok.string)
                if m:
                    codes = {c.upper() for c in re.split(r"[\s,]+", m.group(1)) if c}
                    out.setdefault(tok.start[0], set()).update(codes)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass  # the file parsed with ast; a tokenizer quirk only loses its noqa comments
    return out


def parse_module(path: Path, source: str) -> SourceModule:
    """Raises SyntaxError (or ValueError for NUL bytes) if the file does not parse."""
    name, is_package = module_name(path)
    return SourceModule(str(path), name, is_package, source, ast.parse(source, filename=str(path)))


def derive_carriers(project: Project, rules: Sequence[Rule]) -> dict[str, dict[str, str]]:
    """For each name rule, the scanned tree's module-level classes that subclass a matched name,
    and module-level functions whose body uses such a class: ``{rule: {qualname: via}}``."""
    out: dict[str, dict[str, str]] = {}
    name_rules = [r for r in rules if r.kind == "name"]
    if not name_rules:
        return out
    for m in project.modules.values():
        imports = project.imports(m)
        for stmt in m.tree.body:
            if not isinstance(stmt, ast.ClassDef):
                continue
            for base in stmt.bases:
                q = imports.qualname(base) or ""
                for rule in name_rules:
                    if _matches_prefix(q, rule.names):
                        out.setdefault(rule.id, {})[f"{m.name}.{stmt.name}"] = q
    short = {q.rsplit(".", 1)[-1] for carriers in out.values() for q in carriers}
    for m in project.modules.values():
        if not any(name in m.source for name in short):
            continue  # cannot use a carrier without spelling its name
        imports = project.imports(m)
        for stmt in m.tree.body:
            if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for carriers in list(out.values()):
                for node in ast.walk(stmt):
                    if isinstance(node, (ast.Name, ast.Attribute)):
                        q = imports.qualname(node) or ""
                        if q in carriers and not q.startswith(f"{m.name}.{stmt.name}"):
                            carriers.setdefault(f"{m.name}.{stmt.name}", f"{q} ({carriers[q]})")
                            break
    return out


def scan_module(
    m: SourceModule,
    project: Project,
    rules: Sequence[Rule],
    carriers: dict[str, dict[str, str]] | None = None,
    censuses: Censuses | None = None,
    memo: dict[tuple[Any, ...], Any] | None = None,
) -> tuple[list[Finding], list[ApiUse], set[str] | None, int]:
    """(findings, API uses, releases every use works on or None without a census,
    noqa-suppressed)."""
    imports = project.imports(m)
    module = Module(m.tree, imports, _jit_functions(m.nodes, imports), carriers or {}, m.nodes)
    module.lines = m.source.splitlines()  # type: ignore[attr-defined]
    found: dict[tuple[int, int, str], Finding] = {}
    for rule in rules:
        for node, snippet in MATCHERS[rule.kind](rule, module):
            if (
                rule.census_decides
                and censuses
                and _same_everywhere(censuses, module.qualnames.get(id(node)))
            ):
                continue
            f = _finding(m.path, node, rule, snippet, module)
            found.setdefault((f.line, f.col, rule.id), f)
    works: set[str] | None = None
    # Every Triton name the file uses, census or not: the gate checks them (matrix.gate.api).
    uses: list[ApiUse] = api_uses(module, m.path)
    if censuses:
        extra, uses, works = census_findings(module, m.path, rules, censuses, memo, uses)
        for f in extra:
            found.setdefault((f.line, f.col, f.rule.id + f.detail), f)
    noqa = noqa_codes(m.source) if "noqa" in m.source else {}
    kept, suppressed = [], 0
    first: dict[tuple[str, str, str], Finding] = {}
    for f in sorted(found.values(), key=lambda f: (f.line, f.col, f.rule.id)):
        codes = noqa.get(f.line, set()) | noqa.get(f.end_line, set())
        if f.rule.id in codes:
            suppressed += 1
            continue
        if f.rule.census:
            # One census finding per name and problem in a file, with its other lines: a
            # thousand tl.load calls relying on one changed default are one thing to fix.
            key = (f.rule.id, f.snippet, f.detail)
            if key in first:
                first[key].also.append(f.line)
                continue
            first[key] = f
        kept.append(f)
    return sorted(kept, key=lambda f: (f.line, f.col, f.rule.id)), uses, works, suppressed


def _same_everywhere(censuses: Censuses, qualname: str | None) -> bool:
    """Whether the census shows ``qualname`` present on every recorded release."""
    if qualname is None:
        return False
    return len(works_on(censuses, qualname).ok) == len(censuses)


def scan_source(source: str, path: str, rules: Sequence[Rule]) -> list[Finding]:
    """Findings in one file's source, on its own. Raises SyntaxError if it does not parse."""
    m = SourceModule(path, Path(path).stem, False, source, ast.parse(source, filename=path))
    project = Project([m])
    return scan_module(m, project, rules, derive_carriers(project, rules))[0]


def excluded(path: Path, patterns: Sequence[str]) -> bool:
    """Whether ``path`` or one of its folders matches an ``--exclude`` glob."""
    posix = path.as_posix()
    return any(
        fnmatch.fnmatch(posix, pat) or any(fnmatch.fnmatch(part, pat) for part in path.parts)
        for pat in patterns
    )


def iter_python_files(
    paths: Iterable[str | Path], exclude: Sequence[str] = DEFAULT_EXCLUDE
) -> Iterator[Path]:
    """Each ``.py`` file under ``paths`` (files as given, folders recursively, sorted), minus
    the excluded ones (a folder's own path given explicitly is never excluded by the defaults).

    Raises FileNotFoundError naming the path when one does not exist.
    """
    for p in map(Path, paths):
        if p.is_dir():
            for q in sorted(p.rglob("*.py")):
                if q.is_file() and not excluded(q.relative_to(p), exclude):
                    yield q
        elif p.is_file():
            if not excluded(p, [e for e in exclude if e not in DEFAULT_EXCLUDE]):
                yield p
        else:
            raise FileNotFoundError(f"scan path {str(p)!r}: no such file or folder")


def scan_paths(
    paths: Iterable[str | Path],
    rules: Sequence[Rule] | None = None,
    *,
    exclude: Sequence[str] = DEFAULT_EXCLUDE,
    censuses: Censuses | None = None,
) -> ScanReport:
    """Scan files and folders as one tree (imports between them are followed). Files that
    cannot be decoded or parsed are listed in ``skipped`` with the reason, and skipped."""
    rules = load_rules() if rules is None else rules
    report = ScanReport(releases=list(censuses or ()))
    parsed: list[SourceModule] = []
    for file in iter_python_files(paths, exclude):
        report.files.append(str(file))
        try:
            source = file.read_bytes().decode("utf-8")
            parsed.append(parse_module(file, source))
        except UnicodeDecodeError as e:
            report.skipped.append(f"{file}: not UTF-8 ({e.reason} at byte {e.start}); skipped")
        except OSError as e:
            report.skipped.append(f"{file}: cannot read ({e.strerror or e}); skipped")
        except SyntaxError as e:
            py = f"{sys.version_info.major}.{sys.version_info.minor}"
            report.skipped.append(
                f"{file}:{e.lineno}:{e.offset}: not valid Python {py} ({e.msg}: newer syntax or "
                "broken); skipped"
            )
        except ValueError as e:  # source with NUL bytes
            report.skipped.append(f"{file}: cannot parse ({e}); skipped")
    project = Project(parsed)
    carriers = derive_carriers(project, rules)
    memo: dict[tuple[Any, ...], Any] = {}
    for m in parsed:
        findings, uses, works, suppressed = scan_module(m, project, rules, carriers, censuses, memo)
        report.findings.extend(findings)
        report.uses.extend(uses)
        report.suppressed += suppressed
        if works is not None:
            ordered = [r for r in report.releases if r in works]
            report.works_on[m.path] = (ordered[0], ordered[-1]) if ordered else None
    return report


# ------------------------------------------------------------------------------------ baseline


def write_baseline(findings: Iterable[Finding], path: str | Path) -> None:
    """Remember today's findings, so that later scans report only new ones."""
    counts = Counter(f.key() for f in findings)
    doc = {
        "format": 1,
        "tool": "matrix.scan",
        "findings": [
            {"path": p, "rule": r, "source": s, "count": n}
            for (p, r, s), n in sorted(counts.items())
        ],
    }
    Path(path).write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")


def read_baseline(path: str | Path) -> Counter[tuple[str, str, str]]:
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise BaselineError(f"--baseline-file {str(path)!r}: cannot read ({e})") from e
    items = doc.get("findings") if isinstance(doc, dict) else None
    if doc.get("format") != 1 or not isinstance(items, list):
        raise BaselineError(
            f'--baseline-file {str(path)!r}: expected {{"format": 1, "findings": [...]}} '
            "as written by --write-baseline-file"
        )
    known: Counter[tuple[str, str, str]] = Counter()
    for i, item in enumerate(items):
        try:
            known[(item["path"], item["rule"], item["source"])] += int(item.get("count", 1))
        except (KeyError, TypeError, ValueError) as e:
            raise BaselineError(
                f"--baseline-file {str(path)!r}: findings[{i}]: expected path, rule, source "
                f"and count, got {item!r}"
            ) from e
    return known


def drop_known(
    findings: list[Finding], known: Counter[tuple[str, str, str]]
) -> tuple[list[Finding], int]:
    """Findings not in the baseline (as many of each as it remembers are dropped)."""
    left = Counter(known)
    kept, dropped = [], 0
    for f in findings:
        if left[f.key()] > 0:
            left[f.key()] -= 1
            dropped += 1
        else:
            kept.append(f)
    return kept, dropped


# --------------------------------------------------------------------------- releases affected


def probe_statuses(runs: Iterable[Run], probe: str) -> dict[Release, dict[str, set[str]]]:
    """``{release: {status: {"backend[:target]", ...}}}`` for one probe over recorded runs."""
    out: dict[Release, dict[str, set[str]]] = {}
    for run in runs:
        release = run.release
        if release is None:
            continue
        for r in run.results:
            if r.probe == probe:
                where = str(Column(r.backend, r.target))
                out.setdefault(release, {}).setdefault(r.status, set()).add(where)
    return out


def same_release(a: str | Release, b: str | Release) -> bool:
    """``3.9`` and ``3.9.0`` are one release (core.Release: the gate's reading too)."""
    try:
        return Release.parse(a) == Release.parse(b)
    except ReleaseError:
        return a == b


def releases_note(rule: Rule, runs: Sequence[Run] | None, candidate: str | None) -> str:
    """Which recorded releases the rule's probe marks affected (``block_ptr: removed on 3.9.0``)."""
    return judge_rule(rule, runs, candidate)[1]


def judge_rule(rule: Rule, runs: Sequence[Run] | None, candidate: str | None) -> tuple[str, str]:
    """(effect on the candidate, why) for a hand-written rule, from the recorded results."""
    if runs is None or rule.probe is None:
        if rule.probe is None and runs is not None:
            return UNKNOWN, "no probe in the matrix measures this; it may concern every release"
        return UNKNOWN, ""
    by_release = probe_statuses(runs, rule.probe)
    if candidate is not None:
        recorded = Release.parse(candidate, "--candidate")
        if recorded not in by_release:
            return UNKNOWN, f"{rule.probe}: no results for {recorded}"
        statuses = by_release[recorded]
        parts = [f"{s} ({', '.join(sorted(w))})" for s, w in sorted(statuses.items())]
        affected = any(s in rule.concerns for s in statuses)
        verdict = "affects" if affected else "does not affect"
        return (AFFECTS if affected else NOT_AFFECTED), (
            f"{rule.probe} on {recorded}: {'; '.join(parts)}: {verdict} {recorded}"
        )
    affected: dict[str, list[str]] = {}
    for release in sorted(by_release):
        for status in by_release[release]:
            if status in rule.concerns:
                affected.setdefault(status, []).append(str(release))
    if not by_release:
        return UNKNOWN, f"{rule.probe}: no results recorded"
    if not affected:
        return UNKNOWN, f"{rule.probe}: no recorded release is affected"
    return UNKNOWN, f"{rule.probe}: " + "; ".join(
        f"{s} on {', '.join(rs)}" for s, rs in sorted(affected.items())
    )


def judge(
    findings: Iterable[Finding],
    runs: Sequence[Run] | None,
    candidate: str | None,
    censuses: Censuses | None,
    baseline_release: str | None = None,
) -> dict[str, str]:
    """Set each finding's ``effect`` and ``note``; return the per-rule notes (shown once)."""
    notes: dict[str, str] = {}
    cache: dict[str, tuple[str, str]] = {}
    releases = list(censuses or ())
    cand = None
    if candidate is not None:
        cand = next((r for r in releases if same_release(r, candidate)), None)
    ref = None
    if baseline_release is not None:
        ref = next((r for r in releases if same_release(r, baseline_release)), None)
    elif cand is not None and releases.index(cand) > 0:
        ref = releases[releases.index(cand) - 1]
    for f in findings:
        if not f.rule.census:
            if f.rule.id not in cache:
                cache[f.rule.id] = judge_rule(f.rule, runs, candidate)
            f.effect, notes[f.rule.id] = cache[f.rule.id]
            continue
        problem: CensusProblem = f.census
        if candidate is None:
            f.effect, f.note = UNKNOWN, ""
        elif cand is None:
            f.effect, f.note = UNKNOWN, f"no API census recorded for {candidate}"
        elif problem.kind == "census-default":
            if ref is None:
                f.effect, f.note = UNKNOWN, f"no release before {cand} to compare defaults with"
            else:
                changed = problem.defaults.get(cand) != problem.defaults.get(ref)
                f.effect = AFFECTS if changed else NOT_AFFECTED
                f.note = f"{'differs' if changed else 'same'} on {ref} and {cand}"
        else:
            fails = cand in problem.releases
            f.effect = AFFECTS if fails else NOT_AFFECTED
            f.note = f"{'fails' if fails else 'works'} on {cand}"
    return notes


# -------------------------------------------------------------------------------------- output


def _effect_tag(f: Finding, candidate: str | None) -> str:
    if f.rule.severity == "advisory":
        return "advisory"
    if candidate is None:
        return f.rule.severity
    word = {AFFECTS: f"{f.rule.severity}: affects", NOT_AFFECTED: "does not affect"}.get(
        f.effect, f"{f.rule.severity}: effect unknown on"
    )
    return f"{word} {candidate}"


def render_text(
    report: ScanReport,
    rules: Sequence[Rule],
    notes: dict[str, str],
    candidate: str | None,
    *,
    summary_only: bool = False,
    top_files: int = 15,
) -> str:
    """Findings grouped by file (one short line each), then the summary by rule (with each
    rule's fix and releases, once) and by file."""
    out: list[str] = []
    by_file: dict[str, list[Finding]] = {}
    for f in report.findings:
        by_file.setdefault(f.path, []).append(f)
    if not summary_only:
        for path, fs in by_file.items():
            span = report.works_on.get(path, "")
            works = f"; works on {span[0]}-{span[1]}" if span else ""
            if path in report.works_on and span is None:
                works = "; works on no single recorded release"
            out.append(f"{path} ({len(fs)}{works})")
            for f in fs:
                tag = _effect_tag(f, candidate)
                extra = f"; {f.note}" if f.note and f.rule.census else ""
                out.append(f"  {f.line}:{f.col} {f.rule.id} {f.message} [{tag}{extra}]")
    if report.findings:
        rule_by_id = {r.id: r for r in rules}
        counts = Counter(f.rule.id for f in report.findings)
        files_per = {
            rid: len({f.path for f in report.findings if f.rule.id == rid}) for rid in counts
        }
        out.append("")
        out.append("by rule:")
        for rid, n in sorted(counts.items()):
            r = rule_by_id[rid]
            fails = sum(1 for f in report.findings if f.rule.id == rid and f.fails)
            out.append(
                f"  {rid} {r.name} ({r.severity}): {n} in {files_per[rid]} file(s)"
                + (f", {fails} fail" if candidate and fails else "")
                + (f" [{notes[rid]}]" if notes.get(rid) else "")
            )
            out.append(f"      fix: {r.fix}")
        out.append(f"by file ({min(top_files, len(by_file))} of {len(by_file)}, most first):")
        ranked = sorted(by_file.items(), key=lambda kv: (-len(kv[1]), kv[0]))[:top_files]
        for path, fs in ranked:
            c = Counter(f.rule.id for f in fs)
            out.append(
                f"  {path}: {len(fs)} ({', '.join(f'{k} {v}' for k, v in sorted(c.items()))})"
            )
    return "\n".join(out) + ("\n" if out else "")


def summary_line(report: ScanReport, candidate: str | None, seconds: float) -> str:
    fails = sum(1 for f in report.findings if f.fails)
    parts = [f"{len(report.findings)} finding(s) in {len(report.files)} file(s)"]
    verdict = f"{fails} break or change {candidate}" if candidate else f"{fails} not advisory"
    parts.append(verdict)
    if report.skipped:
        parts.append(f"{len(report.skipped)} file(s) skipped")
    if report.suppressed:
        parts.append(f"{report.suppressed} suppressed by noqa")
    if report.known:
        parts.append(f"{report.known} in the baseline file")
    if report.releases:
        parts.append(f"census of {len(report.releases)} release(s)")
    return "; ".join(parts) + f" ({seconds:.1f} s)"


def to_json(report: ScanReport, notes: dict[str, str], candidate: str | None) -> dict[str, Any]:
    return {
        "candidate": candidate,
        "files": report.files,
        "skipped": report.skipped,
        "errors": report.errors,
        "suppressed": report.suppressed,
        "known": report.known,
        "releases": report.releases,
        "works_on": {p: list(s) if s else None for p, s in report.works_on.items()},
        "rules": notes,
        "findings": [
            dict(f.to_dict(), releases=notes.get(f.rule.id, f.detail)) for f in report.findings
        ],
    }


SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def _level(f: Finding) -> str:
    if f.rule.severity == "advisory" or f.effect == NOT_AFFECTED:
        return "note"
    return "error" if f.rule.severity == "breaking" else "warning"


def to_sarif(report: ScanReport, rules: Sequence[Rule], notes: dict[str, str]) -> dict[str, Any]:
    """SARIF 2.1.0, one run: rules with their fix as help, results with 1-based regions."""
    used = sorted({f.rule.id for f in report.findings})
    rule_by_id = {r.id: r for r in rules}
    index = {rid: i for i, rid in enumerate(used)}
    driver = {
        "name": "matrix.scan",
        "informationUri": "https://github.com/",
        "rules": [
            {
                "id": rid,
                "name": rule_by_id[rid].name,
                "shortDescription": {"text": rule_by_id[rid].name},
                "help": {"text": rule_by_id[rid].fix},
                "properties": {
                    "severity": rule_by_id[rid].severity,
                    "releases": notes.get(rid, ""),
                },
            }
            for rid in used
        ],
    }
    results = [
        {
            "ruleId": f.rule.id,
            "ruleIndex": index[f.rule.id],
            "level": _level(f),
            "message": {"text": f.message + (f" ({f.note})" if f.note else "")},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": Path(f.path).as_posix()},
                        "region": {"startLine": max(f.line, 1), "startColumn": max(f.col, 1)},
                    }
                }
            ],
            "properties": {"effect": f.effect},
        }
        for f in report.findings
    ]
    notifications = [{"level": "warning", "message": {"text": s}} for s in report.skipped]
    run: dict[str, Any] = {"tool": {"driver": driver}, "results": results}
    if notifications:
        run["invocations"] = [
            {"executionSuccessful": True, "toolExecutionNotifications": notifications}
        ]
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}


def _gh_escape(text: str, prop: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if prop else text


def to_github(report: ScanReport, candidate: str | None) -> str:
    """GitHub Actions workflow commands: one annotation per finding on its line."""
    command = {"error": "error", "warning": "warning", "note": "notice"}
    lines = []
    for f in report.findings:
        props = f"file={_gh_escape(f.path, True)},line={f.line},col={f.col}"
        props += f",title={_gh_escape(f'{f.rule.id} {f.rule.name}', True)}"
        msg = f"{f.message} [{_effect_tag(f, candidate)}]; fix: {f.rule.fix}"
        lines.append(f"::{command[_level(f)]} {props}::{_gh_escape(msg)}")
    for s in report.skipped:
        lines.append(f"::warning ::{_gh_escape(s)}")
    return "\n".join(lines) + ("\n" if lines else "")


# ----------------------------------------------------------------------------------------- CLI


def _codes(values: Sequence[str]) -> list[str]:
    return [c.strip().upper() for v in values for c in v.split(",") if c.strip()]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m matrix.scan",
        description="Report Triton upgrade hazards in kernel sources "
        "(rules: matrix/data/scan_rules.toml; the API census from --results).",
        epilog="Exit status: 0 nothing breaks or changes the candidate; 1 a breaking or "
        "changing finding that affects the candidate (or whose effect is unknown); "
        "2 bad arguments, a missing path, a bad rules or baseline file.",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="Python files or folders to scan")
    p.add_argument("--format", choices=("text", "json", "sarif", "github"), default="text")
    p.add_argument("--results", metavar="DIR", help="recorded results (raw folder or matrix.json)")
    p.add_argument("--candidate", metavar="X", help="say whether each finding affects release X")
    p.add_argument(
        "--baseline-release",
        metavar="X",
        help="compare census defaults with release X (default: the release before the candidate)",
    )
    p.add_argument(
        "--select",
        action="append",
        default=[],
        metavar="CODES",
        help="only these rules (comma list of ids or prefixes: TRI001,TRI1)",
    )
    p.add_argument(
        "--ignore",
        action="append",
        default=[],
        metavar="CODES",
        help="not these rules (ids or prefixes)",
    )
    p.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="GLOB",
        help="skip paths matching GLOB (a file or folder name or path; repeatable)",
    )
    p.add_argument(
        "--baseline-file",
        metavar="FILE",
        help="do not report findings recorded in FILE (see --write-baseline-file)",
    )
    p.add_argument(
        "--write-baseline-file",
        metavar="FILE",
        help="record the current findings in FILE, then exit 0",
    )
    p.add_argument("--summary", action="store_true", help="text: only the summaries")
    p.add_argument("--rules", metavar="FILE", default=str(RULES_PATH), help=argparse.SUPPRESS)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    started = time.perf_counter()
    if args.candidate is not None and args.results is None:
        print(
            "matrix.scan: --candidate needs --results DIR to know what the candidate does",
            file=sys.stderr,
        )
        return 2
    try:
        for flag in ("candidate", "baseline_release"):
            value = getattr(args, flag)
            if value is not None:  # said as core spells it: 3.9 -> 3.9.0, as the gate does
                setattr(args, flag, str(Release.parse(value, f"--{flag.replace('_', '-')}")))
    except ReleaseError as e:
        print(f"matrix.scan: {e}", file=sys.stderr)
        return 2
    try:
        rules = select_rules(load_rules(args.rules), _codes(args.select), _codes(args.ignore))
        runs = read_runs(args.results) if args.results is not None else None
        known = read_baseline(args.baseline_file) if args.baseline_file else None
        censuses = censuses_from_runs(runs) if runs else {}
        report = scan_paths(
            args.paths, rules, exclude=(*DEFAULT_EXCLUDE, *args.exclude), censuses=censuses
        )
    except (
        DataFileError,
        BaselineError,
        SchemaError,
        ReleaseError,
        CensusError,
        OSError,
        json.JSONDecodeError,
    ) as e:
        print(f"matrix.scan: {e}", file=sys.stderr)
        return 2
    if runs is not None and not runs:
        print(f"matrix.scan: --results {args.results!r}: no runs recorded there", file=sys.stderr)
        return 2
    if args.write_baseline_file:
        write_baseline(report.findings, args.write_baseline_file)
        print(
            f"matrix.scan: {len(report.findings)} finding(s) recorded in "
            f"{args.write_baseline_file}",
            file=sys.stderr,
        )
        return 0
    if known is not None:
        report.findings, report.known = drop_known(report.findings, known)
    if args.candidate is not None:
        # Say the release as it was recorded (3.9 -> 3.9.0), as the gate does.
        recorded = [*censuses, *(r.triton for r in runs or () if r.triton)]
        args.candidate = next(
            (r for r in recorded if same_release(r, args.candidate)), args.candidate
        )
    notes = judge(report.findings, runs, args.candidate, censuses, args.baseline_release)
    if args.format == "json":
        print(json.dumps(to_json(report, notes, args.candidate), indent=1))
    elif args.format == "sarif":
        print(json.dumps(to_sarif(report, rules, notes), indent=1))
    elif args.format == "github":
        sys.stdout.write(to_github(report, args.candidate))
    else:
        sys.stdout.write(
            render_text(report, rules, notes, args.candidate, summary_only=args.summary)
        )
    for skipped in report.skipped:
        print(f"skipped: {skipped}", file=sys.stderr)
    print(summary_line(report, args.candidate, time.perf_counter() - started), file=sys.stderr)
    return 1 if any(f.fails for f in report.findings) else 0


if __name__ == "__main__":
    sys.exit(cli.run(main, "matrix.scan"))
