"""Upgrade pages: "can we move from X to Y?", answered by the gate's own code.

For every adjacent pair of releases, and for the pinned release (``matrix/data/pinned.toml``)
to the newest, the page leads with the verdict ``matrix.gate`` gives for that pair on the same
recorded runs (``matrix.gate.verdict.decide_runs``: no second implementation of the rules),
then names each finding once, grouped by what it means for a team (``matrix.catalog``):

- breaking changes: a scanned use of an API the candidate removed, or a probe whose candidate
  status means "breaking" (removed, rejected, failing);
- regressions: a check that passed on the baseline and fails on the candidate;
- silent changes: the code runs with no error or warning and does something else (a new
  default, a silently wrong result);
- behaviour changes that say so (a deprecation warning, an experimental spelling);

then what was not measured for that pair (the gate's undecidable items, GPU rows missing,
skipped probes), so that a reader never takes a gap for good news.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from matrix.core import REPO_ROOT, DataFileError, Release
from matrix.gate import compare as gc
from matrix.gate.config import ACCEPTED_PATH, PINNED_PATH, load_accepted, pinned_release
from matrix.gate.verdict import PROJECT_KERNELS, GateReport, decide_runs, gpu_timings
from matrix.measure.results import Run
from matrix.report.model import Matrix, is_gpu_run, slug, tone
from matrix.report.team import KernelChange, TeamGate, TeamVerdict, TeamView, upgrade_kernels
from matrix.scan import ScanReport, load_rules, scan_paths

# Page sections in order, with their headings.
SECTIONS = (
    ("breaking", "Breaking changes"),
    ("regression", "Regressions"),
    ("silent", "Silent changes"),
    ("behaviour", "Behaviour changes"),
)
# The gate's verdict words, as the pages colour them (a catalog meaning each).
VERDICT_MEANINGS = {"SAFE": "good", "UNSAFE": "breaking", "UNDECIDABLE": "unmeasured"}


@dataclass
class Item:
    """One fact of an upgrade, named once: a probe going from one status to another."""

    section: str
    probe: str
    before: str | None
    after: str | None
    kind: str  # the gate's finding kind (breaking-api, regression, behaviour-change, ...)
    wheres: list[str] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)
    fixes: list[str] = field(default_factory=list)
    uses: list[str] = field(default_factory=list)
    reason: str = ""

    @property
    def acknowledged(self) -> bool:
        return self.kind == gc.ACCEPTED


@dataclass
class UpgradePage:
    baseline: str
    candidate: str
    gate: GateReport
    items: list[Item]
    not_measured: list[str]
    notes: list[str]
    pinned: bool = False
    # The team's kernels that break or change (the gate's decisions: kernel_compiles).
    kernels: list[KernelChange] = field(default_factory=list)
    # The gate's verdict on the team's own code (its suites), beside the project's.
    team_gate: TeamVerdict | None = None

    @property
    def slug(self) -> str:
        return upgrade_slug(self.baseline, self.candidate)

    @property
    def verdict(self) -> str:
        return self.gate.verdict

    @property
    def exit_code(self) -> int:
        return self.gate.exit_code

    @property
    def verdict_meaning(self) -> str:
        return VERDICT_MEANINGS[self.verdict]

    def section(self, name: str) -> list[Item]:
        return [i for i in self.items if i.section == name]

    def kernel_counts(self) -> dict[str, int]:
        """How many kernel x target decisions of each kind the gate made (worst first)."""
        out: dict[str, int] = {}
        for k in self.kernels:
            out[k.decision.decision] = out.get(k.decision.decision, 0) + 1
        return out


def upgrade_slug(baseline: str, candidate: str) -> str:
    return f"{slug(baseline)}-to-{slug(candidate)}"


def pairs(matrix: Matrix, pinned: Release | None) -> list[tuple[str, str, bool]]:
    """Adjacent releases, then pinned -> newest where that is not one of them."""
    versions = [r.version for r in matrix.releases if r.installed_runs]
    out = [(a, b, False) for a, b in itertools.pairwise(versions)]
    if pinned is not None and versions:
        newest = versions[-1]
        if str(pinned) in versions and str(pinned) != newest:
            if (str(pinned), newest, False) in out:
                out = [(a, b, a == str(pinned) and b == newest) for a, b, _ in out]
            else:
                out.append((str(pinned), newest, True))
    return out


def _section(f: gc.GateFinding) -> str:
    if f.kind == gc.BREAKING:
        return "breaking"
    if f.kind == gc.REGRESSION:
        return "regression"
    meaning = tone(f.probe, f.candidate or "")
    before = tone(f.probe, f.baseline or "")
    if meaning == "breaking":
        return "breaking"
    # Something that now works, or is now measured, tells you so; so does a warning.
    if meaning == "changed" or before in ("breaking", "unmeasured"):
        return "behaviour"
    return "silent"


def items_of(gate: GateReport, fixes: dict[str, list[str]]) -> list[Item]:
    """The gate's findings grouped: one item per (section, probe, before, after, kind)."""
    grouped: dict[tuple[str, str, str | None, str | None, str], Item] = {}
    for f in gate.comparison.findings:
        section = _section(f)
        key = (section, f.probe, f.baseline, f.candidate, f.kind)
        item = grouped.get(key)
        if item is None:
            item = grouped[key] = Item(section, f.probe, f.baseline, f.candidate, f.kind)
        if f.where not in item.wheres:
            item.wheres.append(f.where)
        for e in f.evidence:
            if e not in item.evidence:
                item.evidence.append(e)
        for fix in [f.fix] if f.fix else fixes.get(f.probe, []):
            if fix and fix not in item.fixes:
                item.fixes.append(fix)
        item.uses += [u for u in f.uses if u not in item.uses]
        item.reason = item.reason or f.reason
    order = {name: i for i, (name, _) in enumerate(SECTIONS)}
    return sorted(grouped.values(), key=lambda i: (order[i.section], i.probe, str(i.before)))


def not_measured(matrix: Matrix, gate: GateReport, baseline: str, candidate: str) -> list[str]:
    """What this pair's verdict does not cover: the gate's undecidable items and its "not
    compared" notes, GPU rows missing on either side, and probe cells that measured nothing."""
    out = list(gate.errors) + list(gate.comparison.undecidable)
    out += [n for n in gate.comparison.notes if n.startswith("not compared")]
    runs = {v: matrix.release(v).runs for v in (baseline, candidate)}
    gpu = {v: any(is_gpu_run(r) for r in rs) for v, rs in runs.items()}
    if not gpu[baseline] and not gpu[candidate]:
        out.append(
            f"GPU behaviour of neither {baseline} nor {candidate} was measured (no gpu run): "
            "the interpreter and aot rows say what compiles, not what runs on a GPU"
        )
    elif gpu[baseline] != gpu[candidate]:
        missing = candidate if gpu[baseline] else baseline
        out.append(f"GPU behaviour of {missing} was not measured (no gpu run for it)")
    for row in matrix.rows:
        for c in row.cells:
            if c.release in (baseline, candidate) and c.observed and c.tone == "unmeasured":
                first = c.result.detail.splitlines()[0] if c.result and c.result.detail else ""
                numpy = f", numpy {c.numpy}" if c.numpy else ""
                out.append(
                    f"{row.key.probe} [{row.key.label}{numpy}] on {c.release}: {c.status}"
                    + (f" ({first[:200]})" if first else "")
                )
    return out


def project_scan() -> ScanReport:
    """The scan the gate does by default: the project's own kernels (``kernels/``)."""
    kernels = REPO_ROOT / PROJECT_KERNELS
    return scan_paths([kernels], load_rules()) if kernels.is_dir() else ScanReport()


def build_pages(
    matrix: Matrix,
    runs: Sequence[Run],
    *,
    results: str,
    pinned_path: Path = PINNED_PATH,
    accepted_path: Path = ACCEPTED_PATH,
    team: TeamView | None = None,
) -> list[UpgradePage]:
    """An upgrade page per pair; the gate decides each on ``runs`` (the matrix's own runs)."""
    try:
        pinned: Release | None = pinned_release(pinned_path)
    except DataFileError:
        pinned = None
    accepted = load_accepted(accepted_path)
    timings = gpu_timings(results, accepted_path)
    scan = project_scan()
    team_gate = TeamGate(runs, REPO_ROOT) if team is not None and team.present else None
    fixes: dict[str, list[str]] = {}
    for rule in load_rules():
        if rule.probe and rule.fix not in fixes.setdefault(rule.probe, []):
            fixes[rule.probe].append(rule.fix)
    pages = []
    for baseline, candidate, is_pinned in pairs(matrix, pinned):
        report = GateReport(baseline=baseline, candidate=candidate, results=results)
        report.accepted_file = str(accepted_path)
        report.scanned = [PROJECT_KERNELS] if scan.files else []
        b, c = Release.parse(baseline), Release.parse(candidate)
        decide_runs(report, runs, b, c, accepted, scan, timings)
        report.decide()
        pages.append(
            UpgradePage(
                baseline,
                candidate,
                report,
                items_of(report, fixes),
                not_measured(matrix, report, baseline, candidate),
                [n for n in report.comparison.notes if not n.startswith("not compared")],
                is_pinned,
                upgrade_kernels(report.comparison, team or TeamView()),
                team_gate.verdict(baseline, candidate, results) if team_gate else None,
            )
        )
    return pages


def status_table(matrix: Matrix) -> dict[str, object]:
    """Compact statuses for the page's any-pair script: rows, releases, and per row and
    release the statuses of its cells with their meanings (no evidence: that is on the grid)."""
    releases = [r.version for r in matrix.releases]
    rows = []
    for row in matrix.rows:
        cells: dict[str, list[list[str | None]]] = {}
        for c in row.cells:
            if c.observed:
                cells.setdefault(c.release, []).append([c.numpy, c.status, c.tone])
        rows.append(
            {
                "probe": row.key.probe,
                "where": row.key.label,
                "problem": row.problem,
                "cells": cells,
            }
        )
    return {"releases": releases, "rows": rows}
