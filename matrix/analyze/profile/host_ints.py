"""The integers a host launch passes a constexpr (``BT=BT`` after ``B, T, H, BT = A.shape``
and ``assert A.shape[-1] in [16, 32, 64]``): what ``HostTypes`` records in ``Launch.values``,
so that a shape check (a descriptor stride ``H * BT`` a multiple of 16 elements) can be decided
from what every launch passes. Literals, locals assigned literals or unpacked from a shape,
narrowed by the function's top-level asserts above the launch; anything else: not known."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any

MAX_HOST_DEPTH = 10  # host names, calls and returns followed from one launch argument


class HostInts:
    """The integer part of ``HostTypes`` (which provides ``statements`` and ``_site``)."""

    statements: Mapping[int, list[ast.AST]]
    _site: tuple[int, int]
    arguments: Any  # HostTypes.arguments: what each call passes for a parameter

    def int_values(self, expr: ast.expr, scope: Any, depth: int = 0) -> frozenset[int] | None:
        """The integers host expression ``expr`` may be: a literal, a local assigned literals
        or unpacked from a tensor's ``shape`` (``B, T, H, BT = A.shape``), narrowed by the
        function's top-level asserts (``assert A.shape[-1] in [16, 32, 64]``, ``assert BT
        in (...)``); None where any assignment (a parameter: its callers) is not known."""
        if depth > MAX_HOST_DEPTH:
            return None
        if isinstance(expr, ast.Constant) and isinstance(expr.value, int):
            return frozenset({expr.value})  # a flag (``ROUND=True``) is a constexpr value too
        if not isinstance(expr, ast.Name) or scope is None:
            return None
        name = expr.id
        found: list[frozenset[int] | None] = []
        until = self._site[1] if self._site[0] == id(scope) else 0
        for node in self.statements.get(id(scope), []):
            if until and getattr(node, "lineno", 0) > until:
                continue  # after the launch, outside any loop: not what it passes
            if isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    if isinstance(t, ast.Name) and t.id == name:
                        rhs = node.value
                        found.append(self.int_values(rhs, scope, depth + 1) if rhs else None)
                    elif isinstance(t, ast.Tuple | ast.List) and any(
                        isinstance(e, ast.Name) and e.id == name for e in t.elts
                    ):
                        found.append(self._dim_values(t, name, node.value, scope))
            elif rebinds(node, name):
                found.append(None)
        params = [a.arg for a in [*scope.args.posonlyargs, *scope.args.args,
                                  *scope.args.kwonlyargs]]  # fmt: skip
        if name in params and not found:  # a parameter: what every call of it passes
            got = self._passed_ints(name, scope, depth)
        elif name in params or not found or any(f is None for f in found):
            got = None
        else:
            got = frozenset().union(*(f for f in found if f is not None))
        asserted = _asserted_ints(scope, lambda e: isinstance(e, ast.Name) and e.id == name,
                                  until)  # fmt: skip
        if asserted is None:
            return got
        return asserted if got is None else got & asserted

    def _passed_ints(self, name: str, scope: Any, depth: int) -> frozenset[int] | None:
        """The integers every call of ``scope`` passes for its positional parameter ``name``
        (a left-out one: its default); None where one is not known, or nothing calls it."""
        if name not in [a.arg for a in [*scope.args.posonlyargs, *scope.args.args]]:
            return None
        got: set[int] = set()
        passed = self.arguments(name, scope)
        for arg, caller in passed:
            one = self.int_values(arg, caller, depth + 1) if arg is not None else None
            if one is None:
                return None
            got |= one
        return frozenset(got) if passed else None

    def _dim_values(
        self, target: ast.Tuple | ast.List, name: str, rhs: ast.expr | None, scope: Any
    ) -> frozenset[int] | None:
        """``name``'s integers where ``target = rhs`` unpacks a tensor's shape (``B, T, H, BT
        = A.shape``): what the function's top-level asserts admit for that dimension."""
        if any(isinstance(e, ast.Starred) for e in target.elts):
            return None
        if not (isinstance(rhs, ast.Attribute) and rhs.attr == "shape"):
            return None
        n = len(target.elts)
        i = next(k for k, e in enumerate(target.elts) if isinstance(e, ast.Name) and e.id == name)
        tensor = ast.dump(rhs.value)

        def is_dim(e: ast.expr) -> bool:
            return (
                isinstance(e, ast.Subscript)
                and isinstance(e.value, ast.Attribute)
                and e.value.attr == "shape"
                and ast.dump(e.value.value) == tensor
                and _int_index(e.slice) in (i, i - n)
            )

        return _asserted_ints(scope, is_dim, self._site[1] if self._site[0] == id(scope) else 0)


def _int_index(e: ast.expr) -> int | None:
    """``3``, ``-1``: a literal index."""
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
        inner = _int_index(e.operand)
        return -inner if inner is not None else None
    return e.value if isinstance(e, ast.Constant) and type(e.value) is int else None


def _asserted_ints(scope: Any, subject: Any, until: int = 0) -> frozenset[int] | None:
    """The integers the function's top-level asserts (above line ``until``, where nonzero)
    admit for what ``subject`` (a test on an expression) matches: ``assert X in [16, 32,
    64]``, ``assert X == 16`` and conjuncts of them (an assert under a branch holds only
    there); None where none says."""
    got: frozenset[int] | None = None
    for s in scope.body:
        if not isinstance(s, ast.Assert) or (until and s.lineno > until):
            continue
        test = s.test
        parts = (
            test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
        )
        for p in parts:
            if not (isinstance(p, ast.Compare) and len(p.ops) == 1 and subject(p.left)):
                continue
            op, right = p.ops[0], p.comparators[0]
            values: list[ast.expr] = []
            if isinstance(op, ast.In) and isinstance(right, ast.List | ast.Tuple | ast.Set):
                values = list(right.elts)
            elif isinstance(op, ast.Eq):
                values = [right]
            ints = [_int_index(v) for v in values]
            if values and all(v is not None for v in ints):
                admitted = frozenset(v for v in ints if v is not None)
                got = admitted if got is None else got & admitted
    return got


def rebinds(node: ast.AST, name: str) -> bool:
    """Whether a loop, ``with``, ``del`` or ``:=`` rebinds ``name``."""
    if isinstance(node, ast.For | ast.AsyncFor):
        targets: list[ast.expr] = [node.target]
    elif isinstance(node, ast.With | ast.AsyncWith):
        targets = [i.optional_vars for i in node.items if i.optional_vars is not None]
    elif isinstance(node, ast.Delete):
        targets = list(node.targets)
    elif isinstance(node, ast.NamedExpr):
        targets = [node.target]
    else:
        return False
    return any(isinstance(n, ast.Name) and n.id == name for t in targets for n in ast.walk(t))
