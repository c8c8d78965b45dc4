"""Reading a parsed file: its ``@triton.jit`` functions, its literal and constexpr globals, and
the uses of every kernel (``profile_module``), each read once per launch and declared dtype,
and again while what its code admits narrows its type variables."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import product
from typing import TypeGuard

from matrix.analyze.profile.constexprs import constexpr_cases
from matrix.analyze.profile.context import Context, HelperLookup
from matrix.analyze.profile.declaration import Declaration
from matrix.analyze.profile.dtype_fns import is_plain
from matrix.analyze.profile.kinds import INT_ELEM, MAX_NARROW
from matrix.analyze.profile.model import (
    ELEM_DTYPES,
    Launch,
    Profile,
    Resolver,
    UsageMap,
    Use,
    load_map,
    type_var,
)
from matrix.analyze.profile.reader import KernelReader


def module_globals(tree: ast.Module, resolver: Resolver | None = None) -> dict[str, ast.expr]:
    """``{name: value}`` of a module's literal and constexpr globals; with ``resolver``, also
    the literal constants it imports by name from a scanned module (``from kernels.config
    import GROUP as _GROUP``, then ``G = tl.constexpr(_GROUP)``: an int)."""
    out: dict[str, ast.expr] = dict(_imported_constants(tree, resolver)) if resolver else {}
    for s in tree.body:
        if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name):
            if isinstance(s.value, ast.Constant) or _constexpr_call(s.value):
                out[s.targets[0].id] = s.value
        elif isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name) and s.value:
            out[s.target.id] = s.value
    return out


def _constexpr_call(e: ast.expr | None) -> TypeGuard[ast.Call]:
    """``tl.constexpr(...)`` (any spelling of it): a global a kernel may read."""
    return isinstance(e, ast.Call) and "constexpr" in ast.unparse(e.func)


def _imported_constants(tree: ast.Module, resolver: Resolver) -> Iterator[tuple[str, ast.Constant]]:
    """The literal constants ``tree`` imports by name (bound there to a literal, or to
    ``tl.constexpr(literal)``: its literal), through the scanner's own resolution
    (``resolver.qualname``) and the tree it parsed (``resolver.project``); a name it cannot
    resolve to a literal of a scanned module gives nothing (it stays unknown: fail closed)."""
    modules = getattr(getattr(resolver, "project", None), "modules", {})
    for s in tree.body:
        if not isinstance(s, ast.ImportFrom):
            continue
        for alias in s.names:
            local = alias.asname or alias.name
            qual = resolver.qualname(ast.Name(id=local, ctx=ast.Load()))
            mod, _, name = (qual or "").rpartition(".")
            src = modules.get(mod)
            value = module_globals(src.tree).get(name) if src is not None else None
            if _constexpr_call(value) and len(value.args) == 1 and not value.keywords:
                # `MXFP_BLOCK_SIZE = tl.constexpr(32)` there: the literal it wraps
                value = value.args[0]
            if isinstance(value, ast.Constant):
                yield local, value


def module_level(body: Sequence[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements a module runs at import, through its ``if``/``try``/``with``/loop
    blocks (each branch: which one runs is decided by the machine that imports it), not the
    bodies of functions or classes."""
    for s in body:
        yield s
        if isinstance(s, ast.If | ast.For | ast.While | ast.With | ast.AsyncWith):
            yield from module_level([*s.body, *getattr(s, "orelse", [])])
        elif isinstance(s, ast.Try | ast.TryStar):
            yield from module_level(
                [*s.body, *(x for h in s.handlers for x in h.body), *s.orelse, *s.finalbody]
            )


def plain_functions(
    tree: ast.Module, resolver: Resolver
) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """The module-level functions of ``tree`` a kernel may call at compile time: neither
    ``@triton.jit`` nor decorated by anything but ``constexpr``/``constexpr_function``
    (dtype_fns.py)."""
    return [
        s
        for s in module_level(tree.body)
        if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef) and is_plain(s, resolver)
    ]


def module_aliases(tree: ast.Module, resolver: Resolver) -> dict[str, list[tuple[str, int]]]:
    """``{name: [(qualified name, line), ...]}``: every module-level ``name = <dotted
    name>`` of ``tree``, in any branch, with the line that binds it (``if IS_NVIDIA: softplus
    = softplus_nv else: softplus = softplus_triton``: the name may hold either, so a call of
    it is a call of each; a binding under a feature guard holds only where the guard does)."""
    out: dict[str, list[tuple[str, int]]] = {}
    for s in module_level(tree.body):
        if (
            isinstance(s, ast.Assign)
            and len(s.targets) == 1
            and isinstance(s.targets[0], ast.Name)
            and isinstance(s.value, ast.Name | ast.Attribute)
        ):
            q = resolver.qualname(s.value)
            if q:
                out.setdefault(s.targets[0].id, []).append((q, s.lineno))
    return out


def jit_functions(
    tree: ast.AST, resolver: Resolver
) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """Every ``@triton.jit`` function of ``tree`` (nested ones, in test functions, too), and
    every function under a wrapper of it (``resolver.is_jit``; a local one: ``_local_jits``)."""
    statements = _statements(tree)
    local = _local_jits(statements, resolver)
    return [
        n
        for n in statements
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
        and any(
            resolver.is_jit(d) or (isinstance(d, ast.Name) and d.id in local)
            for d in n.decorator_list
        )
    ]


def _local_jits(statements: Sequence[ast.stmt], resolver: Resolver) -> set[str]:
    """The names of functions defined inside a function whose body names ``triton.jit``: a
    wrapper local to a kernel factory (triton-viz's ``def wrap(fn): fn = triton.jit(fn)``,
    then ``@wrap`` on the kernels beside it)."""
    out = set()
    for outer in statements:
        if not isinstance(outer, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for inner in outer.body:
            if isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef) and any(
                isinstance(n, ast.Name | ast.Attribute)
                and (n.id if isinstance(n, ast.Name) else n.attr) == "jit"
                and (resolver.qualname(n) or "").startswith("triton.")
                for stmt in inner.body
                for n in ast.walk(stmt)
            ):
                out.add(inner.name)
    return out


def _statements(tree: ast.AST) -> list[ast.stmt]:
    """Every statement of ``tree``, nested ones too, in ``ast.walk``'s order: a function
    definition is a statement, so finding one needs no walk through expressions."""
    out: list[ast.stmt] = []
    queue: list[ast.AST] = [tree]
    i = 0
    while i < len(queue):
        node = queue[i]
        i += 1
        if isinstance(node, ast.stmt):
            out.append(node)
        for name in ("body", "orelse", "finalbody", "handlers", "cases"):
            block = getattr(node, name, None)
            if isinstance(block, list):
                queue.extend(block)
    return out


def launch_key(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """The key of one definition's launches in ``profile_module``'s ``launches``: a file may
    define one kernel name twice (two tests' ``fn``), each with its own launches; the bare
    name (a captured launch's) stands for every definition of it."""
    return f"{fn.name}@{fn.lineno}"


def profile_module(
    tree: ast.Module,
    resolver: Resolver,
    path: str,
    source: str = "",
    launches: Mapping[str, Sequence[Launch]] | None = None,
    umap: UsageMap | None = None,
    only: Iterable[str] | None = None,
    kernels: Sequence[ast.FunctionDef | ast.AsyncFunctionDef] | None = None,
    lookup: HelperLookup | None = None,
    ctx: Context | None = None,
    launched: Iterable[str] = (),
) -> Profile:
    """The uses of every ``@triton.jit`` function in one parsed file. A kernel with captured
    launches (``launches[name]``) is read once per launch, typed by it; one without is read
    from its source alone. ``only`` restricts to those kernel names. ``ctx`` is shared by every
    file of one tree (helpers typed per call site; ``ctx.uses`` settles them once all are
    read); without one, this file is its own tree."""
    umap = umap or load_map()
    launches = launches or {}
    lines = source.splitlines()
    fns = list(kernels) if kernels is not None else jit_functions(tree, resolver)
    names = frozenset(f.name for f in fns)
    wanted = set(only) if only is not None else None
    out = Profile(sources=[path])
    glob = module_globals(tree, resolver)
    helpers = {f.name: f for f in fns}
    shared = ctx or Context()
    host_launched = set(launched)  # launched from host code: its own reading is a kernel's
    for fn in fns:
        if wanted is not None and fn.name not in wanted:
            continue
        out.kernels[fn.name] = f"{path}:{fn.lineno}"
        typed: Sequence[Launch | None] = (
            launches.get(launch_key(fn)) or launches.get(fn.name) or [None]
        )
        for launch in typed:
            cases = constexpr_cases(fn, glob, set(launch.constexprs) if launch else set(),
                                    launch.values if launch else None)  # fmt: skip
            seen: set[Use] = set()
            for variant, fixed in product(range(_variants(fn, shared.declaration)), cases):
                alone = launch is None and fn.name not in host_launched
                shared.root = ("root", id(fn), alone, len(shared.edges))
                shared.edges.setdefault(shared.root, set())
                uses = _read(fn, resolver, umap, path, glob, launch, names, lines, helpers,
                             lookup, shared, variant, fixed)  # fmt: skip
                # one use per distinct fact: two readings that differ only elsewhere in the
                # kernel (another constexpr's branch) see the same op the same way
                uses = [u for u in uses if u not in seen]
                seen.update(uses)
                if launch is None and fn.name not in host_launched:
                    # its own reading, parameters guessed: replaced by its call sites' if any
                    shared.alone.append((id(fn), uses))
                out.uses += uses
    if ctx is None:
        out.uses = shared.uses(out.uses)
    return out


def _variants(fn: ast.FunctionDef | ast.AsyncFunctionDef, declaration: Declaration) -> int:
    """How many readings the declaration asks for: one per declared dtype of a parameter
    (the i-th reading gives each parameter its i-th declared dtype)."""
    params = [a.arg for a in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]]
    if not declaration.dtypes:
        return 1
    return max([1] + [len(declaration.dtypes_of(fn.name, p) or ()) for p in params])


def _read(
    fn: ast.FunctionDef | ast.AsyncFunctionDef,
    resolver: Resolver,
    umap: UsageMap,
    path: str,
    glob: Mapping[str, ast.expr],
    launch: Launch | None,
    names: frozenset[str],
    lines: Sequence[str],
    helpers: Mapping[str, ast.FunctionDef | ast.AsyncFunctionDef],
    lookup: HelperLookup | None,
    ctx: Context,
    variant: int,
    fixed: Mapping[str, object] | None = None,
) -> list[Use]:
    """One reading of a kernel (with ``fixed``: for those constexpr values); read again when
    the code shows that a type variable is an integer (a loaded value used as a pointer
    offset), its uses then typed as such; and once per 16-bit format (``[open_types]``
    one_per_launch) where its open variables may take either: one launch takes one of them."""
    narrow: dict[str, frozenset[str]] = {}
    for param, admitted in (launch.domains if launch else {}).items():
        # the dtypes the host admits (``assert x.dtype in ...``, a table's keys) for the
        # variable named by ``param``: a pointer's element type or the dtype it holds
        for dtype in (False, True):
            narrow[type_var(fn.name, param, dtype=dtype)] = admitted

    def read(half: str | None) -> tuple[list[Use], bool]:
        return _narrowed(fn, resolver, umap, path, glob, launch, names, lines, helpers, lookup,
                         ctx, variant, fixed, narrow, half)  # fmt: skip

    halves = _halves(umap, launch)
    reached = set(ctx.edges.get(ctx.root, ()))
    uses, mixed = read(halves[0] if len(halves) == 1 else None)
    if not mixed:  # no op meets two variables that may each take either format
        return uses
    # read once per format; what the reading with either reached is not reached
    ctx.edges[ctx.root] = reached
    uses, seen = [], set()
    for half in halves:
        more = read(half)[0]
        uses += [u for u in more if u not in seen]
        seen.update(more)
    return uses


def _halves(umap: UsageMap, launch: Launch | None) -> tuple[str | None, ...]:
    """The 16-bit formats to read a kernel with, one at a time: the one its launch passes to
    some pointer (``*bf16``: its open variables take that one), else each of them (one
    reading with either first, when they meet in no op)."""
    halves = umap.open_types.one_per_launch
    sig = {str(t).lstrip("*") for t in (launch.signature.values() if launch else ())}
    given = [h for h in halves if {k for k, v in umap.dtypes.items() if v == h} & sig]
    return tuple(given) if len(given) == 1 else halves


def _narrowed(
    fn: ast.FunctionDef | ast.AsyncFunctionDef,
    resolver: Resolver,
    umap: UsageMap,
    path: str,
    glob: Mapping[str, ast.expr],
    launch: Launch | None,
    names: frozenset[str],
    lines: Sequence[str],
    helpers: Mapping[str, ast.FunctionDef | ast.AsyncFunctionDef],
    lookup: HelperLookup | None,
    ctx: Context,
    variant: int,
    fixed: Mapping[str, object] | None,
    narrow: dict[str, frozenset[str]],
    half: str | None,
) -> tuple[list[Use], bool]:
    """A reading with ``half`` the 16-bit format, read again while what its code admits
    narrows ``narrow`` (updated in place: what one format's reading rules out holds for the
    other's); its uses, and whether (reading with either format) some op of it met two open
    variables that may each take either (``KernelReader.mixed``)."""
    for _ in range(MAX_NARROW):
        keys = set(ctx.memo)
        reader = KernelReader(fn, resolver, umap, path, glob, launch, names, lines, helpers, 0,
                              lookup, ctx=ctx, variant=variant, narrow=narrow,
                              fixed=fixed, half=half)  # fmt: skip
        uses = reader.run()
        more: dict[str, frozenset[str]] = {}
        for var in reader.int_vars | set(reader.excluded):
            now = narrow.get(var, ELEM_DTYPES)
            new = now - frozenset(reader.excluded.get(var, ()))
            if var in reader.int_vars:
                new &= INT_ELEM
            if new and new != now:  # never to nothing: a contradiction stays open
                more[var] = new
        if not more:
            return uses, reader.mixed
        narrow.update(more)
        for key in set(ctx.memo) - keys:  # call sites read with the wider types
            ctx.memo.pop(key, None)
            ctx.site_uses.pop(key, None)
            ctx.mixed.discard(key)
    return uses, reader.mixed
