"""Findings from the API census: names, keywords, positions and defaults that moved."""

from __future__ import annotations

import ast
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


def api_uses(module: Module, path: str) -> list[ApiUse]:
    """Every public ``triton.*`` name the file references (private ``_x`` parts are skipped:
    the census records public names only)."""
    parents: dict[int, ast.Call] = {}
    for node in module.nodes:
        if isinstance(node, ast.Call):
            parents[id(node.func)] = node
    uses = []
    for node, q in _outer_references(module):
        if not q.startswith("triton.") or any(p.startswith("_") for p in q.split(".")):
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


def census_problems(censuses: Censuses, use: ApiUse) -> tuple[list[CensusProblem], list[str]]:
    """(problems, releases on which the use works) from the census's works-on query."""
    releases = list(censuses)
    positional = use.positional if use.positional_known else 0
    keywords = use.keywords if use.called else ()
    w = works_on(censuses, use.qualname, keywords, positional)
    seen = [r for r, s in w.per_release.items() if s.status in ("ok", "rejects")]
    if not seen:
        return [], []  # absent (or unknown) everywhere: no difference between releases
    problems: list[CensusProblem] = []
    absent = [r for r, s in w.per_release.items() if s.status == "absent"]
    if absent:
        problems.append(
            CensusProblem("census-missing", f"absent on {_spans(releases, absent)}", tuple(absent))
        )
    by_reason: dict[tuple[str, str], list[str]] = {}
    for r, s in w.per_release.items():
        if s.status == "rejects":
            kind = "census-keyword" if s.reason.startswith("no keyword") else "census-positional"
            # the reason without the release's signature, so that releases group
            by_reason.setdefault((kind, s.reason.split(" (", 1)[0]), []).append(r)
    for (kind, reason), rs in by_reason.items():
        if set(rs) == set(seen):
            continue  # refused by every release that has the name (a fork's keyword): no change
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
            out.append(f)
    return out, uses, works
