"""A team's suite that would hang the cell runner or lose outcomes (issue 40): one test per case.

Each runs the suite through ``matrix.measure.suite`` in a child process with a wall-clock
bound, so that a regression fails here instead of hanging this suite.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from matrix.core import TEST_SKIPPED
from matrix.measure.suite import NOT_RUN, not_run_records
from matrix.measure.supervise import timed_out_record

ROOT = Path(__file__).resolve().parent.parent

# argv: suite, workdir, per-test limit, suite limit, exit grace, pytest args as JSON.
RUN_SUITE = (
    "import json, sys\n"
    "from pathlib import Path\n"
    "from matrix.measure import suite\n"
    "suite.SUITE_EXIT_GRACE_S = float(sys.argv[5])\n"
    "lines = []\n"
    "got = suite.run_suite_recorded(Path(sys.argv[1]), Path(sys.argv[2]), lambda *a: "
    "lines.append(' '.join(map(str, a))), float(sys.argv[3]), json.loads(sys.argv[6]), "
    "suite_timeout_s=float(sys.argv[4]))\n"
    "print(json.dumps({'tests': got.tests, 'log': lines}))\n"
)


def run_suite_bounded(
    suite: Path,
    tmp_path: Path,
    *,
    test_limit: float = 60,
    suite_limit: float = 600,
    grace: float = 30,
    pytest_args: tuple[str, ...] = (),
    bound_s: float = 150,
) -> tuple[dict[str, dict], list[str], float]:
    """({test name: record}, console lines, seconds) of one run of ``suite``."""
    cmd = [sys.executable, "-c", RUN_SUITE, str(suite), str(tmp_path / "w"), str(test_limit),
           str(suite_limit), str(grace), json.dumps(list(pytest_args))]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=bound_s)
    seconds = time.monotonic() - t0
    assert proc.returncode == 0, f"the runner failed ({proc.returncode}): {proc.stderr[-2000:]}"
    got = json.loads(proc.stdout.splitlines()[-1])
    tests = {t["id"].split("::")[-1]: t for t in got["tests"]}
    return tests, got["log"], seconds


def write(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


THREADS = """
import threading
STOP = threading.Event()
def test_a_leaves_500_threads():
    for _ in range(500):
        threading.Thread(target=STOP.wait).start()
def test_b_after():
    pass
"""


def test_a_test_that_leaves_threads_running_costs_the_grace_and_loses_nothing(tmp_path):
    # Before: pytest finished, the interpreter waited for the 500 threads at exit, and the
    # runner waited for it with no bound (this test's child would hit its 150 s bound).
    suite = write(tmp_path / "s", {"test_threads.py": THREADS})
    tests, log, seconds = run_suite_bounded(suite, tmp_path, grace=2)
    assert {n: t["outcome"] for n, t in tests.items()} == {
        "test_a_leaves_500_threads": "passed",
        "test_b_after": "passed",
    }
    assert seconds < 60
    assert any("had not exited 2 s later" in line for line in log), log


SLOW = """
import time
def test_a_quick():
    pass
def test_b_slow():
    time.sleep(300)
def test_c_never_reached():
    pass
"""


@pytest.mark.slow  # waits out a 30 s suite limit by design: tests_slow runs it (CI too)
def test_the_suite_as_a_whole_is_bounded_and_keeps_what_finished(tmp_path):
    suite = write(tmp_path / "s", {"test_slow.py": SLOW})
    # 30 s: pytest's start and test_a fit in it even on a loaded machine; test_b does not.
    tests, _, seconds = run_suite_bounded(suite, tmp_path, test_limit=400, suite_limit=30)
    assert seconds < 120
    assert tests["test_a_quick"]["outcome"] == "passed"
    for name in ("test_b_slow", "test_c_never_reached"):
        assert tests[name]["outcome"] == TEST_SKIPPED, tests[name]
        assert tests[name]["detail"].startswith(NOT_RUN + "the suite was stopped"), tests[name]
    stopped = [t for t in tests.values() if t["outcome"] == "error"]
    assert len(stopped) == 1 and "30 s limit" in stopped[0]["detail"], tests


TEARDOWN_HANGS = """
import time
import pytest
@pytest.fixture(scope="session")
def resource():
    yield 1
    time.sleep(120)
def test_a_fine(resource):
    pass
def test_b_fails(resource):
    assert resource == 2, "the real failure"
"""


def test_a_session_teardown_that_hangs_keeps_the_last_tests_real_failure(tmp_path):
    # Before: test_b's record was a bare ``timeout``; its assertion text was lost.
    suite = write(tmp_path / "s", {"test_teardown.py": TEARDOWN_HANGS})
    tests, _, _ = run_suite_bounded(suite, tmp_path, test_limit=5)
    assert tests["test_a_fine"]["outcome"] == "passed"
    failed = tests["test_b_fails"]
    assert failed["outcome"] == "failed", failed
    assert "the real failure" in failed["detail"] + failed.get("failure", "")
    assert "teardown ran past the 5 s limit" in failed["detail"]


def test_a_hang_after_a_passing_call_is_a_timeout_that_says_so():
    rec = timed_out_record("t", {"outcome": "passed", "detail": ""}, 6.0, 5.0)
    assert rec["outcome"] == "timeout"
    assert "its call ended passed, then its teardown ran past the 5 s limit" in rec["detail"]
    assert timed_out_record("t", None, 6.0, 5.0)["detail"].startswith("ran past the 5 s")


FIRST_FAILS = """
def test_a_fails():
    assert 0, "first"
def test_b_passes():
    pass
"""


def test_x_in_the_suites_pytest_ini_is_lifted_and_said(tmp_path):
    # Before: pytest stopped at test_a; test_b vanished ("0 of 1 passed").
    suite = write(tmp_path / "s", {"pytest.ini": "[pytest]\naddopts = -x\n",
                                   "test_first.py": FIRST_FAILS})  # fmt: skip
    tests, log, _ = run_suite_bounded(suite, tmp_path)
    assert {n: t["outcome"] for n, t in tests.items()} == {
        "test_a_fails": "failed",
        "test_b_passes": "passed",
    }
    assert any("lifted" in line for line in log), log


def test_x_given_on_the_command_line_stays_and_names_what_it_stopped(tmp_path):
    suite = write(tmp_path / "s", {"test_first.py": FIRST_FAILS})
    tests, _, _ = run_suite_bounded(suite, tmp_path, pytest_args=("-x",))
    assert tests["test_a_fails"]["outcome"] == "failed"
    assert tests["test_b_passes"]["outcome"] == TEST_SKIPPED
    assert tests["test_b_passes"]["detail"].startswith(NOT_RUN + "pytest stopped early")


def test_not_run_records_name_only_tests_without_a_record():
    got = not_run_records(["a", "b", "b", "c"], {"a": {}}, "why")
    assert [(r["id"], r["detail"]) for r in got] == [("b", NOT_RUN + "why"), ("c", NOT_RUN + "why")]


def test_a_team_module_named_matrix_is_the_teams_and_the_plugin_still_loads(tmp_path):
    # Before: ``-p matrix.measure.capture`` found the team's matrix.py first: one error.
    suite = write(
        tmp_path / "s",
        {
            "matrix.py": "VALUE = 3\n",
            "test_uses_it.py": "import matrix\ndef test_own_module():\n"
            "    assert matrix.VALUE == 3, matrix.__file__\n",
        },
    )
    tests, log, _ = run_suite_bounded(suite, tmp_path)
    assert {n: t["outcome"] for n, t in tests.items()} == {"test_own_module": "passed"}, tests
    assert any("1 of 1 passed" in line for line in log), log
