"""The fingerprint battery: cases generated from ``fingerprint.toml`` (beside this module),
traced in one go.

Every case is one operation on operands of given kinds (``binary.add`` on ``int8,uint16``).
All cases run inside *one* kernel launch (interpreter) or *one* compile (aot): the kernel calls
``trace_battery``, a Triton builtin, and the builtin applies each case's operation with the
frontend's own builder (``_builder`` up to 3.4, ``_semantic`` from 3.5; whichever the code
generator passes is forwarded), each inside its own ``try``. So one refused operation costs one
cell, not the kernel, and a thousand operations cost one compile. The types recorded are those
of the values the frontend builds into TTIR (``tensor.dtype``, and in a compile also the MLIR
type of the value's handle); the ops' results are not stored, so later passes drop them and the
backend has almost nothing to lower.

Under the interpreter the same builtin is a plain Python call (the kernel body runs as Python;
``tl`` is patched to the interpreter's builder), so the same code applies the same cases.

Statuses of a type cell: the result dtype's name (``int16``, ``fp32``), ``rejected`` (Triton
raised; the exception is in the details), ``absent`` (the release lacks the dtype or function),
``error`` (our harness raised, never a Triton verdict).
"""

from __future__ import annotations

import itertools
import os
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from matrix.core import load_toml
from matrix.probes.support.base import outside_triton

# The battery, beside this module in the fp probe's folder.
BATTERY_PATH = Path(__file__).resolve().parent / "fingerprint.toml"
BLOCK = 16
# Rows of the input buffers used by the type cases (16 rows: one 16x16 tile for tl.dot).
TYPE_ROWS = 16
# What the type rows hold: flat element i of each width's buffer is (i + 1) % 13 + 1 (small,
# non-zero, not all equal), read as the case's dtype.
TYPE_DATA_PERIOD = 13
WIDTHS = (8, 16, 32, 64)
_HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # matrix/probes


class BatteryError(ValueError):
    """The battery file is malformed; the message names the entry and what was expected."""


@dataclass(frozen=True)
class Case:
    """One operation on operands of given kinds: one fingerprint cell."""

    group: str
    key: str
    call: str
    op: str
    operands: tuple[str, ...]
    options: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class ValueCase:
    """One operation over a vector of edge inputs (one cell per input), run and checked."""

    group: str
    label: str  # "int32", "float32->int32", "sqrt.float32"
    op: str
    operand_dtypes: tuple[str, ...]
    inputs: tuple[tuple[Any, ...], ...]  # per element: (lhs,) or (lhs, rhs)
    reference: str
    index: int = 0  # output row; input rows follow the type rows
    opname: str = ""  # for op = "unary"/"binary"/"reduce": which one


@dataclass
class Battery:
    cases: list[Case]
    values: list[ValueCase]
    raw: dict[str, Any] = field(default_factory=dict)


def load(path: str | Path = BATTERY_PATH) -> Battery:
    """Read and expand the battery file; BatteryError names what is malformed, DataFileError
    a file that cannot be read as TOML."""
    doc = load_toml(path)  # an unreadable file is core's DataFileError
    operands = doc.get("operands")
    if not isinstance(operands, dict):
        raise BatteryError(f"{path}: [operands] missing")
    kinds = {name: list(v) for name, v in operands.items()}
    kinds["bool"] = ["int1"]
    cases = list(_expand_families(doc.get("families", {}), kinds, path))
    values = list(_expand_values(doc.get("values", []), path))
    return Battery(cases, values, doc)


def _kinds(names: Iterable[str], kinds: dict[str, list[str]], where: str) -> list[str]:
    out: list[str] = []
    for n in names:
        if n not in kinds:
            raise BatteryError(f"{where}: unknown operand list {n!r}; known: {sorted(kinds)}")
        out.extend(kinds[n])
    return out


def _expand_families(families: dict, kinds: dict[str, list[str]], path: Any) -> Iterator[Case]:
    scalars = set(kinds.get("scalars", []))
    for fam_name, fam in families.items():
        where = f"{path}: families.{fam_name}"
        call = fam.get("call")
        ops = fam.get("ops")
        if not isinstance(ops, dict) or not call:
            raise BatteryError(f"{where}: needs call = '...' and an ops table")
        for short, op in ops.items():
            group = f"{fam_name}.{short}" if fam_name not in ("where", "clamp") else fam_name
            if call in ("operator", "function", "where", "clamp", "cast"):
                lhs = _kinds(fam["lhs"], kinds, where)
                rhs = _kinds(fam["rhs"], kinds, where)
                for a, b in itertools.product(lhs, rhs):
                    if a in scalars and b in scalars:
                        continue  # no tensor: not a Triton operation
                    if call == "cast":
                        yield Case(group, f"{a}->{b}", call, op, (a, b))
                    else:
                        yield Case(group, f"{a},{b}", call, op, (a, b))
            elif call in ("unary", "reduce"):
                for a in _kinds(fam["arg"], kinds, where):
                    yield Case(group, a, call, op, (a,))
            elif call == "dot":
                yield from _dot_cases(fam, group, where)
            elif call == "atomic":
                yield from _atomic_cases(fam, short, op, where)
            else:
                raise BatteryError(f"{where}: unknown call {call!r}")


def _dot_cases(fam: dict, group: str, where: str) -> Iterator[Case]:
    for name in ("inputs", "acc", "out_dtype", "input_precision"):
        if not isinstance(fam.get(name), list):
            raise BatteryError(f"{where}: {name} must be a list")
    seen = set()
    for a in fam["inputs"]:
        combos = [(acc, out, "default") for acc in fam["acc"] for out in fam["out_dtype"]]
        combos += [("none", "default", p) for p in fam["input_precision"]]
        for acc, out, prec in combos:
            if (a, acc, out, prec) in seen:
                continue
            seen.add((a, acc, out, prec))
            key = f"{a},acc={acc},out={out},prec={prec}"
            opts = (("acc", acc), ("out_dtype", out), ("input_precision", prec))
            yield Case("dot", key, "dot", "dot", (a, a), opts)


def _atomic_cases(fam: dict, short: str, op: str, where: str) -> Iterator[Case]:
    group = f"atomic.{short}"
    for dt in fam["dtypes"]:
        yield Case(group, f"{dt}", "atomic", op, (dt,), (("sem", "default"), ("scope", "default")))
    for pair in fam.get("sem_scope_for", []):
        if not (isinstance(pair, list) and len(pair) == 2):
            raise BatteryError(f"{where}: sem_scope_for entries are [op, dtype], got {pair!r}")
        if pair[0] != short:
            continue
        for sem, scope in itertools.product(fam["sem"], fam["scope"]):
            if sem == "default" and scope == "default":
                continue
            opts = (("sem", sem), ("scope", scope))
            yield Case(group, f"{pair[1]},sem={sem},scope={scope}", "atomic", op, (pair[1],), opts)


def _number(v: Any) -> Any:
    return float(v) if isinstance(v, str) else v


def _expand_values(entries: list, path: Any) -> Iterator[ValueCase]:
    index = 0
    for i, e in enumerate(entries):
        where = f"{path}: values[{i}] ({e.get('group', '?')})"
        try:
            group, op, ref, dtypes = e["group"], e["op"], e["reference"], e["dtypes"]
        except KeyError as k:
            raise BatteryError(f"{where}: missing {k}") from None
        lhs = [_number(v) for v in e.get("lhs", REDUCE_INPUT)]
        rhs = [_number(v) for v in e["rhs"]] if "rhs" in e else None
        if rhs is not None and len(rhs) != len(lhs):
            raise BatteryError(f"{where}: lhs has {len(lhs)} inputs, rhs {len(rhs)}")
        if len(lhs) > BLOCK:
            raise BatteryError(f"{where}: at most {BLOCK} inputs, got {len(lhs)}")
        inputs = tuple(zip(lhs, rhs, strict=True)) if rhs is not None else tuple((v,) for v in lhs)
        for spec in dtypes:
            if op == "cast":
                src, dst = spec
                yield ValueCase(group, f"{src}->{dst}", op, (src, dst), inputs, ref, index)
            elif op in ("unary", "binary", "reduce"):
                name, dt = spec
                n = 2 if op == "binary" else 1
                yield ValueCase(group, f"{name}.{dt}", op, (dt,) * n, inputs, ref, index, name)
            else:
                n = 2 if rhs is not None else 1
                yield ValueCase(group, spec, op, (spec,) * n, inputs, ref, index)
            index += 1


# The input a reduction's values case reads when the file gives none: exact in every dtype.
REDUCE_INPUT = [3, -1, 4, 1, -5, 9, 2, -6, 5, 3, -5, 8, 9, -7, 9, 3]


# --------------------------------------------------------------------------------------------
# Trace time: what runs inside the kernel (compile: a builtin; interpreter: plain Python).


class HarnessFault(Exception):
    """Our own code could not set a case up: an ``error`` cell, never a Triton verdict."""


@dataclass
class Sink:
    """What tracing the battery observed: group -> case key -> status, plus evidence.

    Texts (refusals, warnings) repeat across cases, so each group keeps a list of distinct
    ``reasons`` and its ``details``/``warnings`` map a case to an index into it."""

    cells: dict[str, dict[str, str]] = field(default_factory=dict)
    details: dict[str, dict[str, int]] = field(default_factory=dict)
    warnings: dict[str, dict[str, int]] = field(default_factory=dict)
    reasons: dict[str, list[str]] = field(default_factory=dict)
    # group -> {Triton dtype name: the element type of its TTIR value}, as the frontend built it
    ttir: dict[str, dict[str, str]] = field(default_factory=dict)
    value_dtypes: dict[int, str] = field(default_factory=dict)
    value_errors: dict[int, tuple[str, str]] = field(default_factory=dict)
    traced: bool = False
    # (status, reason) when the launch or compile failed for a reason outside Triton
    cannot_observe: tuple[str, str] | None = None
    # The conversion instructions of the kernel that ran, where its PTX could be read (a GPU
    # launch): semantics rules with `lowered` are judged on them (fp.semantics.choose).
    lowered: list[str] | None = None
    # Set once the launch ran (fp/probe.py): its buffers by width (torch tensors), and the
    # TTIR the compile stopped at, where it did.
    inputs: dict[int, Any] = field(default_factory=dict)
    outputs: dict[int, Any] = field(default_factory=dict)
    ttir_text: str | None = None

    def reason(self, group: str, text: str) -> int:
        texts = self.reasons.setdefault(group, [])
        text = text[:120]
        if text not in texts:
            texts.append(text)
        return texts.index(text)

    def put(self, group: str, key: str, status: str, detail: str = "") -> None:
        self.cells.setdefault(group, {})[key] = status
        if detail:
            self.details.setdefault(group, {})[key] = self.reason(group, detail)

    def group_data(self, group: str) -> dict[str, Any]:
        """The row data of one group: cells and, where any, their evidence."""
        data: dict[str, Any] = {"cells": self.cells.get(group, {})}
        for name in ("details", "warnings", "reasons", "ttir"):
            part = getattr(self, name).get(group)
            if part:
                data[name] = part
        return data


@dataclass
class Plan:
    """What the next trace should do: set by the probe before launching or compiling."""

    cases: list[Case] = field(default_factory=list)
    values: list[ValueCase] = field(default_factory=list)
    sink: Sink = field(default_factory=Sink)
    # aot: end the compile once traced (the results are dead code; atomics are not).
    stop_after_trace: bool = True
    # Type cases build their operands in registers instead of loading them (the interpreter:
    # see ``Operands.tensor``).
    computed_operands: bool = False


PLAN = Plan()


def _unwrap(x: Any) -> Any:
    import triton.language as tl

    return x.value if isinstance(x, tl.constexpr) else x


def classify_exception(e: BaseException) -> tuple[str, str]:
    """``rejected`` when Triton (or the numpy/torch code it called) raised; ``error`` when the
    exception started in our own harness; ``rejected`` also for a keyword the release lacks.
    A failure outside Triton (a missing file or tool: ``base.OUTSIDE_TRITON``) is that cell's
    ``skipped`` or ``error`` with the reason, never a refusal.
    The text is the innermost cause's (a CompilationError's message starts with source code)."""
    cannot = outside_triton(e)
    if cannot is not None:
        return cannot.status, f"outside Triton: {cannot.what}"
    cause = e
    while cause.__cause__ is not None:
        cause = cause.__cause__
    lines = [ln.strip() for ln in str(cause).splitlines() if ln.strip()]
    first = f"{type(cause).__name__}: {lines[-1] if len(lines) > 3 else ' '.join(lines)}"[:300]
    if isinstance(e, HarnessFault):
        return "error", first
    if isinstance(e, TypeError) and "unexpected keyword argument" in str(e):
        return "rejected", first
    tb = cause.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    where = tb.tb_frame.f_code.co_filename if tb is not None else ""
    if tb is not None and where.startswith(_HERE):
        return "error", f"{first} (raised in {os.path.basename(where)}:{tb.tb_lineno})"
    return "rejected", first


class Operands:
    """The operands a case can name, built once per trace from the kernel's arguments."""

    def __init__(self, args: dict[str, Any], kw: dict[str, Any]):
        import triton.language as tl

        self.tl, self.kw, self.args = tl, kw, args
        self.generator = args.get("_generator")  # the code generator, in a compile
        self.block = int(_unwrap(args["BLOCK"]))
        self.offs = tl.arange(0, self.block, **kw)
        self._cache: dict[tuple[str, int], Any] = {}

    def dtype(self, name: str) -> Any:
        dt = getattr(self.tl, name, None)
        if not isinstance(dt, self.tl.dtype):
            raise LookupError(name)
        return dt

    def pointer(self, width: int, row: int, out: bool = False, dtype: Any = None) -> Any:
        """Row ``row`` of the width's buffer, as a pointer to ``dtype`` (how a kernel reads a
        torch tensor of that dtype) when one is given."""
        base = self.args[("o" if out else "i") + str(width)]
        if dtype is not None and dtype != base.dtype.element_ty:
            base = base.to(self.tl.pointer_type(dtype), bitcast=True, **self.kw)
        return base.__add__(self.offs.__add__(row * self.block, **self.kw), **self.kw)

    def tensor(self, name: str, row: int = 0) -> Any:
        if (name, row) in self._cache:
            return self._cache[(name, row)]
        if name in SCALAR_ARGS:
            return self.args[SCALAR_ARGS[name]]
        dt = self.dtype(name)
        if PLAN.computed_operands and row < TYPE_ROWS:
            x = self._computed(dt, self.offs.__add__(row * self.block, **self.kw))
        elif dt.primitive_bitwidth == 1:
            x = self.tl.load(self.pointer(8, row), **self.kw).__ne__(0, **self.kw)
        else:
            x = self.tl.load(self.pointer(dt.primitive_bitwidth, row, dtype=dt), **self.kw)
        self._cache[(name, row)] = x
        return x

    def _computed(self, dt: Any, flat: Any) -> Any:
        """The type rows' data at flat offsets ``flat`` as ``dt``, the same bits a load reads,
        built without memory. Under the interpreter a type case's outcome can depend on its
        operands' values (numpy 2 raises OverflowError for an int8 sum that does not fit, and
        3.0's fp8 upcast raises on a zero), and 3.0.0/3.1.0 with numpy 2 load from the wrong
        addresses (a copy kernel stores nothing): loaded operands made those cells flip from
        run to run, computed ones make them the release's answer on this data."""
        tl, kw = self.tl, self.kw
        width = 8 if dt.primitive_bitwidth == 1 else dt.primitive_bitwidth
        data = flat.__add__(1, **kw).__mod__(TYPE_DATA_PERIOD, **kw).__add__(1, **kw)
        x = data.to(getattr(tl, f"int{width}"), **kw)
        if dt.primitive_bitwidth == 1:
            return x.__ne__(0, **kw)
        return x if dt == x.dtype else x.to(dt, bitcast=True, **kw)

    def tile(self, name: str) -> Any:
        """A 16x16 tile of dtype ``name`` (rows 0..15 of the type rows)."""
        key = (name, -1)
        if key not in self._cache:
            tl, kw, dt = self.tl, self.kw, self.dtype(name)
            rows = tl.expand_dims(self.offs, 1, **kw).__mul__(self.block, **kw)
            offs2 = rows.__add__(tl.expand_dims(self.offs, 0, **kw), **kw)
            if PLAN.computed_operands:
                self._cache[key] = self._computed(dt, offs2)
                return self._cache[key]
            base = self.args["i" + str(dt.primitive_bitwidth)]
            if dt != base.dtype.element_ty:
                base = base.to(tl.pointer_type(dt), bitcast=True, **kw)
            self._cache[key] = tl.load(base.__add__(offs2, **kw), **kw)
        return self._cache[key]


# Scalar operand kinds -> the kernel argument that carries them.
SCALAR_ARGS = {
    "lit_int": "lit_int",
    "lit_float": "lit_float",
    "lit_bool": "lit_bool",
    "cx_int": "C_INT",
    "cx_float": "C_FLOAT",
    "arg_i32": "s_i32",
    "arg_i64": "s_i64",
    "arg_f32": "s_f32",
}


# Comparisons reflect to the mirrored comparison; arithmetic to its __r*__ method.
REFLECTED = {"__lt__": "__gt__", "__gt__": "__lt__", "__le__": "__ge__", "__ge__": "__le__",
             "__eq__": "__eq__", "__ne__": "__ne__"}  # fmt: skip


def _binary(ops: Operands, op: str, a: Any, b: Any) -> Any:
    """``a OP b`` the way the code generator applies it: the tensor's method, reflected when
    the left operand is a scalar (``3 - x`` is ``x.__rsub__(3)``)."""
    tl, kw = ops.tl, ops.kw
    if isinstance(a, tl.tensor):
        return getattr(a, op)(b, **kw)
    reflected = REFLECTED.get(op, op.replace("__", "__r", 1))
    method = getattr(b, reflected, None)
    if method is None:
        raise LookupError(f"tensor.{reflected}")
    return method(a, **kw)


def _dot(ops: Operands, case: Case) -> Any:
    tl, kw = ops.tl, ops.kw
    opts = dict(case.options)
    a = ops.tile(case.operands[0])
    kwargs: dict[str, Any] = {}
    if opts["acc"] != "none":
        kwargs["acc"] = tl.zeros((ops.block, ops.block), dtype=ops.dtype(opts["acc"]), **kw)
    if opts["out_dtype"] != "default":
        kwargs["out_dtype"] = ops.dtype(opts["out_dtype"])
    if opts["input_precision"] != "default":
        kwargs["input_precision"] = opts["input_precision"]
    return tl.dot(a, a, **kwargs, **kw)


def _atomic(ops: Operands, case: Case) -> Any:
    tl, kw = ops.tl, ops.kw
    opts = dict(case.options)
    dt = ops.dtype(case.operands[0])
    ptr = ops.pointer(dt.primitive_bitwidth, 0, out=True, dtype=dt)
    val = ops.tensor(case.operands[0])
    kwargs = {k: v for k, v in opts.items() if v != "default"}
    fn = _function(tl, case.op, ops.generator)
    if case.op == "atomic_cas":
        return fn(ptr, val, val, **kwargs, **kw)
    return fn(ptr, val, **kwargs, **kw)


def _function(tl: Any, name: str, generator: Any = None) -> Callable[..., Any]:
    """``tl.<name>`` (or ``tl.math.<name>``) as something this builtin can call. Many of them
    (``tl.sum``, ``tl.sigmoid``, ``tl.cumsum``) are ``@triton.jit`` functions of
    triton.language.standard: in a compile they are called through the code generator, as a
    kernel's call would be; under the interpreter they are plain Python calls."""
    fn = getattr(tl, name, None)
    if fn is None:
        fn = getattr(getattr(tl, "math", None), name, None)
    if fn is None:
        raise LookupError(f"tl.{name}")
    from triton.runtime.jit import JITFunction

    if generator is not None and isinstance(fn, JITFunction):

        def call(*args: Any, _builder: Any = None, _semantic: Any = None, **kwargs: Any) -> Any:
            return generator.call_JitFunction(fn, list(args), kwargs)

        return call
    return fn


def apply(ops: Operands, case: Case) -> Any:
    """The result of one case (raises what Triton raises; LookupError when something is absent)."""
    tl, kw = ops.tl, ops.kw
    if case.call == "dot":
        return _dot(ops, case)
    if case.call == "atomic":
        return _atomic(ops, case)
    args = [ops.tensor(name) for name in case.operands[:1]]
    if case.call == "cast":
        dst = ops.dtype(case.operands[1])
        return args[0].to(dst, bitcast=(case.op == "bitcast"), **kw)
    if case.call == "unary":
        x = args[0]
        if case.op.startswith("__"):
            return getattr(x, case.op)(**kw)
        return _function(tl, case.op, ops.generator)(x, **kw)
    if case.call == "reduce":
        return _function(tl, case.op, ops.generator)(args[0], 0, **kw)
    b = ops.tensor(case.operands[1])
    a = args[0]
    if case.call == "operator":
        return _binary(ops, case.op, a, b)
    if case.call == "function":
        return _function(tl, case.op, ops.generator)(a, b, **kw)
    if case.call == "where":
        cond = ops.tensor("int1")
        return tl.where(cond, a, b, **kw)
    if case.call == "clamp":
        return _function(tl, "clamp", ops.generator)(a, b, b, **kw)
    raise HarnessFault(f"case {case.group}/{case.key}: unknown call {case.call!r}")


def _type_name(r: Any) -> str:
    dt = getattr(r, "dtype", None)
    if dt is None:
        return f"python:{type(r).__name__}"
    return str(dt)


def _mlir_type(r: Any) -> str:
    handle = getattr(r, "handle", None)
    get_type = getattr(handle, "get_type", None)
    if get_type is None:
        return ""
    try:
        return str(get_type())
    except Exception:  # an interpreter handle has no MLIR type; nothing to record
        return ""


# When set (a file path), every case is named there before it runs, flushed: a case that kills
# the process (an assertion inside MLIR aborts it) is then the last line. See fp.trace_isolated.
TRACE_LOG: str | None = os.environ.get("MATRIX_FP_TRACE_LOG")


_LOG_FILE: Any = None


def _log(line: str) -> None:
    global _LOG_FILE
    if not TRACE_LOG:
        return
    if _LOG_FILE is None or _LOG_FILE.name != TRACE_LOG:
        _LOG_FILE = open(TRACE_LOG, "a", encoding="utf-8")  # noqa: SIM115 (kept open: per case)
    _LOG_FILE.write(line + "\n")
    _LOG_FILE.flush()  # the line must be on disk before the case can kill the process


def run_case(ops: Operands, case: Case, sink: Sink) -> Any:
    """Apply one case and record its cell (and any warnings); return the result or None."""
    _log(f"C\t{case.group}\t{case.key}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            r = apply(ops, case)
        except LookupError as e:
            sink.put(case.group, case.key, "absent", f"the release has no {e.args[0]}")
            r = None
        except Exception as e:  # classified: Triton refusing it, or our harness failing
            status, text = classify_exception(e)
            sink.put(case.group, case.key, status, text)
            r = None
        else:
            name = _type_name(r)
            sink.put(case.group, case.key, name)
            mlir = _mlir_type(r)
            if mlir:
                element = mlir.rsplit("x", 1)[-1].rstrip(">") if "<" in mlir else mlir
                sink.ttir.setdefault(case.group, {}).setdefault(name, element)
    if caught:
        text = "; ".join(sorted({f"{w.category.__name__}: {str(w.message)[:160]}" for w in caught}))
        sink.warnings.setdefault(case.group, {})[case.key] = sink.reason(case.group, text)
    return r


def run_value_case(ops: Operands, vc: ValueCase, sink: Sink) -> None:
    """Apply a values case to its input rows and store the result's bits in its output row."""
    tl, kw = ops.tl, ops.kw
    _log(f"V\t{vc.index}")
    try:
        xs = [
            ops.tensor(dt, TYPE_ROWS + 2 * vc.index + i) for i, dt in enumerate(vc.operand_dtypes)
        ]
        if vc.op == "cast":
            xs = xs[:1]
        r = _apply_value(ops, vc, xs)
        dt = r.dtype
        sink.value_dtypes[vc.index] = str(dt)
        if dt.primitive_bitwidth == 1:
            r, dt = r.to(tl.int8, **kw), tl.int8
        ptr = ops.pointer(dt.primitive_bitwidth, vc.index, out=True, dtype=dt)
        if len(getattr(r, "shape", ())) == 0:
            ptr = ops.args["o" + str(dt.primitive_bitwidth)]
            if dt != ptr.dtype.element_ty:
                ptr = ptr.to(tl.pointer_type(dt), bitcast=True, **kw)
            ptr = ptr.__add__(vc.index * ops.block, **kw)
        tl.store(ptr, r, **kw)
    except LookupError as e:
        sink.value_errors[vc.index] = ("absent", f"the release has no {e.args[0]}")
    except Exception as e:  # classified per cell by the probe
        sink.value_errors[vc.index] = classify_exception(e)


BINARY_METHODS = {"add": "__add__", "sub": "__sub__", "mul": "__mul__"}
VALUE_OPS = {"floordiv": "__floordiv__", "mod": "__mod__", "truediv": "__truediv__",
             "lshift": "__lshift__", "rshift": "__rshift__"}  # fmt: skip


def _apply_value(ops: Operands, vc: ValueCase, xs: list[Any]) -> Any:
    tl, kw = ops.tl, ops.kw
    if vc.op == "cast":
        return xs[0].to(ops.dtype(vc.operand_dtypes[1]), **kw)
    if vc.op in VALUE_OPS:
        return getattr(xs[0], VALUE_OPS[vc.op])(xs[1], **kw)
    if vc.op in ("minimum", "maximum"):
        return _function(tl, vc.op, ops.generator)(xs[0], xs[1], **kw)
    if vc.op in ("minimum_nan_all", "maximum_nan_all"):
        fn = _function(tl, vc.op.split("_")[0], ops.generator)
        return fn(xs[0], xs[1], propagate_nan=tl.PropagateNan.ALL, **kw)
    if vc.op == "clamp":  # tl.clamp(x, -y, y): the usual symmetric clamp, bounds from one row
        return _function(tl, "clamp", ops.generator)(xs[0], xs[1].__neg__(**kw), xs[1], **kw)
    if vc.op == "where":  # tl.where(x < y, x, y): a select whose condition sees NaN as false
        return tl.where(xs[0].__lt__(xs[1], **kw), xs[0], xs[1], **kw)
    if vc.op == "binary":
        return getattr(xs[0], BINARY_METHODS[vc.opname])(xs[1], **kw)
    if vc.op == "unary":
        if vc.opname == "neg":
            return xs[0].__neg__(**kw)
        return _function(tl, vc.opname, ops.generator)(xs[0], **kw)
    if vc.op == "reduce":
        return _function(tl, vc.opname, ops.generator)(xs[0], 0, **kw)
    raise HarnessFault(f"values {vc.group}: unknown op {vc.op!r}")


def trace_battery(
    i8, i16, i32, i64, o8, o16, o32, o64, s_i32, s_i64, s_f32,
    C_INT, C_FLOAT, lit_int, lit_float, lit_bool, PART, BLOCK,
    _builder=None, _semantic=None, _generator=None,
):  # fmt: skip
    """Run every planned case, then every values case (PART only names the part: a distinct
    constexpr per part keeps compiles of different parts apart)."""
    kw: dict[str, Any] = {}
    if _semantic is not None:
        kw["_semantic"] = _semantic
    elif _builder is not None:
        kw["_builder"] = _builder
    args = dict(locals())
    ops = Operands(args, kw)
    sink = PLAN.sink
    for case in PLAN.cases:
        run_case(ops, case, sink)
    for vc in PLAN.values:
        run_value_case(ops, vc, sink)
    sink.traced = True
    _log("T")
    if _generator is not None and PLAN.stop_after_trace:
        # The pure ops are dead code: compiling them further would only cost time. (The module
        # is not verified: a refused case can leave a half-built op or function behind.)
        raise TraceComplete("the battery was traced; the compile stops here on purpose")


class TraceComplete(Exception):
    """Raised by ``trace_battery`` to end an aot compile once the battery has been traced."""


# Mark it a builtin for the code generator (what ``tl.core.builtin`` does, without its check
# that ``_builder`` was passed: under the interpreter it is a plain call).
# (a function attribute typeshed does not know: Triton's code generator reads it)
trace_battery.__triton_builtin__ = True  # type: ignore[attr-defined]
# Triton 3.0-3.1's dependency finder lets a kernel call only functions whose module name starts
# with "triton"; the prefix says whose it is without claiming to be part of Triton.
trace_battery.__module__ = "triton-matrix:" + __name__
