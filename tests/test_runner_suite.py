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
