"""Compare recorded results of a baseline and a candidate Triton release: the gate's findings.

Pure data in, findings out: no installs, no Triton. The parts, each in its own module:

- which runs are compared (``matrix.gate.selection``) and how their columns pair
  (``matrix.gate.columns``: interpreter results by numpy, ``aot``/``gpu`` by backend and target);
- one probe's pair of results in one column (``matrix.gate.probe_compare``);
- the team's tests and kernels (``matrix.gate.user_compare``).

Anything the comparison cannot vouch for becomes an ``undecidable`` item, never silence. The
names of those modules that the gate's readers use are importable from here too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from matrix.analyze.census import censuses_from_runs
from matrix.analyze.fingerprint import cell_probe
from matrix.analyze.profile import load_map
from matrix.catalog import PROBES_BY_NAME
from matrix.core import SKIPPED, Column, Release
from matrix.gate import controls, lowering
from matrix.gate.columns import Columns, Pair, columns_of, machines_on_one_side, pair_columns
from matrix.gate.config import AcceptedChange
from matrix.gate.findings import (
    ACCEPTED,
    BEHAVIOUR,
    BREAKING,
    FAILED_TESTS,
    LOWERING_EQUAL,
    MAY_SLOW,
    PASSED_TEST,
    REGRESSION,
    RELAXATION,
    UNSAFE_KINDS,
    Comparison,
    GateFinding,
)
from matrix.gate.probe_compare import (
    TARGET_UNSUPPORTED,
    ProbePair,
    Upgrade,
    compare_probe,
    compare_resources,
    concerned_uses,
)
from matrix.gate.selection import Selection, runs_for, select_runs
from matrix.gate.sides import DataError, Sides
from matrix.gate.user_compare import compare_kernels, compare_tests, parse_tests, test_finding_name
from matrix.results import Run
from matrix.scan import Finding as ScanFinding

__all__ = [
    "ACCEPTED",
    "BEHAVIOUR",
    "BREAKING",
    "FAILED_TESTS",
    "LOWERING_EQUAL",
    "MAY_SLOW",
    "PASSED_TEST",
    "REGRESSION",
    "RELAXATION",
    "TARGET_UNSUPPORTED",
    "UNSAFE_KINDS",
    "Comparison",
    "DataError",
    "GateFinding",
    "ProbePair",
    "Selection",
    "Sides",
    "Upgrade",
    "compare",
    "compare_kernels",
    "compare_tests",
    "concerned_uses",
    "parse_tests",
    "runs_for",
    "select_runs",
    "test_finding_name",
]


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
    out = Comparison()
    upgrade = Upgrade(baseline, candidate, tuple(accepted))
    base_cols, cand_cols = columns_of(base_runs), columns_of(cand_runs)
    uses_by_probe: dict[str, list[ScanFinding]] = {}
    for f in scan_findings:
        if f.rule.probe:
            # a rule on one fingerprint cell (probe = "fp.rules", cell = "global_annotated") is
            # compared where that cell is: fp.rules[global_annotated]
            key = f.rule.probe if f.rule.cell is None else cell_probe(f.rule.probe, f.rule.cell)
            uses_by_probe.setdefault(key, []).append(f)

    pairs = pair_columns(out, base_cols, cand_cols, baseline, candidate, uninstalled or {})
    machines_on_one_side(out, base_runs, cand_runs, baseline, candidate)
    if not pairs and (base_cols or cand_cols):
        out.undecidable.append(
            f"no backend/target recorded for both {baseline} and {candidate}: nothing to compare"
        )
    censuses = {**censuses_from_runs(base_runs), **censuses_from_runs(cand_runs)}
    seen = _compare_pairs(out, upgrade, (base_cols, cand_cols), pairs, uses_by_probe, censuses)
    # a values case's lowering change is decided by its values where the GPU measured them
    lowering.judge(out, base_runs, cand_runs, baseline, candidate, load_map())

    # A scanned use of an API whose probe the candidate never ran cannot be vouched for.
    for probe, uses in sorted(uses_by_probe.items()):
        if any(u.rule.breaking for u in uses) and probe not in seen:
            locs = ", ".join(f"{u.path}:{u.line}" for u in uses[:5])
            out.undecidable.append(
                f"the scanned code uses what probe {probe!r} measures ({locs}) but no compared "
                f"backend recorded {probe} for {candidate}"
            )
    sides = Sides(base_runs, cand_runs, baseline, candidate)
    compare_tests(out, sides)
    compare_kernels(out, sides)
    # A change that breaks scanned code is reported once, as breaking, not again as a change.
    broken = {(f.probe, f.where) for f in out.findings if f.kind == BREAKING}
    out.findings = [
        f
        for f in out.findings
        if not (f.kind in (BEHAVIOUR, ACCEPTED) and (f.probe, f.where) in broken)
    ]
    return out


def _compare_pairs(
    out: Comparison,
    upgrade: Upgrade,
    cols: tuple[Columns, Columns],
    pairs: Sequence[Pair],
    uses_by_probe: Mapping[str, list[ScanFinding]],
    censuses: Mapping[str, object],
) -> set[str]:
    """Compare every probe of every paired column into ``out``; the probes the candidate ran
    (not skipped) in some compared column."""
    base_cols, cand_cols = cols
    seen_on_candidate: set[str] = set()
    for b_key, c_key, shown in pairs:
        out.compared.append(shown)
        where = str(Column(b_key[0], b_key[1]))
        b_res, c_res = base_cols[b_key], cand_cols[c_key]
        compare_resources(out, upgrade, where, b_res, c_res)
        seen_on_candidate.update(p for p in c_res if c_res[p].status != SKIPPED)
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
            uses = concerned_uses(scanned, b, c, upgrade.candidate, censuses, upgrade.baseline)
            if not uses and b is not None and c is not None and b.status == c.status:
                spec = PROBES_BY_NAME.get(probe)
                if spec is None or spec.behavioural:
                    continue  # the same observation on both sides: compare_probe adds nothing
            start = len(out.findings)
            compare_probe(out, upgrade, ProbePair(probe, where, shown, b, c, uses))
            off = [f"{u.path}:{u.line}" for u in scanned if u not in uses]
            for found in out.findings[start:]:
                found.ruled_out = off
    return seen_on_candidate
