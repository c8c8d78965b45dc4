"""Mapping a fingerprint cell, a probe row or a Triton name onto a profile: used, may
affect (an operand's kind not inferable: blocks) or not used."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase

from matrix.analyze.profile.host_uses import ANY
from matrix.analyze.profile.model import (
    MAY_AFFECT,
    NOT_USED,
    SCALAR_KINDS,
    USED,
    Kinds,
    Profile,
    UsageMap,
    Use,
    load_map,
)
from matrix.probes.fp.fp_env import UNSET


@dataclass
class Match:
    """How a fingerprint cell, probe row or name maps onto the profile."""

    status: str
    uses: list[Use] = field(default_factory=list)
    why: str = ""

    @property
    def blocks(self) -> bool:
        return self.status in (USED, MAY_AFFECT)


def _fits(kinds: Kinds, want: str, absent: frozenset[str] = frozenset()) -> str:
    """``used`` if the operand is exactly ``want``; ``may affect`` if it may be (unknown, and
    not one of the dtypes nothing in its kernel can hold: ``absent``); else not."""
    if want == "*":
        return USED if kinds is not None else MAY_AFFECT
    if kinds is None:
        return NOT_USED if want in absent else MAY_AFFECT
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
            _fits(u.operands[i], w, u.absent) if i < len(u.operands) else _fits(None, w)
            for i, w in enumerate(operands)
        ]
        states += [_attr_fits(u.attr(k, "default"), w) for k, w in attrs.items()]
        state = _combine(states) if states else USED
        if state != NOT_USED and u.combos and not _together(u.combos, operands):
            state = NOT_USED  # operands of one type variable never take these kinds together
        if state == USED:
            used.append(u)
        elif state == MAY_AFFECT:
            maybe.append(u)
    if used:
        return Match(USED, used)
    if maybe:
        return Match(MAY_AFFECT, maybe, "an operand's dtype is not inferable from the code")
    return Match(NOT_USED)


# The families whose tensor-with-scalar cells are typed alike in either operand order
# (``clamp``'s second operand is its bound, not a mirror of the first).
MIRRORED = frozenset({"binary", "binary_fn", "binary_int_fn", "where"})


def _one_scalar(parts: Sequence[str]) -> bool:
    """Whether exactly one of a two-operand case's kinds is a scalar kind (a tensor's dtype
    with a literal, constexpr or run-time argument)."""
    return sum(p in SCALAR_KINDS for p in parts) == 1


def _together(combos: frozenset[tuple[str, ...]], wanted: Sequence[str]) -> bool:
    """Whether some tuple of ``combos`` has every wanted operand kind (``*``: any)."""
    return any(
        all(w == "*" or (i < len(c) and c[i] == w) for i, w in enumerate(wanted)) for c in combos
    )


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
    def cell(self, group: str, case: str, column: str | None = None) -> Match:
        """``group`` as ``binary.sub`` (no ``fp.``), ``case`` as ``uint8,cx_int``; ``column``
        the finding's (``aot:cuda:90``), where what an op computes in may depend on it."""
        family = group.partition(".")[0]
        parts = _split(case)
        if family in ("binary", "binary_fn", "binary_int_fn", "where", "clamp"):
            key = group if family not in ("where", "clamp") else family
            hit = match_uses(self.uses_of(key), key, parts[:2])
            if family in MIRRORED and len(parts) == 2 and _one_scalar(parts):
                # `tl.maximum(0, x)` is the cell `maximum[bfloat16,lit_int]`: Triton types a
                # tensor with a scalar the same in either order (semantic.py's
                # binary_op_type_checking_impl; the committed results agree on all 23,100
                # mirrored pairs), so the cell is tied to the mirrored use too
                hit = self.best([hit, match_uses(self.uses_of(key), key, parts[::-1])])
            return hit
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
            return self._values(group, case, column)
        if family == "rules":
            pattern = self.map.rules.get(case)
            if pattern is None:
                return Match(MAY_AFFECT, [], f"no mapping for rule {case!r} (usage_map.toml)")
            hits = self.uses_of(pattern)
            return Match(USED, hits) if hits else Match(NOT_USED)
        if family == "runtime":
            return self._runtime(case)
        if family == "warnings":
            # a cell is KERNEL|ENV: the warning kernel, compiled with ENV (VAR=value) or "none"
            kernel, _, env = case.partition("|")
            kernel = kernel.split(",", 1)[0]
            names = self.map.runtime.get(f"warnings_{kernel}")
            if names is None and kernel != "plain_kernel":
                return Match(MAY_AFFECT, [], f"no mapping for warning kernel {kernel!r}")
            # plain_kernel is any compile: a warning every compile gives fails only code run
            # with warnings as errors, which a --tests run records as a failing test; so it
            # never blocks by itself (nor does it under a variable the code never names)
            found = self._name_list(names) if names is not None else None
            if not env or env == "none":
                return found or Match(NOT_USED)
            named = self._env(*env.split("=", 1))  # compiled with VAR set: the code must too
            if found is None or named.status == NOT_USED:
                return named
            if found.status == NOT_USED:
                return found
            return Match(found.status, [*found.uses, *named.uses], found.why)
        if family == "layout":  # block_ptr.<case> / descriptor.<case>: who builds such tiles
            names = self.map.runtime.get(f"layout_{case.split('.', 1)[0]}")
            if names is None:
                return Match(MAY_AFFECT, [], f"no mapping for layout case {case!r}")
            return self._name_list(names)
        if family == "env_values":  # VAR=spelling: used where the code names VAR
            return self._env(*case.split("=", 1))
        if family == "runtime_semantics":  # allocator.other_thread, knobs.scope_restores, ...
            names = self.map.runtime.get(f"semantics_{case.split('.', 1)[0]}")
            if names is None:
                return Match(MAY_AFFECT, [], f"no mapping for runtime rule {case!r}")
            return self._name_list(names)
        return Match(MAY_AFFECT, [], f"no mapping for fingerprint group fp.{group}")

    def _env(self, var: str, spelling: str = "") -> Match:
        """Where the code names ``var``, less the places that set it to something other than
        ``spelling`` (a site that sets it never runs with it ``(unset)``)."""
        hits = [u for u in self.uses_of("env") if u.attr("name") == var
                and _may_hold(u.attr("sets") or None, spelling)]  # fmt: skip
        return Match(USED, hits) if hits else Match(NOT_USED)

    def _name_list(self, names: Sequence[str]) -> Match:
        kw = [n.split(":", 1)[1] for n in names if n.startswith("keyword:")]
        qn = [n for n in names if not n.startswith("keyword:")]
        return self.best([self.names(qn), self.keywords(kw)])

    def _runtime(self, case: str) -> Match:
        for key in sorted(self.map.runtime, key=len, reverse=True):
            if case == key or case.startswith(key + "."):
                return self._name_list(self.map.runtime[key])
        return Match(MAY_AFFECT, [], f"no mapping for runtime cell {case!r} (usage_map.toml)")

    def _values(self, group: str, case: str, column: str | None = None) -> Match:
        found = self.map.values_operation(group, case)
        if found is None:
            return Match(MAY_AFFECT, [], f"no mapping for fp.{group} (usage_map.toml)")
        op, operands = found
        if op != "cast.to" and len(operands) == 2:
            return self._pair(op, operands[0], column)  # two operands of the case's dtype
        return match_uses(self.uses_of(op), op, list(operands))

    def _pair(self, op: str, dtype: str, column: str | None = None) -> Match:
        """A values cell of a two-operand op: both operands of its dtype (two tensors) or one
        a scalar that leaves the op computing in that dtype; a tensor of another dtype (an
        fp32 accumulator against a bf16 load), or a scalar that promotes it (a bf16 tensor
        and a run-time fp32 argument compute in fp32 on every release), makes the op compute
        in another dtype, which the cell does not measure. Which scalars keep the dtype is
        each release's recorded result type (the profile's ``types``); a scalar kind that
        either release keeps it with counts (fail closed), and so does every kind where
        nothing was recorded."""
        uses = self.uses_of(op)
        scalars = [s for s in sorted(SCALAR_KINDS) if self._keeps(op, dtype, s, column)]
        pairs = [[dtype, dtype]] + [p for s in scalars for p in ([dtype, s], [s, dtype])]
        return self.best([match_uses(uses, op, p) for p in pairs])

    def _keeps(self, op: str, dtype: str, scalar: str, column: str | None) -> bool:
        """Whether ``op`` of a ``dtype`` tensor and a ``scalar`` computes in ``dtype`` on
        either release, as recorded in ``column`` (the finding's: the interpreter and a
        compile target may type it apart); True where either release recorded nothing."""
        types = self.profile.types
        if types is None or column is None:
            return True
        results = [side.in_column(column, op, dtype, scalar) for side in types.sides]
        return None in results or dtype in results

    # -- probe rows
    def probe(self, name: str) -> Match:
        row = self.map.probes.get(name)
        if row is None:
            return Match(MAY_AFFECT, [], f"no mapping for probe {name!r} (its probe.toml [usage])")
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


def _may_hold(sets: str | None, spelling: str) -> bool:
    """Whether a site that sets a variable to ``sets`` (host_uses: spellings joined by ``,``,
    ``*`` for a value not spelt, None where the site does not set it) may run with
    ``spelling`` (a cell's: ``1``, ``(empty)``, ``(unset)``)."""
    if sets is None or not spelling:
        return True
    if sets == ANY:
        return spelling != UNSET
    return spelling in sets.split(",")
