"""The dtypes a host wrapper passes to a kernel, read from the scanned tree."""

from __future__ import annotations

import ast
import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from matrix.analyze.profile.host_branches import UNBOUND, branched
from matrix.analyze.profile.host_ints import MAX_HOST_DEPTH, HostInts, rebinds
from matrix.analyze.profile.host_returns import HostOps, HostReturns
from matrix.analyze.profile.host_syntax import (
    INT_SIG,
    annotated,
    callee,
    is_none,
    module_scope,
    moves_device,
    on_torch,
    root_name,
    unguarded,
)
from matrix.analyze.profile.host_tables import HostTables
from matrix.analyze.profile.host_tokens import (
    TOKEN,
    Tested,
    images_of,
    join,
    pick,
    restrict_token,
    split_token,
    tested,
)  # fmt: skip
from matrix.analyze.profile.model import Launch, UsageMap

HOST_CASTS = {"half": "float16", "float": "float32", "double": "float64", "bfloat16": "bfloat16",
              "int": "int32", "long": "int64", "bool": "int1"}  # fmt: skip
HOST_SAME = frozenset(
    {"contiguous", "t", "view", "reshape", "transpose", "permute", "clone", "detach", "T",
     "flatten", "squeeze", "unsqueeze", "expand", "narrow", "cuda", "cpu", "mT"}
)  # fmt: skip
HOST_LIKE = frozenset({"empty_like", "zeros_like", "ones_like", "randn_like", "rand_like",
                       "full_like", "new_empty", "new_zeros", "new_ones", "new_full"})  # fmt: skip
HOST_INTS = frozenset({"stride", "numel", "size", "element_size", "cdiv", "next_power_of_2"})
# names, assignments and callers followed from a launch argument: FlagGems cummax's parts
# buffer takes 5 (argument, wrapper parameter, its caller's name, ``dtype=``, ``out.dtype``)


class HostTypes(HostInts, HostReturns, HostTables):
    """The dtypes a host wrapper passes to a kernel, read from the scanned tree: a tensor made
    with ``dtype=torch.float16``, cast with ``.half()``/``.to(torch.bfloat16)``, checked with
    ``assert x.dtype == torch.float16``, returned by a host function of the tree, or a
    parameter of the wrapper typed by every call of it in the tree (``C.apply`` for
    ``C.forward``; the read tree includes the repository's callers outside --scan: host_returns
    .py). One launch site whose argument cannot be typed leaves that parameter to the kernel's
    own reading (not inferable: fail closed)."""

    def __init__(
        self,
        trees: Sequence[tuple[ast.Module, Sequence[ast.FunctionDef | ast.AsyncFunctionDef]]],
        umap: UsageMap,
        modules: Sequence[tuple[str, Mapping[str, str]]] = (),
        outside: int = 0,
    ) -> None:
        # per tree: its module's name and its module-level bindings (SourceModule.bindings):
        # which file's kernel a launch in another file reaches (``_imports``)
        self.modules = list(modules)
        self.map = umap
        self.functions: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
        self.file_of: dict[int, int] = {}  # a function's or a call's file
        self.calls: dict[
            str, list[tuple[ast.Call, ast.FunctionDef | ast.AsyncFunctionDef | None]]
        ] = {}
        self.kernel_names: set[str] = set()
        self.launch_sites: list[tuple[str, ast.Call, Any]] = []
        self.in_loop: set[int] = set()  # launch sites inside a loop of their function
        # The launch being typed: its function and line (an assignment after it, outside a
        # loop, is not what it passes: ``dq = dq.sum(0)`` after ``k[grid](dq)``)
        self._site: tuple[int, int] = (0, 0)
        # One walk per tree: each node's innermost function, and per function its asserts
        # and assignments (what ``_name`` reads), so that typing a launch never re-walks.
        self.statements: dict[int, list[ast.AST]] = {}
        # Which file defines each kernel and holds each launch: a kernel name defined in
        # several files (`_fwd_kernel`) takes only the launches of its own file.
        self.kernel_file: dict[int, int] = {}
        self.kernel_scope: dict[int, int] = {}  # kernel -> its enclosing function (0: module)
        self.kernels_named: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
        self.defined_in: dict[str, set[int]] = {}
        self.site_file: dict[int, int] = {}
        self.tables: dict[str, list[ast.Dict]] = {}  # module-level dicts by name
        self.sequences: dict[str, list[ast.Tuple | ast.List]] = {}  # module-level tuples
        self.method_of: dict[int, str] = {}  # a class body's function -> its class
        self.enclosing: dict[int, Any] = {}  # a nested function -> the function around it
        self.module_scopes: set[int] = set()  # each tree's module_scope
        self.aliases: dict[str, set[str]] = {}  # a function -> module names bound to it
        self._returns: dict[int, list[ast.expr | None]] = {}
        # the last ``outside`` trees are the repository's callers of the scanned functions:
        # read for their calls and functions only (no launch of theirs is typed or profiled)
        callers_from = len(trees) - outside
        for index, (tree, kernels) in enumerate(trees):  # each tree with its @triton.jit functions
            self._read_tree(index, tree, kernels, index >= callers_from)
        # code that changes torch's default dtype: a factory without dtype= is not float32
        self.default_set = bool(
            {"set_default_dtype", "set_default_tensor_type"} & self.calls.keys()
        )
        self._memo: dict[tuple[int, int, bool], str | None] = {}
        self._held: dict[tuple[str, int], frozenset[str]] = {}  # (local, scope) -> kernels
        # kernel[grid](...), and fn[grid](...) with fn a local bound to kernels (``merge_fn =
        # solve_tril_16x16_kernel`` in one branch, another kernel in the next)
        self.launched = frozenset(
            k for name, _, scope in self.launch_sites for k in self._kernels_held(name, scope)
        )

    def _read_tree(self, index: int, tree: ast.Module,
                   kernels: Sequence[ast.FunctionDef | ast.AsyncFunctionDef],
                   caller_only: bool) -> None:  # fmt: skip
        """One walk of tree ``index``: its functions, calls, launches and bindings (a tree
        of the repository's callers, ``caller_only``, has no launch of its own typed)."""
        self.kernel_names |= {f.name for f in kernels}
        for f in kernels:
            self.kernel_file[id(f)] = index
            self.defined_in.setdefault(f.name, set()).add(index)
            self.kernels_named.setdefault(f.name, []).append(f)
        inside = {id(f) for f in kernels}  # device code: no launch, no host call in it
        top = module_scope(tree)  # module code (``__main__``) is a scope of its own
        self.file_of[id(top)] = index
        self.module_scopes.add(id(top))
        stack: list[tuple[ast.AST, Any, bool]] = [(tree, top, False)]
        while stack:
            node, fn, loop = stack.pop()
            if id(node) in inside:
                self.kernel_scope[id(node)] = 0 if fn is top else id(fn)
                continue
            if isinstance(node, ast.ClassDef):  # ``C.apply`` runs ``C.forward``
                for item in node.body:
                    self.method_of[id(item)] = node.name
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                self.functions.setdefault(node.name, []).append(node)
                self.file_of[id(node)] = index
                if fn is not top:  # a nested function (a closure) reads fn's names
                    self.enclosing[id(node)] = fn
                fn, loop = node, False
            if isinstance(node, BINDINGS):
                self.statements.setdefault(id(fn), []).append(node)
            if fn is top and isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict):
                for t in node.targets:  # a module's dtype table: ``D = {torch.float16: ...}``
                    if isinstance(t, ast.Name):
                        self.tables.setdefault(t.id, []).append(node.value)
            if (
                fn is top
                and isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Name)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
            ):
                # ``scale_activations_per_token = scale_activations_per_token_triton``
                self.aliases.setdefault(node.value.id, set()).add(node.targets[0].id)
            if (fn is top and isinstance(node, ast.Assign)
                    and isinstance(node.value, ast.Tuple | ast.List)):  # fmt: skip
                for t in node.targets:  # ``SUPPORTED = (torch.float16, ...)``
                    if isinstance(t, ast.Name):
                        self.sequences.setdefault(t.id, []).append(node.value)
            if isinstance(node, ast.Call):
                name = callee(node.func)
                if name:
                    self.calls.setdefault(name, []).append((node, fn))
                    self.file_of[id(node)] = index
                if isinstance(node.func, ast.Subscript) and not caller_only:
                    k = callee(node.func.value)
                    if k:
                        self.launch_sites.append((k, node, fn))
                        if loop:
                            self.in_loop.add(id(node))
                        self.site_file[id(node)] = index
            loop = loop or isinstance(node, ast.For | ast.AsyncFor | ast.While)
            stack.extend((child, fn, loop) for child in ast.iter_child_nodes(node))

    def launches(self, kernel: ast.FunctionDef | ast.AsyncFunctionDef) -> list[Launch]:
        """One ``Launch`` per launch site of ``kernel`` in the tree (what each passes)."""
        params = [a.arg for a in [*kernel.args.posonlyargs, *kernel.args.args]]
        out: list[Launch] = []
        own = self.kernel_file.get(id(kernel))
        shared = len(self.defined_in.get(kernel.name, ())) > 1
        for name, call, scope in self.launch_sites:
            if kernel.name not in self._kernels_held(name, scope):
                continue
            site = self.site_file.get(id(call))
            if shared and site != own and not self._imports(site, own, kernel.name):
                continue  # another file's kernel of the same name
            if site != own and not self._through_module(call, site, own):
                continue  # ``obj.fn[mode](...)``: an attribute of something else
            if site == own and not self._binds(kernel, call, scope):
                continue  # another definition of the name in this file is what it launches
            self._memo.clear()  # what a name holds depends on where the launch is
            line = 0 if id(call) in self.in_loop else getattr(call, "lineno", 0)
            self._site = (id(scope), line)
            launch = self._launch(params, call, scope)
            if launch not in out:
                out.append(launch)
        return out

    def _kernels_held(self, name: str, scope: Any) -> frozenset[str]:
        """The kernels ``name[grid](...)`` in ``scope`` launches: the kernel of that name, or
        those a local of that name is assigned (``fn = k1`` / ``fn = k2`` in branches); a
        local assigned anything else launches none this reading can name."""
        if name in self.kernel_names:
            return frozenset({name})
        key = (name, id(scope))
        if key not in self._held:
            held: set[str] | None = set()
            for node in self.statements.get(id(scope), []) if scope is not None else []:
                if (
                    held is not None
                    and isinstance(node, ast.Assign)
                    and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
                ):
                    v = node.value
                    if isinstance(v, ast.Name) and v.id in self.kernel_names:
                        held.add(v.id)
                    else:
                        held = None  # assigned something else too: not this reading's to name
            self._held[key] = frozenset(held or ())
        return self._held[key]

    def _imports(self, site: int | None, own: int | None, name: str) -> bool:
        """Whether the file ``site`` imports ``name`` from the kernel's file ``own`` (``from
        pkg.kernels import k``), whichever other file (a vendor's copy) defines that name."""
        if site is None or own is None or max(site, own) >= len(self.modules):
            return False
        module, _ = self.modules[own]
        return self.modules[site][1].get(name) == f"{module}.{name}"

    def _through_module(self, call: ast.Call, site: int | None, own: int | None) -> bool:
        """Whether ``base.name[grid](...)`` in another file reaches the kernel's module through
        ``base`` (``import pkg.kernels as base``); a plain ``name[grid](...)`` does (unknown
        modules: every launch counts)."""
        func = call.func.value if isinstance(call.func, ast.Subscript) else None
        if not isinstance(func, ast.Attribute):
            return True
        if site is None or own is None or max(site, own) >= len(self.modules):
            return True
        root = root_name(func.value)
        if root is None:
            return False
        module, _ = self.modules[own]
        bound = self.modules[site][1].get(root, "")
        return bool(bound) and (module == bound or module.startswith(bound + "."))

    def _binds(self, kernel: ast.FunctionDef | ast.AsyncFunctionDef, call: ast.Call,
               scope: Any) -> bool:  # fmt: skip
        """Whether ``call`` (in ``kernel``'s own file, in function ``scope``) launches this
        definition of the name where the file defines it more than once: the definition in
        the launch's own function, else the last one above the launch (as Python binds it)."""
        twins = [
            f for f in self.kernels_named.get(kernel.name, [])
            if self.kernel_file.get(id(f)) == self.kernel_file.get(id(kernel))
            and id(f) in self.kernel_scope
        ]  # fmt: skip
        if len(twins) < 2:
            return True
        line = getattr(call, "lineno", 0)
        here = 0 if scope is None or id(scope) in self.module_scopes else id(scope)
        local = [f for f in twins if self.kernel_scope[id(f)] == here]
        pool = local or [f for f in twins if self.kernel_scope[id(f)] == 0]
        above = [f for f in pool if f.lineno <= line] or pool
        return bool(above) and max(above, key=lambda f: f.lineno) is kernel

    def _launch(self, params: Sequence[str], call: ast.Call, scope: Any) -> Launch:
        sig: dict[str, str] = {}
        cx: dict[str, str] = {}
        # token root -> the parameters it types (and whether each is passed a dtype, not a
        # tensor: a tensor's parameter, a pointer, names the shared variable)
        groups: dict[str, list[tuple[str, bool]]] = {}
        domains: dict[str, frozenset[str]] = {}
        images: dict[str, dict[str, frozenset[str]]] = {}
        # positional arguments up to the first ``*args`` (after it, positions are unknown)
        positional = list(itertools.takewhile(lambda a: not isinstance(a, ast.Starred), call.args))
        bound: list[tuple[str, ast.expr]] = list(zip(params, positional, strict=False))
        bound += [(k.arg, k.value) for k in call.keywords if k.arg and k.arg in params]
        ints: dict[str, frozenset[int]] = {}
        for param, expr in bound:
            got = self.int_values(expr, scope)
            if got:
                ints[param] = got
            value = self.dtype_value(expr, scope, 0)
            if value is not None and not value.startswith(TOKEN):
                cx[param] = value  # a dtype constexpr: ``tl.float32``, ``D[torch.float16]``
                continue
            tensor = self.dtype(expr, scope, 0)
            t = tensor or value
            if t is None:
                continue
            if t.startswith(TOKEN):
                root, admitted = split_token(t)
                if any(len(ds) > 1 for ds in images_of(t).values()):
                    continue  # several dtypes for one of the root's: not one per launch
                groups.setdefault(root, []).append((param, tensor is None))
                if images_of(t):  # per dtype of the root, not that dtype: ``compute_dtype``
                    images[param] = images_of(t)
                if admitted is not None:
                    domains[root] = domains.get(root, admitted) & admitted
            elif t == INT_SIG:
                sig[param] = INT_SIG
            elif self.map.dtypes.get(t) == t:
                # a tensor: a pointer to its dtype, spelt by its own name (every dtype's name
                # is one of its spellings in usage_map.toml [dtypes]: uint8 and the fp8s too)
                sig[param] = f"*{t}"
        ties: dict[str, str] = {}
        narrowed: dict[str, frozenset[str]] = {}
        for root, passed in groups.items():
            # stable: the root's own dtype first, tensors first
            members = [p for p, _ in sorted(passed, key=lambda m: (m[0] in images, m[1]))]
            if len(members) > 1 or root in domains or members[0] in images:
                for m in members:
                    ties[m] = members[0]
                if domains.get(root):
                    narrowed[members[0]] = domains[root]
        return Launch(sig, cx, ties=ties, domains=narrowed, images=images, values=ints)

    def type_of(self, expr: ast.expr, scope: Any, depth: int) -> str | None:
        """``*fp16`` for a float16 tensor, ``i32`` for an int, None unknown."""
        dt = self.dtype(expr, scope, depth)
        if dt == INT_SIG:
            return INT_SIG
        if dt is None or dt.startswith(TOKEN):
            return None
        return f"*{dt}" if self.map.dtypes.get(dt) == dt else None

    def dtype(self, expr: ast.expr, scope: Any, depth: int) -> str | None:
        """The dtype of the host tensor ``expr``: a dtype name, ``i32`` (an int), a token (one
        dtype the source does not name), None (unknown)."""
        return self._cached(expr, scope, depth, False)

    def dtype_value(self, expr: ast.expr, scope: Any, depth: int) -> str | None:
        """The dtype the host expression ``expr`` IS (``torch.float16``, ``x.dtype``,
        ``D[x.dtype]``): a dtype name, a token (the dtype of that tensor), None (unknown)."""
        return self._cached(expr, scope, depth, True)

    def _cached(self, expr: ast.expr, scope: Any, depth: int, value: bool) -> str | None:
        if depth > MAX_HOST_DEPTH:
            return None
        key = (id(expr), id(scope), value)
        if key not in self._memo:
            self._memo[key] = None  # a cycle through the calls reads as unknown
            self._memo[key] = (self._value if value else self._dtype)(expr, scope, depth)
        return self._memo[key]

    def _value(self, expr: ast.expr, scope: Any, depth: int) -> str | None:
        named = self._torch_dtype(expr)
        if named:
            return named
        if isinstance(expr, ast.Attribute) and expr.attr == "dtype":
            t = self.dtype(expr.value, scope, depth)
            return None if t == INT_SIG else t
        if isinstance(expr, ast.IfExp):
            return pick(self._tested(expr.test, "", None, scope, depth, True),
                        self.dtype_value(expr.body, scope, depth),
                        self.dtype_value(expr.orelse, scope, depth), str(id(expr)))  # fmt: skip
        if isinstance(expr, ast.Subscript) and isinstance(expr.value, ast.Name):
            return self._lookup(expr.value.id, expr.slice, scope, depth)
        if isinstance(expr, ast.BoolOp) and isinstance(expr.op, ast.Or):
            # ``output_dtype or x.dtype``: a dtype object is true, so a named first one wins
            first = self.dtype_value(expr.values[0], scope, depth)
            return first if first and not first.startswith(TOKEN) else None
        if isinstance(expr, ast.Name) and scope is not None:
            return self._name(expr.id, scope, depth, True)
        if isinstance(expr, ast.Call):  # a function of the read tree returning a dtype
            return self.returned(expr, scope, depth, None, True)
        return None

    def _dtype(self, expr: ast.expr, scope: Any, depth: int) -> str | None:
        if isinstance(expr, ast.Constant) and isinstance(expr.value, int):
            return INT_SIG
        if isinstance(expr, ast.Subscript):
            if isinstance(expr.value, ast.Attribute) and expr.value.attr == "shape":
                return INT_SIG
            # a tensor indexed in several dimensions (``buf.view(2, n)[0, :]``): its dtype (a
            # tuple's or a list's ``t[0]``, ``t[1:]`` is no tensor this reading types)
            if not isinstance(expr.slice, ast.Tuple):
                return None
            of = self.dtype(expr.value, scope, depth + 1)
            return None if of == INT_SIG else of
        if isinstance(expr, ast.Attribute):
            if expr.attr in HOST_SAME:
                return self.dtype(expr.value, scope, depth)
            return None
        if isinstance(expr, ast.BinOp | ast.UnaryOp):  # ``-x``, ``x * 2.0`` (host_ops.toml)
            return self.arithmetic(expr, scope, depth)
        if isinstance(expr, ast.IfExp):  # ``x if c else torch.empty_like(x)``
            return pick(self._tested(expr.test, "", None, scope, depth, False),
                        self.dtype(expr.body, scope, depth),
                        self.dtype(expr.orelse, scope, depth), str(id(expr)))  # fmt: skip
        if isinstance(expr, ast.Call):
            f = expr.func
            kw = {k.arg: k.value for k in expr.keywords if k.arg}
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if name in HOST_INTS or name == "len":
                return INT_SIG
            if "dtype" in kw and name != "to":  # a tensor made with that dtype, or unknown
                return self.dtype_value(kw["dtype"], scope, depth)
            if name in HostOps.load().default_float and on_torch(f) and not self.default_set:
                return "float32"  # ``torch.ones(n, m)``: torch's default dtype
            if name in HOST_CASTS and isinstance(f, ast.Attribute) and not expr.args:
                return HOST_CASTS[name]
            if not isinstance(f, ast.Attribute):
                return self._like(name, expr, scope, depth)
            if name == "to":
                return self._to(expr, f.value, kw, scope, depth)
            if name == "view" and len(expr.args) == 1 and not self._is_shape(expr.args[0]):
                return self.dtype_value(expr.args[0], scope, depth)  # ``x.view(torch.int8)``
            if name in HOST_SAME:
                return self.dtype(f.value, scope, depth)
            return self._like(name, expr, scope, depth)
        if isinstance(expr, ast.Name) and scope is not None:
            return self._name(expr.id, scope, depth, False)
        return None

    def _like(self, name: str, expr: ast.Call, scope: Any, depth: int) -> str | None:
        """``torch.empty_like(x)``, ``x.new_empty(...)``: x's dtype; a call of a function of
        the read tree: what it returns."""
        if name not in HOST_LIKE:  # a function of the read tree, else a dtype-keeping one
            return self.call_result(expr, name, scope, depth)
        f = expr.func
        base = (f.value if name.startswith("new_") and isinstance(f, ast.Attribute)
                else (expr.args[0] if expr.args else None))  # fmt: skip
        return self.dtype(base, scope, depth) if base is not None else None

    def _to(self, expr: ast.Call, base: ast.expr, kw: dict[str, ast.expr], scope: Any,
            depth: int) -> str | None:  # fmt: skip
        """``x.to(torch.float16)``, ``x.to(dtype=d)``: that dtype; ``x.to("cuda")``, ``x.to(
        device)``: x's; ``x.to(y)`` or any other argument: unknown (a tensor's or a dtype)."""
        if "dtype" in kw:
            return self.dtype_value(kw["dtype"], scope, depth)
        for a in expr.args:
            named = self._torch_dtype(a)
            if named:
                return named
        if moves_device(expr):  # ``x.to("cuda")``, ``x.to(y.device)``, ``x.to(device)``
            return self.dtype(base, scope, depth)
        if len(expr.args) == 1 and isinstance(expr.args[0], ast.Attribute | ast.Name):
            # ``x.to(out_dtype)``, ``x.to(y.dtype)``
            return self.dtype_value(expr.args[0], scope, depth)
        return None

    def _is_shape(self, arg: ast.expr) -> bool:
        """A ``view`` argument that is a shape, not a dtype: an int, a tuple, ``*s``, ``-1``,
        a ``.shape``/``.size()``; a name or attribute is a dtype unless spelt as a shape."""
        if isinstance(arg, ast.Constant | ast.Tuple | ast.List | ast.Starred | ast.UnaryOp):
            return True
        if isinstance(arg, ast.Attribute):
            return arg.attr == "shape" or (self._torch_dtype(arg) is None and arg.attr != "dtype"
                                           and "dtype" not in arg.attr)  # fmt: skip
        if isinstance(arg, ast.Call):
            return callee(arg.func) in ("size", "Size")
        if isinstance(arg, ast.Name):
            return "dtype" not in arg.id.lower() and "shape" in arg.id.lower()
        return False

    def _name(self, name: str, scope: Any, depth: int, value: bool) -> str | None:
        """What ``name`` of ``scope`` is (``value``: the dtype it holds; else the dtype of the
        tensor it holds): from its assignments, else its callers, else a token of its own
        (one value of one dtype); narrowed by the scope's checks of ``name.dtype``."""
        resolve = self.dtype_value if value else self.dtype
        found: list[str | None] = []
        params = [a.arg for a in [*scope.args.posonlyargs, *scope.args.args]]
        nested = False  # an assignment under a branch or loop: the parameter's value may stay
        plain: set[int] = set()  # its ``name = value`` statements (0: another binding)
        top = {id(s) for s in scope.body}
        until = self._site[1] if self._site[0] == id(scope) else 0
        for node in self.statements.get(id(scope), []):
            if until and getattr(node, "lineno", 0) > until:
                continue  # after the launch, outside any loop: not what it passes
            if isinstance(node, ast.Assert):
                t = None if value else self._asserted(node.test, name)
                if t:
                    return t
                continue
            if isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                rhs = node.value
                for target in targets:
                    if isinstance(target, ast.Name) and target.id == name:
                        plain.add(id(node))
                        if rhs is None or is_none(rhs):
                            continue  # no value, or ``None`` (no tensor: no dtype to pass)
                        if not value and self._same(rhs, name):
                            continue  # ``x = x.contiguous()``: the same dtype
                        found.append(resolve(rhs, scope, depth + 1))
                        nested |= id(node) not in top
                    elif isinstance(target, ast.Tuple | ast.List) and any(
                        isinstance(e, ast.Name) and e.id == name for e in target.elts
                    ):
                        part = self.unpacked(rhs, scope, depth, value, target, name)
                        if part != UNBOUND:  # ``a, b = None, None``: no tensor there
                            found.append(part)
                        nested |= id(node) not in top
                        plain.add(0)  # not one the statement-order reading follows
            elif rebinds(node, name):  # a loop or ``with`` target, ``del``: not followed
                found.append(None)
                plain.add(0)
        if nested and plain:  # assigned under ``if`` tests of a dtype: per dtype, in order
            start = self._passed(name, scope, depth, resolve) if name in params else UNBOUND
            got, covered, split = branched(
                scope.body, name, start, until,
                lambda s, cur: cur if s.value is None or is_none(s.value) or (
                    not value and self._same(s.value, name)) else resolve(s.value, scope,
                                                                            depth + 1),
                lambda t, cur: self._tested(t, name, cur, scope, depth, value))  # fmt: skip
            if split and plain <= covered and got != UNBOUND:
                return self._checked(got, name, scope, [])
        if found and (not nested or name not in params):
            return self._checked(join(found, f"{id(scope)}:{name}"), name, scope, found)
        if name not in params:
            outer = self.enclosing.get(id(scope))
            if outer is not None and not found and not plain:  # a closure's free name
                return self._name(name, outer, depth + 1, value)
            return None
        if not found and not value and annotated(scope, name) == "int":
            return INT_SIG  # ``alignment: int = 1``: what the author says it holds
        return self._checked(join([*found, self._passed(name, scope, depth, resolve)]), name,
                             scope, [])  # fmt: skip

    def _same(self, rhs: ast.expr, name: str) -> bool:
        """``x = x.contiguous()``, ``x = rearrange(x, ...)``, ``x = x.contiguous() if c else
        x``: the same dtype as before."""
        if isinstance(rhs, ast.IfExp):
            return self._same(rhs.body, name) and self._same(rhs.orelse, name)
        return _keeps(rhs, name) or self.keeps(rhs, name)

    def _passed(self, name: str, scope: Any, depth: int, resolve: Any) -> str:
        """What every caller passes for parameter ``name``, else its own token."""
        params = [a.arg for a in [*scope.args.posonlyargs, *scope.args.args]]
        # ``C.backward``'s gradients (tensors, no dtype objects): no call of its own passes them
        grad = self.graded(scope, params.index(name), depth) if resolve == self.dtype else None
        if grad is not None:
            return grad
        seen = [resolve(arg, caller, depth + 1) if arg is not None else None
                for arg, caller in self.arguments(name, scope)]  # fmt: skip
        # what every caller passes, else the parameter's own token (one value per call)
        return join(seen) or f"{TOKEN}{id(scope)}:{name}"

    def _tested(self, test: ast.expr, name: str, cur: str | None, scope: Any, depth: int,
                value: bool) -> Tested | bool | None:  # fmt: skip
        """What ``test`` says of a dtype (``x.dtype == torch.float16 or ...``, ``dtype is
        torch.bool``), per dtype of its root; ``cur``: the value ``name`` has there."""
        left = next((c.left for c in ast.walk(test) if isinstance(c, ast.Compare)), None)
        if isinstance(left, ast.Name):  # the dtype a name holds
            got = cur if left.id == name and value else self.dtype_value(left, scope, depth + 1)
        elif (isinstance(left, ast.Attribute) and left.attr == "dtype"
              and isinstance(left.value, ast.Name)):  # a tensor's dtype  # fmt: skip
            base = left.value.id
            got = cur if base == name and not value else self.dtype(left.value, scope, depth + 1)
        else:
            return None
        subject = ast.unparse(left)
        return tested(got, self._dtype_test(test, subject, True),
                      self._dtype_test(test, subject, False))  # fmt: skip

    def _checked(
        self, got: str | None, name: str, scope: Any, found: list[str | None]
    ) -> str | None:
        """``got`` narrowed by the dtypes the scope's top-level checks of ``name.dtype``
        admit; a single unknown assignment of a non-parameter is a token of its own."""
        if got is None and len(found) == 1 and found[0] is None:
            got = f"{TOKEN}{id(scope)}:{name}"  # ``o = f(x)`` once: one value, one dtype
        if got is None or not got.startswith(TOKEN):
            return got
        admitted = self._admitted(name, scope)
        return restrict_token(got, admitted) if admitted is not None else got

    def _admitted(self, name: str, scope: Any) -> frozenset[str] | None:
        """The dtypes ``name`` may have after the scope's top-level checks: ``assert
        name.dtype in (...)``, ``torch._check(...)``, ``if name.dtype not in (...): raise``."""
        got: frozenset[str] | None = None
        until = self._site[1] if self._site[0] == id(scope) else 0
        for s in unguarded(scope.body, name):
            if until and s.lineno > until:
                break  # a check after the launch says nothing of what it passed
            tests: list[tuple[ast.expr, bool]] = []
            if isinstance(s, ast.Assert):
                tests.append((s.test, True))
            elif (isinstance(s, ast.Expr) and isinstance(s.value, ast.Call)
                  and callee(s.value.func) == "_check" and s.value.args):  # fmt: skip
                tests.append((s.value.args[0], True))
            elif (
                isinstance(s, ast.If)
                and not s.orelse
                and any(isinstance(b, ast.Raise) for b in s.body)
            ):
                # raises when the test holds: each ``or``-part is false after it
                parts = s.test.values if isinstance(s.test, ast.BoolOp) and isinstance(
                    s.test.op, ast.Or) else [s.test]  # fmt: skip
                tests += [(p, False) for p in parts]
            for test, holds in tests:
                ds = self._dtype_test(test, f"{name}.dtype", holds)
                if ds is not None:
                    got = ds if got is None else got & ds
        return got

    def _dtype_test(self, test: ast.expr, subject: str, holds: bool) -> frozenset[str] | None:
        """The dtypes of ``subject`` for which ``test`` is ``holds``, where the test is about
        ``subject`` alone (``x.dtype``, a name holding a dtype: ``in``/``not in``/``==``/``!=``
        torch dtypes, ``and``/``or``); None for any other test (it says nothing)."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return self._dtype_test(test.operand, subject, not holds)
        if isinstance(test, ast.BoolOp):
            parts = [self._dtype_test(v, subject, holds) for v in test.values]
            # ``and`` holding (``or`` failing) means every part: each part narrows alone
            every = isinstance(test.op, ast.And) == holds
            known = [p for p in parts if p is not None]
            if every:
                return frozenset.intersection(*known) if known else None
            return None if len(known) < len(parts) else frozenset().union(*known)
        if not isinstance(test, ast.Compare):
            return None
        if len(test.ops) > 1:  # ``a.dtype == b.dtype == torch.float32``: each member that dtype
            one = self._chained(test, subject)
            return frozenset({one}) if one and holds else None
        left, op, right = test.left, test.ops[0], test.comparators[0]
        if ast.unparse(left) != subject:
            return None
        if isinstance(op, ast.In | ast.NotIn):
            items = right.elts if isinstance(right, ast.Tuple | ast.List | ast.Set) else None
            if items is None and isinstance(right, ast.Name):
                items = self._module_sequence(right.id)
            named = [self._torch_dtype(e) for e in items or []]
            if not named or any(n is None for n in named):
                return None
            ds = frozenset(n for n in named if n)
            positive = isinstance(op, ast.In) == holds
        elif isinstance(op, ast.Eq | ast.Is | ast.NotEq | ast.IsNot):
            one = self._torch_dtype(right)
            if one is None:
                return None
            ds = frozenset({one})
            positive = isinstance(op, ast.Eq | ast.Is) == holds
        else:
            return None
        return ds if positive else frozenset(self.map.dtypes.values()) - ds

    def _module_sequence(self, name: str) -> list[ast.expr] | None:
        seqs = self.sequences.get(name, [])
        return list(seqs[0].elts) if len(seqs) == 1 else None

    def _chained(self, test: ast.Compare, subject: str) -> str | None:
        """The torch dtype a chain of ``==`` (``lhs.dtype == rhs.dtype == torch.float32``, as
        triton-gym asserts) gives ``subject`` where it is one of its members; None otherwise."""
        if not all(isinstance(op, ast.Eq | ast.Is) for op in test.ops):
            return None
        members = [test.left, *test.comparators]
        if subject not in {ast.unparse(m) for m in members}:
            return None
        named = {d for d in (self._torch_dtype(m) for m in members) if d}
        return named.pop() if len(named) == 1 else None

    def _asserted(self, test: ast.expr, name: str) -> str | None:
        is_and = isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And)
        parts = test.values if isinstance(test, ast.BoolOp) and is_and else [test]
        for p in parts:
            if isinstance(p, ast.Compare) and len(p.ops) > 1:
                chained = self._chained(p, f"{name}.dtype")
                if chained:
                    return chained
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


BINDINGS = (ast.Assert, ast.Assign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.With,
            ast.AsyncWith, ast.Delete, ast.NamedExpr)  # fmt: skip


def _keeps(rhs: ast.expr, name: str) -> bool:
    """``name = name.contiguous()`` (a chain of dtype-keeping calls on ``name`` itself)."""
    e = rhs
    while True:
        if isinstance(e, ast.Name):
            return e.id == name
        if isinstance(e, ast.Attribute) and e.attr in HOST_SAME:
            e = e.value
        elif (isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute)
              and e.func.attr in HOST_SAME and e.func.attr != "view"
              and not any(k.arg == "dtype" for k in e.keywords)):  # fmt: skip
            e = e.func.value
        elif moves_device(e):  # ``cost = cost.to(x.device)``: the same dtype elsewhere
            assert isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute)
            e = e.func.value
        else:
            return False
