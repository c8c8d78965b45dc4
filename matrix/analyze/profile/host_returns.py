"""What a host function of the read tree returns, who calls an autograd ``forward``, and
the host operations whose result keeps an operand's dtype (matrix/data/host_ops.toml).

``HostTypes`` types a launch argument by the host code that makes it. Two ways a tensor
reaches a wrapper that a reading of assignments alone misses (issue 39):

- a host function's return value: ``out, scales = quant_fp8(x)`` where ``quant_fp8`` makes
  ``scales`` with ``dtype=torch.float32`` and returns ``_launcher(x, out, scales)``, whose own
  return is ``out, scales``. Each ``return`` of the callee is typed in the callee (its
  parameters by every call of it: a superset of this call's values); the call's dtype is what
  every return gives. Only a dtype that names itself is taken: a token (a type variable of the
  callee) stands for one value per call of the callee, not of this call, so it stays unknown.
- ``C.apply(a, b)`` of a ``torch.autograd.Function`` runs ``C.forward(ctx, a, b)``: a call of
  ``forward`` with its arguments one place on (past ``ctx``).

- ``-x``, ``x * 2.0``, ``x * y`` of one float dtype, ``torch.clamp(x, ...)``, ``rearrange(x,
  ...)``, ``x.clamp_min(0)``: the operand's dtype (host_ops.toml says which, and why two
  tensors of different dtypes stay unknown).

Fail closed: a callee this reading cannot name (several definitions, none imported), a
``return`` it cannot type, a generator, a return of a tuple of another length: unknown.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from matrix.analyze.profile.host_branches import UNBOUND
from matrix.analyze.profile.host_ints import MAX_HOST_DEPTH
from matrix.analyze.profile.host_syntax import INT_SIG, is_none, parameter_default, root_name
from matrix.analyze.profile.host_tokens import TOKEN, join
from matrix.core import MATRIX_DIR, DataFileError, load_toml, table_keys

Function = ast.FunctionDef | ast.AsyncFunctionDef
OPS_PATH = MATRIX_DIR / "data" / "host_ops.toml"
ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div)
# calls whose tuple result holds pieces of their base tensor (one dtype)
HOST_PIECES = frozenset({"chunk", "split", "unbind", "tensor_split"})


@dataclass(frozen=True)
class HostOps:
    """matrix/data/host_ops.toml, checked."""

    functions_any: frozenset[str]
    functions_float: frozenset[str]
    methods_any: frozenset[str]
    methods_float: frozenset[str]
    floats: frozenset[str]
    wins_over_open: frozenset[str]
    default_float: frozenset[str] = frozenset()

    @classmethod
    @lru_cache(maxsize=1)
    def load(cls, path: Path = OPS_PATH) -> HostOps:
        doc = table_keys(path, "", load_toml(path), {"keep_first", "arithmetic", "factories"})
        keys = {"functions_any", "functions_float", "methods_any", "methods_float"}
        keep = table_keys(path, "[keep_first]", doc.get("keep_first", {}), keys)
        arith = table_keys(
            path, "[arithmetic]", doc.get("arithmetic", {}), {"floats", "wins_over_open"}
        )

        def names(table: Mapping[str, Any], key: str) -> frozenset[str]:
            value = table.get(key)
            if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
                raise DataFileError(path, key, "a list of names", value)
            return frozenset(value)

        return cls(
            functions_any=names(keep, "functions_any"),
            functions_float=names(keep, "functions_float"),
            methods_any=names(keep, "methods_any"),
            methods_float=names(keep, "methods_float"),
            floats=names(arith, "floats"),
            wins_over_open=names(arith, "wins_over_open"),
            default_float=names(
                table_keys(path, "[factories]", doc.get("factories", {}), {"default_float"}),
                "default_float",
            ),
        )


class HostReturns:
    """The return-value and ``apply`` part of ``HostTypes`` (which provides the tables)."""

    functions: Mapping[str, list[Function]]
    file_of: Mapping[int, int]
    modules: Sequence[tuple[str, Mapping[str, str]]]
    calls: Mapping[str, list[tuple[ast.Call, Function | None]]]
    method_of: dict[int, str]  # a class body's function -> its class's name
    map: Any  # the usage map (``[open_types]``)
    _returns: dict[int, list[ast.expr | None]]
    aliases: Mapping[str, set[str]]  # a function -> module-level names bound to it
    enclosing: Mapping[int, Any]  # a nested function -> the function around it

    def dtype(self, expr: ast.expr, scope: Any, depth: int) -> str | None:
        raise NotImplementedError

    def dtype_value(self, expr: ast.expr, scope: Any, depth: int) -> str | None:
        raise NotImplementedError

    def _imports(self, site: int | None, own: int | None, name: str) -> bool:
        raise NotImplementedError

    def call_result(self, call: ast.Call, name: str, scope: Any, depth: int) -> str | None:
        """What ``call`` gives: a function of the read tree's return; else a dtype-keeping
        function (``f(x)``, ``torch.clamp(x)``: a name the file imports) or method
        (``x.clamp_min(0)``) of ``[keep_first]``."""
        site = self.file_of.get(id(call))
        if self._callees(call, site):
            return self.returned(call, scope, depth, None, False)
        f = call.func
        root = root_name(f)
        imported = (
            root is not None and site is not None and site < len(self.modules)
            and root in self.modules[site][1]
        )  # fmt: skip
        return self.kept(call, name, isinstance(f, ast.Attribute) and not imported, scope, depth)

    def keeps(self, rhs: ast.expr, name: str) -> bool:
        """``x = rearrange(x, ...)``, ``x = torch.clamp(x, max=m)``, ``x = x.clamp_min(0)``: a
        ``[keep_first]`` op for every dtype on ``name`` itself (the same dtype, as ``x =
        x.contiguous()``); not where the read tree defines a function of that name."""
        if not isinstance(rhs, ast.Call) or self._callees(rhs, self.file_of.get(id(rhs))):
            return False
        ops, f = HostOps.load(), rhs.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == name:
            return f.attr in ops.methods_any
        first = rhs.args[0] if rhs.args else None
        called = f.id if isinstance(f, ast.Name) else getattr(f, "attr", "")
        return (isinstance(first, ast.Name) and first.id == name
                and called in ops.functions_any)  # fmt: skip

    def kept(self, call: ast.Call, name: str, method: bool, scope: Any, depth: int) -> str | None:
        """The dtype of ``call`` where it keeps its operand's (``[keep_first]``): the first
        argument of function ``name``, or the tensor method ``name`` is called on."""
        ops = HostOps.load()
        every, floats = (
            (ops.methods_any, ops.methods_float) if method else (ops.functions_any,
                                                                 ops.functions_float)
        )  # fmt: skip
        if name not in every and name not in floats:
            return None
        if method:
            base = call.func.value if isinstance(call.func, ast.Attribute) else None
        else:
            base = call.args[0] if call.args and not isinstance(call.args[0], ast.Starred) else None
        got = self.dtype(base, scope, depth) if base is not None else None
        if got is None or (name not in every and got not in ops.floats):
            return None
        return got

    def arithmetic(self, expr: ast.BinOp | ast.UnaryOp, scope: Any, depth: int) -> str | None:
        """``-x``: x's dtype; ``x + 1.0``, ``x * y``: a float dtype both sides agree on (a
        Python number takes the tensor's; ``[arithmetic]``); anything else unknown."""
        if isinstance(expr, ast.UnaryOp):
            ok = isinstance(expr.op, ast.USub | ast.UAdd)
            return self.dtype(expr.operand, scope, depth) if ok else None
        if not isinstance(expr.op, ARITHMETIC):
            return None
        consts = self.map.constants
        sides = [
            None if _number(e, consts) else self.dtype(e, scope, depth)
            for e in (expr.left, expr.right)
        ]
        known = [
            d for d, e in zip(sides, (expr.left, expr.right), strict=True) if not _number(e, consts)
        ]
        ops = HostOps.load()
        if len(known) == 2 and len(set(known)) == 2:  # one typed, one open (``[arithmetic]``)
            wide = [d for d in known if d in ops.wins_over_open]
            other = [d for d in known if d not in wide]
            open_types = self.map.open_types
            if open_types.floats is None or len(wide) != 1 or len(other) != 1:
                return None
            d = other[0]
            ok = d is None or d.startswith(TOKEN) or d in {*open_types.floats, *open_types.ints}
            return wide[0] if ok else None
        if not known or any(d is None for d in known) or len(set(known)) != 1:
            return None
        got = known[0]
        return got if got in ops.floats else None

    def returned(
        self, call: ast.Call, scope: Any, depth: int, index: int | None, value: bool
    ) -> str | None:
        """The dtype of what ``call`` (in function ``scope``) returns (``value``: the dtype it
        returns is), or of its ``index``-th element where it returns a tuple; None unknown."""
        site = self.file_of.get(id(call))
        callees = self._callees(call, site) if depth <= MAX_HOST_DEPTH else []
        if not callees:
            return None  # none of the read tree's, or past the bound (``return f(...)`` in f)
        resolve = self.dtype_value if value else self.dtype
        seen: list[str | None] = []
        for fn in callees:
            for e in self._returns_of(fn):
                if e is None:
                    seen.append(None)  # a bare ``return``, a generator: no tensor known
                elif index is None:
                    seen.append(resolve(e, fn, depth + 1))
                elif isinstance(e, ast.Tuple | ast.List):
                    plain = not any(isinstance(x, ast.Starred) for x in e.elts)
                    ok = plain and index < len(e.elts)
                    seen.append(resolve(e.elts[index], fn, depth + 1) if ok else None)
                elif isinstance(e, ast.Call):  # ``return launcher(...)``: its own returns
                    seen.append(self.returned(e, fn, depth + 1, index, value))
                else:
                    seen.append(None)  # ``return pair``: not followed
        got = join(seen)
        return None if got is None or got.startswith(TOKEN) else got

    def _callees(self, call: ast.Call, site: int | None) -> list[Function]:
        """The functions of the read tree ``call`` runs: ``f(...)`` with ``f`` defined in the
        call's file (not a method), else imported from the file that defines it;
        ``mod.f(...)`` with ``mod`` bound to the module that defines ``f``. Nothing else."""
        f = call.func
        if site is None:
            return []
        if isinstance(f, ast.Name):
            named = [c for c in self.functions.get(f.id, []) if id(c) not in self.method_of]
            local = [c for c in named if self.file_of.get(id(c)) == site]
            return local or [c for c in named if self._imports(site, self.file_of.get(id(c)), f.id)]
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
            if site >= len(self.modules):
                return []
            bound = self.modules[site][1].get(f.value.id)
            return [
                c for c in self.functions.get(f.attr, [])
                if id(c) not in self.method_of and bound is not None
                and self._module_of(c) == bound
            ]  # fmt: skip
        return []

    def _module_of(self, fn: Function) -> str | None:
        index = self.file_of.get(id(fn))
        return self.modules[index][0] if index is not None and index < len(self.modules) else None

    def _returns_of(self, fn: Function) -> list[ast.expr | None]:
        """The values ``fn``'s own ``return`` statements give (not its nested functions'); a
        generator, or a body that can end without one, gives None among them."""
        if id(fn) not in self._returns:
            out: list[ast.expr | None] = []
            stack: list[ast.AST] = list(fn.body)
            while stack:
                node = stack.pop()
                if isinstance(node, ast.Return):
                    out.append(node.value)
                elif isinstance(node, ast.Yield | ast.YieldFrom):
                    out.append(None)
                if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
                                  | ast.ClassDef):  # fmt: skip
                    stack.extend(ast.iter_child_nodes(node))
            if not _ends(fn.body):
                out.append(None)  # it may fall off its end: ``None``, no tensor
            self._returns[id(fn)] = out
        return self._returns[id(fn)]

    def saved(self, scope: Any, depth: int, names: list[str | None], name: str) -> str | None:
        """``a, b = ctx.saved_tensors`` in ``C.backward``: the dtype of what every
        ``ctx.save_for_backward(x, y)`` of ``C.forward`` with as many tensors saved there."""
        cls = self.method_of.get(id(scope))
        if cls is None or None in names:
            return None
        index = names.index(name)
        own = self.file_of.get(id(scope))
        seen: list[str | None] = []
        for call, fn in self.calls.get("save_for_backward", []):
            if (fn is None or fn.name != "forward" or self.method_of.get(id(fn)) != cls
                    or self.file_of.get(id(fn)) != own):  # fmt: skip
                continue
            if any(isinstance(a, ast.Starred) for a in call.args):
                seen.append(None)
            elif len(call.args) == len(names):  # another count cannot be this unpacking's
                seen.append(self.dtype(call.args[index], fn, depth + 1))
        got = join(seen)
        return None if got is None or got.startswith(TOKEN) else got

    def unpacked(self, rhs: ast.expr | None, scope: Any, depth: int, value: bool,
                 target: ast.Tuple | ast.List, name: str) -> str | None:  # fmt: skip
        """The dtype ``name`` gets from ``target = rhs`` (a tuple target): the same element
        of a tuple of as many (``UNBOUND`` for ``None``: no tensor), what ``forward`` saved,
        a call's returns, ``x.chunk(2)``'s pieces, ``x.shape``'s ints; None unknown."""
        if rhs is None:
            return None
        names = [e.id if isinstance(e, ast.Name) else None for e in target.elts]
        if (isinstance(rhs, ast.Tuple | ast.List) and None not in names
                and len(rhs.elts) == len(names)
                and not any(isinstance(e, ast.Starred) for e in rhs.elts)):  # fmt: skip
            part = rhs.elts[names.index(name)]
            if is_none(part):
                return UNBOUND
            return (self.dtype_value if value else self.dtype)(part, scope, depth + 1)
        if isinstance(rhs, ast.Attribute) and rhs.attr == "saved_tensors" and not value:
            return self.saved(scope, depth, names, name)  # what ``forward`` saved
        if isinstance(rhs, ast.Call) and None not in names:  # ``a, b = f(...)``: its returns
            got = self.returned(rhs, scope, depth + 1, names.index(name), value)
            if got is not None or value:
                return got
        if value:
            return None
        if isinstance(rhs, ast.Attribute) and rhs.attr == "shape":
            return INT_SIG
        if isinstance(rhs, ast.Call) and isinstance(rhs.func, ast.Attribute):
            if rhs.func.attr in HOST_PIECES:  # ``a, b = x.chunk(2)``: pieces of x
                return self.dtype(rhs.func.value, scope, depth + 1)
            if rhs.func.attr == "size" and not rhs.args:
                return INT_SIG
        return None

    def arguments(self, name: str, scope: Any) -> list[tuple[ast.expr | None, Any]]:
        """What each call of function ``scope`` (by its name or a module-level alias of it,
        ``f = f_triton``) passes for its positional parameter ``name``, with the scope to read
        it in: the argument; where the call leaves it out, the parameter's default (read where
        the function is defined: ``output_dtype=torch.float``, ``fp32_scale: bool = True``);
        None where it cannot be told (``*args``, ``**kw``)."""
        params = [a.arg for a in [*scope.args.posonlyargs, *scope.args.args]]
        index = params.index(name)
        out: list[tuple[ast.expr | None, Any]] = []
        own = self.file_of.get(id(scope))
        twins = {self.file_of.get(id(f)) for f in self.functions.get(scope.name, [])}
        # its calls by name, and ``C.apply(...)`` for ``C.forward(ctx, ...)`` (one place on)
        names = [scope.name, *sorted(self.aliases.get(scope.name, ()))]
        calls = [(c, f, index, False) for n in names for c, f in self.calls.get(n, [])]
        calls += [(c, f, index - 1, True) for c, f in self.applied(scope) if index]
        for call, caller, at, applied in calls:
            site = self.file_of.get(id(call))
            if len(twins) > 1 and site != own and not applied and not self._imports(
                    site, own, scope.name):  # fmt: skip
                continue  # a call of another file's function of the same name
            if any(isinstance(a, ast.Starred) for a in call.args[: at + 1]):
                out.append((None, caller))
                continue
            arg = (
                call.args[at]
                if at < len(call.args)
                else next((k.value for k in call.keywords if k.arg == name), None)
            )
            if caller is scope and isinstance(arg, ast.Name) and arg.id == name:
                continue  # a recursive call passing it on: no value of its own
            if arg is None and not any(k.arg is None for k in call.keywords):
                default = parameter_default(scope, index)
                if default is not None:
                    out.append((default, self.enclosing.get(id(scope))))
                    continue
            out.append((arg, caller))
        return out

    def graded(self, scope: Any, index: int, depth: int) -> str | None:
        """Parameter ``index`` of ``C.backward(ctx, *grads)``: the gradient of ``C.forward``'s
        output ``index - 1``, of that output's dtype (autograd casts a gradient to its
        output's dtype before ``backward`` sees it: verl's ``dlogprobs`` of fp32 logprobs)."""
        cls = self.method_of.get(id(scope))
        if cls is None or scope.name != "backward" or index < 1:
            return None
        own = self.file_of.get(id(scope))
        seen: list[str | None] = []
        for fn in self.functions.get("forward", []):
            if self.method_of.get(id(fn)) != cls or self.file_of.get(id(fn)) != own:
                continue
            for value in self._returns_of(fn):
                if isinstance(value, ast.Tuple) and index - 1 < len(value.elts):
                    value = value.elts[index - 1]
                elif isinstance(value, ast.Tuple) or index != 1:
                    value = None
                seen.append(self.dtype(value, fn, depth + 1) if value is not None else None)
        got = join(seen) if seen else None
        return None if got is None or got.startswith(TOKEN) else got

    def applied(self, scope: Any) -> Iterator[tuple[ast.Call, Function | None]]:
        """The ``C.apply(...)`` calls of autograd class ``C`` whose ``forward`` is ``scope``
        (their arguments are ``forward``'s after ``ctx``)."""
        cls = self.method_of.get(id(scope))
        if cls is None or scope.name != "forward":
            return
        own = self.file_of.get(id(scope))
        for call, caller in self.calls.get("apply", []):
            f = call.func
            base = f.value if isinstance(f, ast.Attribute) else None
            named = base.id if isinstance(base, ast.Name) else getattr(base, "attr", None)
            if named != cls:
                continue
            site = self.file_of.get(id(call))
            if site == own or self._imports(site, own, cls):
                yield call, caller


def _number(e: ast.expr, constants: Mapping[str, str]) -> bool:
    """A Python int or float (``-1.0``, ``float("inf")``, ``math.pi`` too, and numpy's
    ``np.inf`` of the same name): it never promotes a float tensor. ``constants``: the usage
    map's module constants (``[result_types.constants]``, ``math.e`` -> ``lit_float``)."""
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub | ast.UAdd):
        e = e.operand
    if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name):
        return e.value.id in ("math", "np", "numpy") and f"math.{e.attr}" in constants
    if isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id in ("float", "int"):
        return not e.keywords and all(isinstance(a, ast.Constant) for a in e.args)
    return isinstance(e, ast.Constant) and type(e.value) in (int, float)


def _ends(body: list[ast.stmt]) -> bool:
    """Whether ``body`` always ends in a ``return`` or ``raise``: its last statement does, or
    is an ``if``/``elif``/``else`` (a ``with``) every branch of which does (fla's ``if ...:
    return f(...) elif ...: return g(...) else: raise ValueError``)."""
    last = body[-1] if body else None
    if isinstance(last, ast.If):
        return _ends(last.body) and _ends(last.orelse)
    if isinstance(last, ast.With | ast.AsyncWith):
        return _ends(last.body)
    return isinstance(last, ast.Return | ast.Raise)
