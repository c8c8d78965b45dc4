"""Upgrade pages: "can we move from X to Y?", answered by the gate's own code.

For every adjacent pair of releases, and for the pinned release (``matrix/data/pinned.toml``)
to the newest, the page leads with the verdict ``matrix.gate`` gives for that pair on the same
recorded runs (``matrix.gate.verdict.decide_runs``: no second implementation of the rules),
then names each entry once as the gate does (``matrix.gate.verdict.finding_groups``: a
fingerprint group whose cells changed the same way is one entry), in the gate's sections
(breaking API, regressions, behaviour changes not acknowledged, acknowledged), right after the
verdict what was not measured for that pair (the gate's undecidable items, GPU rows missing,
skipped probes), so that a reader never takes a gap for good news.

``decide_all`` asks the gate for every ordered pair of recorded releases (45 for ten); the
upgrades index renders those compact records in the browser, with no server.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from matrix.core import REPO_ROOT, DataFileError, Release
from matrix.gate import compare as gc
from matrix.gate import verdict as gv
from matrix.gate.config import (
    ACCEPTED_PATH,
    PINNED_PATH,
    AcceptedChange,
    load_accepted,
    pinned_release,
)
from matrix.gate.kernel_compiles import pair_coverage
from matrix.gate.verdict import (
    PROJECT_KERNELS,
    GateReport,
    GpuTimings,
    decide_runs,
    gpu_timings,
)
from matrix.measure.results import Run
from matrix.report import workers
from matrix.report.model import Matrix, is_gpu_run, slug
from matrix.report.team import KernelChange, TeamGate, TeamVerdict, TeamView, upgrade_kernels
from matrix.scan import ScanReport, load_rules, scan_paths

# Page sections in order, with their headings: the gate's own (matrix.gate.verdict.SECTIONS),
# so that an entry on a page is an entry of ``python -m matrix.gate``.
SECTIONS = gv.SECTIONS
# The gate's verdict words, as the pages colour them (a catalog meaning each).
VERDICT_MEANINGS = {"SAFE": "good", "UNSAFE": "breaking", "UNDECIDABLE": "unmeasured"}
# The tone of an entry of each gate kind: a regression (it worked on the baseline, it does not
# on the candidate) has its own, apart from "changed"; render.MEANING_COLOURS holds its colours.
KIND_TONES = {
    gc.BREAKING: "breaking",
    gc.REGRESSION: "regression",
    gc.BEHAVIOUR: "changed",
    gc.ACCEPTED: "neutral",
    gc.RELAXATION: "neutral",  # refused on the baseline: new, never blocking
}
# What every verdict the pages show applies to: the gate scanned this project's kernels only.
TOP_REASONS = 5  # entries named right under an upgrade page's verdict
SCOPE = "for this project's kernels; run `nox -s gate -- --scan YOUR_DIR` for yours"


@dataclass
class Item:
    """One entry of an upgrade as the gate names it: findings that differ only in column,
    fingerprint cell or use location (``matrix.gate.verdict.finding_groups``)."""

    section: str  # the gate's finding kind (breaking-api, regression, behaviour-change, ...)
    probe: str  # the group: a probe, a fingerprint group, a test file, a slowdown
    before: str | None
    after: str | None
    kind: str
    wheres: list[str] = field(default_factory=list)
    cells: list[str] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)
    fixes: list[str] = field(default_factory=list)
    uses: list[str] = field(default_factory=list)
    reason: str = ""
    first_probe: str = ""  # the first member's full name (a team page links by it)

    @property
    def acknowledged(self) -> bool:
        return self.kind == gc.ACCEPTED

    @property
    def tone(self) -> str:
        return KIND_TONES.get(self.kind, "changed")

    @property
    def anchor(self) -> str:
        return "e-" + slug(f"{self.kind}-{self.probe}-{self.before}-{self.after}")


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
    # What crashed or hung on the candidate where the baseline answered (breaking).
    crashed: list[str] = field(default_factory=list)
    # The gate's verdict on the team's own code (its suites), beside the project's.
    team_gate: TeamVerdict | None = None
    # "N of M captured specializations compiled", per side (gate.md's words); "" no compiles.
    kernel_coverage: str = ""

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

    @property
    def headline_reasons(self) -> str:
        """The gate's verdict line, after the verdict word (what it counted)."""
        line = gv.render_markdown(self.gate).splitlines()[0].replace("**", "")
        return line.split(": ", 2)[-1] if line.count(": ") >= 2 else line

    def top_reasons(self, n: int = TOP_REASONS) -> list[Item]:
        """The entries that make the verdict unsafe, in the gate's order, at most ``n``."""
        return [i for i in self.items if i.kind in gc.UNSAFE_KINDS][:n]

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


def _relative(use: str) -> str:
    """A scanned use's location relative to the checkout: pages never carry absolute paths
    (they would change with where the checkout lives)."""
    root = str(REPO_ROOT) + "/"
    return use.replace(root, "") if use.startswith(root) else use


def items_of(gate: GateReport, fixes: dict[str, list[str]]) -> list[Item]:
    """The gate's entries (``finding_groups``) in the gate's order, each with its members'
    columns, cells, evidence, fixes and uses."""
    items = []
    for kind, _, members in gv.finding_groups(gate):
        f = members[0]
        group, _ = gv.split_cell(f.probe)
        item = Item(kind, group, f.baseline, f.candidate, kind, reason=f.reason)
        item.first_probe = f.probe
        for m in members:
            if m.where not in item.wheres:
                item.wheres.append(m.where)
            cell = gv.split_cell(m.probe)[1]
            if cell is not None and cell not in item.cells:
                item.cells.append(cell)
            for e in m.evidence:
                if e not in item.evidence:
                    item.evidence.append(e)
            for fix in [m.fix] if m.fix else fixes.get(m.probe, fixes.get(group, [])):
                if fix and fix not in item.fixes:
                    item.fixes.append(fix)
            item.uses += [u for u in map(_relative, m.uses) if u not in item.uses]
        items.append(item)
    return items


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


@dataclass(frozen=True)
class GateInputs:
    """What the gate reads besides the runs, read once for every pair it decides here."""

    results: str
    accepted_path: Path
    accepted: Sequence[AcceptedChange]
    timings: GpuTimings
    scan: ScanReport
    fixes: dict[str, list[str]]


def gate_inputs(results: str, accepted_path: Path = ACCEPTED_PATH) -> GateInputs:
    fixes: dict[str, list[str]] = {}
    for rule in load_rules():
        if rule.probe and rule.fix not in fixes.setdefault(rule.probe, []):
            fixes[rule.probe].append(rule.fix)
    return GateInputs(
        results,
        accepted_path,
        load_accepted(accepted_path),
        gpu_timings(results, accepted_path),
        project_scan(),
        fixes,
    )


def decide_pair(runs: Sequence[Run], baseline: str, candidate: str, g: GateInputs) -> GateReport:
    """The gate's verdict on ``baseline -> candidate`` (``decide_runs``, as the command line)."""
    report = GateReport(baseline=baseline, candidate=candidate, results=g.results)
    report.accepted_file = str(g.accepted_path)
    report.scanned = [PROJECT_KERNELS] if g.scan.files else []
    decide_runs(
        report,
        runs,
        Release.parse(baseline),
        Release.parse(candidate),
        g.accepted,
        g.scan,
        g.timings,
    )
    report.decide()
    return report


@dataclass
class Upgrades:
    """Every pair's verdict: a page per ``pairs`` pair, the compact record of all of them, and
    what the ``also`` calls given to ``decide_all`` returned."""

    pages: list[UpgradePage]
    every: AllPairs
    also: list[Any]


def decide_all(
    matrix: Matrix,
    runs: Sequence[Run],
    *,
    results: str,
    pinned_path: Path = PINNED_PATH,
    accepted_path: Path = ACCEPTED_PATH,
    team: TeamView | None = None,
    inputs: GateInputs | None = None,
    also: Sequence[Callable[[], Any]] = (),
) -> Upgrades:
    """The gate decides every pair on ``runs`` (the matrix's own runs): an upgrade page per
    ``pairs`` pair, a record for each of ``every_pair``. The decisions, and the ``also`` calls
    (other work of the build that reads the same runs), share forked workers
    (``matrix.report.workers``); ``also`` goes first, as the longest."""
    try:
        pinned: Release | None = pinned_release(pinned_path)
    except DataFileError:
        pinned = None
    g = inputs or gate_inputs(results, accepted_path)
    team_gate = TeamGate(runs, REPO_ROOT, team) if team is not None and team.present else None
    shown = pairs(matrix, pinned)
    on_pages = {(baseline, candidate) for baseline, candidate, _ in shown}
    every = every_pair(matrix)
    others = [pair for pair in every if pair not in on_pages]

    def page_of(baseline: str, candidate: str, is_pinned: bool) -> UpgradePage:
        page = upgrade_page(matrix, decide_pair(runs, baseline, candidate, g), g, is_pinned, team)
        page.kernel_coverage = team_coverage(runs, baseline, candidate)
        if team_gate is not None:
            page.team_gate = team_gate.verdict(baseline, candidate, results)
        return page

    def record_of(baseline: str, candidate: str) -> dict[str, Any]:
        page = upgrade_page(matrix, decide_pair(runs, baseline, candidate, g), g, False, team)
        return pair_record(page, False)

    calls: list[Callable[[], Any]] = [*also]
    calls += [functools.partial(page_of, *pair) for pair in shown]
    calls += [functools.partial(record_of, *pair) for pair in others]
    done = workers.run_all(calls)
    extra, pages = done[: len(also)], done[len(also) : len(also) + len(shown)]
    records = dict(zip(others, done[len(also) + len(shown) :], strict=True))
    records.update({(p.baseline, p.candidate): pair_record(p, True) for p in pages})
    return Upgrades(pages, AllPairs([records[pair] for pair in every]), extra)


def team_coverage(runs: Sequence[Run], baseline: str, candidate: str) -> str:
    """How many of the team's captured specializations compiled on each side of a pair, in
    the gate's words (``matrix.gate.kernel_compiles.pair_coverage``)."""
    cpu = [r for r in runs if not is_gpu_run(r)]
    return pair_coverage(
        [r for r in cpu if str(r.triton) == baseline],
        [r for r in cpu if str(r.triton) == candidate],
        baseline,
        candidate,
    )


# The gate lists a cell that crashed or hung on the candidate among what it cannot decide
# ("... `int32` -> `crashed`"); a crash is observed, and breaking (matrix.catalog), so the page
# names it apart from what nobody measured.
DIED_ON_CANDIDATE = re.compile(r"-> `(crashed|timeout)`$")


def upgrade_page(
    matrix: Matrix, report: GateReport, g: GateInputs, pinned: bool, team: TeamView | None
) -> UpgradePage:
    baseline, candidate = str(report.baseline), str(report.candidate)
    gaps = not_measured(matrix, report, baseline, candidate)
    return UpgradePage(
        baseline,
        candidate,
        report,
        items_of(report, g.fixes),
        [n for n in gaps if not DIED_ON_CANDIDATE.search(n)],
        [n for n in report.comparison.notes if not n.startswith("not compared")],
        pinned,
        upgrade_kernels(report.comparison, team or TeamView()),
        [n for n in gaps if DIED_ON_CANDIDATE.search(n)],
    )


# ------------------------------------------------------------------------------- every pair

EVIDENCE_CHARS = 240  # of each entry's first evidence line in the per-pair data
CELLS_LISTED = 6  # cell names per entry in the per-pair data (the pair's count is exact)


def every_pair(matrix: Matrix) -> list[tuple[str, str]]:
    """Every ordered pair of installed releases, older -> newer (45 for ten releases)."""
    versions = [r.version for r in matrix.releases if r.installed_runs]
    return list(itertools.combinations(versions, 2))


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _candidate_evidence(evidence: Sequence[str]) -> str:
    """The evidence line that says what the candidate does (the gate puts the baseline's first)."""
    for e in evidence:
        if e.startswith("candidate"):
            return e
    return evidence[0] if evidence else ""


def pair_record(page: UpgradePage, has_page: bool) -> dict[str, Any]:
    """One pair's verdict: the gate's verdict line, its entries (reasons first, in the gate's
    order) and what it could not decide; ``compact`` shares the strings between pairs."""
    gate = page.gate
    return {
        "baseline": page.baseline,
        "candidate": page.candidate,
        "verdict": gate.verdict,
        "exit": gate.exit_code,
        "headline": gv.render_markdown(gate).splitlines()[0].replace("**", ""),
        "page": f"{page.slug}.html" if has_page else None,
        "entries": [
            {
                "kind": i.kind,
                "name": i.probe,
                "before": i.before,
                "after": i.after,
                "where": ", ".join(i.wheres),
                "cells": len(i.cells),
                "some_cells": "; ".join(i.cells[:CELLS_LISTED]),
                "fix": _clip("; ".join(i.fixes), EVIDENCE_CHARS),
                "evidence": _clip(_candidate_evidence(i.evidence), EVIDENCE_CHARS),
            }
            for i in page.items
        ],
        "undecidable": [
            _clip(u, EVIDENCE_CHARS)
            for u in gate.errors + gate.comparison.undecidable
            if not DIED_ON_CANDIDATE.search(u)
        ],
        "not_measured": len(page.not_measured),
        "crashed": [_clip(c, EVIDENCE_CHARS) for c in page.crashed],
    }


ENTRY_FIELDS = ("kind", "name", "before", "after", "where", "cells", "some_cells", "fix")


def compact(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Every pair's record with each distinct entry and text stored once: a change between
    3.3.1 and 3.4.0 is an entry of every pair that spans it. ``entries`` holds ENTRY_FIELDS
    per entry (strings as indices into ``texts``); a pair's ``entries`` are [entry, evidence]."""
    texts: dict[str, int] = {}
    entries: dict[tuple[Any, ...], int] = {}

    def text(t: Any) -> Any:
        return texts.setdefault(t, len(texts)) if isinstance(t, str) else t

    pairs = []
    for r in records:
        refs = []
        for e in r["entries"]:
            key = tuple(text(e[f]) for f in ENTRY_FIELDS)
            refs.append([entries.setdefault(key, len(entries)), text(e["evidence"])])
        pairs.append(
            {
                **{k: r[k] for k in ("baseline", "candidate", "verdict", "exit", "page")},
                "headline": text(r["headline"]),
                "entries": refs,
                "undecidable": [text(u) for u in r["undecidable"]],
                "not_measured": r["not_measured"],
                "crashed": [text(c) for c in r["crashed"]],
            }
        )
    return {
        "fields": list(ENTRY_FIELDS),
        "entries": [list(k) for k in entries],
        "texts": list(texts),
        "pairs": pairs,
    }


def expand(data: dict[str, Any]) -> list[dict[str, Any]]:
    """``compact``'s inverse (what the page's script does), for tests and other readers."""
    texts, fields = data["texts"], data["fields"]

    def text(i: Any) -> Any:
        return texts[i] if isinstance(i, int) else i

    out = []
    for p in data["pairs"]:
        entries = []
        for ref, ev in p["entries"]:
            row = data["entries"][ref]
            e = {f: (row[k] if f == "cells" else text(row[k])) for k, f in enumerate(fields)}
            entries.append({**e, "evidence": text(ev)})
        out.append(
            {
                **{k: p[k] for k in ("baseline", "candidate", "verdict", "exit", "page")},
                "headline": text(p["headline"]),
                "entries": entries,
                "undecidable": [text(u) for u in p["undecidable"]],
                "not_measured": p["not_measured"],
                "crashed": [text(c) for c in p["crashed"]],
            }
        )
    return out


@dataclass
class AllPairs:
    """Every pair's verdict (``records``, in ``every_pair`` order)."""

    records: list[dict[str, Any]]

    def get(self, baseline: str, candidate: str) -> dict[str, Any] | None:
        for r in self.records:
            if (r["baseline"], r["candidate"]) == (baseline, candidate):
                return r
        return None


@dataclass(frozen=True)
class Readiness:
    """One release's row: is moving to it from the pinned release safe (the gate's verdict)."""

    release: str
    relation: str  # "pinned", "newer", "older"
    record: dict[str, Any] | None  # the pair's record (pinned -> newer, or older -> pinned)
    link: str  # a page or the any-pair chooser, relative to upgrades/

    def count(self, kind: str) -> int:
        return sum(e["kind"] == kind for e in (self.record or {}).get("entries", []))


def readiness(every: AllPairs, pages: Sequence[UpgradePage]) -> list[Readiness]:
    """A row per release, newest first, from the pinned release (matrix/data/pinned.toml)."""
    try:
        pinned = str(pinned_release(PINNED_PATH))
    except DataFileError:
        return []
    versions = sorted(
        {v for r in every.records for v in (r["baseline"], r["candidate"])}, key=Release.parse
    )
    if pinned not in versions:
        return []
    rows = []
    for v in reversed(versions):
        if v == pinned:
            rows.append(Readiness(v, "pinned", None, ""))
            continue
        relation = "newer" if Release.parse(v) > Release.parse(pinned) else "older"
        a, b = (pinned, v) if relation == "newer" else (v, pinned)
        record = every.get(a, b)
        page = (record or {}).get("page")
        rows.append(Readiness(v, relation, record, page or f"index.html#from={a}&to={b}"))
    return rows


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
