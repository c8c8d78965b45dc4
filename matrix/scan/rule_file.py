"""The rules file, read: ``matrix/data/scan_rules.toml``'s ``[[rule]]`` tables, checked once.

Every table is checked on loading against the match kinds' registry (``matrix.scan.kinds``):
an unknown kind, a key the rule or its kind does not read, a missing or malformed field is one
``RuleError`` naming the file, the rule (its index and id) and the key. Adding a rule of an
existing kind is one ``[[rule]]`` table and its fixture (docs/scanner.md).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from matrix.core import load_toml
from matrix.scan.kinds import KINDS, MATCH_KINDS
from matrix.scan.rules import (
    RULES_PATH,
    SCOPES,
    SEVERITIES,
    ArgSpec,
    Rule,
    RuleError,
    SameDefault,
)

# The keys of a [[rule]] table (its [rule.match] keys are its kind's: matrix.scan.kinds).
REQUIRED_KEYS = ("id", "name", "message", "fix", "scope")
RULE_KEYS = frozenset(
    {*REQUIRED_KEYS, "severity", "match", "probe", "concerns", "breaking", "census_decides",
     "cell", "same_default", "control"}
)  # fmt: skip
# Every key any kind reads (the union of the registry's).
MATCH_KEYS = frozenset({"kind"}.union(*(k.keys for k in KINDS.values())))
# The lists of names a rule's match may give.
NAME_LISTS = ("calls", "methods", "names", "keywords")


def _tables(raw: Any, where: str, keys: set[str], shape: str) -> list[tuple[str, dict]]:
    """``[(where[i], table)]`` for a list of tables with only ``keys``; None is no tables."""
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(item, dict) for item in raw):
        raise RuleError(f"{where}: expected a list of {shape}, got {raw!r}")
    for i, item in enumerate(raw):
        if set(item) - keys:
            raise RuleError(f"{where}[{i}]: unknown keys {sorted(set(item) - keys)}")
    return [(f"{where}[{i}]", item) for i, item in enumerate(raw)]


def _argspecs(raw: Any, where: str) -> tuple[ArgSpec, ...]:
    specs = []
    for at, item in _tables(raw, where, {"keyword", "position"}, "{keyword=..., position=...}"):
        if not isinstance(item.get("keyword"), str):
            raise RuleError(f'{at}: expected {{keyword = "name"}}, got {item!r}')
        pos = item.get("position")
        if pos is not None and (not isinstance(pos, int) or pos < 0):
            raise RuleError(f"{at}.position: expected an integer >= 0, got {pos!r}")
        specs.append(ArgSpec(item["keyword"], pos))
    return tuple(specs)


def _same_defaults(raw: Any, where: str) -> tuple[SameDefault, ...]:
    out = []
    keys = {"names", "param", "reason", "unless"}
    for at, item in _tables(raw, where, keys, "[[rule.same_default]] tables"):
        for key in ("param", "reason"):
            if not isinstance(item.get(key), str) or not item[key]:
                raise RuleError(f"{at}.{key}: expected a non-empty string")
        names = _strings(item.get("names"), f"{at}.names")
        if not names:
            raise RuleError(f"{at}.names: expected at least one qualified name")
        unless = _argspecs(item.get("unless"), f"{at}.unless")
        out.append(SameDefault(names, item["param"], item["reason"], unless))
    return tuple(out)


def _cases(raw: Any, where: str) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, dict) or not all(
        isinstance(k, str) and ":" in k and isinstance(v, str) and v for k, v in raw.items()
    ):
        raise RuleError(f'{where}: expected a table of "callee:arguments" = "case", got {raw!r}')
    return dict(raw)


def _strings(raw: Any, where: str) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(s, str) for s in raw):
        raise RuleError(f"{where}: expected a list of strings, got {raw!r}")
    return tuple(raw)


def load_rules(path: str | Path = RULES_PATH) -> list[Rule]:
    """Read and validate the rules file; raises RuleError naming the rule and field at fault."""
    doc = load_toml(path)
    raw_rules = doc.get("rule")
    if not isinstance(raw_rules, list) or not raw_rules:
        raise RuleError(f"{path}: expected at least one [[rule]] table")
    rules = []
    for i, raw in enumerate(raw_rules):
        if not isinstance(raw, dict):
            raise RuleError(f"{path}: rule[{i}]: expected a [[rule]] table, got {raw!r}")
        rules.append(_rule(raw, f"{path}: rule[{i}] ({raw.get('id', '?')})"))
    ids = [r.id for r in rules]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise RuleError(f"{path}: rule ids must be unique, repeated: {dupes}")
    return rules


def _checked_head(raw: dict[str, Any], where: str) -> None:
    """The rule's own keys: none unknown, the required strings there, id, scope, severity."""
    unknown = sorted(set(raw) - RULE_KEYS)
    if unknown:
        raise RuleError(f"{where}: unknown keys {unknown} (a rule takes {sorted(RULE_KEYS)})")
    for key in REQUIRED_KEYS:
        if not isinstance(raw.get(key), str) or not raw[key]:
            raise RuleError(f"{where}.{key}: expected a non-empty string, got {raw.get(key)!r}")
    if not re.fullmatch(r"TRI\d{3}", raw["id"]):
        raise RuleError(f"{where}.id: expected TRI followed by three digits, got {raw['id']!r}")
    if raw["scope"] not in SCOPES:
        raise RuleError(f"{where}.scope: expected one of {SCOPES}, got {raw['scope']!r}")
    severity = raw.get("severity", "change")
    if severity not in SEVERITIES:
        raise RuleError(f"{where}.severity: expected one of {SEVERITIES}, got {severity!r}")
    probe = raw.get("probe")
    if probe is not None and not isinstance(probe, str):
        raise RuleError(f"{where}.probe: expected a probe name, got {probe!r}")


def _checked_match(raw: dict[str, Any], where: str) -> dict[str, Any]:
    """The rule's [rule.match] table, its kind registered and every key one the kind reads."""
    match = raw.get("match")
    if not isinstance(match, dict):
        raise RuleError(f"{where}.match: expected a [rule.match] table")
    kind = match.get("kind")
    if kind not in KINDS:
        raise RuleError(
            f"{where}.match.kind: expected one of {sorted(MATCH_KINDS)} (matrix/scan/kinds.py), "
            f"got {kind!r}"
        )
    spec = KINDS[kind]
    if set(match) - MATCH_KEYS:
        raise RuleError(f"{where}.match: unknown keys {sorted(set(match) - MATCH_KEYS)}")
    if spec.needs and not any(match.get(key) for key in spec.needs):
        raise RuleError(
            f"{where}.match.{spec.needs[0]}: a {kind} rule needs at least one {spec.needs_what}"
        )
    unread = sorted(set(match) - {"kind", *spec.keys})
    if unread:
        takes = ", ".join(spec.keys) or "no other key"
        raise RuleError(
            f"{where}.match.{unread[0]}: a {kind} rule does not read it (it takes {takes})"
        )
    max_pos = match.get("max_positional")
    if max_pos is not None and (not isinstance(max_pos, int) or max_pos < 0):
        raise RuleError(f"{where}.match.max_positional: expected an integer >= 0")
    return match


def _rule(raw: dict[str, Any], where: str) -> Rule:
    """One [[rule]] table, checked, as a Rule."""
    _checked_head(raw, where)
    match = _checked_match(raw, where)
    kind = match["kind"]
    lists = {key: _strings(match.get(key), f"{where}.match.{key}") for key in NAME_LISTS}
    rule = Rule(
        id=raw["id"],
        name=raw["name"],
        message=raw["message"],
        fix=raw["fix"],
        scope=raw["scope"],
        kind=kind,
        severity=raw.get("severity", "change"),
        **lists,
        value=match.get("value"),
        not_values=tuple(match.get("not_values", ())),
        any_present=_argspecs(match.get("any_present"), f"{where}.match.any_present"),
        all_present=_argspecs(match.get("all_present"), f"{where}.match.all_present"),
        absent=_argspecs(match.get("absent"), f"{where}.match.absent"),
        max_positional=match.get("max_positional"),
        probe=raw.get("probe"),
        concerns=_strings(raw.get("concerns"), f"{where}.concerns"),
        breaking=_strings(raw.get("breaking"), f"{where}.breaking"),
        census_decides=raw.get("census_decides", False),
        cell=raw.get("cell"),
        same_default=_same_defaults(raw.get("same_default"), f"{where}.same_default"),
        cases=_cases(match.get("cases"), f"{where}.match.cases"),
        control=raw.get("control"),
    )
    if rule.control is not None and not (isinstance(rule.control, str) and rule.cases):
        raise RuleError(f"{where}.control: expected a case name, with match.cases")
    if rule.same_default and kind != "census-default":
        raise RuleError(f"{where}.same_default: only a census-default rule takes it")
    if not isinstance(rule.census_decides, bool):
        raise RuleError(f"{where}.census_decides: expected true or false")
    if (rule.concerns or rule.breaking) and rule.probe is None:
        raise RuleError(f"{where}: concerns/breaking need a probe")
    if rule.cell is not None and not (isinstance(rule.cell, str) and rule.probe):
        raise RuleError(f"{where}.cell: expected a cell name of the probe's fingerprint group")
    if rule.probe is not None and rule.census_decides:
        raise RuleError(f"{where}: decided by a probe or by the census, not both")
    return rule


def load_raises(path: str | Path = RULES_PATH) -> dict[str, tuple[str, ...]]:
    """``{rule id or match kind: exception names}`` from the rules file's ``[raises]`` table:
    what a finding's failure raises, for try/except guards (matrix.scan.guards)."""
    raw = load_toml(path).get("raises", {})
    if not isinstance(raw, dict):
        raise RuleError(f"{path}: raises: expected a table, got {raw!r}")
    out = {}
    for key, names in raw.items():
        if key not in KINDS and not re.fullmatch(r"TRI\d{3}", key):
            raise RuleError(f"{path}: raises.{key}: expected a rule id or one of {MATCH_KINDS}")
        out[key] = _strings(names, f"{path}: raises.{key}")
    return out
