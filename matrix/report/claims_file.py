"""The claims file, read: ``matrix/data/claims.toml``'s claims and probe notes as typed objects.

Every key is checked here, once, on reading: a malformed file is a ``ClaimsError`` naming the
file, the claim (or probe) and the key. Judging claims against measured runs is
``matrix.report.claims``.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from matrix.catalog import PROBES_BY_NAME
from matrix.core import (
    BACKENDS,
    DATA_DIR,
    Column,
    DataFileError,
    Release,
    ReleaseError,
    load_toml,
)
from matrix.results import NONFINITE, number

DEFAULT_PATH = DATA_DIR / "claims.toml"


NOTES = ("split-k", "matmul")


VERDICTS = ("holds", "fails", "partly", "untested")


QUANTIFIERS = ("every", "some")


GROUP_OPS = ("all", "any")


DATA_OPS: dict[str, tuple[str, Callable[[Any, Any], bool]]] = {
    "eq": ("==", operator.eq),
    "ne": ("!=", operator.ne),
    "lt": ("<", operator.lt),
    "le": ("<=", operator.le),
    "gt": (">", operator.gt),
    "ge": (">=", operator.ge),
}


_LEAF_KEYS = frozenset(
    {
        "probe",
        "backend",
        "target",
        "releases",
        "expect",
        "detail_contains",
        "data",
        "quantifier",
        "changes_at",
        "differs_from",
    }
)


_KINDS = ("expect", "changes_at", "differs_from")


_CLAIM_KEYS = frozenset({"id", "note", "quote", "reading", "check"})


_PLANNED_KEYS = frozenset({"summary", "statuses", "backends", "proposed"})


class ClaimsError(DataFileError):
    """``claims.toml`` is malformed; the message names the file, the claim or probe, the key."""

    def __init__(self, message: str) -> None:
        ValueError.__init__(self, message)


@dataclass(frozen=True)
class ProbeInfo:
    """What a claim may say about a probe: its own statuses and the backends it runs on."""

    name: str
    statuses: tuple[str, ...]
    backends: tuple[str, ...]
    summary: str = ""
    # Not in matrix/catalog.py yet: named in claims.toml so the lead can add it.
    planned: bool = False
    # Planned by the claims work alone, not yet agreed.
    proposed: bool = False


@dataclass(frozen=True)
class DataCondition:
    """``result.data[field] <op> value``; ``test`` gives None when the field is missing."""

    field: str
    op: str
    value: Any

    def test(self, data: dict[str, Any]) -> bool | None:
        if self.field not in data:
            return None
        got = data[self.field]
        if isinstance(got, str) and got in NONFINITE:  # "nan", "inf": how raw files spell them
            got = number(got)
        try:
            return bool(DATA_OPS[self.op][1](got, self.value))
        except TypeError:
            return False

    def __str__(self) -> str:
        return f"data.{self.field} {DATA_OPS[self.op][0]} {self.value!r}"


@dataclass(frozen=True)
class Check:
    """One statement about one probe's results; exactly one of expect/changes_at/differs_from."""

    probe: str
    backends: tuple[str, ...] | None = None
    targets: tuple[str, ...] | None = None
    releases: str | None = None
    expect: tuple[str, ...] = ()
    detail_contains: tuple[str, ...] = ()
    data: tuple[DataCondition, ...] = ()
    quantifier: str = "every"
    changes_at: str | None = None
    differs_from: tuple[str, str | None] | None = None
    # The probe's own statuses: one of these is an observation even if it is also a common
    # status (skipped/error/crashed/timeout). Filled in by load_claims from the catalog.
    own_statuses: tuple[str, ...] = ()
    # The backends the probe runs on (where backends is None, the check looks at all of them).
    probe_backends: tuple[str, ...] = BACKENDS

    def looks_at(self, backend: str) -> bool:
        return backend in (self.backends or self.probe_backends)

    @property
    def specifier(self) -> SpecifierSet:
        return SpecifierSet(self.releases or "")

    def scope(self) -> str:
        """Where the check looks, in words: 'block_ptr on aot cuda:90 for >=3.9'."""
        parts = [self.probe]
        if self.backends:
            parts.append("on " + "/".join(self.backends))
        if self.targets:
            parts.append("/".join(self.targets))
        if self.releases:
            parts.append(f"for {self.releases}")
        return " ".join(parts)

    def expectation(self) -> str:
        """What an agreeing result looks like, in words."""
        if self.changes_at:
            return f"a different status at {self.changes_at} than just before"
        if self.differs_from:
            backend, target = self.differs_from
            return f"a status other than {Column(backend, target)}'s"
        words = ["expected " + " or ".join(self.expect)]
        words += [f"detail containing {t!r}" for t in self.detail_contains]
        words += [str(c) for c in self.data]
        if self.releases:
            words.append(f"for {self.releases}")
        return ", ".join(words)


@dataclass(frozen=True)
class Group:
    """Checks combined with ``all`` or ``any``."""

    op: str
    children: tuple[Check | Group, ...]

    def leaves(self) -> Iterable[Check]:
        for child in self.children:
            if isinstance(child, Group):
                yield from child.leaves()
            else:
                yield child


@dataclass(frozen=True)
class Claim:
    """One sentence of a seed note about Triton, and how the matrix decides it."""

    id: str
    note: str
    quote: str
    check: Group
    reading: str = ""

    @property
    def probes(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(c.probe for c in self.check.leaves()))


@dataclass(frozen=True)
class Verdict:
    """What the results say about one claim, with one evidence line per result looked at."""

    id: str
    note: str
    quote: str
    verdict: str
    evidence: list[str]
    reading: str = ""
    probes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def load_claims(path: str | Path = DEFAULT_PATH) -> list[Claim]:
    """Parse and validate ``claims.toml``; any bad entry raises ClaimsError (a ValueError)."""
    return _load(Path(path))[0]


def load_probes(path: str | Path = DEFAULT_PATH) -> dict[str, ProbeInfo]:
    """Every probe a claim may name: the catalog's, then the file's ``[planned.*]`` ones."""
    return _load(Path(path))[1]


def _load(path: Path) -> tuple[list[Claim], dict[str, ProbeInfo]]:
    doc = load_toml(path)
    unknown = set(doc) - {"planned", "claim"}
    if unknown:
        raise ClaimsError(
            f"{path}: unknown top-level keys {sorted(unknown)}; expected planned, claim"
        )
    probes = _parse_probes(path, doc.get("planned", {}))
    raw_claims = doc.get("claim")
    if not isinstance(raw_claims, list) or not raw_claims:
        raise ClaimsError(f"{path}: expected one or more [[claim]] tables")
    claims: list[Claim] = []
    seen: set[str] = set()
    for i, raw in enumerate(raw_claims):
        claim = _parse_claim(path, i, raw, probes)
        if claim.id in seen:
            raise ClaimsError(f"{path}: claim {claim.id!r}: id: repeated; ids must be unique")
        seen.add(claim.id)
        claims.append(claim)
    return claims, probes


def _parse_probes(path: Path, planned: Any) -> dict[str, ProbeInfo]:
    probes = {
        name: ProbeInfo(name, spec.statuses, spec.backends, spec.summary)
        for name, spec in PROBES_BY_NAME.items()
    }
    if not isinstance(planned, dict):
        raise ClaimsError(f"{path}: planned: expected a table of probes")
    for name, raw in planned.items():
        where = f"{path}: planned.{name}"
        if not isinstance(raw, dict):
            raise ClaimsError(f"{where}: expected a table")
        unknown = set(raw) - _PLANNED_KEYS
        if unknown:
            raise ClaimsError(f"{where}: unknown keys {sorted(unknown)}")
        statuses = _strings(raw.get("statuses"), f"{where}.statuses")
        backends = _strings(raw.get("backends"), f"{where}.backends")
        if not statuses or not backends:
            raise ClaimsError(f"{where}: statuses and backends must each list at least one")
        bad = [b for b in backends if b not in BACKENDS]
        if bad:
            raise ClaimsError(f"{where}.backends: {bad} not among {BACKENDS}")
        if name in probes:
            raise ClaimsError(
                f"{where}: the catalog (matrix/catalog.py) has this probe now; delete the entry"
            )
        probes[name] = ProbeInfo(
            name,
            statuses,
            backends,
            str(raw.get("summary", "")),
            planned=True,
            proposed=bool(raw.get("proposed", False)),
        )
    return probes


def _parse_claim(path: Path, index: int, raw: Any, probes: dict[str, ProbeInfo]) -> Claim:
    if not isinstance(raw, dict):
        raise ClaimsError(f"{path}: claim #{index + 1}: expected a table")
    cid = raw.get("id")
    if not isinstance(cid, str) or not cid.strip():
        raise ClaimsError(
            f"{path}: claim #{index + 1}: id: expected a non-empty string, got {cid!r}"
        )
    where = f"{path}: claim {cid!r}"
    unknown = set(raw) - _CLAIM_KEYS
    if unknown:
        raise ClaimsError(
            f"{where}: unknown keys {sorted(unknown)}; expected {sorted(_CLAIM_KEYS)}"
        )
    if raw.get("note") not in NOTES:
        raise ClaimsError(f"{where}: note: expected one of {NOTES}, got {raw.get('note')!r}")
    quote = raw.get("quote")
    if not isinstance(quote, str) or not quote.strip():
        raise ClaimsError(f"{where}: quote: expected the note's exact words, got {quote!r}")
    reading = raw.get("reading", "")
    if not isinstance(reading, str):
        raise ClaimsError(f"{where}: reading: expected a string, got {reading!r}")
    checks = raw.get("check")
    if not isinstance(checks, list) or not checks:
        raise ClaimsError(f"{where}: check: expected one or more [[claim.check]] tables")
    group = Group(
        "all",
        tuple(_parse_node(c, f"{where}: check[{i}]", probes) for i, c in enumerate(checks)),
    )
    return Claim(cid, raw["note"], quote, group, reading)


def _parse_node(raw: Any, where: str, probes: dict[str, ProbeInfo]) -> Check | Group:
    if not isinstance(raw, dict):
        raise ClaimsError(f"{where}: expected a table, got {raw!r}")
    ops = [op for op in GROUP_OPS if op in raw]
    if ops:
        if len(raw) != 1:
            raise ClaimsError(
                f"{where}: a group has exactly one key (all or any), got {sorted(raw)}"
            )
        op = ops[0]
        members = raw[op]
        if not isinstance(members, list) or not members:
            raise ClaimsError(f"{where}.{op}: expected a non-empty list of checks")
        return Group(
            op, tuple(_parse_node(m, f"{where}.{op}[{i}]", probes) for i, m in enumerate(members))
        )
    return _parse_check(raw, where, probes)


def _parse_check(raw: dict[str, Any], where: str, probes: dict[str, ProbeInfo]) -> Check:
    unknown = set(raw) - _LEAF_KEYS
    if unknown:
        raise ClaimsError(f"{where}: unknown keys {sorted(unknown)}; expected {sorted(_LEAF_KEYS)}")
    name = raw.get("probe")
    if name not in probes:
        raise ClaimsError(
            f"{where}.probe: {name!r} is neither in matrix/catalog.py nor a [planned.*] probe"
        )
    info = probes[name]
    kinds = [k for k in _KINDS if k in raw]
    if len(kinds) != 1:
        raise ClaimsError(f"{where}: expected exactly one of {_KINDS}, got {kinds or 'none'}")

    backends = _strings(raw["backend"], f"{where}.backend") if "backend" in raw else None
    for b in backends or ():
        if b not in info.backends:
            raise ClaimsError(f"{where}.backend: {name} runs on {info.backends}, not {b!r}")
    targets = _strings(raw["target"], f"{where}.target") if "target" in raw else None

    releases = raw.get("releases")
    if releases is not None:
        if not isinstance(releases, str) or not releases.strip():
            raise ClaimsError(f"{where}.releases: expected a specifier set like '>=3.7,<3.9'")
        try:
            SpecifierSet(releases)
        except InvalidSpecifier as e:
            raise ClaimsError(f"{where}.releases: {releases!r} is not a specifier set ({e})") from e

    quantifier = raw.get("quantifier", "every")
    if quantifier not in QUANTIFIERS:
        raise ClaimsError(f"{where}.quantifier: expected one of {QUANTIFIERS}, got {quantifier!r}")
    if "quantifier" in raw and kinds[0] == "changes_at":
        raise ClaimsError(f"{where}.quantifier: not meaningful with changes_at")
    for key in ("detail_contains", "data"):
        if key in raw and kinds[0] != "expect":
            raise ClaimsError(f"{where}.{key}: only meaningful with expect")

    expect: tuple[str, ...] = ()
    if "expect" in raw:
        expect = _strings(raw["expect"], f"{where}.expect")
        bad = [s for s in expect if s not in info.statuses]
        if not expect or bad:
            raise ClaimsError(
                f"{where}.expect: {bad or expect!r} not among {name}'s statuses {info.statuses}"
            )
    detail = _strings(raw.get("detail_contains", ()), f"{where}.detail_contains")

    changes_at = raw.get("changes_at")
    if changes_at is not None:
        try:
            Release.parse(str(changes_at), f"{where}.changes_at")
        except ReleaseError as e:
            raise ClaimsError(str(e)) from e
        if len(str(changes_at).split(".")) < 2:
            raise ClaimsError(f"{where}.changes_at: expected major.minor, got {changes_at!r}")
        changes_at = str(changes_at)

    differs_from = None
    if "differs_from" in raw:
        ref = raw["differs_from"]
        if not isinstance(ref, dict) or set(ref) - {"backend", "target"}:
            raise ClaimsError(f"{where}.differs_from: expected {{backend = ..., target = ...}}")
        if ref.get("backend") not in info.backends:
            raise ClaimsError(
                f"{where}.differs_from.backend: expected one of {info.backends}, "
                f"got {ref.get('backend')!r}"
            )
        target = ref.get("target")
        if target is not None and not isinstance(target, str):
            raise ClaimsError(f"{where}.differs_from.target: expected a string, got {target!r}")
        differs_from = (ref["backend"], target)

    return Check(
        probe=name,
        backends=backends,
        targets=targets,
        releases=releases,
        expect=expect,
        detail_contains=detail,
        data=_parse_data(raw.get("data", {}), f"{where}.data"),
        quantifier=quantifier,
        changes_at=changes_at,
        differs_from=differs_from,
        own_statuses=info.statuses,
        probe_backends=info.backends,
    )


def _parse_data(raw: Any, where: str) -> tuple[DataCondition, ...]:
    if not isinstance(raw, dict):
        raise ClaimsError(f"{where}: expected a table of field = {{op = value}}")
    conditions = []
    for fname, cond in raw.items():
        if not isinstance(cond, dict) or not cond:
            raise ClaimsError(
                f"{where}.{fname}: expected {{op = value}} with op in {list(DATA_OPS)}"
            )
        for op, value in cond.items():
            if op not in DATA_OPS:
                raise ClaimsError(f"{where}.{fname}: unknown op {op!r}; expected {list(DATA_OPS)}")
            numeric = isinstance(value, int | float) and not isinstance(value, bool)
            if op not in ("eq", "ne") and not numeric:
                raise ClaimsError(f"{where}.{fname}.{op}: expected a number, got {value!r}")
            conditions.append(DataCondition(fname, op, value))
    return tuple(conditions)


def _strings(value: Any, where: str) -> tuple[str, ...]:
    """A string or a list of strings, as a tuple."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) and v for v in value):
        raise ClaimsError(f"{where}: expected a string or a list of strings, got {value!r}")
    return tuple(value)
