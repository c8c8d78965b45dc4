"""The team's own code on both sides: its test suite's outcomes and its kernels' compiles,
compared into findings (the decisions on kernels: ``matrix.gate.kernel_compiles``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from matrix.core import pair_numpy
from matrix.gate import kernel_compiles as gk
from matrix.gate import resource_changes as rc
from matrix.gate import user_tests as ut
from matrix.gate.findings import (
    BEHAVIOUR,
    BREAKING,
    FAILED_TESTS,
    MAY_SLOW,
    PASSED_TEST,
    REGRESSION,
    Comparison,
    GateFinding,
)
from matrix.gate.sides import DataError, Sides
from matrix.results import Run


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


def compare_tests(out: Comparison, sides: Sides) -> None:
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
