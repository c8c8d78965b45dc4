"""The gate's first screen: what blocks, grouped so that it can be acted on.

A blocking finding is one change (a probe or fingerprint group going from one status to
another, in one or more columns and cells) met at one or more places of the team's code.
``entries`` folds the findings into one ``Entry`` per change x kernel: the columns and cells
it spans, and its ``file:line``s folded per file (``a.py:12, 40, 88``). An entry the gate could
not tie exactly (``may affect``) says what decides it: the ``decides`` text of its uses where
the profile gives one, else which element type to declare or which kernel to launch.

gate.md's first screen is ``first_screen``; gate.json's ``blocking`` is ``Entry.to_dict``.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from matrix.analyze.profile import MAY_AFFECT
from matrix.gate import compare as gc
from matrix.newer_syntax import parse_python

KIND_ORDER = (gc.BREAKING, gc.REGRESSION, gc.BEHAVIOUR)
KIND_WORDS = {gc.BREAKING: "breaks", gc.REGRESSION: "regression", gc.BEHAVIOUR: "changed"}
CELLS_IN_LINE = 3  # cells named in an entry's line; gate.json keeps them all
# A use's text as the scanner and the census give it: ``path:line[:col] ...``.
_LOCATION = re.compile(r"^(?P<path>[^:\s]+):(?P<line>\d+)")


@dataclass
class Entry:
    """One blocking change met in one kernel (or, untied to a kernel, at its sites)."""

    kind: str
    group: str  # the probe or fingerprint group
    before: str | None
    after: str | None
    relevance: str  # "used", "may affect", or "" (the project's own verdict: no profile)
    kernel: str = ""
    kernel_path: str = ""  # the file of ``kernel`` (a name can be defined in several files)
    columns: list[str] = field(default_factory=list)
    cells: list[str] = field(default_factory=list)
    locations: dict[str, list[int]] = field(default_factory=dict)  # file -> lines, in order
    decides: list[str] = field(default_factory=list)
    fix: str = ""
    probes: list[str] = field(default_factory=list)  # its findings' full names
    # What follows from this removal (``matrix.gate.roots``) or this result-dtype change
    # (``matrix.gate.lowering.fold_dtype``): per change of another group, the cells and the
    # kernels (or sites) it was met at; never a reason of its own.
    follows: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    # A lowering change the GPU's values could not decide: what would (its findings' texts)
    lowering: list[str] = field(default_factory=list)
    # every (baseline, candidate) status pair its findings changed, ``before``/``after`` the
    # first: one op whose cells change several ways in one kernel (tl.maximum of bf16 and of
    # fp8 both no longer fp32) is one entry
    transitions: list[tuple[str | None, str | None]] = field(default_factory=list)

    def follows_text(self) -> str:
        """``fp.layout `accepted` → `rejected` (9 cells, 47 kernels); ...``."""
        parts = []
        for change, got in self.follows.items():
            cells, kernels = len(got["cells"]), len(got["kernels"])
            sizes = [f"{cells} cell(s)"] if cells else []
            sizes += [f"{kernels} kernel(s)"] if kernels else []
            parts.append(change + (f" ({', '.join(sizes)})" if sizes else ""))
        return "; ".join(parts)

    def folded(self, lines_per_file: int = 8, files: int = 3) -> str:
        """``a.py:12, 40, 88; b.py:7``: at most ``lines_per_file`` lines of ``files`` files on
        one line (gate.json keeps them all)."""
        parts = []
        for path, lines in list(self.locations.items())[:files]:
            more = len(lines) - lines_per_file
            shown = ", ".join(map(str, lines[:lines_per_file])) + (f" +{more}" if more > 0 else "")
            parts.append(f"{_short(path)}:{shown}")
        rest = len(self.locations) - files
        return "; ".join(parts) + (f" and {rest} more file(s)" if rest > 0 else "")

    def line(self) -> str:
        """The entry as one Markdown list line."""
        pairs = self.transitions or [(self.before, self.after)]
        change = "; ".join(f"`{b}` → `{a}`" if b else f"`{a}`" for b, a in pairs[:CELLS_IN_LINE])
        change += f" +{len(pairs) - CELLS_IN_LINE}" if len(pairs) > CELLS_IN_LINE else ""
        cells = ""
        if self.cells:
            shown = ", ".join(f"`{c}`" for c in self.cells[:CELLS_IN_LINE])
            more = len(self.cells) - CELLS_IN_LINE
            cells = f"{shown}{f' +{more}' if more > 0 else ''}; "
        where = f" ({cells}{', '.join(self.columns)})" if self.columns or cells else ""
        tag = "may affect: " if self.relevance == MAY_AFFECT else ""
        text = f"- {tag}**{self.group}** {KIND_WORDS.get(self.kind, self.kind)} {change}{where}"
        at = self.folded()
        if self.kernel:
            text += f" — kernel `{self.kernel}`" + (f" at {at}" if at else "")
        elif at:
            text += f" — at {at}"
        if self.follows:
            text += f"; follows from it (not counted again): {self.follows_text()}"
        if self.lowering:
            others = len(self.lowering) - 1
            text += f"; {self.lowering[0]}" + (f" (+{others} more)" if others else "")
        return text

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "group": self.group,
            "baseline": self.before,
            "candidate": self.after,
            "transitions": [list(t) for t in self.transitions],
            "relevance": self.relevance,
            "kernel": self.kernel,
            "kernel_file": self.kernel_path,
            "columns": self.columns,
            "cells": self.cells,
            "locations": [{"path": path, "lines": lines} for path, lines in self.locations.items()],
            "decides": self.decides,
            "fix": self.fix,
            "findings": self.probes,
            "follows": self.follows,
            "lowering": self.lowering,
        }


def _short(path: str) -> str:
    """A file as the first screen names it: relative to here where it is below here."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd()))
    except (ValueError, OSError):
        return path


def _split_cell(probe: str) -> tuple[str, str | None]:
    if probe.startswith(gc.test_finding_name("")) and "::" in probe:
        group, _, test = probe.partition("::")
        return group, test
    group, bracket, cell = probe.partition("[")
    return (group, cell[:-1]) if bracket and cell.endswith("]") else (probe, None)


def _sites(texts: Iterable[str]) -> list[tuple[str, int]]:
    """``(path, line)`` of each use text that starts with one."""
    out = []
    for text in texts:
        m = _LOCATION.match(text)
        if m:
            out.append((m["path"], int(m["line"])))
    return out


def entries(
    findings: Sequence[gc.GateFinding],
    tied: Sequence[tuple[gc.GateFinding, Sequence[Any]]] = (),
    why: dict[int, str] | None = None,
    folded: Sequence[tuple[gc.GateFinding, gc.GateFinding]] = (),
) -> list[Entry]:
    """One entry per change x kernel of the blocking ``findings``; ``tied`` maps a finding (by
    identity) to the profile's uses it met (``GateReport.tied``), ``why`` a "may affect"
    finding to the matcher's reason; ``folded`` are (finding, the removal it follows from),
    listed on the removal's entries (``Entry.follows``)."""
    uses_of = {id(f): list(u) for f, u in tied}
    why = why or {}
    table: dict[tuple[Any, ...], Entry] = {}
    for f in findings:
        if f.kind not in gc.UNSAFE_KINDS:
            continue
        group, cell = _split_cell(f.probe)
        # a fingerprint group's cells that change several ways are one change of that op; a
        # probe row's statuses are the change itself
        fp_group = f.probe.startswith("fp.")
        change = (f.kind, group, *(() if fp_group else (f.baseline, f.candidate)), f.fix,
                  f.relevance)  # fmt: skip
        uses = uses_of.get(id(f), [])
        # A kernel is its name in its file: a library defines one name in several files (one
        # per backend), and a test that launched one of them typed that one only.
        by_kernel: dict[tuple[str, str], list[tuple[str, int]]] = {}
        for u in uses:
            by_kernel.setdefault((u.kernel, u.path if u.kernel else ""), []).append(
                (u.path, u.line)
            )
        # the scanner's and the census's own sites (no kernel named)
        described = {u.describe() for u in uses}
        scanned = _sites(t for t in f.uses if t not in described)
        if scanned or not by_kernel:
            by_kernel.setdefault(("", ""), []).extend(scanned)
        for (kernel, kernel_path), sites in by_kernel.items():
            key = (*change, kernel, kernel_path)
            e = table.get(key)
            if e is None:
                e = table[key] = Entry(
                    f.kind,
                    group,
                    f.baseline,
                    f.candidate,
                    f.relevance,
                    kernel,
                    kernel_path,
                    fix=f.fix,
                )
            if (f.baseline, f.candidate) not in e.transitions:
                e.transitions.append((f.baseline, f.candidate))
            if f.where not in e.columns:
                e.columns.append(f.where)
            if cell is not None and cell not in e.cells:
                e.cells.append(cell)
            if f.probe not in e.probes:
                e.probes.append(f.probe)
            if f.lowering and f.lowering not in e.lowering:
                e.lowering.append(f.lowering)
            for path, line in sites:
                lines = e.locations.setdefault(path, [])
                if line not in lines:
                    lines.append(line)
            if f.relevance == MAY_AFFECT:
                mine = [u for u in uses if u.kernel == kernel and u.path == kernel_path]
                for text in _decides(mine, kernel, why.get(id(f), "")):
                    if text not in e.decides:
                        e.decides.append(text)
    out = list(table.values())
    for e in out:
        for lines in e.locations.values():
            lines.sort()
    _attach_follows(out, folded, uses_of)
    rank = {k: i for i, k in enumerate(KIND_ORDER)}
    # what breaks first, then what is used before what may be; one kernel's entries together
    return sorted(
        out,
        key=lambda e: (rank.get(e.kind, 9), e.relevance == MAY_AFFECT, e.kernel, e.group),
    )


def _attach_follows(
    out: Sequence[Entry],
    folded: Sequence[tuple[gc.GateFinding, gc.GateFinding]],
    uses_of: dict[int, list[Any]],
) -> None:
    """List each folded finding on the entries of the removal it follows from."""
    for f, root in folded:
        group, cell = _split_cell(f.probe)
        change = f"{group} `{f.baseline}` → `{f.candidate}`" if f.baseline else group
        if group == "api_surface":  # the census: the name, and what it lacks in short
            change = f"{group} `{f.where}`: {(f.candidate or '').split(' (', 1)[0]}"
        kernels = [u.kernel for u in uses_of.get(id(f), ()) if u.kernel]
        for e in out:
            if e.kind != root.kind or (root.baseline, root.candidate) not in e.transitions:
                continue
            if root.probe not in e.probes:
                continue
            got = e.follows.setdefault(change, {"cells": [], "kernels": []})
            if cell is not None and cell not in got["cells"]:
                got["cells"].append(cell)
            got["kernels"] += [k for k in dict.fromkeys(kernels) if k not in got["kernels"]]


def _decides(uses: Sequence[Any], kernel: str, why: str) -> list[str]:
    """What decides a "may affect" entry: its uses' own ``decides`` (the profile's type
    inference names the type variable), else the pointer parameters whose element type the
    kernel loads, to declare, or a test to run; else the matcher's reason."""
    given = [d for u in uses if (d := getattr(u, "decides", ""))]
    if given:
        return list(dict.fromkeys(given))
    if not kernel or not uses:
        return [why] if why else []
    params = _pointer_params(uses[0].path, kernel)
    named = [p for p in params if any(re.search(rf"\b{re.escape(p)}\b", u.code) for u in uses)]
    chosen = named or params
    launch = f"or run a test that launches `{kernel}` of {_short(uses[0].path)} (--tests)"
    if not chosen:
        return [f"declare the element types of `{kernel}`'s pointer parameters in "
                f"[tool.triton-compat].dtypes, {launch}"]  # fmt: skip
    what = (
        f"the element type of `{chosen[0]}`"
        if len(chosen) == 1
        else "the element types of " + ", ".join(f"`{p}`" for p in chosen)
    )
    return [f"declare {what} of `{kernel}` in [tool.triton-compat].dtypes, {launch}"]


@lru_cache(maxsize=256)
def _tree(path: str) -> ast.Module | None:
    try:
        return parse_python(Path(path).read_text(encoding="utf-8"), path)
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return None


def _pointer_params(path: str, kernel: str) -> tuple[str, ...]:
    """The parameters of ``kernel`` (defined in ``path``) that its ``tl.load``/``tl.store``
    address from: the base of each address (``x_ptr`` in ``x_ptr + offs * stride``, followed
    through local names), whose element types decide its operands' dtypes."""
    return _pointers_of_file(path).get(kernel, ())


@lru_cache(maxsize=256)
def _pointers_of_file(path: str) -> dict[str, tuple[str, ...]]:
    """``_pointer_params`` of every function of a file, read in one pass per function."""
    tree = _tree(path)
    out: dict[str, tuple[str, ...]] = {}
    if tree is None:
        return out
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or node.name in out:
            continue
        args = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
        params = {
            a.arg
            for a in args
            if a.annotation is None or "constexpr" not in ast.unparse(a.annotation)
        }
        assigned: dict[str, ast.expr] = {}
        addresses: list[ast.expr] = []
        for st in ast.walk(node):
            if (
                isinstance(st, ast.Assign)
                and len(st.targets) == 1
                and isinstance(st.targets[0], ast.Name)
            ):
                assigned.setdefault(st.targets[0].id, st.value)
            elif (
                isinstance(st, ast.Call)
                and isinstance(st.func, ast.Attribute)
                and st.func.attr in ("load", "store", "make_block_ptr", "atomic_add")
                and st.args
            ):
                addresses.append(st.args[0])
        found = dict.fromkeys(b for a in addresses if (b := _base(a, params, assigned, 0)))
        out[node.name] = tuple(found)
    return out


def _base(e: ast.expr, params: set[str], assigned: dict[str, ast.expr], depth: int) -> str:
    """The parameter an address expression starts from ("" where none is found)."""
    if depth > 8:
        return ""
    if isinstance(e, ast.Name):
        if e.id in params:
            return e.id
        value = assigned.get(e.id)
        return _base(value, params, assigned, depth + 1) if value is not None else ""
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Add | ast.Sub):
        return _base(e.left, params, assigned, depth + 1) or (
            _base(e.right, params, assigned, depth + 1) if isinstance(e.op, ast.Add) else ""
        )
    return ""


def may_affect_kernels(blocking: Sequence[Entry], uses: Iterable[Any]) -> dict[str, list[str]]:
    """The kernels (``file:name``) that "may affect" entries are in, split by whether a test
    launched that kernel (a use the profile typed from a captured launch names its test):
    ``launched`` ones are kernels the capture reached and still could not type, ``not
    launched`` ones are kernels no selected test ran (typed from the source only)."""
    ran = {(u.path, u.kernel) for u in uses if getattr(u, "test", "") and u.kernel}
    out: dict[str, list[str]] = {"launched": [], "not_launched": []}
    for e in blocking:
        if e.relevance != MAY_AFFECT or not e.kernel:
            continue
        name = f"{_short(e.kernel_path)}:{e.kernel}"
        side = out["launched" if (e.kernel_path, e.kernel) in ran else "not_launched"]
        if name not in side:
            side.append(name)
    return {k: sorted(v) for k, v in out.items()}


def counts(report: Any, blocking: Sequence[Entry]) -> dict[str, int]:
    """The first screen's counts: blocking entries (a change x kernel), changes (findings
    that differ only in column or cell count once) and undecidable items."""
    c = report.comparison
    return {
        "blocking": sum(1 for e in blocking if e.relevance != MAY_AFFECT),
        "may_affect": sum(1 for e in blocking if e.relevance == MAY_AFFECT),
        "relaxations": _changes(f for f in c.findings if f.kind == gc.RELAXATION),
        "not_on_targets": _changes(report.off_target) + len(report.off_target_undecidable),
        "follows_from_removed": _changes(f for f, _ in getattr(report, "folded", ())),
        "follows_from_dtype": _changes(f for f, _ in getattr(report, "folded_dtype", ())),
        "lowering_values_equal": _changes(f for f in c.findings if f.kind == gc.LOWERING_EQUAL),
        "new_warnings": _changes(getattr(report, "notices", ())),
        "fixed_used": _changes(getattr(report, "fixed", ())),
        "changed_not_used": _changes(report.unused) + len(report.unused_undecidable),
        "undecidable": len(report.errors) + len(c.undecidable),
    }


def _changes(findings: Iterable[gc.GateFinding]) -> int:
    """How many changes: findings that differ only in column or cell count once."""
    return len({(f.kind, _split_cell(f.probe)[0], f.baseline, f.candidate) for f in findings})


FIRST_SCREEN_LINES = 22  # lines for the entries on the first screen; the rest are below


def first_screen(report: Any, blocking: Sequence[Entry]) -> list[str]:
    """Counts, then one line per blocking entry; a may-affect entry is followed by what
    decides it, said once for the entries after it that the same thing decides."""
    n = counts(report, blocking)
    lines = [
        f"**{n['blocking']}** blocking, **{n['may_affect']}** may affect, "
        f"{n['relaxations']} new on the candidate (relaxations), "
        f"{n['not_on_targets']} not on your targets, {n['changed_not_used']} changed but not "
        f"used, {n['undecidable']} undecidable"
        + (
            f", {n['follows_from_removed']} follow from a removed API (listed under it)"
            if n["follows_from_removed"]
            else ""
        )
        + (
            f", {n['follows_from_dtype']} lowering change(s) follow from a result-dtype change "
            "(listed under it)"
            if n["follows_from_dtype"]
            else ""
        )
        + (
            f", {n['lowering_values_equal']} lowering change(s) with values equal on the GPU"
            if n["lowering_values_equal"]
            else ""
        )
        + (f", {n['new_warnings']} new warning(s)" if n["new_warnings"] else "")
        + (
            f", {n['fixed_used']} fixed in the candidate that your code uses (a wrong value now "
            "right or refused: see Fixed below)"
            if n["fixed_used"]
            else ""
        ),
        "",
    ]
    said_targets = targets_line(getattr(report, "declaration", None))
    if said_targets:
        lines[-1:-1] = ["", said_targets]
    profile = getattr(report, "profile", None)
    if profile is not None and profile.assumption:  # what every open element type was taken as
        lines[-1:-1] = ["", f"Types: {profile.assumption}."]
    shown, used, said = 0, 0, ""
    for e in blocking:
        decides = e.decides[0] if e.relevance == MAY_AFFECT and e.decides else ""
        need = 1 + (1 if decides and decides != said else 0)
        if used + need > FIRST_SCREEN_LINES:
            break
        lines.append(e.line())
        if decides and decides != said:
            lines.append(f"  - decides: {decides}")
            said = decides
        shown, used = shown + 1, used + need
    if len(blocking) > shown:
        lines.append(f"- ... and {len(blocking) - shown} more entries (details below)")
    return lines


def targets_line(declaration: Any) -> str:
    """The first screen's line on which columns count: declared, inferred (with the evidence,
    ``file:line``), or every column (nothing declared, nothing inferred: the project's own
    verdict without a declaration)."""
    if declaration is None:
        return ""
    if declaration.targets is not None:
        where = f" (declared in `{_short(declaration.source)}`)" if declaration.source else ""
        return f"Targets: {', '.join(declaration.targets)}{where}."
    inferred = declaration.inferred
    if inferred is None:
        return ""
    if inferred.not_run:
        return (
            f"Targets: every compiled column; not {', '.join(inferred.not_run)} ({inferred.why})."
        )
    shown = "; ".join(f"`{e}`" for e in inferred.evidence)
    return f"Targets: every column ({inferred.why}{': ' + shown if shown else ''})."
