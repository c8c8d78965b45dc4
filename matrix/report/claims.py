"""The seed notes' claims about Triton, checked against what the matrix measured.

The two seed notes make claims about Triton releases (what was deprecated or removed when, which
defaults, which dtypes). Some are wrong, so none is taken on trust: ``matrix/data/claims.toml``
quotes each one and states, as data, what the results would show if it were right. ``evaluate``
reads the results and gives each claim a verdict with the evidence behind it::

    holds     every check that has data agrees with the results
    fails     every check that has data disagrees
    partly    a mix (right about 3.9, wrong about 3.7)
    untested  no result bears on it ("no results for probe X")

The vocabulary of ``claims.toml``::

    [[claim]]
    id = "block-ptr-deprecated-in-3.7"    # unique, used by the report
    note = "matmul"                       # which seed note: "split-k" or "matmul"
    quote = "That API was deprecated in 3.7"   # word for word from the note
    reading = "..."                       # optional: how the quote became checks
    [[claim.check]]                       # one or more; all of them make the claim
    probe = "block_ptr"                   # a probe of matrix/catalog.py or a [planned.*] one
    backend = "aot"                       # optional: a backend or a list (default: any)
    target = ["cuda:80", "cuda:90"]       # optional: a target or a list (default: any)
    releases = ">=3.7,<3.9"               # optional: a PEP 440 specifier set (default: all)
    # and exactly one of:
    expect = "deprecated"                 # a status or a list: the result agrees if its status
    #                                     # is one of them, and also (optional):
    #   detail_contains = "NotImplementedError"       # text(s) the detail must contain
    #   data = { max_ulps = { le = 16 } }            # eq ne lt le gt ge on result.data fields
    changes_at = "3.8"                    # per backend/target, the last release before 3.8 and
    #                                     # the first 3.8.x release give different statuses
    differs_from = { backend = "aot", target = "cuda:90" }   # the status differs from that
    #                                     # backend/target's status in the same release
    quantifier = "some"                   # optional with expect/differs_from: "every" (default)
    #                                     # or "some" (one agreeing result is enough; for
    #                                     # "may not be supported")

A check may instead be a group, ``{ any = [ {...}, {...} ] }`` or ``{ all = [...] }``, nested as
deep as needed. A group ``all`` holds when all its decided members hold, fails when all fail; a
group ``any`` holds when one holds, fails when all fail; otherwise each is ``partly``.

Results whose status is skipped, error, crashed or timeout are not observations: they show up in
the evidence as such and count for nothing. The exception is a probe that lists such a status as
one of its own (``python_min_runtime`` ends ``error`` when ``min()`` is refused): there the status
is the observation. Releases come from ``run.env["triton"]`` and are compared with
``packaging.version``; a pre-release, dev or local build of 3.9 counts as 3.9.

This module needs only the standard library, ``packaging`` and ``matrix.catalog``/``results``: the
report and the gate use it where Triton, torch and numpy are not installed.

>>> claims = load_claims()
>>> [v.verdict for v in evaluate([], claims)][:2]
['untested', 'untested']
"""

from __future__ import annotations

import argparse
import json
import operator
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from matrix import cli
from matrix.catalog import PROBES_BY_NAME
from matrix.core import (
    BACKENDS,
    DATA_DIR,
    INSTALL_OK,
    NO_OBSERVATION_STATUSES,
    Column,
    DataFileError,
    Release,
    ReleaseError,
    load_toml,
)
from matrix.exitcodes import ExitCode
from matrix.results import NONFINITE, Result, Run, number

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
_DETAIL_WIDTH = 120


class ClaimsError(DataFileError):
    """``claims.toml`` is malformed; the message names the file, the claim or probe, the key."""

    def __init__(self, message: str) -> None:
        ValueError.__init__(self, message)


# --- the vocabulary ------------------------------------------------------------------------------


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


# --- loading -------------------------------------------------------------------------------------


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


# --- evaluating ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Row:
    release: Release
    run: Run
    result: Result


@dataclass
class _Index:
    """The runs, parsed once: release per run, and notes on runs that cannot be used."""

    rows: list[_Row] = field(default_factory=list)
    # (release, backends the cell would have run, text): a gpu cell runs gpu, the others the rest.
    failed_installs: list[tuple[Release | None, tuple[str, ...], str]] = field(default_factory=list)
    # (probes the run has results for, text): runs whose env.triton is not a version.
    unusable: list[tuple[frozenset[str], str]] = field(default_factory=list)

    @classmethod
    def build(cls, runs: Iterable[Run]) -> _Index:
        index = cls()
        for run in runs:
            release = _release(run)
            install = run.install.get("status", INSTALL_OK)
            if install != INSTALL_OK:
                detail = _short(str(run.install.get("detail", "")))
                cell = " ".join(
                    filter(None, (str(run.triton or run.id), _numpy_label(run.env.get("numpy"))))
                )
                text = f"{cell} install={install}: no results"
                kinds = ("gpu",) if run.env.get("gpu") else ("interpret", "aot")
                text += f" ({detail})" if detail else ""
                index.failed_installs.append((release, kinds, text))
            if release is None:
                if run.results:
                    index.unusable.append(
                        (
                            frozenset(r.probe for r in run.results),
                            f"run {run.id}: env.triton {run.triton!r} is not a version; "
                            f"its {len(run.results)} results are ignored",
                        )
                    )
                continue
            index.rows.extend(_Row(release, run, r) for r in run.results)
        index.rows.sort(
            key=lambda w: (
                w.release,
                w.result.backend,
                w.result.target or "",
                str(w.run.env.get("numpy") or ""),
            )
        )
        return index


def evaluate(runs: Sequence[Run], claims: Sequence[Claim] | None = None) -> list[Verdict]:
    """One Verdict per claim (in the claims' order), from the results of ``runs``."""
    if claims is None:
        claims = load_claims()
    index = _Index.build(runs)
    verdicts = []
    for claim in claims:
        outcome, evidence = _eval_node(claim.check, index)
        verdicts.append(
            Verdict(
                id=claim.id,
                note=claim.note,
                quote=claim.quote,
                verdict=outcome,
                evidence=list(dict.fromkeys(evidence)),
                reading=claim.reading,
                probes=claim.probes,
            )
        )
    return verdicts


def _eval_node(node: Check | Group, index: _Index) -> tuple[str, list[str]]:
    if isinstance(node, Check):
        return _eval_check(node, index)
    outcomes, evidence = [], []
    for child in node.children:
        outcome, lines = _eval_node(child, index)
        outcomes.append(outcome)
        evidence.extend(lines)
    return _combine(node.op, outcomes), evidence


def _combine(op: str, outcomes: list[str]) -> str:
    decided = [o for o in outcomes if o != "untested"]
    if not decided:
        return "untested"
    if all(o == "fails" for o in decided):
        return "fails"
    if op == "any":
        return "holds" if "holds" in decided else "partly"
    return "holds" if all(o == "holds" for o in decided) else "partly"


def _eval_check(check: Check, index: _Index) -> tuple[str, list[str]]:
    spec = check.specifier
    evidence = [
        text
        for rel, kinds, text in index.failed_installs
        if (rel is None or _in(spec, rel)) and any(check.looks_at(k) for k in kinds)
    ]
    evidence += [text for probes, text in index.unusable if check.probe in probes]
    of_probe = [w for w in index.rows if w.result.probe == check.probe]
    rows = [w for w in of_probe if _matches(check, w)]
    if not rows:
        if of_probe:
            evidence.append(f"no results for {check.scope()} (the probe has other results)")
        else:
            evidence.append(f"no results for probe {check.probe}")
        return "untested", evidence
    if check.changes_at:
        return _eval_change(check, rows, evidence)
    verdicts: list[bool] = []
    refs = _reference_statuses(check, index) if check.differs_from else {}
    fields = [c.field for c in check.data]
    for w in rows:
        line = _describe(w, fields)
        if not _is_observation(check, w.result):
            evidence.append(f"not an observation: {line}")
            continue
        agrees, why = _agrees(check, w, refs)
        if agrees is None:
            evidence.append(f"not an observation: {line}: {why}")
            continue
        verdicts.append(agrees)
        evidence.append(f"{'agrees' if agrees else 'disagrees'}: {line}; {why}")
    return _tally(verdicts, check.quantifier), evidence


def _tally(verdicts: list[bool], quantifier: str) -> str:
    if not verdicts:
        return "untested"
    if quantifier == "some":
        return "holds" if any(verdicts) else "fails"
    if all(verdicts):
        return "holds"
    return "fails" if not any(verdicts) else "partly"


def _agrees(check: Check, w: _Row, refs: dict[Release, set[str]]) -> tuple[bool | None, str]:
    """Whether one observation agrees with the check, and why (None: it cannot say)."""
    r = w.result
    if check.differs_from:
        backend, target = check.differs_from
        other = str(Column(backend, target))
        ref = refs.get(w.release)
        if not ref:
            return None, f"no {other} result of the same release to compare with"
        return r.status not in ref, f"{other} gives {'/'.join(sorted(ref))}"
    ok = r.status in check.expect
    for text in check.detail_contains:
        ok = ok and text in r.detail
    for cond in check.data:
        passed = cond.test(r.data)
        if passed is None:
            return None, f"no data.{cond.field} in the result"
        ok = ok and passed
    return ok, check.expectation()


def _reference_statuses(check: Check, index: _Index) -> dict[Release, set[str]]:
    assert check.differs_from is not None
    backend, target = check.differs_from
    refs: dict[Release, set[str]] = {}
    for w in index.rows:
        r = w.result
        if (
            r.probe == check.probe
            and r.backend == backend
            and (target is None or r.target == target)
            and _is_observation(check, r)
        ):
            refs.setdefault(w.release, set()).add(r.status)
    return refs


def _eval_change(check: Check, rows: list[_Row], evidence: list[str]) -> tuple[str, list[str]]:
    # ``changes_at`` names a series ("3.8"): every release whose major.minor is that.
    at = str(check.changes_at)
    series = Release.parse(at).version.release[:2]
    by_key: dict[tuple[str, str], dict[Release, set[str]]] = {}
    for w in rows:
        if not _is_observation(check, w.result):
            evidence.append(f"not an observation: {_describe(w)}")
            continue
        key = (w.result.backend, w.result.target or "")
        by_key.setdefault(key, {}).setdefault(w.release, set()).add(w.result.status)
    verdicts = []
    for (backend, target), releases in sorted(by_key.items()):
        where = f"{Column(backend, target or None)} {check.probe}"
        before = [v for v in releases if v.version.release[:2] < series]
        after = [v for v in releases if v.version.release[:2] == series]
        if not before or not after:
            missing = f"no release before {at}" if not before else f"no {at} release"
            evidence.append(f"no data: {where}: {missing} among {_versions(releases)}")
            continue
        b, a = max(before), min(after)
        old, new = "/".join(sorted(releases[b])), "/".join(sorted(releases[a]))
        changed = releases[b] != releases[a]
        verdicts.append(changed)
        evidence.append(
            f"{'agrees' if changed else 'disagrees'}: {where}: {b} {old} -> {a} {new}"
            f" ({'changed' if changed else 'unchanged'} at {at})"
        )
    return _tally(verdicts, "every"), evidence


def _matches(check: Check, w: _Row) -> bool:
    r = w.result
    return (
        (check.backends is None or r.backend in check.backends)
        and (check.targets is None or r.target in check.targets)
        and _in(check.specifier, w.release)
    )


def _in(spec: SpecifierSet, release: Release) -> bool:
    # A 3.9 release candidate or dev build behaves as 3.9, not as "<3.9" (PEP 440 orders it below).
    return spec.contains(release.final.version)


def _is_observation(check: Check, r: Result) -> bool:
    return r.status in check.own_statuses or r.status not in NO_OBSERVATION_STATUSES


def _release(run: Run) -> Release | None:
    try:
        return Release.parse(run.triton)
    except ReleaseError:
        return None


def _versions(releases: Iterable[Release]) -> str:
    return ", ".join(str(v) for v in sorted(releases)) or "none"


def _describe(w: _Row, fields: Iterable[str] = ()) -> str:
    """'3.7.1 numpy 2.4.6 interpret block_ptr=deprecated (UserWarning: ...)'."""
    r = w.result
    parts = [str(w.run.triton)]
    numpy = w.run.env.get("numpy")
    if r.backend == "interpret":
        parts.append(_numpy_label(numpy))
    parts.append(str(Column(r.backend, r.target)))
    parts.append(f"{r.probe}={r.status}")
    # Only the data fields the check tests: the rest is in the report, and the detail says why.
    parts += [f"{k}={r.data[k]}" for k in dict.fromkeys(fields) if k in r.data]
    detail = _short(r.detail)
    text = " ".join(p for p in parts if p)
    return f"{text} ({detail})" if detail else text


def _numpy_label(numpy: Any) -> str:
    return f"numpy {numpy}" if numpy else ""


def _short(text: str) -> str:
    one_line = " ".join(text.split())
    if len(one_line) <= _DETAIL_WIDTH:
        return one_line
    return one_line[: _DETAIL_WIDTH - 3] + "..."


# --- command line --------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m matrix.report.claims reports/matrix.json``: each claim's verdict and evidence."""
    from matrix.results import SchemaError, read_runs

    parser = argparse.ArgumentParser(
        allow_abbrev=False,  # --cand is no --candidate: a typo is refused, never guessed
        prog="python -m matrix.report.claims",
        description=main.__doc__,
    )
    parser.add_argument("results", help="matrix.json, a raw file, or a folder of raw files")
    parser.add_argument("--claims", default=str(DEFAULT_PATH), help="claims file (TOML)")
    parser.add_argument("--json", action="store_true", help="print the verdicts as JSON")
    args = parser.parse_args(argv)
    try:
        claims = load_claims(args.claims)
        runs = read_runs(args.results)
    except (DataFileError, SchemaError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return ExitCode.UNDECIDABLE
    verdicts = evaluate(runs, claims)
    if args.json:
        print(json.dumps([v.to_dict() for v in verdicts], indent=1, ensure_ascii=False))
        return ExitCode.OK
    for v in verdicts:
        print(f"{v.verdict:9} {v.id} ({v.note})")
        for line in v.evidence:
            print(f"          {line}")
    return ExitCode.OK


if __name__ == "__main__":
    cli.deprecated("python -m matrix.report.claims", "claims")
    sys.exit(cli.run(main, "matrix.report.claims"))
