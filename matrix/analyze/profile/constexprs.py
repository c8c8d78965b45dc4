"""Branches on a kernel's constexpr parameters, read the way Triton compiles them.

Triton compiles each value of a ``tl.constexpr`` apart and folds the branches on it, so values
from different branches never meet in one compiled kernel. ``constexpr_cases`` lists the
readings a kernel asks for (the constants each parameter is compared with, one value unequal
to all of them, True/False where it is tested bare); ``static_truth`` decides a branch test
for one such reading (None: it depends on more than the fixed values, and both sides are read
and joined, as for a run-time condition).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping

# A constexpr value unequal to every constant the kernel compares the parameter with (the
# host may pass any): ``==`` is false, ``!=`` true, its truth unknown.
OTHER_VALUE = object()
# At most this many readings of one kernel for its constexpr branches (the product of each
# parameter's values); beyond it the kernel is read once with every branch joined, as before.
MAX_CONSTEXPR_CASES = 8
_NO_CONST = object()


def _const_of(e: ast.expr, glob: Mapping[str, ast.expr], depth: int = 0) -> object:
    """The Python value of a literal, a negated literal, ``tl.constexpr(literal)`` or a module
    constant bound to one; ``_NO_CONST`` otherwise."""
    if depth > 4:
        return _NO_CONST
    if isinstance(e, ast.Constant) and isinstance(e.value, int | float | str | bool | None):
        return e.value
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
        v = _const_of(e.operand, glob, depth + 1)
        return -v if isinstance(v, int | float) and not isinstance(v, bool) else _NO_CONST
    if isinstance(e, ast.Call) and len(e.args) == 1 and "constexpr" in ast.unparse(e.func):
        return _const_of(e.args[0], glob, depth + 1)
    if isinstance(e, ast.Name) and e.id in glob:
        return _const_of(glob[e.id], glob, depth + 1)
    return _NO_CONST


def static_truth(
    test: ast.expr, fixed: Mapping[str, object], glob: Mapping[str, ast.expr]
) -> bool | None:
    """Whether ``test`` holds for the constexpr values ``fixed`` (None: it depends on more than
    them). Reads a fixed name, ``not``, ``and``/``or`` and ``NAME ==``/``!=`` a constant."""
    if not fixed:
        return None
    if isinstance(test, ast.Name) and test.id in fixed:
        v = fixed[test.id]
        return None if v is OTHER_VALUE else bool(v)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        t = static_truth(test.operand, fixed, glob)
        return None if t is None else not t
    if isinstance(test, ast.BoolOp):
        parts = [static_truth(v, fixed, glob) for v in test.values]
        stop = isinstance(test.op, ast.Or)  # the value that decides: True for or, False for and
        if any(p is stop for p in parts):
            return stop
        return (not stop) if all(p is not None for p in parts) else None
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        op, left, right = test.ops[0], test.left, test.comparators[0]
        if not isinstance(op, ast.Eq | ast.NotEq | ast.Is | ast.IsNot):
            return None
        if isinstance(right, ast.Name) and right.id in fixed:
            left, right = right, left
        if not (isinstance(left, ast.Name) and left.id in fixed):
            return None
        c = _const_of(right, glob)
        if c is _NO_CONST:
            return None
        v = fixed[left.id]
        same = v is not OTHER_VALUE and v == c
        return same if isinstance(op, ast.Eq | ast.Is) else not same
    return None


def constexpr_cases(
    fn: ast.FunctionDef | ast.AsyncFunctionDef,
    glob: Mapping[str, ast.expr],
    given: Iterable[str] = (),
    known: Mapping[str, frozenset[int]] | None = None,
) -> list[dict[str, object]]:
    """The readings a kernel's branches on its constexpr parameters ask for: one per
    combination of each parameter's values (the constants it is compared with, plus one
    unequal to all of them; True and False where it is tested bare). Triton compiles each
    value apart, so values from different branches never meet; reading all branches joined
    pairs them (an fp32 accumulator of one mode with the narrow input of another). A parameter
    the launch fixes (``given``) or the body rebinds is not enumerated; more than
    ``MAX_CONSTEXPR_CASES`` combinations: one joined reading, as before. A parameter whose
    values the host launch tells (``known``: ``ROUND=True``, a wrapper's ``fp32_scale: bool =
    True`` no caller changes) takes only those."""
    params = [a for a in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]
              if a.annotation is not None and "constexpr" in ast.unparse(a.annotation)]  # fmt: skip
    names = {a.arg for a in params} - set(given)
    stored = {
        n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    names -= stored
    values: dict[str, list[object]] = {}
    for node in ast.walk(fn):
        if not isinstance(node, ast.If):
            continue
        for t in ast.walk(node.test):
            if (
                isinstance(t, ast.Compare)
                and len(t.ops) == 1
                and isinstance(t.ops[0], ast.Eq | ast.NotEq | ast.Is | ast.IsNot)
            ):
                for a, b in ((t.left, t.comparators[0]), (t.comparators[0], t.left)):
                    if isinstance(a, ast.Name) and a.id in names:
                        c = _const_of(b, glob)
                        if c is not _NO_CONST:
                            seen = values.setdefault(a.id, [OTHER_VALUE])
                            if c not in seen:
                                seen.append(c)
    for node in ast.walk(fn):  # tested bare (`if A and not B:`): True and False
        if isinstance(node, ast.If):
            for t in ast.walk(node.test):
                if isinstance(t, ast.Name) and t.id in names and t.id not in values:
                    values[t.id] = [True, False]
    for name, told in (known or {}).items():
        if name in values:
            values[name] = [*sorted(told)]
    cases: list[dict[str, object]] = [{}]
    for name, vals in sorted(values.items()):
        cases = [{**c, name: v} for c in cases for v in vals]
        if len(cases) > MAX_CONSTEXPR_CASES:
            return [{}]
    return cases
