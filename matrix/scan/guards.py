"""Branches that run only on some Triton releases: ``if Version(triton.__version__) >= ...``.

Real code keeps the old spelling of a moved API in the branch for old releases:

    if Version(triton.__version__) >= Version("3.0.0"):
        from triton.language.extra import libdevice      # 3.0 and later
    else:
        triton_tanh = tl.math.tanh                        # before 3.0 only

A finding in a branch the candidate does not take is no hazard for it: the judge marks it "does
not affect" and says which test rules the branch out. Only tests the scanner can evaluate for a
release are read (a version of Triton compared with a literal version); any other test
(a device check, a feature probe) leaves the branch as it is, so nothing is hidden on a guess.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from matrix.core import Release, ReleaseError
from matrix.scan.imports import Imports

COMPARE: dict[type[ast.cmpop], str] = {
    ast.GtE: ">=",
    ast.Gt: ">",
    ast.LtE: "<=",
    ast.Lt: "<",
    ast.Eq: "==",
    ast.NotEq: "!=",
}
OPS: dict[str, Callable[[Release, Release], bool]] = {
    ">=": operator.ge,
    ">": operator.gt,
    "<=": operator.le,
    "<": operator.lt,
    "==": operator.eq,
    "!=": operator.ne,
}
SWAPPED = {">=": "<=", ">": "<", "<=": ">=", "<": ">", "==": "==", "!=": "!="}
# operator.ge and friends, as helpers such as compare_version("triton", operator.ge, "3.0") take
OPERATOR_NAMES = {"ge": ">=", "gt": ">", "le": "<=", "lt": "<", "eq": "==", "ne": "!="}
# callables that turn a version string into something comparable
VERSION_CALLS = {"Version", "parse", "parse_version", "LooseVersion", "StrictVersion"}


@dataclass(frozen=True)
class VersionGuard:
    """Lines ``first``-``last`` run only when ``triton <op> version`` is ``when``."""

    first: int
    last: int
    op: str
    version: Release
    when: bool

    def runs_on(self, release: Release) -> bool:
        return OPS[self.op](release, self.version) == self.when

    def text(self) -> str:
        test = f"triton {self.op} {self.version}"
        return test if self.when else f"not ({test})"


def _is_triton_version(node: ast.expr, imports: Imports) -> bool:
    """``triton.__version__`` (however imported), ``Version(triton.__version__)``,
    ``importlib.metadata.version("triton")``."""
    if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
        arg = node.args[0]
        name = _last_name(node.func)
        if name in VERSION_CALLS:
            return _is_triton_version(arg, imports)
        # importlib.metadata.version("triton")
        return name == "version" and isinstance(arg, ast.Constant) and arg.value == "triton"
    return isinstance(node, (ast.Attribute, ast.Name)) and (
        imports.qualname(node) == "triton.__version__"
    )


def _literal_version(node: ast.expr) -> Release | None:
    is_call = isinstance(node, ast.Call) and len(node.args) == 1
    if is_call and _last_name(node.func) in VERSION_CALLS:  # type: ignore[attr-defined]
        node = node.args[0]  # type: ignore[attr-defined]
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            return Release.parse(node.value)
        except ReleaseError:
            return None
    return None


def _last_name(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


def version_test(
    test: ast.expr, imports: Imports, names: dict[str, ast.expr], depth: int = 0
) -> tuple[str, Release, bool] | None:
    """``(op, version, when)``: ``test`` is ``when`` exactly when ``triton <op> version``
    holds (``when`` False for a negated test). None when the scanner cannot evaluate it."""
    if depth > 3:
        return None
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = version_test(test.operand, imports, names, depth + 1)
        if inner is None:
            return None
        return (inner[0], inner[1], not inner[2])
    if isinstance(test, ast.Name) and test.id in names:  # IS_TRITON_3 = Version(...) >= ...
        return version_test(names[test.id], imports, names, depth + 1)
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        op = COMPARE.get(type(test.ops[0]))
        left, right = test.left, test.comparators[0]
        if op is None:
            return None
        if _is_triton_version(left, imports):
            v = _literal_version(right)
            return (op, v, True) if v is not None else None
        if _is_triton_version(right, imports):
            v = _literal_version(left)
            return (SWAPPED[op], v, True) if v is not None else None
        return None
    if isinstance(test, ast.Call) and len(test.args) == 3:  # compare_version("triton", ge, "3")
        package, how, version = test.args
        op = OPERATOR_NAMES.get(_last_name(how))
        v = _literal_version(version)
        if isinstance(package, ast.Constant) and package.value == "triton" and op and v:
            return (op, v, True)
    return None


def _module_names(tree: ast.Module) -> dict[str, ast.expr]:
    out: dict[str, ast.expr] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target = stmt.targets[0]
            if isinstance(target, ast.Name):
                out[target.id] = stmt.value
    return out


def _span(body: list[ast.stmt]) -> tuple[int, int]:
    return body[0].lineno, max(getattr(s, "end_lineno", s.lineno) or s.lineno for s in body)


def version_guards(tree: ast.Module, imports: Imports) -> list[VersionGuard]:
    """Every if/elif branch of the file whose test is a Triton version comparison."""
    names = _module_names(tree)
    out: list[VersionGuard] = []
    for node in _ifs(tree):
        got = version_test(node.test, imports, names)
        if got is None:
            continue
        op, version, when = got
        out.append(VersionGuard(*_span(node.body), op, version, when))
        if node.orelse:
            out.append(VersionGuard(*_span(node.orelse), op, version, not when))
    return out


def _ifs(tree: ast.Module) -> Iterator[ast.If]:
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            yield node
