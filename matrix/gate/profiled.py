"""The verdict about a team's code: each finding tied to the uses its profile maps onto it
(never blocking where none does), and the acknowledgements of this upgrade that match
nothing."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from matrix.analyze import fingerprint
from matrix.analyze.census import absent_on
from matrix.analyze.profile import (
    MAY_AFFECT,
    NOT_USED,
    USED,
    Match,
    Matcher,
    Profile,
    Use,
    parse_op_spec,
)
from matrix.core import Release
from matrix.gate import compare as gc
from matrix.gate import gpu_launches, policy
from matrix.gate.config import AcceptedChange, matches_path
from matrix.gate.gate_report import GateReport
from matrix.gate.roots import shown_sites
from matrix.gate.shapes import Sites
from matrix.gate.targets import Rule, kernel_columns, runs_in, vendor_backend
from matrix.gate.usage import relevance, shown_path


def stale_acknowledgements(
    report: GateReport, accepted: Sequence[AcceptedChange], baseline: Release, candidate: Release
) -> list[str]:
    """The acknowledgements for this upgrade that match no change (a probe renamed, a change
    that went away, a path from another machine): named, so that a dead entry is noticed
    before it hides a later change nobody looked at. Never blocking."""
    found = [*report.comparison.findings, *report.unused, *report.fixed]
    files = {u.path for u in report.profile.uses} if report.profile is not None else set()
    out = []
    for ack in accepted:
        if not ack.for_upgrade(baseline, candidate):
            continue
        hit = any(ack.matches(f.probe, f.where, f.baseline or "", f.candidate or "", baseline,
                              candidate) for f in found)  # fmt: skip
        if not hit:
            out.append(f"{ack.describe()}: matches no change of this upgrade")
        elif ack.paths and not any(matches_path(p, ack.path_globs()) for p in files):
            out.append(f"{ack.describe()}: its paths match no file of the scanned code")
    return out


def _only(m: Match, kept: Sequence[Use]) -> Match:
    """``m`` with only the uses ``kept`` (a selection of its own); with none left, not used.
    A match without uses (a project row, a finding tied to scanned sites) stays as it is."""
    if not m.uses or m.status == NOT_USED:
        return m
    return Match(m.status, list(kept), m.why) if kept else Match(NOT_USED)


def apply_profile(
    report: GateReport,
    profile: Profile,
    accepted: Sequence[AcceptedChange],
    baseline: Release,
    candidate: Release,
    own: bool = False,
    censuses: Mapping[str, Any] | None = None,
) -> None:
    """Make the verdict about the team's code (``own``: this project's kernels/, which the
    rows marked ``project`` in their probe.toml [usage] measure, so those always concern it): a
    finding its profile does not use moves to
    ``report.unused`` (never blocking); one it uses or may be affected by stays, naming each
    use (kernel, file:line, test); a fingerprint value the candidate fixed moves to
    ``report.fixed``; the team's acknowledgements apply where they cover every use."""
    report.profile = profile
    matcher = Matcher(profile)
    sites = Sites(report.scanned, profile.int_constexprs)
    sites.held = _held_kernels(profile)
    memo: dict[str, Any] = {}

    def rel(f: gc.GateFinding) -> Any:
        key = f.probe if not f.uses else f"{f.probe}\0{f.where}\0{f.uses}"
        if key not in memo:
            memo[key] = relevance(f, matcher, sites)
        return memo[key]

    c = report.comparison
    kept: list[gc.GateFinding] = []
    for f in c.findings:
        # (a resource change that does not block still concerns only code that runs the kernel,
        # and a lowering change with equal values only code that uses the case)
        if f.kind not in (*gc.UNSAFE_KINDS, gc.ACCEPTED, gc.MAY_SLOW, gc.LOWERING_EQUAL):
            kept.append(f)
            continue
        _typed_by_profile(f, matcher, report.scanned)
        # (a finding the scanner or the census tied to the code's own sites is about them)
        project_row = own and bool(matcher.map.probes.get(f.probe, {}).get("project"))
        if (
            not f.uses
            and not project_row
            and policy.never_team_relevant(f.probe, matcher.map.probes)
        ):
            report.unused.append(f)
            continue
        m = Match(USED, [], "measures this project's own kernels") if project_row else rel(f)
        m = _where_it_runs(m, f, report, sites, (baseline, candidate), censuses)
        if m.status == NOT_USED:
            report.unused.append(f)
            continue
        f.relevance = m.status
        report.tied.append((f, list(m.uses)))
        shown = list(dict.fromkeys(u.describe() for u in m.uses))
        f.uses = [*f.uses, *shown]
        if m.status == MAY_AFFECT:
            report.may_why[id(f)] = m.why
            f.evidence.append(
                f"may affect your code: {m.why or 'an operand kind is not inferable'}; "
                "type the value (e.g. `.to(tl.float16)`) or run the kernel through --tests"
            )
        # (or a silent wrong result on the baseline's GPU that the candidate refuses)
        if _fixed(f) or gpu_launches.fixed_by_refusal(f, str(baseline)):
            report.fixed.append(f)
            continue
        if f.kind == gc.BEHAVIOUR:
            for ack in accepted:
                if ack.matches(
                    f.probe, f.where, f.baseline or "", f.candidate or "", baseline, candidate
                ) and matcher.covers(ack.path_globs(), ack.kernels, m.uses):
                    f.kind, f.reason = gc.ACCEPTED, ack.reason
                    break
        kept.append(f)
    c.findings = kept
    for text in list(c.undecidable):
        probe = c.undecidable_probe.get(text)
        if probe is not None and (
            policy.never_team_relevant(probe, matcher.map.probes)
            or rel(gc.GateFinding("", probe, "", None, None)).status == NOT_USED
        ):
            c.undecidable.remove(text)
            report.unused_undecidable.append(text)


def _held_kernels(profile: Profile) -> dict[tuple[str, str], list[tuple[str, ...]]]:
    """Per kernel (its file and name), the columns its names hold it to (``kernel_columns``);
    kernels that name no such namespace are left out (every column)."""
    names: dict[tuple[str, str], set[str]] = {}
    for u in profile.uses:
        if u.op == "name" and u.kernel:
            names.setdefault((u.path, u.kernel), set()).add(u.attr("name"))
    held = {k: kernel_columns(v) for k, v in names.items()}
    return {k: v for k, v in held.items() if v}


def _set_aside(
    m: Match, report: GateReport, away: Callable[[Use], bool], why: Callable[[int, Use], str]
) -> Match:
    """``m`` less the uses ``away`` selects, with a note (``why(how many, the first)``) in
    gate.md's details counting what was set aside."""
    gone = [u for u in m.uses if away(u)] if m.status != NOT_USED else []
    if not gone:
        return m
    report.comparison.notes.append(why(len(gone), gone[0]))
    return _only(m, [u for u in m.uses if not away(u)])


def _in_its_columns(m: Match, f: gc.GateFinding, report: GateReport, sites: Sites) -> Match:
    """``m`` less the uses in kernels that cannot run in ``f``'s column: a kernel naming a
    namespace of one vendor or compiler (a gluon kernel is never interpreted; targets.toml
    [namespaces])."""
    column = policy.column_of(f.where)
    if column is None:
        return m
    return _set_aside(
        m, report, lambda u: not runs_in(column, sites.held.get((u.path, u.kernel), ())),
        lambda n, u: f"not on your targets: {f.probe} on {column} at {n} use(s) in kernels "
        f"that cannot run there ({u.path}:{u.line} in {u.kernel}, ...; "
        "matrix/data/targets.toml [namespaces])",
    )  # fmt: skip


def _interpreted_where_found(m: Match, f: gc.GateFinding, report: GateReport) -> Match:
    """``m`` less its interpreter-column uses in files outside the folders where the repository
    shows interpreter runs, where it shows them only in some (a collection of independent
    folders: gpu-mode/lectures)."""
    elsewhere = report.profile.interpreted_elsewhere if report.profile is not None else set()
    if not elsewhere or policy.column_of(f.where) != Rule.load().column:
        return m
    return _set_aside(
        m, report, lambda u: u.path in elsewhere,
        lambda n, u: f"not on your targets: {f.probe} on {f.where} at {n} use(s) in code "
        f"outside the folders where the repository runs the interpreter ({u.path}:{u.line} in "
        f"{u.kernel}, ...)",
    )  # fmt: skip


def _reached(m: Match, f: gc.GateFinding, report: GateReport) -> Match:
    """``m`` less the "may affect" uses in kernels nothing in the repository reaches (no launch,
    no mention outside functions nothing calls: matrix/gate/reach.py): no launch of theirs can
    give the dtype the entry waits on."""
    reach = report.profile.reach if report.profile is not None else None
    if reach is None or m.status != MAY_AFFECT:
        return m
    return _set_aside(
        m, report, lambda u: bool(u.kernel) and reach.unreached(u.path, u.kernel),
        lambda n, u: f"not reached: {f.probe} on {f.where} at {n} may-affect use(s) in kernels "
        f"that nothing in your repository launches or names ({u.path}:{u.line} in {u.kernel}, "
        "...; launch it, or run a test that does, to have it gated)",
    )  # fmt: skip


def _where_it_runs(
    m: Match,
    f: gc.GateFinding,
    report: GateReport,
    sites: Sites,
    upgrade: tuple[Release, Release],
    censuses: Mapping[str, Any] | None,
) -> Match:
    """``m`` less the uses the code on the upgrade's releases never runs: lines the scanner
    ruled out, vendor forks' code, branches a guard keeps off, names the baseline lacks."""
    baseline, candidate = upgrade
    if f.ruled_out:
        # lines whose own case did not change, or that a guard keeps off the candidate
        # (the scanner's reading, matrix.gate.compare.concerned_uses), are not its uses
        off = {_shown_line(t, report.scanned) for t in f.ruled_out}
        m = _only(m, [u for u in m.uses if f"{u.path}:{u.line}" not in off])
    # code a vendor's own Triton fork compiles (targets.toml [vendor]): not upstream's
    m = _set_aside(
        m, report, lambda u: bool(vendor_backend(u.path)),
        lambda n, u: f"not on your targets: {f.probe} on {f.where} at {n} use(s) in vendor "
        f"backend code ({u.path}:{u.line}, ...)",
    )  # fmt: skip
    m = _in_its_columns(m, f, report, sites)
    m = _interpreted_where_found(m, f, report)
    m = _reached(m, f, report)
    # a use in a branch that a version or feature guard keeps off the candidate (or, for a
    # change rather than a break, off the baseline: new code there) is not one
    sides = [candidate] if f.kind == gc.BREAKING else [baseline, candidate]
    m = _only(m, [u for u in m.uses if all(sites.branch_runs(u, r, censuses) for r in sides)])
    # a name the baseline does not have: code that runs there never reaches it (new on the
    # candidate, as a relaxation is)
    m = _only(
        m,
        [
            u
            for u in m.uses
            if not (u.op == "name" and absent_on(censuses, baseline, u.attr("name")))
        ],
    )
    return m


def _typed_by_profile(f: gc.GateFinding, matcher: Matcher, roots: Sequence[str]) -> None:
    """Where the scanner tied ``f`` to lines by their spelling alone (TRI004: a ``tl.dot``
    without ``input_precision``) and the probe's [usage] names typed ops
    (``dot[float32,...]``), a line the profile read as that op is left to its types: the
    profile's match decides it (used, may affect, or not used: an fp16 or fp8 dot has no
    float32 precision to change). A line the profile did not read stays the scanner's (fail
    closed)."""
    specs = matcher.map.probes.get(f.probe, {}).get("ops", [])
    if not f.uses or not specs:
        return
    ops = {parse_op_spec(s)[0] for s in specs}
    read = {(u.path, u.line) for u in matcher.profile.uses if u.op in ops}
    f.uses = [t for t in f.uses if not shown_sites([t], roots) & read]


def _shown_line(text: str, roots: Sequence[str]) -> str:
    """A scanner's ``path:line`` as the profile names the same line (``shown_path``)."""
    path, _, line = text.rpartition(":")
    return f"{shown_path(path, roots)}:{line}"


def _fixed(f: gc.GateFinding) -> bool:
    """A fingerprint value that was wrong (or never stored) on the baseline and is right on the
    candidate (or, for an observed cell, a value where nothing was stored before)."""
    return (
        f.probe.startswith(fingerprint.PREFIX)
        and f.baseline in fingerprint.BAD_VALUES
        and (f.candidate in fingerprint.RIGHT_STATUSES
             or (f.baseline == fingerprint.UNWRITTEN and f.candidate not in fingerprint.BAD_VALUES))
    )  # fmt: skip
