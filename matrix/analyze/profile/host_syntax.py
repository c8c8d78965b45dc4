"""Small readings of host syntax that ``HostTypes`` and its parts share."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Any

INT_SIG = "i32"  # what an int host value passes (a launch signature's scalar)


def unguarded(body: Sequence[ast.stmt], name: str) -> list[ast.stmt]:
    """The statements of ``body`` that run whenever ``name`` is a tensor: the top level, and
    the body of ``if name is not None:`` (None has no dtype to check)."""
    out: list[ast.stmt] = []
    for s in body:
        out.append(s)
        if not isinstance(s, ast.If) or s.orelse:
            continue
        t = s.test
        if (isinstance(t, ast.Compare) and isinstance(t.left, ast.Name) and t.left.id == name
                and len(t.ops) == 1 and isinstance(t.ops[0], ast.IsNot)
                and isinstance(t.comparators[0], ast.Constant)
                and t.comparators[0].value is None):  # fmt: skip
            out += s.body
    return out


def is_none(e: ast.expr) -> bool:
    return isinstance(e, ast.Constant) and e.value is None


def root_name(e: ast.expr) -> str | None:
    """The name an attribute chain starts from (``torch`` of ``torch.nn.functional.relu``)."""
    while isinstance(e, ast.Attribute):
        e = e.value
    return e.id if isinstance(e, ast.Name) else None


def callee(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def annotated(fn: Any, name: str) -> str:
    """The plain annotation (``int``) of ``fn``'s parameter ``name``; "" where none."""
    args = fn.args
    for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
        if a.arg == name and isinstance(a.annotation, ast.Name):
            return str(a.annotation.id)
    return ""
