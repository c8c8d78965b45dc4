"""One probe's pair of results in one compared column: what it means for the upgrade (a
finding, an undecidable item or a note), and which scanned uses of it the change is about."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from matrix.analyze import fingerprint
from matrix.analyze.census import absent_on
from matrix.catalog import PROBES_BY_NAME
from matrix.core import FAILURE_STATUSES, NO_OBSERVATION_STATUSES, Release
from matrix.gate import resource_changes as rc
from matrix.gate.config import AcceptedChange
from matrix.gate.findings import (
    ACCEPTED,
    BEHAVIOUR,
    BREAKING,
    MAY_SLOW,
    REGRESSION,
    RELAXATION,
    Comparison,
    GateFinding,
)
from matrix.gate.targets import vendor_backend
from matrix.results import Result
from matrix.scan import Finding as ScanFinding
from matrix.scan.judge import CONTROL_FAILED, guarded_out


def _detail(side: str, release: Release, r: Result) -> str:
    text = " ".join(r.detail.split())
    if fingerprint.is_group(r) and r.data:  # a cell: its reference/got value, its refusal
        text = " ".join(f"{k}={v}" for k, v in r.data.items())
    if len(text) > 400:
        text = text[:400] + " ..."
    return f"{side} {release}: `{r.status}`" + (f": {text}" if text else "")


def _cell(r: Result | None, cell: str | None) -> str | None:
    """The status a use's own case has in ``r`` (the row's status where the use has none)."""
    if r is None:
        return None
    if cell is None:
        return r.status
    cells = (r.data or {}).get("cells") or {}
    return str(cells[cell]) if cell in cells else None


def _control_failed(rule: Any, b: Result | None, c: Result | None) -> bool:
    """Whether ``rule``'s control case failed on either side (judge.CONTROL_FAILED, or a
    status that breaks or concerns the rule)."""
    failed = set(rule.breaking) | set(rule.concerns) | CONTROL_FAILED
    return any(_cell(r, rule.control) in failed for r in (b, c) if r is not None)


def _case_on(u: ScanFinding, release: Release, censuses: Mapping[str, Any] | None) -> str | None:
    """The case a use is on ``release``: its own, or where it is a name rebound under a guard
    (``f = triton.constexpr_function(f)`` only from 3.5), the other case on a release whose
    branch does not run (the scanner's ``alternative``)."""
    if u.alternative is not None:
        guard, other = u.alternative
        if guard is not None and guard.decide(release, censuses) is False:
            return other
    return u.cell


def concerned_uses(
    uses: Sequence[ScanFinding],
    b: Result | None,
    c: Result | None,
    candidate: Release,
    censuses: Mapping[str, Any] | None = None,
    baseline: Release | None = None,
) -> list[ScanFinding]:
    """The scanned uses a probe's change in one column is about: for a rule with cases
    (python_in_kernel, autotune_validation), a use whose own case changed there (``math.log2``
    allowed -> refused), not a relaxation of it; and never a use whose feature guard keeps it
    from running on the candidate, or whose failure there a ``try/except`` with a fallback
    catches (matrix.scan.judge.guarded_out: the scanner's own reading of the guard). A use
    whose case the row does not hold stays (it cannot be told apart: fail closed). A use whose
    guard keeps it off the baseline is new on the candidate: only a failure there concerns it."""
    out = []
    for u in uses:
        case_b = _case_on(u, baseline, censuses) if baseline is not None else u.cell
        case_c = _case_on(u, candidate, censuses)
        before, after = _cell(b, case_b), _cell(c, case_c)
        own_case = u.rule.cases and case_b is not None and case_c is not None
        if own_case and u.rule.control and _control_failed(u.rule, b, c):
            # the column's control case failed on a side (3.1.0's interpreter with numpy 2
            # runs no kernel at all): it says nothing about this use (the scanner's judge too)
            continue
        if (
            own_case
            and before is not None
            and after is not None
            and (before == after or fingerprint.relaxation(before, after))
        ):
            continue
        if vendor_backend(str(u.path)):
            continue  # code a vendor's own Triton fork compiles (targets.toml [vendor])
        if baseline is not None and absent_on(censuses, baseline, u.qualname):
            # a name the baseline does not have (`tl.make_tensor_descriptor` where 3.3.1 has
            # only the experimental spelling): code that runs there does not reach it, so the
            # use is new on the candidate (the relaxation rule's reason, for one name)
            continue
        fails = after is not None and after in u.rule.breaking
        if guarded_out(u, candidate, censuses, fails) is not None:
            continue
        if not fails and baseline is not None and guarded_out(u, baseline, censuses, False):
            # its branch does not run on the baseline (`if callable(getattr(tl, "x", None))`):
            # new code on the candidate, whose change from the baseline it never met (the
            # relaxation rule's reason); one that fails there still breaks (kept above)
            continue
        out.append(u)
    return out


@dataclass(frozen=True)
class Upgrade:
    """What is being decided: from ``baseline`` to ``candidate``, with the accepted changes."""

    baseline: Release
    candidate: Release
    accepted: tuple[AcceptedChange, ...] = ()


@dataclass(frozen=True)
class ProbePair:
    """One probe in one compared column: both sides' results and the scanned uses of it."""

    probe: str
    where: str  # the column's label, ``aot:cuda:90``
    shown: str  # the label as listed, with the numpy of interpreter cells
    base: Result | None
    cand: Result | None
    uses: Sequence[ScanFinding] = ()


# The detail a probe records where its release cannot compile for the target at all (the
# aot backend's trial refused it: matrix.backends.targets.TargetUnsupported, turned into this
# `skipped` reason by matrix/probes/support/base.py).
TARGET_UNSUPPORTED = "no compile for this target"


def _target_new_on_candidate(b: Result, c: Result) -> bool:
    """Whether ``b`` says its release cannot compile for the target while ``c`` looked."""
    return (
        b.status in NO_OBSERVATION_STATUSES
        and b.detail.startswith(TARGET_UNSUPPORTED)
        and not c.detail.startswith(TARGET_UNSUPPORTED)
    )


def compare_resources(
    out: Comparison,
    upgrade: Upgrade,
    where: str,
    b_res: Mapping[str, Result],
    c_res: Mapping[str, Result],
) -> None:
    """This project's kernels compiled on both sides (the variants of the splitk/tiled aot
    rows): each resource change beyond its rule, as a behaviour change where the rule
    (``matrix.gate.resource_changes.BLOCKS``) lets it block, else as "may slow your kernel"."""
    baseline, candidate = upgrade.baseline, upgrade.candidate
    for probe in sorted(b_res.keys() & c_res.keys()):
        b_rows = rc.variant_rows(b_res[probe].data)
        c_rows = rc.variant_rows(c_res[probe].data)
        for variant in sorted(b_rows.keys() & c_rows.keys()):
            for ch in rc.changes(b_rows[variant], c_rows[variant]):
                if not ch.worse:
                    continue
                before = f"{variant}: {ch.measure} {ch.before}"
                after = f"{variant}: {ch.measure} {ch.after}"
                evidence = [
                    f"{ch.said}: kernel {probe} ({variant}) on {where}, {baseline} -> {candidate}"
                ]
                kind, reason = (BEHAVIOUR if ch.blocks() else MAY_SLOW), ""
                if kind == BEHAVIOUR:
                    ack = next((a for a in upgrade.accepted if a.matches(
                        probe, where, before, after, baseline, candidate)), None)  # fmt: skip
                    if ack is not None:
                        kind, reason = ACCEPTED, ack.reason
                out.findings.append(
                    GateFinding(kind, probe, where, before, after, evidence, reason=reason)
                )


def compare_probe(out: Comparison, upgrade: Upgrade, pair: ProbePair) -> None:
    """Add what one probe's pair of results means for the upgrade to ``out``."""
    probe, where, shown, b, c = pair.probe, pair.where, pair.shown, pair.base, pair.cand
    baseline, candidate = upgrade.baseline, upgrade.candidate
    spec = PROBES_BY_NAME.get(probe)

    # Refused on the baseline: code that runs there cannot be using it, whatever the candidate
    # does (a scanned use of it is guarded or dead on the baseline).
    relaxed = b is not None and c is not None and fingerprint.relaxation(b.status, c.status)
    if spec is not None and b is not None and c is not None and b.status in spec.breaking:
        # the probe's own word that the feature is broken on the baseline and good on the
        # candidate (tensor_descriptor `broken` -> `supported` on cuda:80): code that works
        # there does not use it. (Broken one way, then another, stays a change: a use that got
        # by on the baseline's wrong answer may fail on the candidate's.)
        relaxed = relaxed or c.status in spec.good
    if c is not None and not relaxed:
        _breaking_uses(out, upgrade, pair, c)

    if b is None or c is None:
        side = baseline if c is None else candidate
        present = b if c is None else c
        assert present is not None
        # Missing on either side is undecidable, never "nothing changed": a candidate holding
        # only some probes (``matrix.run --probes``) must not pass for a complete one.
        missing = candidate if c is None else baseline
        text = f"{probe} on {shown}: `{present.status}` on {side} but no result on {missing}"
        out.undecided(text, probe, where)
        return

    if _target_new_on_candidate(b, c):
        # The baseline cannot compile for this target at all (its ptxas or LLVM refuses it):
        # no code ran there on the baseline, so whatever the candidate does there is new, not
        # a change (the relaxation rule's reason, for a whole column). The reverse, a target
        # the candidate lost, stays undecidable below: that can break a team.
        out.notes.append(
            f"new target: {probe} on {shown}: {baseline} cannot compile for it, "
            f"`{c.status}` on {candidate} (no code ran there on {baseline})"
        )
        return

    if relaxed:  # listed with the scanned sites that name it (guarded or dead on the baseline)
        out.findings.append(
            GateFinding(
                RELAXATION,
                probe,
                where,
                b.status,
                c.status,
                [_detail("baseline", baseline, b), _detail("candidate", candidate, c)],
                uses=[f"{u.path}:{u.line}:{u.col} {u.rule.id} {u.snippet}" for u in pair.uses],
            )
        )
        return
    if spec is not None and not spec.behavioural:
        _compare_check(out, upgrade, pair, spec.good, (b, c))
    else:
        _compare_behaviour(out, upgrade, pair, (b, c))


def _breaking_uses(out: Comparison, upgrade: Upgrade, pair: ProbePair, c: Result) -> None:
    """A breaking finding for each scanned use whose case the candidate's result breaks."""
    b, baseline, candidate = pair.base, upgrade.baseline, upgrade.candidate
    for use in pair.uses:
        case = _case_on(use, candidate, None) if use.rule.cases else None
        before = _case_on(use, baseline, None) if use.rule.cases else None
        if (
            _cell(c, case) in use.rule.breaking
            and b is not None
            and (_cell(b, before) in use.rule.breaking)
        ):
            # broken on the baseline too: code that runs there does not take this path
            # (another target, a guard), so the upgrade changes nothing for it
            out.notes.append(
                f"breaks on both: {pair.probe} on {pair.shown} at {use.path}:{use.line}: "
                f"`{b.status}` on {baseline}, `{c.status}` on {candidate}"
            )
            continue
        if _cell(c, case) in use.rule.breaking:
            evidence = [_detail("candidate", candidate, c)]
            if b is not None:
                evidence.insert(0, _detail("baseline", baseline, b))
            out.findings.append(
                GateFinding(
                    BREAKING,
                    pair.probe,
                    pair.where,
                    b.status if b else None,
                    c.status,
                    evidence,
                    fix=use.rule.fix,
                    uses=[f"{use.path}:{use.line}:{use.col} {use.rule.id} {use.snippet}"],
                )
            )


def _compare_check(
    out: Comparison,
    upgrade: Upgrade,
    pair: ProbePair,
    good: Sequence[str],
    results: tuple[Result, Result],
) -> None:
    """A check (a probe with passing statuses ``good``): a regression where it stopped passing."""
    probe, where, shown = pair.probe, pair.where, pair.shown
    baseline, candidate = upgrade.baseline, upgrade.candidate
    b, c = results
    if b.status in good and c.status in FAILURE_STATUSES:
        out.findings.append(
            GateFinding(
                REGRESSION,
                probe,
                where,
                b.status,
                c.status,
                [_detail("baseline", baseline, b), _detail("candidate", candidate, c)],
            )
        )
    elif b.status in good and c.status not in good:
        text = (
            f"{probe} on {shown}: `{b.status}` on {baseline}, `{c.status}` on {candidate}"
            " (not a result the gate can count as passing or failing)"
        )
        out.undecided(text, probe, where)
    elif b.status not in good and c.status in good:
        out.notes.append(f"improved: {probe} on {shown}: `{b.status}` -> `{c.status}`")
    elif b.status not in good:
        out.notes.append(
            f"fails on both: {probe} on {shown}: `{b.status}` on {baseline}, "
            f"`{c.status}` on {candidate} (not a regression)"
        )


def _compare_behaviour(
    out: Comparison, upgrade: Upgrade, pair: ProbePair, results: tuple[Result, Result]
) -> None:
    """A behavioural probe (or fingerprint cell): a change of what it observed."""
    probe, where, shown, uses = pair.probe, pair.where, pair.shown, pair.uses
    baseline, candidate = upgrade.baseline, upgrade.candidate
    b, c = results
    if b.status == c.status:
        return
    if not fingerprint.is_group(b) and (
        b.status in NO_OBSERVATION_STATUSES or c.status in NO_OBSERVATION_STATUSES
    ):
        # Not an observation on one side: no behaviour to compare, and nothing any
        # acknowledgement can accept (AcceptedChange.matches refuses it too).
        out.undecided(
            f"{probe} on {shown}: `{b.status}` on {baseline}, `{c.status}` on {candidate}"
            f" (`{b.status if b.status in NO_OBSERVATION_STATUSES else c.status}` is not an "
            "observation: the probe did not get to look)",
            probe,
            where,
        )
        return
    if fingerprint.is_group(b) and fingerprint.same_badness(b.status, c.status):
        return
    evidence = [_detail("baseline", baseline, b), _detail("candidate", candidate, c)]
    if fingerprint.is_group(b) and fingerprint.classify(b.status, c.status) in (
        fingerprint.REGRESSION,
        fingerprint.UNOBSERVED,
    ):
        # A value that became wrong against its reference is a regression, acknowledged or
        # not; a cell one side did not observe cannot be vouched for.
        if fingerprint.classify(b.status, c.status) == fingerprint.UNOBSERVED:
            text = f"{probe} on {shown}: `{b.status}` -> `{c.status}`"
            if fingerprint.refused(b.status):
                # refused on the baseline: code that runs there cannot be using it, whatever
                # the candidate could not observe (the relaxation rule's reason)
                out.notes.append(f"{text} (refused on {baseline}: no code running there uses it)")
                return
            out.undecided(text, probe, where)
            return
        out.findings.append(GateFinding(REGRESSION, probe, where, b.status, c.status, evidence))
        return
    use_text = [f"{u.path}:{u.line}:{u.col} {u.rule.id} {u.snippet}" for u in uses]
    fixes = sorted({u.rule.fix for u in uses})
    for ack in upgrade.accepted:
        if ack.matches(probe, where, b.status, c.status, baseline, candidate):
            out.findings.append(
                GateFinding(
                    ACCEPTED,
                    probe,
                    where,
                    b.status,
                    c.status,
                    evidence,
                    reason=ack.reason,
                    uses=use_text,
                )
            )
            return
    out.findings.append(
        GateFinding(
            BEHAVIOUR,
            probe,
            where,
            b.status,
            c.status,
            evidence,
            fix="; ".join(fixes),
            uses=use_text,
        )
    )
