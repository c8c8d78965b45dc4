"""The dtypes a host wrapper passes to a kernel, read from the scanned tree."""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from typing import Any

from matrix.analyze.profile.model import Launch, UsageMap, Use

HOST_CASTS = {"half": "float16", "float": "float32", "double": "float64", "bfloat16": "bfloat16",
              "int": "int32", "long": "int64", "bool": "int1"}  # fmt: skip
HOST_SAME = frozenset(
    {"contiguous", "t", "view", "reshape", "transpose", "permute", "clone", "detach", "T",
     "flatten", "squeeze", "unsqueeze", "expand", "narrow", "cuda", "cpu", "mT"}
)  # fmt: skip
HOST_LIKE = frozenset({"empty_like", "zeros_like", "ones_like", "randn_like", "rand_like",
                       "full_like", "new_empty", "new_zeros", "new_ones", "new_full"})  # fmt: skip
HOST_INTS = frozenset({"stride", "numel", "size", "element_size", "cdiv", "next_power_of_2"})
MAX_HOST_DEPTH = 3
INT_SIG = "i32"


class HostTypes:
    """The dtypes a host wrapper passes to a kernel, read from the scanned tree: a tensor made
    with ``dtype=torch.float16``, cast with ``.half()``/``.to(torch.bfloat16)``, checked with
    ``assert x.dtype == torch.float16``, or a parameter of the wrapper typed by every call of
    it in the tree. One launch site whose argument cannot be typed leaves that parameter to
    the kernel's own reading (not inferable: fail closed)."""

    def __init__(
        self,
        trees: Sequence[tuple[ast.Module, Sequence[ast.FunctionDef | ast.AsyncFunctionDef]]],
        umap: UsageMap,
    ) -> None:
        self.map = umap
        self.functions: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
        self.calls: dict[
            str, list[tuple[ast.Call, ast.FunctionDef | ast.AsyncFunctionDef | None]]
        ] = {}
        self.kernel_names: set[str] = set()
        self.launch_sites: list[tuple[str, ast.Call, Any]] = []
        # One walk per tree: each node's innermost function, and per function its asserts
        # and assignments (what ``_name`` reads), so that typing a launch never re-walks.
        self.statements: dict[int, list[ast.stmt]] = {}
        # Which file defines each kernel and holds each launch: a kernel name defined in
        # several files (`_fwd_kernel`) takes only the launches of its own file.
        self.kernel_file: dict[int, int] = {}
        self.defined_in: dict[str, set[int]] = {}
        self.site_file: dict[int, int] = {}
        for index, (tree, kernels) in enumerate(trees):  # each tree with its @triton.jit functions
            self.kernel_names |= {f.name for f in kernels}
            for f in kernels:
                self.kernel_file[id(f)] = index
                self.defined_in.setdefault(f.name, set()).add(index)
            inside = {id(f) for f in kernels}  # device code: no launch, no host call in it
            stack: list[tuple[ast.AST, Any]] = [(tree, None)]
            while stack:
                node, fn = stack.pop()
                if id(node) in inside:
                    continue
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    self.functions.setdefault(node.name, []).append(node)
                    fn = node
                if fn is not None and isinstance(node, ast.Assert | ast.Assign):
                    self.statements.setdefault(id(fn), []).append(node)
                if isinstance(node, ast.Call):
                    name = _callee(node.func)
                    if name:
                        self.calls.setdefault(name, []).append((node, fn))
                    if isinstance(node.func, ast.Subscript):
                        k = _callee(node.func.value)
                        if k:
                            self.launch_sites.append((k, node, fn))
                            self.site_file[id(node)] = index
                stack.extend((child, fn) for child in ast.iter_child_nodes(node))
        self._memo: dict[tuple[int, int], str | None] = {}
        self.launched = frozenset(name for name, _, _ in self.launch_sites)  # kernel[grid](...)

    def launches(self, kernel: ast.FunctionDef | ast.AsyncFunctionDef) -> list[Launch]:
        params = [a.arg for a in [*kernel.args.posonlyargs, *kernel.args.args]]
        out: list[Launch] = []
        own = self.kernel_file.get(id(kernel))
        shared = len(self.defined_in.get(kernel.name, ())) > 1
        for name, call, scope in self.launch_sites:
            if name != kernel.name:
                continue
            if shared and self.site_file.get(id(call)) != own:
                continue  # another file's kernel of the same name
            sig: dict[str, str] = {}
            bound = list(zip(params, call.args, strict=False)) + [
                (k.arg, k.value) for k in call.keywords if k.arg in params
            ]
            for param, expr in bound:
                t = self.type_of(expr, scope, 0)
                if t:
                    sig[param] = t
            launch = Launch(sig, {})
            if launch not in out:
                out.append(launch)
        return out

    def type_of(self, expr: ast.expr, scope: Any, depth: int) -> str | None:
        """``*fp16`` for a float16 tensor, ``i32`` for an int, None unknown."""
        dt = self.dtype(expr, scope, depth)
        if dt == INT_SIG:
            return INT_SIG
        if dt is None:
            return None
        # a tensor: a pointer to its dtype, spelt by its own name (every dtype's name is one
        # of its spellings in usage_map.toml [dtypes]: uint8 and the fp8s too)
        return f"*{dt}" if self.map.dtypes.get(dt) == dt else None

    def _torch_dtype(self, expr: ast.expr | None) -> str | None:
        if (
            isinstance(expr, ast.Attribute)
            and isinstance(expr.value, ast.Name)
            and expr.value.id == "torch"
        ):
            return self.map.dtypes.get(expr.attr)
        return None

    def dtype(self, expr: ast.expr, scope: Any, depth: int) -> str | None:
        if depth > MAX_HOST_DEPTH:
            return None
        key = (id(expr), id(scope))
        if key not in self._memo:
            self._memo[key] = None  # a cycle through the calls reads as unknown
            self._memo[key] = self._dtype(expr, scope, depth)
        return self._memo[key]

    def _dtype(self, expr: ast.expr, scope: Any, depth: int) -> str | None:
        if isinstance(expr, ast.Constant) and isinstance(expr.value, int):
            return INT_SIG
        if isinstance(expr, ast.Subscript):
            if isinstance(expr.value, ast.Attribute) and expr.value.attr == "shape":
                return INT_SIG
            return None
        if isinstance(expr, ast.Attribute):
            if expr.attr in HOST_SAME:
                return self.dtype(expr.value, scope, depth)
            return None
        if isinstance(expr, ast.Call):
            f = expr.func
            kw = {k.arg: k.value for k in expr.keywords if k.arg}
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if name in HOST_INTS or name == "len":
                return INT_SIG
            given = self._torch_dtype(kw.get("dtype"))
            if given:
                return given
            if name in HOST_CASTS and isinstance(f, ast.Attribute) and not expr.args:
                return HOST_CASTS[name]
            if name == "to" and isinstance(f, ast.Attribute):
                for a in [*expr.args, kw.get("dtype")]:
                    t = self._torch_dtype(a)
                    if t:
                        return t
                return self.dtype(f.value, scope, depth)
            if name in HOST_SAME and isinstance(f, ast.Attribute):
                return self.dtype(f.value, scope, depth)
            if name in HOST_LIKE:
                base = (
                    f.value
                    if name.startswith("new_") and isinstance(f, ast.Attribute)
                    else (expr.args[0] if expr.args else None)
                )
                return self.dtype(base, scope, depth) if base is not None else None
            return None
        if isinstance(expr, ast.Name) and scope is not None:
            return self._name(expr.id, scope, depth)
        return None

    def _name(self, name: str, scope: Any, depth: int) -> str | None:
        found: set[str | None] = set()
        for node in self.statements.get(id(scope), []):
            if isinstance(node, ast.Assert):
                t = self._asserted(node.test, name)
                if t:
                    return t
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name) and target.id == name:
                        found.add(self.dtype(node.value, scope, depth + 1))
                    elif isinstance(target, ast.Tuple) and any(
                        isinstance(e, ast.Name) and e.id == name for e in target.elts
                    ):
                        shape = isinstance(node.value, ast.Attribute) and node.value.attr == "shape"
                        found.add(INT_SIG if shape else None)
        if found:
            return found.pop() if len(found) == 1 else None
        params = [a.arg for a in [*scope.args.posonlyargs, *scope.args.args]]
        if name not in params:
            return None
        index = params.index(name)
        seen: set[str | None] = set()
        for call, caller in self.calls.get(scope.name, []):
            arg = (
                call.args[index]
                if index < len(call.args)
                else next((k.value for k in call.keywords if k.arg == name), None)
            )
            seen.add(self.dtype(arg, caller, depth + 1) if arg is not None else None)
        return seen.pop() if len(seen) == 1 else None

    def _asserted(self, test: ast.expr, name: str) -> str | None:
        parts = test.values if isinstance(test, ast.BoolOp) else [test]
        for p in parts:
            if (
                isinstance(p, ast.Compare)
                and len(p.ops) == 1
                and isinstance(p.ops[0], ast.Eq)
                and isinstance(p.left, ast.Attribute)
                and p.left.attr == "dtype"
                and isinstance(p.left.value, ast.Name)
                and p.left.value.id == name
            ):
                return self._torch_dtype(p.comparators[0])
        return None


def _callee(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


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
