"""A compact summary of a compiled kernel's TTIR: the operations a usage profile needs.

The aot cell compiles each captured launch (``matrix.backends.kernels.compile_launch``); the
TTIR it gets back says, for every operation, the dtypes it really ran on, which the kernel's
source may not reveal (a dtype-generic kernel, a value read through a helper). ``summarize``
keeps the operations listed in ``matrix/data/usage_map.toml`` ``[ttir.ops]``, each as::

    {"op": "arith.maxnumf", "file": "act.py", "line": 19, "col": 9,
     "operands": ["bf16", "c:f32"], "result": "f32", "attrs": {}}

``file``/``line``/``col`` are the source location the compiler recorded (for code inlined
from a helper, the helper's own line). An operand is spelt by its *origin*: the value the
code wrote, before the conversions and broadcasts the compiler inserted at that same location
(``arith.extf %x`` of a bfloat16 ``x`` at the line of a ``tl.maximum`` is ``bf16``). Integer
operands carry their signedness where the IR shows it (``u8``: an ``extui``/``uitofp``/``cmpi
ult``... reads it as unsigned; ``s8``: signed; ``i8``: not shown). ``c:`` marks a constant,
``a:`` a scalar argument of the kernel, ``p:`` a pointer (its element type).

This module only reads text: it never imports Triton, and it works on the IR of every release
the matrix measures (locations with or without value names, 0- or 1-based columns).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from matrix.core import DATA_DIR, DataFileError, load_toml

MAP_PATH = DATA_DIR / "usage_map.toml"
MAX_OPS = 400  # per compile: a summary, not the IR (a kernel with more keeps its first 400)

_LOC_DEF = re.compile(r"^(#loc\d*)\s*=\s*loc\((.*)\)\s*$")
_FILE_LOC = re.compile(r'^"([^"]*)":(\d+):(\d+)')
_NAME_LOC = re.compile(r'^"[^"]*"\((.*)\)$')
_CALLSITE = re.compile(r"^callsite\((#loc\d*|.+?) at (.+)\)$")
_TRAILING_LOC = re.compile(r"\s*loc\((.*)\)\s*$")
_RESULT = re.compile(r"^\s*(%[\w.$-]+)(?::\d+)?\s*=\s*(.*)$")
_OP = re.compile(r'^"?([a-z_]+\.[a-z_.]+)"?')
_SSA = re.compile(r"%[\w.$-]+(?:#\d+)?")


@dataclass(frozen=True)
class TtirTable:
    """``[ttir]`` of usage_map.toml: which ops to keep, which to look through, signedness."""

    keep: frozenset[str]
    trace_through: frozenset[str]
    unsigned: frozenset[str]
    signed: frozenset[str]
    same_type: frozenset[str]
    skip_paths: tuple[str, ...]


@lru_cache(maxsize=2)
def load_table(path: str | Path = MAP_PATH) -> TtirTable:
    doc = load_toml(path).get("ttir")
    if not isinstance(doc, dict) or not isinstance(doc.get("ops"), dict):
        raise DataFileError(path, "ttir.ops", "a table of TTIR op -> profile op", doc)
    lists = {}
    for key in ("trace_through", "unsigned", "signed", "same_type", "skip_paths"):
        value = doc.get(key)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise DataFileError(path, f"ttir.{key}", "a list of strings", value)
        lists[key] = value
    return TtirTable(
        frozenset(doc["ops"]),
        frozenset(lists["trace_through"]),
        frozenset(lists["unsigned"]),
        frozenset(lists["signed"]),
        frozenset(lists["same_type"]),
        tuple(lists["skip_paths"]),
    )


def element_type(text: str) -> str:
    """``tensor<32x32xf16>`` -> ``f16``; ``tensor<8x!tt.ptr<i8>>`` -> ``ptr<i8>``; ``f32``."""
    text = text.strip()
    if text.startswith("tensor<"):
        inner = text[len("tensor<") : -1]
        parts = re.split(r"x(?![^<]*>)", inner)  # dims, then the element (which may hold x)
        text = parts[-1]
        if "," in text:  # an encoding after the element type (TTGIR): drop it
            text = text.split(",", 1)[0]
    text = text.strip()
    if text.startswith("!tt.ptr<"):
        return "ptr<" + element_type(text[len("!tt.ptr<") : -1].split(",")[0]) + ">"
    return text


@dataclass
class _Op:
    name: str
    results: list[str]
    operands: list[str]
    types: str  # the text after the last top-level ':'
    loc: str
    text: str
    in_region: bool = False  # inside a reduce/scan combine region


class _Ir:
    """The parsed module: locations, every value's type, every op with its operands."""

    def __init__(self, ttir: str) -> None:
        self.locs: dict[str, str] = {}
        self.types: dict[str, str] = {}
        self.args: set[str] = set()
        self.ops: list[_Op] = []
        self.defs: dict[str, _Op] = {}
        self.uses: dict[str, list[_Op]] = {}
        pending: list[_Op] = []  # generic-form ops with regions: their types come at the '})'
        for raw in ttir.splitlines():
            line = raw.strip()
            m = _LOC_DEF.match(line)
            if m:
                self.locs[m.group(1)] = m.group(2)
                continue
            if line.startswith(("tt.func", "^bb")):
                for name, typ in _typed_args(line):
                    self.types[name] = typ
                    if line.startswith("tt.func"):
                        self.args.add(name)
            if line.startswith("})") and pending:
                done = pending.pop()
                body, loc = self._split_loc(line)
                done.types, done.loc = body.split(":", 1)[1].strip() if ":" in body else "", loc
                self._type_results(done)
                continue
            op = self._parse(line)
            if op is None:
                continue
            op.in_region = bool(pending)
            if op.name == "scf.for":
                self._loop(line, op)
            self.ops.append(op)
            for r in op.results:
                self.defs[r] = op
            for v in op.operands:
                self.uses.setdefault(v, []).append(op)
            if line.endswith("({"):
                pending.append(op)
            else:
                self._type_results(op)

    def _loop(self, line: str, op: _Op) -> None:
        """``scf.for %k = ... iter_args(%a = %init, ...) -> (types) : i32 {``: the loop value
        is the bound's type, a carried value and each result its initial value's."""
        m = re.search(r"scf\.for\s+(%[\w.$-]+)\s*=", line)
        bound = line.rstrip(" {").rsplit(":", 1)[-1].strip()
        if m and re.fullmatch(r"i\d+", bound):
            self.types[m.group(1)] = bound
        pairs = re.findall(r"(%[\w.$-]+)\s*=\s*(%[\w.$-]+)", line.split("iter_args", 1)[-1])
        for i, (carried, init) in enumerate(pairs if "iter_args" in line else []):
            if init in self.types:
                self.types[carried] = self.types[init]
                if op.results:
                    self.types[f"{op.results[0]}#{i}"] = self.types[init]
                    if i == 0:
                        self.types.setdefault(op.results[0], self.types[init])

    @staticmethod
    def _split_loc(line: str) -> tuple[str, str]:
        m = _TRAILING_LOC.search(line)
        return (line[: m.start()], m.group(1)) if m else (line, "")

    def _parse(self, line: str) -> _Op | None:
        body, loc = self._split_loc(line)
        results: list[str] = []
        m = _RESULT.match(body)
        if m:
            results, body = [m.group(1)], m.group(2)
        om = _OP.match(body)
        if om is None:
            return None
        name = om.group(1)
        rest = body[om.end() :]
        head, types = rest, ""
        depth = 0
        for i, ch in enumerate(rest):  # the last ':' outside <> () {} splits operands/types
            if ch in "<({[":
                depth += 1
            elif ch in ">)}]":
                depth -= 1
            elif ch == ":" and depth == 0:
                head, types = rest[:i], rest[i + 1 :]
        operands = _SSA.findall(re.sub(r"\{[^{}]*\}", "", head))  # not in attribute dicts
        return _Op(name, results, operands, types.strip(), loc, body)

    def _type_results(self, op: _Op) -> None:
        if not op.results or not op.types:
            return
        types = op.types
        if " to " in types:
            result = types.rsplit(" to ", 1)[1]
        elif "->" in types:
            result = types.rsplit("->", 1)[1].strip().strip("()")
        else:
            result = [t for t in re.split(r",(?![^<]*>)", types)][-1 if op.name.endswith(
                "select") else 0]  # fmt: skip
        elem = element_type(result)
        if op.name in ("arith.cmpi", "arith.cmpf"):
            elem = "i1"
        elif op.name == "tt.load" and elem.startswith("ptr<"):
            elem = elem[4:-1]
        self.types[op.results[0]] = elem

    # -- locations
    def frames(self, loc: str, depth: int = 0) -> list[tuple[str, int, int]]:
        """The (file, line, col) frames of a location, innermost (a callsite's callee) first."""
        loc = loc.strip()
        if depth > 20 or not loc or loc == "unknown":
            return []
        if loc.startswith("#loc"):
            return self.frames(self.locs.get(loc, ""), depth + 1)
        m = _FILE_LOC.match(loc)
        if m:
            return [(m.group(1), int(m.group(2)), int(m.group(3)))]
        m = _CALLSITE.match(loc)
        if m:
            return self.frames(m.group(1), depth + 1) + self.frames(m.group(2), depth + 1)
        m = _NAME_LOC.match(loc)
        if m:
            return self.frames(m.group(1), depth + 1)
        if loc.startswith("fused["):
            for part in re.findall(r"#loc\d*", loc):
                found = self.frames(part, depth + 1)
                if found:
                    return found
        return []

    def where(self, loc: str, skip: tuple[str, ...] = ()) -> tuple[str, int, int] | None:
        """The innermost frame outside ``skip`` (Triton's own library: ``tl.cumsum`` is a
        function there, called from the team's line)."""
        for frame in self.frames(loc):
            if not any(s in frame[0] for s in skip):
                return frame
        return None

    # -- values
    def elem(self, value: str) -> str:
        t = self.types.get(value, "?")
        return element_type(t) if t != "?" else t


class _Signs:
    """Union-find of integer values that must share a signedness, with the evidence found."""

    def __init__(self, ir: _Ir, table: TtirTable) -> None:
        self.parent: dict[str, str] = {}
        self.evidence: dict[str, set[str]] = {}
        for op in ir.ops:
            base = op.name
            if base in table.same_type:
                vals = [*op.operands, *op.results]
                if base.endswith("select"):
                    vals = [*op.operands[1:], *op.results]
                for v in vals[1:]:
                    self._union(vals[0], v)
            pred = _predicate(op)
            kind = None
            if base in table.unsigned or (pred or "").startswith("u"):
                kind = "u"
            elif base in table.signed or (pred or "").startswith("s"):
                kind = "s"
            if kind is None:
                continue
            # a conversion from int reads its operand; one to int writes its result
            vals = op.results if base in ("arith.fptoui", "arith.fptosi") else op.operands
            if base in ("arith.divui", "arith.remui", "arith.divsi", "arith.remsi",
                        "arith.maxui", "arith.minui", "arith.maxsi", "arith.minsi",
                        "arith.shrui", "arith.shrsi"):  # fmt: skip
                vals = [*op.operands, *op.results]
            for v in vals:
                self.evidence.setdefault(v, set()).add(kind)
        merged: dict[str, set[str]] = {}
        for v, kinds in self.evidence.items():
            merged.setdefault(self._find(v), set()).update(kinds)
        self.by_root = merged

    def _find(self, v: str) -> str:
        while self.parent.get(v, v) != v:
            v = self.parent[v]
        return v

    def _union(self, a: str, b: str) -> None:
        ra, rb = self._find(a), self._find(b)
        if ra != rb:
            self.parent[ra] = rb

    def of(self, v: str) -> str:
        kinds = self.by_root.get(self._find(v), set())
        return next(iter(kinds)) if len(kinds) == 1 else "i"


def _typed_args(line: str) -> list[tuple[str, str]]:
    """``%name: type`` pairs of a function or block header (types may nest ``<>``)."""
    out = []
    for m in re.finditer(r"(%[\w.$-]+)\s*:\s*", line):
        i, depth, start = m.end(), 0, m.end()
        while i < len(line):
            ch = line[i]
            if ch == "<":
                depth += 1
            elif ch == ">":
                depth -= 1
            elif depth == 0 and ch in " ,){":
                break
            i += 1
        out.append((m.group(1), line[start:i]))
    return out


def _predicate(op: _Op) -> str | None:
    if op.name not in ("arith.cmpi", "arith.cmpf"):
        return None
    m = re.match(r"\s*(\w+)", op.text[len(op.name) :].lstrip('"'))
    return m.group(1) if m else None


def _spell(ir: _Ir, signs: _Signs, value: str, origin_op: _Op | None) -> str:
    """An operand's spelling: ``bf16``, ``u8``/``s8``/``i8``, ``c:f32``, ``a:i32``, ``p:f16``."""
    elem = ir.elem(value)
    if elem.startswith("ptr<"):
        return "p:" + _int_sign(elem[4:-1], signs, value, ir)
    if origin_op is not None and origin_op.name == "arith.constant":
        return "c:" + elem
    if value in ir.args and origin_op is None:
        return "a:" + elem
    return _int_sign(elem, signs, value, ir)


def _int_sign(elem: str, signs: _Signs, value: str, ir: _Ir) -> str:
    m = re.fullmatch(r"i(\d+)", elem)
    if not m or elem == "i1":
        return elem
    return signs.of(value) + m.group(1)


def _origin(ir: _Ir, table: TtirTable, value: str, loc: str) -> str:
    """Look through the conversions and broadcasts made at ``loc`` (the op's own location)."""
    seen = 0
    while seen < 8:
        op = ir.defs.get(value)
        if op is None or op.name not in table.trace_through or not op.operands:
            return value
        if ir.where(op.loc, table.skip_paths) != ir.where(loc, table.skip_paths):
            return value
        value = op.operands[0]
        seen += 1
    return value


def _attrs(op: _Op) -> dict[str, str]:
    text = op.text
    out: dict[str, str] = {}
    pred = _predicate(op)
    if pred:
        out["pred"] = pred
    if op.name == "tt.load":
        out["masked"] = str(len(op.operands) >= 2).lower()
    elif op.name == "tt.store":
        out["masked"] = str(len(op.operands) >= 3).lower()
    if op.name in ("tt.load", "tt.store") and "boundaryCheck" in text:
        out["boundary_check"] = "true"
    for key in ("inputPrecision", "maxNumImpreciseAcc", "symbol", "rounding"):
        m = re.search(rf"{key}\s*=\s*\"?([\w.]+)\"?", text)
        if m:
            out[key] = m.group(1)
    if op.name in ("tt.atomic_rmw", "tt.atomic_cas"):
        words = re.findall(r"\b([a-z_]+)\b,", text[len(op.name) :].split("%", 1)[0])
        if op.name == "tt.atomic_rmw" and words:
            out["rmw"] = words[0]
            words = words[1:]
        if words:
            out["sem"] = words[0]
        if len(words) > 1:
            out["scope"] = words[1]
    if op.name == "tt.call":
        m = re.search(r"@([\w.$]+)", text)
        if m:
            out["callee"] = m.group(1)
    return out


def summarize(ttir: str, table: TtirTable | None = None) -> list[dict[str, Any]]:
    """The kept ops of ``ttir`` (module docstring), in IR order, duplicates dropped."""
    table = table or load_table()
    if not ttir.strip():
        return []
    ir = _Ir(ttir)
    signs = _Signs(ir, table)
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for op in ir.ops:
        if op.name not in table.keep:
            continue
        where = ir.where(op.loc, table.skip_paths)
        if where is None:
            continue
        frames = ir.frames(op.loc)
        if op.in_region and frames and frames[0] != where:
            continue  # a combine function of Triton's own (tl.sum's add), not the team's code
        operands, direct = [], []
        for v in op.operands:
            o = _origin(ir, table, v, op.loc)
            operands.append(_spell(ir, signs, o, ir.defs.get(o)))
            direct.append(_spell(ir, signs, v, ir.defs.get(v)))
        result = _int_sign(ir.elem(op.results[0]), signs, op.results[0], ir) if op.results else ""
        rec = {
            "op": op.name,
            "file": where[0],
            "line": where[1],
            "col": where[2],
            "operands": operands,
            **({"direct": direct} if direct != operands else {}),
            "result": result,
            "attrs": _attrs(op),
        }
        key = repr(sorted(rec.items()))
        if key in seen:
            continue
        seen.add(key)
        out.append(rec)
        if len(out) >= MAX_OPS:
            break
    return out


def summarize_ir(ir_texts: Mapping[str, str]) -> list[dict[str, Any]] | None:
    """``summarize`` of a compile's ``ttir`` (None where the compile kept no TTIR)."""
    text = ir_texts.get("ttir")
    return summarize(text) if isinstance(text, str) else None
