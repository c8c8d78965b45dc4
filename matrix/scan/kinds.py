"""The match kinds, registered in one place: what a rule's ``[rule.match] kind`` names.

Each kind is one ``MatchKind``: its matcher (what it finds in a module: ``(node, snippet)`` per
match), the ``[rule.match]`` keys it reads, the lists of which it needs one at least, and what
it matches, in a line. ``matrix.scan.rule_file`` checks every rule against this table (an
unknown kind, a key the kind does not read, a missing list: one error naming the rule and the
key) and ``matrix.scan.engine`` runs the matcher. A new rule of an existing kind is one
``[[rule]]`` table in ``matrix/data/scan_rules.toml`` and its fixture; a new kind is one entry
here and its matcher (docs/scanner.md).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from matrix.scan.flow import match_dot_acc_dtype, match_int_true_division
from matrix.scan.homes import match_runtime_home
from matrix.scan.imports import Matcher, Module
from matrix.scan.internals import match_runtime_member
from matrix.scan.matchers import (
    match_annotated_constexpr_global,
    match_call,
    match_global_read,
    match_keyword,
    match_name,
)
from matrix.scan.pycalls import match_autotune_names, match_python_call
from matrix.scan.rules import Rule


def no_match(rule: Rule, module: Module) -> Iterator[tuple[ast.AST, str]]:
    """Census rules: their findings come from ``census_findings``, not from a matcher."""
    return iter(())


# The argument filters of a call (matrix.scan.matchers._call_filters); an argument is
# {keyword = "...", position = N}: given by keyword, or positionally at 0-based index N.
CALL_FILTERS = ("any_present", "all_present", "absent", "max_positional")


@dataclass(frozen=True)
class MatchKind:
    name: str
    matcher: Matcher
    matches: str  # what it matches, in a line (the kind's documentation)
    keys: tuple[str, ...] = ()  # the [rule.match] keys it reads, besides ``kind``
    needs: tuple[str, ...] = ()  # of these lists, one at least must be given and non-empty
    needs_what: str = ""  # what one item of those lists names, for the error


KINDS: dict[str, MatchKind] = {
    k.name: k
    for k in (
        MatchKind(
            "call", match_call,
            "a call to triton.language.<one of calls>, or inside kernels a method call "
            "x.<one of methods>(...) on a value, whose arguments pass the filters "
            "(any_present: one of them given; all_present: all given; absent: none given, a "
            "**kwargs counts as maybe; max_positional: more positional arguments than this)",
            ("calls", "methods", *CALL_FILTERS), ("calls", "methods"), "call name",
        ),
        MatchKind(
            "name", match_name,
            "an import of, or reference to, a dotted name under one of names (\"a.b\" matches "
            "a.b and a.b.*; \"a.b.\" only a.b.*), through aliases, re-exports and relative "
            "imports; a subclass of it, and a module-level function using one, carry it",
            ("names",), ("names",), "name",
        ),
        MatchKind(
            "keyword", match_keyword,
            "a call in a file that uses Triton passing one of keywords (only with the literal "
            "value, or any value but the literals in not_values, where given)",
            ("keywords", "value", "not_values"), ("keywords",), "keyword",
        ),
        MatchKind(
            "annotated-constexpr-global", match_annotated_constexpr_global,
            "a module-level `X: tl.constexpr = v`",
        ),
        MatchKind(
            "global-read", match_global_read,
            "a kernel body reading a module-level name bound to a plain literal",
        ),
        MatchKind(
            "int-true-division", match_int_true_division,
            "`/` whose float result is used where an integer is needed (pointer offset, "
            "subscript, range/arange bound, shift or bitwise op), in kernels",
        ),
        MatchKind(
            "dot-acc-dtype", match_dot_acc_dtype,
            "a call of one of calls (tl.dot) whose accumulator is not provably float32, "
            "filtered as a call rule",
            ("calls", *CALL_FILTERS), ("calls",), "call name",
        ),
        MatchKind(
            "python-call", match_python_call,
            "a plain Python call in a kernel body (a host helper, math.*, "
            "triton.next_power_of_2/cdiv, a constexpr_function); cases maps "
            "\"callee:arguments\" to the probe case whose cell decides it",
            ("cases",),
        ),
        MatchKind(
            "autotune-names", match_autotune_names,
            "@triton.autotune(key=/reset_to_zero=/restore_value=[...]) naming something that "
            "is not a parameter of the decorated kernel; cases as python-call",
            ("cases",),
        ),
        MatchKind(
            "runtime-member", match_runtime_member,
            "a subclass of one of names (its overrides, super() calls, self.<member> reads), "
            "a kernel's own members and a launch result's: the census decides each member",
            ("names",), ("names",), "class name",
        ),
        MatchKind(
            "runtime-home", match_runtime_home,
            "a path of a hook, knob, cache setting or driver utility listed in "
            "matrix/data/runtime_homes.toml; \"{detail}\" names every path it has had",
        ),
        MatchKind("census-missing", no_match, "a triton.* name the census lacks somewhere"),
        MatchKind("census-keyword", no_match, "a keyword the census's signature refuses"),
        MatchKind("census-positional", no_match, "more positional arguments than it takes"),
        MatchKind("census-default", no_match, "a default left out that differs by release"),
    )
}  # fmt: skip

# The registry's views under the names they had before it (matrix.scan exports them).
MATCH_KINDS = tuple(KINDS)
MATCHERS: dict[str, Matcher] = {k.name: k.matcher for k in KINDS.values()}
NEEDS_NAMES = {k.name: (k.needs, k.needs_what) for k in KINDS.values() if k.needs}
