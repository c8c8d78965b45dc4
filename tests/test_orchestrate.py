"""The matrix's faults end up recorded, never fatal (issue: nonexistent release, no wheel for
this Python, a numpy that cannot be installed, an interrupted run), each with a raw file that
says what happened while the other cells complete.

These build real environments with uv (the package index is reachable here and in CI); the
interrupted-run test uses stand-in probes (tests/fixtures/probes) so that a cell takes seconds.
"""

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from matrix.exitcodes import ExitCode
from matrix.measure import cells as cells_mod
from matrix.measure.envs import EnvSpec, classify_failure
from matrix.results import (
    Result,
    Run,
    partial_path,
    raw_files,
    read_raw,
    run_id_of,
    write_raw,
)
from tests.fixtures.processes import left_behind
from tests.support import committed_raw

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow


def _orchestrate(tmp: Path, envs: Path, *args: str, env: dict | None = None, **popen):
    cmd = [sys.executable, "-m", "matrix.measure.orchestrate", "--raw-dir", str(tmp / "raw"),
           "--envs-dir", str(envs), "--no-report", "--jobs", "1", *args]  # fmt: skip
    return subprocess.Popen(cmd, cwd=ROOT, env={**os.environ, **(env or {})}, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, **popen)  # fmt: skip


@pytest.fixture(scope="module")
def envs_dir(matrix_envs_dir):
    return matrix_envs_dir  # shared with the other modules that build cells (conftest.py)


def test_install_faults_are_recorded_and_other_cells_complete(tmp_path, envs_dir):
    """3.99.0 does not exist (and is not in the data file); numpy 1.99.0 does not exist;
    1.1.1 is older than the harness supports."""
    proc = _orchestrate(tmp_path, envs_dir, "--releases", "3.99.0,3.9.0",
                        "--numpy", "2.4.6,1.99.0", "--no-such-flag")  # fmt: skip
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 2 and "unrecognized arguments" in out  # bad arguments are loud

    proc = _orchestrate(tmp_path, envs_dir, "--releases", "1.1.1,3.9.0")
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 2 and "1.1.1 older than 3.0.0" in out, out  # refused up front
    assert not (tmp_path / "raw").exists() or not raw_files(tmp_path / "raw")

    env = {"MATRIX_PROBE_PACKAGE": "tests.fixtures.probes", "PYTHONPATH": str(ROOT)}
    # Only the fast fixture probes that pass, so the one good cell takes seconds.
    proc = _orchestrate(tmp_path, envs_dir, "--releases", "3.99.0,3.9.0",
                        "--numpy", "2.4.6,1.99.0", "--timeout", "5", env=env)  # fmt: skip
    out, _ = proc.communicate(timeout=900)
    assert proc.returncode == 2, out  # a release that does not exist: bad input, as 1.1.1
    raw = tmp_path / "raw"
    status = {run_id_of(p): read_raw(p).install["status"] for p in raw_files(raw)}
    # 3.99.0 is not in the data file: no raw file, so no page grows a 3.99.0 column.
    assert status == {
        "triton-3.9.0-numpy-1.99.0": "failed",
        "triton-3.9.0-numpy-2.4.6": "ok",
    }, out
    assert "no such release, so no raw file: 3.99.0" in out
    assert "numpy==1.99.0" in read_raw(raw / "triton-3.9.0-numpy-1.99.0.json.gz").install["detail"]
    good = read_raw(raw / "triton-3.9.0-numpy-2.4.6.json.gz")
    assert good.complete and good.results, "the installable cell still ran its probes"
    assert "install no-such-release" in out and "does not exist" in out  # the progress line


def _wait_for(what: str, ready, proc: subprocess.Popen, within_s: float) -> None:
    """Poll ``ready()`` until it holds; fail at once (with the run's output) if ``proc`` ended
    first, and after ``within_s`` seconds at the latest: never a silent wait to a far deadline."""
    deadline = time.monotonic() + within_s
    while not ready():
        if proc.poll() is not None:
            pytest.fail(f"the matrix ended (exit {proc.returncode}) before {what}: "
                        f"{proc.communicate()[0]}")  # fmt: skip
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"no {what} within {within_s:g} s: {proc.communicate()[0]}")
        time.sleep(0.2)


def test_interrupted_run_is_finished_by_a_rerun(tmp_path, envs_dir):
    """Kill the matrix mid-cell: the finished cell is kept, the partial one is resumed.

    Three probes (the first, a slow one, the last) are enough for a kill mid-cell and a resume;
    the hang and crash probes would add a timeout per cell and test nothing more here. The
    slow probe is slow only in the second cell (SLOW_PROBE_ONLY_NUMPY), so each kill lands
    while that cell runs, however fast the machine: the first cell finishes in a second. The
    cell with aot (numpy 2.4.6, the default aot numpy) starts first (longest first), so the
    interpret-only numpy 2.3.5 cell is the second."""
    tag = f"interrupted-{os.getpid()}-{time.monotonic_ns()}"
    env = {"MATRIX_PROBE_PACKAGE": "tests.fixtures.probes", "PYTHONPATH": str(ROOT),
           "FIXTURE_PROBES": "ok_first,slow,ok_last", "SLOW_PROBE_SECONDS": "600",
           "SLOW_PROBE_ONLY_NUMPY": "2.3.5", "FAULT_TAG": tag}  # fmt: skip
    args = ("--releases", "3.9.0", "--numpy", "2.3.5,2.4.6", "--timeout", "900")
    raw = tmp_path / "raw"
    first, second = (
        raw / "triton-3.9.0-numpy-2.4.6.json.gz",
        raw / "triton-3.9.0-numpy-2.3.5.json.gz",
    )
    side = partial_path(second)  # an unfinished cell lives beside its raw file

    def running_second() -> bool:
        return side.exists() and bool(read_raw(side).results)

    proc = _orchestrate(tmp_path, envs_dir, *args, env=env, start_new_session=True)
    # Building two environments from uv's cache takes seconds; 300 s is for a loaded machine.
    _wait_for("the first cell finished", lambda: first.exists() and read_raw(first).complete,
              proc, 300)  # fmt: skip
    _wait_for("the second cell started", running_second, proc, 120)
    proc.kill()  # the orchestrator alone: its runner and their children must die with it
    proc.communicate()
    assert left_behind(tag) == []
    assert not second.exists()
    before = side.stat().st_mtime_ns
    proc = _orchestrate(tmp_path, envs_dir, *args, env=env, start_new_session=True)
    # The resumed runner rewrites the partial file first, then sleeps in the slow probe.
    _wait_for("the second cell resumed", lambda: side.stat().st_mtime_ns != before, proc, 120)
    os.killpg(proc.pid, signal.SIGKILL)  # a kill mid-cell: nothing gets to clean up
    proc.communicate()
    assert left_behind(tag) == []  # the runner's own session too
    partial = read_raw(side)
    assert not partial.complete and partial.results
    kept_mtime = first.stat().st_mtime

    proc = _orchestrate(tmp_path, envs_dir, *args, env={**env, "SLOW_PROBE_SECONDS": "0.1"})
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0, out
    assert first.stat().st_mtime == kept_mtime, "a complete cell must not be redone"
    assert "[kept: already complete]" in out and "[resumed]" in out
    done = read_raw(second)
    assert done.complete
    assert done.results[0].seconds == partial.results[0].seconds  # kept, not redone


def test_classify_failure_messages():
    spec = EnvSpec(python="3.11", triton="3.99.0", numpy="2.4.6", torch="2.13.0")
    uv_missing = (
        "error: No solution found when resolving dependencies\n  cause: Because there "
        "is no version of triton==3.99.0 and you require triton==3.99.0, ..."
    )
    assert classify_failure(uv_missing, spec)[0] == "no-such-release"
    uv_wheel = ("cause: Because triton==1.1.1 has no wheels with a matching Python ABI tag "
                "(e.g., `cp311`) and you require triton==1.1.1, ...")  # fmt: skip
    assert classify_failure(uv_wheel, spec)[0] == "no-wheel"
    numpy = "cause: Because there is no version of numpy==2.4.6 and you require numpy==2.4.6"
    status, detail = classify_failure(numpy, spec)
    assert status == "failed" and "numpy==2.4.6" in detail
    assert classify_failure("network unreachable", spec) == ("failed", "network unreachable")


def test_plan_runs_aot_once_per_release():
    config = cells_mod.load_matrix()
    planned = cells_mod.plan(config)
    assert len(planned) == len(config.releases) * len(config.numpy)
    aot = [c for c in planned if "aot" in c.backends]
    assert sorted(c.release for c in aot) == sorted(config.releases)
    assert all(c.numpy == config.aot_numpy for c in aot)


def test_bad_selection_is_refused():
    with pytest.raises(cells_mod.MatrixConfigError, match="--releases"):
        cells_mod.parse_list("3.9.0,banana", "--releases")
    with pytest.raises(cells_mod.MatrixConfigError, match="--releases"):
        cells_mod.parse_list(" , ", "--releases")


FIXTURES = {"MATRIX_PROBE_PACKAGE": "tests.fixtures.probes", "PYTHONPATH": str(ROOT)}


def test_two_runs_at_once_one_waits_and_both_end_correct(tmp_path, envs_dir):
    tag = f"twice-{os.getpid()}-{time.monotonic_ns()}"
    env = {**FIXTURES, "SLOW_PROBE_SECONDS": "2", "FAULT_TAG": tag}
    # The hang probe sleeps through the per-probe limit twice in each run (a sleeping probe's
    # timeout is doubted once: runner.ProbeClock), one run after the other: 4 x 10 s, not
    # 4 x 60 (the limit counts from the probe's start, not the child's imports).
    args = ("--releases", "3.9.0", "--numpy", "2.4.6", "--force", "--timeout", "10")
    first = _orchestrate(tmp_path, envs_dir, *args, env=env)
    second = _orchestrate(tmp_path, envs_dir, *args, env=env)
    out1, _ = first.communicate(timeout=900)
    out2, _ = second.communicate(timeout=900)
    assert first.returncode == 0 and second.returncode == 0, out1 + out2
    assert "waiting for it to finish" in out1 + out2  # the second said why it waited
    run = read_raw(tmp_path / "raw" / "triton-3.9.0-numpy-2.4.6.json.gz")
    assert run.complete
    assert {r.probe: r.status for r in run.results}["ok_last"] == "pass"
    assert len(run.results) == 7 and "No module named" not in str(run.results)
    assert left_behind(tag) == []


def test_ctrl_c_stops_everything_with_one_line(tmp_path, envs_dir):
    tag = f"ctrlc-{os.getpid()}-{time.monotonic_ns()}"
    env = {**FIXTURES, "SLOW_PROBE_SECONDS": "60", "FAULT_TAG": tag}
    proc = _orchestrate(tmp_path, envs_dir, "--releases", "3.9.0", "--numpy", "2.4.6",
                        "--force", env=env, start_new_session=True)  # fmt: skip
    side = partial_path(tmp_path / "raw" / "triton-3.9.0-numpy-2.4.6.json.gz")
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and not (side.exists() and read_raw(side).results):
        time.sleep(0.3)
    os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C sends: the whole group
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, out
    assert "Traceback" not in out and "matrix: interrupted" in out, out
    assert left_behind(tag) == []


def test_unreadable_raw_file_is_moved_aside_and_redone_then_reused(tmp_path, envs_dir):
    raw = tmp_path / "raw"
    raw.mkdir()
    cell = raw / "triton-3.9.0-numpy-2.4.6.json.gz"
    cell.write_bytes(b'{"schema": 2, "runs": [\xff]}')
    env = {**FIXTURES, "SLOW_PROBE_SECONDS": "0.1"}
    # 10 s: the hang probe waits out the per-probe limit (twice: runner.ProbeClock), and how
    # long that is is not the point here.
    proc = _orchestrate(tmp_path, envs_dir, "--releases", "3.9.0", "--numpy", "2.4.6",
                        "--timeout", "10", env=env)  # fmt: skip
    out, _ = proc.communicate(timeout=900)
    assert proc.returncode == 0, out
    aside = list(raw.glob("*.unreadable-*"))
    assert len(aside) == 1 and aside[0].read_bytes().endswith(b"\xff]}"), out  # kept
    assert "moved it aside" in out
    assert read_raw(cell).complete and read_raw(cell).install["status"] == "ok"

    # A rerun reuses it and says so; a report folder it cannot write is a message, not a crash.
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    # matrix.orchestrate: the cells, then the report step (matrix.measure alone builds none).
    cmd = [sys.executable, "-m", "matrix.orchestrate", "--raw-dir", str(raw),
           "--envs-dir", str(envs_dir), "--releases", "3.9.0", "--numpy", "2.4.6",
           "--report-dir", str(blocker / "pages")]  # fmt: skip
    done = subprocess.run(cmd, cwd=ROOT, env={**os.environ, **env}, capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    text = done.stdout + done.stderr
    assert "reused 1 of 1 cells" in text and "--force" in text, text
    # a machine fault while writing pages is "could not decide" (matrix.exitcodes), not a verdict
    assert done.returncode == ExitCode.UNDECIDABLE, text
    assert "could not write" in text and "Traceback" not in text, text


def test_discover_with_releases_is_refused():
    cmd = [sys.executable, "-m", "matrix.measure.orchestrate", "--discover", "--releases", "3.9.0"]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 2 and "--discover adds releases" in proc.stderr


def test_ci_cells_compile_aot_once_per_release():
    config = cells_mod.load_matrix()
    per_cell = [
        c
        for n in config.numpy
        for c in cells_mod.plan(config, releases=["3.9.0"], numpys=[n], aot_numpy=config.aot_numpy)
    ]
    assert [c.numpy for c in per_cell if "aot" in c.backends] == [config.aot_numpy]


def test_the_report_step_tells_measured_raw_files_from_kept_ones(monkeypatch, capsys, tmp_path):
    # A second run that keeps every cell must not say it measured the files an earlier run left.
    import argparse

    import matrix.orchestrate as orchestrate
    import matrix.report.__main__ as report_main

    raw_dir = tmp_path / "reports" / "raw"
    changed = {
        str(tmp_path / "reports"): [
            "reports/raw/a.json",
            "reports/raw/b.json",
            "reports/index.html",
        ],
        str(raw_dir): ["reports/raw/a.json", "reports/raw/b.json"],
    }
    monkeypatch.setattr(orchestrate, "changed_committed", lambda folder: changed[str(folder)])
    monkeypatch.setattr(report_main, "main", lambda argv: 0)
    args = argparse.Namespace(raw_dir=raw_dir, report_dir=None)
    assert orchestrate.report_step(args, {"a.json"}) == 0
    out = capsys.readouterr().out
    assert "this run measured anew 1 committed raw file(s): reports/raw/a.json\n" in out
    assert "1 committed raw file(s) differ from the commit (an earlier run's" in out
    assert "reports/raw/b.json" in out.split("earlier run's")[1]
    assert "rebuilt the pages; 1 committed page(s) now differ from the commit" in out
    assert "reports/index.html" in out.split("rebuilt the pages")[1]


def test_a_long_list_of_changed_files_is_named_in_part():
    import matrix.orchestrate as orchestrate

    pages = [f"reports/p{i}.html" for i in range(150)]
    line = orchestrate._named(pages)
    assert line.startswith("reports/p0.html, reports/p1.html") and "reports/p149.html" not in line
    assert line.endswith(f"and {150 - orchestrate.NAMED_AT_MOST} more (git status lists them)")
    assert orchestrate._named(pages[:2]) == "reports/p0.html, reports/p1.html"


SMALL_DISK = """
set -u
mount -t tmpfs -o size=256k tmpfs "$SMALL" || exit 97
mkdir -p "$SMALL/raw" "$SMALL/envs"
cp "$CELL" "$SMALL/raw/"
cat /dev/zero > "$SMALL/filler" 2>/dev/null  # the disk is full from here on
run() {  # name, then the command; its exit code, output and the raw folder are copied out
  name=$1; shift
  "$@" > "$OUT/$name.log" 2>&1; echo $? > "$OUT/$name.rc"
  mkdir -p "$OUT/$name.raw" && cp -a "$SMALL/raw/." "$OUT/$name.raw/"
}
run alone "$PY" -m matrix.measure.orchestrate --raw-dir "$SMALL/raw" --envs-dir "$SMALL/envs" \
    --no-report --jobs 1 --releases 3.9.0 --numpy 2.4.6 --force --timeout 60
run redo "$PY" -m matrix.measure.orchestrate --raw-dir "$SMALL/raw" --envs-dir "$ENVS" \
    --no-report --jobs 1 --releases 3.9.0 --numpy 2.4.6 --force --timeout 60
run report "$PY" -m matrix.report --raw "$REPORT_RAW" --out "$SMALL/pages"
"""


def _small_disk_usable(where: Path) -> str | None:
    """Why a tiny disk of our own cannot be mounted here, or None (a user and mount namespace:
    no root needed, nothing left mounted outside the test)."""
    if shutil.which("unshare") is None:
        return "no unshare(1) on this machine"
    where.mkdir()
    mount = f"mount -t tmpfs -o size=64k tmpfs {where}"
    probe = subprocess.run(["unshare", "-Urm", "sh", "-c", mount], capture_output=True, text=True)
    where.rmdir()
    return None if probe.returncode == 0 else f"cannot mount a tmpfs: {probe.stderr.strip()}"


def test_a_full_disk_keeps_the_complete_cell_and_says_where(tmp_path, envs_dir):
    """Issue 11: a redo on a full disk replaced a complete cell before failing, and the report
    step died with an uncaught OSError. A real full disk (a 256 KiB tmpfs, filled): the cell's
    environments on it too (the default: both in the checkout), then only the raw folder (the
    runner's partial file cannot be written), then the report's pages."""
    why = _small_disk_usable(tmp_path / "probe")
    if why:
        pytest.skip(why)
    cell = tmp_path / "triton-3.9.0-numpy-2.4.6.json.gz"
    done = Result("ok_first", "interpret", None, "pass", "kept from before", 0.5, {})
    write_raw(Run(id="triton-3.9.0-numpy-2.4.6", env={"triton": "3.9.0", "numpy": "2.4.6"},
                  results=[done], extra={"complete": True}), cell)  # fmt: skip
    report_raw = tmp_path / "report-raw"
    report_raw.mkdir()
    shutil.copy(committed_raw("triton-3.9.0-numpy-2.4.6"), report_raw)
    # The redo needs an environment on a disk with room: build it first (or reuse it).
    proc = _orchestrate(tmp_path / "warm", envs_dir, "--releases", "3.9.0", "--numpy", "2.4.6",
                        env={**FIXTURES, "FIXTURE_PROBES": "ok_first"})  # fmt: skip
    out, _ = proc.communicate(timeout=900)
    assert proc.returncode == 0, out
    small, outside = tmp_path / "small", tmp_path / "out"
    small.mkdir()
    outside.mkdir()
    env = {**os.environ, **FIXTURES, "FIXTURE_PROBES": "ok_first,ok_last", "SMALL": str(small),
           "CELL": str(cell), "OUT": str(outside), "PY": sys.executable, "ENVS": str(envs_dir),
           "REPORT_RAW": str(report_raw)}  # fmt: skip
    subprocess.run(["unshare", "-Urm", "bash", "-c", SMALL_DISK], cwd=ROOT, env=env,
                   timeout=900, check=True)  # fmt: skip
    for name in ("alone", "redo"):
        log = (outside / f"{name}.log").read_text()
        rc = int((outside / f"{name}.rc").read_text())
        assert rc == 1, (name, log)  # a cell not (re)measured is a failed run
        assert "Traceback" not in log and "No space left on device" in log, (name, log)
        assert "could not be measured or recorded" in log, (name, log)
        kept = outside / f"{name}.raw" / cell.name
        assert kept.read_bytes() == cell.read_bytes(), (name, log)  # the complete cell, as it was
        assert sorted(p.name for p in (outside / f"{name}.raw").iterdir()) == [
            ".matrix-run.lock", cell.name]  # fmt: skip
    assert "its complete raw file is kept" in (outside / "alone.log").read_text()
    # The runner's own line names its partial file, through the orchestrator's summary.
    assert f"{cell.name}.partial: No space left on device" in (outside / "redo.log").read_text()
    log = (outside / "report.log").read_text()
    assert int((outside / "report.rc").read_text()) == 2, log
    assert "Traceback" not in log and f"{small}/pages" in log, log
    assert "No space left on device (exit 2)" in log, log


def test_a_killed_matrix_leaves_no_grandchild_that_left_its_group(tmp_path, envs_dir):
    """``kill -9`` of the orchestrator alone while a probe's grandchild runs in a session of its
    own: the runner, told by SIGTERM that its parent died, ends it before it goes."""
    tag = f"escape-kill-{os.getpid()}-{time.monotonic_ns()}"
    env = {"MATRIX_PROBE_PACKAGE": "tests.fixtures.probes.escape", "PYTHONPATH": str(ROOT),
           "SLOW_PROBE_SECONDS": "60", "FAULT_TAG": tag}  # fmt: skip
    proc = _orchestrate(tmp_path, envs_dir, "--releases", "3.9.0", "--numpy", "2.4.6",
                        "--force", "--timeout", "120", env=env)  # fmt: skip
    side = partial_path(tmp_path / "raw" / "triton-3.9.0-numpy-2.4.6.json.gz")
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline and not (side.exists() and read_raw(side).results):
        time.sleep(0.3)
    assert [r.probe for r in read_raw(side).results] == ["escapes"]
    assert left_behind(tag, grace_s=0), "the sleeper runs while its cell does"
    proc.kill()  # the orchestrator alone
    proc.communicate()
    assert left_behind(tag) == []


def _nox(*args: str, env: dict | None = None, **popen) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "nox", *args], cwd=ROOT, text=True,
                            env={**os.environ, **(env or {})}, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, **popen)  # fmt: skip


def test_sigterm_to_nox_stops_the_matrix_it_runs(tmp_path, envs_dir):
    """A CI's cancel sends SIGTERM to nox alone: the orchestrator and its runner must stop too."""
    tag = f"noxterm-{os.getpid()}-{time.monotonic_ns()}"
    env = {**FIXTURES, "FIXTURE_PROBES": "ok_first,slow", "SLOW_PROBE_SECONDS": "600",
           "FAULT_TAG": tag}  # fmt: skip
    raw = tmp_path / "raw"
    side = partial_path(raw / "triton-3.9.0-numpy-2.4.6.json.gz")
    proc = _nox("-s", "matrix", "--", "--releases", "3.9.0", "--numpy", "2.4.6", "--raw-dir",
                str(raw), "--envs-dir", str(envs_dir), "--no-report", "--jobs", "1",
                "--timeout", "900", env=env, start_new_session=True)  # fmt: skip
    # nox builds its own environment first (uv, from the index): minutes on a loaded machine.
    _wait_for("the cell started", lambda: side.exists() and bool(read_raw(side).results), proc, 540)
    proc.send_signal(signal.SIGTERM)  # nox alone, not its group
    try:
        # An orphaned orchestrator would hold nox's stdout open: communicate would time out.
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode != 0, out
        assert left_behind(tag) == [], out
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # what a failure left: not the next test's


def test_nox_report_keeps_exit_2_for_bad_input(tmp_path):
    """nox turns every failure into 1; the report session ends with the command's own code."""
    empty = tmp_path / "raw"
    empty.mkdir()
    proc = _nox("-s", "report", "--", "--raw", str(empty), "--out", str(tmp_path / "pages"))
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == 2, out
    assert "no raw files" in out
