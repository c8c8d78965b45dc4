"""The profile's data: operand kinds, the usage map (``matrix/data/usage_map.toml``), a
``Use``, a ``Profile``, a captured ``Launch`` and the inferred kind of a value (``Val``)."""

from __future__ import annotations

import ast
import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

from matrix.analyze.fingerprint import value_case
from matrix.analyze.profile.open_types import OpenTypes
from matrix.catalog import PROBES, PROBES_DIR
from matrix.core import DATA_DIR, DataFileError, load_toml

MAP_PATH = DATA_DIR / "usage_map.toml"
# The fingerprint's battery, in the fp probe's folder (read as data: nothing imports Triton).
FINGERPRINT_PATH = PROBES_DIR / "fp" / "fingerprint.toml"

USED, MAY_AFFECT, NOT_USED = "used", "may affect", "not used"

Kinds = frozenset[str] | None  # the operand kinds a value may have; None: not inferable
# What a value is for each dtype its one type variable may take: ((dtype, kinds), ...); None
# where not followed (the value's kinds then stand for every dtype of the variable alike).
Per = tuple[tuple[str, frozenset[str]], ...] | None
INT_DTYPES = frozenset({"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"})
FLOAT_DTYPES = frozenset(
    {"float8e4nv", "float8e5", "float8e4b15", "float8e4b8", "float8e5b16", "float16",
     "bfloat16", "float32", "float64"}
)  # fmt: skip
SCALAR_KINDS = frozenset(
    {"lit_int", "lit_float", "lit_bool", "cx_int", "cx_float", "arg_i32", "arg_i64", "arg_f32"}
)
# what the code generator computes in Python, never in a tensor: literals and constexprs
COMPILE_TIME_KINDS = frozenset({"lit_int", "lit_float", "lit_bool", "cx_int", "cx_float"})
ELEM_DTYPES = INT_DTYPES | FLOAT_DTYPES | {"int1"}  # what a pointer may point to
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
    same_dtype_calls: Sequence[str] = ()  # Triton name prefixes whose result has arg 0's dtype
    # tl.dot's result dtype by input dtype ("*": any other) with no acc= and no out_dtype=
    dot_result: Mapping[str, str] = field(default_factory=lambda: {"*": "float32"})
    sum_names: frozenset[str] = frozenset()  # reductions that widen narrow integers
    sum_result: Mapping[str, str] = field(default_factory=dict)  # their widened dtypes
    call_result: Mapping[str, str] = field(default_factory=dict)  # tl.<name> -> its dtype
    # unresolved calls by name whose result has arg 0's dtype (a shim's libdevice math)
    same_dtype_names: frozenset[str] = frozenset()
    # dtype predicates (``x.dtype.is_int()``) -> the dtypes for which they hold
    dtype_predicates: Mapping[str, frozenset[str]] = field(default_factory=dict)
    # unresolved calls by name with a fixed result dtype (a shim's program_id)
    shim_results: Mapping[str, str] = field(default_factory=dict)
    # a parameter's annotation (``int``) -> the scalar kinds it may hold
    annotations: Mapping[str, Sequence[str]] = field(default_factory=dict)
    # tl functions whose result dtype is their ``dtype`` argument -> its positional index
    dtype_argument: Mapping[str, int] = field(default_factory=dict)
    # what an open element type admits (``[open_types]``; OpenTypes(): every dtype)
    open_types: OpenTypes = field(default_factory=OpenTypes)
    # module constants a kernel may read (``math.e``) -> the scalar kind they are
    constants: Mapping[str, str] = field(default_factory=dict)
    # attributes that are compile-time ints: "tensor" (of a typed tensor or a ``.type``), "any"
    compile_time: Mapping[str, frozenset[str]] = field(default_factory=dict)
    # tl functions returning a tuple of their arguments' types -> those arguments' positions
    tuple_of_args: Mapping[str, tuple[int, ...]] = field(default_factory=dict)

    def values_operation(self, group: str, case: str) -> tuple[str, tuple[str, ...]] | None:
        """The operation a case of the values group ``group`` (``values.maximum``) exercises,
        as the fingerprint's type groups name it, and its operands' dtypes as their cells key
        them: ``binary_fn.maximum`` on (bfloat16, bfloat16) for ``bfloat16(-1,2)``,
        ``reduce.argmax`` on (bfloat16,) for ``argmax.bfloat16``, ``cast.to`` on (bfloat16,
        float16) for ``bfloat16->float16``. None where [values_ops] maps no op."""
        op = self.values_ops.get(self.values_groups.get(group) or "")
        if op is None:
            return None
        head = value_case(case)
        if op == "cast.to":
            src, _, dst = head.partition("->")
            return op, (src, dst)
        if op in ("unary", "binary", "reduce"):
            name, _, dtype = head.partition(".")
            return f"{op}.{name}", (dtype,) * (2 if op == "binary" else 1)
        if op.startswith("unary"):
            return op, (head,)
        return op, (head, head)  # a function of two operands of the case's dtype

    def values_type_cell(self, group: str, case: str) -> str | None:
        """The type cell of the operation a values case exercises (``values_operation``): the
        fingerprint row that records its result dtype, ``fp.binary_fn.maximum[bfloat16,bfloat16]``
        (a cast's cells are keyed ``src->dst``, the others' by their operands joined with ``,``,
        as probes/fp/battery.py expands them). None where [values_ops] maps no op."""
        found = self.values_operation(group, case)
        if found is None:
            return None
        op, operands = found
        return f"fp.{op}[{('->' if op.startswith('cast.') else ',').join(operands)}]"


@lru_cache(maxsize=4)
def load_map(path: str | Path = MAP_PATH, fingerprint: str | Path = FINGERPRINT_PATH) -> UsageMap:
    doc = load_toml(path)
    tables = ("dtypes", "launch_scalars", "operators", "functions", "values_ops", "rules")
    for key in (*tables, "runtime", "open_types"):
        if not isinstance(doc.get(key), dict):
            raise DataFileError(path, key, "a table", doc.get(key))
    if "probes" in doc:  # moved: each probe's row is the [usage] of its probe.toml
        raise DataFileError(path, "probes", "no table (a probe's usage is in its probe.toml)")
    # Each probe's [usage], checked by the catalog (which refuses a probe without one).
    probes = {p.name: p.usage for p in PROBES}
    groups = {}
    for i, v in enumerate(load_toml(fingerprint).get("values", [])):
        if not isinstance(v, dict) or not isinstance(v.get("group"), str):
            raise DataFileError(fingerprint, f"values[{i}]", "a table with group and op", v)
        groups[v["group"]] = str(v.get("op"))
    d, lo, op, fn, vo, ru = (doc[k] for k in tables)
    same = doc.get("same_dtype_calls", [])
    if not isinstance(same, list) or not all(isinstance(x, str) for x in same):
        raise DataFileError(path, "same_dtype_calls", "a list of Triton name prefixes", same)
    same_names = doc.get("same_dtype_names", [])
    if not isinstance(same_names, list) or not all(isinstance(x, str) for x in same_names):
        raise DataFileError(path, "same_dtype_names", "a list of function names", same_names)
    results = doc.get("result_types", {})
    dot = results.get("dot", {"*": "float32"})
    if not isinstance(dot, dict) or "*" not in dot:
        raise DataFileError(path, "result_types.dot", 'a table with a "*" entry', dot)
    sums = results.get("sum", {})
    if not isinstance(sums, dict) or not isinstance(sums.get("names", []), list):
        raise DataFileError(path, "result_types.sum", "names = [...] and dtype = dtype", sums)
    names = frozenset(sums.get("names", []))
    widen = {k: v for k, v in sums.items() if k != "names"}
    calls = results.get("calls", {})
    if not isinstance(calls, dict) or not all(isinstance(v, str) for v in calls.values()):
        raise DataFileError(path, "result_types.calls", "tl function = its result dtype", calls)
    preds = results.get("dtype_predicates", {})
    if not isinstance(preds, dict) or not all(isinstance(v, list) for v in preds.values()):
        raise DataFileError(path, "result_types.dtype_predicates", "name = [dtypes]", preds)
    shims = results.get("shim_calls", {})
    if not isinstance(shims, dict) or not all(isinstance(v, str) for v in shims.values()):
        raise DataFileError(path, "result_types.shim_calls", "name = dtype", shims)
    notes = results.get("annotations", {})
    if not isinstance(notes, dict) or not all(isinstance(v, list) for v in notes.values()):
        raise DataFileError(path, "result_types.annotations", "annotation = [kinds]", notes)
    by_arg = results.get("dtype_argument", {})
    if not isinstance(by_arg, dict) or not all(isinstance(v, int) for v in by_arg.values()):
        raise DataFileError(path, "result_types.dtype_argument", "name = positional index", by_arg)
    consts = results.get("constants", {})
    if not isinstance(consts, dict) or not all(v in SCALAR_KINDS for v in consts.values()):
        raise DataFileError(path, "result_types.constants", "name = a scalar kind", consts)
    fixed = results.get("compile_time", {})
    if (
        not isinstance(fixed, dict)
        or set(fixed) - {"tensor", "any"}
        or not all(
            isinstance(v, list) and all(isinstance(x, str) for x in v) for v in fixed.values()
        )
    ):
        raise DataFileError(path, "result_types.compile_time", "tensor/any = [attributes]", fixed)
    tuples = results.get("tuple_of_args", {})
    if not isinstance(tuples, dict) or not all(
        isinstance(v, list) and all(isinstance(i, int) for i in v) for v in tuples.values()
    ):
        raise DataFileError(path, "result_types.tuple_of_args", "name = [positions]", tuples)
    return UsageMap(d, lo, op, fn, vo, ru, doc["runtime"], probes, groups, tuple(same),
                    dot, names, widen, calls, frozenset(same_names),
                    {k: frozenset(v) for k, v in preds.items()}, shims, notes,
                    by_arg, OpenTypes.parse(doc["open_types"], d, ELEM_DTYPES, path),
                    consts, {k: frozenset(v) for k, v in fixed.items()},
                    {k: tuple(v) for k, v in tuples.items()})  # fmt: skip


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
    col: int = 0  # the node's column (ast, 0-based): tells two ops of one line apart
    casts: tuple[int, ...] = ()  # operands that are explicit casts in the source
    # What would decide an operand the source leaves open (a type variable, an unknown
    # value), in words for gate.md: "declare the element type of `x_ptr` of `k` ..."
    decides: str = ""
    # The operand-kind tuples that can occur together, where two or more operands come from
    # one type variable (``acc.to(x.dtype)`` with ``acc`` computed from ``x``: a float16 x
    # never meets a bfloat16 target); empty: any combination of the operands' kinds.
    combos: frozenset[tuple[str, ...]] = frozenset()
    # The dtypes an operand the code leaves unknown (None) cannot have: none of the kernel's
    # pointers or dtypes holds them, its file does not name them, and no computation makes
    # them without a dtype spelt in the code (``[open_types]``: open_types.py)
    absent: frozenset[str] = frozenset()

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
            "col": self.col,
            "decides": self.decides,
        }


@dataclass
class Profile:
    """Every use of the team's code; ``kernels`` names each kernel read (path:line)."""

    uses: list[Use] = field(default_factory=list)
    kernels: dict[str, str] = field(default_factory=dict)  # kernel -> "path:line"
    sources: list[str] = field(default_factory=list)  # what was read: paths, launches
    notes: list[str] = field(default_factory=list)
    # Files of the team's code that could not be read: their uses are unknown (the gate is
    # then undecidable, naming each).
    unread: list[str] = field(default_factory=list)
    # Modules of the team's own code outside the read paths whose jit helpers the kernels
    # call (read for those calls; the gate scans them too, so their feature guards count)
    imported: list[str] = field(default_factory=list)
    # Type variables nothing decided, narrowed to what tensors carry in practice
    # ([open_types]: open_types.py), and that assumption in words (said once in gate.md)
    assumed: list[str] = field(default_factory=list)
    assumption: str = ""
    # (file as shown, kernel) -> its constexpr parameters' integers, where every launch of it
    # (captured, else from host code) says which (a stride ``H * BT`` with every BT a multiple
    # of 16 is 16-byte aligned: matrix.gate.shapes)
    int_constexprs: dict[tuple[str, str], dict[str, frozenset[int]]] = field(default_factory=dict)
    # The two releases' recorded result types the profile was typed with (promotion.py's
    # SidedTypes), for a matcher that asks what an op computes in; None: not read
    types: Any = field(default=None, compare=False, repr=False)
    # Which kernels nothing in the repository reaches (matrix.gate.reach.Reach: asked for a
    # "may affect" use only); None: not known (every kernel reached)
    reach: Any = field(default=None, compare=False, repr=False)
    # Files (as shown) outside the folders where the repository shows interpreter runs, where
    # it shows them only in some (matrix.gate.targets: InferredTargets.scopes)
    interpreted_elsewhere: set[str] = field(default_factory=set)

    def extend(self, other: Profile) -> None:
        self.uses += other.uses
        self.kernels.update(other.kernels)
        self.sources += other.sources
        self.notes += other.notes
        self.unread += other.unread

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
            "unread": self.unread,
            "open_types": {"assumed": self.assumed, "assumption": self.assumption},
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
    # From host code: parameters whose dtype is one unknown dtype (``y = torch.empty_like(x)``
    # then ``k[grid](x, y)``; a dtype constexpr ``D[x.dtype]``) -> the parameter whose type
    # variable they share; and a shared variable's parameter -> the dtypes the host admits
    # (``assert x.dtype in (torch.float16, torch.bfloat16)``, the keys of ``D``).
    ties: Mapping[str, str] = field(default_factory=dict)
    domains: Mapping[str, frozenset[str]] = field(default_factory=dict)
    # A tied parameter whose dtype is, per dtype of the shared variable, other dtypes (a
    # buffer made ``torch.float32`` where the input is fp16 or bf16, else the input's dtype):
    # that parameter -> {dtype of the variable: its dtypes}, where not the variable's own.
    images: Mapping[str, Mapping[str, frozenset[str]]] = field(default_factory=dict)
    # From host code: a constexpr parameter -> the integers it may be passed (``BT=BT`` after
    # ``B, T, H, BT = A.shape`` and ``assert A.shape[-1] in [16, 32, 64]``)
    values: Mapping[str, frozenset[int]] = field(default_factory=dict)


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
    cast: bool = False  # the result of an explicit cast (``.to``): its TTIR type is the op's own
    # The type variables ``kinds`` stands for ("kernel:x_ptr": the element type of x_ptr):
    # a value whose dtype comes only from what a pointer parameter points to.
    vars: frozenset[str] = frozenset()
    # With one type variable: the kinds (or, for a dtype object, the dtypes) for each dtype
    # the variable takes, so that two values of one variable are never paired across dtypes.
    per: Per = None
    # The value on the candidate release where the two releases' recorded result types make
    # it differ (``tl.maximum`` of two bfloat16 is a float32 on 3.8.0, a bfloat16 on 3.9.0);
    # the fields above are then the baseline's. None: the same on both (promotion.py).
    cand: Val | None = None


UNKNOWN = Val()


def base_of(v: Val) -> Val:
    """``v`` on the baseline (all of it where the releases agree)."""
    return replace(v, cand=None) if v.cand is not None else v


def cand_of(v: Val) -> Val:
    """``v`` on the candidate."""
    return v.cand if v.cand is not None else v


def sided(base: Val, cand: Val) -> Val:
    """The value that is ``base`` on the baseline and ``cand`` on the candidate."""
    base, cand = base_of(base), base_of(cand)
    return base if base == cand else replace(base, cand=cand)


def per_side(f: Callable[..., Val], *vals: Val) -> Val:
    """``f`` of ``vals``, on each side apart where one of them differs per side."""
    if all(v.cand is None for v in vals):
        return f(*vals)
    return sided(f(*(base_of(v) for v in vals)), f(*(cand_of(v) for v in vals)))


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


# The top of Triton's float promotion (semantic.py computation_type_impl): an fp32 operand with
# any partner but fp64 (an integer, a 16-bit or fp8 float, a scalar) gives fp32, an fp64 fp64.
TOP_FLOATS = frozenset({"float32", "float64"})
# Ops Triton refuses on floats: whatever their operands, an integer (a bitwise op of masks: int1).
INTEGER_OPS = {
    "binary.lshift": INT_DTYPES, "binary.rshift": INT_DTYPES,
    "binary.and": INT_DTYPES | {"int1"},
}  # fmt: skip


def with_unknown(op: str | None, known: Kinds) -> Kinds:
    """The result kinds of ``op`` on ``known`` and an operand that is not inferable: an integer
    for a shift or bitwise op; fp32 or fp64 where ``known`` is one of them and ``op`` promotes
    its operands (arithmetic, max/min, ``where``); else not inferable. (An fp32 score times an
    untyped factor is no bf16.)"""
    if op in INTEGER_OPS:  # no float shifts or bitwise ops compile: an integer (or a mask)
        return INTEGER_OPS[op]
    if known and known <= TOP_FLOATS and op and op.startswith(("binary.", "binary_fn.", "where")):
        return known | {"float64"}
    return None


def fixed_result(op: str | None, a: Kinds, b: Kinds) -> Kinds:
    """The fixed rule's result kinds of binary ``op`` (``binary.add``, ``clamp``...), where no
    release's recorded result type says (promotion.py): ``_promote``, a true division of
    integers giving float32, a clamp its first operand's kinds."""
    if op == "clamp":
        return a
    if a is None or b is None:
        return with_unknown(op, a if b is None else b)
    if op == "binary.truediv" and a and b and (a | b) <= COMPILE_TIME_KINDS:
        return frozenset({"cx_float"})  # constexpr / constexpr: Python's division, a float
    if op == "binary.truediv" and a and b and (a | b) <= (INT_DTYPES | SCALAR_KINDS):
        return frozenset({"float32"})
    return _promote(a, b)


def identity(kinds: Kinds) -> Per:
    """The ``per`` of a type variable itself: each dtype is itself."""
    return tuple((d, frozenset({d})) for d in sorted(kinds)) if kinds else None


def lift(f: Callable[..., Kinds], vals: Sequence[Val], dtype: bool = False) -> Per:
    """``f`` of ``vals``' kinds (``dtype``: their dtype sets) for each dtype of their one type
    variable, where every value either follows that variable (``per``) or has none; None
    otherwise (two variables, or one not followed)."""
    tvars = frozenset().union(*(v.vars for v in vals))
    if len(tvars) != 1:
        return None
    keys: set[str] | None = None
    for v in vals:
        if v.vars:
            if v.per is None:
                return None
            ks = {d for d, _ in v.per}
            keys = ks if keys is None else keys & ks
        elif (v.dtype if dtype else v.kinds) in (None, False):
            return None
    out = []
    for d in sorted(keys or ()):
        got = f(*[dict(v.per or ())[d] if v.vars else (v.dtype if dtype else v.kinds)
                  for v in vals])  # fmt: skip
        if got is None:
            return None
        out.append((d, frozenset(got)))
    return tuple(out) or None


def _union_kinds(*ks: Kinds) -> Kinds:
    return None if any(k is None for k in ks) else frozenset().union(*ks)  # type: ignore[arg-type]


def _union_per(vals: Sequence[Val], dtype: bool = False) -> Per:
    """The ``per`` of a value that is any of ``vals``: for each dtype of their one type
    variable, what any of them is for it (a value restricted to some dtypes, as a branch
    taken only for them, adds nothing for the others)."""
    tvars = frozenset().union(*(v.vars for v in vals))
    if len(tvars) != 1:
        return None
    table: dict[str, set[str]] = {}
    consts: set[str] = set()
    for v in vals:
        if v.vars:
            if v.per is None:
                return None
            for d, ks in v.per:
                table.setdefault(d, set()).update(ks)
        else:
            own = v.dtype if dtype else v.kinds
            if not isinstance(own, frozenset):
                return None
            consts |= own
    return tuple((d, frozenset(ks | consts)) for d, ks in sorted(table.items())) or None


def _union(vals: Iterable[Val]) -> Val:
    """A value that is any of ``vals`` (per side where one differs per side)."""
    vals = list(vals)
    if any(v.cand is not None for v in vals):
        return sided(_union([base_of(v) for v in vals]), _union([cand_of(v) for v in vals]))
    tvars: frozenset[str] = frozenset().union(*(v.vars for v in vals))
    if vals and all(v.dtype is not False for v in vals):  # dtype objects: the dtypes of either
        if any(v.dtype is None for v in vals):
            return Val(dtype=None, vars=tvars)
        names = frozenset(d for v in vals if isinstance(v.dtype, frozenset) for d in v.dtype)
        return Val(dtype=names, vars=tvars, per=_union_per(vals, dtype=True))
    kinds: set[str] = set()
    for v in vals:
        if v.kinds is None:
            return UNKNOWN
        kinds |= v.kinds
    return Val(frozenset(kinds), vars=tvars, per=_union_per(vals))


def restrict(v: Val, var: str, domain: frozenset[str]) -> Val:
    """``v`` where type variable ``var`` takes only the dtypes of ``domain`` (inside a branch
    taken only for them: ``if x.dtype.is_int(): ...``)."""
    if v.cand is not None:
        return sided(restrict(base_of(v), var, domain), restrict(v.cand, var, domain))
    if v.vars != {var} or v.per is None:
        return v
    per = tuple((d, ks) for d, ks in v.per if d in domain)
    if not per:
        return v  # a branch no dtype takes: left as it was (never narrowed to nothing)
    got = frozenset().union(*(ks for _, ks in per))
    if v.dtype is not False:
        return replace(v, dtype=got, per=per)
    return replace(v, kinds=got, per=per)


def on_domain(v: Val, var: str, domain: frozenset[str]) -> Val:
    """A value of a branch taken only for ``domain``'s dtypes of ``var``, as a value of that
    variable (a constant there: ``tl.float32 if x.dtype is tl.bfloat16 else x.dtype``)."""
    if v.cand is not None:
        return sided(on_domain(base_of(v), var, domain), on_domain(v.cand, var, domain))
    if v.vars:
        return v
    own = v.dtype if v.dtype is not False else v.kinds
    if not isinstance(own, frozenset) or not domain:
        return v
    return replace(v, vars=frozenset({var}), per=tuple((d, own) for d in sorted(domain)))


def combos(operands: Sequence[Val]) -> frozenset[tuple[str, ...]]:
    """The operand-kind tuples that can occur together where two or more operands follow one
    type variable (empty: no constraint beyond each operand's own kinds)."""
    if sum(1 for v in operands if v.vars) < 2:
        return frozenset()
    tvars = frozenset().union(*(v.vars for v in operands))
    if len(tvars) != 1 or any(v.kinds is None for v in operands):
        return frozenset()
    per = lift(lambda *ks: frozenset({"*"}), operands)  # every operand follows the variable
    if per is None:
        return frozenset()
    out: set[tuple[str, ...]] = set()
    for d, _ in per:
        choices = [dict(v.per or ())[d] if v.vars else (v.kinds or frozenset()) for v in operands]
        out |= set(itertools.product(*choices))
    return frozenset(out)


def type_var(kernel: str, param: str, dtype: bool = False) -> str:
    """The name of a type variable: the element type of pointer ``param`` of ``kernel``, or
    (``dtype``) the dtype a constexpr ``param`` holds (``x.to(OUT_DTYPE)``)."""
    return f"{kernel}:{param}" + (":dtype" if dtype else "")


def decides_text(tvars: Iterable[str], unknown: bool, kernel: str = "") -> str:
    """What would decide an operand left open, in words: the type variables it depends on
    (declare them, or run a test that launches their kernel), else how to type the value."""
    by_kernel: dict[str, list[str]] = {}
    for v in sorted(tvars):
        kernel, _, param = v.partition(":")
        name, _, what = param.partition(":")
        by_kernel.setdefault(kernel, []).append(
            f"the dtype `{name}` holds" if what == "dtype" else f"the element type of `{name}`"
        )
    parts = [
        "declare " + ", ".join(params) + f" of `{kernel}` in [tool.triton-compat].dtypes "
        f"(pyproject.toml, or --config), or run a test that launches `{kernel}` (--tests)"
        for kernel, params in by_kernel.items()
    ]
    if unknown:
        who = f"`{kernel}`" if kernel else "the kernel"
        parts.append(f"type the value in the code (e.g. `.to(tl.float32)`), or run a test that "
                     f"launches {who} (--tests)")  # fmt: skip
    return "; ".join(parts)


def _scalar_of(value: Any) -> str | None:
    if isinstance(value, bool):
        return "lit_bool"
    if isinstance(value, int):
        return "cx_int"
    if isinstance(value, float):
        return "cx_float"
    return None
