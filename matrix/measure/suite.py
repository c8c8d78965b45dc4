"""A team's own pytest suite in a matrix cell: every test's outcome and every kernel it launched.

The suite runs under the interpreter (``TRITON_INTERPRET=1``) with the plugin
``matrix.measure.capture``, supervised by ``matrix.measure.supervise``: each test has its own
time limit, a test that hangs is ``timeout`` and one that kills pytest (a segfault) is
``crashed``, both named, and the tests after it still run; a daemon a test leaves holding
pytest's stdout blocks nothing. A suite that cannot run at all is one ``error`` entry, never a
pass.

What a cell's raw file gets (keys of the run, beside ``results``)::

    "suite":    {"path": "tests/team", "hash": "sha256:<hex>",       # suite_identity()
                 "pytest_args": ["-k", "not slow"], "test_timeout_s": 300.0}
    "tests":    [{"id": "tests/test_k.py::test_add[64]", "outcome": "passed",
                  "seconds": 0.12, "detail": "", "failure": "last lines of the report"}, ...]
    "launches": [LAUNCH, ...]        # matrix.measure.capture's docstring; one per specialization
    "kernel_sources": {ID: KERNEL DEFINITION, ...}   # matrix.measure.capture; what each ran

Bounds (issue 40): the suite as a whole runs at most ``suite_timeout_s`` (default
``DEFAULT_SUITE_TIMEOUT_S``, 4 hours; restarts included), then it is stopped: every test that
finished keeps its outcome, the tests it had not reached are ``skipped`` with a ``not run:``
detail, and one ``error`` entry names the limit. A pytest that has finished its tests but does
not exit (a test left non-daemon threads) is stopped ``SUITE_EXIT_GRACE_S`` later, every
outcome kept. A suite whose own configuration stops at the first failure (``-x`` in its
``pytest.ini``) has that lifted and the console says so; ``-x`` given in ``--tests-args``
stays, and each test it stopped is ``skipped``, ``not run: pytest stopped early ...``.

pytest starts from ``PYTEST_BOOT``, not ``python -m pytest``: the tool's plugins are imported
from the matrix's checkout first and then dropped from ``sys.modules``, so a team module named
``matrix`` (or a ``matrix`` package of its own) is the team's, and cannot hide the plugin.

A suite is the same suite only with the same files, the same pytest options and the same
per-test time limit: a test that passes only under a longer limit, or only with ``-k``, is not
comparable (the orchestrator reruns such a cell; the gate calls a difference undecidable).

outcome is ``passed``, ``failed``, ``error``, ``skipped``, ``xfailed``, ``xpassed``,
``timeout`` or ``crashed``. ``id`` is pytest's node id; the gate pairs tests by it.

No recorded path depends on where the checkout lives: the suite's path is relative to the
matrix's checkout when the suite is inside it (absolute otherwise: named once, here), and
every path in a launch is relative to the suite's root (``suite_root``).
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from matrix.core import REPO_ROOT, TEST_SKIPPED, passed_test
from matrix.measure import capture, test_device
from matrix.measure.supervise import Supervised, supervise

DEFAULT_TEST_TIMEOUT_S = 300.0
# The whole suite's bound (module docstring), and how long a pytest that said it had finished
# its tests may take to exit before it is stopped.
DEFAULT_SUITE_TIMEOUT_S = 4 * 3600.0
SUITE_EXIT_GRACE_S = 30.0
NOT_RUN = "not run: "
# Files that change what a suite does; caches and bytecode do not.
_SKIP_DIRS = {"__pycache__", ".pytest_cache", ".git", ".nox", ".venv", "node_modules"}


def suite_root(suite: Path) -> Path:
    """The folder the launches' paths are relative to: the suite, or the folder of a file."""
    suite = suite.resolve()
    return suite if suite.is_dir() else suite.parent


def suite_identity(
    suite: Path,
    pytest_args: Sequence[str] = (),
    test_timeout_s: float = DEFAULT_TEST_TIMEOUT_S,
    device: str = test_device.CPU,
) -> dict[str, Any]:
    """``{"path", "hash", "pytest_args", "test_timeout_s"}`` of a suite: where it is, a hash of
    every file in it, and how it was run (module docstring says why those belong to it); under
    the CUDA-to-CPU redirect also ``"device": "cuda-on-cpu"`` and the faked ``"capability"``
    (``matrix.measure.test_device``; absent for the plain interpreter, as before).

    ``path`` is relative to the matrix's checkout (``REPO_ROOT``) when the suite is inside it,
    so that the same checkout elsewhere records the same identity. A cell whose recorded
    identity differs from the one asked for is not complete: its suite is run again
    (``matrix.measure.orchestrate``).
    """
    suite = suite.resolve()
    files = (
        [suite]
        if suite.is_file()
        else sorted(
            p
            for p in suite.rglob("*")
            if p.is_file()
            and not _SKIP_DIRS.intersection(p.relative_to(suite).parts)
            and p.suffix != ".pyc"
        )
    )
    h = hashlib.sha256()
    for p in files:
        h.update(str(p.relative_to(suite) if p != suite else p.name).encode() + b"\0")
        h.update(p.read_bytes() + b"\0")
    root = REPO_ROOT.resolve()
    path = suite.relative_to(root).as_posix() if suite.is_relative_to(root) else str(suite)
    identity: dict[str, Any] = {
        "path": path,
        "hash": f"sha256:{h.hexdigest()}",
        "pytest_args": list(pytest_args),
        "test_timeout_s": float(test_timeout_s),
    }
    if device == test_device.CUDA_ON_CPU:
        identity["device"] = device
        identity["capability"] = test_device.capability()
    return identity


def _error(suite: Path, detail: str) -> dict[str, Any]:
    return {"id": str(suite), "outcome": "error", "seconds": 0.0, "detail": detail}


# ``python -c PYTEST_BOOT REPO_ROOT PYTEST_ARGS...``: pytest with the tool's own plugins (``-p
# matrix.…``) imported from the checkout before the suite's folder (first on ``sys.path``, as
# with ``python -m pytest``) could shadow them, and then forgotten by name, so that the team's
# own ``matrix`` module imports as theirs. The plugin modules stay alive as pytest's plugins.
PYTEST_BOOT = (
    "import importlib, os, sys\n"
    "repo, args = sys.argv[1], sys.argv[2:]\n"
    "path = sys.path[:]\n"
    "sys.path[:] = [repo] + [p for p in path if p not in ('', os.getcwd())]\n"
    "plugins, rest, i = [], [], 0\n"
    "while i < len(args):\n"
    "    if args[i] == '-p' and i + 1 < len(args) and args[i + 1].split('.')[0] == 'matrix':\n"
    "        plugins.append(importlib.import_module(args[i + 1]))\n"
    "        i += 2\n"
    "        continue\n"
    "    rest.append(args[i])\n"
    "    i += 1\n"
    "sys.path[:] = path\n"
    "for name in [n for n in sys.modules if n == 'matrix' or n.startswith('matrix.')]:\n"
    "    del sys.modules[name]\n"
    "import pytest\n"
    "sys.exit(int(pytest.main(rest, plugins=plugins)))\n"
)


def pytest_launcher() -> list[str]:
    """The start of the command that runs pytest on a team's suite (``PYTEST_BOOT``)."""
    return [sys.executable, "-c", PYTEST_BOOT, str(REPO_ROOT)]


def suite_environment(base: dict[str, str]) -> dict[str, str]:
    """``base`` without the matrix's checkout on ``PYTHONPATH``: the suite's ``import matrix``
    finds the team's module or none (``PYTEST_BOOT`` loads the tool's plugins itself)."""
    env = dict(base)
    root = str(REPO_ROOT)
    kept = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != root]
    if kept:
        env["PYTHONPATH"] = os.pathsep.join(kept)
    else:
        env.pop("PYTHONPATH", None)
    return env


def not_run_records(
    collected: Sequence[str], records: dict[str, dict[str, Any]], why: str
) -> list[dict[str, Any]]:
    """A ``skipped`` record (``not run: why``) for each ``collected`` test with no record."""
    return [
        {"id": tid, "outcome": TEST_SKIPPED, "seconds": 0.0, "detail": NOT_RUN + why}
        for tid in dict.fromkeys(collected)
        if tid not in records
    ]


class SuiteRun(NamedTuple):
    """What one run of a suite recorded (module docstring: the raw file's keys)."""

    tests: list[dict[str, Any]]
    launches: list[dict[str, Any]]
    kernel_sources: dict[str, dict[str, Any]]


def run_suite(
    suite: Path,
    workdir: Path,
    log: Callable[..., None],
    test_timeout_s: float = DEFAULT_TEST_TIMEOUT_S,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Run ``suite``; return (tests, launches) as the raw file stores them (module docstring)."""
    got = run_suite_recorded(suite, workdir, log, test_timeout_s)
    return got.tests, got.launches


def _pytest_environment(
    root: Path, workdir: Path, interpret: bool, redirect: bool
) -> dict[str, str]:
    """The environment the suite's pytest runs in: the interpreter on or off, recorded paths
    relative to the suite's ``root``, a Triton cache of the cell's own, the faked capability
    where CUDA is redirected to the CPU."""
    env = suite_environment(dict(os.environ))
    env.pop("TRITON_INTERPRET", None)
    if interpret:
        env["TRITON_INTERPRET"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    env[capture.SUITE_ROOT_ENV] = str(root)
    env.setdefault("TRITON_CACHE_DIR", str(workdir / "triton-cache"))
    if redirect:
        env[test_device.CAPABILITY_ENV] = test_device.capability()
    return env


def _pytest_command(
    suite: Path, root: Path, redirect: bool, pytest_args: Sequence[str]
) -> list[str]:
    """pytest's command line for the suite, with the capture plugin (and the redirect)."""
    return [
        *pytest_launcher(),
        str(suite),
        "-q",
        # Test ids relative to the suite's root wherever the checkout and the suite live:
        # without it pytest takes the common ancestor of the cwd and the suite (/tmp for a
        # checkout and a suite both under /tmp, so ids carried the temporary folder's name).
        f"--rootdir={root}",
        "-p",
        "no:cacheprovider",
        *(["-p", "matrix.measure.redirect"] if redirect else []),
        "-p",
        capture.__name__,
        "--continue-on-collection-errors",  # a module that cannot import is one error entry
        *pytest_args,
    ]


def _tests_of(
    suite: Path, result: Supervised, collected: list[str], stopped_early: list[str]
) -> list[dict[str, Any]]:
    """The suite's test records: each finished test, then those collected and never run, or
    one error record where pytest recorded no test at all."""
    tests = [
        {k: rec.get(k, "") for k in ("id", "outcome", "seconds", "detail", "failure")}
        for rec in result.records.values()
    ]
    for t in tests:
        if not t["failure"]:
            del t["failure"]
    if not tests:
        tail = " ".join(result.output_tail.split())[-600:]
        why = "collected no tests" if result.last_exit == 5 else "recorded no test"
        tests = [_error(suite, f"pytest {why} (exit {result.last_exit}): {tail}")]
    else:
        tests += not_run_records(collected, result.records, _not_run_why(result, stopped_early))
        if result.stopped:
            tests.append(_error(suite, f"the suite was stopped: {result.stopped}"))
    return tests


def run_suite_recorded(
    suite: Path,
    workdir: Path,
    log: Callable[..., None],
    test_timeout_s: float = DEFAULT_TEST_TIMEOUT_S,
    pytest_args: Sequence[str] = (),
    suite_timeout_s: float = DEFAULT_SUITE_TIMEOUT_S,
    interpret: bool = True,
    device: str = test_device.CPU,
) -> SuiteRun:
    """Run ``suite`` with ``pytest_args`` added to pytest's command line (in the suite's
    folder, ``suite_root``: a relative path in them is relative to it); return all it
    recorded (module docstring). ``interpret=False``: natively, on the machine's GPU (a GPU
    leg, ``matrix.measure.legs``). ``device`` ``cuda-on-cpu`` loads the CUDA-to-CPU redirect
    before collection (``matrix.measure.redirect``) and names each failed test's class."""
    root = suite_root(suite)
    redirect = device == test_device.CUDA_ON_CPU
    env = _pytest_environment(root, workdir, interpret, redirect)
    cmd = _pytest_command(suite, root, redirect, pytest_args)
    launches: dict[str, dict[str, Any]] = {}
    sources: dict[str, dict[str, Any]] = {}
    hooks: list[str] = []
    counts = {"n": 0, "passed": 0}
    collected: list[str] = []
    stopped_early: list[str] = []

    def on_record(item: str, rec: dict[str, Any]) -> None:
        counts["n"] += 1
        counts["passed"] += passed_test(rec)
        if not passed_test(rec) or counts["n"] % 25 == 0:
            log(
                f"  tests: {counts['n']} done, {counts['passed']} passed; "
                f"{item} -> {rec.get('outcome')}"
            )

    def on_event(event: dict[str, Any]) -> None:
        if event.get("event") == "launch":
            launch = event["launch"]
            launches.setdefault(launch["key"], launch)
        elif event.get("event") == "definition":
            sources.setdefault(event["id"], event["definition"])
        elif event.get("event") == "hooks":
            hooks[:] = event.get("wrapped", [])
        else:
            _session_event(event, collected, stopped_early, log)

    shown = f", pytest options {' '.join(pytest_args)}" if pytest_args else ""
    if redirect:
        shown += f", CUDA redirected to the CPU (faked capability {test_device.capability()})"
    log(f"running user tests {suite} (each test limited to {test_timeout_s:g} s{shown})")
    result = supervise(
        cmd,
        workdir / "suite",
        env,
        events_env=capture.EVENTS_ENV,
        skip_env=capture.SKIP_ENV,
        item_timeout_s=test_timeout_s,
        on_record=on_record,
        on_event=on_event,
        # pytest runs in the suite's folder: paths in ``--tests-args`` (``--ignore=sub/x.py``)
        # mean what they mean where the team runs its suite, not the matrix checkout's.
        cwd=root,
        total_timeout_s=suite_timeout_s,
        exit_grace_s=SUITE_EXIT_GRACE_S,
    )
    if result.lingered:
        log(f"  {result.lingered}")
    tests = _tests_of(suite, result, collected, stopped_early)
    if redirect:
        test_device.label_tests(tests)
    cannot_start = test_device.start_line(tests) or test_device.not_collected_line(tests)
    if cannot_start:
        log(f"  {cannot_start}")
    log(
        f"  tests: {sum(passed_test(t) for t in tests)} of {len(tests)} passed; "
        f"{len(launches)} kernel specializations captured (hooks: {', '.join(hooks) or 'none'})"
    )
    return SuiteRun(tests, list(launches.values()), sources)


def _session_event(
    event: dict[str, Any], collected: list[str], stopped_early: list[str], log: Callable[..., None]
) -> None:
    """The plugin's session events (``matrix.measure.capture``): the tests a run will run, why
    pytest stopped early, and a suite limit it lifted (said on the console)."""
    kind = event.get("event")
    if kind == "collected":
        collected.extend(str(i) for i in event.get("ids") or ())
    elif kind == "finished" and event.get("stopped_early"):
        stopped_early.append(str(event["stopped_early"]))
    elif kind == "overridden":
        log(f"  {event.get('text')}")


def _not_run_why(result: Supervised, stopped_early: Sequence[str]) -> str:
    if result.stopped:
        return f"the suite was stopped ({result.stopped})"
    if stopped_early:
        return f"pytest stopped early ({stopped_early[-1]})"
    return "pytest ended before it ran this test"
