"""What a use's own expression does, for fingerprint cases that measure one shape of a call.

Some cells measure a call written one way, not every call of that name: ``fp.values.where``
is ``tl.where(x < y, x, y)`` (a select of a comparison of its own operands, which a release may
fold into a min/max), and ``fp.layout[descriptor.*]`` cases with ``strides = "constexpr"``
build a descriptor in the kernel from constexpr strides (a host ``TensorDescriptor`` takes its
strides from the tensor at run time). ``matrix/data/usage_map.toml`` (``[shapes]``) names the
shape each such group or case needs; this module reads the use's call from the team's source
and says whether it has that shape: yes, no, or None (cannot tell: the gate keeps the use,
failing closed).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

from matrix.analyze.profile import Use
from matrix.analyze.profile.host_syntax import callee
from matrix.cli import resolved
from matrix.core import MATRIX_DIR, Release, load_toml
from matrix.scan import Project, SourceModule, parse_module, read_source
from matrix.scan.guards import branch_guards

MAP_PATH = MATRIX_DIR / "data" / "usage_map.toml"
FINGERPRINT_PATH = MATRIX_DIR / "probes" / "fp" / "fingerprint.toml"

_ORDERING = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)
NO_INTS: Mapping[str, frozenset[int]] = MappingProxyType({})  # no launch says a constexpr


@lru_cache(maxsize=1)
def shape_table() -> dict[str, str]:
    """``{group or layout field: shape}`` from usage_map.toml's ``[shapes]``; a shape named
    there that this module does not know is refused (a typo would silently keep every use)."""
    raw = load_toml(MAP_PATH).get("shapes", {})
    if not isinstance(raw, dict):
        raise ValueError(f"{MAP_PATH}: shapes: expected a table, got {raw!r}")
    for key, shape in raw.items():
        if shape not in SHAPES and shape not in GLOBAL_SHAPES:
            raise ValueError(
                f"{MAP_PATH}: shapes.{key}: {shape!r}; expected one of "
                f"{sorted([*SHAPES, *GLOBAL_SHAPES])}"
            )
    return dict(raw)


@lru_cache(maxsize=1)
def layout_cases() -> dict[str, dict[str, object]]:
    """fingerprint.toml's layout cases by name (``descriptor.stride_constexpr_not_16B``)."""
    cases = load_toml(FINGERPRINT_PATH).get("layout", {}).get("case", [])
    return {str(c["name"]): dict(c) for c in cases if isinstance(c, dict) and "name" in c}


def needed_shape(group: str, case: str | None) -> str | None:
    """The shape a cell of ``group`` (``values.where``, ``layout``) with ``case`` needs of a
    use, or None when any use of its op is concerned."""
    table = shape_table()
    if group in table:
        return table[group]
    if case is not None and f"{group}[{case}]" in table:
        return table[f"{group}[{case}]"]
    if group == "layout" and case is not None:
        fields = layout_cases().get(case.split("(", 1)[0], {})
        for key, value in fields.items():
            shape = table.get(f"layout.{fields.get('kind')}.{key}={value}")
            if shape is not None:
                return shape
    return None


class Sites:
    """The team's source read back at a use's ``file:line`` (each file parsed once)."""

    def __init__(
        self,
        roots: Sequence[str | Path],
        values: Mapping[tuple[str, str], Mapping[str, frozenset[int]]] | None = None,
    ) -> None:
        self.roots = [resolved(r) for r in roots]
        # (file, kernel) -> the integers its constexpr parameters take where every launch
        # says (Profile.int_constexprs): ``H * BT`` with every BT a multiple of 16 is aligned
        self.values = values or {}
        # (file, kernel) -> the column patterns the namespaces it names hold it to (a gluon
        # kernel is never interpreted: targets.kernel_columns); absent: every column
        self.held: dict[tuple[str, str], list[tuple[str, ...]]] = {}
        self._modules: dict[str, SourceModule | None] = {}  # per shown path, parsed once
        self._guards: dict[str, list[Any]] = {}  # per shown path: its branch guards
        self._files: list[str] | None = None
        # per shown path: its import lines; the scanned code's calls by the name called, each
        # with its innermost function (built once: an alias's calls are looked up per use)
        self._imports: dict[str, frozenset[int]] = {}
        self._calls: dict[str, list[tuple[str, ast.FunctionDef, ast.Call]]] | None = None

    def _file(self, shown: str) -> Path | None:
        bases = [Path.cwd()]
        for root in self.roots:
            base = root if root.is_dir() else root.parent
            bases.append(base.parent)
        for base in bases:
            path = base / shown
            if path.is_file():
                return path
        return None

    def _module(self, shown: str) -> SourceModule | None:
        """The file read as Python reads it (the scanner's reader and limits), once."""
        if shown not in self._modules:
            path = self._file(shown)
            try:
                self._modules[shown] = parse_module(path, read_source(path)[1]) if path else None
            except (OSError, SyntaxError, ValueError, UnicodeDecodeError, RecursionError):
                self._modules[shown] = None
        return self._modules[shown]

    def tree(self, shown: str) -> ast.Module | None:
        module = self._module(shown)
        return module.tree if module is not None else None

    def branch_runs(self, use: Use, release: Release, censuses: Mapping[str, Any] | None) -> bool:
        """Whether the use's line can run on ``release``: False only where a version or feature
        guard of its file (the scanner's reading, ``matrix.scan.guards.branch_guards``) keeps
        its branch off that release, or of the line that binds the name it calls the API
        through (``bound``: a module-level alias under ``if hasattr(tl, ...)``); a file not
        found or not parsed can run (fail closed)."""
        sites = [(use.path, use.line)]
        path, _, line = use.attr("bound").rpartition(":")
        if path and line.isdigit():
            sites.append((path, int(line)))
        return all(self._runs(p, n, release, censuses) for p, n in sites)

    def _runs(
        self, path: str, line: int, release: Release, censuses: Mapping[str, Any] | None
    ) -> bool:
        if path not in self._guards:
            module = self._module(path)
            self._guards[path] = (
                branch_guards(module.tree, Project([module]).imports(module)) if module else []
            )
        return not any(
            g.first <= line <= g.last and g.decide(release, censuses) is False
            for g in self._guards[path]
        )

    def calls_at(self, use: Use) -> tuple[list[ast.Call], ast.FunctionDef | None]:
        """The calls that start on the use's line (at its column, where one does), and the
        function that holds them."""
        tree = self.tree(use.path)
        if tree is None:
            return [], None
        found: list[ast.Call] = []
        holder = None
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef):
                continue
            if not (fn.lineno <= use.line <= (fn.end_lineno or fn.lineno)):
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.Call) and node.lineno == use.line:
                    found.append(node)
                    holder = fn
        at_col = [c for c in found if c.col_offset == use.col]
        return (at_col or found), holder

    def has_shape(self, use: Use, shape: str, others: Sequence[Use] = ()) -> bool | None:
        """Whether the use's call has ``shape``; None where the source cannot tell.
        ``others``: the uses the same cell matched (a module-level alias of the API is no
        use where its calls are among them: each is decided on its own line)."""
        tree = self.tree(use.path)
        if shape in GLOBAL_SHAPES:
            name = use.attr("name")
            return None if tree is None or not name else _global_shape(tree, name, shape)
        if tree is not None and use.line in self._import_lines(use.path, tree):
            return False  # importing a name does none of what a call of it does
        calls, fn = self.calls_at(use)
        if not calls:
            alias = _alias_at(tree, use.line) if tree is not None else None
            return None if alias is None else self._alias_shape(alias, shape, others)
        # the call the use names, or the one at its column (a call through an alias of the
        # API, `make_desc(...)`, that the profile read as the API's)
        named = [c for c in calls if _named(c, use)]
        named = named or [c for c in calls if c.col_offset == use.col]
        ints = self.values.get((use.path, fn.name), {}) if fn is not None else {}
        verdicts = [SHAPES[shape](call, fn, ints) for call in named]
        if not verdicts:
            return None
        if any(v is True for v in verdicts):
            return True
        return None if any(v is None for v in verdicts) else False

    def _alias_shape(self, alias: str, shape: str, others: Sequence[Use] = ()) -> bool | None:
        """The shape of the calls through a module-level alias of the API (``make_desc =
        tl.make_tensor_descriptor`` on the use's line, called elsewhere as ``make_desc(...)``):
        binding a name does nothing itself. Where every call of the alias in the scanned code
        is a use of its own among ``others`` (the profile read it as the API's call), the
        alias line is none (no: each call is decided on its own line); else every call
        decides (any of the shape: yes; all not: no); none found or one that cannot be told:
        None."""
        verdicts: list[bool | None] = []
        sites: set[tuple[Path, int]] = set()
        for shown, fn, node in self._calls_named().get(alias, []):
            ints = self.values.get((shown, fn.name), {})
            verdicts.append(SHAPES[shape](node, fn, ints))
            sites.add((self._where(shown), node.lineno))
        if not verdicts:
            return None
        if sites <= {(self._where(u.path), u.line) for u in others}:
            return False
        return _fold(verdicts)

    def _import_lines(self, shown: str, tree: ast.Module) -> frozenset[int]:
        if shown not in self._imports:
            self._imports[shown] = frozenset(
                n.lineno for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)
            )
        return self._imports[shown]

    def _calls_named(self) -> dict[str, list[tuple[str, ast.FunctionDef, ast.Call]]]:
        """Every call in a function of the scanned code, by the name it calls (its last
        part), with the innermost function holding it: one walk of each file."""
        if self._calls is None:
            self._calls = {}
            for shown in self._sources():
                tree = self.tree(shown)
                if tree is None:
                    continue
                stack: list[tuple[ast.AST, ast.FunctionDef | None]] = [(tree, None)]
                while stack:
                    node, fn = stack.pop()
                    if isinstance(node, ast.FunctionDef):
                        fn = node
                    if fn is not None and isinstance(node, ast.Call):
                        self._calls.setdefault(callee(node.func) or "", []).append(
                            (shown, fn, node)
                        )
                    stack.extend((child, fn) for child in ast.iter_child_nodes(node))
        return self._calls

    def _where(self, shown: str) -> Path:
        """The file a shown path names, as one key whatever folder it was shown from."""
        path = self._file(shown)
        return resolved(path) if path is not None else Path(shown)

    def _sources(self) -> list[str]:
        """The scanned Python files, as ``tree`` takes them (relative to the folder above
        each root, as the profile names files)."""
        if self._files is None:
            files: list[str] = []
            for root in self.roots:
                base = root.parent
                found = [root] if root.is_file() else sorted(root.rglob("*.py"))
                files += [p.relative_to(base).as_posix() for p in found if p.suffix == ".py"]
            self._files = files
        return self._files


def _alias_at(tree: ast.Module, line: int) -> str | None:
    """The name a module-level ``name = <dotted name>`` on ``line`` binds (an alias of an
    API, no call), or None."""
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and node.lineno == line
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Attribute | ast.Name)
        ):
            return node.targets[0].id
    return None


def _dotted(func: ast.expr) -> list[str]:
    parts = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if isinstance(func, ast.Name):
        parts.append(func.id)
    return parts


def _named(call: ast.Call, use: Use) -> bool:
    """Whether ``call`` is the call the use records (the last part of its name is a part of
    the call's: ``TensorDescriptor.from_tensor(...)`` is a use of ``TensorDescriptor``)."""
    name = use.attr("name") or use.op
    return name.rsplit(".", 1)[-1] in _dotted(call.func)


def _arg(call: ast.Call, i: int, name: str) -> ast.expr | None:
    if len(call.args) > i:
        return call.args[i]
    return next((k.value for k in call.keywords if k.arg == name), None)


def _assigned(fn: ast.FunctionDef | None, name: str) -> list[ast.expr] | None:
    """Every value ``name`` is assigned in ``fn``; None if it is a parameter or never assigned
    (its value comes from elsewhere)."""
    if fn is None:
        return None
    values: list[ast.expr] = []
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name) and t.id == name:
                    values.append(node.value)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            if isinstance(node.target, ast.Name) and node.target.id == name:
                if node.value is None or isinstance(node, ast.AugAssign):
                    return None
                values.append(node.value)
        elif isinstance(node, ast.For):
            if any(isinstance(t, ast.Name) and t.id == name for t in ast.walk(node.target)):
                return None  # a loop variable: its values come from the iterable
        elif isinstance(node, ast.NamedExpr) and node.target.id == name:
            values.append(node.value)
    return values or None


def _combined(fn: ast.FunctionDef | None, name: str) -> bool:
    """Whether ``fn`` combines the condition ``name`` with another (``name |= c``,
    ``name &= c``): a select on it is not a select of one comparison."""
    return fn is not None and any(
        isinstance(n, ast.AugAssign)
        and isinstance(n.op, ast.BitOr | ast.BitAnd)
        and isinstance(n.target, ast.Name)
        and n.target.id == name
        for n in ast.walk(fn)
    )


def _select_of_compare(
    call: ast.Call, fn: ast.FunctionDef | None, ints: Mapping[str, frozenset[int]] = NO_INTS
) -> bool | None:
    """``tl.where(x < y, x, y)`` (or ``>``, ``<=``, ``>=``, either order of x and y): a
    select of an ordering comparison of its own two operands. A condition held in a local
    variable is followed to its assignments; a parameter or loop variable cannot be told."""
    cond, a, b = _arg(call, 0, "condition"), _arg(call, 1, "x"), _arg(call, 2, "y")
    if cond is None or a is None or b is None:
        return None
    sides = {ast.dump(a), ast.dump(b)}

    def fits(expr: ast.expr, depth: int = 0) -> bool | None:
        if isinstance(expr, ast.Compare):
            if len(expr.ops) != 1 or not isinstance(expr.ops[0], _ORDERING):
                return False
            return {ast.dump(expr.left), ast.dump(expr.comparators[0])} == sides
        if isinstance(expr, ast.Name) and depth < 3:
            if _combined(fn, expr.id):
                return False  # `mask |= ...`: the comparison and more, no longer a min/max
            values = _assigned(fn, expr.id)
            if values is None:
                return None
            got = [fits(v, depth + 1) for v in values]
            if any(g is True for g in got):
                return True
            return None if any(g is None for g in got) else False
        # any other condition (a mask `&`, a call, a constant, an equality) is a plain select
        return False

    return fits(cond)


def _stride_kind(e: ast.expr, params: dict[str, bool]) -> str | None:
    """``const`` where a stride folds to a compile-time constant (literals and ``tl.constexpr``
    parameters under arithmetic: ``H * BT``), ``runtime`` where it reads a plain parameter,
    None where it cannot be told (a local, a call, an attribute)."""
    if isinstance(e, ast.Constant) and isinstance(e.value, int):
        return "const"
    if isinstance(e, ast.Name):
        if e.id not in params:
            return None
        return "const" if params[e.id] else "runtime"
    if isinstance(e, ast.BinOp):
        kinds = {_stride_kind(e.left, params), _stride_kind(e.right, params)}
        if "runtime" in kinds:
            return "runtime"
        return "const" if kinds == {"const"} else None
    return None


def _multiple_of_16(e: ast.expr, ints: Mapping[str, frozenset[int]]) -> bool:
    """Whether a stride is provably a multiple of 16 elements (so of 16 bytes): ``16``,
    ``H * 16``, ``BT * 32``, ``H * BT`` where every launch passes a BT that is one (``ints``:
    the kernel's constexpr integers, from its launches)."""
    if isinstance(e, ast.Constant):
        return isinstance(e.value, int) and e.value % 16 == 0
    if isinstance(e, ast.Name) and e.id in ints:
        return bool(ints[e.id]) and all(v % 16 == 0 for v in ints[e.id])
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Mult):
        return _multiple_of_16(e.left, ints) or _multiple_of_16(e.right, ints)
    return False


def _strides_of(call: ast.Call, fn: ast.FunctionDef | None) -> list[str | None] | None:
    """The kind (``_stride_kind``) of each stride but the last of an in-kernel descriptor
    construction, ``[]`` for a host ``TensorDescriptor`` (run-time strides), None where the
    strides are not a literal list."""
    if "TensorDescriptor" in _dotted(call.func):
        return []
    strides = _arg(call, 2, "strides")
    if not isinstance(strides, (ast.List, ast.Tuple)):
        return None
    params: dict[str, bool] = {}
    if fn is not None:
        for p in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]:
            params[p.arg] = p.annotation is not None and "constexpr" in ast.dump(p.annotation)
    return [_stride_kind(s, params) for s in strides.elts[:-1]]


def _fold(kinds: list[bool | None]) -> bool | None:
    if any(k is True for k in kinds):
        return True
    return None if any(k is None for k in kinds) else False


def _constexpr_strides(
    call: ast.Call, fn: ast.FunctionDef | None, ints: Mapping[str, frozenset[int]] = NO_INTS
) -> bool | None:
    """A descriptor built in the kernel (``tl.make_tensor_descriptor``) whose strides other
    than the last include a literal or ``tl.constexpr`` value (``H * BT`` with both
    constexpr). A host ``TensorDescriptor`` (strides from the tensor at run time) never has
    that shape."""
    kinds = _strides_of(call, fn)
    if kinds is None:
        return None
    return _fold([None if k is None else k == "const" for k in kinds])


def _constexpr_strides_not_16B(
    call: ast.Call, fn: ast.FunctionDef | None, ints: Mapping[str, frozenset[int]] = NO_INTS
) -> bool | None:
    """``_constexpr_strides`` where such a stride may not be a multiple of 16 bytes: one that
    is provably a multiple of 16 elements (``H * 16``; ``H * BT`` where every launch passes
    a BT that is: ``ints``) cannot be the unaligned case."""
    kinds = _strides_of(call, fn)
    if kinds is None:
        return None
    strides = _arg(call, 2, "strides")
    elts = strides.elts[:-1] if isinstance(strides, (ast.List, ast.Tuple)) else []
    return _fold(
        [None if k is None else (k == "const" and not _multiple_of_16(e, ints))
         for k, e in zip(kinds, elts, strict=False)]
    )  # fmt: skip


def _global_kind(node: ast.Assign | ast.AnnAssign) -> str:
    """How a module global is bound, as fp.rules' cases tell them apart: ``X: tl.constexpr =
    3`` (annotated), ``X = tl.constexpr(3)`` (constexpr), ``X = 3`` (plain)."""
    if isinstance(node, ast.AnnAssign):
        return "global_annotated" if "constexpr" in ast.dump(node.annotation) else "global_plain"
    value = node.value
    if isinstance(value, ast.Call) and (_dotted(value.func) or [""])[0] == "constexpr":
        return "global_constexpr"
    return "global_plain"


def _global_shape(tree: ast.Module, name: str, shape: str) -> bool | None:
    """Whether the module global ``name`` a kernel reads is bound the way ``shape`` says;
    None where this module does not bind it (imported: cannot tell here)."""
    kinds = set()
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
        ) or (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.target.id == name
        ):
            kinds.add(_global_kind(node))
    if not kinds:
        return None
    return shape in kinds


# Each shape reads the call, the function that holds it, and that function's constexpr
# integers where its launches say (``Profile.int_constexprs``).
SHAPES: dict[
    str,
    Callable[[ast.Call, ast.FunctionDef | None, Mapping[str, frozenset[int]]], bool | None],
] = {
    "select_of_compare": _select_of_compare,
    "constexpr_strides": _constexpr_strides,
    "constexpr_strides_not_16B": _constexpr_strides_not_16B,
}
# Shapes of the module global a kernel reads (``rule.global_read`` uses), not of a call.
GLOBAL_SHAPES = ("global_plain", "global_constexpr", "global_annotated")
