"""One virtual environment per matrix cell, built with uv, and what went wrong when it can't be.

uv hard-links files from its cache, so thirty environments of torch + Triton cost about one on
disk. uv does not read pip's configuration: the local CPU build of torch is found only through
``--find-links "$PIP_FIND_LINKS"`` (without it uv would fetch a multi-GB CUDA build).

An environment is reused when its marker file records the same packages; a half-built one (no
marker: the install was interrupted) is rebuilt.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path

MARKER = ".matrix-env.json"
INSTALL_TIMEOUT_S = 900


@dataclass(frozen=True)
class EnvSpec:
    """What one cell's environment holds."""

    python: str
    triton: str
    numpy: str
    torch: str
    extras: tuple[str, ...] = ("packaging",)

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

    def record(self) -> dict:
        return {"status": self.status, "seconds": round(self.seconds, 1), "detail": self.detail}


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
        r"triton\S* has no (?:wheels|usable wheels)|no wheels? (?:with|are available)|"
        r"only has wheels|doesn't have a (?:source distribution or )?wheel",
        "no-wheel",
    ),
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


def _summary(status: str, spec: EnvSpec, text: str) -> str:
    what = {
        "no-such-release": f"triton=={spec.triton} does not exist on the package index",
        "no-wheel": f"triton=={spec.triton} has no wheel for Python {spec.python} on this platform",
    }[status]
    return f"{what}: {_tail(text)}"


def _tail(text: str, limit: int = 600) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return " ".join(lines)[-limit:]


def env_python(path: Path) -> Path:
    return path / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def ensure_env(spec: EnvSpec, path: Path, log=print) -> Install:
    """Build (or reuse) the environment at ``path``; never raises for an install failure."""
    start = time.monotonic()
    marker = path / MARKER
    if marker.exists() and json.loads(marker.read_text(encoding="utf-8")) == asdict(spec):
        return Install("ok", 0.0, "reused an existing environment", env_python(path))
    if path.exists():
        shutil.rmtree(path)
    uv = uv_binary()
    venv = subprocess.run(
        [uv, "venv", "-q", "--python", spec.python, str(path)],
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT_S,
    )
    if venv.returncode != 0:
        return Install(
            "failed",
            time.monotonic() - start,
            f"uv venv --python {spec.python}: {_tail(venv.stderr)}",
            None,
        )
    cmd = [uv, "pip", "install", "-q", "--python", str(env_python(path)), *spec.requirements()]
    if os.environ.get("PIP_FIND_LINKS"):
        cmd[3:3] = ["--find-links", os.environ["PIP_FIND_LINKS"]]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return Install(
            "failed",
            time.monotonic() - start,
            f"uv pip install ran past {INSTALL_TIMEOUT_S} s",
            None,
        )
    if proc.returncode != 0:
        status, detail = classify_failure(proc.stderr, spec)
        return Install(status, time.monotonic() - start, detail, None)
    marker.write_text(json.dumps(asdict(spec)), encoding="utf-8")
    return Install(
        "ok", time.monotonic() - start, f"uv: {' '.join(spec.requirements())}", env_python(path)
    )
