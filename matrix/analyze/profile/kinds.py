"""What the kernel reader's parts share: its constants, and the helpers on values (``Val``:
kinds, type variables, per release) and on syntax that need no reader."""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping, Sequence

from matrix.analyze.profile.model import (
    COMPILE_TIME_KINDS,
    INT_DTYPES,
    Kinds,
    Resolver,
    Val,
    _union,
    _union_per,
    base_of,
    cand_of,
    lift,
    per_side,
    sided,
)

PASS_THROUGH = frozenset(
    {"reshape", "view", "trans", "permute", "expand_dims", "broadcast_to", "ravel", "reverse",
     "flip", "advance", "multiple_of", "max_contiguous", "max_constancy", "static_assert",
     "join", "interleave", "sort", "topk", "bitonic_merge", "gather"}
)  # fmt: skip
INT32_RESULTS = frozenset({"arange", "program_id", "num_programs", "argmax", "argmin", "histogram"})
INT_CONTEXT = frozenset({"arange", "zeros", "full", "reshape", "view", "static_range", "cdiv"})
POINTER_ARG = {"load": 0, "store": 0, "make_block_ptr": 0, "make_tensor_descriptor": 0}
TL_SUBMODULES = ("triton.language.core.", "triton.language.standard.")  # tl's own, re-exported
MAX_INLINE = 6  # helper calls followed for their return kinds (a helper calling a helper...)
MAX_SETTLE = 2  # passes over a loop body before its uses are recorded
INT_ELEM = frozenset(INT_DTYPES | {"int1"})
MAX_NARROW = 3  # readings of a kernel while what its code admits narrows its type variables
BUILTIN_RULES = {
    "min": "rule.builtin_min", "max": "rule.builtin_max", "abs": "rule.builtin_abs",
    "len": "rule.builtin_len", "isinstance": "rule.builtin_isinstance",
    "int": "rule.builtin_int", "float": "rule.builtin_float", "print": "rule.builtin_print",
}  # fmt: skip


def _pointer_terms(e: ast.expr) -> set[str]:
    """The names that may be the pointer of a pointer expression: the terms of its top-level
    ``+``/``-`` (``x_ptr + offs``), through subscripts, conditionals and calls' first
    argument (``tl.multiple_of(p, 16)``); never a name inside ``*``, ``%`` or ``//``, an
    offset's (``(pid * B + r) % N`` makes N no pointer)."""
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Add | ast.Sub):
        return _pointer_terms(e.left) | _pointer_terms(e.right)
    if isinstance(e, ast.Name):
        return {e.id}
    if isinstance(e, ast.Subscript):
        return _pointer_terms(e.value)
    if isinstance(e, ast.IfExp):
        return _pointer_terms(e.body) | _pointer_terms(e.orelse)
    if isinstance(e, ast.Call):
        if isinstance(e.func, ast.Attribute) and not e.args:  # p.to(...), p.cast(...)
            return _pointer_terms(e.func.value)
        return _pointer_terms(e.args[0]) if e.args else set()
    return set()


def _of_type(e: ast.expr) -> bool:
    """Whether ``e`` reads a value's compile-time type: ``x.type`` or something reached from
    it (``smem.type.layout``)."""
    while isinstance(e, ast.Attribute):
        if e.attr == "type":
            return True
        e = e.value
    return False


def _binop_with(promote: Callable[[Kinds, Kinds], Kinds], a: Val, b: Val) -> Val:
    """The result of a binary op of ``a`` and ``b`` (``promote`` their kinds), with the type
    variables of both."""
    per = lift(promote, [a, b])
    if per is not None:  # paired per dtype of their one variable: exactly what occurs
        return Val(frozenset().union(*(ks for _, ks in per)), vars=a.vars | b.vars, per=per)
    return Val(promote(a.kinds, b.kinds), vars=a.vars | b.vars)


def _dtype_names(v: Val) -> Val:
    """The dtypes a dtype object names, as a value's kinds."""
    return Val(v.dtype, vars=v.vars, per=v.per)  # type: ignore[arg-type]


def _as_dtype(v: Val) -> Val:
    """A dtype object naming ``v``'s kinds."""
    return Val(dtype=v.kinds, vars=v.vars, per=v.per)


def _float_literal(e: ast.expr) -> bool:
    """A float the source spells: ``0.0``, ``-1.5``, ``float("-inf")``."""
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub | ast.UAdd):
        return _float_literal(e.operand)
    if isinstance(e, ast.Constant):
        return isinstance(e.value, float)
    return (
        isinstance(e, ast.Call)
        and isinstance(e.func, ast.Name)
        and e.func.id == "float"
        and len(e.args) == 1
        and isinstance(e.args[0], ast.Constant)
    )


def _without(node: ast.Call, keyword: str) -> ast.Call:
    """``node`` without one keyword argument (same position)."""
    out = ast.Call(node.func, node.args, [k for k in node.keywords if k.arg != keyword])
    return ast.copy_location(out, node)


def _elem(v: Val) -> Val:
    """The values ``v`` holds or names: a pointer's elements, a dtype's (kinds, variables)."""
    return per_side(lambda x: Val(x.kinds, vars=x.vars, per=x.per), v)


def _merge(a: Mapping[str, Val], b: Mapping[str, Val]) -> dict[str, Val]:
    """The values after an ``if``: each name as either branch left it (both kinds where they
    differ; a constexpr condition compiles one branch, which the source cannot tell)."""
    out = dict(b)
    for name, va in a.items():
        vb = b.get(name)
        if vb is None or vb == va:
            out[name] = va
        elif va.cand is not None or vb.cand is not None:
            out[name] = sided(
                _merge({name: base_of(va)}, {name: base_of(vb)})[name],
                _merge({name: cand_of(va)}, {name: cand_of(vb)})[name],
            )
        elif va.pointer and vb.pointer:
            kinds = None if va.kinds is None or vb.kinds is None else va.kinds | vb.kinds
            per = _union_per([va, vb])
            out[name] = Val(kinds, pointer=True, vars=va.vars | vb.vars, per=per)
        else:
            out[name] = _union([va, vb])
    return out


def _gives_value(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether ``fn`` has a ``return`` with a value (nested functions' returns are theirs);
    ``return None`` gives none (a stand-in for a feature the release lacks: fla's
    ``make_tensor_descriptor`` where TMA is missing)."""
    todo: list[ast.AST] = list(fn.body)
    while todo:
        node = todo.pop()
        if (
            isinstance(node, ast.Return)
            and node.value is not None
            and not (isinstance(node.value, ast.Constant) and node.value.value is None)
        ):
            return True
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(node))
    return False


Shape = tuple[set[str], set[str], set[str]]  # body_shape: pointers, integers, dtypes
# the @triton.jit definitions in other files that a call's function names (with the resolver
# of each one's file), for body_shape to follow a pointer into a helper imported from there
DefsElsewhere = Callable[
    [ast.expr, Resolver], Sequence[tuple[ast.FunctionDef | ast.AsyncFunctionDef, Resolver]]
]


def compile_time(v: Val) -> Val:
    """What ``X: tl.constexpr = expr`` binds: a value fixed when the kernel is compiled, never a
    tensor (triton_kernels' ``N: tl.constexpr = tl.extra.cuda.num_threads()``, then
    ``tl.static_assert(BS % N == 0)``: no fp8 remainder). A dtype, a tuple or a scalar kind
    stays as read; anything else (unread, or read as a tensor) is a Python int or float."""
    if v.dtype or v.items is not None or (v.kinds is not None and v.kinds <= COMPILE_TIME_KINDS):
        return v
    return Val(frozenset({"cx_int", "cx_float"}))


def _through_helpers(
    node: ast.Call,
    fn: ast.FunctionDef | ast.AsyncFunctionDef,
    resolver: Resolver,
    helpers: Mapping[str, ast.FunctionDef | ast.AsyncFunctionDef] | None,
    depth: int,
    elsewhere: DefsElsewhere | None,
    memo: dict[int, Shape] | None,
) -> tuple[set[str], set[str]]:
    """What ``body_shape`` learns from a call of a jit helper (of ``fn``'s file, else
    ``elsewhere``): the names of the arguments it passes to the helper's pointer parameters,
    and the names passed where it takes a dtype it casts to (thunder's BUFFER_DTYPE)."""
    callee = helpers.get(node.func.id) if helpers and isinstance(node.func, ast.Name) else None
    callees = [(callee, resolver, helpers)] if callee is not None else [
        (f, r, None) for f, r in (elsewhere(node.func, resolver) if elsewhere else ())
    ]  # fmt: skip
    names: set[str] = set()
    dtypes: set[str] = set()
    for callee, r, hs in callees:
        if callee is fn:
            continue
        got = memo.get(id(callee)) if memo is not None else None
        if got is None:
            got = body_shape(callee, r, hs, depth + 1, elsewhere, memo)
            if memo is not None:
                memo[id(callee)] = got
        held, _, held_dtypes = got
        params = [a.arg for a in (*callee.args.posonlyargs, *callee.args.args)]
        passed = [*zip(params, node.args, strict=False)]
        passed += [(k.arg, k.value) for k in node.keywords if k.arg]
        for param, arg in passed:
            if param in held and not isinstance(arg, ast.Starred):
                names |= _pointer_terms(arg)
            if param in held_dtypes and isinstance(arg, ast.Name):
                dtypes.add(arg.id)
    return names, dtypes


def body_shape(
    fn: ast.FunctionDef | ast.AsyncFunctionDef,
    resolver: Resolver,
    helpers: Mapping[str, ast.FunctionDef | ast.AsyncFunctionDef] | None = None,
    depth: int = 0,
    elsewhere: DefsElsewhere | None = None,
    memo: dict[int, Shape] | None = None,
) -> Shape:
    """What ``fn``'s body says of its names, in one walk: those that reach the pointer
    argument of a load/store/atomic/descriptor as its pointer (or a pointer parameter of a
    jit helper it calls, of its own file's ``helpers`` or imported from another (``elsewhere``):
    FlagGems attention.py builds ``K + offsets`` and its helper loads it; cute-kernels' GRU
    passes ``y_ptr + indices`` to the RNN file's ``_load_previous_output``), and the
    integers: every other name of those expressions (offsets), and names inside masks,
    shapes, ranges and aranges (a float cannot index). ``memo``: each helper's shape by id,
    read once."""
    names: set[str] = set()
    every: set[str] = set()
    ints: set[str] = set()
    dtypes: set[str] = set()  # names used as a dtype: x.to(D), dtype=D, tl.full(s, v, D)
    assigns: list[tuple[set[str], set[str], set[str]]] = []
    for node in ast.walk(fn):
        if (
            isinstance(node, ast.Attribute)
            and node.attr == "element_ty"
            and isinstance(node.value, ast.Attribute)
            and node.value.attr in ("dtype", "type")
            and isinstance(node.value.value, ast.Name)
        ):  # `y.dtype.element_ty`: only a pointer has an element type
            names.add(node.value.value.id)
            continue
        if isinstance(node, ast.Assign):
            targets = {t.id for t in node.targets if isinstance(t, ast.Name)}
            if targets:
                all_names = {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}
                assigns.append((targets, _pointer_terms(node.value), all_names))
            continue
        if not isinstance(node, ast.Call):
            continue
        if depth < MAX_INLINE:
            into, typed = _through_helpers(node, fn, resolver, helpers, depth, elsewhere, memo)
            names |= into
            dtypes |= typed
        for k in node.keywords:
            if k.arg in ("dtype", "out_dtype") and isinstance(k.value, ast.Name):
                dtypes.add(k.value.id)
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("to", "cast"):
            spot = node.args[1] if node.func.attr == "cast" and len(node.args) > 1 else (
                node.args[0] if node.args else None
            )  # fmt: skip
            if isinstance(spot, ast.Name):
                dtypes.add(spot.id)
        tl = resolver.tl_name(node.func)
        at = {"zeros": 1, "full": 2}.get(tl or "")
        spot_at = node.args[at] if at is not None and len(node.args) > at else None
        if isinstance(spot_at, ast.Name):
            dtypes.add(spot_at.id)
        if tl is None and isinstance(node.func, ast.Attribute) and node.func.attr in (
            "load", "store"
        ):  # fmt: skip
            tl = node.func.attr
        exprs: list[ast.expr] = []
        if tl in POINTER_ARG or (tl or "").startswith("atomic_"):
            first = (
                node.args[0]
                if node.args
                else next((k.value for k in node.keywords if k.arg == "base"), None)
            )
            if first is not None:
                names |= _pointer_terms(first)
                every |= {n.id for n in ast.walk(first) if isinstance(n, ast.Name)}
            if tl in ("load", "store"):
                exprs = [k.value for k in node.keywords if k.arg == "mask"]
        elif tl in INT_CONTEXT or (isinstance(node.func, ast.Name) and node.func.id == "range"):
            exprs = list(node.args)
        for e in exprs:
            ints |= {n.id for n in ast.walk(e) if isinstance(n, ast.Name)}
    # names assigned from pointer expressions: follow assignments back to parameters
    changed = True
    while changed:
        changed = False
        for targets, terms, all_names in assigns:
            if targets & names and not terms <= names:
                names |= terms
                changed = True
            if targets & every and not all_names <= every:
                every |= all_names
                changed = True
            if (
                targets & dtypes
                and len(all_names) == 1 == len(terms & all_names)
                and not (all_names <= dtypes)
            ):
                dtypes |= all_names  # `buffer_dtype = BUFFER_DTYPE`, then x.to(buffer_dtype)
                changed = True
    return names, ints | (every - names) | names, dtypes
