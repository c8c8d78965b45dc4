"""The gate on a team's test outcomes: what a failure says about Triton (its class), a module
that stops importing, suites run differently, and the evidence a regression carries."""

from __future__ import annotations

import pytest

from matrix.core import DataFileError
from matrix.gate import compare as gc
from matrix.gate import user_tests as ut
from matrix.results import Run
from tests.test_gate import mutate, run_gate
from tests.test_gate import results as results

SUITE = {"path": "t", "hash": "sha256:1", "pytest_args": [], "test_timeout_s": 300.0}
PASSED = [{"id": "t/test_k.py::test_a", "outcome": "passed"}]


def with_tests(tests: list[dict], suite: dict | None = None, launches: list | None = None):
    def change(run: Run) -> Run:
        run.extra["tests"] = tests
        run.extra["suite"] = dict(suite or SUITE)
        run.extra["launches"] = launches or []
        return run

    return change


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        ({"outcome": "failed", "detail": "ModuleNotFoundError: No module named 'scipy'"},
         "environment"),
        ({"outcome": "error", "detail": "RuntimeError: 0 active drivers ([]). There should only"},
         "environment"),
        ({"outcome": "failed", "detail": "AssertionError: Torch not compiled with CUDA enabled"},
         "environment"),
        ({"outcome": "failed", "detail": "ModuleNotFoundError: No module named 'triton.tools.x'"},
         "failed"),
        ({"outcome": "timeout", "detail": "ran past 300 s"}, "timeout"),
        ({"outcome": "crashed", "detail": "signal 11"}, "crashed"),
        ({"outcome": "failed", "detail": "triton.compiler.errors.CompilationError: at 3:4"},
         "triton-refused"),
        ({"outcome": "failed", "detail": "NotImplementedError: block pointers removed"},
         "triton-refused"),
        ({"outcome": "failed", "detail": "AssertionError: Mismatched elements: 3 / 128"},
         "wrong-result"),
        ({"outcome": "failed", "detail": "ValueError: odd"}, "failed"),
    ],
)  # fmt: skip
def test_failures_are_classed_by_the_rules(record, expected):
    assert ut.classify(record)[0] == expected


def test_the_rules_file_is_checked(tmp_path):
    bad = tmp_path / "rules.toml"
    bad.write_text('[[rule]]\nclass = "wrong"\nwhy = "x"\n')
    with pytest.raises(DataFileError, match=r"rule\[0\]\.class: expected one of environment"):
        ut.load_rules(bad)
    bad.write_text('[[rule]]\nclass = "failed"\nwhy = "x"\nmatch = "a"\n')
    with pytest.raises(DataFileError, match="a last rule that matches all"):
        ut.load_rules(bad)


def test_a_module_that_stops_importing_is_a_regression(tmp_path, results):
    broken = {
        "id": "t/test_k.py",
        "outcome": "error",
        "detail": "collection failed: ImportError: cannot import name 'libdevice'",
        "failure": "t/test_k.py:3: in <module>\nE   ImportError: cannot import name 'libdevice'",
    }
    mutate(results, "3.8.0", with_tests(PASSED))
    mutate(results, "3.9.0", with_tests([broken]))
    code, md, doc = run_gate(tmp_path, results)
    assert code == 1, md
    (f, *_) = doc["findings"]
    assert f["kind"] == gc.REGRESSION and f["probe"] == "test t/test_k.py::test_a"
    assert "outcome class: failed" in "; ".join(f["evidence"])
    assert "cannot import name 'libdevice'" in md  # its last lines are in gate.md


def test_an_environment_failure_is_never_a_triton_regression(tmp_path, results):
    missing = [{"id": "t/test_k.py::test_a", "outcome": "failed",
                "detail": "ModuleNotFoundError: No module named 'scipy'"}]  # fmt: skip
    mutate(results, "3.8.0", with_tests(PASSED))
    mutate(results, "3.9.0", with_tests(missing))
    code, md, doc = run_gate(tmp_path, results)
    assert code == 2, md
    assert not [f for f in doc["findings"] if f["kind"] == gc.REGRESSION]
    assert any("outside Triton" in u and "scipy" in u for u in doc["undecidable"]), doc


def test_a_regression_shows_its_class_last_lines_and_kernels(tmp_path, results):
    failed = [{"id": "t/test_k.py::test_a", "outcome": "failed",
               "detail": "AssertionError: Mismatched elements: 3 / 128",
               "failure": "def test_a():\n>       assert_close(out, ref)\nE   AssertionError: "
                          "Mismatched elements: 3 / 128"}]  # fmt: skip
    launch = {"key": "k", "kernel": "t.test_k:test_a.<locals>.add_kernel", "test": failed[0]["id"]}
    mutate(results, "3.8.0", with_tests(PASSED))
    mutate(results, "3.9.0", with_tests(failed, launches=[launch]))
    code, md, doc = run_gate(tmp_path, results)
    assert code == 1, md
    evidence = "; ".join(doc["findings"][0]["evidence"])
    assert "outcome class: wrong-result" in evidence
    assert "last lines: def test_a(): | >       assert_close(out, ref)" in evidence
    assert "kernels it launched: t.test_k:test_a.<locals>.add_kernel" in evidence
    assert "kernels it launched: t.test_k:test_a.<locals>.add_kernel" in md


@pytest.mark.parametrize(
    ("key", "value"),
    [("test_timeout_s", 30.0), ("pytest_args", ["-k", "not slow"]), ("hash", "sha256:2")],
)
def test_suites_run_differently_are_undecidable(tmp_path, results, key, value):
    failed = [{"id": "t/test_k.py::test_a", "outcome": "timeout", "detail": "ran past 30 s"}]
    mutate(results, "3.8.0", with_tests(PASSED))
    mutate(results, "3.9.0", with_tests(failed, {**SUITE, key: value}))
    code, md, doc = run_gate(tmp_path, results)
    assert code == 2, md
    assert not [f for f in doc["findings"] if f["kind"] == gc.REGRESSION]
    (note,) = [u for u in doc["undecidable"] if "not comparable" in u]
    assert f"suite {key}: {SUITE[key]!r} on 3.8.0, {value!r} on 3.9.0" in note
