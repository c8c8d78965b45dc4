"""Typing a profile's uses by the compiled TTIR of the captured kernels.

The source reading leaves an operand unknown where the code does not say its dtype (a
dtype-generic kernel, a value read through a helper). The aot cell compiled every captured
launch and kept a summary of its TTIR (``matrix.backends.ttir_ops``: each op with its file,
line, column and operand origins). ``refine`` gives each use whose operand kinds are unknown
or ambiguous the kinds the TTIR op at the same file:line had, so that a change is judged
``used``/``not used`` instead of ``may affect``:

- the TTIR op must be one ``[ttir.ops]`` maps onto the use's op; where several such ops share
  the line, the one at the use's column (0- or 1-based, as releases differ) is taken, else all
  of them (their kinds together: fail closed);
- the kinds of every compile (every target, every release measured) are taken together: an
  operand that is bfloat16 on one release and float32 on the other may be either;
- an operand the source knew is only narrowed (``{cx_int, cx_float}`` and a TTIR ``i32``
  constant give ``cx_int``), never contradicted; a TTIR operand that is not typed (``?``)
  leaves the use's operand as the source had it.

Refined uses carry ``dtypes=ttir`` so that a report can say where a kind came from.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import Any

from matrix.analyze.profile.model import (
    INT_DTYPES,
    MAP_PATH,
    SCALAR_KINDS,
    Kinds,
    Profile,
    Use,
)
from matrix.core import DataFileError, load_toml

TTIR_ATTR = ("dtypes", "ttir")
COMPILED_IN = "compiled_in"  # an op record's key: the kernel whose compile kept the op


@dataclass(frozen=True)
class Target:
    """One profile op a TTIR op stands for, with where its operands are: ``slots[i]`` lists the
    TTIR operand indexes (or ``-1``: the result) that make up the use's operand ``i``."""

    op: str
    slots: tuple[tuple[int, ...], ...] | None  # None: operand i is TTIR operand i


@dataclass(frozen=True)
class TtirMap:
    ops: Mapping[str, tuple[Target, ...]]
    dtypes: Mapping[str, str]
    scalar_args: Mapping[str, str]


def _target(spec: str) -> Target:
    op, _, where = spec.partition("@")
    if not where:
        return Target(op, None)
    slots = []
    for part in where.split(","):
        slots.append(tuple(-1 if p == "r" else int(p) for p in part.split("+")))
    return Target(op, tuple(slots))


@lru_cache(maxsize=2)
def load_ttir_map(path: str | Path = MAP_PATH) -> TtirMap:
    doc = load_toml(path).get("ttir")
    if not isinstance(doc, dict):
        raise DataFileError(path, "ttir", "a table", doc)
    ops: dict[str, tuple[Target, ...]] = {}
    for name, spec in (doc.get("ops") or {}).items():
        specs = [spec] if isinstance(spec, str) else spec
        if not isinstance(specs, list) or not all(isinstance(s, str) for s in specs):
            raise DataFileError(path, f"ttir.ops.{name}", "a profile op or a list of them", spec)
        ops[name] = tuple(_target(s) for s in specs)
    for key in ("dtypes", "scalar_args"):
        if not isinstance(doc.get(key), dict):
            raise DataFileError(path, f"ttir.{key}", "a table", doc.get(key))
    return TtirMap(ops, doc["dtypes"], doc["scalar_args"])


def kinds_of(spelling: str, tmap: TtirMap) -> Kinds:
    """A summary's operand spelling (``bf16``, ``u8``, ``c:f32``, ``a:i32``, ``p:f16``) as the
    profile's kinds; None where the TTIR did not type it."""
    prefix, _, elem = spelling.rpartition(":")
    if elem == "?" or not elem:
        return None
    if prefix == "a":
        kind = tmap.scalar_args.get(elem)
        return frozenset({kind}) if kind else None
    dtypes = _dtypes(elem, tmap)
    if dtypes is None:
        return None
    if prefix == "c":  # a constant: a literal or constexpr, or a tensor the compiler folded
        scalar = {"lit_bool"} if elem == "i1" else (
            {"lit_int", "cx_int"} if dtypes & INT_DTYPES else {"lit_float", "cx_float"}
        )  # fmt: skip
        return frozenset(scalar | dtypes)
    return dtypes


def _dtypes(elem: str, tmap: TtirMap) -> frozenset[str] | None:
    m = re.fullmatch(r"([usi])(\d+)", elem)
    if m and m.group(2) != "1":
        width = m.group(2)
        sign = {"u": ("uint",), "s": ("int",), "i": ("int", "uint")}[m.group(1)]
        return frozenset(f"{s}{width}" for s in sign)
    name = tmap.dtypes.get(elem)
    return frozenset({name}) if name else None


def _parts(path: str) -> tuple[str, ...]:
    if path.startswith("<captured "):  # a kernel rebuilt from its recorded definition
        path = path[len("<captured ") :].rsplit(":", 1)[0]
    return tuple(
        p for p in PurePosixPath(path.replace("\\", "/")).parts if p not in ("..", ".", "/")
    )


def _same_file(a: str, b: str) -> bool:
    pa, pb = _parts(a), _parts(b)
    n = min(len(pa), len(pb))
    return n > 0 and pa[-n:] == pb[-n:]


class TtirIndex:
    """Every kept TTIR op of the given compiles, by (file name, line)."""

    def __init__(self, records: Iterable[Mapping[str, Any]], tmap: TtirMap | None = None):
        self.map = tmap or load_ttir_map()
        self.by_line: dict[tuple[str, int], list[Mapping[str, Any]]] = {}
        self.compiled: set[tuple[str, str]] = set()  # (file, kernel) a compile kept ops of
        self.count = 0
        for r in records:
            if not isinstance(r, Mapping) or not isinstance(r.get("file"), str):
                continue
            parts = _parts(r["file"])
            if not parts:
                continue
            self.by_line.setdefault((parts[-1], int(r.get("line") or 0)), []).append(r)
            if r.get(COMPILED_IN):
                self.compiled.add((r["file"], str(r[COMPILED_IN])))
            self.count += 1

    def left_out(self, use: Use) -> bool:
        """Whether a compile of the use's own kernel kept ops of its file but none at its
        line: the captured launches compiled the kernel and pruned this line (a branch of a
        constexpr, or of an argument specialized to 1, that no launch took). A kernel no
        compile answered for (skipped, rejected) says nothing of its lines."""
        parts = _parts(use.path)
        if not parts or not any(
            k == use.kernel and _same_file(f, use.path) for f, k in self.compiled
        ):
            return False
        return not any(
            _same_file(str(r["file"]), use.path)
            for r in self.by_line.get((parts[-1], use.line), [])
        )

    def candidates(self, use: Use) -> list[tuple[Mapping[str, Any], Target]]:
        parts = _parts(use.path)
        if not parts:
            return []
        found = []
        for r in self.by_line.get((parts[-1], use.line), []):
            if not _same_file(str(r["file"]), use.path):
                continue
            for t in self.map.ops.get(str(r.get("op")), ()):
                if t.op == use.op:
                    found.append((r, t))
        at_col = [(r, t) for r, t in found if r.get("col") in (use.col, use.col + 1)]
        return at_col or found

    def at(self, use: Use) -> bool:
        """Whether some compile put an op at the use's own line and column."""
        parts = _parts(use.path)
        return bool(parts) and any(
            _same_file(str(r["file"]), use.path) and r.get("col") in (use.col, use.col + 1)
            for r in self.by_line.get((parts[-1], use.line), [])
        )

    def operand_kinds(self, use: Use, i: int, r: Mapping[str, Any], t: Target) -> Kinds:
        """The kinds TTIR op ``r`` gives the use's operand ``i``."""
        slots = t.slots[i] if t.slots is not None and i < len(t.slots) else (i,)
        own = i in use.casts  # an explicit cast in the source: the op's operand as given
        kinds: set[str] = set()
        for s in slots:
            if s == -1:
                spelling = str(r.get("result") or "?")
            else:
                row = r.get("direct") if own and r.get("direct") else r.get("operands")
                if not isinstance(row, list) or s >= len(row):
                    return None
                spelling = str(row[s])
            k = kinds_of(spelling, self.map)
            if k is None:
                return None
            kinds |= k
        return frozenset(kinds)


def _aligned(use: Use, per_record: list[list[Kinds]]) -> list[list[Kinds]]:
    """Commutative ops: the compiler moves a constant to the right; where the source has a
    scalar on the left and the TTIR has it on the right, swap the TTIR operands back."""
    out = []
    left = use.operands[0] if len(use.operands) == 2 else None
    for row in per_record:
        a, b = [*row, None, None][:2]
        if (
            left is not None
            and left <= SCALAR_KINDS
            and a is not None
            and b is not None
            and not (a & SCALAR_KINDS)
            and b & SCALAR_KINDS
        ):
            row = [b, a]
        out.append(row)
    return out


def _unsure(use: Use) -> bool:
    """An operand unknown or ambiguous, or a dot's accumulator unknown."""
    return any(k is None or len(k) > 1 for k in use.operands) or (
        use.op == "dot" and use.attr("acc") == "?"
    )


def refine_use(use: Use, index: TtirIndex) -> Use:
    """``use`` with its unknown or ambiguous operands typed by the TTIR (itself if none)."""
    unsure = [k is None or len(k) > 1 for k in use.operands]
    acc_unsure = use.op == "dot" and use.attr("acc") == "?"
    if not any(unsure) and not acc_unsure:
        return use
    cands = index.candidates(use)
    if not cands:
        return _noop_cast(use, index)
    rows = _aligned(
        use,
        [[index.operand_kinds(use, i, r, t) for i in range(len(use.operands))] for r, t in cands],
    )
    operands = list(use.operands)
    changed = False
    for i, old in enumerate(use.operands):
        if not unsure[i]:
            continue
        got = [row[i] for row in rows]
        if any(k is None for k in got):
            continue
        new = frozenset().union(*got)  # type: ignore[arg-type]
        narrowed = new if old is None else (old & new or old)
        if narrowed != old:
            operands[i] = narrowed
            changed = True
    attrs = dict(use.attrs)
    if acc_unsure:
        accs = []
        for r, _ in cands:
            ops = r.get("operands")
            k = kinds_of(str(ops[2]), index.map) if isinstance(ops, list) and len(ops) > 2 else None
            accs.append(k)
        if accs and all(k is not None for k in accs):
            acc = frozenset().union(*accs) - SCALAR_KINDS  # type: ignore[arg-type]
            if acc:
                attrs["acc"] = "|".join(sorted(acc))
                changed = True
    if not changed:
        return use
    attrs[TTIR_ATTR[0]] = TTIR_ATTR[1]
    return replace(use, operands=tuple(operands), attrs=tuple(sorted(attrs.items())))


def _noop_cast(use: Use, index: TtirIndex) -> Use:
    """A ``.to(T)`` that left no conversion at its own line and column, where the compiler did
    put ops there (the value it casts), was a no-op: its source already had T's IR type (T, or
    the same width of the other signedness: ``int8.to(uint8)`` is ``i8`` to ``i8``)."""
    if use.op != "cast.to" or len(use.operands) != 2 or use.operands[0] is not None:
        return use
    dst = use.operands[1]
    if dst is None or not index.at(use):
        return use
    src = set(dst)
    for d in dst:
        if d in INT_DTYPES:
            src.add(d[1:] if d.startswith("u") else "u" + d)
    attrs = dict(use.attrs)
    attrs[TTIR_ATTR[0]] = TTIR_ATTR[1]
    return replace(use, operands=(frozenset(src), dst), attrs=tuple(sorted(attrs.items())))


def compile_records(runs: Iterable[Any]) -> list[Mapping[str, Any]]:
    """Every TTIR op summary in the runs' kernel compiles (``ttir_ops`` of each record)."""
    out: list[Mapping[str, Any]] = []
    for run in runs:
        for rec in run.extra.get("kernel_compiles") or []:
            ops = rec.get("ttir_ops") if isinstance(rec, dict) else None
            if isinstance(ops, list):
                # each op names the kernel whose compile kept it (``left_out`` asks per kernel)
                kernel = str(rec.get("kernel") or "").rsplit(":", 1)[-1].rsplit(".", 1)[-1]
                out += [{**o, COMPILED_IN: kernel} for o in ops if isinstance(o, Mapping)]
    return out


def refine(profile: Profile, records: Sequence[Mapping[str, Any]]) -> int:
    """Type ``profile``'s uses by ``records`` in place; the number of uses it typed."""
    if not records:
        return 0
    index = TtirIndex(records)
    n = 0
    for i, use in enumerate(profile.uses):
        new = refine_use(use, index)
        if new is not use:
            profile.uses[i] = new
            n += 1
        elif use.test and _unsure(use) and index.left_out(use):
            # A launched kernel's line that no captured launch compiled: say so, and what
            # would type it, rather than only what the source leaves open.
            pruned = (
                f"no captured launch of `{use.kernel}` compiled line {use.line} (a branch its "
                "constexprs left out): run a test whose launch takes it"
            )
            profile.uses[i] = replace(
                use, decides=f"{pruned}; or {use.decides}" if use.decides else pruned
            )
    profile.notes.append(
        f"{n} use(s) typed by the compiled TTIR of captured kernels ({index.count} TTIR ops read)"
    )
    return n
