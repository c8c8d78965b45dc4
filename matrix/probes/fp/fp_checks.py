"""Values on edge inputs: encode the battery's inputs, decode what the kernel stored, and check it
against a float64/numpy/torch reference.

A cell is one input (pair): ``right``, ``wrong`` (``data.values[key]`` holds the reference and the
got value), ``rejected``/``absent`` (the operation itself was refused), ``skipped`` (no encoding
for the dtype here), or, for ``reference = "observe"``, the value that came out (``nan``,
``-0.0``, ``1.0``): unspecified behaviour is recorded, not judged.

Reference semantics are the compiled ones of the same release: where ``semantics.toml``
(beside this module) has rules for a group, the TTIR ops the release compiles the case to
choose the reference (float ``%``: floor-mod on 3.0.0-3.2.0, C ``fmod`` from 3.3.1; see
``fp.semantics``); elsewhere the battery's reference, a documented contract (integer
``//`` truncates toward zero, ``%`` takes the dividend's sign, integer overflow wraps). Inputs
whose result LLVM leaves undefined are not asked (``reference`` returns None for them).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from matrix.probes.fp import semantics as sem
from matrix.probes.fp.battery import BLOCK, TYPE_ROWS, Sink, ValueCase
from matrix.probes.support.base import Observation

# Triton dtype name (``str(tl.int8)``, ``str(tl.float32)`` = "fp32") -> how to hold its values.
INT_DTYPES = {f"{s}int{w}": (w, s == "") for s in ("", "u") for w in (8, 16, 32, 64)}
FLOAT_TORCH = {
    "float16": "float16", "fp16": "float16", "bfloat16": "bfloat16", "bf16": "bfloat16",
    "float32": "float32", "fp32": "float32", "float64": "float64", "fp64": "float64",
    "float8e5": "float8_e5m2", "fp8e5": "float8_e5m2",
    "float8e4nv": "float8_e4m3fn", "fp8e4nv": "float8_e4m3fn",
    # the AMD variants (bias 8 / 16, no inf, one NaN: torch's "fnuz" types)
    "float8e4b8": "float8_e4m3fnuz", "fp8e4b8": "float8_e4m3fnuz",
    "float8e5b16": "float8_e5m2fnuz", "fp8e5b16": "float8_e5m2fnuz",
}  # fmt: skip
FLOAT_WIDTH = {"float16": 16, "bfloat16": 16, "float32": 32, "float64": 64,
               "float8_e5m2": 8, "float8_e4m3fn": 8, "float8_e4m3fnuz": 8,
               "float8_e5m2fnuz": 8}  # fmt: skip


class _Observe:
    """A reference for inputs whose result the semantics leave open (NaN into a plain
    ``tl.minimum``, the sign of a zero ``minnum`` returns): the cell records what came out."""

    def __repr__(self) -> str:
        return "OBSERVE"


OBSERVE = _Observe()
# Math functions whose results are not correctly rounded: within one ulp is right.
ONE_ULP = {"exp", "log", "rsqrt", "exp2", "log2"}


# Every output buffer is filled with this byte before a launch, so that a case the kernel never
# stored to is seen as such rather than read as a value: on Triton 3.0.0/3.1.0 under the
# interpreter with numpy >= 2, tl.store writes nothing (measured: a plain fp32 -> fp16 store
# leaves its output as it was), and a zero-filled buffer turned that into 428 `wrong` cells.
POISON_BYTE = 0x5A


def poison(width: int) -> int:
    """The integer of ``width`` bits whose every byte is POISON_BYTE."""
    return int.from_bytes(bytes([POISON_BYTE]) * (width // 8), "little", signed=True)


UNDEFINED = "undefined"  # a cell the release accepted whose result is undefined: not judged
UNWRITTEN = "unwritten"  # a value's `got` where the kernel stored nothing in its row
STORED_NOTHING = (
    "the launch returned but stored nothing: every output row kept its poison (tl.store wrote "
    "nothing), so each cell is 'unwritten'"
)


def unwritten(row: Any) -> bool:
    """Whether a whole output row still holds the poison (the kernel stored nothing there)."""
    return bool((row == poison(row.element_size() * 8)).all())


def width_of(dtype: str) -> int:
    if dtype == "int1":
        return 8
    if dtype in INT_DTYPES:
        return INT_DTYPES[dtype][0]
    return FLOAT_WIDTH[FLOAT_TORCH[dtype]]


def representable(value: Any, dtype: str) -> bool:
    if dtype in INT_DTYPES:
        w, signed = INT_DTYPES[dtype]
        if not isinstance(value, int):
            return False
        lo, hi = (-(2 ** (w - 1)), 2 ** (w - 1) - 1) if signed else (0, 2**w - 1)
        return lo <= value <= hi
    return dtype in FLOAT_TORCH


def encode(values: list[Any], dtype: str):
    """``values`` as the bits of ``dtype`` in a signed int tensor of the same width."""
    import torch

    w = width_of(dtype)
    if dtype in INT_DTYPES:
        arr = np.array(values, dtype=np.dtype(dtype.replace("int", "int")))
        return torch.from_numpy(arr.view(f"int{w}").copy())
    t = torch.tensor([float(v) for v in values], dtype=torch.float64)
    return t.to(getattr(torch, FLOAT_TORCH[dtype])).view(getattr(torch, f"int{w}"))


def decode(bits, dtype: str) -> list[Any]:
    """The values of ``dtype`` held in the signed int tensor ``bits``: ints or float64s."""
    import torch

    if dtype == "int1":
        return [bool(v) for v in bits.tolist()]
    if dtype in INT_DTYPES:
        return np.asarray(bits.numpy()).view(np.dtype(dtype)).tolist()
    return bits.view(getattr(torch, FLOAT_TORCH[dtype])).to(torch.float64).tolist()


# The fp8 formats' overflow, spelt out rather than left to torch, whose casts disagree across
# its own releases (torch 2.13 on this CPU saturates inf -> float8_e4m3fn to 448 but not to
# float8_e5m2; the H200's torch gave NaN): largest finite value, the magnitude from which round
# to nearest even overflows (e4m3fn's 448 is even, so the tie 464 stays; e5m2's 57344 is odd,
# so the tie 59392 overflows), and what a non-saturating overflow gives (OCP FP8).
FP8_LIMITS = {
    "float8_e4m3fn": (448.0, 464.0, False, math.nan),
    "float8_e5m2": (57344.0, 59392.0, True, math.inf),
}  # fmt: skip


def round_to(value: float, dtype: str, saturate: bool = False) -> float:
    """``value`` rounded (to nearest even) to ``dtype``, back as a float64. For fp8, overflow
    is explicit: the largest finite value when ``saturate`` (PTX ``.satfinite``), else inf or
    NaN as the format has (``FP8_LIMITS``)."""
    import torch

    name = FLOAT_TORCH[dtype]
    if name in FP8_LIMITS and not math.isnan(value):
        top, tie, tie_overflows, over = FP8_LIMITS[name]
        size = abs(value)
        if size > tie or (size == tie and tie_overflows):
            return math.copysign(top if saturate else over, value)
    t = torch.tensor([value], dtype=torch.float64)
    return t.to(getattr(torch, name)).to(torch.float64).item()


def wrap(value: int, dtype: str) -> int:
    w, signed = INT_DTYPES[dtype]
    value &= (1 << w) - 1
    return value - (1 << w) if signed and value >= 1 << (w - 1) else value


def _usable(vc: ValueCase, inputs: tuple[Any, ...]) -> bool:
    dts = vc.operand_dtypes[:1] if vc.op == "cast" else vc.operand_dtypes
    return all(representable(v, dt) for v, dt in zip(inputs, dts, strict=False))


def encode_inputs(ins: dict[int, Any], values: list[ValueCase]) -> None:
    """Write each values case's inputs into its input rows (unusable inputs become 1)."""
    for vc in values:
        dts = vc.operand_dtypes[:1] if vc.op == "cast" else vc.operand_dtypes
        for i, dt in enumerate(dts):
            if dt not in INT_DTYPES and dt not in FLOAT_TORCH:
                continue  # no host encoding: its cells are `skipped`
            column = [inp[i] if _usable(vc, inp) else 1 for inp in vc.inputs]
            column += [1] * (BLOCK - len(column))
            ins[width_of(dt)][TYPE_ROWS + 2 * vc.index + i] = encode(column, dt)


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def reference(vc: ValueCase, xs: tuple[Any, ...], result: str, ref: str | None = None) -> Any:
    """What the operation should give on inputs ``xs`` (as held in their dtypes) with result
    dtype ``result`` under reference ``ref`` (the battery's when None); None where the result is
    undefined (not asked)."""
    ref = ref or vc.reference
    with np.errstate(all="ignore"):
        if ref == "trunc_div":
            a, b = xs
            if b == 0:
                return None
            return wrap(_trunc_div(a, b), result)
        if ref == "c_mod":
            a, b = xs
            return None if b == 0 else wrap(a - b * _trunc_div(a, b), result)
        if ref == "true_div":
            a, b = (round_to(float(x), result) for x in xs)
            return round_to(float(np.float64(a) / np.float64(b)), result)
        if ref in ("lshift_wrap", "rshift"):
            a, b = xs
            if not 0 <= b < INT_DTYPES[vc.operand_dtypes[0]][0]:
                return None
            return wrap(a << b if ref == "lshift_wrap" else a >> b, result)
        if ref == "wrap":
            a, b = xs
            fn = {"add": a + b, "sub": a - b, "mul": a * b}
            return wrap(fn[vc.opname], result)
        if ref == "ieee":
            a, b = xs
            return round_to(float(np.float64(a) / np.float64(b)), result)
        if ref == "c_fmod":
            return round_to(float(np.fmod(np.float64(xs[0]), np.float64(xs[1]))), result)
        if ref == "floor_mod":
            # x - floor(x / y) * y, each op rounded to the result dtype (as divf, floor, mulf,
            # subf compute it): what 3.0.0-3.2.0 compile float % to.
            a, b = (round_to(float(x), result) for x in xs)
            q = round_to(float(np.floor(round_to(float(np.float64(a) / np.float64(b)), result))),
                         result)  # fmt: skip
            return round_to(float(np.float64(a) - round_to(float(q * np.float64(b)), result)),
                            result)  # fmt: skip
        if ref == "floor_div":
            return round_to(float(np.floor_divide(np.float64(xs[0]), np.float64(xs[1]))), result)
        if ref == "fmin_nan":
            a, b = xs
            return math.nan if math.isnan(a) or math.isnan(b) else min(a, b)
        if ref == "trunc":
            (a,) = xs
            if not math.isfinite(a):
                return None
            t = math.trunc(a)
            return t if representable(t, result) else None
        if ref in ("round_to_nearest_even", "exact"):
            (a,) = xs
            if result in INT_DTYPES:
                return None
            return round_to(float(a), result)
        if ref == "round_to_nearest_even_satfinite":
            (a,) = xs
            return None if result in INT_DTYPES else round_to(float(a), result, saturate=True)
        if ref == "math":
            return _math(vc.opname, xs[0], result)
        if ref in MINMAX:
            return _minmax(ref, "max" in vc.op, xs[0], xs[1])
        if ref == "clamp_sym":  # clamp(x, -y, y) = min(max(x, -y), y); NaN x: unspecified
            a, b = xs
            if isinstance(a, float) and math.isnan(a):
                return OBSERVE
            lo = wrap(-b, result) if result in INT_DTYPES else -b
            if lo > b:
                return None  # lo > hi: the bounds are undefined, not asked
            r = min(max(a, lo), b)
            return r if result in INT_DTYPES else round_to(float(r), result)
        if ref == "where_lt":  # x if x < y else y: a comparison with NaN is false
            a, b = xs
            return a if a < b else b
        if ref == "int_convert":  # two's complement: truncate, or extend by the source's sign
            (a,) = xs
            return wrap(int(a), result) if result in INT_DTYPES else None
    raise ValueError(f"values {vc.group}: unknown reference {ref!r}")


# min/max references: ieee (arith.minimumf: NaN propagates, -0.0 < +0.0), num (arith.minnumf:
# NaN is ignored, the sign of equal zeros is either), exact (integers), observe_nan (the
# battery's own: judged on numbers, NaN and zero pairs recorded).
MINMAX = ("ieee_minmax", "num_minmax", "exact_minmax", "observe_nan_minmax")


def _minmax(ref: str, is_max: bool, a: Any, b: Any) -> Any:
    pick = max if is_max else min
    if not isinstance(a, float):
        return pick(a, b)
    nan_a, nan_b = math.isnan(a), math.isnan(b)
    zeros = a == 0.0 and b == 0.0 and math.copysign(1, a) != math.copysign(1, b)
    if ref == "ieee_minmax":
        if nan_a or nan_b:
            return math.nan
        return (0.0 if is_max else -0.0) if zeros else pick(a, b)
    if ref == "num_minmax":
        if nan_a or nan_b:
            return b if nan_a and not nan_b else a if nan_b and not nan_a else math.nan
        return OBSERVE if zeros else pick(a, b)
    return OBSERVE if nan_a or nan_b or zeros else pick(a, b)


def _math(name: str, a: Any, result: str) -> Any:
    if result in INT_DTYPES:
        return wrap({"abs": abs(a), "neg": -a}[name], result)
    x = np.float64(a)
    fns: dict[str, Callable[[Any], Any]] = {
        "sqrt": np.sqrt, "log": np.log, "exp": np.exp, "floor": np.floor, "ceil": np.ceil,
        "abs": np.abs, "neg": np.negative, "rsqrt": lambda v: 1.0 / np.sqrt(v),
        "exp2": np.exp2, "log2": np.log2,
    }  # fmt: skip
    fn = fns[name]
    return round_to(float(fn(x)), result)


def ulp(value: float, dtype: str) -> float:
    import torch

    t = torch.tensor([abs(value)], dtype=torch.float64).to(getattr(torch, FLOAT_TORCH[dtype]))
    info = torch.finfo(t.dtype)
    up = torch.nextafter(t.float(), torch.tensor([math.inf])).to(t.dtype)
    step = (up.double() - t.double()).item()
    return step if step > 0 else float(info.tiny)


def same(got: Any, ref: Any, dtype: str, one_ulp: bool = False) -> bool:
    """Exact equality (NaN equals NaN; -0.0 differs from 0.0); within one ulp if asked."""
    if isinstance(ref, float) or isinstance(got, float):
        g, r = float(got), float(ref)
        if math.isnan(r) or math.isnan(g):
            return math.isnan(r) and math.isnan(g)
        if g == r:
            return math.copysign(1.0, g) == math.copysign(1.0, r)
        return one_ulp and math.isfinite(r) and abs(g - r) <= ulp(r, dtype)
    return got == ref


def fmt(v: Any) -> str:
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else str(v)
    return str(v)


def _keys(vc: ValueCase) -> list[tuple[int, tuple[Any, ...], str]]:
    """(input index, inputs, cell key) of each cell a values case has (a reduction: one)."""
    if vc.op == "reduce":
        return [(0, vc.inputs[0], vc.label)]
    dts = vc.operand_dtypes[:1] if vc.op == "cast" else vc.operand_dtypes
    encodable = all(dt in INT_DTYPES or dt in FLOAT_TORCH for dt in dts)
    return [(i, raw, f"{vc.label}({','.join(fmt(v) for v in raw)})")
            for i, raw in enumerate(vc.inputs) if _usable(vc, raw) or not encodable]  # fmt: skip


def _semantics_of(vc: ValueCase, semantics: Any, rules: dict, lowered: list[str] | None = None,
                  result: str | None = None) -> tuple[str | None, dict]:  # fmt: skip
    """The reference a case is judged by and the evidence for it: the rule its compiled ops
    (and, for a rule that asks, the lowered instructions of the kernel that ran) match, the
    battery's reference (a documented contract) for a group with no rules, or None (not
    judged) when the group has rules and the ops match none or were not read."""
    ops = semantics.ops.get(vc.index) if semantics is not None else None
    evidence: dict[str, Any] = {"ops": ops if ops is not None else "not read"}
    if lowered is not None:
        evidence["lowered"] = [i for i in lowered if "f8" in i or "e4m3" in i or "e5m2" in i]
    if semantics is not None:
        evidence["target"] = semantics.target
    if vc.group not in rules:
        evidence["reference"], evidence["means"] = vc.reference, "the battery's reference"
        return vc.reference, evidence
    rule = sem.choose(rules, vc.group, ops, frozenset(lowered) if lowered is not None else None,
                      result)  # fmt: skip
    if rule is None:
        why = semantics.ending if ops is None and semantics is not None else "no ops"
        evidence["means"] = f"no rule of semantics.toml matches ({why})"
        return None, evidence
    evidence["reference"], evidence["means"] = rule.reference, rule.means
    return rule.reference, evidence


def value_rows(sink: Sink, values: list[ValueCase], semantics: Any = None) -> list[Observation]:
    """One row per values group: a cell per input of each of its cases, each judged against
    the reference its release compiles it to (``semantics``, see fp.semantics); the ops
    and the reference chosen are in ``data.semantics[label]``."""
    rules = sem.load_rules()
    groups: dict[str, dict[str, dict]] = {}
    outs = sink.outputs
    ins = sink.inputs
    stored = [vc for vc in values if vc.index not in sink.value_errors
              and sink.value_dtypes.get(vc.index) in FLOAT_TORCH | INT_DTYPES]  # fmt: skip
    # A launch that returned normally yet left every output row as poisoned stored nothing:
    # that is what the release did (3.0.0/3.1.0's interpreter with numpy >= 2), so its cells are
    # `wrong` with got "unwritten", never values read from the poison. (A launch that raised or
    # did not run is no observation: value_errors / failed_part_rows.)
    lost_all = bool(stored) and all(
        unwritten(outs[width_of(sink.value_dtypes[vc.index])][vc.index]) for vc in stored
    )
    for vc in values:
        g = groups.setdefault(vc.group, {"cells": {}, "values": {}, "details": {},
                                         "semantics": {}})  # fmt: skip
        result = sink.value_dtypes.get(vc.index)
        failed = sink.value_errors.get(vc.index)
        ref_name, evidence = _semantics_of(vc, semantics, rules, sink.lowered,
                                           sink.value_dtypes.get(vc.index))  # fmt: skip
        g["semantics"][vc.label] = evidence
        dts = vc.operand_dtypes[:1] if vc.op == "cast" else vc.operand_dtypes
        encodable = all(dt in INT_DTYPES or dt in FLOAT_TORCH for dt in dts)
        if vc.op == "reduce":
            if lost_all and failed is None:
                g["cells"][vc.label] = UNWRITTEN  # stored nothing: as bad as wrong, said apart
                g["values"][vc.label] = {"got": UNWRITTEN, "dtype": result}
            else:
                _reduce_cell(g, vc, result, failed, ins, outs)
            continue
        got_all = None
        lost = False
        if (
            result is not None
            and failed is None
            and result in FLOAT_TORCH | INT_DTYPES | {"int1": 0}
        ):
            row = outs[width_of(result)][vc.index]
            lost = lost_all or (vc.op != "reduce" and unwritten(row))
            if not lost:
                got_all = decode(row, result)
        for i, _raw, key in _keys(vc):
            if failed is not None:
                g["cells"][key], g["details"][key] = failed
                continue
            if not encodable or result is None or (got_all is None and not lost):
                g["cells"][key] = "skipped"
                g["details"][key] = f"no host encoding for {dts} / result {result}"
                continue
            # Where the release stored nothing (``lost``) every judgement below still runs; what
            # came out is UNWRITTEN: as bad as a wrong value to the analysis and the gate
            # (fingerprint.BAD_VALUES), but no value contradicting the release's semantics.
            got = UNWRITTEN if lost or got_all is None else got_all[i]  # (None only if lost)
            if vc.reference == "observe":
                g["cells"][key] = UNWRITTEN if lost else fmt(got)
                continue
            if ref_name is None:
                g["cells"][key] = "skipped"
                g["details"][key] = f"not judged: {evidence['means']}"
                continue
            xs = tuple(decode(ins[width_of(dt)][TYPE_ROWS + 2 * vc.index + j], dt)[i]
                       for j, dt in enumerate(dts))  # fmt: skip
            ref = reference(vc, xs, result, ref_name)
            if ref is None:
                # Accepted, but the result is undefined for these inputs (a division by zero,
                # an overflowing float-to-int cast): no verdict, yet a cell, so that a release
                # that refuses the case has a counterpart here (else the gate cannot decide).
                g["cells"][key] = UNDEFINED
                continue
            if ref is OBSERVE:
                g["cells"][key] = UNWRITTEN if lost else fmt(got)
                continue
            if lost:
                g["cells"][key] = UNWRITTEN
                g["values"][key] = {"inputs": [fmt(x) for x in xs], "reference": fmt(ref),
                                    "got": UNWRITTEN, "dtype": result}  # fmt: skip
            elif same(got, ref, result, vc.opname in ONE_ULP):
                g["cells"][key] = "right"
            else:
                g["cells"][key] = "wrong"
                g["values"][key] = {"inputs": [fmt(x) for x in xs], "reference": fmt(ref),
                                    "got": fmt(got), "dtype": result,
                                    "semantics": ref_name}  # fmt: skip
    rows = []
    for name, g in groups.items():
        data = {k: v for k, v in g.items() if v}
        data.setdefault("cells", {})
        detail = STORED_NOTHING if lost_all else ""  # the whole launch's: on every group
        rows.append(Observation("observed", detail, data, name=f"fp.{name}"))
    return rows


def ops_rows(values: list[ValueCase], semantics: Any) -> list[Observation]:
    """The aot rows of the values groups: nothing runs, so a cell is what the release compiles
    the case to, one per case: its TTIR ops (``arith.remf``), ``rejected``/``absent`` when the
    frontend refused it. A change of ops between releases is a behaviour change; the semantics
    each side means are in ``data.semantics``."""
    rules = sem.load_rules()
    groups: dict[str, dict[str, dict]] = {}
    for vc in values:
        g = groups.setdefault(vc.group, {"cells": {}, "details": {}, "semantics": {}})
        refused = semantics.refused.get(vc.index)
        if refused is not None:
            g["cells"][vc.label], g["details"][vc.label] = refused
            continue
        ops = semantics.ops.get(vc.index)
        if ops is None:
            g["cells"][vc.label] = "error"
            g["details"][vc.label] = f"the TTIR was not read: {semantics.ending}"[:300]
            continue
        g["cells"][vc.label] = " ".join(ops) or "(no op)"
        g["semantics"][vc.label] = _semantics_of(vc, semantics, rules)[1]
    return [Observation("observed", "", {k: v for k, v in g.items() if v or k == "cells"},
                        name=f"fp.{name}") for name, g in groups.items()]  # fmt: skip


def failed_part_rows(values: list[ValueCase], status: str, reason: str) -> list[Observation]:
    """The rows of values groups whose part did not build or run: nothing was observed, so the
    group is ``status`` (``error``/``skipped``) with the reason once, and each of its cells is
    ``status`` too (never ``wrong`` from an output nobody wrote)."""
    groups: dict[str, dict[str, str]] = {}
    for vc in values:
        cells = groups.setdefault(vc.group, {})
        for _, _, key in _keys(vc):
            cells[key] = status
    return [Observation(status, reason[:500], {"cells": cells, "failed_part": reason[:500]},
                        name=f"fp.{name}") for name, cells in groups.items()]  # fmt: skip


def _reduce_cell(g: dict, vc: ValueCase, result, failed, ins, outs) -> None:
    key = f"{vc.label}"
    if failed is not None:
        g["cells"][key], g["details"][key] = failed
        return
    if result not in FLOAT_TORCH and result not in INT_DTYPES:
        g["cells"][key] = "skipped"  # the trace recorded no result dtype to decode it with
        g["details"][key] = f"no host encoding for result {result}"
        return
    dt = vc.operand_dtypes[0]
    xs = decode(ins[width_of(dt)][TYPE_ROWS + 2 * vc.index], dt)
    n = len(vc.inputs)
    xs = xs[:n] + [1] * (BLOCK - n) if n < BLOCK else xs
    got = decode(outs[width_of(result)][vc.index], result)[0]
    name = vc.opname
    nan = any(isinstance(x, float) and math.isnan(x) for x in xs)
    if name == "sum":
        exact: Any = math.nan if nan else sum(xs)  # NaN propagates through any sum order
    elif nan:
        exact = OBSERVE  # max/min/argmax over a NaN: the battery records, not judges
    else:
        exact = {"max": max(xs), "min": min(xs), "argmax": int(np.argmax(xs)),
                 "argmin": int(np.argmin(xs))}[name]  # fmt: skip
        signs = {math.copysign(1, x) for x in xs if isinstance(x, float) and x == 0.0}
        if name in ("max", "min") and exact == 0 and len(signs) > 1:
            exact = OBSERVE  # which zero is the max of -0.0 and 0.0 is open
    if exact is OBSERVE:
        g["cells"][key] = fmt(got)
        return
    if name.startswith("arg") or result in INT_DTYPES:
        ref = wrap(int(exact), result) if result in INT_DTYPES else exact
    else:
        ref = round_to(float(exact), result)
    if same(got, ref, result):
        g["cells"][key] = "right"
    else:
        g["cells"][key] = "wrong"
        g["values"][key] = {"inputs": [fmt(x) for x in xs], "reference": fmt(ref),
                            "got": fmt(got), "dtype": result}  # fmt: skip
