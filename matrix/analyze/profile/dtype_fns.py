"""Plain Python functions a kernel calls on a dtype: what they return for each dtype.

FlagGems' cumsum.py picks its accumulator with ``acc_dtype: tl.constexpr =
get_scan_accum_type(in_ptr.type.element_ty)``, a module-level function (``@tl.constexpr``,
``@triton.constexpr_function`` or undecorated) that Triton runs at compile time on the dtype
it is given: ``if inp_dtype.is_bf16() or inp_dtype.is_fp16(): return tl.float32``. Read as an
unknown call, the value cast to it would be any dtype; evaluated once per dtype the argument
may take, it is float32 for every 16-bit input.

The evaluator knows only what such functions are made of: ``if``/``elif``/``else``,
``return``, assignments to a local name, the dtype predicates of ``[result_types.
dtype_predicates]`` (``.is_bf16()``, ``.is_int()``...), ``==``/``!=``/``is``/``in`` between
dtypes and constants, ``and``/``or``/``not``, conditional expressions, and Triton's dtype
constants (``tl.float32``). Anything else makes the call unknown (the caller then fails
closed, as for any call it cannot read).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from matrix.analyze.profile.model import WIDTH, Resolver, UsageMap

# Decorators that leave a function a plain function Triton calls at compile time (a
# ``tl.constexpr``-wrapped function is called through its value); any other (a cache, a
# library's own wrapper) may change what it returns, and the call stays unknown.
PLAIN_DECORATORS = frozenset({"constexpr", "constexpr_function"})
MAX_STEPS = 200  # statements and expressions one evaluation may take (no loops: bounded anyway)


@dataclass(frozen=True)
class Dtype:
    """A Triton dtype object inside the evaluation (``tl.float32``), by its canonical name."""

    name: str


class Unknown(Exception):
    """The function does something the evaluator does not model: the call is unknown."""


def is_plain(fn: ast.FunctionDef | ast.AsyncFunctionDef, resolver: Resolver) -> bool:
    """Whether ``fn`` is a plain function a kernel may call at compile time: not async, not
    ``@triton.jit``, and decorated by nothing but ``tl.constexpr``/``constexpr_function``."""
    if isinstance(fn, ast.AsyncFunctionDef):
        return False
    for d in fn.decorator_list:
        q = resolver.qualname(d) or ""
        if q.rsplit(".", 1)[-1] not in PLAIN_DECORATORS:
            return False
    return True


def evaluate(
    fn: ast.FunctionDef,
    resolver: Resolver,
    umap: UsageMap,
    args: Sequence[object],
    kwargs: Mapping[str, object] | None = None,
) -> object:
    """What ``fn`` returns for ``args`` (``Dtype`` values and Python constants); raises
    ``Unknown`` where the function does anything the evaluator does not model."""
    return _Evaluation(fn, resolver, umap).call(args, kwargs or {})


class _Evaluation:
    def __init__(self, fn: ast.FunctionDef, resolver: Resolver, umap: UsageMap) -> None:
        self.fn, self.r, self.map = fn, resolver, umap
        self.env: dict[str, object] = {}
        self.steps = 0

    def call(self, args: Sequence[object], kwargs: Mapping[str, object]) -> object:
        a = self.fn.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs:
            raise Unknown("a signature beyond plain parameters")
        params = [p.arg for p in a.args]
        if len(args) > len(params):
            raise Unknown("more arguments than parameters")
        defaults = dict(zip(reversed(params), reversed(a.defaults), strict=False))
        for name, value in zip(params, args, strict=False):
            self.env[name] = value
        for name, value in kwargs.items():
            if name not in params or name in self.env:
                raise Unknown(f"argument {name!r}")
            self.env[name] = value
        for name in params:
            if name not in self.env:
                if name not in defaults:
                    raise Unknown(f"no value for {name!r}")
                self.env[name] = self.ev(defaults[name])
        done, value = self.block(self.fn.body)
        if not done:
            raise Unknown("falls off the end (returns None)")
        return value

    def _step(self) -> None:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise Unknown("too long")

    def block(self, body: Sequence[ast.stmt]) -> tuple[bool, object]:
        """Run ``body``: (whether it returned, the value returned)."""
        for s in body:
            self._step()
            if isinstance(s, ast.Return):
                if s.value is None:
                    raise Unknown("returns None")
                return True, self.ev(s.value)
            if isinstance(s, ast.If):
                done, value = self.block(s.body if _truth(self.ev(s.test)) else s.orelse)
                if done:
                    return True, value
            elif isinstance(s, ast.Assign) and all(isinstance(t, ast.Name) for t in s.targets):
                value = self.ev(s.value)
                for t in s.targets:
                    self.env[t.id] = value  # type: ignore[attr-defined]
            elif isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name) and s.value:
                self.env[s.target.id] = self.ev(s.value)
            elif isinstance(s, ast.Pass) or (
                isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)
            ):
                continue  # a docstring
            else:
                raise Unknown(f"statement {type(s).__name__}")
        return False, None

    def ev(self, e: ast.expr) -> object:
        self._step()
        if isinstance(e, ast.Constant):
            return e.value
        if isinstance(e, ast.Name):
            if e.id in self.env:
                return self.env[e.id]
            return self._named(e)
        if isinstance(e, ast.Attribute):
            if e.attr == "primitive_bitwidth":
                base = self.ev(e.value)
                if isinstance(base, Dtype) and base.name in WIDTH:
                    return WIDTH[base.name]
                raise Unknown("bit width")
            return self._named(e)
        if isinstance(e, ast.Call):
            return self._call(e)
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not):
            return not _truth(self.ev(e.operand))
        if isinstance(e, ast.BoolOp):  # Python's: the first falsy (and) / truthy (or) value
            value: object = None
            for v in e.values:
                value = self.ev(v)
                if _truth(value) != isinstance(e.op, ast.And):
                    return value
            return value
        if isinstance(e, ast.IfExp):
            return self.ev(e.body if _truth(self.ev(e.test)) else e.orelse)
        if isinstance(e, ast.Compare):
            left = self.ev(e.left)
            for op, right_node in zip(e.ops, e.comparators, strict=True):
                right = self.ev(right_node)
                if not _compare(op, left, right):
                    return False
                left = right
            return True
        if isinstance(e, ast.Tuple | ast.List):
            return tuple(self.ev(x) for x in e.elts)
        raise Unknown(f"expression {type(e).__name__}")

    def _named(self, e: ast.expr) -> Dtype:
        """A Triton dtype constant (``tl.float32``, ``triton.language.bfloat16``)."""
        q = self.r.qualname(e) or ""
        name = self.map.dtypes.get(q.rsplit(".", 1)[-1]) if q.startswith("triton.") else None
        if name is None:
            raise Unknown(f"name {ast.unparse(e)}")
        return Dtype(name)

    def _call(self, e: ast.Call) -> object:
        """A dtype predicate: ``x.is_bf16()``; any other call is unknown."""
        f = e.func
        if isinstance(f, ast.Attribute) and not e.args and not e.keywords:
            holds = self.map.dtype_predicates.get(f.attr)
            base = self.ev(f.value)
            if holds is not None and isinstance(base, Dtype):
                return base.name in holds
        raise Unknown(f"call {ast.unparse(e)}")


def _truth(value: object) -> bool:
    if isinstance(value, Dtype):
        return True  # a dtype object is truthy
    if isinstance(value, bool | int | float | str | tuple) or value is None:
        return bool(value)
    raise Unknown("truth of a value")


def _compare(op: ast.cmpop, left: object, right: object) -> bool:
    if isinstance(op, ast.Eq | ast.Is):
        return left == right
    if isinstance(op, ast.NotEq | ast.IsNot):
        return left != right
    if isinstance(op, ast.In | ast.NotIn) and isinstance(right, tuple):
        return (left in right) == isinstance(op, ast.In)
    raise Unknown(f"comparison {type(op).__name__}")
