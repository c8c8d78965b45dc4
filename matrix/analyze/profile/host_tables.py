"""Module dtype tables a host wrapper looks a dtype up in (``D[x.dtype]``, ``D2[D1[x.dtype]]``):
the part of ``HostTypes`` that reads them (``tables``: the tree's module-level dicts by name)."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any

from matrix.analyze.profile.host_tokens import TOKEN, restrict_token


class HostTables:
    """The table part of ``HostTypes`` (which provides ``tables``, ``statements``, ``map``)."""

    tables: Mapping[str, list[ast.Dict]]
    statements: Mapping[int, list[ast.AST]]
    map: Any  # the usage map ([dtypes]: spellings)

    def dtype_value(self, expr: ast.expr, scope: Any, depth: int) -> str | None:
        raise NotImplementedError

    def _torch_dtype(self, expr: ast.expr | None) -> str | None:
        """``torch.float16`` / ``tl.float16`` / ``triton.language.float16``: its dtype name."""
        if not isinstance(expr, ast.Attribute):
            return None
        base = expr.value
        if (isinstance(base, ast.Name) and base.id in ("torch", "tl")) or (
            isinstance(base, ast.Attribute) and base.attr == "language"
        ):
            return self.map.dtypes.get(expr.attr)
        return None

    def _lookup(self, table: str, key: ast.expr, scope: Any, depth: int) -> str | None:
        """``D[x.dtype]`` with ``D`` a module's dict of dtypes: the dtype it maps to; for a
        token, the same token (where ``D`` maps every dtype to itself) admitting only ``D``'s
        keys (any other raises ``KeyError``). ``D2[D1[x.dtype]]`` (or ``e = D1[...]`` then
        ``D2[e]``), with ``D1`` mapping dtypes to keys of ``D2`` (thunder's ``_DTYPE2TRITON[
        _TORCH2DTYPE[buffer_dtype]]`` through an enum), is the one table they make."""
        mapping = self._dtypes_table(table)
        if mapping is None:
            inner = self._keyed(key, scope)
            if inner is None:
                return None
            mapping, key = self._composed(inner[0], table), inner[1]
            if not mapping:
                return None
        got = self.dtype_value(key, scope, depth)
        if got is None:
            return None
        if not got.startswith(TOKEN):
            return mapping.get(got)
        if any(k != v for k, v in mapping.items()):
            values = set(mapping.values())
            return values.pop() if len(values) == 1 else None
        return restrict_token(got, frozenset(mapping))

    def _table(self, table: str) -> list[tuple[ast.expr, ast.expr]] | None:
        dicts = self.tables.get(table, [])
        if len(dicts) != 1 or any(k is None for k in dicts[0].keys):
            return None  # no table, or several of that name: not this reading's to pick
        return list(zip(dicts[0].keys, dicts[0].values, strict=True))  # type: ignore[arg-type]

    def _dtypes_table(self, table: str) -> dict[str, str] | None:
        """Module dict ``table`` as dtype -> dtype; None where it is not one."""
        pairs = [(self._torch_dtype(k), self._torch_dtype(v)) for k, v in self._table(table) or []]
        if not pairs or any(k is None or v is None for k, v in pairs):
            return None
        return {k: v for k, v in pairs if k and v}

    def _composed(self, first: str, then: str) -> dict[str, str]:
        """dtype -> dtype through ``then[first[dtype]]``: ``first``'s values are ``then``'s
        keys, as written (``TritonDtype.kFP16``); empty where a link is missing."""
        second = {ast.unparse(k): self._torch_dtype(v) for k, v in self._table(then) or []}
        out: dict[str, str] = {}
        for k, v in self._table(first) or []:
            src, dst = self._torch_dtype(k), second.get(ast.unparse(v))
            if src is None or dst is None:
                return {}
            out[src] = dst
        return out

    def _keyed(self, key: ast.expr, scope: Any) -> tuple[str, ast.expr] | None:
        """``(D1, x)`` where ``key`` is ``D1[x]``, or a local of ``scope`` assigned only that."""
        if isinstance(key, ast.Name) and scope is not None:
            name = key.id
            bound = [
                n.value
                for n in self.statements.get(id(scope), [])
                if isinstance(n, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == name for t in n.targets)
            ]
            key = bound[0] if len(bound) == 1 else key
        if isinstance(key, ast.Subscript) and isinstance(key.value, ast.Name):
            return key.value.id, key.slice
        return None
