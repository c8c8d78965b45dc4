"""Each release's own semantics for the values battery: the TTIR ops it compiles a case to.

A value is ``wrong`` only against what the same release defines. Float ``%`` is the example
that forced this: 3.0.0-3.2.0 compile it to floor-mod (``arith.divf``, ``math.floor``,
``arith.mulf``, ``arith.subf``: the result takes the divisor's sign), 3.3.1 to ``arith.remf``
(C fmod: the dividend's sign). Judged by one fixed C-fmod reference, three releases looked
wrong where they did exactly what they compile to.

So the probe compiles the values cases to TTIR on the same release (no GPU: the ``aot`` path,
stopped once TTIR exists) and reads, per case, the ops that compute the stored value
(``case_ops``). ``matrix/probes/fp/semantics.toml`` maps ops to the reference they mean
(``choose``); the ops are recorded beside the values as evidence.

    >>> text = '''tt.func public @battery_kernel(%arg0: !tt.ptr<f32>) {
    ...   %0 = tt.load %p : tensor<16x!tt.ptr<f32>>
    ...   %1 = arith.remf %0, %0 : tensor<16xf32>
    ...   tt.store %q, %1 : tensor<16x!tt.ptr<f32>>
    ...   tt.return
    ... }'''
    >>> case_ops(text, 1)
    [['arith.remf']]
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matrix.core import DataFileError, load_toml

RULES_PATH = Path(__file__).resolve().parent / "semantics.toml"

# Ops that move or address data rather than compute the value: not part of a case's semantics.
PLUMBING = frozenset({
    "tt.load", "tt.addptr", "tt.splat", "tt.make_range", "arith.constant", "tt.broadcast",
    "tt.expand_dims", "tt.get_program_id", "tt.reshape", "tt.return",
})  # fmt: skip
# Attributes that change what an op computes; kept in the op's name ("tt.fp_to_fp{rtne}").
SEMANTIC_ATTRS = ("rounding", "predicate", "propagateNan")

_DEF = re.compile(r"^\s*(%[\w.$-]+)(?::\d+)?\s*=\s*\"?([a-z_]+\.[\w.]+)\"?(.*)$")
_USE = re.compile(r"%[\w.$-]+")
_STORE = re.compile(r"^\s*\"?tt\.store\"?[\s(]+(%[\w.$-]+)\s*,\s*(%[\w.$-]+)")
_FUNC = re.compile(r"tt\.func\b.*@battery_kernel")


class SemanticsError(ValueError):
    """The TTIR text cannot be attributed to the cases (the message says what was found)."""


@dataclass(frozen=True)
class Rule:
    group: str
    ops: tuple[str, ...]
    reference: str
    means: str
    # result dtype -> instruction prefix the lowered code must hold (empty: TTIR ops alone)
    lowered: tuple[tuple[str, str], ...] = ()


def load_rules(path: str | Path = RULES_PATH) -> dict[str, list[Rule]]:
    """The rules of ``semantics.toml`` by group; DataFileError names a malformed entry."""
    doc = load_toml(path)
    out: dict[str, list[Rule]] = {}
    for i, row in enumerate(doc.get("rule", [])):
        try:
            lowered = tuple(sorted(dict(row.get("lowered", {})).items()))
            rule = Rule(row["group"], tuple(row["ops"]), row["reference"], row["means"], lowered)
        except (KeyError, TypeError, ValueError):
            raise DataFileError(path, f"rule[{i}]", "group, ops, reference, means[, lowered]",
                                row) from None  # fmt: skip
        out.setdefault(rule.group, []).append(rule)
    return out


def _kernel_body(text: str) -> list[str]:
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if _FUNC.search(ln)), None)
    if start is None:
        raise SemanticsError("no tt.func @battery_kernel in the TTIR")
    body = []
    for ln in lines[start + 1 :]:
        if re.search(r"\btt\.func\b", ln):
            break
        body.append(ln)
    return body


def _op_name(name: str, rest: str) -> str:
    attrs = [f"{a}={m.group(1)}" for a in SEMANTIC_ATTRS
             for m in [re.search(rf"\b{a}\s*=\s*([#\w<>.]+)", rest)] if m]  # fmt: skip
    return f"{name}{{{','.join(attrs)}}}" if attrs else name


def case_ops(text: str, stored: int) -> list[list[str]]:
    """Per ``tt.store`` of the battery kernel, in program order (the cases store in their
    order), the ops its stored value is computed with, in program order, plumbing left out.
    SemanticsError when the kernel does not hold exactly ``stored`` stores."""
    defs: dict[str, tuple[int, str, list[str]]] = {}
    stores: list[str] = []
    for n, line in enumerate(_kernel_body(text)):
        code = line.split(" loc(")[0]
        m = _STORE.match(code)
        if m:
            stores.append(m.group(2))
            continue
        d = _DEF.match(code)
        if d:
            result, name, rest = d.groups()
            defs[result] = (n, _op_name(name, rest), _USE.findall(rest))
    if len(stores) != stored:
        raise SemanticsError(f"{len(stores)} tt.store in the kernel for {stored} stored cases")
    out = []
    for value in stores:
        seen: dict[str, tuple[int, str]] = {}
        todo = [value]
        while todo:
            v = todo.pop()
            if v in seen or v not in defs:
                continue
            n, name, uses = defs[v]
            seen[v] = (n, name)
            if name != "tt.load":
                todo.extend(uses)
        ops = [name for _, name in sorted(seen.values()) if name.split("{")[0] not in PLUMBING]
        out.append(ops)
    return out


def _in_order(wanted: tuple[str, ...], ops: list[str]) -> bool:
    it = iter(op.split("{")[0] for op in ops)
    return all(any(w == op for op in it) for w in wanted)


def choose(
    rules: dict[str, list[Rule]],
    group: str,
    ops: list[str] | None,
    lowered: frozenset[str] | None = None,
    result: str | None = None,
) -> Rule | None:
    """The first rule of ``group`` whose ops appear in ``ops`` (in order) and, for a rule with
    ``lowered``, whose instruction for the case's ``result`` dtype starts one of the ``lowered``
    instructions read; None when none does, or when the group has no rules (then the battery's
    reference, a documented contract, holds)."""
    for rule in rules.get(group, []):
        if ops is None or not _in_order(rule.ops, ops):
            continue
        if rule.lowered:
            prefix = dict(rule.lowered).get(result or "")
            if lowered is None or prefix is None or not any(i.startswith(prefix) for i in lowered):
                continue
        return rule
    return None


_CVT = re.compile(r"\bcvt(?:\.[a-z0-9]+)+")


def lowered_ops(compiled: object) -> list[str] | None:
    """The conversion instructions (``cvt.*``) of a compiled kernel's PTX, sorted, or None
    where the object holds no PTX (an interpreter launch, another target)."""
    asm = getattr(compiled, "asm", None)
    ptx = asm.get("ptx") if isinstance(asm, dict) else None
    if not isinstance(ptx, str):
        return None
    return sorted(set(_CVT.findall(ptx)))


@dataclass
class Semantics:
    """What one TTIR compile of the values cases showed: per case index, the ops of its stored
    value (``ops``), the cases the frontend refused (``refused``: status and reason) and the
    result dtypes; ``ending`` says how the compile ended ("ttir" when TTIR was read)."""

    target: str
    ending: str
    ops: dict[int, list[str]]
    refused: dict[int, tuple[str, str]]
    dtypes: dict[int, str]

    @property
    def read(self) -> bool:
        return self.ending == "ttir"


class TTIRReady(Exception):
    """Raised in place of the first stage after TTIR: the compile stops once TTIR exists."""

    def __init__(self, text: str) -> None:
        super().__init__("TTIR read; the compile stops here on purpose")
        self.text = text


def stop_after_ttir(target: str) -> bool:
    """Make the next compile for ``target`` raise TTIRReady with the TTIR text instead of
    lowering it (the later stages take most of the time and tell nothing about the ops).
    Only in a child process that is about to end: the backend class is patched in place.
    False when the target's backend has no ``make_ttgir`` to replace (then it compiles on)."""
    return stop_before(target, "make_ttgir", lambda src: TTIRReady(str(src)))


def stop_before(target: str, stage: str, stop: Callable[[Any], BaseException]) -> bool:
    """Replace the CUDA backend's stage method ``stage`` (``make_ttgir``, ``make_ptx``) by one
    that raises ``stop(its input)``: the compile ends there. Only in a child process that is
    about to end (the class is patched in place). False when there is nothing to replace."""
    if not target.startswith("cuda"):
        return False
    # The class the compile uses is the registry's: 3.0.0-3.2.0 load the backend's compiler.py
    # as a module of its own ("nvidia"), so triton.backends.nvidia.compiler is another copy.
    import triton.backends

    entry = getattr(triton.backends, "backends", {}).get("nvidia")
    cuda_backend = getattr(entry, "compiler", None)
    if cuda_backend is None or not hasattr(cuda_backend, stage):
        return False

    def ready(src, *args, **kwargs):  # Triton's stage signature
        raise stop(src)

    setattr(cuda_backend, stage, staticmethod(ready))
    return True
