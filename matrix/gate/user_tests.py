"""What a team's test that stopped passing says about Triton, and whether two runs of a suite
can be compared at all.

- ``classify(record)``: the outcome class of a failed test (``environment``, ``timeout``,
  ``crashed``, ``triton-refused``, ``wrong-result``, ``failed``) from the ordered rules in
  ``matrix/data/test_outcomes.toml``. ``environment`` (a missing non-Triton module, no GPU) is
  never a Triton regression.
- ``suite_differences(base, cand)``: what differs between the suites two sides ran (files,
  pytest options, per-test limit: ``matrix.measure.suite.suite_identity``); any difference
  makes their tests incomparable.
- ``collection_errors(records)``: the test modules that could not be collected (imported):
  a baseline test of such a module that passed has regressed, not vanished.
- ``evidence(record, kernels)``: the lines a regression shows: its class, its detail, its last
  failure lines and the kernels it launched.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from matrix.core import TEST_ERROR
from matrix.measure import test_device
from matrix.measure.outcome_rules import OutcomeRule, read_rules
from matrix.results import Run

RULES_FILE = Path(__file__).resolve().parent.parent / "data" / "test_outcomes.toml"
ENVIRONMENT = "environment"
CLASSES = (ENVIRONMENT, "timeout", "crashed", "triton-refused", "wrong-result", "failed")
# The suite's identity keys that must agree (matrix.measure.suite.suite_identity).
SUITE_KEYS = ("path", "hash", "pytest_args", "test_timeout_s", "device", "capability")
FAILURE_LINES = 15


@functools.cache
def load_rules(path: Path = RULES_FILE) -> tuple[OutcomeRule, ...]:
    """The ordered ``[[rule]]`` rules of ``path`` (``matrix.measure.outcome_rules``)."""
    return read_rules(path, "rule", CLASSES)


def classify(record: Mapping[str, Any]) -> tuple[str, str]:
    """(class, why) of a failed test's record (``matrix.measure.suite``'s TEST)."""
    outcome = str(record.get("outcome", ""))
    text = f"{record.get('detail', '')}\n{record.get('failure', '')}"
    for rule in load_rules():
        if rule.applies(outcome, text):
            return rule.cls, rule.why
    raise AssertionError("the last rule matches everything (load_rules checks it)")


def records_of_tests(run: Run) -> dict[str, dict[str, Any]]:
    """``{test id: record}`` of a run (records the gate's ``parse_tests`` has validated)."""
    raw = run.extra.get("tests")
    if not isinstance(raw, list):
        return {}
    return {t["id"]: t for t in raw if isinstance(t, dict) and isinstance(t.get("id"), str)}


def module_of(test_id: str) -> str:
    """The file part of a pytest node id: ``tests/test_k.py::test_a[1]`` -> ``tests/test_k.py``."""
    return test_id.split("::", 1)[0]


def collection_errors(records: Mapping[str, Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """``{module: record}`` of the modules that could not be collected (an error entry whose
    id names a file, not a test)."""
    return {
        tid: rec
        for tid, rec in records.items()
        if "::" not in tid and rec.get("outcome") == TEST_ERROR and tid.endswith(".py")
    }


def _identity(runs: Sequence[Run]) -> list[str]:
    return sorted(
        {
            json.dumps({k: s.get(k) for k in SUITE_KEYS}, sort_keys=True)
            for run in runs
            if isinstance(s := run.extra.get("suite"), dict)
            and isinstance(run.extra.get("tests"), list)
        }
    )


def suite_differences(
    base: Sequence[Run], cand: Sequence[Run], baseline: str, candidate: str
) -> list[str]:
    """One line per way the suites of the two sides differ; [] when they ran the same suite
    the same way. A key one side did not record is a difference (fail closed)."""
    b, c = _identity(base), _identity(cand)
    if not b or not c or b == c:
        return []
    out = []
    for side, ids in ((baseline, b), (candidate, c)):
        if len(ids) > 1:
            out.append(f"the cells of {side} ran the suite in {len(ids)} different ways")
    b0, c0 = json.loads(b[0]), json.loads(c[0])
    for key in SUITE_KEYS:
        if b0.get(key) != c0.get(key):
            out.append(
                f"suite {key}: {b0.get(key)!r} on {baseline}, {c0.get(key)!r} on {candidate}"
            )
    return out


def redirected(runs: Sequence[Run]) -> str | None:
    """What the tests' outcomes are when a run ran them under the CUDA-to-CPU redirect
    (``matrix.measure.test_device``), else None."""
    for run in runs:
        s = run.extra.get("suite")
        if isinstance(s, dict) and s.get("device") == test_device.CUDA_ON_CPU:
            return f"{test_device.MEANING}, faked capability {s.get('capability')}"
    return None


def start_failures(runs: Sequence[Run], release: str) -> list[str]:
    """One line per run of ``release`` whose suite could not start, with the failing imports."""
    out = []
    for run in runs:
        tests = run.extra.get("tests")
        if isinstance(tests, list) and (line := test_device.start_line(tests)):
            out.append(f"{release} (numpy {run.env.get('numpy')}): {line}")
    return out


def not_collected_lines(runs: Sequence[Run], release: str) -> list[str]:
    """One line per run of ``release`` whose suite started but left test modules that could
    not be imported (their tests never ran, on this side), with the failing imports."""
    out = []
    for run in runs:
        tests = run.extra.get("tests")
        if isinstance(tests, list) and (line := test_device.not_collected_line(tests)):
            out.append(f"{release} (numpy {run.env.get('numpy')}): {line}")
    return out


def kernels_by_test(runs: Sequence[Run]) -> dict[str, list[str]]:
    """``{test id: [kernel, ...]}``: the kernels each test was the first to launch."""
    out: dict[str, list[str]] = {}
    for run in runs:
        for launch in run.extra.get("launches") or ():
            if isinstance(launch, dict) and isinstance(launch.get("test"), str):
                kernels = out.setdefault(launch["test"], [])
                if launch.get("kernel") not in kernels:
                    kernels.append(str(launch.get("kernel")))
    return out


def evidence(record: Mapping[str, Any], cls: str, why: str, kernels: Sequence[str]) -> list[str]:
    """A regression's lines after the two outcomes: class, detail, last lines, kernels."""
    lines = [f"outcome class: {cls} ({why})"]
    if record.get(test_device.CLASS_KEY):  # under the CUDA-to-CPU redirect: the interpreter's
        lines.append(f"under the redirect: {record[test_device.CLASS_KEY]}")
    detail = " ".join(str(record.get("detail", "")).split())
    if detail:
        lines.append(f"detail: {detail[:300]}")
    tail = [ln for ln in str(record.get("failure", "")).splitlines() if ln.strip()]
    if tail:
        lines.append(
            "last lines: " + " | ".join(ln.strip() for ln in tail[-FAILURE_LINES:])[-1500:]
        )
    if kernels:
        shown = ", ".join(kernels[:8]) + (
            f" and {len(kernels) - 8} more" if len(kernels) > 8 else ""
        )
        lines.append(f"kernels it launched: {shown}")
    return lines
