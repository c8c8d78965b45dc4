"""What a host function of the read tree returns, and who calls an autograd ``forward``.

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

Fail closed: a callee this reading cannot name (several definitions, none imported), a
``return`` it cannot type, a generator, a return of a tuple of another length: unknown.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from matrix.analyze.profile.host_tokens import TOKEN, join

Function = ast.FunctionDef | ast.AsyncFunctionDef


class HostReturns:
    """The return-value and ``apply`` part of ``HostTypes`` (which provides the tables)."""

    functions: Mapping[str, list[Function]]
    file_of: Mapping[int, int]
    modules: Sequence[tuple[str, Mapping[str, str]]]
    calls: Mapping[str, list[tuple[ast.Call, Function | None]]]
    method_of: dict[int, str]  # a class body's function -> its class's name
    _returns: dict[int, list[ast.expr | None]]

    def dtype(self, expr: ast.expr, scope: Any, depth: int) -> str | None:
        raise NotImplementedError

    def dtype_value(self, expr: ast.expr, scope: Any, depth: int) -> str | None:
        raise NotImplementedError

    def _imports(self, site: int | None, own: int | None, name: str) -> bool:
        raise NotImplementedError

    def returned(
        self, call: ast.Call, scope: Any, depth: int, index: int | None, value: bool
    ) -> str | None:
        """The dtype of what ``call`` (in function ``scope``) returns (``value``: the dtype it
        returns is), or of its ``index``-th element where it returns a tuple; None unknown."""
        site = self.file_of.get(id(call))
        callees = self._callees(call, site)
        if not callees:
            return None
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
            if not fn.body or not isinstance(fn.body[-1], ast.Return | ast.Raise):
                out.append(None)  # it may fall off its end: ``None``, no tensor
            self._returns[id(fn)] = out
        return self._returns[id(fn)]

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
