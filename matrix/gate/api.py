"""The census's part of the gate: a Triton name that the scanned code uses and that the
candidate removed, moved or no longer accepts with the arguments passed is breaking; a default
the code relies on (the argument left out) that changed is a behaviour change.

Uses come from the scanner, one per call site or attribute, as any object with ``qualname``
(``triton.language.load``), ``path``, ``line``, ``keywords`` (names passed) and ``positional``
(how many positional arguments); ``ApiUse`` is the plain form. Each (name, what broke) is one
finding listing every site, so that ten uses of one removed name read as one change.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import lru_cache
from pathlib import Path
from typing import Protocol

from matrix.analyze.census import (
    POSITIONAL_ONLY,
    POSITIONAL_OR_KEYWORD,
    Census,
    censuses_from_runs,
    omitted_defaults,
    spelling,
    support,
)
from matrix.analyze.census_diff import diff
from matrix.analyze.fingerprint import PREFIX, refused
from matrix.analyze.profile.admits import release_cells
from matrix.core import MATRIX_DIR, DataFileError, Release, table_keys, tables_at, text_at
from matrix.gate.compare import ACCEPTED, BEHAVIOUR, BREAKING, Comparison, GateFinding
from matrix.gate.config import AcceptedChange
from matrix.gate.targets import vendor_backend
from matrix.results import Run
from matrix.scan.guards import guard_effect

PROBE = "api_surface"
SAME_DEFAULTS_PATH = MATRIX_DIR / "data" / "same_defaults.toml"
_CELLS = re.compile(r"(?P<group>[\w.]+)\[(?P<case>[^\]]+)\]")


class Use(Protocol):
    qualname: str
    path: str
    line: int
    keywords: Sequence[str]
    positional: int


@dataclass(frozen=True)
class ApiUse:
    qualname: str
    path: str
    line: int
    keywords: tuple[str, ...] = ()
    positional: int = 0


def _where(use: Use) -> str:
    return f"{use.path}:{use.line} {use.qualname}"


# What a use of a name the candidate lacks, or of a keyword it refuses, raises: a try/except
# with a fallback that catches one of these runs the fallback there.
GUARDED_RAISES = ("AttributeError", "ImportError", "TypeError")


def check_uses(
    base_runs: Iterable[Run],
    cand_runs: Iterable[Run],
    baseline: str | Release,
    candidate: str | Release,
    uses: Sequence[Use],
    out: Comparison,
    accepted: Sequence[AcceptedChange] = (),
) -> None:
    """Add to ``out`` the findings the census gives for ``uses``; undecidable without a census
    of either release (when there are uses to check). Code a vendor's own Triton fork
    compiles (targets.toml [vendor]) is not checked against upstream's census."""
    uses = [u for u in uses if not vendor_backend(str(u.path))]
    if not uses:
        return
    baseline, candidate = spelling(str(baseline)), spelling(str(candidate))
    base = censuses_from_runs(base_runs).get(baseline)
    cand = censuses_from_runs(cand_runs).get(candidate)
    for side, census in ((baseline, base), (candidate, cand)):
        if census is None:
            out.undecidable.append(
                f"the scanned code uses {len(uses)} Triton name(s) but no API census "
                f"({PROBE}) is recorded for {side}"
            )
    if base is None or cand is None:
        return
    entries = diff(base, cand)
    grouped: dict[tuple[str, str, str], list[Use]] = {}
    censuses = {baseline: base, candidate: cand}
    cand_release = Release.parse(candidate)
    for use in uses:
        b = support(base, use.qualname, use.keywords, use.positional)
        c = support(cand, use.qualname, use.keywords, use.positional)
        guards = getattr(use, "guards", ())
        if guards and c.status != "ok":
            # the scanner's guard reading: a line that does not run on the candidate, or
            # whose failure there (a missing name or keyword raises) a fallback catches
            raised = GUARDED_RAISES if c.status in ("absent", "rejects") else ()
            if guard_effect(guards, raised, cand_release, censuses) is not None:
                continue
        if b.status == "ok" and c.status in ("absent", "rejects"):
            grouped.setdefault((BREAKING, use.qualname, c.reason), []).append(use)
        elif b.status == "ok" and c.status == "unknown":
            out.undecidable.append(f"{_where(use)}: {c.reason}")
    for (kind, qualname, reason), sites in sorted(grouped.items()):
        related = [e for e in entries if qualname in (e.name, *e.aliases)]
        out.findings.append(
            GateFinding(
                kind,
                PROBE,
                qualname,
                "ok",
                reason,
                [f"{e.text} ({'; '.join(map(str, e.evidence))})" for e in related] or [reason],
                fix="; ".join(e.text for e in related if e.kind == "moved"),
                uses=[_where(u) for u in sites],
            )
        )
    _defaults(base, cand, uses, out, accepted, (base_runs, cand_runs))


def _defaults(
    base: Census,
    cand: Census,
    uses: Sequence[Use],
    out: Comparison,
    accepted: Sequence[AcceptedChange],
    runs: tuple[Iterable[Run], Iterable[Run]] = ((), ()),
) -> None:
    """A default that differs between the two releases, for a parameter a use leaves out; an
    accepted change (probe ``api_surface``, where ``<name>:<param>``, from/to the default
    reprs) turns it into an accepted change. A use that a rule of same_defaults.toml covers
    is a note instead (``same_default``)."""
    held = _measured_rules(runs, base.release, cand.release)
    pair = {base.release: base, cand.release: cand}
    seen: dict[tuple[str, str], tuple[dict[str, str], list[Use]]] = {}
    same: dict[tuple[str, str, str], list[Use]] = {}
    for use in uses:
        for param, values in omitted_defaults(
            pair, use.qualname, use.keywords, use.positional
        ).items():
            old, new = values.get(base.release, ""), values.get(cand.release, "")
            rule = same_default(use, param, old, new, cand, held)
            if rule is not None:
                why = f"{rule.why}; {held[rule]}" if rule in held else rule.why
                same.setdefault((use.qualname, param, why), []).append(use)
                continue
            key = (use.qualname, param)
            seen.setdefault(key, (values, []))[1].append(use)
    for (qualname, param, why), sites in sorted(same.items()):
        out.notes.append(
            f"{qualname}: {param}'s default changed between {base.release} and "
            f"{cand.release}, the same for the {len(sites)} use(s) that leave it out ({why}): "
            + ", ".join(f"{u.path}:{u.line}" for u in sites[:5])
            + (f" +{len(sites) - 5}" if len(sites) > 5 else "")
        )
    for (qualname, param), (values, sites) in sorted(seen.items()):
        api = cand.lookup(qualname)
        where = f" ({cand.release} {api.where})" if api else ""
        old, new = values.get(base.release, ""), values.get(cand.release, "")
        ack = next(
            (a for a in accepted
             if a.matches(PROBE, f"{qualname}:{param}", old, new, Release.parse(base.release),
                          Release.parse(cand.release))),
            None,
        )  # fmt: skip
        out.findings.append(
            GateFinding(
                ACCEPTED if ack else BEHAVIOUR,
                PROBE,
                f"{qualname}:{param}",
                values.get(base.release),
                values.get(cand.release),
                [
                    f"{qualname}: {param} defaults to {values.get(base.release)} on "
                    f"{base.release}, {values.get(cand.release)} on {cand.release}{where}"
                ],
                fix=f"pass {param}= explicitly to keep the {base.release} behaviour",
                reason=ack.reason if ack else "",
                uses=[_where(u) for u in sites],
            )
        )


@dataclass(frozen=True)
class SameDefault:
    """One rule of matrix/data/same_defaults.toml: a default whose spelling changed from
    ``before`` to ``after`` and behaves the same for a use that also leaves ``unless_passed``
    out."""

    name: str
    param: str
    before: str
    after: str
    unless_passed: tuple[str, ...]
    why: str
    # ``fp.dot[*out=default*]``: the candidate's fingerprint cases that leave the parameter
    # out, each with a twin where ``default_part`` is replaced by ``spelled`` (the old default
    # passed explicitly); the rule holds where they agree (``_measured_rules``)
    cells: str = ""
    default_part: str = ""
    spelled: str = ""
    # a parameter of ``unless_passed`` -> the literal values (as the source spells them) that
    # behave as leaving it out (``softmax(x, 0)``: dim 0 is the default axis)
    same_when: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (a tuple: a rule is a dict key)


@lru_cache(maxsize=1)
def same_defaults(path: Path = SAME_DEFAULTS_PATH) -> tuple[SameDefault, ...]:
    """matrix/data/same_defaults.toml's rules, checked (a wrong key or value names it)."""
    rows = tables_at(path, "same")
    out = []
    keys = {"name", "param", "from", "to", "unless_passed", "why", "cells", "default_part",
            "spelled", "same_when"}  # fmt: skip
    for i, raw in enumerate(rows):
        row = table_keys(path, f"same[{i}]", raw, keys)
        for key in ("name", "param", "from", "to", "why"):
            text_at(path, f"same[{i}]", row, key)
        unless = row.get("unless_passed")
        if not isinstance(unless, list) or not all(isinstance(u, str) for u in unless):
            raise DataFileError(path, f"same[{i}] unless_passed", "a list of names", unless)
        cells = row.get("cells", "")
        if not isinstance(cells, str) or (cells and not _CELLS.fullmatch(cells)):
            raise DataFileError(path, f"same[{i}] cells", "GROUP[CASE-GLOB]", cells)
        twin = (row.get("default_part", ""), row.get("spelled", ""))
        if cells and not all(isinstance(t, str) and t for t in twin):
            raise DataFileError(path, f"same[{i}] default_part/spelled",
                                "two non-empty strings beside cells", twin)  # fmt: skip
        same = row.get("same_when", {})
        if not isinstance(same, dict) or not all(
            k in unless and isinstance(v, list) and all(isinstance(x, str) for x in v)
            for k, v in same.items()
        ):
            raise DataFileError(
                path,
                f"same[{i}] same_when",
                "a table of unless_passed names = [literal spellings]",
                same,
            )
        out.append(SameDefault(row["name"], row["param"], row["from"], row["to"],
                               tuple(unless), row["why"], cells, *twin,
                               tuple((k, tuple(v)) for k, v in same.items())))  # fmt: skip
    return tuple(out)


def same_default(
    use: Use, param: str, old: str, new: str, cand: Census, held: Mapping[SameDefault, str]
) -> SameDefault | None:
    """The rule under which ``use``, leaving ``param`` to its default, behaves the same with
    the old default ``old`` and the new ``new``; None where no rule holds. A parameter of
    ``unless_passed`` counts as passed when named by keyword or covered by the use's positional
    arguments (by the candidate's signature). A rule with ``cells`` holds only where ``held``
    (``_measured_rules``) says the fingerprint showed it for this pair."""
    rules = [
        r for r in same_defaults()
        if (r.name, r.param, r.before, r.after) == (use.qualname, param, old, new)
        and (not r.cells or r in held)
    ]  # fmt: skip
    if not rules:  # (most changed defaults: no signature to read)
        return None
    api = cand.lookup(use.qualname)
    positional = (POSITIONAL_ONLY, POSITIONAL_OR_KEYWORD)
    slots = [p.name for p in api.public_params if p.kind in positional] if api else []
    passed = {*use.keywords, *slots[: use.positional]}
    for rule in rules:
        if api is None and use.positional > 1:
            return None  # which slots the positional arguments fill is unknown
        if not {
            p for p in passed & set(rule.unless_passed) if not _as_left_out(use, slots, rule, p)
        }:
            return rule
    return None


def _as_left_out(use: Use, slots: Sequence[str], rule: SameDefault, param: str) -> bool:
    """Whether ``use`` passes ``param`` as a literal the rule measured to behave as leaving it
    out (``same_when``), read off the call's own source."""
    call = getattr(use, "call", None)  # the scanner's uses carry their call; others: none
    same = dict(rule.same_when).get(param)
    if not isinstance(call, ast.Call) or not same:
        return False
    given = next((k.value for k in call.keywords if k.arg == param), None)
    if given is None and param in slots and slots.index(param) < len(call.args):
        given = call.args[slots.index(param)]
    return isinstance(given, ast.Constant) and ast.unparse(given) in same


def _measured_rules(
    runs: tuple[Iterable[Run], Iterable[Run]], baseline: str, candidate: str
) -> dict[SameDefault, str]:
    """The rules with ``cells`` that the candidate's recorded fingerprint shows, each with what
    it saw: in every column, each case of ``cells`` (the default left out) gives what its twin
    with the old default spelled out (``spelled``: the case's ``default`` part replaced) gives,
    or that twin is refused there (so no code that ran on the baseline used it), and at least
    one twin was compared. Changes of the spelled-out cases between the releases are the
    fingerprint's own findings, not the default's. Fail closed: nothing recorded, or one case
    that differs from its twin, and the rule does not hold."""
    _, cand_runs = runs
    rules = [(r, m) for r in same_defaults() if r.cells and (m := _CELLS.fullmatch(r.cells))]
    groups = tuple({m["group"].removeprefix(PREFIX) for _, m in rules})
    # every value each (group, column, case) had on the candidate (its interpreter columns
    # are one per numpy pairing: a case and its twin must agree in all of them)
    seen: dict[tuple[str, str, str], set[str]] = {}
    for (group, case), value, column in release_cells(
        cand_runs, Release.parse(candidate), (), groups
    ):
        seen.setdefault((group, column, case), set()).add(str(value))
    held: dict[SameDefault, str] = {}
    for rule, m in rules:
        group = m["group"].removeprefix(PREFIX)
        twins = [
            (value, seen.get((g, column, case.replace(rule.default_part, rule.spelled, 1))))
            for (g, column, case), value in seen.items()
            if g == group and fnmatchcase(case, m["case"])
        ]
        compared = [(v, t) for v, t in twins if t is not None]
        if compared and all(v == t or all(map(refused, t)) for v, t in compared):
            held[rule] = (
                f"{candidate}'s {m['group']}: the {len(compared)} cases with the default left "
                f"out give what `{rule.spelled}` gives wherever that compiles"
            )
    return held
