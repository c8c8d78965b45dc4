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
A use that only reads a tensor's shape or converts it to a dtype the code names ends there, as
does a tensor passed to a PyTorch function (``torch._scaled_mm(x_f8, ...)``: PyTorch launches
none of the file's kernels; ``torch.ops.*``, where a team's own registered op may, is not one)
or to a kernel PyTorch compiled from CUDA source. A tensor an autograd function keeps
(``ctx.save_for_backward``) goes where its ``backward`` takes it from ``ctx.saved_tensors``.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping

from matrix.analyze.profile.host import HOST_CASTS, HOST_INTS, HOST_SAME
from matrix.analyze.profile.host_syntax import callee, root_name
from matrix.analyze.profile.open_types import _ranged

MAX_DEPTH = 12  # names and calls followed from one spelling (each name once: _seen)
# attributes of a tensor that say nothing of its elements' dtype flowing on
READS = frozenset(
    {*HOST_INTS, "shape", "device", "dim", "ndim", "is_contiguous", "data_ptr", "is_cuda",
     "is_cpu", "requires_grad", "nbytes", "itemsize", "get_device"}
)  # fmt: skip
# attributes of a tensor that are a view of the same elements (`w.T.contiguous()`)
VIEWS = frozenset({"T", "mT", "H", "mH", "real"})
# host constructors of a tensor descriptor: its element type is its first argument's dtype
DESCRIPTORS = frozenset({"TensorDescriptor", "from_tensor"})
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
        self.calls: dict[str, list[ast.Call]] = {}  # `f(...)` calls by the name called
        self._seen: set[tuple[int, str]] = set()  # names followed in one ``reaches``
        self.torch = _torch_names(tree)  # module-level names bound to PyTorch modules
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
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                self.calls.setdefault(node.func.id, []).append(node)
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
        if depth == 0:
            self._seen = set()
        if depth > MAX_DEPTH:
            return None
        parent = self.parents.get(id(node))
        if isinstance(parent, ast.arguments) and node in (*parent.defaults, *parent.kw_defaults):
            return self._default(parent, node, depth)  # def f(..., dtype=torch.float8_e4m3fn)
        if isinstance(parent, ast.Tuple | ast.List | ast.Set) and node in parent.elts:
            return self.reaches(parent, depth + 1)  # (torch.float8_e4m3fn,): where it goes
        if isinstance(parent, ast.BinOp) and isinstance(parent.op, ast.Add):
            return self.reaches(parent, depth + 1)  # fp8_dtypes + (torch.float8_e5m2,)
        if isinstance(parent, ast.Compare):
            return self._checked(parent, depth)  # x.dtype in fp8_dtypes: x's tensor
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
            if _ranged(node, parent):
                return frozenset()  # torch.finfo(dtype).max: a range, not a tensor
            if isinstance(parent.func, ast.Attribute) and parent.func.attr in ("view", "to"):
                if node is parent.args[0] and self._dtype_like(node):
                    return self.reaches(parent, depth + 1)  # x.view(T): a tensor of T
                return None
            if node is parent.args[0] and callee(parent.func) in DESCRIPTORS:
                return self.reaches(parent, depth + 1)  # a descriptor of x: x's dtype
            return self._argument(parent, parent.args.index(node), None, depth)
        if isinstance(parent, ast.Subscript) and parent.value is node:
            return self.reaches(parent, depth + 1)  # a slice keeps the dtype
        if isinstance(parent, ast.Attribute) and parent.value is node:
            if parent.attr in READS:
                return frozenset()
            if parent.attr == "dtype" or parent.attr in VIEWS:  # its dtype, or a view of it
                return self.reaches(parent, depth + 1)
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

    def _made_by_torch(self, name: str) -> bool:
        """A module-level name bound once to what a PyTorch call made of no function of this
        file (``k = torch.cuda._compile_kernel(SOURCE, "k")``: a CUDA kernel, launching no
        Triton kernel here; ``torch.compile(f)`` runs ``f``, so it is not one)."""
        values = self.values.get((0, name), [])
        if self.binds.get((0, name)) != 1 or len(values) != 1:
            return False
        made = values[0]
        if not (isinstance(made, ast.Call) and root_name(made.func) in self.torch):
            return False
        names = {n.id for a in (*made.args, *(k.value for k in made.keywords))
                 for n in ast.walk(a) if isinstance(n, ast.Name)}  # fmt: skip
        return not (names & self.defs.keys()) and not any(
            isinstance(n, ast.Lambda) for n in ast.walk(made)
        )

    def _saved(self, call: ast.Call, index: int, depth: int) -> Reach | None:
        """A tensor ``ctx.save_for_backward(...)`` keeps (argument ``index``): where the name
        its class's ``backward`` unpacks from ``ctx.saved_tensors`` at that place goes."""
        if any(isinstance(a, ast.Starred) for a in call.args[: index + 1]):
            return None
        cls = self.parents.get(id(call))
        while cls is not None and not isinstance(cls, ast.ClassDef):
            cls = self.parents.get(id(cls))
        if cls is None:
            return None
        out: set[tuple[int, str]] = set()
        found = False
        for node in ast.walk(cls):
            if not (
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Attribute)
                and node.value.attr == "saved_tensors"
            ):
                continue
            target = node.targets[0] if len(node.targets) == 1 else None
            if not isinstance(target, ast.Tuple | ast.List) or index >= len(target.elts):
                return None
            elt = target.elts[index]
            if not isinstance(elt, ast.Name) or any(
                isinstance(e, ast.Starred) for e in target.elts
            ):
                return None
            got = self._name(elt.id, self._scope(elt), depth + 1)
            if got is None:
                return None
            out |= got
            found = True
        return frozenset(out) if found else None

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
        """Where a name of ``scope`` goes: each of its reads (every read, where it is bound
        more than once: a superset of where this value goes)."""
        if (scope, name) in self._seen:
            return frozenset()  # already being followed (``t = t + (...)``)
        self._seen.add((scope, name))
        out: set[tuple[int, str]] = set()
        for use in self.loads.get((scope, name), []):
            got = self.reaches(use, depth + 1)
            if got is None:
                return None
            out |= got
        return frozenset(out)

    def _default(self, args: ast.arguments, node: ast.expr, depth: int) -> Reach | None:
        """A parameter's default value: where that parameter goes in its function."""
        fn = self.parents.get(id(args))
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            return None
        positional = [*args.posonlyargs, *args.args]
        pairs = [
            *zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True)
        ]
        kw = zip(args.kwonlyargs, args.kw_defaults, strict=True)
        pairs += [(a, d) for a, d in kw if d is not None]
        param = next((a.arg for a, d in pairs if d is node), None)
        return self._name(param, id(fn), depth) if param is not None else None

    def _checked(self, compare: ast.Compare, depth: int) -> Reach | None:
        """A dtype compared with tensors' dtypes (``x.dtype in fp8_dtypes``,
        ``x.dtype == torch.float8_e4m3fn``): the kernel parameters those tensors reach,
        through the function's callers in this file where ``x`` is a parameter (a check in
        a helper is about what its callers pass); None for any other comparison."""
        out: set[tuple[int, str]] = set()
        checked = False
        for side in (compare.left, *compare.comparators):
            if isinstance(side, ast.Attribute) and side.attr == "dtype":
                side = side.value  # x.dtype: the tensor x
            elif not isinstance(side, ast.Name) or (self._scope(side), side.id) in self._seen:
                continue  # the dtype (or collection of them) being followed, a literal
            if not isinstance(side, ast.Name):
                return None
            got = self._tensor(side.id, self._scope(side), depth + 1)
            if got is None:
                return None
            out |= got
            checked = True
        # a check that reaches no kernel parameter (a helper no function here calls): the
        # file's, as any spelling not followed
        return frozenset(out) if checked and out else None

    def _tensor(self, name: str, scope: int, depth: int) -> Reach | None:
        """Where the tensor ``name`` of ``scope`` goes: its reads, and, for a parameter, where
        what each caller of its function in this file passes there goes."""
        if depth > MAX_DEPTH:
            return None
        got = self._name(name, scope, depth)
        fn = next((f for fs in self.defs.values() for f in fs if id(f) == scope), None)
        params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)] if fn else []
        if got is None or name not in params or fn is None:
            return got
        calls = [c for c in self.calls.get(fn.name, []) if len(self.defs[fn.name]) == 1]
        out = set(got)  # (its callers elsewhere: what this function does with it, as for
        # any parameter; the check then finds no kernel of this file unless it launches one)
        for call in calls:
            i = params.index(name)
            arg = call.args[i] if i < len(call.args) else None
            arg = next((k.value for k in call.keywords if k.arg == name), arg)
            if not isinstance(arg, ast.Name) or any(isinstance(a, ast.Starred) for a in call.args):
                return None
            there = self._tensor(arg.id, self._scope(call), depth + 1)
            if there is None:
                return None
            out |= there
        return frozenset(out)

    def _argument(
        self, call: ast.Call, index: int | None, keyword: str | None, depth: int
    ) -> Reach | None:
        """An argument of ``call``: a launch of a kernel of this file gives its parameter; a
        call of a function of this file follows its parameter there; anything else, None."""
        func = call.func
        if root_name(func) in self.torch and not _is_torch_ops(func):
            return frozenset()  # a PyTorch function: it launches none of this file's kernels
        if isinstance(func, ast.Name) and self._made_by_torch(func.id):
            return frozenset()  # a kernel PyTorch compiled from source (not a Triton one here)
        if isinstance(func, ast.Attribute) and func.attr == "save_for_backward":
            return self._saved(call, index, depth) if index is not None else None
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


def _torch_names(tree: ast.Module) -> frozenset[str]:
    """The module-level names ``tree`` binds to PyTorch's modules (``torch``, ``F`` of
    ``import torch.nn.functional as F``, ``nn`` of ``from torch import nn``)."""
    out: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "torch" or a.name.startswith("torch."):
                    out.add(a.asname or a.name.split(".")[0])
        elif (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and node.module
            and (node.module == "torch" or node.module.startswith("torch."))
        ):
            out |= {a.asname or a.name for a in node.names if a.name != "*"}
    return frozenset(out)


def _is_torch_ops(func: ast.expr) -> bool:
    """``torch.ops.<ns>.<op>(...)``: an op a library registers, maybe the team's own."""
    return "ops" in ast.unparse(func).split(".")
