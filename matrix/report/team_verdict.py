"""The team's verdict on an upgrade, as its pages show it: the gate's decision, and each finding
tied to the line of the team's code and the kernel page it concerns.

The team's tests and kernels page by page, and how a path is shown, are ``matrix.report.team``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matrix.gate import compare as gc
from matrix.measure.runner import SUITE_KEYS as SUITE_KEYS  # the release pages leave them out
from matrix.report.model import slug
from matrix.report.team import (
    KernelPage,
    TeamView,
    shown_path,
    shown_suite,
)
from matrix.results import Run


@dataclass(frozen=True)
class SourceLink:
    """A line of the team's code a finding is tied to: ``text`` is ``path:line`` (relative),
    ``href`` the line on its kernel's page ("" where no page shows that line)."""

    text: str
    href: str


@dataclass(frozen=True)
class TiedFinding:
    """A gate finding on one kernel: the uses it maps onto (as gate.md lists them) and each
    use's line, linked; ``anchor`` is its id on the kernel's page, where its fix text is."""

    finding: gc.GateFinding
    lines: list[str]  # Use.where, the words gate.md uses
    links: list[SourceLink]
    anchor: str

    @property
    def fix(self) -> str:
        return self.finding.fix

    @property
    def fix_href(self) -> str:
        """Where its fix text is (on its kernel's page, relative to team/); "" where no kernel
        page shows its lines."""
        page = next((x.href.split("#", 1)[0] for x in self.links if x.href), "")
        return f"{page}#{self.anchor}" if page else ""


@dataclass(frozen=True)
class KernelFindings:
    """One of the team's kernels and the gate's findings tied to its lines."""

    kernel: str
    where: str  # path:line of its definition
    findings: list[TiedFinding]


@dataclass(frozen=True)
class TeamVerdict:
    """The gate's verdict on the team's code for one upgrade (``--tests`` the suites the runs
    ran), as the gate writes it in gate.md: per kernel the findings tied to its lines, the
    compile coverage, and what changed that the code does not use (counts per group)."""

    gate: Any  # matrix.gate.verdict.GateReport
    kernels: list[KernelFindings]
    not_used: list[tuple[str, int]]
    suites: list[str]
    baseline: str = ""
    candidate: str = ""

    @property
    def verdict(self) -> str:
        return str(self.gate.verdict)

    @property
    def shown_suites(self) -> list[str]:
        return [shown_suite(s) for s in self.suites]

    @property
    def counts(self) -> dict[str, int]:
        """gate.md's first-screen counts (``matrix.gate.summary.counts``)."""
        from matrix.gate.summary import counts

        return counts(self.gate, self.gate.blocking())

    @property
    def entries(self) -> list[tuple[Any, str]]:
        """gate.md's blocking entries, one per change x kernel, each with its lines folded as
        a page shows paths (relative to the suite; never absolute)."""
        out = []
        for e in self.gate.blocking():
            folded = "; ".join(
                f"{shown_path(path, self.suites)}:{', '.join(map(str, lines))}"
                for path, lines in e.locations.items()
            )
            out.append((e, folded))
        return out

    @property
    def command_suites(self) -> list[str]:
        """The suites as the gate's command names them on a page (one outside the checkout by
        its folder's name: the page does not say where the build machine kept it)."""
        return [s if not Path(s).is_absolute() else Path(s).name for s in self.suites]


def suites_of(runs: Sequence[Run]) -> list[str]:
    """The team suites (``suite.path``) the runs ran, in order."""
    out: dict[str, None] = {}
    for r in runs:
        path = (r.extra.get("suite") or {}).get("path")
        if isinstance(path, str) and path:
            out[path] = None
    return list(out)


def finding_anchor(baseline: str, candidate: str, f: gc.GateFinding) -> str:
    """The id of a finding on a kernel page (one per upgrade and finding)."""
    return "f-" + slug(f"{baseline}-{candidate}-{f.kind}-{f.probe}")


class TeamGate:
    """The gate on the team's suites (``--tests SUITE`` for every suite the runs ran), its
    profile and scan read once for every pair the pages show; ``view`` (the team pages) says
    which kernel page shows which line."""

    def __init__(self, runs: Sequence[Run], root: Any, view: TeamView | None = None) -> None:
        from matrix.gate.usage import build_profile
        from matrix.scan import load_rules, scan_paths

        self.runs = runs
        self.view = view or TeamView()
        self.suites = [s for s in suites_of(runs) if (root / s).is_dir()]
        paths = [str(root / s) for s in self.suites]
        self.profile = build_profile([], paths, runs) if paths else None
        self.scan = scan_paths(paths, load_rules()) if paths else None

    def link(self, path: str, line: int, kernel: str) -> SourceLink:
        """``path:line`` shown relative, linked to the line on the page of the kernel (of that
        bare name) whose recorded definition holds it."""
        text = f"{shown_path(path, self.suites)}:{line}"
        for k in self.view.kernels:
            if k.kernel.rsplit(".", 1)[-1].rsplit(":", 1)[-1] == kernel and k.holds(path, line):
                return SourceLink(text, f"{k.slug}.html#L{line}")
        return SourceLink(text, "")

    def verdict(self, baseline: str, candidate: str, results: str) -> TeamVerdict | None:
        """Exactly ``python -m matrix gate --tests SUITE`` for the pair (no acknowledgements:
        the pages have no team file); None when the runs ran no suite found here."""
        from collections import Counter

        from matrix.core import Release
        from matrix.gate.verdict import GateReport, decide_runs

        if self.profile is None or self.scan is None:
            return None
        report = GateReport(baseline=baseline, candidate=candidate, results=results)
        report.scanned = list(self.suites)
        b, c = Release.parse(baseline), Release.parse(candidate)
        decide_runs(report, self.runs, b, c, [], self.scan, profile=self.profile)
        report.decide()
        by_kernel: dict[str, list[TiedFinding]] = {}
        for f, uses in report.tied:
            for kernel in dict.fromkeys(u.kernel for u in uses):
                mine = [u for u in uses if u.kernel == kernel]
                at = dict.fromkeys((u.path, u.line) for u in mine)
                by_kernel.setdefault(kernel, []).append(
                    TiedFinding(
                        f,
                        list(dict.fromkeys(u.where for u in mine)),
                        [self.link(p, ln, kernel) for p, ln in at],
                        finding_anchor(baseline, candidate, f),
                    )
                )
        kernels = [
            KernelFindings(
                k, _shown_where(self.profile.kernels.get(k, ""), self.suites), by_kernel.get(k, [])
            )
            for k in sorted(set(self.profile.kernels) | set(by_kernel))
        ]
        counts = Counter(f.probe.split("[", 1)[0] for f in report.unused)
        ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        return TeamVerdict(report, kernels, ordered, list(self.suites), baseline, candidate)


def _shown_where(where: str, suites: Sequence[str]) -> str:
    path, sep, line = where.rpartition(":")
    return f"{shown_path(path, suites)}:{line}" if sep and line.isdigit() else where


@dataclass(frozen=True)
class PageFinding:
    """A finding of one upgrade on a kernel's own page: the lines of this definition it is
    tied to (each a ``#L<line>`` of the page) and its fix text."""

    baseline: str
    candidate: str
    upgrade: str  # the upgrade page's file name
    tied: TiedFinding
    links: list[SourceLink]


def kernel_findings(k: KernelPage, upgrades: Sequence[Any]) -> list[PageFinding]:
    """The findings of every upgrade page's team verdict (``upgrade.team_gate``) tied to a
    line of ``k``'s recorded definition (a test-local kernel that shadows a module-level one
    gets only its own)."""
    out = []
    for u in upgrades:
        t = getattr(u, "team_gate", None)
        if t is None:
            continue
        for kf in t.kernels:
            for tied in kf.findings:
                links = [x for x in tied.links if x.href.startswith(f"{k.slug}.html#")]
                if links:
                    out.append(PageFinding(t.baseline, t.candidate, f"{u.slug}.html", tied, links))
    return out
