"""Compare recorded results of a baseline and a candidate Triton release: the gate's findings.

Pure data in, findings out: no installs, no Triton. The pairing follows the results contract:

- interpreter results pair by numpy (every numpy both sides recorded; if none is shared, the
  newest numpy of each side), because the interpreter's numerics come from numpy;
- ``aot`` and ``gpu`` results pair by (backend, target), whatever numpy their cell had.

Anything the comparison cannot vouch for becomes an ``undecidable`` item, never silence.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from matrix.analyze import fingerprint
from matrix.analyze.census import censuses_from_runs
from matrix.catalog import PROBES_BY_NAME
from matrix.core import (
    FAILED_TEST_OUTCOMES,
    FAILURE_STATUSES,
    NO_OBSERVATION_STATUSES,
    SKIPPED,
    TEST_PASSED,
    Column,
    Release,
    ReleaseError,
    install_ok,
    pair_numpy,
)
from matrix.gate import controls
from matrix.gate import kernel_compiles as gk
from matrix.gate import resource_changes as rc
from matrix.gate import user_tests as ut
from matrix.gate.config import AcceptedChange
from matrix.gate.sides import DataError, Sides
from matrix.results import Result, Run
from matrix.scan import Finding as ScanFinding
from matrix.scan.judge import CONTROL_FAILED, guarded_out

REGRESSION = "regression"
BREAKING = "breaking-api"
BEHAVIOUR = "behaviour-change"
ACCEPTED = "accepted-change"
# Refused (or absent) on the baseline, anything else on the candidate: new on the candidate,
# never blocking (``fingerprint.relaxation`` is the rule).
RELAXATION = "relaxation"
# A kernel's resource change that the rule (matrix/data/resource_gate.toml) lets pass: named as
# "may slow your kernel", never blocking (``matrix.gate.resource_changes``).
MAY_SLOW = rc.MAY_SLOW_KIND
# Finding kinds that make the upgrade unsafe (exit 1).
UNSAFE_KINDS = (BREAKING, REGRESSION, BEHAVIOUR)

PASSED_TEST = TEST_PASSED
FAILED_TESTS = FAILED_TEST_OUTCOMES


@dataclass
class GateFinding:
    """Something the gate found, with its evidence and, where known, the fix."""

    kind: str
    probe: str
    where: str
    baseline: str | None
    candidate: str | None
    evidence: list[str] = field(default_factory=list)
    fix: str = ""
    reason: str = ""
    uses: list[str] = field(default_factory=list)
    # With a team's code (--scan/--tests): "used" or "may affect" (matrix.gate.usage).
    relevance: str = ""
    # ``path:line`` of scanned uses of this probe that the change is not about (their own case
    # did not change, or a feature guard keeps them off the candidate): the profile's uses on
    # those lines are not tied to it either (matrix.gate.verdict.apply_profile)
    ruled_out: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Comparison:
    """Everything the gate learned: findings, what it could not decide, what it compared."""

    findings: list[GateFinding] = field(default_factory=list)
    undecidable: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    compared: list[str] = field(default_factory=list)
    # The team's kernels, one decision per (kernel, launch, target) the baseline compiled
    # (matrix.gate.kernel_compiles.KernelDecision): what the upgrade pages list beside them.
    kernels: list[Any] = field(default_factory=list)
    # The probe (or fingerprint cell) each undecidable item is about, where it is about one:
    # with a team's code, one the code does not use is not a reason to be undecided.
    undecidable_probe: dict[str, str] = field(default_factory=dict)
    # The column (``aot:cuda:90``, ``interpret``) each undecidable item is about, where it is
    # about one: with declared targets, one the team does not run on is not a reason.
    undecidable_column: dict[str, str] = field(default_factory=dict)
    # The team's suite where it could not start, or left test modules it could not import,
    # with the failing imports: gate.md's first screen names them (a suite that could not
    # start is undecidable too; modules that import on neither side are named, not counted).
    suite_problems: list[str] = field(default_factory=list)

    @property
    def unsafe(self) -> list[GateFinding]:
        return [f for f in self.findings if f.kind in UNSAFE_KINDS]

    def undecided(self, text: str, probe: str | None = None, column: str | None = None) -> None:
        """Add an undecidable item, with the probe and the column it is about where known."""
        self.undecidable.append(text)
        if probe is not None:
            self.undecidable_probe[text] = probe
        if column is not None:
            self.undecidable_column[text] = column


# ----------------------------------------------------------------------------------- selection


def runs_for(runs: Iterable[Run], release: Release | str) -> list[Run]:
    """The runs of ``release`` (``3.9`` is ``3.9.0``: the runs were parsed when read)."""
    wanted = Release.parse(release)
    return [r for r in runs if r.release == wanted]


@dataclass
class Selection:
    """The runs of both sides that installed (``sides``), and what the others mean."""

    sides: Sides
    errors: list[str] = field(default_factory=list)
    undecidable: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # The numpy of each side's cells that did not install: what they mean is said above, so
    # ``compare`` does not count their missing columns again.
    uninstalled: dict[str, set[str]] = field(
        default_factory=lambda: {"baseline": set(), "candidate": set()}
    )


def _install_text(run: Run) -> str:
    detail = " ".join(str(run.install.get("detail", "")).split())
    status = run.install.get("status")
    return f"install status {status!r}" + (f" ({detail[:300]})" if detail else "")


def select_runs(
    base_runs: Sequence[Run], cand_runs: Sequence[Run], baseline: Release, candidate: Release
) -> Selection:
    """Keep the runs that installed; decide what every other run means for the verdict.

    - no run at all, no run that installed, an incomplete cell, or an installed cell with no
      results: an error (exit 2), on either side;
    - a candidate cell that did not install where the baseline's cell with the same numpy did:
      undecidable (the candidate cannot be installed where the baseline could);
    - a cell that did not install on the baseline (or on both sides): a note, since the
      baseline never worked there and nothing is lost by upgrading.
    """
    installed: dict[str, list[Run]] = {"baseline": [], "candidate": []}
    sel = Selection(Sides(installed["baseline"], installed["candidate"], baseline, candidate))
    for side, release, runs in (
        ("baseline", baseline, base_runs),
        ("candidate", candidate, cand_runs),
    ):
        if not runs:
            sel.errors.append(
                f"no results for the {side} Triton {release}: no run has env.triton == '{release}'"
            )
            continue
        ok = [r for r in runs if install_ok(r.install)]
        for run in ok:
            if not run.complete:
                sel.errors.append(
                    f"{side} run {run.id!r}: incomplete cell (complete: false); rerun it"
                )
            elif not run.results and "tests" not in run.extra:
                sel.errors.append(f"{side} run {run.id!r}: installed but recorded no results")
            problem = _numpy_problem(run)
            if problem:
                sel.errors.append(f"{side} run {run.id!r}: {problem}")
        if not ok:
            failed = "; ".join(f"{r.id!r}: {_install_text(r)}" for r in runs)
            sel.errors.append(f"the {side} Triton {release} did not install in any cell: {failed}")
        installed[side].extend(ok)

    base_numpys = {str(r.env.get("numpy")) for r in installed["baseline"]}
    for side, runs in (("baseline", base_runs), ("candidate", cand_runs)):
        sel.uninstalled[side] = {str(r.env.get("numpy")) for r in runs if not install_ok(r.install)}
    for run in base_runs:
        if not install_ok(run.install):
            sel.notes.append(
                f"baseline cell {run.id!r} did not install ({_install_text(run)}): nothing to "
                "compare there"
            )
    for run in cand_runs:
        if install_ok(run.install):
            continue
        numpy = str(run.env.get("numpy"))
        if numpy in base_numpys:
            sel.undecidable.append(
                f"candidate cell {run.id!r} did not install ({_install_text(run)}), but the "
                f"baseline {baseline} installed with numpy {numpy}"
            )
        else:
            sel.notes.append(
                f"candidate cell {run.id!r} did not install ({_install_text(run)}); the baseline "
                f"has no installed cell with numpy {numpy} either"
            )
    return sel


def _numpy_problem(run: Run) -> str | None:
    """Why a run's ``env.numpy`` cannot place its interpreter results in a column, or None:
    interpreter cells pair by numpy, so a numpy that is not a release would pair with anything."""
    if not any(r.backend == "interpret" for r in run.results) and "tests" not in run.extra:
        return None
    numpy = run.env.get("numpy")
    try:
        Release.parse(numpy, "env.numpy")
    except (ReleaseError, TypeError, AttributeError):
        return (
            f"env.numpy is {numpy!r}, not a numpy release: its interpreter cells pair with nothing"
        )
    return None


def _gpu_machines(runs: Sequence[Run]) -> dict[str | None, set[str]]:
    """``{gpu target: {device name}}`` of the runs with gpu results."""
    machines: dict[str | None, set[str]] = {}
    for run in runs:
        gpu = run.env.get("gpu")
        name = str(gpu.get("name")) if isinstance(gpu, dict) else str(gpu)
        for r in run.results:
            if r.backend == "gpu":
                machines.setdefault(r.target, set()).add(name)
    return machines


Columns = dict[tuple[str, str | None, str | None], dict[str, Result]]

# Kept per run (``_expanded``) and per set of runs (``_columns``): the pages judge 45 pairs, so
# each release's runs are compared up to 9 times; expanding their ~100,000 fingerprint cells
# and tabling them was most of a report build. An entry is used only while it holds the very
# run objects and result lists, of the same lengths (it keeps them, so their ids are not reused).
_KEPT_MAX = 256
_EXPANDED: dict[int, tuple[tuple[Any, ...], list[Result]]] = {}
_COLUMNS: dict[tuple[int, ...], tuple[tuple[Any, ...], Columns]] = {}


def _identity(runs: Sequence[Run]) -> tuple[Any, ...]:
    """What a kept entry must still match (compared item by item: the same objects compare
    equal at once)."""
    return tuple(x for run in runs for x in (run, run.results, len(run.results)))


def _kept(store: dict, key: Any, runs: Sequence[Run]) -> Any:
    hit = store.get(key)
    return hit[1] if hit is not None and hit[0] == _identity(runs) else None


def _keep(store: dict, key: Any, runs: Sequence[Run], value: Any) -> Any:
    if len(store) >= _KEPT_MAX:
        store.clear()
    store[key] = (_identity(runs), value)
    return value


def _expanded(run: Run) -> list[Result]:
    """``fingerprint.expand(run.results)``, kept per run."""
    hit = _kept(_EXPANDED, id(run), [run])
    if hit is not None:
        return hit
    return _keep(_EXPANDED, id(run), [run], list(fingerprint.expand(run.results)))


def _columns(runs: Sequence[Run]) -> Columns:
    """``{(backend, target, numpy-or-None): {probe: Result}}``; conflicting duplicates raise.
    Kept per set of runs: the caller only reads it."""
    key = tuple(id(run) for run in runs)
    hit = _kept(_COLUMNS, key, runs)
    if hit is not None:
        return hit
    table: Columns = {}
    origin: dict[tuple[Any, ...], str] = {}
    for run in runs:
        numpy = run.env.get("numpy")
        # Fingerprint groups compare cell by cell: each cell is a probe of its own here.
        for r in _expanded(run):
            np_key = str(numpy) if r.backend == "interpret" else None
            col = (r.backend, r.target, np_key)
            cell = table.setdefault(col, {})
            previous = cell.get(r.probe)
            if previous is not None and previous.status != r.status:
                raise DataError(
                    f"conflicting results for {r.probe} on {Column(r.backend, r.target)}"
                    f" (Triton {run.triton}): {previous.status!r} in run "
                    f"{origin[(*col, r.probe)]!r}, {r.status!r} in run {run.id!r}"
                )
            cell[r.probe] = previous or r
            origin.setdefault((*col, r.probe), run.id)
    return _keep(_COLUMNS, key, runs, table)


# ---------------------------------------------------------------------------------- comparison


def _detail(side: str, release: Release, r: Result) -> str:
    text = " ".join(r.detail.split())
    if fingerprint.is_group(r) and r.data:  # a cell: its reference/got value, its refusal
        text = " ".join(f"{k}={v}" for k, v in r.data.items())
    if len(text) > 400:
        text = text[:400] + " ..."
    return f"{side} {release}: `{r.status}`" + (f": {text}" if text else "")


def compare(
    base_runs: Sequence[Run],
    cand_runs: Sequence[Run],
    baseline: Release,
    candidate: Release,
    accepted: Sequence[AcceptedChange],
    scan_findings: Sequence[ScanFinding],
    uninstalled: Mapping[str, set[str]] | None = None,
) -> Comparison:
    """All findings of an upgrade from ``baseline`` to ``candidate`` on the recorded runs.

    ``uninstalled`` (``Selection.uninstalled``): the numpy of each side's cells that did not
    install, whose missing columns ``select_runs`` has already accounted for."""
    uninstalled = uninstalled or {}
    out = Comparison()
    upgrade = Upgrade(baseline, candidate, tuple(accepted))
    base_cols, cand_cols = _columns(base_runs), _columns(cand_runs)
    censuses = {**censuses_from_runs(base_runs), **censuses_from_runs(cand_runs)}
    uses_by_probe: dict[str, list[ScanFinding]] = {}
    for f in scan_findings:
        if f.rule.probe:
            # a rule on one fingerprint cell (probe = "fp.rules", cell = "global_annotated") is
            # compared where that cell is: fp.rules[global_annotated]
            key = f.rule.probe if f.rule.cell is None else f"{f.rule.probe}[{f.rule.cell}]"
            uses_by_probe.setdefault(key, []).append(f)

    pairs: list[tuple[tuple[Any, ...], tuple[Any, ...], str]] = []
    interp_base = {c[2] for c in base_cols if c[0] == "interpret"}
    interp_cand = {c[2] for c in cand_cols if c[0] == "interpret"}
    targets_base = {c[1] for c in base_cols if c[0] == "interpret"}
    targets_cand = {c[1] for c in cand_cols if c[0] == "interpret"}
    for target in sorted(targets_base & targets_cand, key=str):
        nb = {n for (b, t, n) in base_cols if b == "interpret" and t == target}
        nc = {n for (b, t, n) in cand_cols if b == "interpret" and t == target}
        paired = pair_numpy(nb, nc)
        # A numpy cell of one side that pairs with none of the other's was not compared: the
        # upgrade may break exactly there (a CI job that failed to upload its raw file).
        for side, release, numpys, used in (
            ("baseline", baseline, nb, {b for b, _ in paired}),
            ("candidate", candidate, nc, {c for _, c in paired}),
        ):
            other_side = "candidate" if side == "baseline" else "baseline"
            for numpy in sorted(numpys - used - uninstalled.get(other_side, set()), key=str):
                other = candidate if side == "baseline" else baseline
                out.undecided(
                    f"{Column('interpret', target)} (numpy {numpy}): results for the {side} "
                    f"{release} but none with that numpy for {other}, so not compared",
                    column=str(Column("interpret", target)),
                )
        for b_np, c_np in paired:
            label = str(Column("interpret", target))
            shown = (
                f"{label} (numpy {b_np})" if b_np == c_np else f"{label} (numpy {b_np} vs {c_np})"
            )
            pairs.append((("interpret", target, b_np), ("interpret", target, c_np), shown))
    if interp_base and not interp_cand:
        out.undecidable.append(
            f"the baseline {baseline} has interpreter results and the candidate {candidate} none"
        )
    if interp_cand and not interp_base:
        out.undecidable.append(
            f"the candidate {candidate} has interpreter results and the baseline {baseline} "
            "none: not compared"
        )
    for target in sorted(targets_base ^ targets_cand, key=str):
        if interp_base and interp_cand:
            only = baseline if target in targets_base else candidate
            out.undecided(
                f"{Column('interpret', target)}: recorded for {only} only, so not compared",
                column=str(Column("interpret", target)),
            )
    other_base = {c for c in base_cols if c[0] != "interpret"}
    other_cand = {c for c in cand_cols if c[0] != "interpret"}
    for col in sorted(other_base & other_cand, key=str):
        pairs.append((col, col, str(Column(col[0], col[1]))))
    for col in sorted(other_base - other_cand, key=str):
        out.undecided(
            f"{Column(col[0], col[1])}: results for the baseline {baseline} but none for "
            f"the candidate {candidate}",
            column=str(Column(col[0], col[1])),
        )
    for col in sorted(other_cand - other_base, key=str):
        out.undecided(
            f"{Column(col[0], col[1])}: results for the candidate {candidate} but none for "
            f"the baseline {baseline}, so not compared",
            column=str(Column(col[0], col[1])),
        )
    base_gpus, cand_gpus = _gpu_machines(base_runs), _gpu_machines(cand_runs)
    for target in sorted(set(base_gpus) & set(cand_gpus), key=str):
        for side, release, names in (
            ("baseline", baseline, base_gpus[target] - cand_gpus[target]),
            ("candidate", candidate, cand_gpus[target] - base_gpus[target]),
        ):
            for name in sorted(names):
                out.undecided(
                    f"{Column('gpu', target)}: the {side} {release} was measured on GPU "
                    f"{name!r}, the other side not: a machine on one side only",
                    column=str(Column("gpu", target)),
                )

    if not pairs and (base_cols or cand_cols):
        out.undecidable.append(
            f"no backend/target recorded for both {baseline} and {candidate}: nothing to compare"
        )

    probes_seen_on_candidate: set[str] = set()
    for b_key, c_key, shown in pairs:
        out.compared.append(shown)
        where = str(Column(b_key[0], b_key[1]))
        b_res, c_res = base_cols[b_key], cand_cols[c_key]
        _compare_resources(out, upgrade, where, b_res, c_res)
        probes_seen_on_candidate.update(p for p in c_res if c_res[p].status != SKIPPED)
        for probe in sorted(set(b_res) | set(c_res)):
            b, c = b_res.get(probe), c_res.get(probe)
            control = controls.control_probe(probe)
            if (
                control is not None and b is not None and c is not None
                and b.status != c.status
                and controls.explained(b, c, b_res.get(control), c_res.get(control))
            ):  # fmt: skip
                out.notes.append(
                    f"any compile: {probe} on {shown}: `{b.status}` -> `{c.status}`, the same "
                    f"change as its control {control} (not what this cell's kernel spells)"
                )
                continue
            scanned = uses_by_probe.get(probe, [])
            uses = concerned_uses(scanned, b, c, candidate, censuses, baseline)
            if not uses and b is not None and c is not None and b.status == c.status:
                spec = PROBES_BY_NAME.get(probe)
                if spec is None or spec.behavioural:
                    continue  # the same observation on both sides: _compare_probe adds nothing
            start = len(out.findings)
            _compare_probe(out, upgrade, ProbePair(probe, where, shown, b, c, uses))
            off = [f"{u.path}:{u.line}" for u in scanned if u not in uses]
            for found in out.findings[start:]:
                found.ruled_out = off

    # A scanned use of an API whose probe the candidate never ran cannot be vouched for.
    for probe, uses in sorted(uses_by_probe.items()):
        if any(u.rule.breaking for u in uses) and probe not in probes_seen_on_candidate:
            locs = ", ".join(f"{u.path}:{u.line}" for u in uses[:5])
            out.undecidable.append(
                f"the scanned code uses what probe {probe!r} measures ({locs}) but no compared "
                f"backend recorded {probe} for {candidate}"
            )
    sides = Sides(base_runs, cand_runs, baseline, candidate)
    _compare_tests(out, sides)
    compare_kernels(out, sides)
    # A change that breaks scanned code is reported once, as breaking, not again as a change.
    broken = {(f.probe, f.where) for f in out.findings if f.kind == BREAKING}
    out.findings = [
        f
        for f in out.findings
        if not (f.kind in (BEHAVIOUR, ACCEPTED) and (f.probe, f.where) in broken)
    ]
    return out


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
    whose case the row does not hold stays (it cannot be told apart: fail closed)."""
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
        fails = after is not None and after in u.rule.breaking
        if guarded_out(u, candidate, censuses, fails) is not None:
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


def _compare_resources(
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


def _compare_probe(out: Comparison, upgrade: Upgrade, pair: ProbePair) -> None:
    """Add what one probe's pair of results means for the upgrade to ``out``."""
    probe, where, shown, b, c, uses = (
        pair.probe, pair.where, pair.shown, pair.base, pair.cand, pair.uses
    )  # fmt: skip
    baseline, candidate, accepted = upgrade.baseline, upgrade.candidate, upgrade.accepted
    spec = PROBES_BY_NAME.get(probe)
    is_check = spec is not None and not spec.behavioural
    good = spec.good if spec is not None else ()

    # Refused on the baseline: code that runs there cannot be using it, whatever the candidate
    # does (a scanned use of it is guarded or dead on the baseline).
    relaxed = b is not None and c is not None and fingerprint.relaxation(b.status, c.status)
    if c is not None and not relaxed:
        for use in uses:
            case = _case_on(use, candidate, None) if use.rule.cases else None
            if _cell(c, case) in use.rule.breaking and b is not None and _cell(
                b, _case_on(use, baseline, None) if use.rule.cases else None
            ) in use.rule.breaking:
                # broken on the baseline too: code that runs there does not take this path
                # (another target, a guard), so the upgrade changes nothing for it
                out.notes.append(
                    f"breaks on both: {probe} on {shown} at {use.path}:{use.line}: "
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
                        probe,
                        where,
                        b.status if b else None,
                        c.status,
                        evidence,
                        fix=use.rule.fix,
                        uses=[f"{use.path}:{use.line}:{use.col} {use.rule.id} {use.snippet}"],
                    )
                )

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
                uses=[f"{u.path}:{u.line}:{u.col} {u.rule.id} {u.snippet}" for u in uses],
            )
        )
        return
    if is_check:
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
        return

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
    for ack in accepted:
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


# ---------------------------------------------------------------------------------- user tests


def parse_tests(run: Run) -> dict[str, str] | None:
    """A run's user-test outcomes as ``{test id: outcome}``; None when it recorded none.

    The shape is what the matrix writes (``matrix.measure.suite``): a list of
    ``{"id": ..., "outcome": ..., ...}``. Anything else raises DataError naming the entry.
    """
    raw = run.extra.get("tests")
    if raw is None:
        return None
    if not isinstance(raw, list):
        raise DataError(f"run {run.id!r}: 'tests' must be a list of {{id, outcome}}, got {raw!r}")
    out: dict[str, str] = {}
    for i, t in enumerate(raw):
        if not isinstance(t, dict):
            raise DataError(f"run {run.id!r}: tests[{i}] is not an object: {t!r}")
        name, outcome = t.get("id"), t.get("outcome")
        if not isinstance(name, str) or not isinstance(outcome, str):
            raise DataError(
                f"run {run.id!r}: tests[{i}]: expected string 'id' and 'outcome', got {t!r}"
            )
        out[name] = outcome
    return out


def test_finding_name(test: str) -> str:
    """The name the gate's findings give a user test (its pytest node id)."""
    return f"test {test}"


def _compare_tests(out: Comparison, sides: Sides) -> None:
    def by_numpy(runs: Sequence[Run]) -> dict[str, dict[str, str]]:
        table: dict[str, dict[str, str]] = {}
        for run in runs:
            tests = parse_tests(run)
            if tests is not None:
                table.setdefault(str(run.env.get("numpy")), {}).update(tests)
        return table

    def records_by_numpy(runs: Sequence[Run]) -> dict[str, dict[str, dict[str, Any]]]:
        table: dict[str, dict[str, dict[str, Any]]] = {}
        for run in runs:
            table.setdefault(str(run.env.get("numpy")), {}).update(ut.records_of_tests(run))
        return table

    baseline, candidate = sides.baseline, sides.candidate
    base, cand = by_numpy(sides.base), by_numpy(sides.cand)
    if base and not cand:
        out.undecidable.append(
            f"the user's tests ran on {baseline} but not on {candidate}: "
            "rerun the candidate with them"
        )
        return
    differences = ut.suite_differences(sides.base, sides.cand, str(baseline), str(candidate))
    if differences:  # a test that passes only under a longer limit or with -k says nothing
        out.undecidable.append(
            "the user's tests are not comparable, the suites differ: " + "; ".join(differences)
        )
        return
    cand_records = records_by_numpy(sides.cand)
    kernels = ut.kernels_by_test(sides.cand)
    # A suite that could not start compared nothing: never a silent pass.
    for side, runs in ((baseline, sides.base), (candidate, sides.cand)):
        failed = [f"user tests: {s}" for s in ut.start_failures(runs, str(side))]
        out.undecidable += failed
        out.suite_problems += failed
        out.suite_problems += [f"user tests: {s}" for s in ut.not_collected_lines(runs, str(side))]
    mode = ut.redirected([*sides.base, *sides.cand])
    for b_np, c_np in pair_numpy(base, cand):
        shown = f"tests (numpy {b_np})" if b_np == c_np else f"tests (numpy {b_np} vs {c_np})"
        out.compared.append(f"{shown}: {mode}" if mode else shown)
        records = cand_records.get(c_np, {})
        broken = ut.collection_errors(records)
        for test, b_outcome in sorted(base[b_np].items()):
            if b_outcome != PASSED_TEST:
                continue
            c_outcome = cand[c_np].get(test)
            if c_outcome == PASSED_TEST:
                continue
            record: Mapping[str, Any] | None = records.get(test)
            if c_outcome is None and ut.module_of(test) in broken:
                # Its module no longer imports: the test did not vanish, it broke.
                record = broken[ut.module_of(test)]
                c_outcome = "error"
            if c_outcome is None or c_outcome not in FAILED_TESTS or record is None:
                out.undecidable.append(
                    f"user test {test} ({shown}): passed on {baseline}, "
                    f"{'missing' if c_outcome is None else repr(c_outcome)} on {candidate}"
                )
                continue
            cls, why = ut.classify(record)
            if cls == ut.ENVIRONMENT:
                detail = " ".join(str(record.get("detail", "")).split())[:300]
                out.undecidable.append(
                    f"user test {test} ({shown}): passed on {baseline}, `{c_outcome}` on "
                    f"{candidate} for a reason outside Triton, not a regression ({why}): {detail}"
                )
                continue
            out.findings.append(
                GateFinding(
                    REGRESSION,
                    test_finding_name(test),
                    shown,
                    b_outcome,
                    c_outcome,
                    [
                        f"baseline {baseline}: `{b_outcome}`",
                        f"candidate {candidate}: `{c_outcome}`",
                        *ut.evidence(record, cls, why, kernels.get(test, ())),
                    ],
                )
            )


# ------------------------------------------------------------------------------ team kernels


def compare_kernels(out: Comparison, sides: Sides) -> None:
    """Add the kernel-compile findings of an upgrade to ``out`` (the decisions and their rule:
    ``matrix.gate.kernel_compiles``)."""
    baseline, candidate = sides.baseline, sides.candidate
    base, cand = gk.records_of(sides.base), gk.records_of(sides.cand)
    if base is None:
        if cand is not None:
            out.notes.append(f"not compared: kernel compiles recorded for {candidate} only")
        return
    if cand is None:
        out.undecidable.append(
            f"the team's kernels were compiled on {baseline} but not on {candidate}: rerun the "
            "candidate's aot cell with --tests"
        )
        return
    out.compared.append("kernel compiles")
    out.kernels = gk.decide_kernels(sides) or []
    for d in out.kernels:
        name, where = d.name, d.where
        if d.decision == gk.IMPROVES:
            out.notes.append(f"improved: {name} on {where}: rejected -> compiled")
        elif d.decision == gk.UNDECIDABLE:
            (why,) = d.reasons
            out.undecided(f"{name} on {where}: compiled on {baseline}, {why}", column=where)
        elif d.decision == gk.BREAKS:
            assert d.cand is not None
            evidence = [
                f"baseline {baseline}: `{gk.COMPILED}`",
                f"candidate {candidate}: `{d.cand['status']}`: {d.reasons[0]}",
            ]
            out.findings.append(
                GateFinding(
                    BREAKING,
                    name,
                    where,
                    gk.COMPILED,
                    gk.REJECTED,
                    evidence,
                    fix="the candidate's compiler refuses this kernel",
                )
            )
        elif d.decision == gk.CHANGES:
            # Resource growths the rule does not let block are named apart (never blocking).
            blocking = [r for r in d.reasons if rc.reason_blocks(r)]
            named = [r for r in d.reasons if not rc.reason_blocks(r)]
            for kind, reasons in ((BEHAVIOUR, blocking), (MAY_SLOW, named)):
                if reasons:
                    out.findings.append(
                        GateFinding(kind, name, where, gk.COMPILED, gk.COMPILED, reasons)
                    )
