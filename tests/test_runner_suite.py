"""A team's test that kills its parent kills only pytest, never the runner (issue 23): the
runner records that test ``crashed`` with the signal, restarts pytest past it, and the tests
after it still run. Run in a child process: before the fix, the kill took the runner (here:
that child) with it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUITE = ROOT / "tests" / "fixtures" / "kills_parent_suite"

RUN_SUITE = (
    "import json, sys\n"
    "from pathlib import Path\n"
    "from matrix.measure import suite\n"
    "tests, _ = suite.run_suite(Path(sys.argv[1]), Path(sys.argv[2]), lambda *a: None, 60)\n"
    "print(json.dumps(tests))\n"
)


def test_a_test_that_kills_its_parent_costs_only_itself(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-c", RUN_SUITE, str(SUITE), str(tmp_path)]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"the runner died ({proc.returncode}): {proc.stderr[-2000:]}"
    tests = {t["id"].rsplit("::", 1)[-1]: t for t in json.loads(proc.stdout.splitlines()[-1])}
    assert tests["test_before"]["outcome"] == "passed"
    assert tests["test_kills_its_parent"]["outcome"] == "crashed"
    assert "SIGKILL" in tests["test_kills_its_parent"]["detail"]
    assert tests["test_after"]["outcome"] == "passed"  # the restart skipped the killer
    # pytest died with its stand-in parent at once, not after the test's 30 s sleep.
    assert tests["test_kills_its_parent"]["seconds"] < 20


RETURNS_SUITE = ROOT / "tests" / "fixtures" / "kills_parent_returns_suite"


def _suite_outcomes(suite: Path, tmp_path: Path) -> dict[str, dict]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-c", RUN_SUITE, str(suite), str(tmp_path)]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"the runner died ({proc.returncode}): {proc.stderr[-2000:]}"
    return {t["id"].rsplit("::", 1)[-1]: t for t in json.loads(proc.stdout.splitlines()[-1])}


def test_a_test_that_kills_its_parent_and_returns_at_once_is_the_one_recorded(tmp_path):
    """The killer returns at once and outlives its parent (the fixture clears its death signal):
    pytest would report it passed and run the next test, which the stand-in's death would then
    be blamed on. The child asks its stand-in before it reports a test done."""
    tests = _suite_outcomes(RETURNS_SUITE, tmp_path)
    killer = tests["test_kills_its_parent_and_returns"]
    assert killer["outcome"] == "crashed", tests
    assert "SIGKILL" in killer["detail"]
    assert tests["test_before"]["outcome"] == "passed"
    assert tests["test_after"]["outcome"] == "passed", tests  # run again past the killer
    assert set(tests) == {"test_before", "test_kills_its_parent_and_returns", "test_after"}
