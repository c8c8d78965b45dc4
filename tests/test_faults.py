"""Issue 11: faults from outside Triton are survived, recorded as what they are, and lose
nothing. Each test injects one kind of fault (stand-in probes in tests/fixtures/probes/faults,
damaged files, a second run) and fails without the mechanism that handles it."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from matrix import results
from matrix.measure import envs, lock
from matrix.measure.envs import EnvSpec, classify_failure, is_transient
from matrix.probes.support.base import CannotObserve, Outcome, attempt, refusal
from matrix.results import Result, Run, read_raw, write_raw
from tests.fixtures.processes import left_behind
from tests.support import committed_raw

ROOT = Path(__file__).resolve().parent.parent
FAULTS = "tests.fixtures.probes.faults"


def _runner(out: Path, *extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "MATRIX_PROBE_PACKAGE": FAULTS, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "matrix.run", "--out", str(out), "--backends", "interpret",
           "--quiet", "--timeout", "60", *extra]  # fmt: skip
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def fault_run(tmp_path_factory) -> Run:
    out = tmp_path_factory.mktemp("faults") / "raw.json"
    proc = _runner(out)
    assert proc.returncode == 0, proc.stderr
    return read_raw(out)


def test_outside_triton_is_never_a_triton_status(fault_run):
    by = {r.probe: r for r in fault_run.results}
    assert by["tool_missing"].status == "skipped", by["tool_missing"]
    assert "ld.lld" in by["tool_missing"].detail
    assert by["tool_failed"].status == "error"
    assert "exited with 1" in by["tool_failed"].detail and "cuda.h" in by["tool_failed"].detail
    assert by["harness_import"].status == "error"
    assert "triton.backends" in by["harness_import"].detail
    assert "cannot run on this release" in by["harness_import"].detail


def test_lone_surrogates_and_bytes_are_stored_losslessly(fault_run):
    from tests.fixtures.probes.faults.surrogate_detail import DETAIL

    r = next(r for r in fault_run.results if r.probe == "surrogate_detail")
    assert r.detail == DETAIL
    assert r.data["raw"] == {"$bytes_b64": "/wD+"}  # b"\xff\x00\xfe"
    assert r.data["text"] == "\udcff"


def test_a_probe_that_deletes_the_work_folder_loses_nothing(fault_run):
    assert fault_run.complete
    assert [r.probe for r in fault_run.results] == [
        "ok_first", "surrogate_detail", "tool_missing", "tool_failed", "harness_import",
        "deletes_workdir", "huge_detail", "ok_last",
    ]  # fmt: skip
    assert all(r.status in ("pass", "skipped", "error") for r in fault_run.results)
    assert next(r for r in fault_run.results if r.probe == "ok_last").status == "pass"


def test_cannot_observe_passes_through_a_probes_own_except():
    def probe():
        try:
            attempt(lambda: subprocess.check_call(["/nonexistent/tool"]))
        except Exception:  # a probe's broad handler must not turn it into an observation
            return "swallowed"

    with pytest.raises(CannotObserve) as info:
        probe()
    assert info.value.status == "skipped"
    # An Outcome made without attempt() is sorted the same way by refusal().
    out = refusal(Outcome(exception=subprocess.CalledProcessError(1, ["gcc"])), "removed")
    assert out is not None and out.status == "error" and "gcc" in out.detail


def test_raw_file_mode_follows_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        write_raw(Run(id="x", env={}), tmp_path / "a.json")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "a.json").stat().st_mode) == 0o644


def test_damaged_raw_files_are_named_and_the_rest_read(tmp_path, capsys):
    good = Run(id="triton-3.9.0-numpy-2.4.6", env={"triton": "3.9.0", "numpy": "2.4.6"},
               results=[Result("splitk", "interpret", None, "pass")])  # fmt: skip
    write_raw(good, tmp_path / "good.json")
    (tmp_path / "badbyte.json").write_bytes(b'{"schema": 2, "runs": [\xff]}')
    text = (tmp_path / "good.json").read_text().replace('"seconds": 0.0', '"seconds": "slow"')
    (tmp_path / "wrongtype.json").write_text(text)
    runs, bad = results.read_folder(tmp_path)
    assert [r.id for r in runs] == [good.id]
    assert len(bad) == 2 and any("badbyte.json" in b for b in bad)
    assert any("wrongtype.json: runs[0]." in b and ".seconds" in b and "'slow'" in b for b in bad)
    assert results.read_runs(tmp_path) == runs
    assert "badbyte.json" in capsys.readouterr().err


def test_verify_names_unreadable_and_interrupted_cells_and_checks_the_rest(tmp_path, capsys):
    from matrix.analyze import verify

    good = Run(id="triton-3.9.0-numpy-2.4.6", env={"triton": "3.9.0", "numpy": "2.4.6"},
               results=[Result("splitk", "interpret", None, "pass")])  # fmt: skip
    write_raw(good, tmp_path / "good.json")
    (tmp_path / "bad.json").write_bytes(b"\xff")
    write_raw(good, results.partial_path(tmp_path / "other.json"))
    assert verify.main([str(tmp_path)]) == 1
    err = capsys.readouterr()
    assert "bad.json" in err.err and "other.json.partial" in err.err
    assert "1 cells" in err.out


def test_an_empty_raw_folder_is_an_error(tmp_path):
    with pytest.raises(results.SchemaError, match="no raw files"):
        results.read_runs(tmp_path)
    from matrix.analyze import verify

    assert verify.main([str(tmp_path)]) == 2


def test_move_aside_keeps_the_file(tmp_path):
    p = tmp_path / "triton-3.9.0-numpy-2.4.6.json"
    p.write_text("garbage")
    aside = results.move_aside(p)
    assert not p.exists() and aside.read_text() == "garbage" and not aside.name.endswith(".json")


def test_env_marker_matches_the_spec_as_json_reads_it(tmp_path):
    spec = EnvSpec(python="3.11", triton="3.9.0", numpy="2.4.6", torch="2.13.0")
    (tmp_path / envs.MARKER).write_text(json.dumps(spec.marker()))
    (tmp_path / "bin").mkdir()
    got = envs.ensure_env(spec, tmp_path)  # would rebuild (uv) if the marker never matched
    assert got.status == "ok" and got.detail == "reused an existing environment"


def test_a_failed_build_leaves_the_old_environment(tmp_path, monkeypatch):
    spec = EnvSpec(python="3.11", triton="3.9.0", numpy="2.4.6", torch="2.13.0")
    path = tmp_path / "cell"
    path.mkdir()
    (path / "keep").write_text("old")
    monkeypatch.setattr(envs, "_install_once", lambda uv, s, p: (p.mkdir(), ("failed", "x", ""))[1])
    monkeypatch.setattr(envs, "uv_binary", lambda: "uv")
    assert envs.ensure_env(spec, path, log=lambda m: None).status == "failed"
    assert (path / "keep").read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["cell"]  # nothing half-built left beside


def test_transient_install_failures_are_retried_bounded(tmp_path, monkeypatch):
    calls = []

    def flaky(uv, spec, path):
        calls.append(1)
        path.mkdir(exist_ok=True)
        if len(calls) < 2:
            return "failed", "net", "error: Failed to fetch: `https://pypi.org/simple/triton/`"
        return "ok", "uv: ...", ""

    monkeypatch.setattr(envs, "_install_once", flaky)
    monkeypatch.setattr(envs, "uv_binary", lambda: "uv")
    monkeypatch.setattr(envs, "RETRY_PAUSE_S", 0.0)
    spec = EnvSpec(python="3.11", triton="3.9.0", numpy="2.4.6", torch="2.13.0")
    assert envs.ensure_env(spec, tmp_path / "cell", log=lambda m: None).status == "ok"
    assert len(calls) == 2
    calls.clear()
    monkeypatch.setattr(envs, "_install_once", lambda uv, s, p: (calls.append(1), p.mkdir(
        exist_ok=True), ("failed", "down", "connection refused"))[2])  # fmt: skip
    got = envs.ensure_env(spec, tmp_path / "other", log=lambda m: None)
    assert got.status == "failed" and len(calls) == envs.INSTALL_ATTEMPTS
    assert "tried 3 times" in got.detail
    assert not is_transient("Because there is no version of triton==3.99.0")


def test_no_wheel_names_the_package_uv_blames():
    spec = EnvSpec(python="3.11", triton="3.9.0", numpy="2.4.6", torch="2.13.0")
    text = ("cause: Because torch==2.13.0 has no wheels with a matching Python ABI tag "
            "(e.g., `cp311`) and you require torch==2.13.0, ...")  # fmt: skip
    status, detail = classify_failure(text, spec)
    assert status == "no-wheel" and detail.startswith("torch==2.13.0 has no wheel"), detail


def test_a_second_holder_of_the_run_lock_is_refused_with_a_message(tmp_path):
    code = (
        "import sys, time; from pathlib import Path; from matrix.measure import lock\n"
        "with lock.hold([Path(sys.argv[1])]):\n print('held', flush=True); time.sleep(60)"
    )
    holder = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], cwd=ROOT,
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "held"
        with (
            pytest.raises(lock.LockBusy, match=f"pid {holder.pid}.*is using"),
            lock.hold([tmp_path], wait=False),
        ):
            pass
    finally:
        holder.kill()
        holder.wait()
    with lock.hold([tmp_path], wait=False):  # the kernel dropped the dead holder's lock
        pass


def test_report_names_a_bad_raw_file_goes_on_and_refuses_an_empty_folder(tmp_path, capsys):
    from matrix.report.__main__ import main as report

    raw = tmp_path / "raw"
    raw.mkdir()
    good = committed_raw("triton-3.9.0-numpy-2.4.6")
    (raw / good.name).write_bytes(good.read_bytes())
    (raw / "bad.json").write_bytes(b"\xff")
    assert report(["--raw", str(raw), "--out", str(tmp_path / "pages")]) == 0
    err = capsys.readouterr().err
    assert "bad.json" in err and "cannot be read" in err
    (tmp_path / "empty").mkdir()
    assert report(["--raw", str(tmp_path / "empty"), "--out", str(tmp_path / "p2")]) == 2
    assert "no raw files" in capsys.readouterr().err


def test_a_grandchild_that_leaves_its_group_does_not_outlive_the_cell(tmp_path):
    """A probe's grandchild in a session of its own (setsid, double fork) is out of reach of
    the child's process group and of its parent-death signal: the runner, a subreaper, ends it."""
    tag = f"escape-{os.getpid()}-{time.monotonic_ns()}"
    env = {**os.environ, "MATRIX_PROBE_PACKAGE": "tests.fixtures.probes.escape",
           "PYTHONPATH": str(ROOT), "FAULT_TAG": tag, "SLOW_PROBE_SECONDS": "0.1"}  # fmt: skip
    cmd = [sys.executable, "-m", "matrix.run", "--out", str(tmp_path / "raw.json"),
           "--backends", "interpret", "--quiet", "--timeout", "60"]  # fmt: skip
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert [r.status for r in read_raw(tmp_path / "raw.json").results] == ["pass"] * 3
    assert left_behind(tag, grace_s=1.0) == []


@pytest.mark.parametrize("probe", ["dot_f32_default_precision", "splitk", "tiled"])
def test_a_missing_compile_tool_in_an_aot_probe_is_skipped_with_the_reason(monkeypatch, probe):
    """AotUnavailable reaches these probes only as CannotObserve (attempt raises it): the probe's
    own check for it was dead code, and the result is ``skipped`` naming the tool."""
    from matrix.backends import aot
    from matrix.core import AotUnavailable
    from matrix.measure.child import run_task

    def missing(*args, **kwargs):
        raise AotUnavailable("no ld.lld found (searched PATH and the ROCm folders)")

    monkeypatch.setattr(aot, "compile_for_target", missing)
    (result,) = run_task({"probe": probe, "backend": "aot", "target": "hip:gfx942"})
    assert result["status"] == "skipped" and "ld.lld" in result["detail"], result


class _LauncherFails:
    """A kernel whose launch fails the way Triton 3.0.0's did on the H200: gcc could not build
    the launcher stub (the CUDA headers were missing). With ``kernel`` and ``fails``, only the
    launches whose keywords ``fails`` accepts fail; the others launch ``kernel``."""

    def __init__(self, kernel=None, fails=lambda kwargs: True):
        self.kernel, self.fails = kernel, fails

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            if not self.fails(kwargs):
                return self.kernel[grid](*args, **kwargs)
            raise subprocess.CalledProcessError(
                1, ["gcc", "main.c"], stderr="fatal error: cuda.h: No such file or directory"
            )

        return launch


def test_a_tool_failing_in_a_probe_s_own_launch_is_not_a_precision(monkeypatch):
    """dot_f32_precision_error recorded any failed launch as "this precision is unavailable"."""
    from matrix.measure.child import run_task
    from matrix.probes.dot_f32_precision_error import probe as probe

    # The explicit-precision launches (inside attempt()) fail; the default one runs.
    explicit = _LauncherFails(probe._dot, lambda kw: kw["PRECISION"] != probe.DEFAULT)
    monkeypatch.setattr(probe, "_dot", explicit)
    (result,) = run_task({"probe": "dot_f32_precision_error", "backend": "interpret"})
    assert result["status"] == "error", result
    assert "a tool outside Triton failed" in result["detail"] and "cuda.h" in result["detail"]


def test_a_tool_failure_escaping_a_probe_is_sorted_like_one_inside_attempt(monkeypatch):
    from matrix.measure.child import run_task
    from matrix.probes.dot_f32_precision_error import probe as probe

    # The default launch, called outside attempt(), fails.
    default = _LauncherFails(probe._dot, lambda kw: kw["PRECISION"] == probe.DEFAULT)
    monkeypatch.setattr(probe, "_dot", default)
    (result,) = run_task({"probe": "dot_f32_precision_error", "backend": "interpret"})
    assert result["status"] == "error" and "a tool outside Triton failed" in result["detail"]
    assert "CalledProcessError" in result["data"]["exception"]  # the traceback is kept


def test_data_json_has_no_form_for_still_reaches_the_raw_file():
    """A probe's data with a tuple as a key, or holding itself, lost the probe's whole result
    (the child died writing its event): it is written as the closest plain value."""
    import io

    from matrix.measure import child

    loop: dict = {"n": 1}
    loop["self"] = loop
    stream = io.StringIO()
    child._emit(stream, {"event": "result", "data": {"cells": {("int8", "int16"): "int16"},
                                                     "loop": loop}})  # fmt: skip
    got = json.loads(stream.getvalue())
    assert got["data"]["cells"] == {"('int8', 'int16')": "int16"}
    assert got["data"]["loop"] == {"n": 1, "self": {"$repr": "<cycle>"}}


def test_the_process_tree_is_read_whatever_a_process_calls_itself():
    """/proc/<pid>/stat puts the command name in parentheses, and a name may hold ') ('."""
    from matrix.measure import procs

    code = ("import ctypes, sys, time; ctypes.CDLL(None).prctl(15, b'x) 1 (y', 0, 0, 0); "
            "print(flush=True); time.sleep(60)")  # fmt: skip
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    try:
        child.stdout.readline()  # named by now
        assert Path(f"/proc/{child.pid}/comm").read_text().strip() == "x) 1 (y"
        assert child.pid in procs.descendants(os.getpid())
    finally:
        child.kill()
        child.wait()
    assert child.pid not in procs.descendants(os.getpid())


# ----------------------------------------------- issue 23: the gate fails closed on the unseen

from tests.test_gate import GATE, mutate, run_gate, set_status  # noqa: E402  (the gate's own)


@pytest.fixture
def gate_results(tmp_path: Path) -> Path:
    """The gate's safe fixture (3.8.0 and 3.9.0 alike), copied to change one thing."""
    import shutil

    dst = tmp_path / "raw"
    shutil.copytree(GATE / "safe", dst)
    return dst


def test_a_scanned_file_the_scanner_skipped_is_undecidable(tmp_path, gate_results):
    src = tmp_path / "team"
    src.mkdir()
    # Calls an API the candidate removed, but does not parse: the scanner skips it.
    (src / "broken.py").write_text(
        "import triton.language as tl\ndef k(:\n    tl.make_block_ptr(base=0)\n"
    )
    code, md, doc = run_gate(tmp_path, gate_results, "--scan", str(src))
    assert code == 2, md
    assert any("broken.py" in u and "not read" in u for u in doc["undecidable"]), doc


def test_a_numpy_cell_on_one_side_only_is_undecidable(tmp_path, gate_results):
    # The candidate's 1.26.4 cell is missing (a CI job that failed to upload its raw file).
    mutate(gate_results, "3.9.0", lambda run: None if run.env["numpy"] == "1.26.4" else run)
    code, md, doc = run_gate(tmp_path, gate_results)
    assert code == 2, md
    assert any("numpy 1.26.4" in u and "not compared" in u for u in doc["undecidable"]), doc


def test_a_column_recorded_for_the_candidate_only_is_undecidable(tmp_path, gate_results):
    def add_gpu(run: Run) -> Run:
        run.results.append(Result("splitk", "gpu", "cuda:90", "pass"))
        run.env["gpu"] = {"name": "NVIDIA H200", "capability": "9.0"}
        return run

    mutate(gate_results, "3.9.0", add_gpu)
    code, md, doc = run_gate(tmp_path, gate_results)
    assert code == 2, md
    assert any(u.startswith("gpu:cuda:90: results for the candidate") for u in doc["undecidable"])


def test_a_gpu_machine_on_one_side_only_is_undecidable(tmp_path, gate_results):
    def on(name: str):
        def add_gpu(run: Run) -> Run:
            if run.env["numpy"] == "2.4.6":
                run.results.append(Result("splitk", "gpu", "cuda:90", "pass"))
                run.env["gpu"] = {"name": name, "capability": "9.0"}
            return run

        return add_gpu

    mutate(gate_results, "3.8.0", on("NVIDIA H200"))
    mutate(gate_results, "3.9.0", on("NVIDIA H100 80GB HBM3"))
    code, md, doc = run_gate(tmp_path, gate_results)
    assert code == 2, md
    assert any("H100" in u and "one side only" in u for u in doc["undecidable"]), doc


@pytest.mark.parametrize("numpy", ["banana", None, 3])
def test_env_numpy_garbage_is_undecidable(tmp_path, gate_results, numpy):
    def spoil(run: Run) -> Run:
        if run.env["numpy"] == "2.4.6":
            run.env["numpy"] = numpy
        return run

    mutate(gate_results, "3.9.0", spoil)
    code, md, doc = run_gate(tmp_path, gate_results)
    assert code == 2, md
    assert any("env.numpy" in e for e in doc["errors"] + doc["undecidable"]), doc


@pytest.mark.parametrize("status", ["crashed", "error", "timeout", "skipped"])
@pytest.mark.parametrize("side", ["3.8.0", "3.9.0"])
def test_no_acknowledgement_accepts_what_was_not_observed(tmp_path, gate_results, status, side):
    accept_all = tmp_path / "accept_all.toml"
    accept_all.write_text(
        '[[change]]\nprobe = "*"\nwhere = "*"\nfrom = "*"\nto = "*"\nreason = "everything"\n'
    )
    mutate(
        gate_results, side, set_status("dot_f32_default_precision", status, "", "aot", "cuda:90")
    )
    code, md, doc = run_gate(tmp_path, gate_results, accepted=str(accept_all))
    assert code == 2, md
    assert not doc["findings"], doc["findings"]
    assert any("not an observation" in u for u in doc["undecidable"]), doc


def test_accepted_change_never_matches_a_non_observation():
    from matrix.core import Release
    from matrix.gate.config import AcceptedChange

    everything = AcceptedChange("*", "*", "*", "*", "everything")
    b, c = Release.parse("3.8.0"), Release.parse("3.9.0")
    assert everything.matches("block_ptr", "aot:cuda:90", "deprecated", "removed", b, c)
    for status in ("crashed", "error", "timeout", "skipped"):
        assert not everything.matches("block_ptr", "aot:cuda:90", "deprecated", status, b, c)
        assert not everything.matches("block_ptr", "aot:cuda:90", status, "removed", b, c)


# ------------------------------------------- issue 23: one schema for raw files, checked by all

SCHEMA_FILE = ROOT / "matrix" / "data" / "raw.schema.json"


def _good_cell(tmp_path: Path) -> Path:
    return _cell(tmp_path, "3.9.0")


def _cell(tmp_path: Path, release: str) -> Path:
    run = Run(id=f"triton-{release}-numpy-2.4.6", env={"triton": release, "numpy": "2.4.6"},
              results=[Result("splitk", "interpret", None, "pass")],
              extra={"complete": True})  # fmt: skip
    path = tmp_path / "raw" / f"{run.id}.json"
    write_raw(run, path)
    return path


def _spoil(path: Path, change) -> None:
    doc = json.loads(path.read_text())
    change(doc["runs"][0])
    path.write_text(json.dumps(doc))


def _validators() -> list:
    found = [pytest.param("jsonschema", id="jsonschema")]
    try:
        import fastjsonschema  # noqa: F401
    except ImportError:
        reason = "fastjsonschema is not installed here (nox's tests session installs it)"
        found.append(pytest.param("fastjsonschema", marks=pytest.mark.skip(reason=reason)))
    else:
        found.append(pytest.param("fastjsonschema", id="fastjsonschema"))
    return found


@pytest.fixture(params=_validators())
def validator(request, monkeypatch):
    """Each validator the project can use, the other hidden, so that both name the field."""
    import builtins

    hidden = "fastjsonschema" if request.param == "jsonschema" else None
    real_import = builtins.__import__

    def imports(name, *args, **kwargs):
        if name == hidden:
            raise ImportError(f"hidden by the test: {name}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", imports)
    results.schema._validator.cache_clear()
    yield request.param
    results.schema._validator.cache_clear()


SPOILED = {
    "complete is a string": (lambda r: r.update(complete="false"), "runs[0].complete"),
    "env.triton is null": (lambda r: r["env"].update(triton=None), "runs[0].env.triton"),
    "env.numpy missing": (lambda r: r["env"].pop("numpy"), "numpy"),
    "a result's status is a number": (
        lambda r: r["results"][0].update(status=3),
        "runs[0].results[0].status",
    ),
    "unknown backend": (lambda r: r["results"][0].update(backend="cuda"), "results[0].backend"),
}


@pytest.mark.parametrize(("change", "field"), SPOILED.values(), ids=SPOILED)
def test_a_field_of_the_wrong_type_is_named_with_file_and_path(tmp_path, validator, change, field):
    path = _good_cell(tmp_path)
    _spoil(path, change)
    with pytest.raises(results.SchemaError) as caught:
        read_raw(path)
    message = str(caught.value)
    assert str(path) in message and field in message and "raw.schema.json" in message, message


def test_complete_false_as_a_string_is_refused_by_verify_and_the_gate(tmp_path, capsys):
    from matrix.analyze import verify
    from matrix.gate import verdict

    for release in ("3.8.0", "3.9.0"):
        _cell(tmp_path, release)
    _spoil(tmp_path / "raw" / "triton-3.9.0-numpy-2.4.6.json", lambda r: r.update(complete="false"))
    assert verify.main([str(tmp_path / "raw")]) != 0
    assert "runs[0].complete" in capsys.readouterr().err
    args = ["--baseline", "3.8.0", "--candidate", "3.9.0", "--results", str(tmp_path / "raw"),
            "--no-project-scan", "--out", str(tmp_path / "gate")]  # fmt: skip
    assert verdict.main(args) == 2
    assert "runs[0].complete" in (tmp_path / "gate" / "gate.md").read_text()


def test_a_cell_that_does_not_match_the_schema_is_moved_aside_by_the_matrix(tmp_path, capsys):
    from matrix.measure import orchestrate

    path = _good_cell(tmp_path)
    _spoil(path, lambda r: r["env"].update(triton=None))
    assert orchestrate._readable(path) is None  # the matrix redoes the cell
    assert not path.exists() and len(list(path.parent.glob("*.unreadable-*"))) == 1
    out = capsys.readouterr().out
    assert "runs[0].env.triton" in out and "moved it aside" in out


def test_the_schema_is_valid_and_agrees_with_the_code():
    from jsonschema import Draft202012Validator

    from matrix.core import BACKENDS

    schema = json.loads(SCHEMA_FILE.read_text())
    Draft202012Validator.check_schema(schema)
    assert tuple(schema["$defs"]["result"]["properties"]["backend"]["enum"]) == BACKENDS
    assert schema["properties"]["schema"]["const"] == results.SCHEMA


def test_every_fixture_raw_file_matches_the_schema():
    files = sorted((ROOT / "tests" / "fixtures").rglob("triton-*.json"))
    assert files
    for path in files:
        doc = json.loads(path.read_text())
        if isinstance(doc, dict) and "runs" in doc:
            results.validate(results.upgrade(doc) if doc.get("schema") == 1 else doc, str(path))


# ------------------------------------------------ issue 23: non-finite numbers are strings


def test_non_finite_numbers_are_written_as_strings_and_read_back(tmp_path):
    nan_run = Run(id="triton-3.9.0-numpy-2.4.6", env={"triton": "3.9.0", "numpy": "2.4.6"},
                  results=[Result("tiled", "interpret", None, "fail", "relative error nan",
                                  float("inf"), {"rel_err": float("nan"), "lo": -float("inf")})],
                  extra={"complete": True})  # fmt: skip
    path = tmp_path / "raw.json"
    write_raw(nan_run, path)
    text = path.read_text()
    assert "NaN" not in text and "Infinity" not in text
    # Strict JSON (what JSON.parse and jq accept): no bare NaN anywhere.
    doc = json.loads(text, parse_constant=lambda c: pytest.fail(f"bare {c} in a raw file"))
    data = doc["runs"][0]["results"][0]["data"]
    assert data == {"rel_err": "nan", "lo": "-inf"}
    back = read_raw(path).results[0]
    assert back.seconds == float("inf")
    assert results.number(back.data["rel_err"]) != results.number(back.data["rel_err"])  # nan
    results.merge(tmp_path, tmp_path / "out" / "matrix.json")
    assert "NaN" not in (tmp_path / "out" / "matrix.json").read_text()


def test_a_bare_nan_of_an_older_file_is_still_read(tmp_path):
    path = _good_cell(tmp_path)
    path.write_text(path.read_text().replace('"seconds": 0.0', '"seconds": NaN', 1))
    assert "NaN" in path.read_text()
    run = read_raw(path)
    assert run.install["seconds"] != run.install["seconds"] or run.results[0].seconds != 0.0


def test_claims_read_both_spellings_of_a_non_finite_number():
    from matrix.report.claims import DataCondition

    above = DataCondition("rel_err", "gt", 1e-3)
    assert above.test({"rel_err": "inf"}) is True
    assert above.test({"rel_err": float("inf")}) is True
    assert above.test({"rel_err": "nan"}) is False


# ------------------------------------------------------------ issue 23: bounded evidence


def test_a_huge_detail_is_capped_in_the_raw_file_with_its_size(fault_run):
    from tests.fixtures.probes.faults.huge_detail import SIZE

    r = next(r for r in fault_run.results if r.probe == "huge_detail")
    assert len(r.detail) <= results.DETAIL_CAP
    assert r.detail.startswith("start x") and r.detail.endswith("x end")
    assert f"{SIZE + len('start  end')} characters in all" in r.detail


def test_no_page_shows_more_than_a_few_kb_of_a_detail(tmp_path):
    from matrix.report import build

    huge = "first line\n" + "y" * (5 * 1024 * 1024) + "\nlast line"
    for release, detail in (("3.8.0", "small"), ("3.9.0", huge)):
        run = Run(id=f"triton-{release}-numpy-2.4.6", env={"triton": release, "numpy": "2.4.6"},
                  install={"status": "ok", "seconds": 1.0, "detail": detail},
                  results=[Result("block_ptr", "interpret", None, "removed", detail)],
                  extra={"complete": True})  # fmt: skip
        write_raw(run, tmp_path / "raw" / f"{run.id}.json")
    built = build(tmp_path / "raw", tmp_path / "pages")
    pages = [p for p in built.pages if p.name != "matrix.json"]
    sizes = {str(p.relative_to(tmp_path)): p.stat().st_size for p in pages}
    assert max(sizes.values()) < 2 * 1024 * 1024, sizes
    release = (tmp_path / "pages" / "releases" / "3.9.0.html").read_text()
    assert "first line" in release and "last line" in release
    assert "characters in all; the whole text is in the cell" in release
    # matrix.json keeps what the raw file holds: the cap is the pages' only.
    merged = results.read_runs(tmp_path / "pages" / "matrix.json")
    assert merged[1].results[0].detail == huge


# ------------------------------------------- issue 23: transient install failures are retried


def test_a_transient_install_failure_leaves_the_cell_partial_for_the_next_run(
    tmp_path, monkeypatch
):
    from matrix.core import Release
    from matrix.measure import orchestrate
    from matrix.measure.cells import Cell

    def down(uv, spec, path):
        path.mkdir(exist_ok=True)
        return "failed", "index down", "error: Failed to fetch: `https://pypi.org/simple/triton/`"

    monkeypatch.setattr(envs, "_install_once", down)
    monkeypatch.setattr(envs, "uv_binary", lambda: "uv")
    monkeypatch.setattr(envs, "RETRY_PAUSE_S", 0.0)
    spec = EnvSpec(python="3.11", triton="3.9.0", numpy="2.4.6", torch="2.13.0")
    got = envs.ensure_env(spec, tmp_path / "cell", log=lambda m: None)
    assert got.status == "failed" and got.transient
    cell = Cell(Release.parse("3.9.0"), "2.4.6", ("interpret",), "3.11", "2.13.0")
    out = cell.raw_path(tmp_path / "raw")
    orchestrate.record_failure(cell, got, out)
    assert read_raw(out).install["transient"] is True
    assert orchestrate.existing_state(out, cell) == "partial"  # the next run retries it

    # A failure that will not pass (no such release) is the cell's answer: complete.
    def missing(uv, spec, path):
        path.mkdir(exist_ok=True)
        return "no-such-release", "no triton==3.9.0", "Because there is no version of triton"

    monkeypatch.setattr(envs, "_install_once", missing)
    final = envs.ensure_env(spec, tmp_path / "cell2", log=lambda m: None)
    assert not final.transient
    out.unlink()
    orchestrate.record_failure(cell, final, out)
    assert orchestrate.existing_state(out, cell) == "complete"


@pytest.mark.parametrize("inside", ["", "sub"])
def test_an_out_folder_in_the_results_folder_is_refused(tmp_path, capsys, inside):
    """--out equal to the raw folder (or under it) left a gate.json among the raw files."""
    from matrix.gate import verdict

    raw = tmp_path / "raw"
    shutil.copytree(ROOT / "tests" / "fixtures" / "gate" / "safe", raw)
    before = sorted(p.name for p in raw.iterdir())
    out = raw / inside if inside else raw
    code = verdict.main(["--baseline", "3.8.0", "--candidate", "3.9.0", "--results", str(raw),
                         "--no-project-scan", "--out", str(out)])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and f"--out {str(out)!r}: inside the --results folder" in err
    assert sorted(p.name for p in raw.iterdir()) == before


def _nox_in(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nox", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300)  # fmt: skip


def test_nox_that_cannot_create_its_environments_says_where_in_one_line_and_exits_2(tmp_path):
    """nox's own mkdir of its envdir raised a traceback and exit 1 ("unsafe" for a gate)."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    envdir = blocker / ".nox"  # under a regular file: no one can create it, root included
    proc = _nox_in(ROOT, "-s", "report", "--envdir", str(envdir), "--", "--raw", str(tmp_path))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"nox: cannot create environments in {envdir}: Not a directory; run from a writable "
        "copy of the checkout, or pass --envdir DIR on a writable disk"
    ]
    assert _nox_in(ROOT, "-l", "--envdir", str(envdir)).returncode == 0  # listing needs none


def _read_only_copy_works() -> str | None:
    """Why a read-only mount cannot be made here (None: it can): ``unshare -m`` needs root or
    user namespaces; chmod alone does not stop root."""
    try:
        probe = subprocess.run(["unshare", "-m", "sh", "-c", "mount --bind / /mnt 2>&1"],
                               capture_output=True, text=True, timeout=30)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"unshare -m: {e}"
    return None if probe.returncode == 0 else f"unshare -m / mount --bind: {probe.stdout!r}"


@pytest.mark.parametrize("has_envdir", [False, True], ids=["no-.nox", "stale-.nox"])
def test_nox_in_a_read_only_checkout_is_one_line_and_exit_2(tmp_path, has_envdir):
    """A read-only checkout (a CI cache, a mounted volume): one line naming the folder, exit 2,
    whether or not a .nox from an earlier run is there."""
    why = _read_only_copy_works()
    if why is not None:
        pytest.skip(f"no read-only mount can be made here: {why}")
    copy = tmp_path / "checkout"
    shutil.copytree(ROOT / "matrix", copy / "matrix", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "noxfile.py", copy / "noxfile.py")
    if has_envdir:
        (copy / ".nox").mkdir()
    script = (f'mount --bind "{copy}" "{copy}" && mount -o remount,bind,ro "{copy}" && '
              f'cd "{copy}" && exec "{sys.executable}" -m nox -s report')  # fmt: skip
    proc = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"nox: cannot create environments in {copy / '.nox'}: Read-only file system; run from a "
        "writable copy of the checkout, or pass --envdir DIR on a writable disk"
    ]


@pytest.mark.parametrize("value", ["-1", "0", "nan"])
def test_the_matrix_refuses_a_timeout_that_is_no_limit_before_it_touches_anything(tmp_path, value):
    """``--timeout -1`` ran the whole matrix (and its report step) before each runner refused."""
    raw = tmp_path / "raw"
    cmd = [sys.executable, "-m", "matrix.orchestrate", "--timeout", value, "--raw-dir", str(raw),
           "--report-dir", str(tmp_path / "pages")]  # fmt: skip
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"--timeout: expected seconds > 0, got {float(value)}" in proc.stderr
    assert not raw.exists() and not (tmp_path / "pages").exists()
