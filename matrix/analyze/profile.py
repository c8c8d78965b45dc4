"""A team's usage profile: what its kernels do, with operand kinds, file:line, kernel and test.

The gate asks one question of every change it finds: does this team's code use it? The profile
answers it. It is built by reading each ``@triton.jit`` function with ``ast`` and inferring,
as far as the source allows, the kind of every value: a dtype as the fingerprint spells it
(``float16``, ``uint8``), or a scalar kind (``lit_int`` a literal, ``cx_int`` a
``tl.constexpr``, ``arg_i32`` a runtime argument, ...). Each operation becomes a ``Use``:
``binary.sub`` with operands ``(uint8, cx_int)`` at ``k.py:12`` in kernel ``dequant``.

Kinds come from the code itself (``.to(tl.bfloat16)``, ``dtype=`` arguments, ``tl.zeros``,
``tl.arange``, ``tl.constexpr`` parameters and their defaults, bitcasts, literals), and from a
captured launch where a test ran the kernel (its signature types the pointer and scalar
arguments, its constexprs their values: ``Launch``). Where a kind cannot be inferred the
operand is unknown (``None``) and a change to that op "may affect" the code: it blocks, naming
the line (fail closed, but precisely).

``match`` maps a fingerprint cell, a probe row or a Triton name onto the profile
(``matrix/data/usage_map.toml`` holds every table): ``USED`` with the uses that do it,
``MAY_AFFECT`` with the uses whose kinds are unknown, or ``NOT_USED``.

This module reads trees; resolving names across a scanned tree (re-exported ``tl``, relative
imports) is the scanner's job: ``profile_module`` takes any object with the scanner's
``Imports`` methods (``tl_name``, ``qualname``, ``is_jit``), so that analyze/ never imports
the scanner (the gate passes them in).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

from matrix.core import DATA_DIR, DataFileError, load_toml

MAP_PATH = DATA_DIR / "usage_map.toml"
FINGERPRINT_PATH = DATA_DIR / "fingerprint.toml"

USED, MAY_AFFECT, NOT_USED = "used", "may affect", "not used"

Kinds = frozenset[str] | None  # the operand kinds a value may have; None: not inferable
INT_DTYPES = frozenset({"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"})
FLOAT_DTYPES = frozenset(
    {"float8e4nv", "float8e5", "float8e4b15", "float8e4b8", "float8e5b16", "float16",
     "bfloat16", "float32", "float64"}
)  # fmt: skip
SCALAR_KINDS = frozenset(
    {"lit_int", "lit_float", "lit_bool", "cx_int", "cx_float", "arg_i32", "arg_i64", "arg_f32"}
)
RUNTIME_INT = frozenset({"arg_i32", "arg_i64"})
RUNTIME_ANY = frozenset({"arg_i32", "arg_i64", "arg_f32"})
WIDTH = {
    "int1": 1, "int8": 8, "uint8": 8, "int16": 16, "uint16": 16, "int32": 32, "uint32": 32,
    "int64": 64, "uint64": 64, "float8e4nv": 8, "float8e5": 8, "float8e4b15": 8,
    "float8e4b8": 8, "float8e5b16": 8, "float16": 16, "bfloat16": 16, "float32": 32,
    "float64": 64,
}  # fmt: skip


class Resolver(Protocol):
    """The scanner's ``Imports`` as this module uses it."""

    def tl_name(self, expr: ast.expr) -> str | None: ...
    def qualname(self, expr: ast.expr) -> str | None: ...
    def is_jit(self, decorator: ast.expr) -> bool: ...


@dataclass(frozen=True)
class UsageMap:
    """``matrix/data/usage_map.toml``, read once."""

    dtypes: Mapping[str, str]
    launch_scalars: Mapping[str, str]
    operators: Mapping[str, str]
    functions: Mapping[str, str]
    values_ops: Mapping[str, str]
    rules: Mapping[str, str]
    runtime: Mapping[str, Sequence[str]]
    probes: Mapping[str, Mapping[str, Any]]
    values_groups: Mapping[str, str]  # fingerprint values group -> its op (fingerprint.toml)


@lru_cache(maxsize=4)
def load_map(path: str | Path = MAP_PATH, fingerprint: str | Path = FINGERPRINT_PATH) -> UsageMap:
    doc = load_toml(path)
    tables = ("dtypes", "launch_scalars", "operators", "functions", "values_ops", "rules")
    for key in (*tables, "runtime", "probes"):
        if not isinstance(doc.get(key), dict):
            raise DataFileError(path, key, "a table", doc.get(key))
    for name, row in doc["probes"].items():
        if not isinstance(row, dict) or set(row) - {"project", "names", "keywords", "ops"}:
            raise DataFileError(path, f"probes.{name}", "project/names/keywords/ops", row)
    groups = {}
    for i, v in enumerate(load_toml(fingerprint).get("values", [])):
        if not isinstance(v, dict) or not isinstance(v.get("group"), str):
            raise DataFileError(fingerprint, f"values[{i}]", "a table with group and op", v)
        groups[v["group"]] = str(v.get("op"))
    d, lo, op, fn, vo, ru = (doc[k] for k in tables)
    return UsageMap(d, lo, op, fn, vo, ru, doc["runtime"], doc["probes"], groups)


# -------------------------------------------------------------------------------------- uses


@dataclass(frozen=True)
class Use:
    """One thing the code does: ``op`` (``binary.sub``, ``cast.bitcast``, ``dot``,
    ``atomic.add``, ``name``, ``keyword``, ``rule.while_loop``) with its operand kinds (one
    set per operand; None where not inferable), attributes (dot: acc/out/prec; atomics:
    sem/scope; names: the qualname), and where: file, line, kernel, and the test that
    launched it (from a captured launch)."""

    op: str
    operands: tuple[Kinds, ...] = ()
    attrs: tuple[tuple[str, str], ...] = ()
    path: str = ""
    line: int = 0
    kernel: str = ""
    test: str = ""
    code: str = ""

    def attr(self, name: str, default: str = "") -> str:
        return dict(self.attrs).get(name, default)

    @property
    def where(self) -> str:
        text = f"{self.path}:{self.line}"
        if self.kernel:
            text += f" in {self.kernel}"
        if self.test:
            text += f" (test {self.test})"
        return text

    def operand_text(self) -> str:
        return ",".join("?" if k is None else "|".join(sorted(k)) for k in self.operands)

    def describe(self) -> str:
        ops = f"[{self.operand_text()}]" if self.operands else ""
        extra = "".join(f" {k}={v}" for k, v in self.attrs if k != "name")
        name = f" {self.attr('name')}" if self.attr("name") else ""
        code = f": {self.code}" if self.code else ""
        return f"{self.where}: {self.op}{ops}{name}{extra}{code}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "operands": [None if k is None else sorted(k) for k in self.operands],
            "attrs": dict(self.attrs),
            "path": self.path,
            "line": self.line,
            "kernel": self.kernel,
            "test": self.test,
            "code": self.code,
        }


@dataclass
class Profile:
    """Every use of the team's code; ``kernels`` names each kernel read (path:line)."""

    uses: list[Use] = field(default_factory=list)
    kernels: dict[str, str] = field(default_factory=dict)  # kernel -> "path:line"
    sources: list[str] = field(default_factory=list)  # what was read: paths, launches
    notes: list[str] = field(default_factory=list)

    def extend(self, other: Profile) -> None:
        self.uses += other.uses
        self.kernels.update(other.kernels)
        self.sources += other.sources
        self.notes += other.notes

    def by_op(self) -> dict[str, list[Use]]:
        table: dict[str, list[Use]] = {}
        for u in self.uses:
            table.setdefault(u.op, []).append(u)
        return table

    def to_dict(self) -> dict[str, Any]:
        return {
            "kernels": self.kernels,
            "sources": self.sources,
            "notes": self.notes,
            "uses": [u.to_dict() for u in self.uses],
        }


@dataclass(frozen=True)
class Launch:
    """What a captured launch says about a kernel's arguments: the Triton type of each
    non-constexpr argument (``*fp16``, ``i32``) and each constexpr's value; ``test`` launched
    it."""

    signature: Mapping[str, str]
    constexprs: Mapping[str, Any]
    test: str = ""


# ------------------------------------------------------------------------------ value kinds


@dataclass(frozen=True)
class Val:
    """What the inference knows of a value: its kinds (dtypes or scalar kinds; None unknown),
    whether it is a pointer (kinds are then the element dtypes), or a dtype object (``dtype``
    holds the dtypes it may name), or a tuple of values."""

    kinds: Kinds = None
    pointer: bool = False
    dtype: Kinds | bool = False  # False: not a dtype; None: a dtype, not inferable
    items: tuple[Val, ...] | None = None


UNKNOWN = Val()


def _k(*names: str) -> Val:
    return Val(frozenset(names))


def _promote(a: Kinds, b: Kinds) -> Kinds:
    """The result kinds of a binary op: the tensor side's dtype against a scalar, the wider
    (float over int) of two dtypes; unknown when either side is. Approximate by design: the
    exact result is what the fingerprint measures per release; the profile only needs the
    kinds that flow into the next op."""
    if a is None or b is None:
        return None
    out: set[str] = set()
    for x in a:
        for y in b:
            xs, ys = x in SCALAR_KINDS, y in SCALAR_KINDS
            if xs and ys:
                out.add(x if x.startswith(("arg", "cx")) else y)
            elif xs or ys:
                tensor, scalar = (y, x) if xs else (x, y)
                if tensor in INT_DTYPES and scalar in ("lit_float", "cx_float", "arg_f32"):
                    out.add("float32")
                else:
                    out.add(tensor)
            else:
                fx, fy = x in FLOAT_DTYPES, y in FLOAT_DTYPES
                if fx != fy:
                    out.add(x if fx else y)
                else:
                    out.add(x if WIDTH.get(x, 0) >= WIDTH.get(y, 0) else y)
    return frozenset(out)


def _union(vals: Iterable[Val]) -> Val:
    kinds: set[str] = set()
    for v in vals:
        if v.kinds is None:
            return UNKNOWN
        kinds |= v.kinds
    return Val(frozenset(kinds))


def _scalar_of(value: Any) -> str | None:
    if isinstance(value, bool):
        return "lit_bool"
    if isinstance(value, int):
        return "cx_int"
    if isinstance(value, float):
        return "cx_float"
    return None


# ----------------------------------------------------------------------------- the reading


PASS_THROUGH = frozenset(
    {"reshape", "view", "trans", "permute", "expand_dims", "broadcast_to", "ravel", "reverse",
     "flip", "advance", "multiple_of", "max_contiguous", "max_constancy", "static_assert"}
)  # fmt: skip
INT32_RESULTS = frozenset({"arange", "program_id", "num_programs", "argmax", "argmin"})
INT_CONTEXT = frozenset({"arange", "zeros", "full", "reshape", "view", "static_range", "cdiv"})
POINTER_ARG = {"load": 0, "store": 0, "make_block_ptr": 0, "make_tensor_descriptor": 0}
BUILTIN_RULES = {
    "min": "rule.builtin_min", "max": "rule.builtin_max", "abs": "rule.builtin_abs",
    "len": "rule.builtin_len", "isinstance": "rule.builtin_isinstance",
    "int": "rule.builtin_int", "float": "rule.builtin_float", "print": "rule.builtin_print",
}  # fmt: skip


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
    ) -> None:
        self.fn, self.r, self.map, self.path = fn, resolver, umap, path
        self.launch = launch
        self.globals = module_globals
        self.jit_names = jit_names
        self.lines = lines
        self.uses: list[Use] = []
        self.env: dict[str, Val] = {}
        self._params()

    # -- parameters
    def _pointer_params(self) -> set[str]:
        """Parameters that reach the pointer argument of a load/store/atomic/descriptor."""
        names: set[str] = set()
        for node in ast.walk(self.fn):
            if not isinstance(node, ast.Call):
                continue
            tl = self.r.tl_name(node.func)
            if tl is None and isinstance(node.func, ast.Attribute) and node.func.attr in (
                "load", "store"
            ):  # fmt: skip
                tl = node.func.attr
            if (tl in POINTER_ARG or (tl or "").startswith("atomic_")) and node.args:
                names |= {n.id for n in ast.walk(node.args[0]) if isinstance(n, ast.Name)}
        # names assigned from pointer expressions: follow assignments back to parameters
        changed = True
        assigns = [n for n in ast.walk(self.fn) if isinstance(n, ast.Assign)]
        while changed:
            changed = False
            for a in assigns:
                targets = {t.id for t in a.targets if isinstance(t, ast.Name)}
                if targets & names:
                    roots = {n.id for n in ast.walk(a.value) if isinstance(n, ast.Name)}
                    if not roots <= names:
                        names |= roots
                        changed = True
        return names

    def _offset_params(self) -> set[str]:
        """Names inside masks, shapes, ranges and aranges: integers (a float cannot index)."""
        names: set[str] = set()
        for node in ast.walk(self.fn):
            if not isinstance(node, ast.Call):
                continue
            tl = self.r.tl_name(node.func)
            exprs: list[ast.expr] = []
            if tl in ("load", "store"):
                exprs = [k.value for k in node.keywords if k.arg == "mask"]
            elif tl in INT_CONTEXT or (isinstance(node.func, ast.Name) and node.func.id == "range"):
                exprs = list(node.args)
            for e in exprs:
                names |= {n.id for n in ast.walk(e) if isinstance(n, ast.Name)}
        return names

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
        pointers = self._pointer_params()
        offsets = self._offset_params() | pointers
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
                elif name in offsets:  # a block size: shapes, aranges, masks
                    self.env[name] = _k("cx_int")
                else:
                    # A constexpr with no default and no integer use: it may hold an int or a
                    # float, which the source cannot tell: both scalar kinds.
                    self.env[name] = Val(frozenset({"cx_int", "cx_float"}))
                continue
            if name in pointers:
                self.env[name] = Val(None, pointer=True)
            elif name in offsets:
                self.env[name] = Val(RUNTIME_INT)
            else:
                self.env[name] = Val(RUNTIME_ANY)

    # -- helpers
    def _dtype_name(self, text: str) -> str | None:
        return self.map.dtypes.get(text)

    def _dtype_of_expr(self, expr: ast.expr | None) -> frozenset[str] | None:
        """The dtypes a dtype expression names: ``tl.float16``, ``torch.half``, a constexpr
        parameter holding one (from a launch), ``x.dtype``; None when unknown."""
        if expr is None:
            return None
        if isinstance(expr, ast.Attribute):
            if expr.attr == "dtype":
                v = self.ev(expr.value, record=False)
                return v.kinds if v.kinds and not (v.kinds & SCALAR_KINDS) else None
            name = self._dtype_name(expr.attr)
            q = self.r.qualname(expr) or ""
            if name and (q.startswith(("triton.", "torch.")) or self.r.tl_name(expr)):
                return frozenset({name})
        if isinstance(expr, ast.Name):
            known = self.env.get(expr.id)
            if known is not None and known.dtype not in (False, None):
                return known.dtype  # type: ignore[return-value]
        if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
            name = self._dtype_name(expr.value)
            return frozenset({name}) if name else None
        return None

    def _code(self, node: ast.AST) -> str:
        line = getattr(node, "lineno", 0)
        return self.lines[line - 1].strip()[:120] if 0 < line <= len(self.lines) else ""

    def use(self, op: str, node: ast.AST, operands: Sequence[Val] = (), **attrs: str) -> None:
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
            )
        )

    def kw(self, call: ast.Call, name: str) -> ast.expr | None:
        return next((k.value for k in call.keywords if k.arg == name), None)

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
            return UNKNOWN
        if isinstance(node, ast.Name):
            if node.id in self.env:
                return self.env[node.id]
            g = self.globals.get(node.id)
            if g is not None:
                self.use("rule.global_read", node, name=node.id)
                return self.ev(g, record=False) if isinstance(g, ast.Constant) else UNKNOWN
            return UNKNOWN
        if isinstance(node, ast.Attribute):
            dt = self._dtype_of_expr(node)
            if dt is not None:
                return Val(dtype=dt)
            base = self.ev(node.value)
            if node.attr == "T":
                return base
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
                return Val(a.kinds if a.pointer else b.kinds, pointer=True)
            if op:
                self.use(op, node, (a, b))
            if (
                op in ("binary.truediv",)
                and a.kinds
                and b.kinds
                and (a.kinds | b.kinds) <= (INT_DTYPES | SCALAR_KINDS)
            ):
                return _k("float32")
            return Val(_promote(a.kinds, b.kinds))
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
            return _union([self.ev(node.body), self.ev(node.orelse)])
        if isinstance(node, ast.Call):
            return self._call(node)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.ev(child)
        return UNKNOWN

    def _call(self, node: ast.Call) -> Val:
        func = node.func
        tl = self.r.tl_name(func)
        method = None
        if tl is None and isinstance(func, ast.Attribute):
            q = self.r.qualname(func)
            if q is None or not q.startswith("triton."):
                method = func.attr
        if tl is None and method is None:
            q = self.r.qualname(func) if not isinstance(func, ast.Name) else None
            name = func.id if isinstance(func, ast.Name) else None
            args = [self.ev(a) for a in node.args]
            for k in node.keywords:
                self.ev(k.value)
            if q and q.startswith("triton."):
                self.use("name", node, name=q)
                return UNKNOWN
            if name in BUILTIN_RULES and name not in self.env:
                self.use(BUILTIN_RULES[name], node, args)
                return _union(args) if name in ("min", "max", "abs") else UNKNOWN
            if name == "range":
                if len(node.args) == 3:
                    self.use("rule.range_step", node, args)
                return UNKNOWN
            if name in self.jit_names:
                self.use("rule.jit_call", node, name=name)
            return UNKNOWN
        if method is not None:
            base = self.ev(func.value)  # type: ignore[attr-defined]
            return self._method(node, method, base)
        return self._tl_call(node, tl or "")

    def _method(self, node: ast.Call, name: str, base: Val) -> Val:
        args = [self.ev(a) for a in node.args]
        for k in node.keywords:
            if k.arg not in ("dtype",):
                self.ev(k.value)
        if name == "to":
            target = node.args[0] if node.args else self.kw(node, "dtype")
            return self._cast(node, base, target, self.kw(node, "bitcast"))
        if name in ("load", "store"):  # desc.load([..]) on a tensor descriptor
            self.use(f"descriptor.{name}", node, (base,))
            return Val(base.kinds) if name == "load" else UNKNOWN
        fam = self.map.functions.get(name)
        if fam and fam.startswith(("reduce.", "unary.")):
            self.use(fam, node, (base,))
            return _k("int32") if name in INT32_RESULTS else base
        if name in PASS_THROUGH:
            return base
        del args
        return UNKNOWN

    def _cast(self, node: ast.Call, src: Val, target: ast.expr | None, bitcast: Any) -> Val:
        dst = self._dtype_of_expr(target)
        is_bitcast: bool | None = isinstance(bitcast, ast.Constant) and bitcast.value is True
        if bitcast is not None and not isinstance(bitcast, ast.Constant):
            is_bitcast = None  # a constexpr flag: either
        op = "cast.bitcast" if is_bitcast else "cast.to"
        self.use(op, node, (src, Val(dst)))
        if is_bitcast is None:
            self.use("cast.to", node, (src, Val(dst)))
        return Val(dst)

    def _tl_call(self, node: ast.Call, name: str) -> Val:
        q = f"triton.language.{name}"
        keywords = [k.arg for k in node.keywords if k.arg]
        self.use("name", node, name=q)
        for k in keywords:
            self.use("keyword", node, name=k, call=q)
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
        if name in ("zeros", "full", "zeros_like", "full_like"):
            dt = self._dtype_of_expr(self.kw(node, "dtype"))
            if dt is None and name == "full" and len(node.args) > 2:
                dt = self._dtype_of_expr(node.args[2])
            if dt is None and name.endswith("_like") and args:
                return Val(args[0].kinds)
            return Val(dt)
        if name == "load":
            ptr = args[0] if args else UNKNOWN
            self.use("load", node, (Val(ptr.kinds),), masked=str("mask" in kws).lower())
            return Val(ptr.kinds)
        if name == "store":
            ptr = args[0] if args else UNKNOWN
            self.use("store", node, (Val(ptr.kinds),), masked=str("mask" in kws).lower())
            return UNKNOWN
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
            acc_text = "?" if acc.kinds is None else "|".join(sorted(acc.kinds))
            self.use("dot", node, (_union([a, b]),), acc=acc_text, out=out_text, prec=str(prec))
            if out:
                return Val(out)
            if acc.kinds and acc.kinds != {"none"}:
                return acc
            ab = _union([a, b]).kinds
            if ab is None:
                return UNKNOWN
            return _k("int32") if ab <= INT_DTYPES else _k("float32")
        if fam and fam.startswith("atomic."):
            ptr = args[0] if args else UNKNOWN
            sem = self.kw(node, "sem")
            scope = self.kw(node, "scope")

            def text(e: ast.expr | None) -> str:
                if e is None:
                    return "default"
                return str(e.value) if isinstance(e, ast.Constant) else "*"

            # the op's dtype is the pointer's element type (the value is cast to it)
            elem = Val(ptr.kinds) if ptr.pointer else UNKNOWN
            self.use(fam, node, (elem,), sem=text(sem), scope=text(scope))
            return elem
        if fam and fam.startswith(("binary_fn.", "binary_int_fn.")):
            a = args[0] if args else UNKNOWN
            b = args[1] if len(args) > 1 else UNKNOWN
            nan = self.kw(node, "propagate_nan")
            attrs = {"propagate_nan": ast.unparse(nan)} if nan is not None else {}
            self.use(fam, node, (a, b), **attrs)
            return Val(_promote(a.kinds, b.kinds))
        if name == "where":
            a = args[1] if len(args) > 1 else UNKNOWN
            b = args[2] if len(args) > 2 else UNKNOWN
            self.use("where", node, (a, b))
            return Val(_promote(a.kinds, b.kinds))
        if name == "clamp":
            x = args[0] if args else UNKNOWN
            lo = args[1] if len(args) > 1 else kw_vals.get("min", UNKNOWN)
            self.use("clamp", node, (x, lo))
            return x
        if fam and fam.startswith(("unary.", "reduce.")):
            x = args[0] if args else UNKNOWN
            self.use(fam, node, (x,))
            return _k("int32") if name in INT32_RESULTS else x
        if name == "static_range":
            self.use("rule.static_range", node)
            return UNKNOWN
        if name in (
            "make_block_ptr",
            "make_tensor_descriptor",
            "_experimental_make_tensor_descriptor",
        ):
            base = kw_vals.get("base", args[0] if args else UNKNOWN)
            return Val(base.kinds, pointer=True)
        if name in PASS_THROUGH:
            return args[0] if args else UNKNOWN
        if name == "cdiv":
            return Val(_promote(args[0].kinds, args[1].kinds)) if len(args) > 1 else UNKNOWN
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
            self.bind(s.target, Val(_promote(cur.kinds, v.kinds)))
        elif isinstance(s, ast.For):
            it = self.ev(s.iter)
            loop_var = _k("cx_int") if self._is_static(s.iter) else _k("arg_i32")
            self.bind(s.target, loop_var if it.items is None else UNKNOWN)
            for _ in range(2):  # twice: values carried round the loop settle
                for b in s.body:
                    self.stmt(b)
            for b in s.orelse:
                self.stmt(b)
        elif isinstance(s, ast.While):
            self.use("rule.while_loop", s)
            self.ev(s.test)
            for b in [*s.body, *s.orelse]:
                self.stmt(b)
        elif isinstance(s, ast.If):
            self.ev(s.test)
            for b in [*s.body, *s.orelse]:
                self.stmt(b)
        elif isinstance(s, ast.Return):
            if isinstance(s.value, ast.Tuple):
                self.use("rule.tuple_return", s)
            self.ev(s.value)
        elif isinstance(s, ast.Expr):
            self.ev(s.value)
        elif isinstance(s, ast.With):
            for b in s.body:
                self.stmt(b)
        elif isinstance(s, ast.Assert):
            self.ev(s.test)

    def _is_static(self, it: ast.expr) -> bool:
        return isinstance(it, ast.Call) and self.r.tl_name(it.func) == "static_range"


def _module_globals(tree: ast.Module) -> dict[str, ast.expr]:
    out: dict[str, ast.expr] = {}
    for s in tree.body:
        if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name):
            if isinstance(s.value, ast.Constant) or (
                isinstance(s.value, ast.Call) and "constexpr" in ast.unparse(s.value.func)
            ):
                out[s.targets[0].id] = s.value
        elif isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name) and s.value:
            out[s.target.id] = s.value
    return out


def jit_functions(
    tree: ast.AST, resolver: Resolver
) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """Every ``@triton.jit`` function of ``tree`` (nested ones, in test functions, too)."""
    return [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
        and any(resolver.is_jit(d) for d in n.decorator_list)
    ]


def profile_module(
    tree: ast.Module,
    resolver: Resolver,
    path: str,
    source: str = "",
    launches: Mapping[str, Sequence[Launch]] | None = None,
    umap: UsageMap | None = None,
    only: Iterable[str] | None = None,
    kernels: Sequence[ast.FunctionDef | ast.AsyncFunctionDef] | None = None,
) -> Profile:
    """The uses of every ``@triton.jit`` function in one parsed file. A kernel with captured
    launches (``launches[name]``) is read once per launch, typed by it; one without is read
    from its source alone. ``only`` restricts to those kernel names."""
    umap = umap or load_map()
    launches = launches or {}
    lines = source.splitlines()
    fns = list(kernels) if kernels is not None else jit_functions(tree, resolver)
    names = frozenset(f.name for f in fns)
    wanted = set(only) if only is not None else None
    out = Profile(sources=[path])
    glob = _module_globals(tree)
    for fn in fns:
        if wanted is not None and fn.name not in wanted:
            continue
        out.kernels[fn.name] = f"{path}:{fn.lineno}"
        typed: Sequence[Launch | None] = launches.get(fn.name) or [None]
        for launch in typed:
            reader = KernelReader(fn, resolver, umap, path, glob, launch, names, lines)
            out.uses += reader.run()
    return out


# ----------------------------------------------------------------------------------- matching


@dataclass
class Match:
    """How a fingerprint cell, probe row or name maps onto the profile."""

    status: str
    uses: list[Use] = field(default_factory=list)
    why: str = ""

    @property
    def blocks(self) -> bool:
        return self.status in (USED, MAY_AFFECT)


def _fits(kinds: Kinds, want: str) -> str:
    """``used`` if the operand is exactly ``want``; ``may affect`` if it may be; else not."""
    if want == "*":
        return USED if kinds is not None else MAY_AFFECT
    if kinds is None:
        return MAY_AFFECT
    if want not in kinds:
        return NOT_USED
    return USED if len(kinds) == 1 else MAY_AFFECT


def _combine(states: Iterable[str]) -> str:
    states = list(states)
    if NOT_USED in states:
        return NOT_USED
    return MAY_AFFECT if MAY_AFFECT in states else USED


def _attr_fits(value: str, want: str) -> str:
    if want == "*":
        return USED
    parts = value.split("|")
    if value in ("?", "*"):
        return MAY_AFFECT
    if want not in parts:
        return NOT_USED
    return USED if len(parts) == 1 else MAY_AFFECT


def match_uses(uses: Iterable[Use], op: str, operands: Sequence[str], **attrs: str) -> Match:
    """The uses of ``op`` whose operands (and attributes) fit: USED if one fits exactly, else
    MAY_AFFECT if one might (an operand not inferable), else NOT_USED."""
    used, maybe = [], []
    for u in uses:
        if u.op != op:
            continue
        states = [
            _fits(u.operands[i] if i < len(u.operands) else None, w) for i, w in enumerate(operands)
        ]
        states += [_attr_fits(u.attr(k, "default"), w) for k, w in attrs.items()]
        state = _combine(states) if states else USED
        if state == USED:
            used.append(u)
        elif state == MAY_AFFECT:
            maybe.append(u)
    if used:
        return Match(USED, used)
    if maybe:
        return Match(MAY_AFFECT, maybe, "an operand's dtype is not inferable from the code")
    return Match(NOT_USED)


def _split(text: str) -> list[str]:
    return [p for p in text.split(",") if p]


def parse_op_spec(spec: str) -> tuple[str, list[str], dict[str, str]]:
    """``dot[float32,acc=*,out=*,prec=default]`` -> (``dot``, [``float32``], {acc: *, ...})."""
    op, _, rest = spec.partition("[")
    operands, attrs = [], {}
    for part in _split(rest.rstrip("]")):
        if "=" in part:
            k, _, v = part.partition("=")
            attrs[k] = v
        else:
            operands.append(part)
    return op, operands, attrs


class Matcher:
    """Maps what the gate found onto one profile."""

    def __init__(self, profile: Profile, umap: UsageMap | None = None) -> None:
        self.profile = profile
        self.map = umap or load_map()
        self.ops = profile.by_op()

    def uses_of(self, op: str) -> list[Use]:
        return self.ops.get(op, [])

    def spec(self, spec: str) -> Match:
        op, operands, attrs = parse_op_spec(spec)
        return match_uses(self.uses_of(op), op, operands, **attrs)

    def names(self, qualnames: Iterable[str]) -> Match:
        wanted = set(qualnames)
        hits = [u for u in self.uses_of("name") if u.attr("name") in wanted]
        hits += [
            u
            for u in self.uses_of("name")
            if any(u.attr("name").startswith(w + ".") for w in wanted)
        ]
        return Match(USED, hits) if hits else Match(NOT_USED)

    def keywords(self, names: Iterable[str]) -> Match:
        wanted = set(names)
        hits = [u for u in self.uses_of("keyword") if u.attr("name") in wanted]
        return Match(USED, hits) if hits else Match(NOT_USED)

    def best(self, matches: Iterable[Match]) -> Match:
        matches = list(matches)
        for status in (USED, MAY_AFFECT):
            hits = [u for m in matches if m.status == status for u in m.uses]
            if hits:
                return Match(status, hits, next((m.why for m in matches if m.why), ""))
        return Match(NOT_USED)

    # -- the fingerprint
    def cell(self, group: str, case: str) -> Match:
        """``group`` as ``binary.sub`` (no ``fp.``), ``case`` as ``uint8,cx_int``."""
        family = group.partition(".")[0]
        parts = _split(case)
        if family in ("binary", "binary_fn", "binary_int_fn", "where", "clamp"):
            key = group if family not in ("where", "clamp") else family
            return match_uses(self.uses_of(key), key, parts[:2])
        if family in ("unary", "reduce"):
            return match_uses(self.uses_of(group), group, parts[:1])
        if family == "cast":
            src, _, dst = case.partition("->")
            return match_uses(self.uses_of(group), group, [src, dst])
        if family == "dot":
            _, operands, attrs = parse_op_spec(f"dot[{case}]")
            return match_uses(self.uses_of("dot"), "dot", operands, **attrs)
        if family == "atomic":
            _, operands, attrs = parse_op_spec(f"x[{case}]")
            return match_uses(self.uses_of(group), group, operands, **attrs)
        if family == "values":
            return self._values(group, case)
        if family == "rules":
            pattern = self.map.rules.get(case)
            if pattern is None:
                return Match(MAY_AFFECT, [], f"no mapping for rule {case!r} (usage_map.toml)")
            hits = self.uses_of(pattern)
            return Match(USED, hits) if hits else Match(NOT_USED)
        if family == "runtime":
            return self._runtime(case)
        if family == "warnings":
            kernel = case.split(",", 1)[0]
            names = self.map.runtime.get(f"warnings_{kernel}")
            if names is None:
                return (
                    Match(NOT_USED)
                    if kernel == "plain_kernel"
                    else Match(MAY_AFFECT, [], f"no mapping for warning kernel {kernel!r}")
                )
            return self._name_list(names)
        return Match(MAY_AFFECT, [], f"no mapping for fingerprint group fp.{group}")

    def _name_list(self, names: Sequence[str]) -> Match:
        kw = [n.split(":", 1)[1] for n in names if n.startswith("keyword:")]
        qn = [n for n in names if not n.startswith("keyword:")]
        return self.best([self.names(qn), self.keywords(kw)])

    def _runtime(self, case: str) -> Match:
        for key in sorted(self.map.runtime, key=len, reverse=True):
            if case == key or case.startswith(key + "."):
                return self._name_list(self.map.runtime[key])
        return Match(MAY_AFFECT, [], f"no mapping for runtime cell {case!r} (usage_map.toml)")

    def _values(self, group: str, case: str) -> Match:
        vop = self.map.values_groups.get(group)
        op = self.map.values_ops.get(vop or "")
        if op is None:
            return Match(MAY_AFFECT, [], f"no mapping for fp.{group} (usage_map.toml)")
        head = case.split("(", 1)[0]
        if op == "cast.to":
            src, _, dst = head.partition("->")
            return match_uses(self.uses_of(op), op, [src, dst])
        if op in ("unary", "binary", "reduce"):
            name, _, dtype = head.partition(".")
            full = f"{op}.{name}"
            n = 2 if op == "binary" else 1
            return match_uses(self.uses_of(full), full, [dtype] + ["*"] * (n - 1))
        n = 1 if op.startswith("unary") else 2
        # a values cell's operands are both of its dtype (two tensors) or a tensor and a scalar
        m = match_uses(self.uses_of(op), op, [head] + ["*"] * (n - 1))
        if m.status == NOT_USED and n == 2:
            m = match_uses(self.uses_of(op), op, ["*", head])
        return m

    # -- probe rows
    def probe(self, name: str) -> Match:
        row = self.map.probes.get(name)
        if row is None:
            return Match(MAY_AFFECT, [], f"no mapping for probe {name!r} (usage_map.toml)")
        if row.get("project"):
            return Match(NOT_USED, [], "measures this project's own kernels")
        matches = [self.names(row.get("names", [])), self.keywords(row.get("keywords", []))]
        matches += [self.spec(s) for s in row.get("ops", [])]
        return self.best(matches)

    def covers(self, paths: Sequence[str], kernels: Sequence[str], uses: Sequence[Use]) -> bool:
        """Whether every one of ``uses`` lies in ``paths`` and ``kernels`` (globs; empty: any)."""
        return all(
            (not paths or any(fnmatchcase(u.path, p) for p in paths))
            and (not kernels or any(fnmatchcase(u.kernel, k) for k in kernels))
            for u in uses
        )


# ------------------------------------------------------------------------- host-side launches

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
        for tree, kernels in trees:  # each tree with its @triton.jit functions
            self.kernel_names |= {f.name for f in kernels}
            stack: list[tuple[ast.AST, Any]] = [(tree, None)]
            while stack:
                node, fn = stack.pop()
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
                stack.extend((child, fn) for child in ast.iter_child_nodes(node))
        self._memo: dict[tuple[int, int], str | None] = {}

    def launches(self, kernel: ast.FunctionDef | ast.AsyncFunctionDef) -> list[Launch]:
        params = [a.arg for a in [*kernel.args.posonlyargs, *kernel.args.args]]
        out: list[Launch] = []
        for name, call, scope in self.launch_sites:
            if name != kernel.name:
                continue
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
        for spelling, name in self.map.dtypes.items():
            if name == dt and spelling in self.map.launch_scalars:
                return f"*{spelling}"
        return None

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
