"""A team's own pytest suite through the matrix (`--tests`): per-test outcomes from JUnit XML."""

import os
import subprocess
import sys
from pathlib import Path

from matrix.measure.junit import parse_junit
from matrix.measure.results import read_raw

ROOT = Path(__file__).resolve().parent.parent
SUITE = ROOT / "tests" / "fixtures" / "user_suite"

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="3">
<testcase classname="tests.k" name="test_ok" time="0.01"/>
<testcase classname="tests.k" name="test_bad" time="0.02">
  <failure message="AssertionError: deliberately wrong">trace</failure></testcase>
<testcase classname="tests.k" name="test_skip" time="0"><skipped message="not here"/></testcase>
<testcase classname="tests.k" name="test_err" time="0"><error message="fixture broke"/></testcase>
</testsuite></testsuites>"""


def test_parse_junit(tmp_path):
    path = tmp_path / "r.xml"
    path.write_text(JUNIT)
    tests = {t["id"]: (t["outcome"], t["detail"]) for t in parse_junit(path)}
    assert tests == {
        "tests.k::test_ok": ("passed", ""),
        "tests.k::test_bad": ("failed", "AssertionError: deliberately wrong"),
        "tests.k::test_skip": ("skipped", "not here"),
        "tests.k::test_err": ("error", "fixture broke"),
    }


def test_runner_records_each_user_test(tmp_path):
    out = tmp_path / "raw.json"
    env = {**os.environ, "MATRIX_PROBE_PACKAGE": "tests.fixtures.probes", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "matrix.run", "--out", str(out), "--backends", "interpret",
         "--probes", "ok_first", "--tests", str(SUITE), "--quiet"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    run = read_raw(out)
    outcomes = {t["id"].split("::")[-1]: t["outcome"] for t in run.extra["tests"]}
    assert outcomes == {"test_passes": "passed", "test_fails": "failed", "test_skipped": "skipped"}


def test_a_suite_that_cannot_run_is_an_error_not_a_pass(tmp_path):
    from matrix.measure.junit import run_suite

    empty = tmp_path / "empty_suite"
    empty.mkdir()
    tests = run_suite(empty, tmp_path, lambda *a: None)
    assert len(tests) == 1 and tests[0]["outcome"] == "error"
