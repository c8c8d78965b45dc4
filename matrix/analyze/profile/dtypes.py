"""The kernel reader's dtype expressions: what ``tl.float16``, ``torch.half``, ``x.dtype``,
``ptr.dtype.element_ty`` or a constexpr holding one names, and conditions on a dtype
(``x.dtype.is_int()``, ``dtype is tl.bfloat16``). A part of ``KernelReader``
(``matrix.analyze.profile.reader``), which it is mixed into."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from matrix.analyze.profile.compiled import BOUND_SCALARS, RUNTIME_DTYPE
from matrix.analyze.profile.kinds import _dtype_names, _elem
from matrix.analyze.profile.model import (
    SCALAR_KINDS,
    UNKNOWN,
    Resolver,
    UsageMap,
    Val,
    _k,
    base_of,
    per_side,
)


class DtypeReader:
    """The dtype expressions of one ``@triton.jit`` function (mixed into ``KernelReader``,
    which holds the state and the expression reading these parts use)."""

    if TYPE_CHECKING:
        r: Resolver
        map: UsageMap
        globals: Mapping[str, ast.expr]
        env: dict[str, Val]

        def ev(self, node: ast.expr | None, record: bool = True) -> Val: ...

    def _dtype_name(self, text: str) -> str | None:
        return self.map.dtypes.get(text)

    def _dtype_of_expr(self, expr: ast.expr | None) -> frozenset[str] | None:
        """The dtypes a dtype expression names: ``tl.float16``, ``torch.half``, a constexpr
        parameter holding one (from a launch), ``x.dtype``; None when unknown."""
        return self._dtype_val(expr).kinds

    def _dtype_cond(self, test: ast.expr) -> tuple[str, frozenset[str], frozenset[str]] | None:
        """A condition on the dtype of one type variable (``x.dtype.is_int()``,
        ``dtype is tl.bfloat16``, their ``not``/``and``/``or``, ``tl.constexpr(...)``): the
        variable, and the dtypes for which it is true and false; None for any other test."""
        got = self._dtype_truth(test)
        if got is None:
            return None
        var, table = got
        yes = frozenset(d for d, t in table.items() if t)
        return var, yes, frozenset(table) - yes

    def _dtype_truth(self, test: ast.expr) -> tuple[str, dict[str, bool]] | None:
        if isinstance(test, ast.Call) and self.r.tl_name(test.func) == "constexpr" and test.args:
            return self._dtype_truth(test.args[0])
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            inner = self._dtype_truth(test.operand)
            return None if inner is None else (inner[0], {d: not t for d, t in inner[1].items()})
        # `a or b`, and `a | b` / `a & b` of two predicates (bools: the same truth)
        values: list[ast.expr] | None = None
        if isinstance(test, ast.BoolOp):
            values, every = test.values, isinstance(test.op, ast.And)
        elif isinstance(test, ast.BinOp) and isinstance(test.op, ast.BitOr | ast.BitAnd):
            values, every = [test.left, test.right], isinstance(test.op, ast.BitAnd)
        if values is not None:
            parts = [self._dtype_truth(v) for v in values]
            if any(p is None for p in parts) or len({p[0] for p in parts if p}) != 1:
                return None
            var = parts[0][0]  # type: ignore[index]
            tables = [p[1] for p in parts if p]
            keys = set(tables[0]).intersection(*tables[1:])
            join = all if every else any
            return var, {d: join(t[d] for t in tables) for d in keys}
        pred: Callable[[str], bool] | None = None
        subject: ast.expr | None = None
        if (
            isinstance(test, ast.Call)
            and isinstance(test.func, ast.Attribute)
            and not test.args
            and test.func.attr in self.map.dtype_predicates
        ):
            holds = self.map.dtype_predicates[test.func.attr]
            subject, pred = test.func.value, holds.__contains__
        elif isinstance(test, ast.Compare) and len(test.ops) == 1:
            op, right = test.ops[0], test.comparators[0]
            named = self._dtype_val(right).kinds
            if named is not None and len(named) == 1 and isinstance(op, ast.Eq | ast.Is):
                subject, pred = test.left, named.__contains__
            elif named is not None and len(named) == 1 and isinstance(op, ast.NotEq | ast.IsNot):
                subject, pred = test.left, (lambda d, n=named: d not in n)
        if subject is None or pred is None:
            return None
        v = self._dtype_val(subject)
        if not v.vars and v.kinds and v.cand is None:
            # a dtype the reading knows (declared, a cast's): the test is decided, the same
            # for each of its dtypes, or not at all (``"": ...``: no variable to narrow)
            truths = {pred(k) for k in v.kinds}
            return ("", dict.fromkeys(v.kinds, truths.pop())) if len(truths) == 1 else None
        if len(v.vars) != 1 or v.per is None or v.cand is not None:
            return None  # (a dtype that differs per release: each branch for every dtype)
        table: dict[str, bool] = {}
        for d, ks in v.per:
            truths = {pred(k) for k in ks}
            if len(truths) != 1:
                return None  # the subject is not one dtype for this dtype of the variable
            table[d] = truths.pop()
        return next(iter(v.vars)), table

    def _dtype_val(self, expr: ast.expr | None) -> Val:
        """The dtypes a dtype expression names, as a value: kinds, and the type variables
        they stand for (``x_ptr.dtype.element_ty`` names the element type of ``x_ptr``)."""
        if expr is None:
            return UNKNOWN
        if isinstance(expr, ast.Call) and self.r.tl_name(expr.func) == "constexpr" and expr.args:
            return self._dtype_val(expr.args[0])  # tl.constexpr(x.dtype): the same dtype
        if isinstance(expr, ast.Call) and self.r.tl_name(expr.func) == "dtype" and expr.args:
            named = _spelt(expr.args[0], frozenset(self.map.dtypes.values()))
            return Val(named) if named else UNKNOWN  # tl.dtype(f"uint{bits}"): one of those
        if isinstance(expr, ast.Attribute):
            base = expr.value
            if (
                expr.attr == "element_ty"
                and isinstance(base, ast.Attribute)
                and base.attr in ("dtype", "type")
            ):
                # ptr.dtype.element_ty (ptr.type.element_ty): what the pointer points to
                v = self.ev(base.value, record=False)
                return _elem(v) if v.pointer and v.kinds else UNKNOWN
            if expr.attr in ("dtype", "type"):
                # x.dtype (x.type: a block's element type, a scalar's own): of a scalar, the
                # dtype Triton gives it as a tensor (aiter's ``tl.cast(NUM_XCDS,
                # tall_xcds.type)`` with ``tall_xcds = GRID_MN % NUM_XCDS``)
                v = self.ev(expr.value, record=False)
                if v.kinds and v.kinds <= SCALAR_DTYPES.keys():
                    return Val(frozenset(SCALAR_DTYPES[k] for k in v.kinds))
                ok = v.kinds and not (v.kinds & SCALAR_KINDS)
                ok = ok and not (expr.attr == "type" and v.pointer)  # (a pointer type)
                return _elem(v) if ok else UNKNOWN
            name = self._dtype_name(expr.attr)
            q = self.r.qualname(expr) or ""
            if name and (q.startswith(("triton.", "torch.")) or self.r.tl_name(expr)):
                return _k(name)
        if isinstance(expr, ast.Name):
            known = self.env.get(expr.id)
            if known is not None and known.dtype not in (False, None):
                return per_side(_dtype_names, known)
            g = self.globals.get(expr.id) if known is None else None
            if g is not None and not isinstance(g, ast.Name):
                # a module's dtype constant (`ACC: tl.constexpr = tl.float32`), as a default
                # (`DTYPE: tl.constexpr = ACC`) or in the body
                return self._dtype_val(g)
        if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
            name = self._dtype_name(expr.value)
            return _k(name) if name else UNKNOWN
        if isinstance(expr, ast.Call):  # a call returning a dtype: `x.to(accum_type(x.dtype))`
            got = self.ev(expr, record=False)
            if isinstance(got.dtype, frozenset) or isinstance(base_of(got).dtype, frozenset):
                return per_side(_dtype_names, got)
        return UNKNOWN


# the dtype of a scalar's kind as a tensor (what ``.type`` / ``.dtype`` of it is): the dtype a
# Python scalar takes when bound (compiled.BOUND_SCALARS), a run-time argument's own
SCALAR_DTYPES = {
    k: RUNTIME_DTYPE.get(BOUND_SCALARS.get(k, k), BOUND_SCALARS.get(k, k)) for k in SCALAR_KINDS
}


def _spelt(arg: ast.expr, names: frozenset[str]) -> frozenset[str]:
    """The dtype names a string expression may spell: a constant, or an f-string whose
    constant parts fix the rest (aiter's ``tl.dtype(f"uint{x_nbits}")``: an unsigned integer
    of some width); empty where nothing is fixed."""
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return frozenset({arg.value}) & names
    if not isinstance(arg, ast.JoinedStr):
        return frozenset()
    parts = [re.escape(str(v.value)) if isinstance(v, ast.Constant) else "[0-9a-z]+"
             for v in arg.values]  # fmt: skip
    fixed = [v for v in arg.values if isinstance(v, ast.Constant) and str(v.value)]
    if not fixed:
        return frozenset()
    pattern = re.compile("".join(parts))
    return frozenset(n for n in names if pattern.fullmatch(n))
