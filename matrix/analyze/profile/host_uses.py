"""The Triton names and environment variables a team's host code uses (``name`` and ``env``
uses of the profile), read from each file's syntax tree."""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from typing import Any

from matrix.analyze.profile.host_syntax import callee
from matrix.analyze.profile.model import Use
from matrix.probes.fp.fp_env import EMPTY

# A string constant spelt like the environment variables Triton releases read
# (TRITON_*, MLIR_*, LLVM_*, AMDGCN_*, NVPTX_*, DISABLE_PTXAS_OPT, USE_TTGIR_LOC, ...).
ENV_NAME = re.compile(r"^(?:TRITON|MLIR|LLVM|AMDGCN|NVPTX|DISABLE|USE)_[A-Z0-9_]+$")


def env_uses(tree: ast.Module, path: str, lines: Sequence[str]) -> list[Use]:
    """An ``env`` use for every string constant of the file spelt like a Triton environment
    variable (``os.environ["TRITON_F32_DEFAULT"] = ...``, ``monkeypatch.setenv(...)``, a
    subprocess env dict): the code that names a variable is the code a change of how the
    release reads it can affect. Python files only: a variable set in CI configuration or a
    shell is not seen."""
    out = []
    parents = {id(c): p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                and ENV_NAME.match(node.value)):  # fmt: skip
            line = getattr(node, "lineno", 0)
            code = lines[line - 1].strip() if 0 < line <= len(lines) else ""
            sets = _sets(node, parents)
            attrs = (("name", node.value),) + ((("sets", sets),) if sets is not None else ())
            out.append(Use("env", (), attrs, path, line, code=code[:120],
                           col=getattr(node, "col_offset", 0)))  # fmt: skip
    return out


ANY = "*"  # a set to a value the code does not spell


def _sets(var: ast.Constant, parents: dict[int, ast.AST]) -> str | None:
    """What the code sets the variable named by ``var`` to where it names it: the spellings,
    comma-joined (a constant, or either branch of ``"1" if x else "0"``), ``*`` for a value it
    does not spell, None where it does not set it here (a read, a comparison, a table).

    A set is ``os.environ[VAR] = v``, ``setenv(VAR, v)`` / ``putenv`` / a ``set...(VAR, v)``
    helper (tritonbench's ``with set_env_variable(VAR, v):``), ``os.environ.setdefault(VAR,
    v)`` (then set, to a value not known), and a dict passed as ``env=`` or to ``.update``.
    Code that sets a variable never runs with it unset there, so the release's default for it
    (the ``(unset)`` cell) is not what that code runs with."""
    p = parents.get(id(var))
    value: ast.expr | None = None
    if isinstance(p, ast.Subscript) and p.slice is var and isinstance(p.ctx, ast.Store):
        assign = parents.get(id(p))
        if not isinstance(assign, ast.Assign):
            return None
        value = assign.value
    elif isinstance(p, ast.Call) and p.args[:1] == [var] and len(p.args) > 1:
        name = callee(p.func) or ""
        if name == "setdefault":
            return ANY
        if not name.startswith(("set", "putenv")):
            return None
        value = p.args[1]
    elif isinstance(p, ast.Dict) and var in p.keys:
        holder = parents.get(id(p))
        as_env = isinstance(holder, ast.keyword) and holder.arg == "env"
        if not (as_env or (isinstance(holder, ast.Call) and callee(holder.func) == "update")):
            return None
        value = p.values[p.keys.index(var)]
    else:
        return None
    spelt = _spellings(value)
    return ",".join(sorted(spelt)) if spelt else ANY


def _spellings(value: ast.expr) -> set[str] | None:
    """The strings ``value`` may be (None: not only constants)."""
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return {value.value or EMPTY}
    if isinstance(value, ast.IfExp):
        a, b = _spellings(value.body), _spellings(value.orelse)
        return a | b if a is not None and b is not None else None
    return None


def host_name_uses(
    tree: ast.Module,
    qualname: Any,
    path: str,
    lines: Sequence[str],
    kernels: Sequence[ast.FunctionDef | ast.AsyncFunctionDef],
) -> list[Use]:
    """A ``name`` use for every Triton name the file's host code refers to (``triton.Config``,
    ``triton.set_allocator``, ``triton.knobs...``): kernels' own names are read with their
    kernels. ``qualname`` resolves an expression through the file's imports."""
    skip = {id(k) for k in kernels}
    out = []
    # one walk, top-down: a kernel is not entered (read with its kernel), nor a type
    # annotation (``-> triton.Config`` runs nothing of Triton's); the base of a longer name
    # is no name of its own (``triton.language`` of ``triton.language.dot``)
    stack: list[tuple[ast.AST, bool]] = [(tree, False)]
    while stack:
        node, is_base = stack.pop()
        if id(node) in skip or isinstance(node, ast.arg):
            continue
        if isinstance(node, ast.Attribute | ast.Name) and not is_base:
            q = qualname(node)
            if isinstance(q, str) and (q == "triton" or q.startswith("triton.")):
                line = getattr(node, "lineno", 0)
                code = lines[line - 1].strip() if 0 < line <= len(lines) else ""
                out.append(Use("name", (), (("name", q),), path, line, code=code[:120],
                               col=getattr(node, "col_offset", 0)))  # fmt: skip
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns:
            skip.add(id(node.returns))
        elif isinstance(node, ast.AnnAssign):
            skip.add(id(node.annotation))
        base = node.value if isinstance(node, ast.Attribute) else None
        stack.extend((c, c is base) for c in ast.iter_child_nodes(node))
    out.sort(key=lambda u: (u.line, u.col))
    return out
