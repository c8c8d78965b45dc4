"""One blocking reason per root: what only says how a removed API behaves follows from its removal.

When the candidate removes an API (a probe row that says ``removed``, such as ``block_ptr``
for ``tl.make_block_ptr``/``tl.advance`` in 3.9.0, or a name the API census says no longer
exists), every fingerprint row about that API's behaviour (``fp.layout[block_ptr.*]``,
``fp.warnings[block_ptr|none]``) changes too, at the same lines: the code no longer compiles
there, so how the API would have behaved is not a second reason. ``fold`` moves such a
finding under its root (listed there as "follows from"), so that a kernel gets one blocking
reason per root. The same for the census's "no keyword K" on a call whose keyword ``K`` a
removal row names (``boundary_check`` of ``tl.load``/``tl.store``), and its "does not exist"
for a name a removal row names (``tl.advance`` of ``block_ptr``).

A finding folds only when (fail closed): each of its uses is a use of a name or keyword the
root removes (``matrix/data/usage_map.toml``: the root probe's ``names``/``keywords``), each of
its lines is a line the root names, and its column is one the root was removed in. The root
stays blocking, so folding never changes a verdict: it only stops counting one cause twice.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from matrix.gate import compare as gc
from matrix.gate import policy
from matrix.gate.usage import shown_path

REMOVED = "removed"  # a probe row's status for an API the candidate no longer has
CENSUS = "api_surface"  # the API census's findings (matrix.gate.api)
_CENSUS_GONE = re.compile(r"\bdoes not exist on\b")  # matrix.analyze.census: a missing name
_CENSUS_NO_KEYWORD = re.compile(r"^no keyword (\w+)\b")
_SITE = re.compile(r"^(?P<path>[^:\s]+):(?P<line>\d+)")


@dataclass
class Root:
    """A removal on the candidate: the names and keywords it takes away, where, at which
    lines of the team's code."""

    finding: gc.GateFinding
    names: frozenset[str] = frozenset()
    keywords: frozenset[str] = frozenset()
    columns: set[str] | None = None  # None: not about a column (a name of the census)
    sites: set[tuple[str, int]] = field(default_factory=set)

    def removes(self, use: Any) -> bool:
        name = use.attr("name")
        if use.op == "name":
            return any(name == n or name.startswith(n + ".") for n in self.names)
        return use.op == "keyword" and name in self.keywords

    def on_column(self, where: str) -> bool:
        column = policy.column_of(where)
        return self.columns is None or column is None or column in self.columns


def shown_sites(texts: Sequence[str], roots: Sequence[str]) -> set[tuple[str, int]]:
    """``(path as the profile shows it, line)`` of each use text that starts with one
    (``path:line[:col] ...``, the scanner's and the census's)."""
    out = set()
    for text in texts:
        m = _SITE.match(text)
        if m:
            out.add((shown_path(m["path"], roots), int(m["line"])))
    return out


def find_roots(
    findings: Sequence[gc.GateFinding],
    tied: Mapping[int, Sequence[Any]],
    probes: Mapping[str, Mapping[str, Any]],
    roots: Sequence[str],
) -> list[Root]:
    """The removals among the blocking ``findings`` (one ``Root`` per probe or census name),
    with every line they were met at (the scanner's sites and the profile's uses)."""
    table: dict[tuple[str, str], Root] = {}
    # a name a removal row names (``tl.advance`` of ``block_ptr``) is that row's root, not one
    # of its own: the census's "does not exist" for it follows from the row
    by_rows = {
        n
        for f in findings
        if f.kind == gc.BREAKING and f.candidate == REMOVED and f.probe in probes
        for n in probes[f.probe].get("names", ())
    }
    for f in findings:
        if f.kind != gc.BREAKING:
            continue
        if _census_gone(f):
            if f.where in by_rows:
                continue
            key, names, keywords, column = (CENSUS, f.where), {f.where}, set(), None
        elif f.candidate == REMOVED and f.probe in probes:
            row = probes[f.probe]
            names, keywords = set(row.get("names", ())), set(row.get("keywords", ()))
            key, column = (f.probe, ""), policy.column_of(f.where)
            if not names and not keywords:
                continue
        else:
            continue
        root = table.get(key)
        if root is None:
            root = table[key] = Root(f, frozenset(names), frozenset(keywords), None)
            root.columns = set() if key[0] != CENSUS else None
        if root.columns is not None:
            if column is None:
                root.columns = None  # a member about every column
            else:
                root.columns.add(column)
        root.sites |= shown_sites(f.uses, roots)
        root.sites |= {(u.path, u.line) for u in tied.get(id(f), ())}
    return list(table.values())


def _census_gone(f: gc.GateFinding) -> bool:
    """The census's finding of a name the candidate lacks."""
    return f.probe == CENSUS and bool(f.candidate and _CENSUS_GONE.search(f.candidate))


def root_of(
    f: gc.GateFinding, uses: Sequence[Any], found: Sequence[Root], roots: Sequence[str]
) -> Root | None:
    """The removal ``f`` follows from, or None (it is a reason of its own)."""
    if f.kind not in gc.UNSAFE_KINDS or any(r.finding is f for r in found):
        return None
    no_keyword = _CENSUS_NO_KEYWORD.match(f.candidate or "") if f.probe == CENSUS else None
    for root in found:
        if not root.on_column(f.where) or not root.sites:
            continue
        if no_keyword is not None or _census_gone(f):
            sites = shown_sites(f.uses, roots)
            named = (
                no_keyword[1] in root.keywords
                if no_keyword is not None
                else f.where in root.names and root.finding.probe != CENSUS
            )
            if named and sites and sites <= root.sites:
                return root
            continue
        if f.probe == root.finding.probe or not uses:
            continue
        if all(root.removes(u) for u in uses) and {(u.path, u.line) for u in uses} <= root.sites:
            return root
    return None


def fold(
    findings: list[gc.GateFinding],
    tied: Sequence[tuple[gc.GateFinding, Sequence[Any]]],
    probes: Mapping[str, Mapping[str, Any]],
    roots: Sequence[str],
) -> list[tuple[gc.GateFinding, gc.GateFinding]]:
    """Take out of ``findings`` (in place) those that follow from a removal still in it;
    return them as (finding, its root's finding)."""
    uses_of = {id(f): list(u) for f, u in tied}
    found = find_roots(findings, uses_of, probes, roots)
    if not found:
        return []
    folded: list[tuple[gc.GateFinding, gc.GateFinding]] = []
    kept: list[gc.GateFinding] = []
    for f in findings:
        root = root_of(f, uses_of.get(id(f), ()), found, roots)
        if root is None:
            kept.append(f)
        else:
            folded.append((f, root.finding))
    findings[:] = kept
    return folded
