"""The scanner's rules: their data (``matrix/data/scan_rules.toml``), checked once on load."""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from matrix.core import DATA_DIR, DataFileError, load_toml

RULES_PATH = DATA_DIR / "scan_rules.toml"

TL = "triton.language"
# Modules whose attributes are the same triton.language builtins.
TL_MODULES = (TL, "triton.language.core")
SCOPES = ("anywhere", "jit")
SEVERITIES = ("breaking", "change", "advisory")
# What a finding means for the chosen candidate, decided from the recorded data: the code stops
# working there (BREAKS), runs with other results or warnings (CHANGES), runs as before
# (NOT_AFFECTED), or nothing was measured that could tell (UNKNOWN: fails closed).
BREAKS, CHANGES, NOT_AFFECTED, UNKNOWN = "breaks", "changes", "does-not-affect", "unknown"
AFFECTS = (BREAKS, CHANGES)  # the effects that fail a breaking or change finding
# Folders nobody means to scan (hidden folders, caches, virtual environments, build output);
# --no-default-excludes scans them too.
DEFAULT_EXCLUDE = (".*", "__pycache__", "node_modules", "venv", "build", "dist")
MAX_RESOLVE_DEPTH = 12
# The kinds of rule.match (matrix.scan.engine.MATCHERS has one matcher for each).
MATCH_KINDS = (
    "call",
    "name",
    "keyword",
    "annotated-constexpr-global",
    "global-read",
    "int-true-division",
    "dot-acc-dtype",
    "python-call",
    "autotune-names",
    "runtime-member",
    "runtime-home",
    "census-missing",
    "census-keyword",
    "census-positional",
    "census-default",
)


class RuleError(DataFileError):
    """The rules file is malformed; the message names the file, the rule and the field."""

    def __init__(self, message: str) -> None:
        ValueError.__init__(self, message)


@dataclass(frozen=True)
class ArgSpec:
    """An argument of a call: given by ``keyword`` or at 0-based ``position``."""

    keyword: str
    position: int | None = None

    def given(self, call: ast.Call) -> bool:
        if any(k.arg == self.keyword for k in call.keywords):
            return True
        positional = _positional_count(call)
        return self.position is not None and positional is not None and positional > self.position

    def maybe_given(self, call: ast.Call) -> bool:
        """True if the argument is, or may be, given (a ``*args``/``**kwargs`` may hold it)."""
        if self.given(call):
            return True
        if any(k.arg is None for k in call.keywords):
            return True
        return self.position is not None and _positional_count(call) is None

    def value(self, call: ast.Call) -> ast.expr | None:
        for k in call.keywords:
            if k.arg == self.keyword:
                return k.value
        count = _positional_count(call)
        if self.position is not None and count is not None and count > self.position:
            return call.args[self.position]
        return None


@dataclass(frozen=True)
class SameDefault:
    """A census default change that gives the same behaviour (census-default rules, data in
    the rules file): ``param`` of any of ``names`` went from a value to a sentinel that
    resolves to that value, unless one of ``unless`` is passed (then the finding stays)."""

    names: tuple[str, ...]
    param: str
    reason: str
    unless: tuple[ArgSpec, ...] = ()

    def covers(self, qualname: str, param: str, keywords: Sequence[str], positional: int) -> bool:
        if qualname not in self.names or param != self.param:
            return False
        return not any(
            a.keyword in keywords or (a.position is not None and positional > a.position)
            for a in self.unless
        )


@dataclass(frozen=True)
class Rule:
    """One hazard: what it matches, how bad it is, the probe that tells which releases it
    concerns, and the fix."""

    id: str
    name: str
    message: str
    fix: str
    scope: str
    kind: str
    severity: str = "change"
    calls: tuple[str, ...] = ()
    methods: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()
    value: Any = None
    not_values: tuple[Any, ...] = ()
    any_present: tuple[ArgSpec, ...] = ()
    all_present: tuple[ArgSpec, ...] = ()
    absent: tuple[ArgSpec, ...] = ()
    max_positional: int | None = None
    probe: str | None = None
    concerns: tuple[str, ...] = ()
    breaking: tuple[str, ...] = ()
    census_decides: bool = False
    cell: str | None = None  # with a fingerprint group as probe: the cell whose status decides
    same_default: tuple[SameDefault, ...] = ()
    # python-call rules: {"callee:arguments": probe case} (matrix.scan.pycalls)
    cases: dict[str, str] = field(default_factory=dict, hash=False, compare=False)
    # with cases: the probe case that uses nothing hazardous (key_argument); a column where it
    # fails too says nothing about the use (matrix.scan.judge.probe_statuses)
    control: str | None = None

    def __str__(self) -> str:
        return self.id

    @property
    def census(self) -> bool:
        return self.kind.startswith("census-")


# --------------------------------------------------------------------------------------- rules


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


MATCH_KEYS = {
    "kind",
    "calls",
    "methods",
    "names",
    "keywords",
    "value",
    "not_values",
    "any_present",
    "all_present",
    "absent",
    "max_positional",
    "cases",
}


# The lists of names a rule's match may give, and which kind of rule needs which (one at least).
NAME_LISTS = ("calls", "methods", "names", "keywords")
NEEDS_NAMES = {
    "call": (("calls", "methods"), "call name"),
    "name": (("names",), "name"),
    "keyword": (("keywords",), "keyword"),
    "runtime-member": (("names",), "class name"),
}


def load_rules(path: str | Path = RULES_PATH) -> list[Rule]:
    """Read and validate the rules file; raises RuleError naming the rule and field at fault."""
    doc = load_toml(path)
    raw_rules = doc.get("rule")
    if not isinstance(raw_rules, list) or not raw_rules:
        raise RuleError(f"{path}: expected at least one [[rule]] table")
    rules: list[Rule] = []
    for i, raw in enumerate(raw_rules):
        where = f"{path}: rule[{i}] ({raw.get('id', '?')})"
        for key in ("id", "name", "message", "fix", "scope"):
            if not isinstance(raw.get(key), str) or not raw[key]:
                raise RuleError(f"{where}.{key}: expected a non-empty string, got {raw.get(key)!r}")
        if not re.fullmatch(r"TRI\d{3}", raw["id"]):
            raise RuleError(f"{where}.id: expected TRI followed by three digits, got {raw['id']!r}")
        if raw["scope"] not in SCOPES:
            raise RuleError(f"{where}.scope: expected one of {SCOPES}, got {raw['scope']!r}")
        severity = raw.get("severity", "change")
        if severity not in SEVERITIES:
            raise RuleError(f"{where}.severity: expected one of {SEVERITIES}, got {severity!r}")
        match = raw.get("match")
        if not isinstance(match, dict):
            raise RuleError(f"{where}.match: expected a [rule.match] table")
        kind = match.get("kind")
        if kind not in MATCH_KINDS:
            raise RuleError(
                f"{where}.match.kind: expected one of {sorted(MATCH_KINDS)}, got {kind!r}"
            )
        if set(match) - MATCH_KEYS:
            raise RuleError(f"{where}.match: unknown keys {sorted(set(match) - MATCH_KEYS)}")
        lists = {key: _strings(match.get(key), f"{where}.match.{key}") for key in NAME_LISTS}
        if kind in NEEDS_NAMES:
            keys, what = NEEDS_NAMES[kind]
            if not any(lists[key] for key in keys):
                raise RuleError(f"{where}.match.{keys[0]}: a {kind} rule needs at least one {what}")
        max_pos = match.get("max_positional")
        if max_pos is not None and (not isinstance(max_pos, int) or max_pos < 0):
            raise RuleError(f"{where}.match.max_positional: expected an integer >= 0")
        probe = raw.get("probe")
        if probe is not None and not isinstance(probe, str):
            raise RuleError(f"{where}.probe: expected a probe name, got {probe!r}")
        rule = Rule(
            id=raw["id"],
            name=raw["name"],
            message=raw["message"],
            fix=raw["fix"],
            scope=raw["scope"],
            kind=kind,
            severity=severity,
            **lists,
            value=match.get("value"),
            not_values=tuple(match.get("not_values", ())),
            any_present=_argspecs(match.get("any_present"), f"{where}.match.any_present"),
            all_present=_argspecs(match.get("all_present"), f"{where}.match.all_present"),
            absent=_argspecs(match.get("absent"), f"{where}.match.absent"),
            max_positional=max_pos,
            probe=probe,
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
        rules.append(rule)
    ids = [r.id for r in rules]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise RuleError(f"{path}: rule ids must be unique, repeated: {dupes}")
    return rules


def load_raises(path: str | Path = RULES_PATH) -> dict[str, tuple[str, ...]]:
    """``{rule id or match kind: exception names}`` from the rules file's ``[raises]`` table:
    what a finding's failure raises, for try/except guards (matrix.scan.guards)."""
    raw = load_toml(path).get("raises", {})
    if not isinstance(raw, dict):
        raise RuleError(f"{path}: raises: expected a table, got {raw!r}")
    out = {}
    for key, names in raw.items():
        if key not in MATCH_KINDS and not re.fullmatch(r"TRI\d{3}", key):
            raise RuleError(f"{path}: raises.{key}: expected a rule id or one of {MATCH_KINDS}")
        out[key] = _strings(names, f"{path}: raises.{key}")
    return out


def raised_by(rule: Rule, raises: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    """What ``rule``'s failure raises (its id's entry, else its kind's; () when unlisted)."""
    return raises.get(rule.id) or raises.get(rule.kind) or ()


def select_rules(
    rules: Sequence[Rule], select: Sequence[str] = (), ignore: Sequence[str] = ()
) -> list[Rule]:
    """Rules whose id starts with one of ``select`` (all when empty) and none of ``ignore``.

    Raises RuleError for a code that matches no rule (a typo would silently select nothing)."""
    for code in (*select, *ignore):
        if not any(r.id.startswith(code) for r in rules):
            raise RuleError(f"--select/--ignore {code!r}: no rule id starts with it")
    return [
        r
        for r in rules
        if (not select or any(r.id.startswith(c) for c in select))
        and not any(r.id.startswith(c) for c in ignore)
    ]


def _positional_count(call: ast.Call) -> int | None:
    """Number of positional arguments, or None when a ``*args`` splat makes it unknowable."""
    if any(isinstance(a, ast.Starred) for a in call.args):
        return None
    return len(call.args)
