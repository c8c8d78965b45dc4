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

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from matrix.analyze.profile import Profile
from matrix.analyze.profile.declaration import Declaration, load_declaration
from matrix.core import REPO_ROOT, Release
from matrix.gate import compare as gc
from matrix.gate import timing
from matrix.gate import verdict as gv
from matrix.gate.config import ACCEPTED_PATH
from matrix.gate.kernel_compiles import pair_coverage
from matrix.gate.usage import build_profile
from matrix.gate.verdict import GateReport, GpuTimings, decide_runs, default_bench_folder
from matrix.report.model import Matrix, is_gpu_run, slug
from matrix.report.team import KernelChange, TeamView, upgrade_kernels
from matrix.report.team_verdict import TeamVerdict
from matrix.results import Run, read_folder
from matrix.scan import ScanReport, load_rules, scan_paths
from matrix.scan.findings import Finding
from matrix.scan.rules import Rule

# Page sections in order, with their headings: the gate's own (matrix.gate.verdict.SECTIONS),
# so that an entry on a page is an entry of ``python -m matrix gate``.
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
    gc.LOWERING_EQUAL: "neutral",  # other ops, the same values on the GPU: never blocking
}
# This project's own code: the verdict every page shows is the gate's own verdict on it
# (``python -m matrix gate`` without ``--scan``): kernels/' usage profile and the targets it
# declares (gv.PROJECT_CONFIG). compat/ is not in it: its trials try features on purpose and
# its callers catch what they raise (compat.features.run_trial).
OWN_CODE = (gv.PROJECT_KERNELS,)
# Where "any code" uses an API in the scan that asks what changed in Triton for everyone.
ANY_CODE = "(any code)"
TOP_REASONS = 5  # entries named right under an upgrade page's verdict
LIST_SHOWN = 40  # lines of a pair page's "cannot decide" and "not measured" (the gate: all)
SCOPE = (
    "for this project's own kernels (kernels/, on the targets it declares); "
    "run `nox -s gate -- --scan YOUR_DIR` for yours"
)
# Triton's change classes, as the pages and the feed count them (the gate's kinds; nothing is
# acknowledged in that view, so ACCEPTED never occurs there).
CHANGE_KINDS = gc.UNSAFE_KINDS
# Their headings: the gate's, less "not acknowledged" (nothing is, in that view).
CHANGE_SECTIONS = [
    (k, t.removesuffix(", not acknowledged")) for k, t in SECTIONS if k in CHANGE_KINDS
]
INTERPRETER = "interpret"  # the column whose findings say nothing of compiled code


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
    relevance: str = ""  # with a profile: "used" or "may affect" (matrix.gate.usage)

    @property
    def interpreter_only(self) -> bool:
        """Seen only under the interpreter (``TRITON_INTERPRET=1``): compiled code may differ."""
        return bool(self.wheres) and all(w == INTERPRETER for w in self.wheres)

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
    # What changed in Triton for any code (``triton_changes``), and its entries.
    triton: GateReport | None = None
    changes: list[Item] = field(default_factory=list)
    featured: bool = False  # an adjacent pair or pinned -> newest

    @property
    def downgrade(self) -> bool:
        return Release.parse(self.candidate) < Release.parse(self.baseline)

    def change_section(self, kind: str) -> list[Item]:
        return [i for i in self.changes if i.kind == kind]

    @property
    def change_columns(self) -> list[str]:
        """The columns Triton's changes were seen on, in the gate's order."""
        return list(dict.fromkeys(w for i in self.changes for w in i.wheres))

    @property
    def gpu_timings(self) -> dict[str, list[str]]:
        """The gate's GPU timing comparison for any code (``matrix.gate.timing``): where it
        compared, the slowdowns beyond its threshold and noise, and what got faster."""
        c = self.triton.comparison if self.triton else None
        if c is None:
            return {"compared": [], "slower": [], "faster": []}
        return {
            "compared": [x.removeprefix("GPU timings ") for x in c.compared
                         if x.startswith("GPU timings ")],
            "slower": [f.probe.removeprefix(timing.SLOWDOWN_PREFIX) for f in c.findings
                       if f.probe.startswith(timing.SLOWDOWN_PREFIX)],
            "faster": [n.removeprefix("faster: ") for n in c.notes if n.startswith("faster: ")],
        }  # fmt: skip

    def change_count(self, kind: str, column: str) -> int:
        return sum(i.kind == kind and column in i.wheres for i in self.changes)

    @property
    def cannot_decide(self) -> list[str]:
        """What the gate could not decide on this project's code (collapsed on the page)."""
        return [_relative_text(u) for u in self.gate.errors + self.gate.comparison.undecidable
                if not DIED_ON_CANDIDATE.search(u)]  # fmt: skip

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


def _relative_text(text: str) -> str:
    """Any text with the checkout's absolute path made relative (evidence names scanned files)."""
    return text.replace(str(REPO_ROOT) + "/", "")


def items_of(
    gate: GateReport, fixes: dict[str, list[str]], *, shown_uses: bool = True
) -> list[Item]:
    """The gate's entries (``finding_groups``) in the gate's order, each with its members'
    columns, cells, evidence, fixes and (unless not ``shown_uses``) uses."""
    items = []
    for kind, _, members in gv.finding_groups(gate):
        f = members[0]
        group, _ = gv.split_cell(f.probe)
        item = Item(kind, group, f.baseline, f.candidate, kind, reason=f.reason)
        item.first_probe = f.probe
        item.relevance = f.relevance
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
            if shown_uses:
                item.uses += [u for u in map(_relative, m.uses) if u not in item.uses]
        item.evidence = [_relative_text(e) for e in item.evidence]
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


def own_paths(root: Path = REPO_ROOT) -> list[str]:
    """This project's own code as a team passes it to ``--scan`` (``OWN_CODE``, those present)."""
    return [str(root / p) for p in OWN_CODE if (root / p).is_dir()]


def own_declaration(root: Path = REPO_ROOT) -> Declaration:
    """The targets this project declares for its own kernels (gv.PROJECT_CONFIG)."""
    path = root / gv.PROJECT_CONFIG
    return load_declaration(path) if path.is_file() else Declaration()


def any_code_scan(rules: Sequence[Rule]) -> ScanReport:
    """A scan in which some code uses every API a scanner rule ties to a probe's removal or
    refusal: with it the gate names, as breaking API, every such API the candidate breaks,
    whatever code a team has (``ANY_CODE`` stands for the use's place)."""
    return ScanReport(
        findings=[Finding(ANY_CODE, 0, 0, r, r.name) for r in rules if r.probe and r.breaking]
    )


@dataclass(frozen=True)
class GateInputs:
    """What the gate reads besides the runs, read once for every pair it decides here.

    ``own_*``: ``python -m matrix gate --scan kernels`` (the gate's ``--scan``
    path: this project's code, its usage profile, no acknowledgements, as for any team that
    passes no ``--accepted``). ``any_scan`` and ``bare_timings``: Triton's changes for any code
    (nothing acknowledged)."""

    results: str
    accepted_path: Path
    fixes: dict[str, list[str]]
    own_scanned: list[str]
    own_scan: ScanReport
    own_profile: Profile | None
    bare_timings: GpuTimings
    any_scan: ScanReport


def gate_inputs(
    results: str, accepted_path: Path = ACCEPTED_PATH, runs: Sequence[Run] | None = None
) -> GateInputs:
    rules = load_rules()
    fixes: dict[str, list[str]] = {}
    for rule in rules:
        if rule.probe and rule.fix not in fixes.setdefault(rule.probe, []):
            fixes[rule.probe].append(rule.fix)
    own = own_paths()
    if runs is None:
        runs = read_folder(Path(results))[0] if Path(results).is_dir() else []
    bench = default_bench_folder(results)
    # As run_gate with --scan and no --accepted: no acknowledged slowdowns either.
    bare = GpuTimings(
        timing.read_bench(bench) if bench else [], (), timing.DEFAULT_THRESHOLD, bench
    )
    return GateInputs(
        results,
        accepted_path,
        fixes,
        own,
        scan_paths(own, rules) if own else ScanReport(),
        build_profile(own, [], runs, own_declaration(), launches_elsewhere=False) if own else None,
        bare,
        any_code_scan(rules),
    )


def decide_pair(runs: Sequence[Run], baseline: str, candidate: str, g: GateInputs) -> GateReport:
    """The gate's verdict on this project's own code for ``baseline -> candidate``: what
    ``python -m matrix gate --baseline B --candidate C --results R`` decides on kernels/ (its
    profile and declared targets, as ``run_gate`` calls it), with no acknowledgements."""
    report = GateReport(baseline=baseline, candidate=candidate, results=g.results)
    report.accepted_file = "accepted_changes.toml (yours: pass --accepted FILE)"
    report.scanned = [_relative(p) for p in g.own_scanned]
    decide_runs(
        report,
        runs,
        Release.parse(baseline),
        Release.parse(candidate),
        (),
        g.own_scan,
        g.bare_timings,
        g.own_profile,
        own_declaration(),
        own=g.own_profile is not None,
    )
    report.decide()
    return report


def triton_changes(runs: Sequence[Run], baseline: str, candidate: str, g: GateInputs) -> GateReport:
    """What changed in Triton for any code: the gate on every probed API used (``any_scan``),
    nothing acknowledged. Its exit code is not a verdict on anyone's code."""
    report = GateReport(baseline=baseline, candidate=candidate, results=g.results)
    decide_runs(
        report, runs, Release.parse(baseline), Release.parse(candidate), (), g.any_scan,
        g.bare_timings,
    )  # fmt: skip
    # A use of an API that is refused on both sides is the gate's "your code breaks" (any
    # code would), but nothing changed in Triton between the two: not a change here.
    report.comparison.findings = [
        f
        for f in report.comparison.findings
        if not (f.kind == gc.BREAKING and f.baseline == f.candidate)
    ]
    report.decide()
    return report


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
    # The gate names the scanned files as it was given them: absolute here (never on a page).
    gaps = [_relative_text(n) for n in not_measured(matrix, report, baseline, candidate)]
    return UpgradePage(
        baseline,
        candidate,
        report,
        items_of(report, g.fixes),
        [n for n in gaps if not DIED_ON_CANDIDATE.search(n)],
        [_relative_text(n) for n in report.comparison.notes if not n.startswith("not compared")],
        pinned,
        upgrade_kernels(report.comparison, team or TeamView()),
        [n for n in gaps if DIED_ON_CANDIDATE.search(n)],
    )


# ------------------------------------------------------------------------------- every pair
