"""The Triton names and environment variables a team's host code uses (``name`` and ``env``
uses of the profile), read from each file's syntax tree."""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from typing import Any

from matrix.analyze.profile.model import Use

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
    for node in ast.walk(tree):
        if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                and ENV_NAME.match(node.value)):  # fmt: skip
            line = getattr(node, "lineno", 0)
            code = lines[line - 1].strip() if 0 < line <= len(lines) else ""
            out.append(Use("env", (), (("name", node.value),), path, line, code=code[:120],
                           col=getattr(node, "col_offset", 0)))  # fmt: skip
    return out


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
