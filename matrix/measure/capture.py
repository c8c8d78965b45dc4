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
- ``{"event": "launch", "launch": LAUNCH}`` the first time each distinct specialization of a
  ``@triton.jit`` function is launched. LAUNCH is::

      {"key": "<16 hex digits: kernel + types + constexprs + options>",
       "kernel": "pkg.module:fn", "module": "pkg.module", "name": "fn",
       "file": "../pkg/module.py",   # relative to the suite's root (MATRIX_SUITE_ROOT)
       "path_root": "..",            # the sys.path entry it was imported from, relative too;
                                     # None where the environment imports it (site-packages)
       "signature": {"x_ptr": "*fp32", "n": "i32"},   # non-constexpr arguments, Triton types
       "constexprs": {"BLOCK": 128},                  # JSON values (bool, int, float, str, None)
       "options": {"num_warps": 4},                   # launch options given (num_stages, ...)
       "example": {"shapes": {"x_ptr": [1000]}, "strides": {"x_ptr": [1]},
                   "scalars": {"n": 1000}, "grid": [8, 1, 1]},
       "test": "<nodeid of the test that first launched it>"}

``example`` is what one launch really passed, so that a GPU can replay it
(``matrix.backends.kernels.replay``).

``MATRIX_SKIP`` may name a file of node ids (one a line) that are deselected: the runner uses
it to resume a suite after a test crashed or hung the process.

The hook wraps the interpreter's ``GridExecutor.__call__`` (every interpreted launch goes
through it on Triton 3.0-3.9, direct or via an autotuner) and ``JITFunction.run`` (compiled
launches), whichever exist: found by trying, not by version. Only the standard library is
imported here until Triton is, so the plugin costs a team's suite nothing outside a cell.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from matrix.core import COMPILE_OPTIONS, TEST_ERROR, TEST_PASSED, TEST_XPASSED, TORCH_TO_TRITON

EVENTS_ENV = "MATRIX_EVENTS"
SKIP_ENV = "MATRIX_SKIP"
# The suite's root: recorded paths are relative to it, so that they do not depend on where
# the checkout lives (``matrix.backends.kernels.load_kernel`` resolves them again).
SUITE_ROOT_ENV = "MATRIX_SUITE_ROOT"

# Keyword arguments of a launch that are options, not kernel arguments.
OPTION_NAMES = frozenset(
    {
        "num_warps",
        "num_stages",
        "num_ctas",
        "maxnreg",
        "enable_fp_fusion",
        "waves_per_eu",
        "matrix_instr_nonkdim",
        "kpack",
        "launch_cooperative_grid",
        "launch_pdl",
        "debug",
        "enable_warp_specialization",
        "num_buffers_warp_spec",
        "num_consumer_groups",
    }
)


class _Writer:
    """Appends events to one file, a line at a time (flushed: a crash loses nothing written)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.lock = threading.Lock()
        self.seen: set[str] = set()
        self.current_test: str | None = None

    def write(self, event: dict[str, Any]) -> None:
        line = json.dumps(event, default=repr) + "\n"
        with self.lock, open(self.path, "a", encoding="utf-8") as f:
            f.write(line)
            f.flush()


_writer: _Writer | None = None


def triton_type(value: Any) -> str | None:
    """The Triton type a launch gives ``value``; None for a value that is a constexpr."""
    if value is None:
        return None
    if hasattr(value, "data_ptr") and hasattr(value, "dtype"):
        dtype = str(value.dtype).removeprefix("torch.")
        return "*" + TORCH_TO_TRITON.get(dtype, dtype)
    if type(value).__name__ == "TensorDescriptor" and hasattr(value, "block_shape"):
        base = getattr(value, "base", None)
        dtype = triton_type(base)
        elem = dtype[1:] if dtype else "?"
        return f"tensordesc<{elem}{list(value.block_shape)}>"
    if isinstance(value, bool):
        return "i1"
    if isinstance(value, int):
        if -(2**31) <= value < 2**31:
            return "i32"
        return "i64" if -(2**63) <= value < 2**63 else "u64"
    if isinstance(value, float):
        return "fp32"
    return f"unknown:{type(value).__name__}"


def _json_value(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    inner = getattr(value, "value", None)  # tl.constexpr wraps its value
    if inner is not None and inner is not value:
        return _json_value(inner)
    return repr(value)


def _relative(path: str | None) -> str | None:
    """``path`` relative to the suite's root (POSIX), or as it is without one."""
    base = os.environ.get(SUITE_ROOT_ENV)
    if not path or not base:
        return path
    return Path(os.path.relpath(path, os.path.abspath(base))).as_posix()


def _path_root(file: str | None) -> str | None:
    """The longest ``sys.path`` entry that holds ``file``: where to import its module from,
    relative to the suite's root; None for a module the environment itself imports (one under
    the interpreter's prefix, e.g. an installed package)."""
    if not file:
        return None
    best = None
    for entry in sys.path:
        root = os.path.abspath(entry or os.getcwd())
        if file.startswith(root + os.sep) and (best is None or len(root) > len(best)):
            best = root
    prefixes = {os.path.abspath(p) + os.sep for p in (sys.prefix, sys.base_prefix)}
    if best is None or any((best + os.sep).startswith(p) for p in prefixes):
        return None
    return _relative(best)


def describe_launch(
    fn: Callable[..., Any],
    arg_names: list[str],
    constexpr_names: set[str],
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any],
    grid: Any,
) -> dict[str, Any]:
    """The LAUNCH record (module docstring) of one call of the Python function ``fn``."""
    kernel_kwargs = {k: v for k, v in kwargs.items() if k in arg_names}
    options = {k: _json_value(v) for k, v in kwargs.items() if k in OPTION_NAMES}
    bound = inspect.signature(fn).bind_partial(*args, **kernel_kwargs)
    bound.apply_defaults()
    signature: dict[str, str] = {}
    constexprs: dict[str, Any] = {}
    shapes: dict[str, list[int]] = {}
    strides: dict[str, list[int]] = {}
    scalars: dict[str, Any] = {}
    for name in arg_names:
        value = bound.arguments.get(name)
        kind = None if name in constexpr_names else triton_type(value)
        if kind is None:
            constexprs[name] = _json_value(value)
            continue
        signature[name] = kind
        if hasattr(value, "shape") and hasattr(value, "stride"):
            shapes[name] = [int(s) for s in value.shape]
            strides[name] = [int(s) for s in value.stride()]
        elif not kind.startswith(("*", "tensordesc")):
            scalars[name] = _json_value(value)
    try:
        g = grid(dict(bound.arguments)) if callable(grid) else grid
        grid_dims = [int(d) for d in (g if isinstance(g, tuple | list) else (g,))]
    except Exception:  # a grid lambda reading something we do not pass: no example grid
        grid_dims = None
    module = getattr(fn, "__module__", None) or "?"
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", "?")
    file = inspect.getsourcefile(fn) if hasattr(fn, "__code__") else None
    # Options a release's Config adds with defaults (None) must not split one specialization.
    shaping = {k: v for k, v in options.items() if k in COMPILE_OPTIONS and v is not None}
    identity = json.dumps([module, name, signature, constexprs, shaping], sort_keys=True)
    return {
        "key": hashlib.sha256(identity.encode()).hexdigest()[:16],
        "kernel": f"{module}:{name}",
        "module": module,
        "name": name,
        "file": _relative(file),
        "path_root": _path_root(file),
        "signature": signature,
        "constexprs": constexprs,
        "options": options,
        "example": {"shapes": shapes, "strides": strides, "scalars": scalars, "grid": grid_dims},
    }


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
                _record(self.fn, names, consts, args, kwargs, grid)
            return run(self, *args, grid=grid, **kwargs)

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
    hooks = install_hooks()
    _writer.write({"event": "hooks", "wrapped": hooks})


def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    skip_file = os.environ.get(SKIP_ENV)
    if not skip_file or not Path(skip_file).exists():
        return
    skip = set(Path(skip_file).read_text(encoding="utf-8").splitlines())
    kept = [i for i in items if i.nodeid not in skip]
    deselected = [i for i in items if i.nodeid in skip]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept


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


def _detail(report: Any) -> str:
    text = getattr(report, "longreprtext", "") or ""
    crash = getattr(getattr(report, "longrepr", None), "reprcrash", None)
    if crash is not None and getattr(crash, "message", None):
        text = crash.message
    elif isinstance(getattr(report, "longrepr", None), tuple):  # a skip: (file, line, reason)
        text = str(report.longrepr[2])
    return text.strip()[:500]


def pytest_runtest_logreport(report: Any) -> None:
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
    elif outcome == TEST_ERROR and rec["outcome"] != TEST_ERROR:  # a teardown error after a failure
        rec["detail"] += f" (and in {report.when}: {_detail(report)})"


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
            "detail": f"collection failed: {_detail(report) or report.longreprtext[-500:]}",
        }
        _writer.write({"event": "done", "id": rec["id"], "record": rec})
