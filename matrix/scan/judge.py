"""What a finding means for the candidate release, read from the recorded probe rows and census.

Every rule is tied to recorded data, and the data alone decides (no release is written in the
rules file):

- a probe row (``probe``: block_ptr, tensor_descriptor, ...) or one fingerprint cell (``probe``
  a fingerprint group and ``cell``: fp.rules / global_annotated): a status in ``breaking`` on
  any column of the candidate breaks the code there, one in ``concerns`` changes it, any other
  recorded status does not affect it;
- the census (``census_decides``, and every census rule): the matched name absent on the
  candidate breaks, present does not affect; a name the census cannot see is unknown;
- nothing measured (no probe, no census): unknown, which fails closed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from matrix.analyze.census import works_on
from matrix.core import Column, Release, ReleaseError
from matrix.results import Run
from matrix.scan.census_checks import Censuses, CensusProblem, _spans
from matrix.scan.findings import Finding
from matrix.scan.guards import TryGuard, guard_effect
from matrix.scan.rule_file import load_raises
from matrix.scan.rules import (
    BREAKS,
    CHANGES,
    NOT_AFFECTED,
    UNKNOWN,
    Rule,
    raised_by,
)

# --------------------------------------------------------------------------- releases affected

# (control cell, the statuses that mean it failed): see probe_statuses
Control = tuple[str, frozenset[str]]


def probe_statuses(
    runs: Iterable[Run], probe: str, cell: str | None = None, control: Control | None = None
) -> dict[Release, dict[str, set[str]]]:
    """``{release: {status: {"backend[:target]", ...}}}`` for one probe over recorded runs; with
    ``cell``, the status of that cell of a fingerprint group (``data.cells[cell]``). With
    ``control`` (a cell and the statuses that mean it failed), a column whose control case
    failed too is left out: what fails there fails whatever the use (3.2.0's interpreter
    launches no autotuned kernel at all), so it says nothing about this use."""
    out: dict[Release, dict[str, set[str]]] = {}
    for run in runs:
        release = run.release
        if release is None:
            continue
        for r in run.results:
            if r.probe != probe:
                continue
            status = r.status
            if cell is not None:
                cells = (r.data or {}).get("cells") or {}
                if cell not in cells:
                    continue
                status = str(cells[cell])
                if control is not None and str(cells.get(control[0])) in control[1]:
                    continue
            where = str(Column(r.backend, r.target))
            out.setdefault(release, {}).setdefault(status, set()).add(where)
    return out


def same_release(a: str | Release, b: str | Release) -> bool:
    """``3.9`` and ``3.9.0`` are one release (core.Release: the gate's reading too)."""
    try:
        return Release.parse(a) == Release.parse(b)
    except ReleaseError:
        return a == b


def releases_note(rule: Rule, runs: Sequence[Run] | None, candidate: str | None) -> str:
    """Which recorded releases the rule's probe marks affected (``block_ptr: removed on 3.9.0``)."""
    return judge_rule(rule, runs, candidate)[1]


# What a failing import raises (ImportError, ModuleNotFoundError), as opposed to an attribute.
IMPORT_ERRORS = ("ImportError", "ModuleNotFoundError")

# Statuses of a control case that say the column could not tell anything about the use.
CONTROL_FAILED = frozenset({"wrong", "error", "skipped", "crashed", "timeout"})

WORDS = {BREAKS: "breaks", CHANGES: "changes", NOT_AFFECTED: "does not affect"}


def _effect_of(rule: Rule, statuses: Iterable[str]) -> str:
    found = set(statuses)
    if found & set(rule.breaking):
        return BREAKS
    if found & set(rule.concerns):
        return CHANGES
    return NOT_AFFECTED


def _source(rule: Rule) -> str:
    return f"{rule.probe}[{rule.cell}]" if rule.cell else str(rule.probe)


def judge_rule(rule: Rule, runs: Sequence[Run] | None, candidate: str | None) -> tuple[str, str]:
    """(effect on the candidate, why) for a rule tied to a probe row or fingerprint cell."""
    if rule.probe is None:
        if runs is not None and not rule.census_decides:
            return UNKNOWN, "nothing in the matrix measures this; it may concern every release"
        return UNKNOWN, ""
    if runs is None:
        return UNKNOWN, ""
    control = None
    if rule.control and rule.cell != rule.control:
        failed = frozenset(rule.breaking) | frozenset(rule.concerns) | CONTROL_FAILED
        control = (rule.control, failed)
    by_release = probe_statuses(runs, rule.probe, rule.cell, control)
    if not by_release:
        return UNKNOWN, f"{_source(rule)}: no results recorded"
    per_release = {r: _effect_of(rule, s) for r, s in sorted(by_release.items())}
    releases = [str(r) for r in per_release]
    spans = {
        e: _spans(releases, [str(r) for r, got in per_release.items() if got == e])
        for e in (BREAKS, CHANGES, NOT_AFFECTED)
        if e in per_release.values()
    }
    history = "; ".join(f"{WORDS[e]} {span}" for e, span in spans.items())
    if candidate is None:
        return UNKNOWN, f"{_source(rule)}: {history}"
    recorded = Release.parse(candidate, "--candidate")
    if recorded not in by_release:
        return UNKNOWN, f"{_source(rule)}: no results for {recorded}"
    statuses = by_release[recorded]
    parts = [f"{s} ({', '.join(sorted(w))})" for s, w in sorted(statuses.items())]
    effect = per_release[recorded]
    return effect, f"{_source(rule)} on {recorded}: {'; '.join(parts)} ({history})"


def judge_name(
    censuses: Censuses | None,
    qualname: str,
    candidate: str | None,
    call: tuple[tuple[str, ...], int] | None = None,
) -> tuple[str, str]:
    """(effect, why) for a rule the census decides: where the matched name exists and, for a
    call rule (``call``: its keywords and positional count), where its signature accepts
    the call as written (tl.load with 4 positional arguments: refused by 3.9.0)."""
    if not censuses or not qualname:
        return UNKNOWN, "no API census recorded" if not censuses else ""
    releases = list(censuses)
    keywords, positional = call if call is not None else ((), 0)
    if positional < 0:
        return UNKNOWN, f"{qualname}: called with *args, the positional count is not known"
    w = works_on(censuses, qualname, keywords, positional)
    status = {r: s.status for r, s in w.per_release.items()}
    present = [r for r in releases if status.get(r) == "ok"]
    absent = [r for r in releases if status.get(r) in ("absent", "rejects")]
    refused = call is not None and any(s.status == "rejects" for s in w.per_release.values())
    parts = []
    if present:
        word = "accepted" if call is not None else "present"
        parts.append(f"{word} on {_spans(releases, present)}")
    if absent:
        word = "refused" if refused else "absent"
        parts.append(f"{word} on {_spans(releases, absent)}")
    history = f"{qualname}: {', '.join(parts) or 'not seen by the census'}"
    if candidate is None:
        return UNKNOWN, history
    cand = next((r for r in releases if same_release(r, candidate)), None)
    if cand is None:
        return UNKNOWN, f"no API census recorded for {candidate}"
    if status.get(cand) in ("absent", "rejects"):
        return BREAKS, history
    if status.get(cand) == "ok":
        return NOT_AFFECTED, history
    return UNKNOWN, f"{history}; the census cannot see it on {cand}"


def judge(
    findings: Iterable[Finding],
    runs: Sequence[Run] | None,
    candidate: str | None,
    censuses: Censuses | None,
    baseline_release: str | None = None,
) -> dict[str, str]:
    """Set each finding's ``effect`` and ``note``; return the per-rule notes (shown once)."""
    notes: dict[str, str] = {}
    cache: dict[str, tuple[str, str]] = {}
    releases = list(censuses or ())
    cand = None
    if candidate is not None:
        cand = next((r for r in releases if same_release(r, candidate)), None)
    ref = None
    if baseline_release is not None:
        ref = next((r for r in releases if same_release(r, baseline_release)), None)
    elif cand is not None and releases.index(cand) > 0:
        ref = releases[releases.index(cand) - 1]
    findings = list(findings)
    for f in findings:
        _judge_one(f, runs, candidate, censuses, cand, ref, notes, cache)
    if candidate is not None:
        _rule_out_branches(findings, candidate, censuses)
    return notes


def _rule_out_branches(
    findings: list[Finding], candidate: str, censuses: Censuses | None = None
) -> None:
    """A finding in a branch that runs only on other releases does not affect the candidate
    (``else:`` of ``if Version(triton.__version__) >= Version("3.0.0")`` on 3.9.0, the body
    of ``if hasattr(tl, "x")`` where the census has no ``tl.x``), nor does one whose failure a
    ``try/except`` with a fallback catches (matrix.scan.guards)."""
    try:
        release = Release.parse(candidate)
    except ReleaseError:
        return
    raises = load_raises() if any(f.guards for f in findings) else {}
    for f in findings:
        if not f.guards or f.effect == NOT_AFFECTED:
            continue
        # only a failure raises: a changed default or result is not caught by a try
        why = guarded_out(f, release, censuses, f.effect in (BREAKS, UNKNOWN), raises)
        if why is not None:
            f.effect, f.note = NOT_AFFECTED, why


def guarded_out(
    f: Finding,
    release: Release,
    censuses: Censuses | None,
    fails: bool,
    raises: dict[str, tuple[str, ...]] | None = None,
) -> str | None:
    """Why ``f``'s feature guards keep it from mattering on ``release`` (its branch does not
    run there, or, where it ``fails`` there, a ``try/except`` with a fallback catches what it
    raises); None when nothing rules it out. The scanner's judge and the gate share it, so a
    guard the scanner honours never blocks in the gate either."""
    if not f.guards:
        return None
    if raises is None:
        raises = load_raises()
    raised = raised_by(f.rule, raises) if fails else ()
    # a missing name raises ImportError in an import statement, AttributeError (NameError)
    # anywhere else: `except ImportError` around `x = triton.language.libdevice` catches
    # nothing
    if any(e.endswith(IMPORT_ERRORS) for e in raised):  # a missing name
        # (a use of a name a guarded try imports carries that try: its failure is the
        # import's)
        is_import = f.source_line.strip().startswith(("import ", "from ")) or any(
            isinstance(g, TryGuard) and not g.first <= f.line <= g.last for g in f.guards
        )
        raised = tuple(e for e in raised if e.endswith(IMPORT_ERRORS) == is_import)
    got = guard_effect(f.guards, raised, release, censuses)
    return None if got is None else got[1]


def _judge_one(
    f: Finding,
    runs: Sequence[Run] | None,
    candidate: str | None,
    censuses: Censuses | None,
    cand: str | None,
    ref: str | None,
    notes: dict[str, str],
    cache: dict[str, tuple[str, str]],
) -> None:
    """Set one finding's effect and note from the data its rule is tied to."""
    if not f.rule.census:
        if f.rule.census_decides:
            f.effect, f.note = judge_name(censuses, f.qualname, candidate, f.call)
            return
        if f.rule.cases:
            # one rule, one measured case per kind of use: the finding's own cell decides
            if f.cell is None:
                kind = f.snippet.rsplit(" [", 1)[-1].rstrip("]")
                f.effect = UNKNOWN
                f.note = f"no case of {f.rule.probe} measures a use of kind {kind}"
                return
            cell: str | None = f.cell
            where = ""
            if f.alternative is not None and candidate is not None:
                guard, other = f.alternative
                runs_there = (
                    None if guard is None else guard.decide(Release.parse(candidate), censuses)
                )
                if runs_there is False:  # the rebinding's branch does not run on the candidate
                    cell, where = other, f" (not rebound on {candidate}: {guard.text()} fails)"
                if cell is None:
                    f.effect, f.note = UNKNOWN, f"no case of {f.rule.probe} measures it{where}"
                    return
            key = f"{f.rule.id}[{cell}]"
            if key not in cache:
                cache[key] = judge_rule(replace(f.rule, cell=cell), runs, candidate)
            f.effect, f.note = cache[key]
            f.note += where
            return
        if f.rule.id not in cache:
            cache[f.rule.id] = judge_rule(f.rule, runs, candidate)
        f.effect, notes[f.rule.id] = cache[f.rule.id]
        return
    problem: CensusProblem = f.census
    if candidate is None:
        f.effect, f.note = UNKNOWN, ""
    elif problem.nowhere:
        f.effect, f.note = BREAKS, "on no recorded release"
    elif cand is None:
        f.effect, f.note = UNKNOWN, f"no API census recorded for {candidate}"
    elif problem.kind == "census-default":
        if ref is None:
            f.effect, f.note = UNKNOWN, f"no release before {cand} to compare defaults with"
        else:
            changed = problem.defaults.get(cand) != problem.defaults.get(ref)
            f.effect = CHANGES if changed else NOT_AFFECTED
            f.note = f"{'differs' if changed else 'same'} on {ref} and {cand}"
    elif cand in problem.unseen:
        f.effect, f.note = UNKNOWN, f"the census cannot see it on {cand}"
    else:
        fails = cand in problem.releases
        f.effect = BREAKS if fails else NOT_AFFECTED
        f.note = f"{'fails' if fails else 'works'} on {cand}"
