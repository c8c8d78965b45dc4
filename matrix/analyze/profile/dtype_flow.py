"""Where a dtype the host code names goes, in one file: which kernel parameters a tensor made
with it (or the dtype itself, passed as a constexpr) reaches.

``OpenTypes.evidence`` asks it for a dtype spelt outside a kernel (``torch.float8_e4m3fn``):
lightllm's ``destindex_copy_kv_fp8.py`` runs ``O = out[...].view(fp8_type)`` with
``fp8_type = torch.float8_e4m3fn`` and passes ``O`` through a wrapper to the kernel's ``O_nope``
only; the kernel's bf16 input ``KV_nope`` is no fp8. The flow is followed through a name bound
once in its scope, a tensor made with it (``.view(T)``, ``.to(T)``, ``dtype=T``), what keeps a
tensor's dtype (slices, ``.contiguous()``: the host reader's ``HOST_SAME``), a call of a function
of the same file (its parameter) and a launch ``kernel[grid](...)`` of a kernel of the same file.
Where it goes anywhere else (returned, stored, passed to a function of another file, a name
bound twice, a module's name, which other modules may import; names bound under
``if __name__ == "__main__":`` are followed), the answer is None: the caller keeps the
dtype for the whole file (fail closed).
A use that only reads a tensor's shape or converts it to a dtype the code names ends there.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping

from matrix.analyze.profile.host import HOST_CASTS, HOST_INTS, HOST_SAME

MAX_DEPTH = 4  # names and calls followed from one spelling
# attributes of a tensor that say nothing of its elements' dtype flowing on
READS = frozenset({*HOST_INTS, "shape", "device", "dim", "ndim", "is_contiguous", "data_ptr"})
Fn = ast.FunctionDef | ast.AsyncFunctionDef
Reach = frozenset[tuple[int, str]]  # (kernel's def line, parameter)


class DtypeFlow:
    """One file's functions, scopes and parents, to follow a dtype spelling to launches."""

    def __init__(
        self, tree: ast.Module, parents: Mapping[int, ast.AST], owner: Mapping[int, Fn]
    ) -> None:
        self.parents, self.owner = parents, owner
        self.defs: dict[str, list[Fn]] = {}
        self.loads: dict[tuple[int, str], list[ast.Name]] = {}  # (scope id, name) -> reads
        self.binds: dict[tuple[int, str], int] = {}  # (scope id, name) -> times bound
        self.values: dict[tuple[int, str], list[ast.expr]] = {}  # what `name = value` binds
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                self.defs.setdefault(node.name, []).append(node)
                for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs):
                    self.binds[(id(node), a.arg)] = self.binds.get((id(node), a.arg), 0) + 1
            if isinstance(node, ast.Name):
                key = (self._scope(node), node.id)
                if isinstance(node.ctx, ast.Load):
                    self.loads.setdefault(key, []).append(node)
                else:
                    self.binds[key] = self.binds.get(key, 0) + 1
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
                if isinstance(target, ast.Name):
                    key = (self._scope(node), target.id)
                    self.values.setdefault(key, []).append(node.value)

    def _scope(self, node: ast.AST) -> int:
        fn = self.owner.get(id(node))
        return id(fn) if fn is not None else 0

    def reaches(self, node: ast.expr, depth: int = 0) -> Reach | None:
        """The kernel parameters the value of ``node`` (a dtype, or a tensor of one) reaches;
        None where it goes somewhere this does not follow."""
        if depth > MAX_DEPTH:
            return None
        parent = self.parents.get(id(node))
        if isinstance(parent, ast.Assign) and parent.value is node:
            if len(parent.targets) != 1 or not isinstance(parent.targets[0], ast.Name):
                return None
            scope = self._scope(parent)
            if scope == 0 and not self._in_main(parent):
                return None  # a module's name: another module may import it
            return self._name(parent.targets[0].id, scope, depth)
        if isinstance(parent, ast.keyword):
            call = self.parents.get(id(parent))
            if not isinstance(call, ast.Call):
                return None
            if parent.arg == "dtype":  # torch.empty(..., dtype=T): a tensor of T
                return self.reaches(call, depth + 1)
            return self._argument(call, None, parent.arg, depth)
        if isinstance(parent, ast.Call) and node in parent.args:
            if isinstance(parent.func, ast.Attribute) and parent.func.attr in ("view", "to"):
                if node is parent.args[0] and self._dtype_like(node):
                    return self.reaches(parent, depth + 1)  # x.view(T): a tensor of T
                return None
            return self._argument(parent, parent.args.index(node), None, depth)
        if isinstance(parent, ast.Subscript) and parent.value is node:
            return self.reaches(parent, depth + 1)  # a slice keeps the dtype
        if isinstance(parent, ast.Attribute) and parent.value is node:
            if parent.attr in READS:
                return frozenset()
            call = self.parents.get(id(parent))
            if not isinstance(call, ast.Call) or call.func is not parent:
                return None
            if parent.attr in HOST_CASTS:  # x.float(): converted
                return frozenset()
            if (
                parent.attr in ("to", "view", "type")
                and call.args
                and self._dtype_like(call.args[0])
            ):
                return frozenset()  # converted to a dtype the code names
            if parent.attr in HOST_SAME:
                return self.reaches(call, depth + 1)
        return None

    def _dtype_like(self, e: ast.expr) -> bool:
        """A dtype the code spells: ``torch.X``/``tl.X``, ``x.dtype``, or a name bound once
        (in its scope, else the module's) to one of those."""
        if isinstance(e, ast.Attribute):
            named = isinstance(e.value, ast.Name) and e.value.id in ("torch", "tl")
            return e.attr == "dtype" or named
        if isinstance(e, ast.Name):
            for key in ((self._scope(e), e.id), (0, e.id)):
                if key in self.binds:
                    values = self.values.get(key, [])
                    once = self.binds[key] == 1 and len(values) == 1
                    return once and self._dtype_like(values[0])
        return False

    def _in_main(self, node: ast.AST) -> bool:
        """Whether ``node`` lies in ``if __name__ == "__main__":`` (run as a script only)."""
        up = self.parents.get(id(node))
        while up is not None:
            if isinstance(up, ast.If) and isinstance(up.test, ast.Compare):
                sides = [up.test.left, *up.test.comparators]
                if any(isinstance(e, ast.Name) and e.id == "__name__" for e in sides):
                    return True
            up = self.parents.get(id(up))
        return False

    def _name(self, name: str, scope: int, depth: int) -> Reach | None:
        """Where a name bound once in ``scope`` goes: each of its reads."""
        if self.binds.get((scope, name), 0) != 1:
            return None
        out: set[tuple[int, str]] = set()
        for use in self.loads.get((scope, name), []):
            got = self.reaches(use, depth + 1)
            if got is None:
                return None
            out |= got
        return frozenset(out)

    def _argument(
        self, call: ast.Call, index: int | None, keyword: str | None, depth: int
    ) -> Reach | None:
        """An argument of ``call``: a launch of a kernel of this file gives its parameter; a
        call of a function of this file follows its parameter there; anything else, None."""
        func = call.func
        name: str | None = None
        launch = isinstance(func, ast.Subscript) and isinstance(func.value, ast.Name)
        if isinstance(func, ast.Subscript) and isinstance(func.value, ast.Name):
            name = func.value.id  # kernel[grid](...)
        elif isinstance(func, ast.Name):
            name = func.id
        fns = self.defs.get(name or "", [])
        if len(fns) != 1 or any(isinstance(a, ast.Starred) for a in call.args):
            return None
        fn = fns[0]
        params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
        if keyword is not None:
            param = keyword
        elif index is not None and index < len(params):
            param = params[index]
        else:
            return None
        if launch:
            return frozenset({(fn.lineno, param)})
        return self._name(param, id(fn), depth)
