"""Where a team's suite runs in a cell, and what its outcomes there mean.

``--tests-device`` (the matrix, the runner and ``nox -s gate``):

- ``cpu``: the suite as written, under Triton's interpreter (``TRITON_INTERPRET=1``);
- ``cuda-on-cpu``: the same, with the CUDA-to-CPU redirect (``matrix.measure.redirect``) loaded
  before collection, so that a suite written for a GPU (``device="cuda"``, ``torch.cuda.*``,
  ``.cuda()``) runs its kernels on CPU tensors;
- ``auto`` (default): ``cuda-on-cpu`` when the suite's sources mention CUDA and this machine has
  no NVIDIA device, else ``cpu``. The check is a text search, said on the console.

Under the redirect a test's outcome is the interpreter's on a faked GPU: an observation of the
launches it made (kernels, dtypes, constexprs, shapes), never GPU correctness. Each failed test
gets a class from ``matrix/data/redirect.toml`` (``label_tests``).

This module imports the standard library only (the orchestrator and the gate read it).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from matrix.core import (
    TEST_CRASHED,
    TEST_ERROR,
    TEST_FAILED,
    TEST_TIMEOUT,
    DataFileError,
    load_toml,
)
from matrix.measure.outcome_rules import OutcomeRule, read_rules

DATA_FILE = Path(__file__).resolve().parent.parent / "data" / "redirect.toml"

CPU, CUDA_ON_CPU, AUTO = "cpu", "cuda-on-cpu", "auto"
MODES = (AUTO, CPU, CUDA_ON_CPU)
DEFAULT_CAPABILITY = "9.0"
# The environment the runner gives the redirect plugin: its faked capability ("9.0").
CAPABILITY_ENV = "MATRIX_REDIRECT_CAPABILITY"
# Field of a test record under the redirect: its failure class (``label_tests``).
CLASS_KEY = "redirect_class"
# What the suite identity and the pages say of outcomes under the redirect.
MEANING = (
    "interpreter outcomes under a CUDA-to-CPU redirect (launch observations, not GPU correctness)"
)

# A mention of CUDA in a test source: a device string, a torch.cuda call, ``.cuda()``.
_ASKS_CUDA = re.compile(r"""["']cuda(:\d+)?["']|\btorch\.cuda\.|\.cuda\(\)""")
_SKIP_DIRS = {"__pycache__", ".git", ".nox", ".venv", "node_modules"}
_NVIDIA_DEVICES = ("/dev/nvidiactl", "/dev/nvidia0")


def capability() -> str:
    """The capability the redirect fakes: ``MATRIX_REDIRECT_CAPABILITY``, default 9.0
    (refused at once when the data file does not describe it)."""
    value = os.environ.get(CAPABILITY_ENV) or DEFAULT_CAPABILITY
    device_properties(value)
    return value


def check_mode(value: str) -> str:
    """``value`` if it is a mode; else ValueError naming it and the modes."""
    if value not in MODES:
        raise ValueError(f"--tests-device {value!r}: expected one of {', '.join(MODES)}")
    return value


def asks_for_cuda(suite: Path, limit: int = 2000) -> str | None:
    """``"file:line"`` of the first mention of CUDA in the suite's Python sources (at most
    ``limit`` files read), or None."""
    suite = suite.resolve()
    files = [suite] if suite.is_file() else sorted(suite.rglob("*.py"))
    for path in files[:limit]:
        if _SKIP_DIRS.intersection(path.parts):
            continue
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        m = _ASKS_CUDA.search(text)
        if m:
            line = text.count("\n", 0, m.start()) + 1
            where = path.relative_to(suite) if path != suite else Path(path.name)
            return f"{where}:{line}"
    return None


def machine_has_cuda() -> bool:
    """An NVIDIA device node or ``nvidia-smi`` on this machine (no torch import: cheap)."""
    return any(Path(p).exists() for p in _NVIDIA_DEVICES) or shutil.which("nvidia-smi") is not None


def resolve(mode: str, suite: Path) -> tuple[str, str]:
    """(``cpu`` or ``cuda-on-cpu``, why) for the ``--tests-device`` value ``mode``."""
    check_mode(mode)
    if mode != AUTO:
        return mode, f"--tests-device {mode}"
    where = asks_for_cuda(suite)
    if where is None:
        return CPU, "the suite's sources do not mention CUDA"
    if machine_has_cuda():
        return CPU, f"the suite mentions CUDA ({where}) and this machine has an NVIDIA device"
    return CUDA_ON_CPU, f"the suite mentions CUDA ({where}) and this machine has no NVIDIA device"


@functools.cache
def device_properties(capability: str, path: Path = DATA_FILE) -> dict[str, Any]:
    """What the faked GPU of ``capability`` ("9.0") reports; DataFileError for one the file
    does not describe (naming those it does)."""
    table = load_toml(path).get("device")
    if not isinstance(table, dict) or capability not in table:
        known = ", ".join(sorted(table)) if isinstance(table, dict) else "none"
        raise DataFileError(path, f"device.{capability!r}", f"one of the capabilities {known}")
    props = dict(table[capability])
    major, _, minor = capability.partition(".")
    if not (major.isdigit() and minor.isdigit()):
        raise DataFileError(path, f"device.{capability!r}", "a capability MAJOR.MINOR")
    props["major"], props["minor"] = int(major), int(minor)
    return props


@functools.cache
def failure_rules(path: Path = DATA_FILE) -> tuple[OutcomeRule, ...]:
    """The ordered ``[[failure]]`` rules of ``path`` (``matrix.measure.outcome_rules``)."""
    return read_rules(path, "failure")


FAILED = (TEST_FAILED, TEST_ERROR, TEST_TIMEOUT, TEST_CRASHED)


def failure_class(record: Mapping[str, Any]) -> str | None:
    """The class of a failed test's record under the redirect; None for one that did not fail."""
    outcome = str(record.get("outcome", ""))
    if outcome not in FAILED:
        return None
    text = "\n".join(str(record.get(k, "")) for k in ("id", "detail", "failure"))
    for rule in failure_rules():
        if rule.applies(outcome, text):
            return rule.cls
    raise AssertionError("the last rule matches everything (failure_rules checks it)")


def label_tests(tests: Iterable[dict[str, Any]]) -> None:
    """Give every failed test record its class (``CLASS_KEY``), in place."""
    for t in tests:
        cls = failure_class(t)
        if cls is not None:
            t[CLASS_KEY] = cls


# ------------------------------------------------------------------ a suite that cannot start

_IMPORT_LINE = re.compile(
    r"(ModuleNotFoundError: No module named '[^']+'|ImportError: [^\n|]{1,200}"
    r"|ImportError while loading conftest '[^']+')"
)


# pytest's "E   ValueError: ..." line, also inside an output tail squashed onto one line.
_RAISED = re.compile(r"(?:^|\s)E\s+([\w.]*(?:Error|Exception)\b[^\n]{0,200})", re.M)


def failing_import(record: Mapping[str, Any]) -> str:
    """What a collection error failed on: the missing module (``No module named 'x'``), else
    the exception pytest printed last (``E   ValueError: ...``: an import that raised), else
    the import line, else the start of its detail."""
    text = f"{record.get('failure', '')}\n{record.get('detail', '')}"
    found = _IMPORT_LINE.findall(text)
    missing = next((f for f in found if f.startswith("ModuleNotFoundError")), None)
    raised = _RAISED.findall(text)
    pick = missing or (raised[-1][:200] if raised else None) or (found[0] if found else None)
    return pick.strip() if pick else " ".join(str(record.get("detail", "")).split())[:200]


def is_collection_error(record: Mapping[str, Any]) -> bool:
    """A record of a module (or the whole suite) that could not be collected, not of a test."""
    return "::" not in str(record.get("id", "")) and record.get("outcome") == TEST_ERROR


def cannot_start(tests: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]] | None:
    """``[(module, failing import), ...]`` when no test of the suite ran because every module
    (or its conftest) could not be collected; None when at least one test ran."""
    if not tests or not all(is_collection_error(t) for t in tests):
        return None
    return [(str(t.get("id")), failing_import(t)) for t in tests]


def not_collected(tests: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """``[(module, failing import), ...]`` of the modules that could not be collected."""
    return [(str(t.get("id")), failing_import(t)) for t in tests if is_collection_error(t)]


def not_collected_line(tests: Sequence[Mapping[str, Any]]) -> str | None:
    """One line naming the test modules that could not be imported in a suite that started
    (their tests did not run), with each one's failing import; None when there are none or
    when the whole suite could not start (``start_line`` says that)."""
    if cannot_start(tests) is not None:
        return None
    failed = [(m, why) for m, why in not_collected(tests) if m.endswith(".py")]
    if not failed:
        return None
    shown = "; ".join(f"{m} ({why})" for m, why in failed[:4])
    more = f" and {len(failed) - 4} more" if len(failed) > 4 else ""
    return (
        f"{len(failed)} test module(s) could not be imported, their tests did not run: "
        f"{shown}{more}"
    )


def start_line(tests: Sequence[Mapping[str, Any]]) -> str | None:
    """One line naming a suite that could not start and its failing imports, or None."""
    failed = cannot_start(tests)
    if failed is None:
        return None
    imports = sorted({why for _, why in failed})
    shown = "; ".join(imports[:4]) + (f" and {len(imports) - 4} more" if len(imports) > 4 else "")
    modules = [m for m, _ in failed if m.endswith(".py")]
    what = (
        f"{len(modules)} module(s) failed to import"
        if modules
        else "pytest stopped before collecting a test (a conftest or plugin failed)"
    )
    return f"the suite could not start: {what} ({shown})"
