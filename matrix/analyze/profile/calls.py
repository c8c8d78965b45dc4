"""The kernel reader's calls: ``tl`` functions, methods (``x.to``, ``desc.load``), builtins,
and ``@triton.jit`` helpers followed for their return kinds (read once per distinct set of
argument types, typed per call site). A part of ``KernelReader``
(``matrix.analyze.profile.reader``), which it is mixed into."""

from __future__ import annotations

import ast
import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from matrix.analyze.profile.compiled import BOUND_SCALARS, bound
from matrix.analyze.profile.context import Context, Helper, HelperLookup
from matrix.analyze.profile.dtype_fns import Dtype, Unknown, evaluate
from matrix.analyze.profile.dtypes import DtypeReader
from matrix.analyze.profile.kinds import (
    BUILTIN_RULES,
    INT32_RESULTS,
    INT_ELEM,
    MAX_INLINE,
    PASS_THROUGH,
    TL_SUBMODULES,
    _elem,
    _float_literal,
    _gives_value,
    _without,
)
from matrix.analyze.profile.model import (
    FLOAT_DTYPES,
    UNKNOWN,
    Kinds,
    Launch,
    Resolver,
    UsageMap,
    Use,
    Val,
    _k,
    _union,
    base_of,
    cand_of,
    lift,
    per_side,
    sided,
)
from matrix.analyze.profile.promotion import BASELINE, CANDIDATE


@dataclass(frozen=True)
class _Const:
    """A Python constant passed to a plain function (``get_int_t(16, True)``)."""

    value: object


class CallReader(DtypeReader):
    """The calls of one ``@triton.jit`` function (mixed into ``KernelReader``, which holds
    the state and the expression reading these parts use)."""

    if TYPE_CHECKING:
        fn: ast.FunctionDef | ast.AsyncFunctionDef
        r: Resolver
        map: UsageMap
        path: str
        launch: Launch | None
        globals: Mapping[str, ast.expr]
        jit_names: frozenset[str]
        lines: Sequence[str]
        helpers: Mapping[str, ast.FunctionDef | ast.AsyncFunctionDef]
        lookup: HelperLookup | None
        depth: int
        ctx: Context
        site_key: tuple[Any, ...] | None
        half: str | None
        mixed: bool
        fixed: Mapping[str, object]
        int_vars: set[str]
        excluded: dict[str, set[str]]
        env: dict[str, Val]
        uses: list[Use]

        def ev(self, node: ast.expr | None, record: bool = True) -> Val: ...
        def use(
            self, op: str, node: ast.AST, operands: Sequence[Val] = (), **attrs: str
        ) -> None: ...
        def kw(self, call: ast.Call, name: str) -> ast.expr | None: ...
        def _binop(self, op: str | None, a: Val, b: Val) -> Val: ...
        def _site_reader(
            self,
            h: Helper,
            helpers: Mapping[str, ast.FunctionDef | ast.AsyncFunctionDef] | None,
            fixed: Mapping[str, object] | None = None,
        ) -> CallReader: ...
        def returned(self, args: Sequence[Val], kwargs: Mapping[str, Val]) -> Val: ...

    def _call(self, node: ast.Call) -> Val:
        func = node.func
        tl = self.r.tl_name(func)
        if tl is None and isinstance(func, ast.Attribute):
            # `from triton.language import core; core.where(...)`: tl's own function
            own = self.r.qualname(func) or ""
            if own.startswith(TL_SUBMODULES) and own.count(".") == 3:
                tl = func.attr
        method = None
        if tl is None and isinstance(func, ast.Attribute):
            q = self.r.qualname(func)
            is_helper = bool(q and self.lookup and self.lookup(q))  # mod.helper(x): a call
            if (q is None or not q.startswith("triton.")) and not is_helper:
                method = func.attr
        if tl is None and method is None:
            q = self.r.qualname(func)  # a Name too: `from ...libdevice import tanh`
            name = func.id if isinstance(func, ast.Name) else None
            args = [self.ev(a) for a in node.args]
            for k in node.keywords:
                self.ev(k.value)
            if q and q.startswith("triton."):
                return self._triton_named(node, q, args)
            if name in BUILTIN_RULES and name not in self.env:
                self.use(BUILTIN_RULES[name], node, args)
                if name in ("float", "int") and all(isinstance(a, ast.Constant) for a in node.args):
                    # float("-inf"), int(3): a Python number at compile time, as a literal is
                    return _k("lit_float" if name == "float" else "lit_int")
                return _union(args) if name in ("min", "max", "abs") else UNKNOWN
            if name == "range":
                if len(node.args) == 3:
                    self.use("rule.range_step", node, args)
                for a in args:  # Triton refuses loop bounds that are not integers
                    self._is_int(a)
                return UNKNOWN
            if name in self.jit_names:
                self.use("rule.jit_call", node, name=name)
                helper = self.helpers.get(name or "")
                if helper is not None and self.depth >= MAX_INLINE:
                    self.ctx.unfollowed.add(id(helper))  # its own reading stays in the profile
                if helper is not None and self.depth < MAX_INLINE and helper is not self.fn:
                    kwargs = {k.arg: self.ev(k.value, record=False) for k in node.keywords if k.arg}
                    here = Helper(helper, self.r, self.globals, self.path, self.lines,
                                  self.jit_names)  # fmt: skip
                    return self._follow(
                        here, args, kwargs, self.helpers, self._passed(node, h=helper)
                    )
            elsewhere = self.lookup(q) if self.lookup and q else []
            if elsewhere and self.depth >= MAX_INLINE:
                self.ctx.unfollowed |= {id(h.fn) for h in elsewhere}
                elsewhere = []
            # a module-level name bound to a Triton function (`softplus = tl.xxx` in one
            # branch of an `if`, `make_desc = tl.make_tensor_descriptor`): a call of that
            # function too, read as one
            bound = list(self.ctx.aliases.get(q, ())) if q else []
            if elsewhere or bound:  # a @triton.jit helper of another file of the tree
                if elsewhere:
                    self.use("rule.jit_call", node, name=name or q or "")
                kwargs = {k.arg: self.ev(k.value, record=False) for k in node.keywords if k.arg}
                # every definition (one per branch of an if/try); one that returns nothing
                # (`tl.static_assert(False, ...)` for releases without the feature, `return
                # None` where it is missing) gives the caller no value to type, so the others
                # decide what the call returns
                got = [self._follow(h, args, kwargs, None, self._passed(node, h=h.fn))
                       for h in elsewhere]  # fmt: skip
                valued = [v for h, v in zip(elsewhere, got, strict=True) if _gives_value(h.fn)]
                start = len(self.uses)
                for target, where in bound:
                    at = len(self.uses)
                    valued.append(self._triton_named(node, target, args))
                    # what names the Triton API is a use of it only where its binding holds
                    # (the binding's feature guard: ``if hasattr(tl, ...)`` in op.py)
                    self.uses[at:] = [
                        replace(u, attrs=(*u.attrs, ("bound", where)))
                        if u.op in ("name", "keyword") else u
                        for u in self.uses[at:]
                    ]  # fmt: skip
                # (each reads the arguments again: what they record once is enough)
                self.uses[start:] = [u for u in dict.fromkeys(self.uses[start:])
                                     if u not in self.uses[:start]]  # fmt: skip
                got = valued or got
                return _union(got) if len(got) > 1 else got[0]
            plain = self.ctx.functions(q) if q else []
            got_plain = self._plain_call(node, plain) if plain else UNKNOWN
            if got_plain != UNKNOWN:  # a plain function of the tree run on a dtype
                return got_plain
            if name in self.map.same_dtype_names and args and name not in self.env:
                return _elem(args[0])  # `exp2 = shim.exp2`: libdevice math, input's dtype
            if name and name in self.map.shim_results and name not in self.env:
                return _k(self.map.shim_results[name])  # a shim's program_id: int32
            return UNKNOWN
        if method is not None:
            base = self.ev(func.value)  # type: ignore[attr-defined]
            return self._method(node, method, base)
        return self._tl_call(node, tl or "")

    def _triton_named(self, node: ast.Call, q: str, args: Sequence[Val]) -> Val:
        """A call of Triton's ``q`` that ``node`` makes through a name the resolver does not
        take for ``tl``'s (a libdevice function; a module-level alias of a ``tl`` function,
        read as ``tl``'s own call)."""
        tail = q.removeprefix("triton.language.")
        if tail != q and "." not in tail:
            return self._tl_call(node, tail)
        self.use("name", node, name=q)
        if args and any(q.startswith(p) for p in self.map.same_dtype_calls):
            # libdevice math: computed in its input's dtype
            return per_side(lambda v: Val(v.kinds), args[0])
        return UNKNOWN

    def _plain_call(self, node: ast.Call, defs: Sequence[Helper]) -> Val:
        """A plain Python function of the tree called with dtypes (``get_scan_accum_type(
        in_ptr.type.element_ty)``): what it returns for each dtype its arguments may take,
        per dtype of their one type variable (``dtype_fns``); unknown where any definition,
        argument or dtype cannot be evaluated (fail closed)."""
        if any(isinstance(a, ast.Starred) for a in node.args) or any(
            k.arg is None for k in node.keywords
        ):
            return UNKNOWN
        slots = [*node.args, *(k.value for k in node.keywords)]
        names = [None] * len(node.args) + [k.arg for k in node.keywords]
        got = [self._plain_arg(a) for a in slots]
        vals = [v for v in got if v is not None]
        if len(vals) < len(got):
            return UNKNOWN
        if any(isinstance(v, Val) and v.cand is not None for v in vals):
            return sided(
                self._plain_results(defs, names, [base_of(v) if isinstance(v, Val) else v
                                                  for v in vals]),
                self._plain_results(defs, names, [cand_of(v) if isinstance(v, Val) else v
                                                  for v in vals]),
            )  # fmt: skip
        return self._plain_results(defs, names, vals)

    def _plain_arg(self, arg: ast.expr) -> Val | _Const | None:
        """An argument of a plain function call: a Python constant (a literal, a constexpr
        this reading fixes) as itself, a dtype as a value whose kinds are the dtypes it may
        name; None where neither is known."""
        if isinstance(arg, ast.Constant):
            return _Const(arg.value)
        if isinstance(arg, ast.Name) and arg.id in self.fixed:
            return _Const(self.fixed[arg.id])
        v = self._dtype_val(arg)
        return v if v.kinds else None

    def _plain_results(
        self, defs: Sequence[Helper], names: Sequence[str | None], vals: Sequence[Val | _Const]
    ) -> Val:
        """What ``defs`` return for argument values ``vals`` (one side): per dtype of the
        arguments' one type variable where they follow one, else for every combination."""
        dtypes = [v for v in vals if isinstance(v, Val)]
        tvars = frozenset().union(*(v.vars for v in dtypes)) if dtypes else frozenset()
        if len(tvars) > 1 or any(v.vars and v.per is None for v in dtypes):
            return UNKNOWN

        def each(choice: Mapping[int, frozenset[str]]) -> frozenset[str] | None:
            options = [
                [Dtype(d) for d in sorted(choice[i])] if isinstance(v, Val) else [v.value]
                for i, v in enumerate(vals)
            ]  # fmt: skip
            out: set[str] = set()
            for combo in itertools.product(*options):
                pos = [c for c, n in zip(combo, names, strict=True) if n is None]
                kw = {n: c for c, n in zip(combo, names, strict=True) if n is not None}
                for h in defs:
                    try:
                        got = evaluate(h.fn, h.resolver, self.map, pos, kw)  # type: ignore[arg-type]
                    except Unknown:
                        return None
                    if not isinstance(got, Dtype):
                        return None  # a number or a string: not a dtype this reader types
                    out.add(got.name)
            return frozenset(out)

        own = {i: v.kinds for i, v in enumerate(vals) if isinstance(v, Val) and v.kinds is not None}
        if not tvars:
            got = each(own)
            return UNKNOWN if got is None else Val(dtype=got)
        keys = set.intersection(*({d for d, _ in v.per or ()} for v in dtypes if v.vars))
        per = []
        for d in sorted(keys):
            choice = {**own, **{i: dict(v.per or ())[d] for i, v in enumerate(vals)
                                if isinstance(v, Val) and v.vars}}  # fmt: skip
            got = each(choice)
            if got is None:
                return UNKNOWN
            per.append((d, got))
        if not per:
            return UNKNOWN
        return Val(dtype=frozenset().union(*(g for _, g in per)), vars=tvars, per=tuple(per))

    def _combine_fn(self, fn: ast.expr, args: Sequence[Val]) -> None:
        """Read a reduction's or scan's combine function typed by the values it combines."""
        name = fn.id if isinstance(fn, ast.Name) else None
        helper = self.helpers.get(name or "") if name in self.jit_names else None
        if helper is not None and self.depth < MAX_INLINE and helper is not self.fn:
            here = Helper(helper, self.r, self.globals, self.path, self.lines, self.jit_names)
            self._follow(here, args, {}, self.helpers)
            return
        q = self.r.qualname(fn)
        elsewhere = self.lookup(q) if self.lookup and q and self.depth < MAX_INLINE else []
        for h in elsewhere:
            self._follow(h, args, {}, None)

    def _follow(
        self,
        h: Helper,
        args: Sequence[Val],
        kwargs: Mapping[str, Val],
        helpers: Mapping[str, ast.FunctionDef | ast.AsyncFunctionDef] | None,
        fixed: Mapping[str, object] | None = None,
    ) -> Val:
        """What helper ``h`` returns for these argument types, reading it once per distinct
        set of them (typed per call site); its uses are kept in the shared context. ``fixed``:
        the constexpr values this reading passes it (its branches on them fold, as Triton
        compiles the helper with them)."""
        # (and per 16-bit format of the reading: a parameter the caller leaves open takes it)
        passed = tuple(sorted((k, repr(v)) for k, v in (fixed or {}).items()))
        key = (id(h.fn), tuple(args), tuple(sorted(kwargs.items())), self.depth, self.half,
               passed)  # fmt: skip
        self.ctx.edges.setdefault(self.site_key or self.ctx.root, set()).add(key)
        if key in self.ctx.memo:
            self.int_vars |= self.ctx.int_vars.get(key, frozenset())
            self.mixed |= key in self.ctx.mixed
            self._exclude(self.ctx.excluded.get(key, {}))
            return self.ctx.memo[key]
        self.ctx.memo[key] = UNKNOWN  # a recursive call of itself: not followed
        sub = self._site_reader(h, helpers, fixed)
        sub.site_key = key
        got = sub.returned(args, kwargs)
        if self.launch is not None and self.launch.test:
            sub.uses = [replace(u, test=self.launch.test) for u in sub.uses]
        self.ctx.memo[key] = got
        self.ctx.int_vars[key] = frozenset(sub.int_vars)
        self.ctx.excluded[key] = {k: set(v) for k, v in sub.excluded.items()}
        self.int_vars |= sub.int_vars
        self._exclude(sub.excluded)
        if sub.mixed:
            self.ctx.mixed.add(key)
            self.mixed = True
        self.ctx.site_uses[key] = sub.uses
        self.ctx.called.add(id(h.fn))
        return got

    def _passed(
        self, call: ast.Call, h: ast.FunctionDef | ast.AsyncFunctionDef
    ) -> dict[str, object]:
        """The constexpr values this reading fixes (``self.fixed``) or the code spells (a
        literal) that ``call`` passes to helper ``h``, by its parameter names: FlagGems
        attention.py passes ``HAS_ATTN_MASK`` to ``_attn_fwd_inner``, whose
        ``if HAS_ATTN_MASK:`` loads through ``mask_block_ptr = None`` otherwise. Triton makes
        every literal argument of a jit-to-jit call a constexpr of the callee, so a string
        (``ACTIVATION="tanh"``) or ``None`` (``C=None``, tested ``if C is not None:``) folds
        the helper's branches on it as a number does."""
        params = [a.arg for a in (*h.args.posonlyargs, *h.args.args)]
        pairs = [*zip(params, call.args, strict=False)]
        pairs += [(k.arg, k.value) for k in call.keywords if k.arg]
        out: dict[str, object] = {}
        for param, arg in pairs:
            if isinstance(arg, ast.Starred):
                break  # positions after it are not known
            if isinstance(arg, ast.Name) and arg.id in self.fixed:
                out[param] = self.fixed[arg.id]
            elif isinstance(arg, ast.Constant) and isinstance(arg.value, int | float | str | None):
                out[param] = arg.value
        return out

    def _method(self, node: ast.Call, name: str, base: Val) -> Val:
        args = [self.ev(a) for a in node.args]
        for k in node.keywords:
            if k.arg not in ("dtype",):
                self.ev(k.value)
        if name in ("to", "cast"):  # x.cast(tl.float32) is x.to(tl.float32)
            target = node.args[0] if node.args else self.kw(node, "dtype")
            return self._cast(node, base, target, self.kw(node, "bitcast"))
        if name in ("load", "store"):  # desc.load([..]) on a tensor descriptor
            self.use(f"descriptor.{name}", node, (base,))
            return _elem(base) if name == "load" else UNKNOWN
        fam = self.map.functions.get(name)
        if fam and fam.startswith(("reduce.", "unary.")):
            self.use(fam, node, (base,))
            return self._reduced(name, base, node)
        if name in PASS_THROUGH:
            return base
        if name == "split" and base.kinds is not None and not base.pointer:
            return Val(items=(base, base))  # x.split(): tl.split(x), two halves of x's dtype
        if name in self.map.same_dtype_names and args and base.kinds is None:
            return _elem(args[0])  # shim.exp2(x) of a module: libdevice math, input's dtype
        if name in self.map.shim_results and base.kinds is None and not base.pointer:
            return _k(self.map.shim_results[name])  # shim.program_id(0): int32
        return UNKNOWN

    def _exclude(self, more: Mapping[str, set[str]]) -> None:
        for var, dtypes in more.items():
            self.excluded.setdefault(var, set()).update(dtypes)

    def _is_int(self, v: Val) -> None:
        """``v`` is used where only an integer can be (a pointer offset): the type variables
        it came from admit integers only (an index array, a label)."""
        if v.vars and v.kinds is not None and v.kinds & FLOAT_DTYPES:
            self.int_vars |= v.vars

    def _reduced(self, name: str, x: Val, node: ast.Call, recorded: bool = True) -> Val:
        """The result of a reduction or unary function of ``x``: argmax/argmin's int32, a
        ``dtype=`` given, else the result types the two releases recorded for it (per side;
        ``tl.max`` of a float16 is a float32), else a sum's widened narrow integers (data:
        ``sum_result``), else x's; ``tl.max(x, 1, return_indices=True)`` is the pair (that
        value, its int32 index), whose value the cells (measured without indices) do not
        type."""
        if name in INT32_RESULTS:
            return _k("int32")
        flag = self.kw(node, "return_indices")
        if isinstance(flag, ast.Constant) and flag.value is True:
            return Val(items=(self._reduced(name, x, _without(node, "return_indices"), False),
                              _k("int32")))  # fmt: skip
        dtype = self.kw(node, "dtype")
        given = self._dtype_of_expr(dtype) if dtype is not None else None
        if given:
            return Val(given)
        widen = self.map.sum_result if name in self.map.sum_names else {}

        def fixed(k: str) -> frozenset[str]:
            return frozenset({widen.get(k, k)})

        fam = self.map.functions.get(name) or ""
        types = self.ctx.types
        if x.kinds is None or not (widen or (types is not None and recorded and fam)):
            return x

        def mapped(f: Callable[[str], frozenset[str]], v: Val) -> Val:
            def each(ks: Kinds) -> Kinds:
                return frozenset().union(*(f(k) for k in ks)) if ks is not None else None

            return Val(each(v.kinds), vars=v.vars, per=lift(each, [v]))

        if types is None or not recorded or not fam:
            return per_side(lambda v: mapped(fixed, v), x)
        return sided(
            mapped(lambda k: types.result1(fam, k, BASELINE, fixed), base_of(x)),
            mapped(lambda k: types.result1(fam, k, CANDIDATE, fixed), cand_of(x)),
        )

    def _cast(self, node: ast.Call, src: Val, target: ast.expr | None, bitcast: Any) -> Val:
        if (
            isinstance(target, ast.Call)
            and self.r.tl_name(target.func) == "pointer_type"
            and target.args
        ):
            # `addr.to(tl.pointer_type(T))`: an integer address made a pointer to T
            # (tt.int_to_ptr), no value cast between dtypes; loads through it read T, and
            # the address is an integer (Triton casts only integers to pointers)
            self._is_int(src)
            elem = self._dtype_val(target.args[0])
            return per_side(lambda v: Val(v.kinds, pointer=True, vars=v.vars, per=v.per), elem)
        named = self._dtype_val(target)
        is_bitcast: bool | None = isinstance(bitcast, ast.Constant) and bitcast.value is True
        if bitcast is not None and not isinstance(bitcast, ast.Constant):
            is_bitcast = None  # a constexpr flag: either
        op = "cast.bitcast" if is_bitcast else "cast.to"
        target_val = per_side(lambda v: Val(v.kinds, vars=v.vars, per=v.per), named)
        self.use(op, node, (src, target_val))
        if is_bitcast is None:
            self.use("cast.to", node, (src, target_val))
        return per_side(lambda v: Val(v.kinds, cast=True, vars=v.vars, per=v.per), named)

    def _tl_call(self, node: ast.Call, name: str) -> Val:
        q = f"triton.language.{name}"
        keywords = [k.arg for k in node.keywords if k.arg]
        self.use("name", node, name=q)
        for k in keywords:
            self.use("keyword", node, name=k, call=q)
        if name == "dtype":  # tl.dtype("uint32"), tl.dtype(f"uint{bits}"): a dtype object
            named = self._dtype_val(node)
            return Val(dtype=named.kinds) if named.kinds else UNKNOWN
        if self._dtype_name(name) == name:  # tl.float32(-inf): a scalar of that dtype
            for arg in node.args:
                self.ev(arg)
            return _k(name)
        if name == "to" or name == "cast":
            src = self.ev(node.args[0]) if node.args else UNKNOWN
            target = node.args[1] if len(node.args) > 1 else self.kw(node, "dtype")
            return self._cast(node, src, target, self.kw(node, "bitcast"))
        args = [self.ev(a) for a in node.args]
        kws = {k.arg: k for k in node.keywords if k.arg}
        kw_vals = {k: self.ev(v.value) for k, v in kws.items() if k not in ("dtype", "out_dtype")}
        fam = self.map.functions.get(name)
        if name in INT32_RESULTS and name not in ("argmax", "argmin"):
            return _k("int32")
        if name in self.map.tuple_of_args:  # `i, j = tl.swizzle2d(i, j, ...)`
            return Val(items=tuple(args[i] if i < len(args) else UNKNOWN
                                   for i in self.map.tuple_of_args[name]))  # fmt: skip
        if name in self.map.dtype_argument:  # tl.inline_asm_elementwise(..., dtype=tl.float32)
            i = self.map.dtype_argument[name]
            given = self.kw(node, "dtype") or (node.args[i] if len(node.args) > i else None)
            return self._dtype_val(given)
        if name in ("zeros", "full", "zeros_like", "full_like"):
            dt = self._dtype_val(self.kw(node, "dtype"))
            at = {"zeros": 1, "full": 2}.get(name)  # tl.zeros(shape, dtype), tl.full(s, v, dt)
            if dt.kinds is None and at is not None and len(node.args) > at:
                dt = self._dtype_val(node.args[at])
            if dt.kinds is None and name.endswith("_like") and args:
                return _elem(args[0])
            return dt
        if name in ("load", "store"):
            return self._tl_memory(node, name, args[0] if args else UNKNOWN, "mask" in kws)
        if name in self.map.call_result:  # tl.rand, tl.randn: a fixed result dtype
            return _k(self.map.call_result[name])
        if name == "dot":
            return self._tl_dot(node, args, kws, kw_vals)
        if fam and fam.startswith("atomic."):
            return self._tl_atomic(node, fam, args[0] if args else UNKNOWN)
        if fam and fam.startswith(("binary_fn.", "binary_int_fn.", "binary.")):
            a = args[0] if args else UNKNOWN
            b = args[1] if len(args) > 1 else UNKNOWN
            if fam.startswith("binary.") and (a.pointer or b.pointer):
                return a if a.pointer else b  # tl.core.add(ptr, offs): pointer arithmetic
            nan = self.kw(node, "propagate_nan")
            attrs = {"propagate_nan": ast.unparse(nan)} if nan is not None else {}
            self.use(fam, node, (a, b), **attrs)
            return self._binop(fam, a, b)
        if name == "where":
            a = args[1] if len(args) > 1 else UNKNOWN
            b = args[2] if len(args) > 2 else UNKNOWN
            self.use("where", node, (a, b))
            return self._binop("where", a, b)
        if name == "clamp":
            x = args[0] if args else UNKNOWN
            lo = args[1] if len(args) > 1 else kw_vals.get("min", UNKNOWN)
            self.use("clamp", node, (x, lo))
            return self._binop("clamp", x, lo)
        if fam and fam.startswith(("unary.", "reduce.")):
            x = args[0] if args else UNKNOWN
            self.use(fam, node, (x,))
            if x.kinds and all(k in BOUND_SCALARS for k in x.kinds) and not x.cand:
                # tl.log2(math.e): the function makes its Python number a 0-d tensor first,
                # as an assignment does when compiled (and it does so under the interpreter too)
                return bound(x, interpret=False)
            return self._reduced(name, x, node)
        return self._tl_other(node, name, args, kw_vals)

    def _tl_memory(self, node: ast.Call, name: str, ptr: Val, masked: bool) -> Val:
        """``tl.load``/``tl.store`` through ``ptr``: what the pointer holds (its element type,
        a type variable if only the pointer parameter says), else unknown."""
        if name == "store":
            self.use("store", node, (per_side(lambda v: Val(v.kinds, vars=v.vars), ptr),),
                     masked=str(masked).lower())  # fmt: skip
            return UNKNOWN
        held = _elem(ptr) if ptr.pointer else UNKNOWN
        self.use("load", node, (held,), masked=str(masked).lower())
        other = self.kw(node, "other")
        if other is not None and _float_literal(other) and len(held.vars) == 1:
            # masked-off lanes filled with a float (0.0, -inf): the code reads floats
            # through this pointer; an integer element type is none the code admits
            self._exclude({next(iter(held.vars)): set(INT_ELEM)})
        return held

    def _tl_dot(
        self,
        node: ast.Call,
        args: Sequence[Val],
        kws: Mapping[str, ast.keyword],
        kw_vals: Mapping[str, Val],
    ) -> Val:
        """``tl.dot``: its use (inputs, accumulator, out_dtype, precision) and its result."""
        a = args[0] if args else UNKNOWN
        b = args[1] if len(args) > 1 else UNKNOWN
        acc = args[2] if len(args) > 2 else kw_vals.get("acc", Val(frozenset({"none"})))
        out = self._dtype_of_expr(self.kw(node, "out_dtype"))
        prec_node = self.kw(node, "input_precision")
        prec = "default"
        if prec_node is not None:
            prec = str(prec_node.value) if isinstance(prec_node, ast.Constant) else "*"
        if "allow_tf32" in kws:
            prec = "*"
        out_text = "default" if "out_dtype" not in kws else "|".join(sorted(out or {"?"}))
        both = _union([base_of(acc), cand_of(acc)])  # its kinds on either release
        acc_text = "?" if both.kinds is None else "|".join(sorted(both.kinds))
        self.use("dot", node, (_union([a, b]),), acc=acc_text, out=out_text, prec=str(prec))
        if out:
            return Val(out)
        if acc.kinds != {"none"}:
            return acc  # the accumulator's dtype (acc= or the third argument)
        table = self.map.dot_result

        def result(ab: Val) -> Val:
            if ab.kinds is None:  # inputs not inferable: any result a dot can have
                return Val(frozenset(table.values()))
            return Val(frozenset(table.get(k, table["*"]) for k in ab.kinds), vars=ab.vars)

        return per_side(result, _union([a, b]))

    def _tl_atomic(self, node: ast.Call, fam: str, ptr: Val) -> Val:
        """An atomic on ``ptr``: its dtype is the pointer's element type (the value is cast
        to it), with its ``sem``/``scope``."""
        sem = self.kw(node, "sem")
        scope = self.kw(node, "scope")

        def text(e: ast.expr | None) -> str:
            if e is None:
                return "default"
            return str(e.value) if isinstance(e, ast.Constant) else "*"

        # the op's dtype is the pointer's element type (the value is cast to it)
        elem = _elem(ptr) if ptr.pointer else UNKNOWN
        self.use(fam, node, (elem,), sem=text(sem), scope=text(scope))
        return elem

    def _tl_other(
        self, node: ast.Call, name: str, args: Sequence[Val], kw_vals: Mapping[str, Val]
    ) -> Val:
        """The other ``tl`` functions the reader knows: loops, block pointers and tensor
        descriptors, pass-through shape functions, reductions with a combine function, cdiv."""
        if name == "static_range":
            self.use("rule.static_range", node)
            return UNKNOWN
        if name == "range":  # tl.range: loop bounds are integers (Triton refuses others)
            for a in args:
                self._is_int(a)
            return UNKNOWN
        if name in (
            "make_block_ptr",
            "make_tensor_descriptor",
            "_experimental_make_tensor_descriptor",
        ):
            base = kw_vals.get("base", args[0] if args else UNKNOWN)
            return per_side(lambda v: Val(v.kinds, pointer=True, vars=v.vars, per=v.per), base)
        if name in PASS_THROUGH:
            return args[0] if args else UNKNOWN
        if name == "split" and args:  # the two halves of the last dimension, of a's dtype
            return Val(items=(args[0], args[0]))
        if name in ("reduce", "associative_scan") and args:
            # the combine function keeps its inputs' types (Triton checks it): the result
            # is the input's, a tuple of them for a tuple; the combine function is read
            # with those types, for both of its halves (not as scalar arguments)
            combine = self.kw(node, "combine_fn") or (node.args[2] if len(node.args) > 2 else None)
            items = list(args[0].items) if args[0].items is not None else [args[0]]
            if combine is not None:
                self._combine_fn(combine, [*items, *items])
            return args[0]
        if name == "cdiv":  # (x + div - 1) // div (triton/language/standard.py)
            if len(args) < 2:
                return UNKNOWN
            up = self._binop("binary.sub", self._binop("binary.add", args[0], args[1]),
                             _k("lit_int"))  # fmt: skip
            return self._binop("binary.floordiv", up, args[1])
        return UNKNOWN
