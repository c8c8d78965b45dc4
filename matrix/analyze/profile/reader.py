"""Reading one ``@triton.jit`` function with ``ast``: every op with its operand kinds."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from itertools import product
from typing import Any

from matrix.analyze.profile.admits import OPS as ADMIT_OPS
from matrix.analyze.profile.admits import Admits
from matrix.analyze.profile.declaration import Declaration
from matrix.analyze.profile.model import (
    ELEM_DTYPES,
    FLOAT_DTYPES,
    INT_DTYPES,
    RUNTIME_ANY,
    RUNTIME_INT,
    SCALAR_KINDS,
    UNKNOWN,
    Kinds,
    Launch,
    Profile,
    Resolver,
    UsageMap,
    Use,
    Val,
    _k,
    _scalar_of,
    _union,
    _union_per,
    base_of,
    cand_of,
    combos,
    decides_text,
    fixed_result,
    identity,
    lift,
    load_map,
    on_domain,
    per_side,
    restrict,
    sided,
    type_var,
)
from matrix.analyze.profile.promotion import BASELINE, CANDIDATE, SidedTypes

PASS_THROUGH = frozenset(
    {"reshape", "view", "trans", "permute", "expand_dims", "broadcast_to", "ravel", "reverse",
     "flip", "advance", "multiple_of", "max_contiguous", "max_constancy", "static_assert"}
)  # fmt: skip
INT32_RESULTS = frozenset({"arange", "program_id", "num_programs", "argmax", "argmin"})
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


@dataclass(frozen=True)
class Helper:
    """A ``@triton.jit`` function of another file, with what reading it needs."""

    fn: ast.FunctionDef | ast.AsyncFunctionDef
    resolver: Resolver
    globals: Mapping[str, ast.expr]
    path: str
    lines: Sequence[str]
    jit_names: frozenset[str]


HelperLookup = Callable[[str], Sequence[Helper]]  # a qualified name -> its definitions


class Context:
    """What the readings of one scanned tree share: a ``@triton.jit`` helper is read once per
    distinct set of argument types its callers pass (typed per call site), its uses kept
    once; a helper read at a call site is not also read alone (where its parameters would be
    guessed), unless no call of it could be followed."""

    def __init__(
        self,
        declaration: Declaration | None = None,
        admits: Admits | None = None,
        types: SidedTypes | None = None,
    ) -> None:
        self.declaration = declaration or Declaration()
        self.admits = admits or Admits()  # what the baseline refuses everywhere
        # the result dtypes the baseline and the candidate recorded (None: the fixed rule)
        self.types = types
        self.memo: dict[tuple[Any, ...], Val] = {}
        self.int_vars: dict[tuple[Any, ...], frozenset[str]] = {}  # per memo key
        self.excluded: dict[tuple[Any, ...], dict[str, set[str]]] = {}  # per memo key
        # per function (id): its pointer parameters and its integer (offset) names
        self.shapes: dict[int, tuple[set[str], set[str], set[str]]] = {}
        self.site_uses: dict[tuple[Any, ...], list[Use]] = {}
        self.called: set[int] = set()  # ids of helpers read at a call site
        self.unfollowed: set[int] = set()  # ids of helpers a call of which was not followed
        self.alone: list[tuple[int, list[Use]]] = []  # (helper id, uses of its own reading)
        # which readings reached which call-site readings: a helper's call-site uses count
        # only where a kept reading reached them (a reading alone that is replaced by its
        # call sites takes the helpers it called with guessed types along with it)
        self.root: tuple[Any, ...] = ("root", 0, False)  # the top-level reading under way
        self.edges: dict[tuple[Any, ...], set[tuple[Any, ...]]] = {}

    def uses(self, own: list[Use]) -> list[Use]:
        """``own`` (every reading's uses) with each called helper's own reading replaced by
        its call-site readings (each distinct use once)."""
        read = self.called - self.unfollowed
        drop = {id(u) for fid, us in self.alone if fid in read for u in us}
        out = [u for u in own if id(u) not in drop]
        todo = [r for r in self.edges if r[0] == "root" and not (r[2] and r[1] in read)]
        reached: set[tuple[Any, ...]] = set()
        while todo:
            for key in self.edges.get(todo.pop(), ()):
                if key not in reached:
                    reached.add(key)
                    todo.append(key)
        seen: set[Use] = set()
        for key, us in self.site_uses.items():
            if key not in reached:
                continue
            for u in us:
                if u not in seen:
                    seen.add(u)
                    out.append(u)
        return out


class KernelReader:
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
        self.site = site  # read for a call site: parameters the caller did not type stay open
        self.site_key: tuple[Any, ...] | None = None  # the memo key of this call-site reading
        # constexpr parameters this reading takes one value of (Triton compiles each value of
        # a constexpr on its own, folding the branches on it): ``constexpr_cases``
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
    def _shape(self) -> tuple[set[str], set[str], set[str]]:
        """What the body says of its names, in one walk: those that reach the pointer
        argument of a load/store/atomic/descriptor as its pointer, and the integers: every
        other name of those expressions (offsets), and names inside masks, shapes, ranges
        and aranges (a float cannot index)."""
        names: set[str] = set()
        every: set[str] = set()
        ints: set[str] = set()
        dtypes: set[str] = set()  # names used as a dtype: x.to(D), dtype=D, tl.full(s, v, D)
        assigns: list[tuple[set[str], set[str], set[str]]] = []
        for node in ast.walk(self.fn):
            if isinstance(node, ast.Assign):
                targets = {t.id for t in node.targets if isinstance(t, ast.Name)}
                if targets:
                    all_names = {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}
                    assigns.append((targets, _pointer_terms(node.value), all_names))
                continue
            if not isinstance(node, ast.Call):
                continue
            for k in node.keywords:
                if k.arg in ("dtype", "out_dtype") and isinstance(k.value, ast.Name):
                    dtypes.add(k.value.id)
            if isinstance(node.func, ast.Attribute) and node.func.attr in ("to", "cast"):
                spot = node.args[1] if node.func.attr == "cast" and len(node.args) > 1 else (
                    node.args[0] if node.args else None
                )  # fmt: skip
                if isinstance(spot, ast.Name):
                    dtypes.add(spot.id)
            tl = self.r.tl_name(node.func)
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
                first = node.args[0] if node.args else self.kw(node, "base")
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
        return names, ints | (every - names) | names, dtypes

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
            known = self.ctx.shapes[id(self.fn)] = self._shape()
        pointers, offsets, dtype_names = known
        sig = self.launch.signature if self.launch else {}
        cx = self.launch.constexprs if self.launch else {}
        for p in params:
            name = p.arg
            constexpr = p.annotation is not None and (
                (self.r.qualname(p.annotation) or "").endswith("constexpr")
                or (isinstance(p.annotation, ast.Constant) and p.annotation.value == "constexpr")
            )
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

    def _dtype_param(self, name: str) -> Val:
        """A constexpr parameter used as a dtype (``x.to(OUT_DTYPE)``) that no launch gave:
        the declared dtypes, else a type variable admitting every dtype."""
        declared = self.ctx.declaration.dtypes_of(self.fn.name, name)
        if declared:
            pick = declared[self.variant] if self.variant < len(declared) else None
            return Val(dtype=frozenset({pick} if pick else declared))
        tied = self.launch.ties.get(name) if self.launch else None
        # tied by the host to a pointer's dtype (``D[x.dtype]``): that pointer's variable
        var = type_var(self.fn.name, tied) if tied else type_var(self.fn.name, name, dtype=True)
        names = self.narrow.get(var, ELEM_DTYPES)
        return Val(dtype=names, vars=frozenset({var}), per=identity(names))

    def _pointer_param(self, name: str) -> Val:
        """A pointer parameter no launch typed: the team's declared dtypes, else a type
        variable (its element type), admitting every dtype the code does not rule out."""
        declared = self.ctx.declaration.dtypes_of(self.fn.name, name)
        if declared:
            pick = declared[self.variant] if self.variant < len(declared) else None
            return Val(frozenset({pick} if pick else declared), pointer=True)
        # host code passing one dtype to several pointers (``y = torch.empty_like(x)``): one
        # variable, named by the first of them
        tied = self.launch.ties.get(name, name) if self.launch else name
        var = type_var(self.fn.name, tied)
        kinds = self.narrow.get(var, ELEM_DTYPES)
        return Val(kinds, pointer=True, vars=frozenset({var}), per=identity(kinds))

    # -- helpers
    def _dtype_name(self, text: str) -> str | None:
        return self.map.dtypes.get(text)

    def _dtype_of_expr(self, expr: ast.expr | None) -> frozenset[str] | None:
        """The dtypes a dtype expression names: ``tl.float16``, ``torch.half``, a constexpr
        parameter holding one (from a launch), ``x.dtype``; None when unknown."""
        return self._dtype_val(expr).kinds

    def _dtype_cond(self, test: ast.expr) -> tuple[str, frozenset[str], frozenset[str]] | None:
        """A condition on the dtype of one type variable (``x.dtype.is_int()``,
        ``dtype is tl.bfloat16``, their ``not``/``and``/``or``, ``tl.constexpr(...)``): the
        variable, and the dtypes for which it is true and false; None for any other test."""
        got = self._dtype_truth(test)
        if got is None:
            return None
        var, table = got
        yes = frozenset(d for d, t in table.items() if t)
        return var, yes, frozenset(table) - yes

    def _dtype_truth(self, test: ast.expr) -> tuple[str, dict[str, bool]] | None:
        if isinstance(test, ast.Call) and self.r.tl_name(test.func) == "constexpr" and test.args:
            return self._dtype_truth(test.args[0])
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            inner = self._dtype_truth(test.operand)
            return None if inner is None else (inner[0], {d: not t for d, t in inner[1].items()})
        if isinstance(test, ast.BoolOp):
            parts = [self._dtype_truth(v) for v in test.values]
            if any(p is None for p in parts) or len({p[0] for p in parts if p}) != 1:
                return None
            var = parts[0][0]  # type: ignore[index]
            tables = [p[1] for p in parts if p]
            keys = set(tables[0]).intersection(*tables[1:])
            join = all if isinstance(test.op, ast.And) else any
            return var, {d: join(t[d] for t in tables) for d in keys}
        pred: Callable[[str], bool] | None = None
        subject: ast.expr | None = None
        if (
            isinstance(test, ast.Call)
            and isinstance(test.func, ast.Attribute)
            and not test.args
            and test.func.attr in self.map.dtype_predicates
        ):
            holds = self.map.dtype_predicates[test.func.attr]
            subject, pred = test.func.value, holds.__contains__
        elif isinstance(test, ast.Compare) and len(test.ops) == 1:
            op, right = test.ops[0], test.comparators[0]
            named = self._dtype_val(right).kinds
            if named is not None and len(named) == 1 and isinstance(op, ast.Eq | ast.Is):
                subject, pred = test.left, named.__contains__
            elif named is not None and len(named) == 1 and isinstance(op, ast.NotEq | ast.IsNot):
                subject, pred = test.left, (lambda d, n=named: d not in n)
        if subject is None or pred is None:
            return None
        v = self._dtype_val(subject)
        if len(v.vars) != 1 or v.per is None or v.cand is not None:
            return None  # (a dtype that differs per release: each branch for every dtype)
        table: dict[str, bool] = {}
        for d, ks in v.per:
            truths = {pred(k) for k in ks}
            if len(truths) != 1:
                return None  # the subject is not one dtype for this dtype of the variable
            table[d] = truths.pop()
        return next(iter(v.vars)), table

    def _dtype_val(self, expr: ast.expr | None) -> Val:
        """The dtypes a dtype expression names, as a value: kinds, and the type variables
        they stand for (``x_ptr.dtype.element_ty`` names the element type of ``x_ptr``)."""
        if expr is None:
            return UNKNOWN
        if isinstance(expr, ast.Call) and self.r.tl_name(expr.func) == "constexpr" and expr.args:
            return self._dtype_val(expr.args[0])  # tl.constexpr(x.dtype): the same dtype
        if isinstance(expr, ast.Attribute):
            base = expr.value
            if (
                expr.attr == "element_ty"
                and isinstance(base, ast.Attribute)
                and base.attr in ("dtype", "type")
            ):
                # ptr.dtype.element_ty (ptr.type.element_ty): what the pointer points to
                v = self.ev(base.value, record=False)
                return _elem(v) if v.pointer and v.kinds else UNKNOWN
            if expr.attr == "dtype":
                v = self.ev(expr.value, record=False)
                ok = v.kinds and not (v.kinds & SCALAR_KINDS)
                return _elem(v) if ok else UNKNOWN
            name = self._dtype_name(expr.attr)
            q = self.r.qualname(expr) or ""
            if name and (q.startswith(("triton.", "torch.")) or self.r.tl_name(expr)):
                return _k(name)
        if isinstance(expr, ast.Name):
            known = self.env.get(expr.id)
            if known is not None and known.dtype not in (False, None):
                return per_side(_dtype_names, known)
            g = self.globals.get(expr.id) if known is None else None
            if g is not None and not isinstance(g, ast.Name):
                # a module's dtype constant (`ACC: tl.constexpr = tl.float32`), as a default
                # (`DTYPE: tl.constexpr = ACC`) or in the body
                return self._dtype_val(g)
        if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
            name = self._dtype_name(expr.value)
            return _k(name) if name else UNKNOWN
        return UNKNOWN

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
            if v.kinds != self.narrow.get(var, ELEM_DTYPES):
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
            )
        )

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
            if node.id in self.env:
                return self.env[node.id]
            g = self.globals.get(node.id)
            if g is not None:
                self.use("rule.global_read", node, name=node.id)
                if isinstance(g, ast.Call) and len(g.args) == 1:
                    # NAME = tl.constexpr(0) (or -1, or a literal constant named above it):
                    # a constexpr of that value
                    arg = g.args[0]
                    if isinstance(arg, ast.Name) and isinstance(
                        self.globals.get(arg.id), ast.Constant
                    ):
                        arg = self.globals[arg.id]
                    try:
                        kind = _scalar_of(ast.literal_eval(arg))
                    except (ValueError, TypeError, SyntaxError, RecursionError):
                        kind = None
                    return _k(kind) if kind else UNKNOWN
                return self.ev(g, record=False) if isinstance(g, ast.Constant) else UNKNOWN
            return UNKNOWN
        if isinstance(node, ast.Attribute):
            named = self._dtype_val(node)
            if named.kinds is not None:
                return per_side(_as_dtype, named)
            base = self.ev(node.value)
            if node.attr == "T":
                return base
            if node.attr == "numel" and base.kinds is not None and not base.pointer:
                return _k("cx_int")  # a tensor's element count: a compile-time int
            if self.r.qualname(node):
                q = self.r.qualname(node) or ""
                if q.startswith("triton."):
                    self.use("name", node, name=q)
            return UNKNOWN
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
            self.ev(node.test)
            split = self._dtype_cond(node.test)
            if split is None:
                return _union([self.ev(node.body), self.ev(node.orelse)])
            var, yes, no = split
            sides = []
            for expr, dom in ((node.body, yes), (node.orelse, no)):
                saved = self.env
                self.env = {k: restrict(v, var, dom) for k, v in saved.items()}
                try:
                    sides.append(on_domain(self.ev(expr), var, dom))
                finally:
                    self.env = saved
            return _union(sides)
        if isinstance(node, ast.Call):
            return self._call(node)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.ev(child)
        return UNKNOWN

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
                self.use("name", node, name=q)
                if args and any(q.startswith(p) for p in self.map.same_dtype_calls):
                    # libdevice math: computed in its input's dtype
                    return per_side(lambda v: Val(v.kinds), args[0])
                return UNKNOWN
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
                    return self._follow(here, args, kwargs, self.helpers)
            elsewhere = self.lookup(q) if self.lookup and q else []
            if elsewhere and self.depth >= MAX_INLINE:
                self.ctx.unfollowed |= {id(h.fn) for h in elsewhere}
                elsewhere = []
            if elsewhere:  # a @triton.jit helper of another file of the tree
                self.use("rule.jit_call", node, name=name or q or "")
                kwargs = {k.arg: self.ev(k.value, record=False) for k in node.keywords if k.arg}
                # every definition (one per branch of an if/try); one that returns nothing
                # (`tl.static_assert(False, ...)` for releases without the feature) gives the
                # caller no value to type, so the others decide what the call returns
                got = [self._follow(h, args, kwargs, None) for h in elsewhere]
                valued = [v for h, v in zip(elsewhere, got, strict=True) if _gives_value(h.fn)]
                got = valued or got
                return _union(got) if len(got) > 1 else got[0]
            if name in self.map.same_dtype_names and args and name not in self.env:
                return _elem(args[0])  # `exp2 = shim.exp2`: libdevice math, input's dtype
            if name and name in self.map.shim_results and name not in self.env:
                return _k(self.map.shim_results[name])  # a shim's program_id: int32
            return UNKNOWN
        if method is not None:
            base = self.ev(func.value)  # type: ignore[attr-defined]
            return self._method(node, method, base)
        return self._tl_call(node, tl or "")

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
    ) -> Val:
        """What helper ``h`` returns for these argument types, reading it once per distinct
        set of them (typed per call site); its uses are kept in the shared context."""
        key = (id(h.fn), tuple(args), tuple(sorted(kwargs.items())), self.depth)
        self.ctx.edges.setdefault(self.site_key or self.ctx.root, set()).add(key)
        if key in self.ctx.memo:
            self.int_vars |= self.ctx.int_vars.get(key, frozenset())
            self._exclude(self.ctx.excluded.get(key, {}))
            return self.ctx.memo[key]
        self.ctx.memo[key] = UNKNOWN  # a recursive call of itself: not followed
        sub = KernelReader(
            h.fn, h.resolver, self.map, h.path, h.globals, None, h.jit_names, h.lines,
            helpers, self.depth + 1, self.lookup, ctx=self.ctx, site=True,
        )  # fmt: skip
        sub.site_key = key
        got = sub.returned(args, kwargs)
        if self.launch is not None and self.launch.test:
            sub.uses = [replace(u, test=self.launch.test) for u in sub.uses]
        self.ctx.memo[key] = got
        self.ctx.int_vars[key] = frozenset(sub.int_vars)
        self.ctx.excluded[key] = {k: set(v) for k, v in sub.excluded.items()}
        self.int_vars |= sub.int_vars
        self._exclude(sub.excluded)
        self.ctx.site_uses[key] = sub.uses
        self.ctx.called.add(id(h.fn))
        return got

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
        if name == "load":
            ptr = args[0] if args else UNKNOWN
            # what a pointer holds (its element type, a type variable if only the pointer
            # parameter says); else unknown
            held = _elem(ptr) if ptr.pointer else UNKNOWN
            self.use("load", node, (held,), masked=str("mask" in kws).lower())
            other = self.kw(node, "other")
            if other is not None and _float_literal(other) and len(held.vars) == 1:
                # masked-off lanes filled with a float (0.0, -inf): the code reads floats
                # through this pointer; an integer element type is none the code admits
                self._exclude({next(iter(held.vars)): set(INT_ELEM)})
            return held
        if name == "store":
            ptr = args[0] if args else UNKNOWN
            self.use("store", node, (per_side(lambda v: Val(v.kinds, vars=v.vars), ptr),),
                     masked=str("mask" in kws).lower())  # fmt: skip
            return UNKNOWN
        if name in self.map.call_result:  # tl.rand, tl.randn: a fixed result dtype
            return _k(self.map.call_result[name])
        if name == "dot":
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
        if fam and fam.startswith("atomic."):
            ptr = args[0] if args else UNKNOWN
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
        if fam and fam.startswith(("binary_fn.", "binary_int_fn.")):
            a = args[0] if args else UNKNOWN
            b = args[1] if len(args) > 1 else UNKNOWN
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
            return self._reduced(name, x, node)
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
            v = self.ev(s.value)
            for t in s.targets:
                self.bind(t, v)
        elif isinstance(s, ast.AnnAssign):
            if s.value is not None:
                self.bind(s.target, self.ev(s.value))
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
            self.bind(s.target, cur if keep else self._binop(op, cur, v))
        elif isinstance(s, ast.For):
            it = self.ev(s.iter)
            loop_var = _k("cx_int") if self._is_static(s.iter) else _k("arg_i32")
            self.bind(s.target, loop_var if it.items is None else UNKNOWN)
            self._settle(s.body)
            for b in s.body:
                self.stmt(b)
            for b in s.orelse:
                self.stmt(b)
        elif isinstance(s, ast.While):
            self.use("rule.while_loop", s)
            self._settle(s.body)
            self.ev(s.test)
            for b in [*s.body, *s.orelse]:
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

    def _settle(self, body: Sequence[ast.stmt]) -> None:
        """Run a loop body once without recording, so that the values it carries round take
        their loop type: Triton makes a scalar initial value (``m = float("-inf")``) a tensor
        of the type the body gives it, so the first iteration never computes on the literal."""
        saved, settling = self.uses, self.settling
        self.uses, self.settling = [], True
        try:
            # to a fixpoint (two passes at most; one inside a loop being settled, so that
            # nested loops stay linear): a value carried round may change what it feeds
            for _ in range(1 if settling else MAX_SETTLE):
                before = dict(self.env)
                for b in body:
                    self.stmt(b)
                if self.env == before:
                    break
        finally:
            self.uses, self.settling = saved, settling

    def _is_static(self, it: ast.expr) -> bool:
        return isinstance(it, ast.Call) and self.r.tl_name(it.func) == "static_range"


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


def module_globals(tree: ast.Module, resolver: Resolver | None = None) -> dict[str, ast.expr]:
    """``{name: value}`` of a module's literal and constexpr globals; with ``resolver``, also
    the literal constants it imports by name from a scanned module (``from kernels.config
    import GROUP as _GROUP``, then ``G = tl.constexpr(_GROUP)``: an int)."""
    out: dict[str, ast.expr] = dict(_imported_constants(tree, resolver)) if resolver else {}
    for s in tree.body:
        if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name):
            if isinstance(s.value, ast.Constant) or (
                isinstance(s.value, ast.Call) and "constexpr" in ast.unparse(s.value.func)
            ):
                out[s.targets[0].id] = s.value
        elif isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name) and s.value:
            out[s.target.id] = s.value
    return out


def _imported_constants(tree: ast.Module, resolver: Resolver) -> Iterator[tuple[str, ast.Constant]]:
    """The literal constants ``tree`` imports by name, through the scanner's own resolution
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
            if isinstance(value, ast.Constant):
                yield local, value


def jit_functions(
    tree: ast.AST, resolver: Resolver
) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """Every ``@triton.jit`` function of ``tree`` (nested ones, in test functions, too)."""
    return [
        n
        for n in _statements(tree)
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
        and any(resolver.is_jit(d) for d in n.decorator_list)
    ]


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


# A constexpr value unequal to every constant the kernel compares the parameter with (the
# host may pass any): ``==`` is false, ``!=`` true, its truth unknown.
OTHER_VALUE = object()
# At most this many readings of one kernel for its constexpr branches (the product of each
# parameter's values); beyond it the kernel is read once with every branch joined, as before.
MAX_CONSTEXPR_CASES = 8
_NO_CONST = object()


def _const_of(e: ast.expr, glob: Mapping[str, ast.expr], depth: int = 0) -> object:
    """The Python value of a literal, a negated literal, ``tl.constexpr(literal)`` or a module
    constant bound to one; ``_NO_CONST`` otherwise."""
    if depth > 4:
        return _NO_CONST
    if isinstance(e, ast.Constant) and isinstance(e.value, int | float | str | bool | None):
        return e.value
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
        v = _const_of(e.operand, glob, depth + 1)
        return -v if isinstance(v, int | float) and not isinstance(v, bool) else _NO_CONST
    if isinstance(e, ast.Call) and len(e.args) == 1 and "constexpr" in ast.unparse(e.func):
        return _const_of(e.args[0], glob, depth + 1)
    if isinstance(e, ast.Name) and e.id in glob:
        return _const_of(glob[e.id], glob, depth + 1)
    return _NO_CONST


def static_truth(
    test: ast.expr, fixed: Mapping[str, object], glob: Mapping[str, ast.expr]
) -> bool | None:
    """Whether ``test`` holds for the constexpr values ``fixed`` (None: it depends on more than
    them). Reads a fixed name, ``not``, ``and``/``or`` and ``NAME ==``/``!=`` a constant."""
    if not fixed:
        return None
    if isinstance(test, ast.Name) and test.id in fixed:
        v = fixed[test.id]
        return None if v is OTHER_VALUE else bool(v)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        t = static_truth(test.operand, fixed, glob)
        return None if t is None else not t
    if isinstance(test, ast.BoolOp):
        parts = [static_truth(v, fixed, glob) for v in test.values]
        stop = isinstance(test.op, ast.Or)  # the value that decides: True for or, False for and
        if any(p is stop for p in parts):
            return stop
        return (not stop) if all(p is not None for p in parts) else None
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        op, left, right = test.ops[0], test.left, test.comparators[0]
        if not isinstance(op, ast.Eq | ast.NotEq | ast.Is | ast.IsNot):
            return None
        if isinstance(right, ast.Name) and right.id in fixed:
            left, right = right, left
        if not (isinstance(left, ast.Name) and left.id in fixed):
            return None
        c = _const_of(right, glob)
        if c is _NO_CONST:
            return None
        v = fixed[left.id]
        same = v is not OTHER_VALUE and v == c
        return same if isinstance(op, ast.Eq | ast.Is) else not same
    return None


def constexpr_cases(
    fn: ast.FunctionDef | ast.AsyncFunctionDef,
    glob: Mapping[str, ast.expr],
    given: Iterable[str] = (),
) -> list[dict[str, object]]:
    """The readings a kernel's branches on its constexpr parameters ask for: one per
    combination of each parameter's values (the constants it is compared with, plus one
    unequal to all of them; True and False where it is tested bare). Triton compiles each
    value apart, so values from different branches never meet; reading all branches joined
    pairs them (an fp32 accumulator of one mode with the narrow input of another). A parameter
    the launch fixes (``given``) or the body rebinds is not enumerated; more than
    ``MAX_CONSTEXPR_CASES`` combinations: one joined reading, as before."""
    params = [a for a in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]
              if a.annotation is not None and "constexpr" in ast.unparse(a.annotation)]  # fmt: skip
    names = {a.arg for a in params} - set(given)
    stored = {
        n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    names -= stored
    values: dict[str, list[object]] = {}
    for node in ast.walk(fn):
        if not isinstance(node, ast.If):
            continue
        for t in ast.walk(node.test):
            if (
                isinstance(t, ast.Compare)
                and len(t.ops) == 1
                and isinstance(t.ops[0], ast.Eq | ast.NotEq | ast.Is | ast.IsNot)
            ):
                for a, b in ((t.left, t.comparators[0]), (t.comparators[0], t.left)):
                    if isinstance(a, ast.Name) and a.id in names:
                        c = _const_of(b, glob)
                        if c is not _NO_CONST:
                            seen = values.setdefault(a.id, [OTHER_VALUE])
                            if c not in seen:
                                seen.append(c)
    for node in ast.walk(fn):  # tested bare (`if A and not B:`): True and False
        if isinstance(node, ast.If):
            for t in ast.walk(node.test):
                if isinstance(t, ast.Name) and t.id in names and t.id not in values:
                    values[t.id] = [True, False]
    cases: list[dict[str, object]] = [{}]
    for name, vals in sorted(values.items()):
        cases = [{**c, name: v} for c in cases for v in vals]
        if len(cases) > MAX_CONSTEXPR_CASES:
            return [{}]
    return cases


def _gives_value(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether ``fn`` has a ``return`` with a value (nested functions' returns are theirs)."""
    todo: list[ast.AST] = list(fn.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Return) and node.value is not None:
            return True
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(node))
    return False


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
        typed: Sequence[Launch | None] = launches.get(fn.name) or [None]
        for launch in typed:
            cases = constexpr_cases(fn, glob, set(launch.constexprs) if launch else set())
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
    offset), its uses then typed as such."""
    narrow: dict[str, frozenset[str]] = {}
    for param, admitted in (launch.domains if launch else {}).items():
        # the dtypes the host admits (``assert x.dtype in ...``, a table's keys) for the
        # variable named by ``param``: a pointer's element type or the dtype it holds
        for dtype in (False, True):
            narrow[type_var(fn.name, param, dtype=dtype)] = admitted
    for _ in range(MAX_NARROW):
        keys = set(ctx.memo)
        reader = KernelReader(fn, resolver, umap, path, glob, launch, names, lines, helpers, 0,
                              lookup, ctx=ctx, variant=variant, narrow=narrow,
                              fixed=fixed)  # fmt: skip
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
            return uses
        narrow.update(more)
        for key in set(ctx.memo) - keys:  # call sites read with the wider types
            ctx.memo.pop(key, None)
            ctx.site_uses.pop(key, None)
    return uses
