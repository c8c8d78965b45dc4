"""A team's own pytest suite through the matrix (`--tests`): outcomes, launches, survival."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from matrix.measure.orchestrate import existing_state
from matrix.measure.suite import run_suite, run_suite_recorded, suite_identity
from matrix.results import Run, read_raw, write_raw
from tests.support import compile_in_child

ROOT = Path(__file__).resolve().parent.parent
SUITE = ROOT / "tests" / "fixtures" / "user_suite"
TEAMLIB = ROOT / "tests" / "fixtures" / "teamlib" / "tests"


def quiet(*a):
    pass


def write_suite(folder: Path, body: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "test_it.py").write_text(body)
    return folder


def outcomes(tests):
    return {t["id"].split("::")[-1]: t["outcome"] for t in tests}


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
    assert outcomes(run.extra["tests"]) == {
        "test_passes": "passed",
        "test_fails": "failed",
        "test_skipped": "skipped",
    }
    assert run.extra["suite"] == suite_identity(SUITE)
    # Progress lines show even with --quiet: a suite's lines are its only sign of life.
    assert "tests: 1 of 3 passed" in proc.stdout


def test_a_suite_that_cannot_run_is_an_error_not_a_pass(tmp_path):
    empty = tmp_path / "empty_suite"
    empty.mkdir()
    tests, launches = run_suite(empty, tmp_path / "w", quiet)
    assert len(tests) == 1 and tests[0]["outcome"] == "error", tests
    assert "collected no tests" in tests[0]["detail"] and launches == []


# A user's test that misbehaves: its source, the per-test time limit, the outcome of every test,
# and what the detail of a test must name. Each must end well within 60 s and lose no test.
MISBEHAVING = {
    # The old runner read pytest's output through a pipe until EOF: a daemon holding it kept
    # the runner waiting up to 1800 s and then dropped every passing test.
    "daemon holding stdout": ("""
import subprocess
def test_leaves_a_daemon():
    subprocess.Popen(["sleep", "300"])
def test_after():
    pass
""", 60, {"test_leaves_a_daemon": "passed", "test_after": "passed"}, {}),
    "segfault": ("""
import os, signal
def test_a_before():
    pass
def test_b_crashes():
    os.kill(os.getpid(), signal.SIGSEGV)
def test_c_after():
    pass
""", 60, {"test_a_before": "passed", "test_b_crashes": "crashed", "test_c_after": "passed"},
        {"test_b_crashes": "SIGSEGV"}),
    "hang": ("""
import time
def test_a_hangs():
    time.sleep(120)
def test_b_after():
    pass
""", 3, {"test_a_hangs": "timeout", "test_b_after": "passed"}, {}),
}  # fmt: skip


@pytest.mark.parametrize(("source", "limit", "expected", "details"), MISBEHAVING.values(),
                         ids=MISBEHAVING)  # fmt: skip
def test_a_misbehaving_test_is_recorded_alone_and_the_others_kept(
    tmp_path, source, limit, expected, details
):
    suite = write_suite(tmp_path / "s", source)
    t0 = time.monotonic()
    tests, _ = run_suite(suite, tmp_path / "w", quiet, test_timeout_s=limit)
    assert time.monotonic() - t0 < 60
    assert outcomes(tests) == expected
    by_name = {t["id"].split("::")[-1]: t for t in tests}
    for name, text in details.items():
        assert text in by_name[name]["detail"], by_name[name]


def test_a_collection_error_is_recorded(tmp_path):
    suite = write_suite(tmp_path / "s", "import no_such_module_here\n")
    (tmp_path / "s" / "test_ok.py").write_text("def test_fine():\n    pass\n")
    tests, _ = run_suite(suite, tmp_path / "w", quiet)
    by_outcome = {t["outcome"] for t in tests}
    assert "error" in by_outcome and outcomes(tests).get("test_fine") == "passed"


def test_suite_identity_follows_contents(tmp_path):
    suite = write_suite(tmp_path / "s", "def test_x():\n    pass\n")
    first = suite_identity(suite)
    assert first == suite_identity(suite) and first["path"] == str(suite.resolve())
    (suite / "test_it.py").write_text("def test_x():\n    assert 0\n")
    assert suite_identity(suite)["hash"] != first["hash"]


def test_a_cell_that_ran_another_suite_is_not_complete(tmp_path):
    from matrix.core import Release
    from matrix.measure.cells import Cell

    cell = Cell(Release.parse("3.9.0"), "2.4.6", ("interpret",), "3.11", "2.13.0")
    path = tmp_path / f"{cell.id}.json"
    run = Run(cell.id, {"triton": "3.9.0", "numpy": "2.4.6"}, extra={"complete": True})
    write_raw(run, path)
    suite = write_suite(tmp_path / "s", "def test_x():\n    pass\n")
    wanted = suite_identity(suite)
    assert existing_state(path, cell) == "complete"  # no --tests: the probes are all it needs
    assert existing_state(path, cell, wanted) == "partial"  # never ran this suite
    run.extra["suite"] = wanted
    write_raw(run, path)
    assert existing_state(path, cell, wanted) == "complete"
    (suite / "test_it.py").write_text("def test_x():\n    assert 0\n")
    assert existing_state(path, cell, suite_identity(suite)) == "partial"  # contents changed


@pytest.mark.interpreter
@pytest.mark.slow
def test_launches_of_the_fixture_library_are_captured_and_compile(tmp_path):
    from matrix.backends.kernels import MATRIX_CLASSES, compile_launch

    tests, launches, sources = run_suite_recorded(TEAMLIB, tmp_path / "w", quiet)
    got = outcomes(tests)
    # Block pointers are gone from 3.9's interpreter; every other kernel's test passes.
    assert got.pop("test_matmul_block_ptr") in ("passed", "failed")
    assert len(got) == 7 and set(got.values()) == {"passed"}, got
    by_name = {launch["name"]: launch for launch in launches}
    assert set(by_name) == {
        "add_kernel", "row_sum_kernel", "matmul_block_ptr_kernel", "matmul_kernel",
        "copy_descriptor_kernel", "scale_kernel", "relu_autotuned_kernel",
    }  # fmt: skip
    adds = [launch for launch in launches if launch["name"] == "add_kernel"]
    # test_add runs twice (n=1, n=1000): two specializations, since the JIT compiles an int
    # argument equal to 1 as the constant 1 (not do_not_specialize); each keeps its example.
    assert len(adds) == 2
    add = next(a for a in adds if a["example"]["shapes"]["x_ptr"] == [1])
    assert add["signature"] == {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}
    assert add["constexprs"] == {"BLOCK": 256} and add["module"] == "teamlib.kernels"
    assert add["example"]["grid"] == [1]
    assert {a["example"]["shapes"]["x_ptr"][0] for a in adds} == {1, 1000}
    auto = by_name["relu_autotuned_kernel"]
    assert auto["constexprs"] == {"BLOCK": 128} and auto["options"]["num_warps"] == 4
    assert by_name["matmul_kernel"]["signature"]["a_ptr"] == "*fp16"
    json.dumps(launches)  # the raw file must be able to hold them

    # The aot step needs no interpreter: compile in a child, as the runner does.
    code = (
        "import json, sys; from matrix.backends.kernels import compile_launch; "
        "spec = json.load(sys.stdin); "
        "print(json.dumps([compile_launch(l, 'cuda:90', sys.argv[1], spec['sources']) "
        "for l in spec['launches']]))"
    )
    spec = json.dumps({"launches": launches, "sources": sources})
    compiled = compile_in_child(code, str(TEAMLIB), stdin=spec, timeout=600)
    assert {r["source"] for r in compiled} == {"recorded"}  # rebuilt, not imported by name
    recs = {r["kernel"].split(":")[1]: r for r in compiled}
    mm = recs["matmul_kernel"]
    assert mm["status"] == "compiled" and mm["instruction_class"] in MATRIX_CLASSES, mm
    assert mm["registers"] > 0 and mm["spills"] == 0 and mm["instructions"] > 50
    assert recs["add_kernel"]["instruction_class"] == "none" and recs["add_kernel"]["shared"] == 0
    assert compile_launch  # imported here only to prove the module imports without Triton loaded


@pytest.mark.parametrize("explicit", [True, False])
def test_the_entry_point_loads_the_plugin_once(tmp_path, explicit):
    # An installed project registers the plugin through pytest11; the runner also passes -p.
    # Both together must not register it twice (each test would be recorded twice).
    dist = tmp_path / "site" / "triton_compat_matrix-0.1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: triton-compat-matrix\n"
                                   "Version: 0.1.0\n")  # fmt: skip
    (dist / "entry_points.txt").write_text(
        "[pytest11]\nmatrix.measure.capture = matrix.measure.capture\n"
    )
    suite = write_suite(tmp_path / "s", "def test_one():\n    pass\n")
    events = tmp_path / "events.jsonl"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), str(ROOT)]),
           "MATRIX_EVENTS": str(events)}  # fmt: skip
    plugin = ["-p", "matrix.measure.capture"] if explicit else []
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", str(suite), "-q", "-p", "no:cacheprovider", *plugin],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    done = [json.loads(ln) for ln in events.read_text().splitlines() if '"done"' in ln]
    assert [e["record"]["outcome"] for e in done] == ["passed"]


@pytest.mark.interpreter
def test_a_recorded_launch_replays(tmp_path):
    # What the GPU runner does with a captured launch, here on the CPU under the interpreter:
    # the recorded raw file's launch of add_kernel, the library found where the suite now is.
    code = """
import json, sys, torch
from matrix.backends.kernels import replay
launch = json.loads(sys.stdin.read())
args = replay(launch, device="cpu", suite_root=sys.argv[1])
torch.testing.assert_close(args["out_ptr"], args["x_ptr"] + args["y_ptr"], rtol=0, atol=0)
print(sorted(args), list(args["x_ptr"].shape))
"""
    run = read_raw(ROOT / "tests" / "fixtures" / "teamlib_raw" / "triton-3.9.0-numpy-2.4.6.json")
    (add,) = [launch for launch in run.extra["launches"] if launch["name"] == "add_kernel"]
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", code, str(TEAMLIB)],
        input=json.dumps(add),
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split("\n")[0] == "['BLOCK', 'n', 'out_ptr', 'x_ptr', 'y_ptr'] [1]"


TINY_LIB = """import triton
import triton.language as tl


@triton.jit
def double_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)
"""
TINY_TEST = """import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the library beside its tests
import torch
from tinylib import double_kernel


def test_double():
    x = torch.arange(8, dtype=torch.float32)
    double_kernel[(1,)](x, 8, BLOCK=8)
    assert x.tolist() == [2.0 * i for i in range(8)]
"""


def _tiny_checkout(base: Path) -> Path:
    """A team's checkout at ``base``: tinylib/ beside tests/; returns the suite."""
    (base / "tinylib").mkdir(parents=True)
    (base / "tinylib" / "__init__.py").write_text(TINY_LIB)
    return write_suite(base / "tests", TINY_TEST)


@pytest.mark.interpreter
def test_recorded_launches_do_not_depend_on_where_the_checkout_lives(tmp_path):
    from matrix.backends.kernels import KernelNotLoadable, load_kernel

    recorded = []
    for where in ("a", "b/deeper"):
        suite = _tiny_checkout(tmp_path / where)
        tests, launches = run_suite(suite, tmp_path / where / "w", quiet, test_timeout_s=120)
        assert [t["outcome"] for t in tests] == ["passed"], tests
        recorded.append((tests[0]["id"].split("::")[-1], launches, suite_identity(suite)))
    (name_a, launches_a, id_a), (name_b, launches_b, id_b) = recorded
    assert name_a == name_b and launches_a == launches_b
    (launch,) = launches_a
    assert launch["path_root"] == ".." and launch["file"] == "../tinylib/__init__.py"
    assert id_a["hash"] == id_b["hash"]  # the path differs (outside the checkout: absolute)
    # The launch finds its kernel wherever the suite now is; without the suite's root it says so.
    with pytest.raises(KernelNotLoadable, match="relative to the suite's root"):
        load_kernel(launch)
    code = (
        "import json, sys; from matrix.backends.kernels import load_kernel; "
        "print(load_kernel(json.loads(sys.argv[1]), suite_root=sys.argv[2]).__name__)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, json.dumps(launch), str(tmp_path / "b" / "deeper" / "tests")],
        env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0 and proc.stdout.split() == ["double_kernel"], proc.stderr


def test_a_suite_inside_the_checkout_is_named_relative_to_it():
    assert suite_identity(TEAMLIB)["path"] == "tests/fixtures/teamlib/tests"


def test_the_console_says_how_many_tests_passed_per_release():
    from matrix.measure.cell_summary import suite_summary
    from matrix.results import read_runs

    lines = suite_summary(read_runs(ROOT / "tests" / "fixtures" / "teamlib_raw"))
    assert [ln.split(":")[0].strip() for ln in lines] == ["3.8.0", "3.9.0"]
    assert "tests passed 8/8 (numpy 2.4.6); kernel compiles 21/21" in lines[0]
    assert "tests passed 7/8 (numpy 2.4.6); kernel compiles 18/21" in lines[1]
    assert "cuda:90 6/7" in lines[1] and "test_matmul_block_ptr failed" in lines[1]


def test_pytest_options_name_paths_in_the_suites_own_folder(tmp_path):
    # As Triton's CI runs its language tests: `--ignore=language/test_core.py` from the tests'
    # folder. The matrix runs pytest there too, wherever the matrix itself was started.
    suite = write_suite(tmp_path / "suite", "def test_kept():\n    pass\n")
    (suite / "language").mkdir()
    (suite / "language" / "test_big.py").write_text("def test_left_out():\n    pass\n")
    got = run_suite_recorded(suite, tmp_path / "w", quiet, 120, ["--ignore=language/test_big.py"])
    assert outcomes(got.tests) == {"test_kept": "passed"}, got.tests
    everything = run_suite_recorded(suite, tmp_path / "w2", quiet, 120)
    assert outcomes(everything.tests) == {"test_kept": "passed", "test_left_out": "passed"}
