"""Matchers that follow values in kernels: integer true division, a dot's accumulator."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from matrix.scan.imports import Imports, Module
from matrix.scan.matchers import _call_filters
from matrix.scan.rules import ArgSpec, Rule

# Calls whose result is an integer index (program ids, ranges, integer ceil-division).
INT_CALLS = frozenset({"program_id", "num_programs", "arange", "cdiv"})
# Calls whose result is a float/int as their arguments are: a float stays a float through them.
PASS_THROUGH_CALLS = frozenset(
    {"minimum", "maximum", "where", "multiple_of", "max_contiguous", "abs", "floor", "ceil"}
)
LOOP_CALLS = frozenset({"range", "static_range"})
# Operations a float operand makes fail (or makes a pointer offset a float).
INT_ONLY_OPS = (ast.LShift, ast.RShift, ast.BitAnd, ast.BitOr, ast.BitXor)
# Loads, stores and atomics: the first argument is a pointer.
POINTER_CALLS = frozenset({"load", "store", "make_block_ptr"}) | {
    f"atomic_{op}" for op in ("add", "max", "min", "and", "or", "xor", "xchg", "cas")
}


def _is_float_expr(expr: ast.expr, imports: Imports) -> bool:
    """An operand that makes ``/`` deliberate float maths: a float literal or a float cast."""
    if isinstance(expr, ast.Constant) and isinstance(expr.value, float):
        return True
    if (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Attribute)
        and expr.func.attr == "to"
        and expr.args
    ):
        q = imports.qualname(expr.args[0]) or ""
        return q.rsplit(".", 1)[-1] in {"float16", "bfloat16", "float32", "float64"}
    return False


class DivisionFlow:
    """Where the result of a ``/`` goes, inside one kernel, in source order.

    ``/`` is true division: its result is a float. That is a hazard only where an integer is
    needed: a pointer offset (``ptr + pid / 2``), a subscript, a ``range``/``tl.arange`` bound,
    a shift or bitwise operation. Deliberate float maths (``x / n`` into ``tl.exp``, a store,
    a mean) is left alone; a cast (``.to(tl.int32)``) or any other call ends the flow.
    """

    def __init__(self, fn: ast.FunctionDef | ast.AsyncFunctionDef, imports: Imports) -> None:
        self.imports = imports
        self.float_from: dict[str, ast.AST] = {}  # name -> the `/` it came from
        self.pointers: set[str] = set()
        params = [a.arg for a in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]]
        for node in ast.walk(fn):
            if (
                isinstance(node, ast.Call)
                and node.args
                and (imports.tl_name(node.func) or "") in POINTER_CALLS
            ):
                self.pointers.update(_root_names(node.args[0]))
        self.pointers.update(p for p in params if "ptr" in p.lower())
        self.pointers &= set(params) | self.pointers
        self.hits: dict[int, ast.AST] = {}

    def source(self, expr: ast.expr | None) -> ast.AST | None:
        """The `/` whose float result ``expr`` carries, if any."""
        if expr is None:
            return None
        if isinstance(expr, ast.BinOp):
            if isinstance(expr.op, ast.Div):
                if _is_float_expr(expr.left, self.imports) or _is_float_expr(
                    expr.right, self.imports
                ):
                    return None
                return expr
            return self.source(expr.left) or self.source(expr.right)
        if isinstance(expr, ast.Name):
            return self.float_from.get(expr.id)
        if isinstance(expr, ast.UnaryOp):
            return self.source(expr.operand)
        if isinstance(expr, ast.IfExp):
            return self.source(expr.body) or self.source(expr.orelse)
        if isinstance(expr, ast.Subscript):
            return self.source(expr.value)
        if isinstance(expr, ast.Call) and self.imports.tl_name(expr.func) in PASS_THROUGH_CALLS:
            for a in expr.args:
                found = self.source(a)
                if found is not None:
                    return found
        return None

    def is_pointer(self, expr: ast.expr) -> bool:
        if isinstance(expr, ast.Name):
            return expr.id in self.pointers
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Add, ast.Sub)):
            return self.is_pointer(expr.left) or self.is_pointer(expr.right)
        if isinstance(expr, ast.Subscript):
            return self.is_pointer(expr.value)
        return False

    def sink(self, expr: ast.expr | None) -> None:
        found = self.source(expr)
        if found is not None:
            self.hits.setdefault(id(found), found)

    def check(self, node: ast.AST) -> None:
        """Record a hit where ``node`` uses a float from `/` as an integer."""
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, (ast.Add, ast.Sub)):
                if self.is_pointer(node.left):
                    self.sink(node.right)
                elif self.is_pointer(node.right):
                    self.sink(node.left)
            elif isinstance(node.op, INT_ONLY_OPS):
                self.sink(node.left)
                self.sink(node.right)
        elif isinstance(node, ast.Subscript):
            self.sink(node.slice)
        elif isinstance(node, ast.AugAssign) and isinstance(node.op, (ast.Add, ast.Sub)):
            if self.is_pointer(node.target):
                self.sink(node.value)
        elif isinstance(node, ast.Call):
            builtin_range = isinstance(node.func, ast.Name) and node.func.id == "range"
            name = self.imports.tl_name(node.func)
            if builtin_range or name in LOOP_CALLS or name == "arange":
                for a in node.args:
                    self.sink(a)

    def assign(self, target: ast.expr, value: ast.expr | None) -> None:
        if not isinstance(target, ast.Name):
            return
        found = self.source(value)
        if found is None:
            self.float_from.pop(target.id, None)
        else:
            self.float_from[target.id] = found
        if value is not None and self.is_pointer(value):
            self.pointers.add(target.id)

    def walk(self, node: ast.AST) -> None:
        if isinstance(node, ast.For):
            self.walk(node.iter)
            for child in [*node.body, *node.orelse]:
                self.walk(child)
            return
        for sub in ast.iter_child_nodes(node):
            self.walk(sub)
        self.check(node)
        if isinstance(node, ast.Assign):
            for t in node.targets:
                self.assign(t, node.value)
        elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
            self.assign(node.target, node.value)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            whole = ast.BinOp(left=node.target, op=node.op, right=node.value)
            self.assign(node.target, whole)


def _root_names(expr: ast.expr) -> set[str]:
    """Names a pointer expression is built on (``a_ptr + offs`` -> {a_ptr, offs})."""
    if isinstance(expr, ast.Name):
        return {expr.id}
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Add, ast.Sub)):
        left = _root_names(expr.left)
        return left if left else _root_names(expr.right)
    if isinstance(expr, ast.Subscript):
        return _root_names(expr.value)
    return set()


def match_int_true_division(rule: Rule, module: Module) -> Iterator[tuple[ast.AST, str]]:
    """``/`` whose float result is used where an integer is needed, inside each kernel."""
    for fn in module.kernels:
        if not any(isinstance(n, ast.Div) for n in ast.walk(fn)):
            continue
        flow = DivisionFlow(fn, module.imports)
        for stmt in fn.body:
            flow.walk(stmt)
        for node in flow.hits.values():
            yield node, ast.unparse(node)


F32 = "float32"
F32_MAKERS = frozenset({"zeros", "full", "zeros_like", "full_like", "empty"})


# Accumulator dtypes whose tl.dot result dtype is the same on every release (the
# dot_acc_out_dtype probe concerns a float16 accumulator).
FIXED_ACC_DTYPES = frozenset({F32, "int32"})


class Float32Names:
    """Which names of a kernel provably hold float32 values, in source order: built with
    ``dtype=tl.float32``, cast with ``.to(tl.float32)``, a ``tl.dot`` into a float32
    accumulator (its result is float32), or arithmetic on float32 values."""

    def __init__(self, imports: Imports) -> None:
        self.imports = imports
        self.names: set[str] = set()
        self.ever: set[str] = set()  # names float32 at some point (what a call may pass)
        self.dtypes: set[str] = set()  # names bound to a dtype whose dot result is fixed

    def _is_f32_dtype(self, expr: ast.expr | None) -> bool:
        """A dtype whose accumulator gives one result dtype on every release: float32, or
        int32 (an integer dot's), or a choice between them (``tl.float32 if c else
        tl.int32``), or a name bound to one."""
        if expr is None:
            return False
        if isinstance(expr, ast.IfExp):
            return self._is_f32_dtype(expr.body) and self._is_f32_dtype(expr.orelse)
        if isinstance(expr, ast.Name) and expr.id in self.dtypes:
            return True
        q = self.imports.qualname(expr) or ""
        if q.startswith("triton.") and q.rsplit(".", 1)[-1] in FIXED_ACC_DTYPES:
            return True
        return isinstance(expr, ast.Constant) and expr.value in (F32, "fp32")

    def is_f32(self, expr: ast.expr | None) -> bool:
        if isinstance(expr, ast.Name):
            return expr.id in self.names
        if isinstance(expr, ast.Call):
            func = expr.func
            method = isinstance(func, ast.Attribute) and self.imports.qualname(func) is None
            if method and isinstance(func, ast.Attribute) and func.attr == "to" and expr.args:
                return self._is_f32_dtype(expr.args[0])
            name = self.imports.tl_name(func)
            dtype = next((k.value for k in expr.keywords if k.arg == "dtype"), None)
            if name in F32_MAKERS:
                return self._is_f32_dtype(dtype)
            if name == "dot":
                acc = ArgSpec("acc", 2).value(expr)
                out = ArgSpec("out_dtype", 6).value(expr)
                return self.is_f32(acc) or self._is_f32_dtype(out) or (acc is None and not out)
            return False
        if isinstance(expr, ast.BinOp):
            return self.is_f32(expr.left) or self.is_f32(expr.right)
        if isinstance(expr, ast.UnaryOp):
            return self.is_f32(expr.operand)
        return False

    def assign(self, target: ast.expr, value: ast.expr | None) -> None:
        if isinstance(target, ast.Name):
            if self._is_f32_dtype(value):
                self.dtypes.add(target.id)
            else:
                self.dtypes.discard(target.id)
            if self.is_f32(value):
                self.names.add(target.id)
                self.ever.add(target.id)
            else:
                self.names.discard(target.id)


def _dot_acc_visit(
    node: ast.AST, rule: Rule, module: Module, f32: Float32Names, pending: list[ast.Call]
) -> None:
    """Children first (a statement's calls see the names as they were before it assigns)."""
    for child in ast.iter_child_nodes(node):
        _dot_acc_visit(child, rule, module, f32, pending)
    is_dot = isinstance(node, ast.Call) and module.imports.tl_name(node.func) in rule.calls
    if (
        is_dot
        and _call_filters(rule, node)  # type: ignore[arg-type]
        and not f32.is_f32(ArgSpec("acc", 2).value(node))  # type: ignore[arg-type]
    ):
        pending.append(node)  # type: ignore[arg-type]
    if isinstance(node, ast.Assign):
        for t in node.targets:
            f32.assign(t, node.value)
    elif isinstance(node, ast.AnnAssign) and node.value is not None:
        f32.assign(node.target, node.value)
    elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
        keep = node.target.id in f32.names  # `acc += x` keeps a float32 accumulator float32
        f32.assign(node.target, ast.BinOp(node.target, node.op, node.value))
        if keep:
            f32.names.add(node.target.id)


def _float32_params(rule: Rule, module: Module) -> dict[str, set[str]]:
    """Parameters of the file's jit helpers that every call from the file's kernels fills with
    a float32 value (``_attn_fwd_inner(acc, ...)`` called with ``acc = tl.zeros(...,
    dtype=tl.float32)``): ``{helper: {param}}``. Calls through ``*args``/``**kwargs`` or from
    outside the file leave a parameter unknown."""
    by_name = {fn.name: fn for fn in module.kernels}
    seen: dict[str, dict[str, list[bool]]] = {}
    for fn in module.kernels:
        f32 = Float32Names(module.imports)
        calls = [
            node
            for node in ast.walk(fn)
            if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in by_name
            and node.func.id != fn.name
        ]
        for stmt in fn.body:
            _dot_acc_visit(stmt, rule, module, f32, [])
        for call in calls:
            callee = by_name[call.func.id]  # type: ignore[attr-defined]
            params = [a.arg for a in [*callee.args.posonlyargs, *callee.args.args]]
            if any(isinstance(a, ast.Starred) for a in call.args):
                continue
            given = dict(zip(params, call.args, strict=False))
            given.update({k.arg: k.value for k in call.keywords if k.arg})
            for name, value in given.items():
                ok = isinstance(value, ast.Name) and value.id in f32.ever
                seen.setdefault(callee.name, {}).setdefault(name, []).append(
                    ok or f32.is_f32(value)
                )
    return {fn: {p for p, oks in ps.items() if oks and all(oks)} for fn, ps in seen.items()}


def match_dot_acc_dtype(rule: Rule, module: Module) -> Iterator[tuple[ast.AST, str]]:
    """``tl.dot`` calls fitting the rule's argument filters whose accumulator is not provably
    float32 (a float32 accumulator gives the same result dtype on every release)."""
    seeded = _float32_params(rule, module) if len(module.kernels) > 1 else {}
    for fn in module.kernels:
        f32 = Float32Names(module.imports)
        f32.names.update(seeded.get(fn.name, set()))
        pending: list[ast.Call] = []
        for stmt in fn.body:
            _dot_acc_visit(stmt, rule, module, f32, pending)
        for node in pending:
            yield node, f"{ast.unparse(node.func)}(...)"
