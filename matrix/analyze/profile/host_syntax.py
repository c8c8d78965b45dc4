"""Small readings of host syntax that ``HostTypes`` and its parts share."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Any

INT_SIG = "i32"  # what an int host value passes (a launch signature's scalar)
# ``x.to(...)`` keywords that keep the dtype
TO_KEEPS = frozenset({"device", "non_blocking", "copy", "memory_format"})


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


def parameter_default(fn: Any, index: int) -> ast.expr | None:
    """The default of ``fn``'s positional parameter ``index`` (None: it has none)."""
    params = [*fn.args.posonlyargs, *fn.args.args]
    first = len(params) - len(fn.args.defaults)
    return fn.args.defaults[index - first] if first <= index < len(params) else None


def annotated(fn: Any, name: str) -> str:
    """The plain annotation (``int``) of ``fn``'s parameter ``name``; "" where none."""
    args = fn.args
    for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
        if a.arg == name and isinstance(a.annotation, ast.Name):
            return str(a.annotation.id)
    return ""


def module_scope(tree: ast.Module) -> ast.FunctionDef:
    """A module's own statements as a function without parameters, named ``<module>`` (no
    call can name it): the host reading types a launch or a call at module level (a script's
    ``x = torch.randn(..., dtype=torch.float32)`` then ``k[grid](x)``) as it does one in a
    function. Functions of the module do not read its names through it (no closure)."""
    none = ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[], kw_defaults=[],
                         kwarg=None, defaults=[])  # fmt: skip
    return ast.FunctionDef(name="<module>", args=none, body=tree.body, decorator_list=[],
                           returns=None, lineno=1, col_offset=0)  # fmt: skip


def moves_device(e: ast.expr) -> bool:
    """``x.to("cuda")``, ``x.to(y.device)``, ``x.to(device, non_blocking=True)``: a copy to a
    device that keeps x's dtype (no dtype among its arguments)."""
    if not (isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr == "to"):
        return False
    if not {k.arg for k in e.keywords} <= TO_KEEPS:
        return False
    if all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in e.args):
        return True
    if len(e.args) != 1 or not isinstance(e.args[0], ast.Attribute | ast.Name):
        return False
    text = e.args[0].attr if isinstance(e.args[0], ast.Attribute) else e.args[0].id
    return text == "device" or text.endswith("_device")


def on_torch(f: ast.expr) -> bool:
    """``torch.X``: a function of the torch module itself."""
    return isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "torch"
