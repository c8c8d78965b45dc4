"""The scanner's rules as objects: ``Rule`` and its parts, the words of its fields, selection.

Reading ``matrix/data/scan_rules.toml`` into them is ``matrix.scan.rule_file``; the match kinds
a rule may name are ``matrix.scan.kinds``."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from matrix.core import DATA_DIR, DataFileError

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
