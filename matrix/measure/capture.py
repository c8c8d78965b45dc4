"""A pytest plugin for a team's suite in a matrix cell: per-test events and captured launches.

Loaded as ``pytest -p matrix.measure.capture`` (the runner does this) or through the
``pytest11`` entry point of the same name once the project is installed. It does nothing unless
``MATRIX_EVENTS`` names a file: then it appends one JSON object per line to that file.

Events (the runner in ``matrix.measure.suite`` reads them):

- ``{"event": "start", "id": NODEID}`` when a test starts, and
  ``{"event": "done", "id": NODEID, "record": TEST}`` when it has finished (setup, call and
  teardown), where TEST is ``{"id", "outcome", "seconds", "detail"}``; outcome is one of
  ``passed``, ``failed``, ``error``, ``skipped``, ``xfailed``, ``xpassed``. A collection
  error is a ``done`` with outcome ``error`` and no ``start``.
- ``{"event": "partial", "id": NODEID, "record": TEST}`` once its call has run (the record so
  far): a teardown that then hangs keeps the call's failure (``supervise.timed_out_record``).
- ``{"event": "collected", "ids": [NODEID, ...]}`` the tests this run will run, and
  ``{"event": "finished", "stopped_early": WHY}`` when pytest is done with them (WHY: pytest's
  own reason for stopping early, ``-x``/``--maxfail``, or ""): a test collected and never
  done was not run (``matrix.measure.suite``), and a process still alive well after
  ``finished`` is held by what a test left running (``matrix.measure.supervise``).
- ``{"event": "overridden", "text": ...}`` when the suite's own configuration (``addopts`` of
  its ``pytest.ini``, ``PYTEST_ADDOPTS``) stops at the first failures (``-x``, ``--maxfail``):
  the plugin lifts that limit so that every test has an outcome, and says so. Given on the
  command line (``--tests-args``), the limit stays, and the tests it stops are ``not run``.
- ``{"event": "launch", "launch": LAUNCH}`` the first time each distinct specialization of a
  ``@triton.jit`` function is launched. LAUNCH is::

      {"key": "<16 hex digits: kernel + types + constexprs + options>",
       "kernel": "pkg.module:fn", "module": "pkg.module", "name": "fn",
       "file": "../pkg/module.py",   # relative to the suite's root (MATRIX_SUITE_ROOT)
       "path_root": "..",            # the sys.path entry it was imported from, relative too;
                                     # None where the environment imports it (site-packages)
       "signature": {"x_ptr": "*fp32", "n": "i32"},   # non-constexpr arguments, Triton types
                                                      # (a tuple: TUPLE_PREFIX + JSON, below)
       "constexprs": {"BLOCK": 128},                  # JSON values (bool, int, float, str, None)
       "options": {"num_warps": 4},                   # launch options given (num_stages, ...)
       "example": {"shapes": {"x_ptr": [1000]}, "strides": {"x_ptr": [1]},
                   "scalars": {"n": 1000}, "grid": [8, 1, 1]},
       "test": "<nodeid of the test that first launched it>",
       "qualname": "test_mod.test_add.<locals>.add_kernel",  # with <locals>, as defined
       "definition": "<16 hex digits>",   # the key of its KERNEL DEFINITION (below)
       "source_hash": "<16 hex digits>",  # of the definition's source text
       "autotune": {"config": "BLOCK: 64, num_warps: 4, ...", "of": 8}}   # only where the
                                  # redirect pinned its autotuner (the config it ran, of N)

  A (named) tuple argument (Triton 3.3+ takes them) is typed ``"tuple:" + JSON`` of
  ``{"items": [TYPE, ...], "fields": [NAME, ...] or null, "name": CLASS or null}``, where a
  TYPE is a Triton type string, ``"constexpr"`` (a ``None`` or ``tl.constexpr`` element: its
  value is in ``constexprs`` under ``"arg[i]"``, ``"arg[i][j]"`` for a nested one) or such an
  object again; ``example.scalars[arg]`` holds the elements' scalar values (``null`` for the
  others). A tuple holding a value the capture cannot type stays ``"unknown:tuple CLASS"``.

- ``{"event": "definition", "id": ID, "definition": KERNEL DEFINITION}`` once per distinct
  definition, before the first launch that names it. A KERNEL DEFINITION is what the kernel
  that ran was made of, so that the aot cell can rebuild exactly that function
  (``matrix.backends.kernels.rebuild_kernel``) instead of importing it by name::

      {"name": "add_kernel", "qualname": "test_add.<locals>.add_kernel", "module": "test_mod",
       "file": "test_mod.py", "line": 12,          # of the ``def`` line; file "<string>" for
                                                  # a kernel built by exec from a string
       "source": "def add_kernel(...):\n    ...",  # decorators stripped, dedented
       "source_hash": "<16 hex digits>",
       "globals": {NAME: VALUE, ...},             # the module globals its body reads
       "closure": {NAME: VALUE, ...},             # the free variables it reads
       "jit": {"noinline": true,                  # @triton.jit options that change codegen
               "do_not_specialize": ["n"]},       # (an int 1 stays an argument)
       "cut": ["..."]}                            # what was left out to bound the record

  A VALUE is ``{"kind": "module", "name": "triton.language"}``, ``{"kind": "jit", "id": ID}``
  (a nested ``@triton.jit`` helper: its own definition, recorded the same way),
  ``{"kind": "constexpr", "value": 4}``, ``{"kind": "dtype", "name": "fp16"}``,
  ``{"kind": "value", "value": 3, "tuple": false}``, ``{"kind": "float", "repr": "nan"}``,
  ``{"kind": "import", "module": "m", "qualname": "f"}``, or ``{"kind": "unrecorded",
  "type": "...", "repr": "..."}`` (a value that could not be recorded: a rebuild that needs it
  is ``skipped``, never a Triton answer).

The source of a kernel built from a string (``exec(src, globals(), ns)``, Triton's own tests
do this) is not in any file: while the plugin is active, ``exec`` and ``compile`` of source
text that mentions ``jit`` remember the text of the code objects they make (same code, same
flags, same filename ``<string>``: nothing the test sees changes).

``example`` is what one launch really passed, so that a GPU can replay it
(``matrix.backends.kernels.replay``).

``MATRIX_SKIP`` may name a file of node ids (one a line) that are deselected: the runner uses
it to resume a suite after a test crashed or hung the process. ``MATRIX_ONLY`` may name a
file of node ids that are the only ones run (a GPU leg's re-run of its regressions).

The hook wraps the interpreter's ``GridExecutor.__call__`` (every interpreted launch goes
through it on Triton 3.0-3.9, direct or via an autotuner) and ``JITFunction.run`` (compiled
launches), whichever exist: found by trying, not by version. Only the standard library is
imported here until Triton is, so the plugin costs a team's suite nothing outside a cell.
"""

from __future__ import annotations

import inspect
import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from matrix.core import (
    REPO_ROOT,
    TEST_ERROR,
    TEST_FAILED,
    TEST_PASSED,
    TEST_XPASSED,
)
from matrix.measure import launches, standin
from matrix.measure.launches import (
    SUITE_ROOT_ENV,
    describe_launch,
    remember_exec_sources,
)
from matrix.measure.launches import strip_decorators as strip_decorators  # its old home

EVENTS_ENV = "MATRIX_EVENTS"
SKIP_ENV = "MATRIX_SKIP"
ONLY_ENV = "MATRIX_ONLY"


class _Writer:
    """Appends events to one file, a line at a time (flushed: a crash loses nothing written)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.lock = threading.Lock()
        self.seen: set[str] = set()
        self.definitions: set[str] = set()
        self.current_test: str | None = None

    def write(self, event: dict[str, Any]) -> None:
        line = json.dumps(event, default=repr) + "\n"
        with self.lock, open(self.path, "a", encoding="utf-8") as f:
            if event.get("event") == "done":
                standin.confirm_parent()  # a test that killed the stand-in is never done
            f.write(line)
            f.flush()


_writer: _Writer | None = None
_owner: dict[str, Any] = {}  # the pytest config that made the writer


# ----------------------------------------------------------------------------- launch hooks


def _record(*launch_args: Any) -> None:
    if _writer is None:
        return
    try:
        launch = describe_launch(*launch_args)
    except Exception as e:  # capture must never break the team's test; say what was missed
        fn = launch_args[0]
        launch = {
            "key": f"error-{getattr(fn, '__name__', '?')}",
            "error": repr(e)[:300],
            "kernel": f"{getattr(fn, '__module__', '?')}:{getattr(fn, '__name__', '?')}",
        }
    if launch["key"] in _writer.seen:
        return
    _writer.seen.add(launch["key"])
    for ident, record in launches._definitions.records.items():
        if ident not in _writer.definitions:
            _writer.definitions.add(ident)
            _writer.write({"event": "definition", "id": ident, "definition": record})
    launch["test"] = _writer.current_test
    _writer.write({"event": "launch", "launch": launch})


def _constexprs_of(fn: Callable[..., Any]) -> set[str]:
    names = set()
    for name, ann in inspect.get_annotations(fn).items():
        text = ann if isinstance(ann, str) else getattr(ann, "__name__", repr(ann))
        if "constexpr" in str(text):
            names.add(name)
    return names


def install_hooks() -> list[str]:
    """Wrap every launch path the installed Triton has; return what was wrapped (may be [])."""
    wrapped = []
    try:
        from triton.runtime import interpreter
    except Exception:
        interpreter = None
    executor = getattr(interpreter, "GridExecutor", None)
    if executor is not None and not getattr(executor.__call__, "_matrix_capture", False):
        original = executor.__call__

        def call(self: Any, *args: Any, **kwargs: Any) -> Any:
            _record(
                self.fn,
                list(self.arg_names),
                set(getattr(self, "constexprs", ())) or _constexprs_of(self.fn),
                args,
                kwargs,
                self.grid,
            )
            return original(self, *args, **kwargs)

        # A marker on the function (typeshed knows no such attribute): already wrapped.
        call._matrix_capture = True  # type: ignore[attr-defined]
        executor.__call__ = call
        wrapped.append("interpreter.GridExecutor.__call__")
    try:
        from triton.runtime.jit import JITFunction
    except Exception:
        JITFunction = None
    run = getattr(JITFunction, "run", None)
    if run is not None and not getattr(run, "_matrix_capture", False):

        def jit_run(self: Any, *args: Any, grid: Any = None, **kwargs: Any) -> Any:
            if not kwargs.get("warmup"):
                names = list(self.arg_names)
                consts = {p.name for p in getattr(self, "params", ()) if p.is_constexpr}
                _record(self.fn, names, consts, args, kwargs, grid, self)
            return run(self, *args, grid=grid, **kwargs)

        # A marker on the function (typeshed knows no such attribute): already wrapped.
        jit_run._matrix_capture = True  # type: ignore[attr-defined]
        JITFunction.run = jit_run
        wrapped.append("jit.JITFunction.run")
    return wrapped


# ------------------------------------------------------------------------------ pytest hooks


def pytest_configure(config: Any) -> None:
    global _writer
    path = os.environ.get(EVENTS_ENV)
    if not path or _writer is not None:
        return
    _writer = _Writer(path)
    _owner["config"] = config
    standin.take_fd()
    remember_exec_sources()
    hooks = install_hooks()
    _writer.write({"event": "hooks", "wrapped": hooks})
    lifted = lift_configured_maxfail(config)
    if lifted:
        _writer.write({"event": "overridden", "text": lifted})


def _maxfail_given(args: list[str]) -> bool:
    """Whether command-line ``args`` set ``-x``/``--exitfirst``/``--maxfail`` (``-xq`` too)."""
    for arg in args:
        if arg.startswith(("--maxfail", "--exitfirst")):
            return True
        if arg.startswith("-") and not arg.startswith("--") and "x" in arg[1:2]:
            return True
    return False


def lift_configured_maxfail(config: Any) -> str:
    """Lift a stop-at-first-failures limit that came from the suite's configuration (ini
    ``addopts``, ``PYTEST_ADDOPTS``), not from the command line; return what was lifted ("")."""
    maxfail = getattr(config.option, "maxfail", 0) or 0
    given = list(getattr(getattr(config, "invocation_params", None), "args", ()) or ())
    if maxfail <= 0 or _maxfail_given([str(a) for a in given]):
        return ""
    config.option.maxfail = 0
    return (
        f"the suite's configuration stops pytest after {maxfail} failure(s) (-x or --maxfail "
        "in addopts): lifted, so that every test runs and has an outcome"
    )


def pytest_collection_finish(session: Any) -> None:
    if _writer is not None and session.config is _owner.get("config"):
        _writer.write({"event": "collected", "ids": [i.nodeid for i in session.items]})


_stopped_early = {"why": ""}


def pytest_sessionfinish(session: Any, exitstatus: Any) -> None:
    if session.config is not _owner.get("config"):
        return
    why = getattr(session, "shouldfail", False) or getattr(session, "shouldstop", False)
    _stopped_early["why"] = why if isinstance(why, str) else ""


def pytest_unconfigure(config: Any) -> None:
    # The last hook pytest calls: what runs after it is the interpreter's exit. Only the
    # session that made the writer finishes (a test running pytest in-process has its own).
    if _writer is not None and config is _owner.get("config"):
        _writer.write({"event": "finished", "stopped_early": _stopped_early["why"]})


def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    _keep_only(config, items)
    skip_file = os.environ.get(SKIP_ENV)
    if not skip_file or not Path(skip_file).exists():
        return
    skip = set(Path(skip_file).read_text(encoding="utf-8").splitlines())
    kept = [i for i in items if i.nodeid not in skip]
    deselected = [i for i in items if i.nodeid in skip]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept


def _keep_only(config: Any, items: list[Any]) -> None:
    """Deselect every item that the ``MATRIX_ONLY`` file does not name (module docstring)."""
    only_file = os.environ.get(ONLY_ENV)
    if not only_file or _writer is None:
        return
    only = set(Path(only_file).read_text(encoding="utf-8").splitlines())
    deselected = [i for i in items if i.nodeid not in only]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = [i for i in items if i.nodeid in only]


_reports: dict[str, dict[str, Any]] = {}


def pytest_runtest_logstart(nodeid: str, location: Any) -> None:
    if _writer is not None:
        _writer.current_test = nodeid
        _reports[nodeid] = {
            "id": nodeid,
            "outcome": "passed",
            "seconds": 0.0,
            "detail": "",
            "t0": time.monotonic(),
        }
        _writer.write({"event": "start", "id": nodeid})


def _places() -> list[tuple[str, str]]:
    """(absolute folder, the name a record gives it), longest first: the suite's root (its
    files are named relative to it, as the test ids are), the environment, the Python it was
    made from, the matrix's checkout, the home folder and the temporary folder."""
    named = [
        (os.environ.get(SUITE_ROOT_ENV), ""),
        (sys.prefix, "<env>/"),
        (sys.base_prefix, "<python>/"),
        (str(REPO_ROOT), "<matrix>/"),
        (os.path.expanduser("~"), "~/"),
        (tempfile.gettempdir(), "<tmp>/"),
    ]
    out: dict[str, str] = {}
    for folder, name in named:
        if folder and folder != os.sep:
            for form in (os.path.abspath(folder), os.path.realpath(folder)):
                out.setdefault(form.rstrip(os.sep) + os.sep, name)
    return sorted(out.items(), key=lambda kv: -len(kv[0]))


def scrub_paths(text: str) -> str:
    """``text`` (a failure's report) with the absolute folders of this machine replaced by
    the names ``_places`` gives them: a recorded test says the same wherever the checkout and
    the suite live, and no page built from it carries the build machine's paths."""
    for folder, name in _places():
        text = text.replace(folder, name)
    return text


def _detail(report: Any) -> str:
    text = getattr(report, "longreprtext", "") or ""
    crash = getattr(getattr(report, "longrepr", None), "reprcrash", None)
    if crash is not None and getattr(crash, "message", None):
        text = crash.message
    elif isinstance(getattr(report, "longrepr", None), tuple):  # a skip: (file, line, reason)
        text = str(report.longrepr[2])
    return scrub_paths(text.strip())[:500]


FAILURE_LINES, FAILURE_CHARS = 15, 2000


def _failure_tail(report: Any) -> str:
    """The last lines of a failure's report: where it failed and with what (the gate shows
    them beside a regression)."""
    text = scrub_paths(getattr(report, "longreprtext", "") or "")
    lines = [ln.rstrip() for ln in text.splitlines() if ln.strip()]
    return "\n".join(lines[-FAILURE_LINES:])[-FAILURE_CHARS:]


def pytest_runtest_logreport(report: Any) -> None:
    _note_report(report)
    _send_partial(report)


def _note_report(report: Any) -> None:
    """Fold one phase's report (setup, call, teardown) into its test's record."""
    rec = _reports.get(report.nodeid)
    if _writer is None or rec is None:
        return
    xfail = hasattr(report, "wasxfail")
    if report.skipped:
        outcome = "xfailed" if xfail else "skipped"
    elif report.failed:
        outcome = "failed" if report.when == "call" else "error"
    elif xfail and report.when == "call":
        outcome = "xpassed"
    else:
        return
    # The first thing that went wrong is the outcome.
    if rec["outcome"] in (TEST_PASSED, TEST_XPASSED):
        rec["outcome"], rec["detail"] = outcome, _detail(report) or getattr(report, "wasxfail", "")
        if outcome in (TEST_FAILED, TEST_ERROR):
            rec["failure"] = _failure_tail(report)
    elif outcome == TEST_ERROR and rec["outcome"] != TEST_ERROR:  # a teardown error after a failure
        rec["detail"] += f" (and in {report.when}: {_detail(report)})"


def _send_partial(report: Any) -> None:
    """Once a test's call has run, the record so far (module docstring: ``partial``)."""
    rec = _reports.get(report.nodeid)
    # After the call, or after a setup that did not pass (no call comes then).
    last = report.when == "call" or (report.when == "setup" and not report.passed)
    if _writer is not None and rec is not None and last:
        _writer.write(
            {"event": "partial", "id": report.nodeid,
             "record": {k: v for k, v in rec.items() if k != "t0"}}
        )  # fmt: skip


def pytest_runtest_logfinish(nodeid: str, location: Any) -> None:
    rec = _reports.pop(nodeid, None)
    if _writer is None or rec is None:
        return
    rec["seconds"] = round(time.monotonic() - rec.pop("t0"), 3)
    _writer.current_test = None
    _writer.write({"event": "done", "id": nodeid, "record": rec})


def pytest_collectreport(report: Any) -> None:
    if _writer is not None and report.failed:
        rec = {
            "id": report.nodeid or "<collection>",
            "outcome": "error",
            "seconds": 0.0,
            "detail": "collection failed: "
            + (_detail(report) or scrub_paths(report.longreprtext)[-500:]),
            "failure": _failure_tail(report),
        }
        _writer.write({"event": "done", "id": rec["id"], "record": rec})
