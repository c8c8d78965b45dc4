"""A team's own suite on the report: per-test outcomes, and a page per captured kernel.

What a cell's raw file holds with ``--tests`` (``matrix.measure.suite``: ``suite``, ``tests``,
``launches``; the aot cell also ``kernel_compiles``, records of ``matrix.backends.kernels``)
becomes plain data here, for three kinds of page:

- ``team/tests.html``: releases x tests, one column per (release, numpy) cell, each test's
  outcome (the gate's own parser reads the entries: ``matrix.gate.compare.parse_tests``);
- ``team/index.html``: every captured kernel with, per release, how many of its
  specializations x targets compiled;
- ``team/<kernel>.html``: one kernel, per specialization a releases x targets table: compiled
  or the compiler's error, registers, spills, shared memory, instruction class and count, and
  whether the TTGIR hash changed from the previous release that compiled it.

The upgrade pages list the gate's decision per kernel (``matrix.gate.kernel_compiles``
decides; ``upgrade_kernels`` only lays its decisions out with what else differs).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from matrix.catalog import AOT_TARGETS
from matrix.core import REPO_ROOT, release_key
from matrix.gate import compare as gc
from matrix.gate import kernel_compiles as gk
from matrix.measure import test_device
from matrix.measure.kernel_compiles import coverage_text, run_coverage
from matrix.measure.runner import SUITE_KEYS as SUITE_KEYS  # the release pages leave them out
from matrix.report.model import is_gpu_run, slug
from matrix.results import Run, known_seconds

# What each test outcome means to a team (a matrix.catalog.MEANINGS name): the outcomes the
# gate counts as failures (matrix.gate.compare.FAILED_TESTS) are breaking.
TEST_TONES = {
    "passed": "good",
    **{o: "breaking" for o in sorted(gc.FAILED_TESTS)},
    "xpassed": "changed",
    "xfailed": "neutral",
    "skipped": "unmeasured",
}
# What each KERNEL COMPILE status means: only compiled and rejected are Triton's answer.
COMPILE_TONES = {"compiled": "good", "rejected": "breaking"}
# The gate's decision per kernel (matrix.gate.kernel_compiles), as the pages colour it.
DECISION_TONES = {
    gk.BREAKS: "breaking",
    gk.CHANGES: "changed",
    gk.UNDECIDABLE: "unmeasured",
    gk.IMPROVES: "good",
    gk.SAME: "neutral",  # it compiled on both; what differs is not a finding
    gk.NOT_COMPILED: "neutral",
}
# The numbers of a compile record, in the order the pages show them, with their labels.
METRICS = (
    ("registers", "registers"),
    ("spills", "spills (bytes)"),
    ("shared", "shared memory (bytes)"),
    ("instruction_class", "instruction class"),
    ("instructions", "instructions"),
    ("ttgir_hash", "TTGIR hash"),
)
MISSING = "not recorded"


def test_tone(outcome: str | None) -> str:
    return TEST_TONES.get(outcome or "", "unmeasured")


def compile_tone(status: str | None) -> str:
    return COMPILE_TONES.get(status or "", "unmeasured")


def first_line(text: Any, limit: int = 240) -> str:
    """The line of an error that says why: a CompilationError puts its reason last."""
    lines = [ln.strip() for ln in str(text or "").splitlines() if ln.strip()]
    picked = lines[-1] if lines else ""
    return picked if len(picked) <= limit else picked[: limit - 1] + "…"


# ----------------------------------------------------------------------------------- the tests


@dataclass(frozen=True)
class TestCell:
    release: str
    numpy: str | None
    outcome: str | None  # None: this cell did not run the test
    detail: str = ""
    seconds: float = 0.0

    @property
    def tone(self) -> str:
        return test_tone(self.outcome)


@dataclass
class TestRow:
    id: str
    cells: list[TestCell]

    @property
    def changes(self) -> bool:
        return len({c.outcome for c in self.cells if c.outcome is not None}) > 1


@dataclass(frozen=True)
class SuiteColumn:
    """One cell that ran the suite: its release, numpy, suite identity and its counts."""

    release: str
    numpy: str | None
    run_id: str
    suite: dict[str, Any]
    passed: int
    total: int
    compiled: int | None = None  # kernel compiles of this cell (its aot step), None: none
    compiles: int | None = None
    # "N of M captured specializations compiled (...)": the console line's and gate.md's words
    # (matrix.measure.kernel_compiles.coverage_text); "" where the cell compiled none.
    coverage: str = ""
    # "the suite could not start: ... (No module named 'x')" (matrix.measure.test_device), "".
    cannot_start: str = ""

    @property
    def tone(self) -> str:
        return "good" if self.passed == self.total else "breaking"

    @property
    def redirected(self) -> bool:
        """Ran under the CUDA-to-CPU redirect: interpreter outcomes, not GPU correctness."""
        return self.suite.get("device") == test_device.CUDA_ON_CPU

    @property
    def shown_path(self) -> str:
        """The suite's name on a page (``shown_suite``: never an absolute path)."""
        return shown_suite(str(self.suite.get("path") or "?"))

    @property
    def failing(self) -> int:
        return self.total - self.passed


# --------------------------------------------------------------------------------- the kernels


@dataclass(frozen=True)
class CompileCell:
    """One specialization on one target in one release."""

    release: str
    target: str
    record: dict[str, Any] | None
    # The previous release that compiled this specialization for this target, and whether
    # the TTGIR hash differs from it (None: no such release, or no hash on either side).
    previous: str | None = None
    ttgir_changed: bool | None = None

    @property
    def status(self) -> str:
        return str(self.record.get("status")) if self.record else MISSING

    @property
    def tone(self) -> str:
        return compile_tone(self.record.get("status") if self.record else None)

    @property
    def compiled(self) -> bool:
        return self.status == gk.COMPILED

    @property
    def error(self) -> str:
        return first_line(self.record.get("detail")) if self.record else ""

    def metric(self, name: str) -> Any:
        value = self.record.get(name) if self.record else None
        return "—" if value is None else value


@dataclass
class Specialization:
    """One captured launch of a kernel (``key``: kernel, types, constexprs, options)."""

    key: str
    launch: dict[str, Any]
    cells: dict[tuple[str, str], CompileCell] = field(default_factory=dict)

    def cell(self, release: str, target: str) -> CompileCell:
        return self.cells.get((release, target), CompileCell(release, target, None))

    @property
    def signature(self) -> str:
        sig = self.launch.get("signature") or {}
        return ", ".join(f"{k}: {v}" for k, v in sig.items())

    @property
    def constexprs(self) -> str:
        return ", ".join(f"{k}={v!r}" for k, v in (self.launch.get("constexprs") or {}).items())

    @property
    def options(self) -> str:
        return ", ".join(f"{k}={v!r}" for k, v in (self.launch.get("options") or {}).items())


@dataclass
class KernelPage:
    kernel: str
    slug: str
    specializations: list[Specialization]
    # The KERNEL DEFINITION its launches ran (matrix.measure.capture): file (relative to the
    # suite's root), line of the ``def``, source text; None for raw files from before capture.
    definition: dict[str, Any] | None = None
    suite: str = ""  # the suite (``suite.path``) whose run captured it

    @property
    def source_lines(self) -> list[tuple[int, str]]:
        """(file line, text) of the recorded source: the page's ``#L<line>`` anchors."""
        d = self.definition or {}
        line = d.get("line")
        start = line if isinstance(line, int) else 1
        return [(start + i, ln) for i, ln in enumerate(str(d.get("source") or "").splitlines())]

    @property
    def where(self) -> str:
        """``file:line`` of its definition, relative to the suite's root ("" unknown)."""
        d = self.definition or {}
        return f"{d.get('file')}:{d.get('line')}" if d.get("file") else ""

    def holds(self, path: str, line: int) -> bool:
        """Whether ``path:line`` (a profile use's, as the gate names it) is a line of this
        kernel's recorded definition."""
        d = self.definition or {}
        if not d.get("file") or not self.suite:
            return False
        lines = self.source_lines
        if not lines or not lines[0][0] <= line <= lines[-1][0]:
            return False
        return _absolute(path) == _absolute(str(d["file"]), suite_folder(self.suite))

    def counts(self, release: str, targets: Sequence[str]) -> tuple[int, int, int]:
        """(compiled, rejected, recorded) over this kernel's specializations x ``targets``."""
        cells = [s.cell(release, t) for s in self.specializations for t in targets]
        recorded = [c for c in cells if c.record is not None]
        return (
            sum(c.compiled for c in recorded),
            sum(c.status == gk.REJECTED for c in recorded),
            len(recorded),
        )

    def tone(self, release: str, targets: Sequence[str]) -> str:
        compiled, rejected, recorded = self.counts(release, targets)
        if rejected:
            return "breaking"
        return "good" if recorded and compiled == recorded else "unmeasured"

    def ttgir_changes(self, release: str) -> int:
        """Targets x specializations whose TTGIR differs from the previous release's."""
        return sum(
            bool(c.ttgir_changed)
            for s in self.specializations
            for c in s.cells.values()
            if c.release == release
        )


@dataclass
class TeamView:
    """Everything the team pages show; ``present`` is False when no run ran a suite."""

    columns: list[SuiteColumn] = field(default_factory=list)
    tests: list[TestRow] = field(default_factory=list)
    releases: list[str] = field(default_factory=list)  # releases with kernel compiles
    targets: list[str] = field(default_factory=list)
    kernels: list[KernelPage] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def present(self) -> bool:
        return bool(self.columns or self.kernels or self.errors)

    def column(self, run_id: str) -> SuiteColumn | None:
        return next((c for c in self.columns if c.run_id == run_id), None)

    def link(self, finding: str) -> str | None:
        """The team page of a gate finding's name (a kernel's page, the tests table)."""
        for k in self.kernels:
            if gk.finding_name(k.kernel) == finding:
                return f"team/{k.slug}.html"
        if any(gc.test_finding_name(t.id) == finding for t in self.tests):
            return "team/tests.html"
        return None

    def not_passed(self, run_id: str) -> list[tuple[str, TestCell]]:
        """(test id, cell) of every test that ran in ``run_id`` and did not pass."""
        col = self.column(run_id)
        if col is None:
            return []
        i = self.columns.index(col)
        return [
            (t.id, t.cells[i])
            for t in self.tests
            if t.cells[i].outcome not in (None, gc.PASSED_TEST)
        ]


def _target_order(target: str) -> tuple[int, str]:
    return (AOT_TARGETS.index(target) if target in AOT_TARGETS else len(AOT_TARGETS), target)


def _tests(runs: Sequence[Run], view: TeamView) -> None:
    entries: dict[tuple[str, str | None], dict[str, dict[str, Any]]] = {}
    for run in runs:
        try:
            outcomes = gc.parse_tests(run)  # the gate's reading of the same entries
        except gc.DataError as e:
            view.errors.append(str(e))
            continue
        if outcomes is None:
            continue
        col = (str(run.triton), run.env.get("numpy"))
        entries[col] = {t["id"]: t for t in run.extra["tests"]}
        recorded = run.extra.get("suite")
        suite: dict[str, Any] = recorded if isinstance(recorded, dict) else {}
        passed = sum(o == gc.PASSED_TEST for o in outcomes.values())
        recs = run.extra.get("kernel_compiles")
        compiled = compiles = None
        if isinstance(recs, list):
            compiles = len(recs)
            compiled = sum(isinstance(r, dict) and r.get("status") == gk.COMPILED for r in recs)
        cov = run_coverage(run)
        view.columns.append(
            SuiteColumn(
                *col,
                run.id,
                suite,
                passed,
                len(outcomes),
                compiled,
                compiles,
                coverage_text(cov) if cov else "",
                test_device.start_line(run.extra["tests"])
                or test_device.not_collected_line(run.extra["tests"])
                or "",
            )
        )
    view.columns.sort(key=lambda c: (release_key(c.release), release_key(c.numpy)))
    ids = sorted({i for e in entries.values() for i in e})
    for test in ids:
        cells = []
        for c in view.columns:
            t = entries[(c.release, c.numpy)].get(test)
            if t is None:
                cells.append(TestCell(c.release, c.numpy, None))
            else:
                seconds = t.get("seconds")
                cells.append(
                    TestCell(
                        c.release,
                        c.numpy,
                        t["outcome"],
                        str(t.get("detail") or ""),
                        known_seconds(seconds) or 0.0,
                    )
                )
        view.tests.append(TestRow(test, cells))


def _kernels(runs: Sequence[Run], view: TeamView) -> None:
    launches: dict[str, dict[str, Any]] = {}
    records: dict[tuple[str, str, str], dict[str, Any]] = {}  # (key, release, target)
    kernels: dict[str, list[str]] = {}
    definitions: dict[str, tuple[dict[str, Any], str]] = {}  # kernel: (definition, suite path)
    # Newest numpy last, so that its record wins where two cells of a release compiled.
    for run in sorted(runs, key=lambda r: (release_key(r.env.get("numpy")), r.id)):
        sources = run.extra.get("kernel_sources")
        suite = (run.extra.get("suite") or {}).get("path") or ""
        for launch in run.extra.get("launches") or ():
            if isinstance(launch, dict) and isinstance(launch.get("key"), str):
                launches.setdefault(launch["key"], launch)
                d = sources.get(launch.get("definition")) if isinstance(sources, dict) else None
                if isinstance(d, dict) and isinstance(launch.get("kernel"), str):
                    definitions.setdefault(launch["kernel"], (d, str(suite)))
        recs = run.extra.get("kernel_compiles")
        if recs is None:
            continue
        try:
            table = gk.records_of([run])  # the gate's reading of the same records
        except gc.DataError as e:
            view.errors.append(str(e))
            continue
        if table is None:  # the records held no compile after all
            continue
        for (kernel, key, target), rec in table.items():
            records[(key, str(run.triton), target)] = rec
            if key not in kernels.setdefault(kernel, []):
                kernels[kernel].append(key)
    view.releases = sorted({k[1] for k in records}, key=release_key)
    view.targets = sorted({k[2] for k in records}, key=_target_order)
    used: set[str] = set()
    for kernel in sorted(kernels):
        specs = []
        for key in kernels[kernel]:
            spec = Specialization(key, launches.get(key, {"kernel": kernel}))
            for target in view.targets:
                prev: tuple[str, dict[str, Any]] | None = None
                for release in view.releases:
                    cell_rec = records.get((key, release, target))
                    if cell_rec is None:
                        continue
                    changed, before = None, None
                    if prev is not None:
                        before = prev[0]
                        a, b = prev[1].get("ttgir_hash"), cell_rec.get("ttgir_hash")
                        changed = (a != b) if a and b else None
                    spec.cells[(release, target)] = CompileCell(
                        release, target, cell_rec, before, changed
                    )
                    if cell_rec.get("status") == gk.COMPILED:
                        prev = (release, cell_rec)
            specs.append(spec)
        name = "k-" + slug(kernel)
        while name in used:
            name += "_"
        used.add(name)
        d, suite = definitions.get(kernel, (None, ""))
        view.kernels.append(KernelPage(kernel, name, specs, d, suite))


def build_view(runs: Sequence[Run]) -> TeamView:
    """The team pages' data from every run (GPU runs hold no suite and are left out)."""
    cpu = [r for r in runs if not is_gpu_run(r)]
    view = TeamView()
    _tests(cpu, view)
    _kernels(cpu, view)
    return view


# -------------------------------------------------------------------------------- upgrades


@dataclass(frozen=True)
class KernelChange:
    """One kernel on one target of an upgrade: the gate's decision and what else differs."""

    decision: gk.KernelDecision
    slug: str
    differences: tuple[str, ...]  # every metric that differs, counted by the gate or not

    @property
    def tone(self) -> str:
        return DECISION_TONES[self.decision.decision]


def differences(b: dict[str, Any] | None, c: dict[str, Any] | None) -> tuple[str, ...]:
    """What differs between two compile records: the status, or else every metric, as
    ``name a -> b`` (a compile that failed has no metrics to compare)."""
    if b is None or c is None:
        return ()
    if b.get("status") != c.get("status"):
        return (f"status {b.get('status')} -> {c.get('status')}",)
    return tuple(
        f"{label} {b.get(name)} -> {c.get(name)}"
        for name, label in METRICS
        if b.get(name) != c.get(name)
    )


def upgrade_kernels(comparison: gc.Comparison, view: TeamView) -> list[KernelChange]:
    """The gate's kernel decisions of one upgrade (``comparison.kernels``), worst first, each
    with every difference between the two compiles; kernels where nothing differs and the
    gate found nothing are left out."""
    slugs = {k.kernel: k.slug for k in view.kernels}
    order = list(DECISION_TONES)
    out = []
    for d in comparison.kernels:
        diff = differences(d.base, d.cand)
        if d.decision in (gk.SAME, gk.NOT_COMPILED) and not diff:
            continue
        out.append(KernelChange(d, slugs.get(d.kernel, ""), diff))
    out.sort(key=lambda k: (order.index(k.decision.decision), k.decision.kernel, k.decision.target))
    return out


# ------------------------------------------------------------------------- the team's verdict


def suite_folder(suite: str) -> Path:
    """Where a recorded suite (``suite.path``: relative to the checkout inside it, absolute
    outside) is now."""
    path = Path(suite)
    return path if path.is_absolute() else REPO_ROOT / path


def _absolute(path: str, base: Path | None = None) -> Path:
    """``path`` made absolute: against ``base``, else the working folder (the profile names a
    use's file relative to it, ``matrix.gate.usage``)."""
    p = Path(path)
    if not p.is_absolute():
        p = (base or Path.cwd()) / p
    return p.resolve()


def shown_path(path: str, suites: Sequence[str]) -> str:
    """``path`` as a page may show it: relative to the suite that holds it, else to the
    checkout; a file in neither is named by its own name (no page carries an absolute path:
    it would change with where the checkout lives)."""
    p = _absolute(path)
    for base in [*(suite_folder(s).resolve() for s in suites), REPO_ROOT.resolve()]:
        if p.is_relative_to(base):
            return p.relative_to(base).as_posix()
    return p.name


def shown_suite(suite: str) -> str:
    """A suite's name on a page: its recorded path inside the checkout, else its folder's
    name (the raw file keeps the absolute path; a page never does)."""
    return suite if not Path(suite).is_absolute() else f"{Path(suite).name} (outside the checkout)"
