"""Reading one ``@triton.jit`` function with ``ast``: every op with its operand kinds."""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

from matrix.analyze.profile.admits import OPS as ADMIT_OPS
from matrix.analyze.profile.calls import CallReader
from matrix.analyze.profile.compiled import bound, carried_mismatches, carried_types
from matrix.analyze.profile.constexprs import static_truth
from matrix.analyze.profile.context import Context, Helper, HelperLookup
from matrix.analyze.profile.kinds import (
    MAX_SETTLE,
    _as_dtype,
    _binop_with,
    _merge,
    _of_type,
    body_shape,
    compile_time,
)
from matrix.analyze.profile.model import (
    ELEM_DTYPES,
    RUNTIME_ANY,
    RUNTIME_INT,
    SCALAR_KINDS,
    UNKNOWN,
    Kinds,
    Launch,
    Resolver,
    UsageMap,
    Use,
    Val,
    _k,
    _scalar_of,
    _union,
    base_of,
    cand_of,
    combos,
    decides_text,
    fixed_result,
    on_domain,
    per_side,
    restrict,
    sided,
    type_var,
)
from matrix.analyze.profile.params import ParamTypes
from matrix.analyze.profile.promotion import BASELINE, CANDIDATE


class KernelReader(ParamTypes, CallReader):
    """Reads one ``@triton.jit`` function: every op with the kinds of its operands."""

    def __init__(
        self,
        fn: ast.FunctionDef | ast.AsyncFunctionDef,
        resolver: Resolver,
        umap: UsageMap,
        path: str,
        module_globals: Mapping[str, ast.expr],
        launch: Launch | None = None,
        jit_names: frozenset[str] = frozenset(),
        lines: Sequence[str] = (),
        helpers: Mapping[str, ast.FunctionDef | ast.AsyncFunctionDef] | None = None,
        depth: int = 0,
        lookup: HelperLookup | None = None,
        *,
        ctx: Context | None = None,
        variant: int = 0,
        narrow: Mapping[str, frozenset[str]] | None = None,
        site: bool = False,
        fixed: Mapping[str, object] | None = None,
        half: str | None = None,
    ) -> None:
        self.fn, self.r, self.map, self.path = fn, resolver, umap, path
        self.launch = launch
        self.globals = module_globals
        self.jit_names = jit_names
        self.lines = lines
        self.helpers = helpers or {}
        self.lookup = lookup
        self.depth = depth
        self.ctx = ctx or Context()
        self.variant = variant  # which of several declared dtypes each pointer takes
        self.narrow = dict(narrow or {})  # type variable -> the dtypes the code admits
        # the one 16-bit format the open variables of this reading take (open_types.py);
        # None: either (``mixed``: then some op of it met two variables that each may take
        # either, which one launch never pairs across formats: read once per format).
        self.half = half
        self.mixed = False
        self.absent: frozenset[str] | None = None  # _absent's answer, once per reading
        # variables the host decides (``assert x.dtype in ...``): no default narrows them
        self.decided = frozenset(
            type_var(fn.name, p, dtype=d) for p in (launch.domains if launch else {})
            for d in (False, True)
        )  # fmt: skip
        self.site = site  # read for a call site: parameters the caller did not type stay open
        self.site_key: tuple[Any, ...] | None = None  # the memo key of this call-site reading
        # constexpr parameters this reading takes one value of (Triton compiles each value of
        # a constexpr on its own, folding the branches on it): ``constexprs.constexpr_cases``
        self.fixed: Mapping[str, object] = fixed or {}
        self.int_vars: set[str] = set()  # type variables the code uses as an integer
        self.excluded: dict[str, set[str]] = {}  # type variable -> dtypes the baseline refuses
        self.settling = False
        self.returns: list[Val] = []
        self.uses: list[Use] = []
        self.env: dict[str, Val] = {}
        self._params()

    def returned(self, args: Sequence[Val], kwargs: Mapping[str, Val]) -> Val:
        """What this function returns when called with ``args``/``kwargs`` (a helper called
        from a kernel: its parameters take the caller's kinds; its own uses are its own)."""
        params = [a.arg for a in [*self.fn.args.posonlyargs, *self.fn.args.args]]
        for name, v in [*zip(params, args, strict=False), *kwargs.items()]:
            own = self.env.get(name)
            tensor = v.kinds is not None and bool(v.kinds & ELEM_DTYPES) and not v.pointer
            if own is None or (own.pointer and not v.pointer and not tensor):
                continue  # the helper reads it as a pointer: the caller's default guess is not
            # (a tensor the caller computed, `pid + j * n`, is no pointer whatever the helper's
            # own guess from `p + x - 1`)
            if self.site or v.kinds is not None or v.pointer or v.dtype is not False:
                # typed per call site: what the caller passes, unknown included (the
                # helper's own guess, a runtime scalar, would be wrong for a tensor)
                self.env[name] = v
        self.run()
        if not self.returns:
            return UNKNOWN
        if all(r.items is not None for r in self.returns):
            n = {len(r.items or ()) for r in self.returns}
            if len(n) == 1:
                width = n.pop()
                return Val(items=tuple(
                    _union([r.items[i] for r in self.returns if r.items]) for i in range(width)
                ))  # fmt: skip
        return _union(self.returns) if len(self.returns) > 1 else self.returns[0]

    # -- parameters
    def _params(self) -> None:
        args = self.fn.args
        params = [*args.posonlyargs, *args.args, *args.kwonlyargs]
        defaults: dict[str, ast.expr] = {}
        for p, d in zip(
            reversed(args.posonlyargs + args.args), reversed(args.defaults), strict=False
        ):
            defaults[p.arg] = d
        for p, kd in zip(args.kwonlyargs, args.kw_defaults, strict=True):
            if kd is not None:
                defaults[p.arg] = kd
        known = self.ctx.shapes.get(id(self.fn))
        if known is None:  # what the body says of its parameters: once per function
            known = self.ctx.shapes[id(self.fn)] = body_shape(
                self.fn, self.r, self.helpers, elsewhere=self._defs_elsewhere, memo=self.ctx.shapes
            )
        pointers, offsets, dtype_names = known
        sig = self.launch.signature if self.launch else {}
        cx = self.launch.constexprs if self.launch else {}
        for p in params:
            name = p.arg
            constexpr = p.annotation is not None and self._is_constexpr(p.annotation)
            if name in cx:
                value = cx[name]
                kind = _scalar_of(value)
                if kind:
                    self.env[name] = _k(kind)
                elif isinstance(value, str) and self._dtype_name(value):
                    self.env[name] = Val(dtype=frozenset({self._dtype_name(value) or ""}))
                else:
                    self.env[name] = UNKNOWN
                continue
            if constexpr and name in sig:  # a host launch passing a literal to a constexpr
                kind = {"i32": "cx_int", "fp32": "cx_float", "i1": "lit_bool"}.get(sig[name])
                self.env[name] = _k(kind) if kind else UNKNOWN
                continue
            if name in sig:
                t = str(sig[name])
                if t.startswith("*"):
                    elem = self._dtype_name(t.lstrip("*").removeprefix("k"))
                    self.env[name] = Val(frozenset({elem}) if elem else None, pointer=True)
                else:
                    kind = self.map.launch_scalars.get(t)
                    self.env[name] = _k(kind) if kind else UNKNOWN
                continue
            if constexpr:
                default = defaults.get(name)
                if isinstance(default, ast.Constant):
                    kind = _scalar_of(default.value)
                    self.env[name] = _k(kind) if kind else UNKNOWN
                elif default is not None and self._dtype_of_expr(default):
                    self.env[name] = Val(dtype=self._dtype_of_expr(default))
                elif name in dtype_names:  # a dtype the caller picks: a type variable
                    self.env[name] = self._dtype_param(name)
                elif name in offsets:  # a block size: shapes, aranges, masks
                    self.env[name] = _k("cx_int")
                else:
                    # A constexpr with no default and no integer use: it may hold an int or a
                    # float, which the source cannot tell: both scalar kinds.
                    self.env[name] = Val(frozenset({"cx_int", "cx_float"}))
                continue
            hinted = self.map.annotations.get(ast.unparse(p.annotation)) if p.annotation else None
            if name in pointers:
                self.env[name] = self._pointer_param(name)
            elif hinted:  # `n: int`: a runtime scalar of that kind
                self.env[name] = Val(frozenset(hinted))
            elif name in offsets:
                self.env[name] = Val(RUNTIME_INT)
            else:
                self.env[name] = Val(RUNTIME_ANY)

    def _defs_elsewhere(
        self, func: ast.expr, resolver: Resolver
    ) -> list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, Resolver]]:
        """The @triton.jit definitions of other files of the tree that ``func`` names."""
        if self.lookup is None:
            return []
        q = resolver.qualname(func)
        return [(h.fn, h.resolver) for h in self.lookup(q)] if q else []

    # -- helpers
    def _site_reader(
        self,
        h: Helper,
        helpers: Mapping[str, ast.FunctionDef | ast.AsyncFunctionDef] | None,
        fixed: Mapping[str, object] | None = None,
    ) -> KernelReader:
        """A reader of helper ``h`` for a call site of this function: one level deeper, in
        the same context, parameters the caller did not type left open, the constexpr values
        it passes (``fixed``) fixed."""
        return KernelReader(
            h.fn, h.resolver, self.map, h.path, h.globals, None, h.jit_names, h.lines,
            helpers, self.depth + 1, self.lookup, ctx=self.ctx, site=True, half=self.half,
            fixed=fixed,
        )  # fmt: skip

    def _code(self, node: ast.AST) -> str:
        line = getattr(node, "lineno", 0)
        return self.lines[line - 1].strip()[:120] if 0 < line <= len(self.lines) else ""

    def _admitted(self, op: str, operands: Sequence[Val]) -> None:
        """An operand that is a type variable as it stands (its kinds are the variable's) in
        an op the baseline refuses for some of its dtypes, everywhere it was measured: the
        variable is none of those (code that runs on the baseline does not do what it
        refuses)."""
        if not (op.startswith(ADMIT_OPS) or op == "where") or len(operands) > 2:
            return
        for i, v in enumerate(operands):
            if len(v.vars) != 1 or v.kinds is None or len(v.kinds) < 2:
                continue
            (var,) = v.vars
            if v.kinds != self.ctx.domains.get(var):
                continue  # a value computed from the variable, not the variable itself
            other = operands[1 - i] if len(operands) == 2 else None
            if other is not None and other.kinds is None:
                continue
            # refused with every kind the other operand may have
            rests = [(k,) for k in other.kinds] if other is not None and other.kinds else [()]
            for d in v.kinds:
                cases = [(d, *r) if i == 0 else (*r, d) for r in rests]
                if all(self.ctx.admits.rejects(op, c) for c in cases):
                    self.excluded.setdefault(var, set()).add(d)

    def use(self, op: str, node: ast.AST, operands: Sequence[Val] = (), **attrs: str) -> None:
        """Record one use; where an operand differs per release (a result type the two
        releases record differently), one use per release, each with that release's kinds
        (a cell is then looked up with the operand dtype each side computes)."""
        if any(v.cand is not None for v in operands):
            base = [base_of(v) for v in operands]
            cand = [cand_of(v) for v in operands]
            types = self.ctx.types
            if types is not None and (
                [v.kinds for v in base] != [v.kinds for v in cand] or combos(base) != combos(cand)
            ):
                self._use(op, node, base, BASELINE, {**attrs, "release": types.release(BASELINE)})
                self._use(op, node, cand, CANDIDATE, {**attrs, "release": types.release(CANDIDATE)})
                return
            operands = base
        self._use(op, node, operands, BASELINE, attrs)

    def _use(
        self, op: str, node: ast.AST, operands: Sequence[Val], side: int, attrs: Mapping[str, str]
    ) -> None:
        if self.ctx.admits and side == BASELINE:
            self._admitted(op, operands)  # what the baseline refuses: its own operands only
        if self.half is None and not self.mixed:
            self.mixed = self._mixes(operands)
        open_vars: set[str] = set()
        unknown = False
        for v in operands:
            if v.kinds is None:
                unknown = True
            elif len(v.kinds) > 1:
                open_vars |= v.vars
                unknown = unknown or not v.vars
        self.uses.append(
            Use(
                op,
                tuple(v.kinds for v in operands),
                tuple(sorted(attrs.items())),
                self.path,
                getattr(node, "lineno", 0),
                self.fn.name,
                self.launch.test if self.launch else "",
                self._code(node),
                getattr(node, "col_offset", 0),
                tuple(i for i, v in enumerate(operands) if v.cast),
                decides_text(open_vars, unknown, self.fn.name) if open_vars or unknown else "",
                combos(operands),
                self._absent() if any(v.kinds is None for v in operands) else frozenset(),
            )
        )

    def _absent(self) -> frozenset[str]:
        """The dtypes no value of this reading holds (what an unknown operand is not): none
        of its parameters' (a pointer's elements, a dtype it holds), none its file names, not
        what tensors carry by default nor what computing alone makes (``[open_types]``); with
        a 16-bit format for the reading, the other one unless a parameter or the function's
        own code gives it (``.to(tl.float16)``: a host's ``torch.float16`` elsewhere in the
        file says nothing of a value inside this launch)."""
        if self.absent is not None:  # once per reading (its parameters are typed by then)
            return self.absent
        rule = self.map.open_types
        self.absent = frozenset()
        if rule.floats is None:
            return self.absent
        given: set[str] = set()
        for v in self.env.values():
            if v.dtype is None or (v.pointer and v.kinds is None):
                return self.absent  # a pointer or a dtype nothing types: any dtype
            for got in (v.kinds, v.dtype if isinstance(v.dtype, frozenset) else None):
                given |= got or frozenset()
        named = self.ctx.mentioned(self.path, self.lines, rule)
        absent = ELEM_DTYPES - {*rule.floats, *rule.ints, *rule.computed} - given - named
        if self.half is not None:
            end = getattr(self.fn, "end_lineno", None) or len(self.lines)
            own = rule.mentioned("\n".join(self.lines[self.fn.lineno - 1 : end]))
            absent |= frozenset(rule.one_per_launch) - {self.half} - given - own
        self.absent = absent
        return absent

    def _mixes(self, operands: Sequence[Val]) -> bool:
        """Whether ``operands`` meet two type variables that may each take either 16-bit
        format (in this reading: ``ctx.domains``), or one and a value the reader cannot type
        (which may be either as well): one launch never pairs them across formats."""
        halves = frozenset(self.map.open_types.one_per_launch)
        tvars = frozenset().union(*(v.vars for v in operands))
        both = [v for v in tvars if len(self.ctx.domains.get(v, frozenset()) & halves) > 1]
        unknown = any(v.kinds is None and v.dtype is False for v in operands)
        return len(both) > 1 or (len(both) == 1 and unknown)

    def kw(self, call: ast.Call, name: str) -> ast.expr | None:
        return next((k.value for k in call.keywords if k.arg == name), None)

    def _binop(self, op: str | None, a: Val, b: Val) -> Val:
        """The result of binary op ``op`` on ``a`` and ``b``: with the result types the
        baseline and the candidate recorded, per side where they differ; without them (no
        pair of releases) the fixed rule, a true division of integers giving float32."""
        types = self.ctx.types
        if types is None:
            if op == "clamp":
                return a
            fixed = partial(fixed_result, op)
            return per_side(lambda x, y: _binop_with(fixed, x, y), a, b)

        def on(side: int) -> Callable[[Kinds, Kinds], Kinds]:
            return lambda x, y: types.promote(op, x, y, side)

        return sided(
            _binop_with(on(BASELINE), base_of(a), base_of(b)),
            _binop_with(on(CANDIDATE), cand_of(a), cand_of(b)),
        )

    # -- expressions
    def ev(self, node: ast.expr | None, record: bool = True) -> Val:
        if node is None:
            return UNKNOWN
        if not record:
            saved = self.uses
            self.uses = []
            try:
                return self._ev(node)
            finally:
                self.uses = saved
        return self._ev(node)

    def _ev(self, node: ast.expr) -> Val:
        if isinstance(node, ast.Constant):
            v = node.value
            if isinstance(v, bool):
                return _k("lit_bool")
            if isinstance(v, int):
                return _k("lit_int")
            if isinstance(v, float):
                return _k("lit_float")
            if isinstance(v, str):  # a compile-time string (``reduction == "mean"``)
                return _k("lit_str")
            return UNKNOWN
        if isinstance(node, ast.Name):
            return self._ev_name(node)
        if isinstance(node, ast.Attribute):
            return self._ev_attribute(node)
        if isinstance(node, ast.Subscript):
            base = self.ev(node.value)
            self.ev(node.slice, record=True) if not isinstance(node.slice, ast.Slice) else None
            if base.items is not None and isinstance(node.slice, ast.Constant):
                i = node.slice.value
                if isinstance(i, int) and -len(base.items) <= i < len(base.items):
                    return base.items[i]
            return base if base.items is None else UNKNOWN
        if isinstance(node, ast.Tuple | ast.List):
            return Val(items=tuple(self.ev(e) for e in node.elts))
        if isinstance(node, ast.BinOp):
            a, b = self.ev(node.left), self.ev(node.right)
            op = self.map.operators.get(type(node.op).__name__)
            if a.pointer or b.pointer:
                ptr, offset = (a, b) if a.pointer else (b, a)
                if not offset.pointer:
                    self._is_int(offset)  # an offset is an integer: so is what it came from
                return ptr
            if op:
                self.use(op, node, (a, b))
            return self._binop(op, a, b)
        if isinstance(node, ast.UnaryOp):
            a = self.ev(node.operand)
            op = self.map.operators.get(type(node.op).__name__)
            if isinstance(node.op, ast.UAdd) or op is None:
                return a
            self.use(op, node, (a,))
            return _k("int1") if op == "unary.not" else a
        if isinstance(node, ast.Compare):
            left = self.ev(node.left)
            for cmp, right in zip(node.ops, node.comparators, strict=True):
                r = self.ev(right)
                op = self.map.operators.get(type(cmp).__name__)
                if op and not (left.pointer or r.pointer):
                    self.use(op, node, (left, r))
                left = r
            return _k("int1")
        if isinstance(node, ast.BoolOp):
            for operand in node.values:
                self.ev(operand)
            return _k("int1")
        if isinstance(node, ast.IfExp):
            return self._ev_ifexp(node)
        if isinstance(node, ast.Call):
            return self._call(node)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.ev(child)
        return UNKNOWN

    def _ev_name(self, node: ast.Name) -> Val:
        """A name: a local's value, else a module global's (a literal, a constexpr of one)."""
        if node.id in self.env:
            return self.env[node.id]
        g = self.globals.get(node.id)
        if g is not None:
            self.use("rule.global_read", node, name=node.id)
            if isinstance(g, ast.Call) and len(g.args) == 1:
                # NAME = tl.constexpr(0) (or -1, or a literal constant named above it):
                # a constexpr of that value
                arg = g.args[0]
                if isinstance(arg, ast.Name) and isinstance(self.globals.get(arg.id), ast.Constant):
                    arg = self.globals[arg.id]
                try:
                    kind = _scalar_of(ast.literal_eval(arg))
                except (ValueError, TypeError, SyntaxError, RecursionError):
                    kind = None
                return _k(kind) if kind else UNKNOWN
            return self.ev(g, record=False) if isinstance(g, ast.Constant) else UNKNOWN
        return UNKNOWN

    def _ev_attribute(self, node: ast.Attribute) -> Val:
        """An attribute: a dtype it names, ``x.T``, ``x.numel``, or a Triton name used."""
        named = self._dtype_val(node)
        if named.kinds is not None:
            return per_side(_as_dtype, named)
        constant = self.map.constants.get(self.r.qualname(node) or "")
        if constant is not None:
            return _k(constant)  # math.e: a Python float, as a literal is
        base = self.ev(node.value)
        if node.attr == "T":
            return base
        fixed = self.map.compile_time
        if node.attr in fixed.get("any", ()) or (
            node.attr in fixed.get("tensor", ())
            and (
                bool(base.kinds and not base.kinds & SCALAR_KINDS and not base.pointer)
                or _of_type(node.value)
            )
        ):
            return _k("cx_int")  # x.shape[0], x.dtype.primitive_bitwidth: a compile-time int
        if self.r.qualname(node):
            q = self.r.qualname(node) or ""
            if q.startswith("triton."):
                self.use("name", node, name=q)
        return UNKNOWN

    def _ev_ifexp(self, node: ast.IfExp) -> Val:
        """``a if cond else b``: where ``cond`` is on a type variable's dtype, each branch
        for the dtypes it is taken for."""
        self.ev(node.test)
        split = self._dtype_cond(node.test)
        if split is None:
            return _union([self.ev(node.body), self.ev(node.orelse)])
        var, yes, no = split
        if not (yes and no):  # taken for every dtype of the variable, or for none
            return self.ev(node.body if yes else node.orelse)
        sides = []
        for expr, dom in ((node.body, yes), (node.orelse, no)):
            saved = self.env
            self.env = {k: restrict(v, var, dom) for k, v in saved.items()}
            try:
                sides.append(on_domain(self.ev(expr), var, dom))
            finally:
                self.env = saved
        return _union(sides)

    # -- statements
    def bind(self, target: ast.expr, value: Val) -> None:
        if isinstance(target, ast.Name):
            self.env[target.id] = value
        elif isinstance(target, ast.Tuple | ast.List):
            items = value.items or ()
            for i, t in enumerate(target.elts):
                self.bind(t, items[i] if i < len(items) else UNKNOWN)
        else:
            self.ev(target)

    def run(self) -> list[Use]:
        for stmt in self.fn.body:
            self.stmt(stmt)
        return self.uses

    def stmt(self, s: ast.stmt) -> None:
        if isinstance(s, ast.Assign):
            v = self._bound(self.ev(s.value))
            for t in s.targets:
                self.bind(t, v)
        elif isinstance(s, ast.AnnAssign):
            if s.value is not None:
                v = self.ev(s.value)
                constexpr = self._is_constexpr(s.annotation)
                self.bind(s.target, compile_time(v) if constexpr else self._bound(v))
        elif isinstance(s, ast.AugAssign):
            cur, v = self.ev(s.target, record=False), self.ev(s.value)
            op = self.map.operators.get(type(s.op).__name__)
            if cur.pointer:
                return
            if op:
                self.use(op, s, (cur, v))
            # ``acc += x`` of a tensor keeps acc's dtype (a loop-carried value must: Triton
            # refuses a loop whose carried type changes); a scalar is promoted as ``+`` does
            keep = cur.kinds is not None and not (cur.kinds & SCALAR_KINDS)
            self.bind(s.target, cur if keep else self._bound(self._binop(op, cur, v)))
        elif isinstance(s, ast.For):
            it = self.ev(s.iter)
            loop_var = _k("cx_int") if self._is_static(s.iter) else _k("arg_i32")
            self.bind(s.target, loop_var if it.items is None else UNKNOWN)
            self._loop(s.body)
            for b in s.orelse:
                self.stmt(b)
        elif isinstance(s, ast.While):
            self.use("rule.while_loop", s)
            self._loop(s.body, s.test)
            for b in s.orelse:
                self.stmt(b)
        elif (
            isinstance(s, ast.If)
            and (truth := static_truth(s.test, self.fixed, self.globals)) is not None
        ):
            self.ev(s.test)  # a branch on a constexpr this reading fixes: the side it takes
            for b in s.body if truth else s.orelse:
                self.stmt(b)
        elif isinstance(s, ast.If):
            self.ev(s.test)
            split = self._dtype_cond(s.test)
            if split is not None and not (split[1] and split[2]):
                # a branch on a dtype that every dtype of its variable takes, or none: the
                # side it takes (``if x.dtype.is_fp64():`` of an fp16/bf16/fp32 x compiles away)
                for b in s.body if split[1] else s.orelse:
                    self.stmt(b)
                return
            before = dict(self.env)
            if split is not None:  # a branch on a dtype: each side for its dtypes only
                var, yes, no = split
                self.env = {k: restrict(v, var, yes) for k, v in before.items()}
            for b in s.body:
                self.stmt(b)
            after_body, self.env = self.env, dict(before)
            if split is not None:
                self.env = {k: restrict(v, var, no) for k, v in before.items()}
            for b in s.orelse:
                self.stmt(b)
            if split is not None:  # what each side left, as values of the variable tested
                after_body = {k: on_domain(v, var, yes) for k, v in after_body.items()}
                self.env = {k: on_domain(v, var, no) for k, v in self.env.items()}
            self.env = _merge(after_body, self.env)
        elif isinstance(s, ast.Return):
            if isinstance(s.value, ast.Tuple):
                self.use("rule.tuple_return", s)
            self.returns.append(self.ev(s.value))
        elif isinstance(s, ast.Expr):
            self.ev(s.value)
        elif isinstance(s, ast.With):
            for b in s.body:
                self.stmt(b)
        elif isinstance(s, ast.Assert):
            self.ev(s.test)

    def _is_constexpr(self, annotation: ast.expr) -> bool:
        return (self.r.qualname(annotation) or "").endswith("constexpr") or (
            isinstance(annotation, ast.Constant) and annotation.value == "constexpr"
        )

    def _bound(self, v: Val) -> Val:
        return bound(v, self.ctx.declaration.runs_on("interpret"))

    def _loop(self, body: Sequence[ast.stmt], test: ast.expr | None = None) -> None:
        """A loop's body (a ``while``'s test read after it settles), once settled; then a
        dtype under which a value it carries changes type is not one the code is compiled
        with (compiled.py; the interpreter checks nothing: not where it may run)."""
        entry = dict(self.env)
        compiled = not self.ctx.declaration.runs_on("interpret")
        self._settle(body, entry if compiled else None)
        if test is not None:
            self.ev(test)
        for b in body:
            self.stmt(b)
        if compiled:
            if not self.settling:
                self._exclude(carried_mismatches(entry, self.env))
            self.env.update(carried_types(entry, self.env))

    def _settle(self, body: Sequence[ast.stmt], entry: Mapping[str, Val] | None = None) -> None:
        """Run a loop body once without recording, so that the values it carries round take
        their loop type (what the body makes of them) before its uses are recorded; with the
        values before the loop (``entry``: compiled code), a tensor the body makes untyped
        keeps the type it entered with (compiled.carried_types)."""
        saved, settling = self.uses, self.settling
        self.uses, self.settling = [], True
        try:
            # to a fixpoint (two passes at most; one inside a loop being settled, so that
            # nested loops stay linear): a value carried round may change what it feeds
            for _ in range(1 if settling else MAX_SETTLE):
                before = dict(self.env)
                for b in body:
                    self.stmt(b)
                if entry is not None:
                    self.env.update(carried_types(entry, self.env))
                if self.env == before:
                    break
        finally:
            self.uses, self.settling = saved, settling

    def _is_static(self, it: ast.expr) -> bool:
        return isinstance(it, ast.Call) and self.r.tl_name(it.func) == "static_range"
