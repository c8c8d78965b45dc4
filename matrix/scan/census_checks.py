"""Findings from the API census: names, keywords, positions and defaults that moved."""

from __future__ import annotations

import ast
import difflib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from matrix.analyze.census import (
    Census,
    omitted_defaults,
    works_on,
)
from matrix.scan.findings import ApiUse, Finding
from matrix.scan.imports import Module
from matrix.scan.matchers import _finding, _outer_references
from matrix.scan.rules import Rule, _positional_count

# ---------------------------------------------------------------------------------- API census

# The census's releases and documents: ``{release: Census}``, oldest first (matrix.analyze.census).
Censuses = Mapping[str, Census]


def _unrecorded_private(qualname: str) -> bool:
    """Dunder parts (``triton.__version__``) are never in the census; other ``_`` names are
    checked like any other (the census records those a module lists in ``__all__``)."""
    return any(p.startswith("__") and p.endswith("__") for p in qualname.split("."))


def api_uses(module: Module, path: str) -> list[ApiUse]:
    """Every ``triton.*`` name the file references, with the keywords and positional arguments
    of a call."""
    parents: dict[int, ast.Call] = {}
    for node in module.nodes:
        if isinstance(node, ast.Call):
            parents[id(node.func)] = node
    uses = []
    for node, q in _outer_references(module):
        if not q.startswith("triton.") or _unrecorded_private(q):
            continue
        line = getattr(node, "lineno", 0)
        call = parents.get(id(node))
        if call is None:
            uses.append(ApiUse(q, path, line, node=node))
            continue
        count = _positional_count(call)
        uses.append(
            ApiUse(
                q,
                path,
                line,
                tuple(k.arg for k in call.keywords if k.arg is not None),
                count or 0,
                count is not None,
                any(k.arg is None for k in call.keywords),
                True,
                node,
                call=call,
            )
        )
    return uses


def _spans(releases: Sequence[str], chosen: Iterable[str]) -> str:
    """``3.0.0-3.2.0, 3.5.0``: runs of consecutive recorded releases."""
    picked = set(chosen)
    runs: list[list[str]] = []
    for i, r in enumerate(releases):
        if r not in picked:
            continue
        if runs and i > 0 and runs[-1][-1] == releases[i - 1]:
            runs[-1].append(r)
        else:
            runs.append([r])
    return ", ".join(run[0] if len(run) == 1 else f"{run[0]}-{run[-1]}" for run in runs)


@dataclass(frozen=True)
class CensusProblem:
    """What the census says is wrong with one use: the rule kind, the text, the releases."""

    kind: str
    detail: str
    releases: tuple[str, ...]
    defaults: Mapping[str, str] = field(default_factory=dict)  # census-default: {release: repr}
    param: str = ""  # census-default: the parameter left to its default
    nowhere: bool = False  # the name or keyword exists on no recorded release: breaks on all
    # census-missing: releases whose census cannot tell (a module whose names it does not list)
    unseen: tuple[str, ...] = ()


class NameIndex:
    """Every name the censuses record, for a did-you-mean: ``{parent: {child}}`` over all
    releases (modules' names and classes' members), and ``{last part: {qualname}}``."""

    def __init__(self, censuses: Censuses) -> None:
        self.children: dict[str, set[str]] = {}
        self.by_last: dict[str, set[str]] = {}
        self.params: dict[str, set[str]] = {}
        for census in censuses.values():
            for modname, entry in census.modules.items():
                if entry.get("status") != "ok":
                    continue
                parent, _, last = modname.rpartition(".")
                if parent:
                    self._add(parent, last)
                for name, ref in (entry.get("names") or {}).items():
                    if isinstance(ref, dict) and ref.get("kind") == "missing":
                        continue
                    self._add(modname, name)
                    d = census.defs.get(ref) if isinstance(ref, str) else None
                    if d:
                        for member in d.get("members") or {}:
                            self._add(f"{modname}.{name}", member)
                        for text in d.get("params") or ():
                            pname = str(text).split(":", 1)[0].split("=", 1)[0].strip(" *")
                            self.params.setdefault(f"{modname}.{name}", set()).add(pname)

    def _add(self, parent: str, child: str) -> None:
        self.children.setdefault(parent, set()).add(child)
        self.by_last.setdefault(child, set()).add(f"{parent}.{child}")

    def nearest(self, qualname: str) -> list[str]:
        """Where a name no release has might be meant: the same name elsewhere (it moved),
        then close spellings under the deepest parent the census knows (a typo)."""
        parts = qualname.split(".")
        out = sorted(self.by_last.get(parts[-1], ()), key=lambda q: (len(q), q))[:3]
        for cut in range(len(parts) - 1, 0, -1):
            parent = ".".join(parts[:cut])
            if parent in self.children:
                wanted = parts[cut]
                close = difflib.get_close_matches(wanted, sorted(self.children[parent]), 3, 0.7)
                out += [f"{parent}.{c}" for c in close if f"{parent}.{c}" not in out]
                break
        return out[:4]

    def nearest_keyword(self, qualname: str, keyword: str) -> list[str]:
        return difflib.get_close_matches(keyword, sorted(self.params.get(qualname, ())), 3, 0.6)


_INDEX: dict[int, tuple[Censuses, NameIndex]] = {}


def name_index(censuses: Censuses) -> NameIndex:
    """One index per loaded set of censuses (a scan asks for thousands of names)."""
    key = id(censuses)
    if key not in _INDEX or _INDEX[key][0] is not censuses:
        _INDEX[key] = (censuses, NameIndex(censuses))
    return _INDEX[key][1]


def _nearest_text(names: Sequence[str]) -> str:
    return f" (nearest: {', '.join(names)})" if names else " (nearest: none recorded)"


def census_problems(censuses: Censuses, use: ApiUse) -> tuple[list[CensusProblem], list[str]]:
    """(problems, releases on which the use works) from the census's works-on query."""
    releases = list(censuses)
    positional = use.positional if use.positional_known else 0
    keywords = use.keywords if use.called else ()
    w = works_on(censuses, use.qualname, keywords, positional)
    seen = [r for r, s in w.per_release.items() if s.status in ("ok", "rejects")]
    absent = [r for r, s in w.per_release.items() if s.status == "absent"]
    unseen = tuple(r for r in releases if r not in seen and r not in absent)
    if not seen:
        first_private = next((p for p in use.qualname.split(".") if p.startswith("_")), None)
        if not absent or first_private is not None:
            # unknown everywhere, or a private name the census lists nowhere (it records
            # only the private names a module puts in __all__): nothing to say
            return [], []
        if unseen:
            # absent on some releases, not visible on the others (triton.experimental.gluon.jit:
            # the module exists from 3.4.0, its names are not listed): not "on no release"
            detail = f"absent on {_spans(releases, absent)}; not visible to the census on "
            detail += _spans(releases, unseen)
            return [CensusProblem("census-missing", detail, tuple(absent), unseen=unseen)], []
        near = name_index(censuses).nearest(use.qualname)
        detail = f"exists on no recorded release{_nearest_text(near)}"
        return [CensusProblem("census-missing", detail, tuple(absent), nowhere=True)], []
    problems: list[CensusProblem] = []
    if absent:
        problems.append(
            CensusProblem(
                "census-missing",
                f"absent on {_spans(releases, absent)}",
                tuple(absent),
                unseen=unseen,
            )
        )
    by_reason: dict[tuple[str, str], list[str]] = {}
    for r, s in w.per_release.items():
        if s.status == "rejects":
            kind = "census-keyword" if s.reason.startswith("no keyword") else "census-positional"
            # the reason without the release's signature, so that releases group
            by_reason.setdefault((kind, s.reason.split(" (", 1)[0]), []).append(r)
    for (kind, reason), rs in by_reason.items():
        if set(rs) == set(seen):
            # refused by every release that has the name: it works on none of them
            detail = f"{reason} on any recorded release"
            if kind == "census-keyword":
                bad = reason.removeprefix("no keyword ").split(", ")
                near = [n for k in bad for n in name_index(censuses).nearest_keyword(
                    use.qualname, k)]  # fmt: skip
                detail += _nearest_text(near) if near else ""
            problems.append(CensusProblem(kind, detail, tuple(rs), nowhere=True))
            continue
        detail = f"{reason} on {_spans(releases, rs)}"
        problems.append(CensusProblem(kind, detail, tuple(rs)))
    if use.called and use.positional_known and not use.splat_kwargs:
        changed = omitted_defaults(censuses, use.qualname, use.keywords, use.positional)
        for name, per in changed.items():
            values = dict.fromkeys(per[r] for r in releases if r in per)
            shown = "; ".join(
                f"{v} on {_spans(releases, [r for r in per if per[r] == v])}" for v in values
            )
            problems.append(CensusProblem("census-default", f"{name} = {shown}", (), per, name))
    return problems, w.ok


def census_findings(
    module: Module,
    path: str,
    rules: Sequence[Rule],
    censuses: Censuses,
    memo: dict[tuple[Any, ...], tuple[list[CensusProblem], list[str]]] | None = None,
    uses: list[ApiUse] | None = None,
) -> tuple[list[Finding], list[ApiUse], set[str]]:
    """Findings from the census, the uses checked, and the releases every use works on.
    ``memo`` keeps the census's answer per distinct use across files (a library calls
    tl.load a thousand times)."""
    memo = {} if memo is None else memo
    works = set(censuses)
    by_kind = {r.kind: r for r in rules if r.census}
    out: list[Finding] = []
    uses = api_uses(module, path) if uses is None else uses
    for use in uses:
        key = (
            use.qualname,
            use.keywords,
            use.positional,
            use.positional_known,
            use.splat_kwargs,
            use.called,
        )
        if key not in memo:
            memo[key] = census_problems(censuses, use)
        problems, ok = memo[key]
        if not problems and not ok:
            continue
        works &= set(ok)
        span = (ok[0], ok[-1]) if ok else None
        for p in problems:
            rule = by_kind.get(p.kind)
            if rule is None or use.node is None:
                continue
            if any(
                same.covers(use.qualname, p.param, use.keywords, use.positional)
                for same in rule.same_default
            ):
                continue  # the default changed in spelling only (the rules file says why)
            snippet = use.qualname + ("(...)" if use.called else "")
            f = _finding(path, use.node, rule, snippet, module)
            f.detail, f.works_on, f.census = p.detail, span, p
            f.anchor, f.qualname = id(use.node), use.qualname
            out.append(f)
    return out, uses, works
