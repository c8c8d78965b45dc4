"""Can the installed release compile for a target at all? Found by trying, in a child process.

A release that predates a target does not refuse it politely: 3.0.0-3.2.0 asked for ``cuda:100``
or ``cuda:120`` compile a plain store and then fail in ``ptxas`` ("Value 'sm_100' is not defined
for option 'gpu-name'"), and *abort the process* on a ``tl.dot`` (an assertion in
AccelerateMatmul.cpp: "computeCapability not supported"); 3.0.0-3.1.0 refuse ``hip:gfx950``
("unsupported target: 'gfx950'"). Inside a probe's child that abort would read as a crash, a
Triton failure. So before compiling anything for a target, ``check`` compiles two trial kernels
(a store, and an fp16 ``tl.dot``) for it in a child process; where that fails or dies, every
compile for the target is ``skipped`` with the trial's own words (``TargetUnsupported``).

The answer is kept per release, target and trial source in a JSON file in the cell's
environment (``trials_file``), so a warm run pays nothing; a missing tool (``ld.lld``) is
never kept: it says nothing about the release.

    python -m matrix.backends.trial_kernels cuda:100    # the trial itself: one JSON line
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from matrix.backends import compile_cache
from matrix.backends.lld import LLD_ENV
from matrix.core import REPO_ROOT, AotUnavailable

# Targets the aot backend compiles for, with no GPU present, in the order pages show them. A
# release that cannot compile for one (cuda:100 and cuda:120 before 3.3.1, hip:gfx950 before
# 3.2.0, measured) is ``skipped`` there with the reason (``check``).
KNOWN_TARGETS = ("cuda:80", "cuda:90", "cuda:100", "cuda:120", "hip:gfx942", "hip:gfx950")

TRIALS_ENV = "MATRIX_TARGET_TRIALS"
TRIALS_NAME = "matrix-target-trials.json"
# A trial that takes longer than this is not an answer about the target (a loaded machine).
TRIAL_TIMEOUT_S = 300


class TargetUnsupported(AotUnavailable):
    """The installed release cannot compile for the target (its trial failed): every compile
    for it is ``skipped`` with this reason, never a Triton failure of the code asked about."""


def trials_file() -> Path:
    """Where answers are kept: ``$MATRIX_TARGET_TRIALS``, else in this Python's environment
    (a cell's virtualenv: a fresh environment tries again)."""
    return Path(os.environ.get(TRIALS_ENV) or Path(sys.prefix) / TRIALS_NAME)


def _trial_key(target: str) -> str:
    import triton

    # The trial's own sources: an edit of the trial asks every release again.
    here = Path(__file__)
    source = here.read_bytes() + here.with_name("trial_kernels.py").read_bytes()
    return f"{triton.__version__} {target} {hashlib.sha256(source).hexdigest()[:12]}"


def _load(path: Path) -> dict[str, str | None]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _store(path: Path, key: str, why: str | None) -> None:
    data = _load(path)
    data[key] = why
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".trials-")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1, sort_keys=True)
    os.replace(tmp, path)


def _last_words(text: str) -> str:
    """The line of a dying child's output that says why (an assertion, an error), else its
    last line; LLVM's repeated "is not a recognized processor" notes are left out."""
    # MLIR's location prefix names a file of this checkout: left out of a committed reason.
    lines = [re.sub(r'^loc\("[^"]*":\d+:\d+\):\s*', "", ln.strip()) for ln in text.splitlines()]
    lines = [ln for ln in lines if ln and "is not a recognized processor" not in ln] or lines
    for line in reversed(lines):
        if "Assertion" in line or "error" in line.lower():
            return line[:400]
    return lines[-1][:400] if lines else "no output"


def run_trial(target: str) -> tuple[str, str | None]:
    """("supported", None), ("unsupported", why) or ("tool", why): the trial in a child."""
    # The answer is kept for every later compile, whichever probe asked first: none of the
    # asking process's compile variables (a probe's TRITON_F32_DEFAULT, a fingerprint part's
    # knob) may decide it; only where the linker is stays.
    drop = {k for k, _ in compile_cache.relevant_environment(os.environ)} - {LLD_ENV}
    env = {k: v for k, v in os.environ.items() if k not in drop and k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    with tempfile.TemporaryDirectory(prefix="matrix-target-trial-") as tmp:
        env["TRITON_CACHE_DIR"] = tmp
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "matrix.backends.trial_kernels", target],
                capture_output=True, text=True, env=env, cwd=REPO_ROOT,
                timeout=TRIAL_TIMEOUT_S,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            return "tool", f"the trial compile for {target} took over {TRIAL_TIMEOUT_S} s"
    answer = proc.stdout.strip().splitlines()[-1:] if proc.returncode == 0 else []
    if proc.returncode < 0:  # killed by a signal: the compiler aborted on the target
        return "unsupported", (
            f"compiling a trial kernel for {target} killed the process (signal "
            f"{-proc.returncode}): {_last_words(proc.stderr + proc.stdout)}"
        )
    if not answer:  # an exit with no answer is the harness failing, not the release refusing
        return "tool", (
            f"the trial for {target} ended with exit {proc.returncode} and no answer: "
            f"{_last_words(proc.stderr + proc.stdout)}"
        )
    try:
        kind, why = json.loads(answer[0])
    except (ValueError, TypeError):
        return "tool", f"the trial for {target} printed {answer[0][:200]!r}"
    said = _last_words(proc.stderr) if kind == "unsupported" else ""
    if "error" in said.lower():  # MLIR prints the reason, the exception only "failed"
        why = f"{why} ({said})"
    return kind, why


def check(target: str) -> None:
    """Return if the installed release compiles for ``target``; raise ``TargetUnsupported``
    (with the trial's words) if it cannot, ``AotUnavailable`` if a tool outside Triton is
    missing. Answers are kept (module docstring)."""
    path, key = trials_file(), _trial_key(target)
    kept = _load(path)
    if key in kept:
        why = kept[key]
    else:
        kind, why = run_trial(target)
        if kind == "tool":
            raise AotUnavailable(f"the trial compile for {target} could not run: {why}")
        _store(path, key, why if kind == "unsupported" else None)
    if why is not None:
        raise TargetUnsupported(f"this release cannot compile for {target}: {why}")
