"""The runner survives its probes: a segfault, a hang and an unexpected exception each cost one
result, recorded with evidence, and every other result is in the file. Uses stand-in probes
(tests/fixtures/probes), so no Triton is needed."""

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from matrix.catalog import AOT_TARGETS, ProbeSpec
from matrix.measure import runner
from matrix.results import partial_path, read_raw

ROOT = Path(__file__).resolve().parent.parent
FIXTURE_PACKAGE = "tests.fixtures.probes"


@pytest.fixture
def fixture_probes(monkeypatch):
    monkeypatch.setenv("MATRIX_PROBE_PACKAGE", FIXTURE_PACKAGE)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))


def _run(out: Path, *extra: str, env: dict | None = None, **popen):
    cmd = [sys.executable, "-m", "matrix.run", "--out", str(out), "--backends", "interpret",
           "--quiet", *extra]  # fmt: skip
    full_env = {**os.environ, "MATRIX_PROBE_PACKAGE": FIXTURE_PACKAGE, "PYTHONPATH": str(ROOT),
                **(env or {})}  # fmt: skip
    return subprocess.Popen(cmd, cwd=ROOT, env=full_env, **popen)


def test_crash_hang_and_exception_cost_one_result_each(tmp_path, fixture_probes):
    out = tmp_path / "raw.json"
    # 1 s: a hang that sleeps is doubted once (matrix.measure.probe_clock) and costs 2 s; the
    # other probes take well under a second (slow: 0.2 s).
    proc = _run(out, "--timeout", "1", "--id", "fixture-run")
    assert proc.wait(timeout=120) == 0
    run = read_raw(out)
    statuses = {r.probe: r.status for r in run.results}
    assert statuses == {
        "ok_first": "pass",
        "segfault": "crashed",
        "ok_middle": "pass",
        "hang": "timeout",
        "raises": "error",
        "slow": "pass",
        "ok_last": "pass",
    }
    by_name = {r.probe: r for r in run.results}
    assert "SIGSEGV" in by_name["segfault"].detail
    assert "about to crash" in by_name["segfault"].detail  # the child's output is evidence
    assert "1 s limit" in by_name["hang"].detail
    assert "unexpected failure inside the probe" in by_name["raises"].detail
    assert run.complete and run.id == "fixture-run"
    # Results keep the catalog's order, whatever order the children finished in.
    assert [r.probe for r in run.results][:3] == ["ok_first", "segfault", "ok_middle"]


def test_forked_children_cost_one_result_each_too(tmp_path, fixture_probes):
    """Two children (aot, interpret): the runner preloads torch and forks them from itself
    (matrix.measure.preload); a crash, a hang and an exception cost what they cost a child
    started by a command, and each child saw torch loaded before its probes ran."""
    out = tmp_path / "raw.json"
    env = {"FIXTURE_BACKENDS": "interpret,aot", "MATRIX_FORK_CHILDREN": "1",
           "FIXTURE_PROBES": "ok_first,segfault,hang,raises,ok_last"}  # fmt: skip
    # 1 s: each of the 4 hangs (aot's 3 targets, interpret) sleeps, is doubted once
    # (matrix.measure.probe_clock) and costs 2 s; the other probes return at once.
    proc = _run(out, "--timeout", "1", "--backends", "interpret,aot", env=env)
    assert proc.wait(timeout=120) == 0
    run = read_raw(out)
    expected = {"ok_first": "pass", "segfault": "crashed", "hang": "timeout", "raises": "error",
                "ok_last": "pass"}  # fmt: skip
    for backend in ("interpret", "aot"):
        got = {r.probe: r for r in run.results if r.backend == backend}
        assert {p: r.status for p, r in got.items()} == expected, backend
        assert got["ok_first"].data["torch_loaded"] is True, backend  # forked, not started
        assert "SIGSEGV" in got["segfault"].detail and "about to crash" in got["segfault"].detail
        assert "1 s limit" in got["hang"].detail


def test_with_forking_off_children_are_started_by_a_command(tmp_path, fixture_probes):
    out = tmp_path / "raw.json"
    env = {"FIXTURE_BACKENDS": "interpret,aot", "MATRIX_FORK_CHILDREN": "0",
           "FIXTURE_PROBES": "ok_first"}  # fmt: skip
    assert _run(out, "--backends", "interpret,aot", env=env).wait(timeout=120) == 0
    results = read_raw(out).results
    assert {r.backend for r in results} == {"interpret", "aot"}
    assert not any(r.data["torch_loaded"] for r in results if r.probe == "ok_first")


def test_a_killed_run_leaves_a_valid_partial_file_that_resume_finishes(tmp_path):
    out = tmp_path / "raw.json"
    side = partial_path(out)  # an unfinished cell lives beside --out, never in it
    proc = _run(out, "--probes", "ok_first,slow,ok_last", env={"SLOW_PROBE_SECONDS": "30"},
                stderr=subprocess.PIPE, text=True)  # fmt: skip
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # wait until ok_first is recorded
        if side.exists() and any(r.probe == "ok_first" for r in read_raw(side).results):
            break
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "Traceback" not in err, err  # one line, no traceback
    assert not out.exists()
    partial = read_raw(side)
    assert not partial.complete
    assert [r.probe for r in partial.results] == ["ok_first"]

    proc = _run(out, "--probes", "ok_first,slow,ok_last", "--resume",
                env={"SLOW_PROBE_SECONDS": "0.1"})  # fmt: skip
    assert proc.wait(timeout=120) == 0
    done = read_raw(out)
    assert done.complete and not side.exists()
    assert [r.probe for r in done.results] == ["ok_first", "slow", "ok_last"]
    assert done.results[0].seconds == partial.results[0].seconds  # kept, not redone


def test_unknown_probe_and_backend_are_refused(tmp_path):
    for args, needle in ((["--probes", "nope"], "unknown ['nope']"),
                         (["--backends", "tpu"], "unknown backend 'tpu'")):  # fmt: skip
        proc = _run(tmp_path / "x.json", *args, stderr=subprocess.PIPE, text=True)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 2 and needle in err


def test_plan_tasks_only_adds_gpu_rows_where_a_gpu_was_found():
    specs = runner.registry()
    no_gpu = runner.plan_tasks(specs, ["interpret", "aot", "gpu"], None)
    assert all(t.backend != "gpu" for t in no_gpu)
    with_gpu = runner.plan_tasks(specs, ["gpu"], "cuda:90")
    assert with_gpu and all(t.target == "cuda:90" for t in with_gpu)
    aot = runner.plan_tasks(specs, ["aot"], None)
    # splitk names every aot target in the catalog; block_ptr takes the default three
    assert {t.target for t in aot if t.probe == "splitk"} == set(AOT_TARGETS)
    assert {t.target for t in aot if t.probe == "block_ptr"} == {"cuda:80", "cuda:90", "hip:gfx942"}


def test_child_environment_fixes_the_backend(tmp_path):
    env = runner.child_environment("interpret", (("X", "1"),), str(tmp_path))
    assert env["TRITON_INTERPRET"] == "1" and env["X"] == "1"
    assert env["TRITON_CACHE_DIR"] == str(tmp_path)
    assert "TRITON_INTERPRET" not in runner.child_environment("aot", (), str(tmp_path))


def test_children_keep_bytecode_in_the_cell_environment(tmp_path, monkeypatch):
    """PYTHONDONTWRITEBYTECODE made every child compile torch afresh; the bytecode goes to the
    cell's environment folder, never beside the sources (probes read site-packages' files),
    and a prefix the user chose is kept."""
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    monkeypatch.delenv("PYTHONPYCACHEPREFIX", raising=False)
    env = runner.child_environment("aot", (), str(tmp_path))
    assert "PYTHONDONTWRITEBYTECODE" not in env
    assert env["PYTHONPYCACHEPREFIX"] == str(Path(sys.prefix) / "pycache")
    source = tmp_path / "src" / "m.py"
    source.parent.mkdir()
    source.write_text("X = 1\n")
    prefix = tmp_path / "prefix"
    child = {**env, "PYTHONPYCACHEPREFIX": str(prefix), "PYTHONPATH": str(source.parent)}
    subprocess.run([sys.executable, "-c", "import m"], env=child, check=True)
    assert list(prefix.rglob("m.*.pyc")) and not (source.parent / "__pycache__").exists()
    monkeypatch.setenv("PYTHONPYCACHEPREFIX", str(prefix))
    assert runner.child_environment("aot", (), str(tmp_path))["PYTHONPYCACHEPREFIX"] == str(prefix)


def test_raw_file_is_json_after_every_result(tmp_path, fixture_probes):
    """Each intermediate write (to the partial file beside --out) is a whole document (atomic
    replace), never a torn file."""
    out = tmp_path / "raw.json"
    side = partial_path(out)
    seen = []
    proc = _run(out, "--probes", "ok_first,slow,ok_last", env={"SLOW_PROBE_SECONDS": "1"})
    while proc.poll() is None:
        # Not written yet, or already renamed to --out; a torn write raises.
        with contextlib.suppress(FileNotFoundError):
            seen.append(json.loads(side.read_text()))
        time.sleep(0.05)
    assert proc.returncode == 0 and seen and read_raw(out).complete


def _as_gpu(plan):
    def planned(specs, backends, gpu_target):
        tasks = plan(specs, backends, gpu_target)
        return [runner.Task(t.probe, t.backend, t.target, t.env,
                            next(s.isolated for s in specs if s.name == t.probe))
                for t in tasks]  # fmt: skip

    return planned


def test_isolation_only_applies_on_a_gpu():
    spec = ProbeSpec("x", "", ("pass",), ("interpret", "gpu"), isolated=True)
    tasks = runner.plan_tasks([spec], ["interpret", "gpu"], "cuda:90")
    assert [(t.backend, t.isolated) for t in tasks] == [("interpret", False), ("gpu", True)]


def test_isolated_probes_get_a_child_of_their_own(tmp_path, monkeypatch):
    """A probe that may poison its process (a misaligned GPU access) runs alone."""
    spawned = []
    real_popen = subprocess.Popen

    def counting_popen(cmd, *args, **kwargs):
        if "matrix.measure.child" in cmd:
            spawned.append(json.loads(Path(cmd[-2]).read_text()))
        return real_popen(cmd, *args, **kwargs)

    monkeypatch.setattr(runner.subprocess, "Popen", counting_popen)
    monkeypatch.setenv("MATRIX_PROBE_PACKAGE", FIXTURE_PACKAGE)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    specs = [s for s in runner.registry() if s.name in ("ok_first", "ok_middle", "ok_last")]
    specs[1] = ProbeSpec("ok_middle", "", ("pass",), ("interpret",), isolated=True)
    monkeypatch.setattr(runner, "registry", lambda: tuple(specs))
    # Isolation is for the GPU (a poisoned CUDA context); pretend these run there.
    monkeypatch.setattr(runner, "plan_tasks", _as_gpu(runner.plan_tasks))
    assert runner.main(["--out", str(tmp_path / "r.json"), "--backends", "interpret",
                        "--quiet"]) == 0  # fmt: skip
    assert sorted([t["probe"] for t in child] for child in spawned) == [
        ["ok_first", "ok_last"],
        ["ok_middle"],
    ]
    assert [r.status for r in read_raw(tmp_path / "r.json").results] == ["pass"] * 3


def test_a_redo_that_dies_never_replaces_a_complete_cell(tmp_path):
    """Disk full or a kill during a redo (``--force``) leaves the complete raw file as it was."""
    out = tmp_path / "raw.json"
    probes = ("--probes", "ok_first,slow,ok_last")
    assert _run(out, *probes, env={"SLOW_PROBE_SECONDS": "0.1"}).wait(timeout=120) == 0
    before = out.read_bytes()
    proc = _run(out, *probes, env={"SLOW_PROBE_SECONDS": "60"}, start_new_session=True)
    side = partial_path(out)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (side.exists() and read_raw(side).results):
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    assert out.read_bytes() == before and read_raw(out).complete


KILLS_RUNNER = "tests.fixtures.probes.kills_runner"


def test_a_runner_killed_mid_probe_is_named_with_cell_phase_log_and_signal(tmp_path):
    """The matrix's note for a runner that died was ``[runner exited -9: ]``: it now says which
    cell, what the runner was doing (its last --phases line), the signal and the log."""
    out = tmp_path / "raw" / "cell.json"
    out.parent.mkdir()
    log = tmp_path / "runner.log"
    with log.open("w") as f:
        env = {"MATRIX_PROBE_PACKAGE": KILLS_RUNNER, "TMPDIR": str(tmp_path)}
        proc = _run(out, "--phases", "--timeout", "60", env=env, stdout=f, stderr=f)
        code = proc.wait(timeout=120)
    assert code == -signal.SIGKILL
    note = runner.crash_note("triton-3.9.0-numpy-2.4.6", code, log.read_text(), log)
    assert note.startswith(
        "[runner of cell triton-3.9.0-numpy-2.4.6 killed by signal SIGKILL during: probe "
        "kills_runner[interpret] (the child's last event: its start); log: "
        f"{log}"
    ), note
    # What it had read is kept (ok_first's result, if it was read before the kill).
    assert [r.probe for r in read_raw(partial_path(out)).results] in ([], ["ok_first"])


def test_crash_note_without_phases_or_log_still_names_cell_and_exit():
    assert runner.crash_note("c", 3, "", None) == (
        "[runner of cell c exited with code 3 during: starting up (before its first phase); its "
        "log could not be written]"
    )
    note = runner.crash_note("c", 0, "[phase] x\nboom", Path("l"))
    assert (
        note
        == "[runner of cell c exited with code 0 but wrote no raw file during: x; log: l: boom]"
    )


@pytest.mark.slow
def test_the_matrix_keeps_the_log_of_a_runner_that_died_and_says_so(tmp_path, matrix_envs_dir):
    raw = tmp_path / "raw"
    cmd = [sys.executable, "-m", "matrix.measure.orchestrate", "--raw-dir", str(raw),
           "--envs-dir", str(matrix_envs_dir), "--no-report", "--jobs", "1", "--releases",
           "3.9.0", "--numpy", "2.4.6"]  # fmt: skip
    env = {**os.environ, "MATRIX_PROBE_PACKAGE": KILLS_RUNNER, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    log = runner.runner_log_path(matrix_envs_dir / "logs", "triton-3.9.0-numpy-2.4.6")
    assert (
        "[runner of cell triton-3.9.0-numpy-2.4.6 killed by signal SIGKILL during: probe "
        f"kills_runner[interpret] (the child's last event: its start); log: {log}]" in out
    ), out
    assert log.exists()
    assert "Traceback" not in out


def test_a_cell_completed_in_place_counts_what_its_kept_results_cost():
    """After an incremental run a cell's seconds are the earlier run's less what it redid,
    plus the new run's (the caller adds those): matrix.timings still adds up."""
    from matrix.results import Result, Run

    fp = Result("fp", "interpret", None, "observed", seconds=6.0)
    row = Result("fp.binary.add", "interpret", None, "observed", seconds=6.0)
    old = Result("splitk", "interpret", None, "pass", seconds=3.0)
    done = Run("c", results=[fp, row, old], extra={"seconds": 11.0, "complete": True})
    assert runner._kept_seconds(done, [fp, row]) == 8.0  # 11 less splitk's 3; the row not again
    assert runner._kept_seconds(done, []) == 2.0  # runner time outside probes stays
    unfinished = Run("c", results=[fp, row, old], extra={"complete": False})
    assert runner._kept_seconds(unfinished, [fp, row]) == 6.0


def test_aot_children_run_before_the_interpreter_ones():
    """An aot child compiles what the cell's interpreter child then reads from the run cache."""
    from matrix.measure import runner

    groups = {("interpret", (), None): [], ("gpu", (), None): [], ("aot", (), None): [],
              ("interpret", (("X", "1"),), None): []}  # fmt: skip
    order = [key[0] for key, _ in sorted(groups.items(), key=runner._group_order)]
    assert order == ["aot", "interpret", "interpret", "gpu"]
