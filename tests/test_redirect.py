"""`--tests-device cuda-on-cpu`: a suite written for a GPU runs its kernels on CPU tensors under
the interpreter, its launches captured; its failures are classed; a suite that cannot start is
named (matrix.measure.redirect, matrix.measure.test_device)."""

import textwrap
from pathlib import Path

import pytest

from matrix.core import DataFileError
from matrix.gate import user_tests as ut
from matrix.measure import test_device
from matrix.measure.suite import run_suite_recorded, suite_identity
from matrix.results import Run


def quiet(*a):
    pass


GPU_SUITE = """
import torch, triton, triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.autotune(configs=[triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 64})], key=["n"])
@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2, mask=m)


@triton.jit
def asm_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    y = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [tl.load(x_ptr + offs)],
                                  dtype=tl.int32, is_pure=True, pack=1)
    tl.store(x_ptr + offs, y)


def test_gpu_written():
    assert DEVICE == "cuda" and torch.cuda.get_device_capability() == (9, 0)
    assert triton.runtime.driver.active.get_current_target().arch == 90
    props = triton.runtime.driver.active.utils.get_device_properties(torch.cuda.current_device())
    assert props["multiprocessor_count"] > 0
    x = torch.arange(100, device="cuda", dtype=torch.float32).cuda()
    out = torch.empty_like(x).to("cuda:0")
    assert x.is_cuda and x.device.type == "cpu"
    with torch.autocast("cuda", dtype=torch.float16):
        scale_kernel[lambda m: (triton.cdiv(100, m["BLOCK"]),)](x, out, 100)
    torch.cuda.synchronize()
    torch.testing.assert_close(out, x * 2)


@triton.jit
def later_kernel(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1)


def test_inline_asm():
    x = torch.zeros(32, device="cuda", dtype=torch.int32)
    asm_kernel[(1,)](x, 32, BLOCK=32)
    later_kernel[(1,)](x, BLOCK=32)  # still launched (and captured) after asm_kernel failed
    assert int(x.sum()) == 32
"""


def write(folder: Path, name: str, body: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(textwrap.dedent(body))
    return folder


@pytest.mark.interpreter
def test_a_gpu_written_suite_runs_under_the_redirect_and_its_launches_are_captured(tmp_path):
    suite = write(tmp_path / "gpu_suite", "test_gpu.py", GPU_SUITE)
    got = run_suite_recorded(
        suite, tmp_path / "w", quiet, 120.0, (), device=test_device.CUDA_ON_CPU
    )
    by_name = {t["id"].split("::")[-1]: t for t in got.tests}
    assert by_name["test_gpu_written"]["outcome"] == "passed", by_name["test_gpu_written"]
    # inline asm cannot run in the interpreter: classed, and its launch captured before it ran
    assert by_name["test_inline_asm"]["outcome"] == "failed"
    assert by_name["test_inline_asm"][test_device.CLASS_KEY] == "inline-asm"
    launched = {launch["name"]: launch for launch in got.launches}
    # the test went on past the kernel the interpreter could not run: its next launch is seen
    assert set(launched) == {"scale_kernel", "asm_kernel", "later_kernel"}
    assert launched["later_kernel"]["test"].endswith("test_inline_asm")
    assert "inline_asm" in by_name["test_inline_asm"]["detail"]
    # the autotuner ran its first configuration only, and the launch says which of how many
    assert launched["scale_kernel"]["constexprs"] == {"BLOCK": 32}
    assert launched["scale_kernel"]["autotune"]["of"] == 2
    assert "BLOCK: 32" in launched["scale_kernel"]["autotune"]["config"]
    assert launched["scale_kernel"]["signature"]["x_ptr"] == "*fp32"


@pytest.mark.interpreter
def test_without_the_redirect_the_same_suite_does_not_run(tmp_path):
    suite = write(tmp_path / "gpu_suite", "test_gpu.py", GPU_SUITE)
    got = run_suite_recorded(suite, tmp_path / "w", quiet, 120.0, (), device=test_device.CPU)
    assert not any(t["outcome"] == "passed" for t in got.tests), got.tests
    assert not any(test_device.CLASS_KEY in t for t in got.tests)


def test_auto_redirects_a_suite_that_mentions_cuda_on_a_machine_without_one(tmp_path, monkeypatch):
    cuda = write(tmp_path / "cuda", "test_a.py", "x = 1\ny = torch.zeros(3, device='cuda')\n")
    plain = write(tmp_path / "plain", "test_b.py", "def test_b():\n    assert True\n")
    monkeypatch.setattr(test_device, "machine_has_cuda", lambda: False)
    mode, why = test_device.resolve("auto", cuda)
    assert mode == test_device.CUDA_ON_CPU and "test_a.py:2" in why
    assert test_device.resolve("auto", plain)[0] == test_device.CPU
    assert test_device.resolve("cpu", cuda)[0] == test_device.CPU
    monkeypatch.setattr(test_device, "machine_has_cuda", lambda: True)
    assert test_device.resolve("auto", cuda)[0] == test_device.CPU
    with pytest.raises(ValueError, match="--tests-device 'gpu'"):
        test_device.resolve("gpu", cuda)


def test_the_redirect_is_part_of_the_suite_identity(tmp_path, monkeypatch):
    suite = write(tmp_path / "s", "test_a.py", "def test_a():\n    pass\n")
    plain = suite_identity(suite)
    redirected = suite_identity(suite, device=test_device.CUDA_ON_CPU)
    assert "device" not in plain
    assert redirected["device"] == "cuda-on-cpu" and redirected["capability"] == "9.0"
    monkeypatch.setenv(test_device.CAPABILITY_ENV, "8.0")
    assert suite_identity(suite, device=test_device.CUDA_ON_CPU)["capability"] == "8.0"
    monkeypatch.setenv(test_device.CAPABILITY_ENV, "7.5")
    with pytest.raises(DataFileError, match=r"7\.5"):
        suite_identity(suite, device=test_device.CUDA_ON_CPU)


@pytest.mark.parametrize(
    ("record", "cls"),
    [
        ({"outcome": "timeout", "detail": "ran past 120 s"}, "too-slow"),
        ({"outcome": "failed", "detail": "AttributeError: 'float' object has no attribute 'to'"},
         "scalar-as-python-number"),
        ({"outcome": "failed", "failure": "triton/language/extra/libdevice.py: tanh"}, "libdevice"),
        ({"outcome": "error", "detail": "NotImplementedError: Could not run 'lib::op' with "
          "arguments from the 'CPU' backend"}, "op-under-cuda-key"),
        ({"outcome": "failed", "id": "t.py::test_x[bfloat16]", "detail": "Mismatched elements: 3"},
         "bf16-in-interpreter"),
        ({"outcome": "failed", "detail": "InterpreterError: NotImplementedError('Block pointers "
          "have been removed in favor of the tensor descriptor API')"}, "triton-api-removed"),
        ({"outcome": "failed", "detail": "InterpreterError: ValueError('Did you forget to add "
          "@triton.jit ? (`_semantic` argument must be provided')"}, "triton-refused"),
        ({"outcome": "failed", "detail": "Mismatched elements: 3 / 100"}, "wrong-result"),
        ({"outcome": "failed", "detail": "RuntimeError: boom"}, "other"),
        ({"outcome": "passed"}, None),
        ({"outcome": "skipped", "detail": "needs sm100"}, None),
    ],
)  # fmt: skip
def test_each_failure_is_classed_from_the_data_file(record, cls):
    assert test_device.failure_class(record) == cls


COLLECTION_ERROR = {
    "id": "test_model.py",
    "outcome": "error",
    "detail": "collection failed: ImportError while importing test module",
    "failure": "E   ModuleNotFoundError: No module named 'transformers'",
}


def test_a_suite_that_cannot_start_is_named_with_its_import():
    line = test_device.start_line([COLLECTION_ERROR])
    assert line is not None
    assert "could not start" in line and "No module named 'transformers'" in line
    ran = [COLLECTION_ERROR, {"id": "test_ok.py::test_a", "outcome": "passed"}]
    assert test_device.start_line(ran) is None
    assert test_device.not_collected(ran) == [
        ("test_model.py", "ModuleNotFoundError: No module named 'transformers'")
    ]


def test_an_import_that_raised_is_named_by_its_exception():
    record = {
        "id": "<collection>",
        "outcome": "error",
        "detail": "collection failed: ImportError while loading conftest 'conftest.py'.",
        "failure": "lib/ops.py:321: in <module>\nE   ValueError: key contains names that are "
        "not kernel arguments: BT.",
    }
    (entry,) = test_device.cannot_start([record])
    assert entry[1] == "ValueError: key contains names that are not kernel arguments: BT."
    # a conftest that cannot load leaves no record: the runner keeps pytest's output tail
    squashed = {
        "id": "/s",
        "outcome": "error",
        "detail": "pytest recorded no test (exit 4): "
        "conftest.py:20: in <module> E   ValueError: key contains names: BT.",
    }
    assert test_device.cannot_start([squashed]) == [("/s", "ValueError: key contains names: BT.")]


def test_the_gate_says_a_suite_that_cannot_start_and_what_redirected_outcomes_are():
    run = Run(id="c", env={"triton": "3.9.0", "numpy": "2.0"}, results=[])
    run.extra["tests"] = [COLLECTION_ERROR]
    run.extra["suite"] = {"path": "s", "device": "cuda-on-cpu", "capability": "9.0"}
    (line,) = ut.start_failures([run], "3.9.0")
    assert line.startswith("3.9.0 (numpy 2.0): the suite could not start")
    meaning = ut.redirected([run])
    assert meaning is not None and "not GPU correctness" in meaning
    run.extra["suite"] = {"path": "s"}
    assert ut.redirected([run]) is None


def test_modules_that_do_not_import_in_a_suite_that_ran_are_named_with_their_imports():
    ran = [COLLECTION_ERROR, {"id": "test_ok.py::test_a", "outcome": "passed"}]
    line = test_device.not_collected_line(ran)
    assert line == (
        "1 test module(s) could not be imported, their tests did not run: test_model.py "
        "(ModuleNotFoundError: No module named 'transformers')"
    )
    assert test_device.not_collected_line([COLLECTION_ERROR]) is None  # start_line says it
    assert test_device.not_collected_line(ran[1:]) is None
    run = Run(id="c", env={"triton": "3.9.0", "numpy": "2.0"}, results=[])
    run.extra["tests"] = ran
    assert ut.not_collected_lines([run], "3.9.0") == [f"3.9.0 (numpy 2.0): {line}"]
    assert ut.start_failures([run], "3.9.0") == []


def _suite_report(tests: list[dict]) -> str:
    """gate.md for a pair of runs of one suite whose records are ``tests`` on both sides."""
    from matrix.gate import compare as gc
    from matrix.gate import verdict as gv
    from matrix.gate.sides import Sides

    sides = []
    for release in ("3.8.0", "3.9.0"):
        run = Run(id=release, env={"triton": release, "numpy": "2.0"}, results=[])
        run.extra["tests"] = tests
        run.extra["suite"] = {"path": "s"}
        sides.append([run])
    out = gc.Comparison()
    gc.compare_tests(out, Sides(sides[0], sides[1], "3.8.0", "3.9.0"))
    report = gv.GateReport("3.8.0", "3.9.0", "raw", comparison=out)
    report.decide()
    return gv.render_markdown(report)


def test_gate_md_names_the_failing_import_on_its_first_screen():
    md = _suite_report([COLLECTION_ERROR])
    head = md.split("## Details")[0]
    assert md.startswith("**UNDECIDABLE** (exit 2)")
    assert "No module named 'transformers'" in md.splitlines()[0]  # the headline itself
    assert head.count("the suite could not start") == 3  # headline, and each side's line
    part = _suite_report([COLLECTION_ERROR, {"id": "test_ok.py::test_a", "outcome": "passed"}])
    first = part.split("## Details")[0]
    assert "test_model.py (ModuleNotFoundError: No module named 'transformers')" in first
    assert part.startswith("**SAFE**")  # the same on both sides: named, not a regression


def test_a_malformed_failure_table_is_refused(tmp_path):
    bad = tmp_path / "r.toml"
    bad.write_text('[[failure]]\nclass = "x"\nwhy = "y"\nmatch = "a"\n')
    with pytest.raises(DataFileError, match="last rule"):
        test_device.failure_rules(bad)
