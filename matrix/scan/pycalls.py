"""Plain Python calls inside ``@triton.jit`` bodies, each tied to the ``python_in_kernel`` case
that measures it (rule TRI019; the probe is matrix/probes/python_in_kernel.py).

A call is classified by what it calls (its *callee*) and by what it passes (its *arguments*):

- callee ``host``: a plain function of the scanned tree reached by its name (a module-level
  ``def`` of the kernel's module, or one imported from another module of the tree);
  ``module``: such a function reached as an attribute of a module (``utils.half(BLOCK)``);
  ``constexpr_function``: one decorated ``triton.constexpr_function``/``tl.constexpr_function``;
  ``math``: a function of Python's ``math`` module; ``triton.next_power_of_2``,
  ``triton.cdiv``: those two; ``triton-function``: another plain Python function of Triton's
  own (the census records it as a ``function``, not a builtin: ``core.get_int_dtype``); a name
  the module rebinds to ``triton.constexpr_function(...)`` counts as ``constexpr_function``;
- arguments ``constexpr``: literals, ``tl.constexpr`` parameters, constexpr globals, locals
  computed from them and arithmetic on them, ``math`` constants and a value's ``.dtype``/``.shape``
  (known when the kernel compiles); ``scalar``: a plain (runtime) parameter among
  constexprs; ``tensor``: anything else (a loaded value, ``tl.arange``...).

``rule.match.cases`` (data, scan_rules.toml) maps ``callee:arguments`` to the probe case whose
cell decides the finding per release; a combination no case measures is matched with no cell,
which the judge reports as unknown (nothing recorded measures it). Builtins, ``tl.*``, other
``triton.*`` names, ``@triton.jit`` helpers, methods and parameters called as functions are
not plain Python calls and are left alone.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from matrix.scan.imports import Module
from matrix.scan.rules import Rule

CONSTEXPR_FUNCTION = ("triton.constexpr_function", "triton.language.constexpr_function")
TRITON_CALLS = ("triton.next_power_of_2", "triton.cdiv")
# Modules whose functions the census records as plain Python "function"s but that kernels call
# on tensors by design (libdevice wrappers dispatching to the backend's externs): not plain
# Python calls (Liger-Kernel's `rsqrt`/`tanh` from libdevice compile on every release).
EXTERN_MODULES = ("triton.language.extra.", "triton.language.math.", "triton.language.libdevice.")


def _is_constexpr_annotation(module: Module, ann: ast.expr | None) -> bool:
    if ann is None:
        return False
    if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
        return ann.value.rsplit(".", 1)[-1] == "constexpr"  # "tl.constexpr" as a string
    q = module.imports.qualname(ann) or ""
    return q.startswith("triton.") and q.rsplit(".", 1)[-1] == "constexpr"


def _constexpr_globals(module: Module) -> set[str]:
    """Module-level names bound to ``tl.constexpr(...)`` (or annotated so)."""
    out: set[str] = set()
    for stmt in module.tree.body:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call):
            if _is_constexpr_annotation(module, stmt.value.func):
                out.update(t.id for t in stmt.targets if isinstance(t, ast.Name))
        elif (
            isinstance(stmt, ast.AnnAssign)
            and isinstance(stmt.target, ast.Name)
            and _is_constexpr_annotation(module, stmt.annotation)
        ):
            out.add(stmt.target.id)
    return out


class Kinds:
    """What each name of one kernel holds: a constexpr, a runtime scalar parameter, or other."""

    def __init__(self, module: Module, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.module = module
        args = [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]
        self.constexpr = {a.arg for a in args if _is_constexpr_annotation(module, a.annotation)}
        self.constexpr |= _constexpr_globals(module) - {a.arg for a in args}
        self.scalar = {a.arg for a in args} - self.constexpr
        # locals computed from constexprs only are constexprs too (BLOCK2 = BLOCK * 2)
        assigned: dict[str, list[ast.expr]] = {}
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    if isinstance(t, ast.Name):
                        assigned.setdefault(t.id, []).append(node.value)
            elif isinstance(node, (ast.AugAssign, ast.For)) and isinstance(node.target, ast.Name):
                assigned.setdefault(node.target.id, []).append(ast.Name("?"))  # not constexpr
        self.scalar -= set(assigned)
        for _ in range(3):  # a chain of locals
            for name, values in assigned.items():
                if name not in self.constexpr and all(self.is_constexpr(v) for v in values):
                    self.constexpr.add(name)

    def is_constexpr(self, expr: ast.expr) -> bool:
        if isinstance(expr, ast.Constant):
            return True
        if isinstance(expr, (ast.Attribute, ast.Subscript)):
            # math.e; x.dtype.primitive_bitwidth, x.shape[0]: known when the kernel compiles
            q = self.module.imports.qualname(expr) if isinstance(expr, ast.Attribute) else None
            if q is not None and q.startswith("math."):
                return True
            return any(
                isinstance(n, ast.Attribute) and n.attr in ("dtype", "shape")
                for n in ast.walk(expr)
            )
        if isinstance(expr, ast.Name):
            return expr.id in self.constexpr
        if isinstance(expr, ast.BinOp):
            return self.is_constexpr(expr.left) and self.is_constexpr(expr.right)
        if isinstance(expr, ast.UnaryOp):
            return self.is_constexpr(expr.operand)
        if isinstance(expr, ast.Call):  # math.log2(BLOCK), triton.next_power_of_2(N), int(X)
            q = self.module.imports.qualname(expr.func) or ""
            plain = q.startswith("math.") or q in TRITON_CALLS
            plain = plain or (isinstance(expr.func, ast.Name) and expr.func.id in ("int", "min"))
            return plain and all(self.is_constexpr(a) for a in expr.args)
        return False

    def of(self, call: ast.Call) -> str:
        values = [*call.args, *(k.value for k in call.keywords)]
        if all(self.is_constexpr(v) for v in values):
            return "constexpr"
        if all(
            self.is_constexpr(v) or (isinstance(v, ast.Name) and v.id in self.scalar)
            for v in values
        ):
            return "scalar"
        return "tensor"


# What a call into a module of the tree that cannot reach Triton is (see _plain_def).
UNPARSED = ast.FunctionDef(
    "(a module without Triton)",
    args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]),
    body=[],
    decorator_list=[],
)


def _plain_def(module: Module, qualname: str) -> ast.FunctionDef | None:
    """The module-level ``def`` of the scanned tree that ``qualname`` names, if any; for a name
    of a module of the tree that never spells triton (not parsed), ``UNPARSED``."""
    project = module.imports.project
    modname, _, name = qualname.rpartition(".")
    if modname in getattr(project, "plain_modules", ()):
        return UNPARSED
    source = project.modules.get(modname) if project is not None else None
    if source is None and module.source is not None and modname == module.source.name:
        source = module.source
    if source is None:
        return None
    for stmt in source.tree.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name == name:
            return stmt
    return None


def _callee(module: Module, call: ast.Call, local_defs: dict[str, ast.FunctionDef]) -> str | None:
    """The callee class of a call in a kernel body (see the module docstring), or None."""
    func = call.func
    q = module.imports.qualname(func) or ""
    if q.startswith("math.") and isinstance(func, ast.Attribute):
        return "math"
    if q in TRITON_CALLS:
        return q
    if isinstance(func, ast.Name) and func.id in _rebound(module):
        return "constexpr_function"  # NAME = triton.constexpr_function(NAME) at module level
    if q.startswith("triton.") or q == "triton":
        # a plain function of Triton's own (core.get_int_dtype): not a builtin, not @jit
        if q.startswith(EXTERN_MODULES):
            return None  # libdevice/math: Python wrappers the compiler dispatches itself
        if _through_tl(module, func):
            # tl.core.get_int_dtype(...): reached through the triton.language module itself,
            # which 3.9.0 compiled in a local run (the measured case spells core.get_int_dtype
            # with `core` a global of its own, which 3.5.1-3.9.0 refuse); not judged
            return None
        return "triton-function" if _census_kind(module, q) == "function" else None
    fn = None
    if isinstance(func, ast.Name):
        fn = local_defs.get(func.id) or (_plain_def(module, q) if q else None)
    elif isinstance(func, ast.Attribute) and q:
        fn = _plain_def(module, q)
    if fn is None:
        return None
    imports = module.imports
    decorators = [d.func if isinstance(d, ast.Call) else d for d in fn.decorator_list]
    names = [imports.qualname(d) or "" for d in decorators]
    if any(n in CONSTEXPR_FUNCTION for n in names):
        return "constexpr_function"
    if any(imports.is_jit(d) for d in fn.decorator_list) or any(
        n.startswith("triton.") for n in names
    ):
        return None  # a @triton.jit helper (or another Triton wrapper): not plain Python
    return "host" if isinstance(func, ast.Name) else "module"


def _through_tl(module: Module, func: ast.expr) -> bool:
    """Whether ``func`` is an attribute chain rooted at a name bound to ``triton.language``."""
    node = func.value if isinstance(func, ast.Attribute) else None
    while isinstance(node, ast.Attribute):
        node = node.value
    if not isinstance(node, ast.Name) or node is func:
        return False
    root = module.imports.qualname(node)
    return (
        root == "triton.language"
        and isinstance(func, ast.Attribute)
        and (isinstance(func.value, ast.Attribute))
    )


def _census_kind(module: Module, qualname: str) -> str | None:
    """What the newest recorded census that has ``qualname`` says it is (``function``: plain
    Python; ``builtin``, ``jit``, ``class``...); None without a census."""
    censuses = getattr(module, "censuses", None) or {}
    for census in reversed(list(censuses.values())):
        api = census.lookup(qualname)
        if api is not None:
            return api.kind
    return None


def _rebound(module: Module) -> dict[str, ast.If | None]:
    """Module-level names bound to ``triton.constexpr_function(...)``, with the module-level
    ``if`` whose branch rebinds them (None: unconditionally, or in a try):
    ``if version.parse(triton.__version__) >= version.parse("3.5.0"): get_int_dtype =
    triton.constexpr_function(get_int_dtype)``."""
    cached = getattr(module, "_constexpr_rebound", None)
    if cached is not None:
        return cached
    out: dict[str, ast.If | None] = {}
    todo: list[tuple[ast.stmt, ast.If | None]] = [(s, None) for s in module.tree.body]
    while todo:
        stmt, branch = todo.pop()
        if isinstance(stmt, ast.If):
            todo.extend((s, stmt) for s in stmt.body + stmt.orelse)
        elif isinstance(stmt, ast.Try):
            todo.extend((s, branch) for s in stmt.body + stmt.orelse)
            todo.extend((s, branch) for h in stmt.handlers for s in h.body)
        elif isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call):
            q = module.imports.qualname(stmt.value.func) or ""
            if q in CONSTEXPR_FUNCTION:
                out.update((t.id, branch) for t in stmt.targets if isinstance(t, ast.Name))
    module._constexpr_rebound = out  # type: ignore[attr-defined]
    return out


def _unguarded(module: Module, call: ast.Call, local_defs: dict[str, ast.FunctionDef]) -> str:
    """The callee class of a rebound name where its rebinding branch does not run: what the
    name was bound to before (``get_int_dtype = core.get_int_dtype``)."""
    rebound = module._constexpr_rebound  # type: ignore[attr-defined]
    module._constexpr_rebound = {}  # type: ignore[attr-defined]
    try:
        return _callee(module, call, local_defs) or "unknown"
    finally:
        module._constexpr_rebound = rebound  # type: ignore[attr-defined]


def match_python_call(rule: Rule, module: Module) -> Iterator[tuple[ast.AST, str]]:
    """Plain Python calls in kernel bodies; the snippet ends with `` [callee:arguments]`` so
    that the finding says which measured case decides it (engine sets ``Finding.cell``)."""
    if not module.kernels:
        return
    local_defs = {s.name: s for s in module.tree.body if isinstance(s, ast.FunctionDef)}
    module.rebound_calls = {}  # type: ignore[attr-defined]
    for fn in module.kernels:
        kinds: Kinds | None = None
        locals_ = {a.arg for a in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]}
        # the body only: decorators (@make_tuner(...)) run on the host
        for node in (n for stmt in fn.body for n in ast.walk(stmt)):
            if not isinstance(node, ast.Call):
                continue
            if isinstance(node.func, ast.Name) and node.func.id in locals_:
                continue  # a function passed in (a constexpr callable, a jit helper)
            callee = _callee(module, node, local_defs)
            if callee is None:
                continue
            kinds = kinds or Kinds(module, fn)
            if callee == "triton-function" and kinds.of(node) != "constexpr":
                continue  # Triton's own functions on values: the census's and other rules' job
            branch = None
            if callee == "constexpr_function" and isinstance(node.func, ast.Name):
                branch = _rebound(module).get(node.func.id)
            if branch is not None:
                # rebound in one branch only: the engine keeps the other binding's kind, the
                # judge picks per release by the branch's test (matrix.scan.guards)
                other = f"{_unguarded(module, node, local_defs)}:{kinds.of(node)}"
                module.rebound_calls[id(node)] = (branch, other)  # type: ignore[attr-defined]
            yield node, f"{ast.unparse(node.func)}(...) [{callee}:{kinds.of(node)}]"


def case_of(rule: Rule, snippet: str) -> str | None:
    """The probe case ``rule.cases`` gives the call kind a snippet of ``match_python_call`` ends
    with (``callee:arguments``, else ``callee:*``); None when no case measures it."""
    if not snippet.endswith("]") or " [" not in snippet:
        return None
    key = snippet.rsplit(" [", 1)[1][:-1]
    callee = key.split(":", 1)[0]
    return rule.cases.get(key) or rule.cases.get(f"{callee}:*")


AUTOTUNE = ("triton.autotune", "triton.runtime.autotune", "triton.runtime.autotuner.autotune")
NAME_LISTS = ("key", "reset_to_zero", "restore_value")


def match_autotune_names(rule: Rule, module: Module) -> Iterator[tuple[ast.AST, str]]:
    """``@triton.autotune(key=[...], reset_to_zero=[...], restore_value=[...])`` naming something
    that is not a parameter of the function it decorates (a literal list of strings only);
    the snippet ends with `` [key:non_argument]`` (the case that decides it)."""
    for fn in module.kernels:
        params = {a.arg for a in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]}
        for deco in fn.decorator_list:
            if not isinstance(deco, ast.Call):
                continue
            if (module.imports.qualname(deco.func) or "") not in AUTOTUNE:
                continue
            for kw in deco.keywords:
                if kw.arg not in NAME_LISTS or not isinstance(kw.value, (ast.List, ast.Tuple)):
                    continue
                names = [e.value for e in kw.value.elts if isinstance(e, ast.Constant)]
                unknown = [n for n in names if isinstance(n, str) and n not in params]
                if unknown:
                    shown = ", ".join(repr(n) for n in unknown)
                    yield kw.value, f"{kw.arg}=[{shown}] of {fn.name} [{kw.arg}:non_argument]"
