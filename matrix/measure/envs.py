"""One virtual environment per matrix cell, built with uv, and what went wrong when it can't be.

uv hard-links files from its cache, so thirty environments of torch + Triton cost about one on
disk. uv does not read pip's configuration: the local CPU build of torch is found only through
``--find-links "$PIP_FIND_LINKS"`` (without it uv would fetch a multi-GB CUDA build).

An environment is reused when its marker file records the same packages. Any other is rebuilt
aside (``<path>.building-<pid>``, relocatable so that it can move) and renamed into place only
once its install succeeded: a run killed mid-install, or a second run, never sees (or deletes)
a half-built environment under the cell's name. ``matrix.measure.lock`` keeps two runs from
sharing an envs folder at once.

An install that fails for a reason that may pass (the index unreachable, a timeout, a 5xx)
is retried a bounded number of times before it is recorded ``failed``.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from matrix.core import INSTALL_OK, NO_SUCH_RELEASE
from matrix.measure import procs

MARKER = ".matrix-env.json"
INSTALL_TIMEOUT_S = 900
# How often an install that failed for a transient reason is tried in all, and the pause before
# each retry (seconds, doubled each time).
INSTALL_ATTEMPTS = 3
RETRY_PAUSE_S = 2.0
# uv's words for a failure that may pass on a retry (network, index, timeouts).
TRANSIENT_PATTERNS = (
    r"failed to fetch|error sending request|connection (?:reset|refused|closed)|"
    r"timed out|temporary failure in name resolution|dns error|network is unreachable|"
    r"\b5\d\d\b (?:service unavailable|bad gateway|internal server error|gateway timeout)|"
    r"status code 5\d\d|too many requests|\b429\b"
)


@dataclass(frozen=True)
class EnvSpec:
    """What one cell's environment holds."""

    python: str
    triton: str
    numpy: str
    torch: str
    # fastjsonschema: the runner reads an unfinished raw file back (--resume) through the
    # schema check, like every reader (matrix.results.validate).
    extras: tuple[str, ...] = ("packaging", "fastjsonschema")

    def marker(self) -> dict:
        """The marker's content, as JSON gives it back (lists, not tuples): compared as read."""
        return json.loads(json.dumps(asdict(self)))

    def requirements(self) -> list[str]:
        return [
            f"torch=={self.torch}",
            f"triton=={self.triton}",
            f"numpy=={self.numpy}",
            *self.extras,
        ]


@dataclass(frozen=True)
class Install:
    """The ``install`` record of a raw file, plus where the environment's python is."""

    status: str  # "ok", "no-such-release", "no-wheel", "failed"
    seconds: float
    detail: str
    python: Path | None
    # Failed for a reason that may pass (the index unreachable): the cell is left incomplete,
    # so that the next run tries it again instead of keeping the failure for good.
    transient: bool = False

    def record(self) -> dict:
        rec = {"status": self.status, "seconds": round(self.seconds, 1), "detail": self.detail}
        if self.transient:
            rec["transient"] = True
        return rec


@functools.cache
def uv_binary() -> str:
    """uv from the running environment (nox installs it), else from PATH.

    Resolve it once, before starting worker threads: ``uv.find_uv_bin`` reads
    ``sysconfig.get_config_var``, whose first call is not thread-safe (a concurrent first call
    was seen returning None here).
    """
    try:
        from uv import find_uv_bin

        return find_uv_bin()
    except ImportError:
        found = shutil.which("uv")
        if found is None:
            raise RuntimeError("uv is not installed: pip install uv") from None
        return found


# uv's resolver messages, mapped to the install statuses the report and gate understand.
FAILURE_PATTERNS = (
    (r"no version of triton==|triton==\S+ .*(?:not found|was not found)", "no-such-release"),
    (
        r"has no (?:wheels|usable wheels)|no wheels? (?:with|are available)|"
        r"only has wheels|doesn't have a (?:source distribution or )?wheel",
        "no-wheel",
    ),
)
# The package a no-wheel message is about: uv names it ("torch==2.13.0 has no wheels ...").
NO_WHEEL_PACKAGE = re.compile(
    r"([A-Za-z0-9][A-Za-z0-9._-]*)(?:==(\S+?))? (?:has no (?:usable )?wheels|only has wheels|"
    r"doesn't have a (?:source distribution or )?wheel)",
    re.IGNORECASE,
)


def classify_failure(stderr: str, spec: EnvSpec) -> tuple[str, str]:
    """``(status, detail)`` for a failed ``uv pip install``; the detail names the package."""
    text = stderr.strip()
    lowered = text.lower()
    for pattern, status in FAILURE_PATTERNS:
        if re.search(pattern, lowered):
            return status, _summary(status, spec, text)
    if f"numpy=={spec.numpy}" in lowered:
        return "failed", f"numpy=={spec.numpy} could not be installed: {_tail(text)}"
    return "failed", _tail(text)


def is_transient(stderr: str) -> bool:
    """Whether a failed install may succeed when tried again (network, index, timeouts)."""
    return re.search(TRANSIENT_PATTERNS, stderr.lower()) is not None


def _summary(status: str, spec: EnvSpec, text: str) -> str:
    if status == NO_SUCH_RELEASE:
        what = f"triton=={spec.triton} does not exist on the package index"
    else:
        m = NO_WHEEL_PACKAGE.search(text)
        if m is None:
            package = f"triton=={spec.triton}"
        else:
            package = m.group(1) + (f"=={m.group(2)}" if m.group(2) else "")
        what = f"{package} has no wheel for Python {spec.python} on this platform"
    return f"{what}: {_tail(text)}"


def _tail(text: str, limit: int = 600) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return " ".join(lines)[-limit:]


def env_python(path: Path) -> Path:
    return path / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _read_marker(path: Path) -> dict | None:
    try:
        return json.loads((path / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def ensure_env(spec: EnvSpec, path: Path, log: Callable[[str], None] = print) -> Install:
    """Build (or reuse) the environment at ``path``; never raises for an install failure.

    A failure leaves whatever was at ``path`` as it was; the new environment is built aside.
    """
    start = time.monotonic()
    if _read_marker(path) == spec.marker():
        return Install("ok", 0.0, "reused an existing environment", env_python(path))
    # What a killed run left half-built: nobody else uses it (the caller holds the run lock).
    for stale in path.parent.glob(f"{path.name}.building-*"):
        shutil.rmtree(stale, ignore_errors=True)
    building = path.with_name(f"{path.name}.building-{os.getpid()}")
    try:
        status, detail, transient = _build(spec, building, log)
        if status != INSTALL_OK:
            return Install(status, time.monotonic() - start, detail, None, transient)
        (building / MARKER).write_text(json.dumps(spec.marker()), encoding="utf-8")
        if path.exists():
            # Moved aside before it goes, so that the rename below never lands inside it.
            old = path.with_name(f"{path.name}.old-{os.getpid()}")
            os.replace(path, old)
            shutil.rmtree(old, ignore_errors=True)
        os.replace(building, path)
    finally:
        if building.exists():
            shutil.rmtree(building, ignore_errors=True)
    return Install("ok", time.monotonic() - start, detail, env_python(path))


def _build(spec: EnvSpec, path: Path, log: Callable[[str], None]) -> tuple[str, str, bool]:
    """``("ok", what was installed, False)`` or an install failure's ``(status, detail,
    whether its last try failed for a transient reason)``."""
    uv = uv_binary()
    detail = ""
    for attempt in range(1, INSTALL_ATTEMPTS + 1):
        if attempt > 1:
            pause = RETRY_PAUSE_S * 2 ** (attempt - 2)
            log(f"{spec.triton}/{spec.numpy}: install failed ({detail[:160]}); "
                f"retrying in {pause:g} s ({attempt}/{INSTALL_ATTEMPTS})")  # fmt: skip
            time.sleep(pause)
        if path.exists():
            shutil.rmtree(path)
        status, detail, stderr = _install_once(uv, spec, path)
        if status == INSTALL_OK or not is_transient(stderr):
            break
    if status != INSTALL_OK and attempt > 1:
        detail += f" (tried {attempt} times)"
    return status, detail, status != "ok" and is_transient(stderr)


def _install_once(uv: str, spec: EnvSpec, path: Path) -> tuple[str, str, str]:
    venv = procs.run(
        [uv, "venv", "-q", "--relocatable", "--python", spec.python, str(path)],
        timeout=INSTALL_TIMEOUT_S,
    )
    if venv.returncode != 0:
        return "failed", f"uv venv --python {spec.python}: {_tail(venv.stderr)}", venv.stderr
    cmd = [uv, "pip", "install", "-q", "--python", str(env_python(path)), *spec.requirements()]
    if os.environ.get("PIP_FIND_LINKS"):
        cmd[3:3] = ["--find-links", os.environ["PIP_FIND_LINKS"]]
    try:
        proc = procs.run(cmd, timeout=INSTALL_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        why = f"uv pip install ran past {INSTALL_TIMEOUT_S} s"
        return "failed", why, f"{why}: timed out"
    if proc.returncode != 0:
        status, detail = classify_failure(proc.stderr, spec)
        return status, detail, proc.stderr
    return "ok", f"uv: {' '.join(spec.requirements())}", ""
