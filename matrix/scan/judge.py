"""What a finding means for the candidate release, read from the recorded probe rows and census."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from matrix.core import Column, Release, ReleaseError
from matrix.measure.results import Run
from matrix.scan.census_checks import Censuses, CensusProblem
from matrix.scan.findings import Finding
from matrix.scan.rules import AFFECTS, NOT_AFFECTED, UNKNOWN, Rule

# --------------------------------------------------------------------------- releases affected


def probe_statuses(runs: Iterable[Run], probe: str) -> dict[Release, dict[str, set[str]]]:
    """``{release: {status: {"backend[:target]", ...}}}`` for one probe over recorded runs."""
    out: dict[Release, dict[str, set[str]]] = {}
    for run in runs:
        release = run.release
        if release is None:
            continue
        for r in run.results:
            if r.probe == probe:
                where = str(Column(r.backend, r.target))
                out.setdefault(release, {}).setdefault(r.status, set()).add(where)
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


def judge_rule(rule: Rule, runs: Sequence[Run] | None, candidate: str | None) -> tuple[str, str]:
    """(effect on the candidate, why) for a hand-written rule, from the recorded results."""
    if runs is None or rule.probe is None:
        if rule.probe is None and runs is not None:
            return UNKNOWN, "no probe in the matrix measures this; it may concern every release"
        return UNKNOWN, ""
    by_release = probe_statuses(runs, rule.probe)
    if candidate is not None:
        recorded = Release.parse(candidate, "--candidate")
        if recorded not in by_release:
            return UNKNOWN, f"{rule.probe}: no results for {recorded}"
        statuses = by_release[recorded]
        parts = [f"{s} ({', '.join(sorted(w))})" for s, w in sorted(statuses.items())]
        affected = any(s in rule.concerns for s in statuses)
        verdict = "affects" if affected else "does not affect"
        return (AFFECTS if affected else NOT_AFFECTED), (
            f"{rule.probe} on {recorded}: {'; '.join(parts)}: {verdict} {recorded}"
        )
    affected: dict[str, list[str]] = {}
    for release in sorted(by_release):
        for status in by_release[release]:
            if status in rule.concerns:
                affected.setdefault(status, []).append(str(release))
    if not by_release:
        return UNKNOWN, f"{rule.probe}: no results recorded"
    if not affected:
        return UNKNOWN, f"{rule.probe}: no recorded release is affected"
    return UNKNOWN, f"{rule.probe}: " + "; ".join(
        f"{s} on {', '.join(rs)}" for s, rs in sorted(affected.items())
    )


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
    for f in findings:
        if not f.rule.census:
            if f.rule.id not in cache:
                cache[f.rule.id] = judge_rule(f.rule, runs, candidate)
            f.effect, notes[f.rule.id] = cache[f.rule.id]
            continue
        problem: CensusProblem = f.census
        if candidate is None:
            f.effect, f.note = UNKNOWN, ""
        elif cand is None:
            f.effect, f.note = UNKNOWN, f"no API census recorded for {candidate}"
        elif problem.kind == "census-default":
            if ref is None:
                f.effect, f.note = UNKNOWN, f"no release before {cand} to compare defaults with"
            else:
                changed = problem.defaults.get(cand) != problem.defaults.get(ref)
                f.effect = AFFECTS if changed else NOT_AFFECTED
                f.note = f"{'differs' if changed else 'same'} on {ref} and {cand}"
        else:
            fails = cand in problem.releases
            f.effect = AFFECTS if fails else NOT_AFFECTED
            f.note = f"{'fails' if fails else 'works'} on {cand}"
    return notes
