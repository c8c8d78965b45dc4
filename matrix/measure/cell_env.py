"""What a cell records about where it ran: the package versions, the Python, the platform and
the CUDA device torch sees (``env`` of its raw file), and the run id that follows from them."""

from __future__ import annotations

import importlib.metadata
import json
import platform
import subprocess
import sys
from typing import Any

from matrix.core import run_id
from matrix.measure import procs


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


GPU_QUERY = (
    "import json, torch; ok = torch.cuda.is_available(); "
    "print(json.dumps({'name': torch.cuda.get_device_name(0), "
    "'capability': '%d.%d' % torch.cuda.get_device_capability(0)} if ok else None))"
)


def detect_gpu() -> dict[str, str] | None:
    """The CUDA device torch sees, asked in a child process so that this one stays light."""
    try:
        out = procs.run([sys.executable, "-c", GPU_QUERY], timeout=180)
        return json.loads(out.stdout.strip().splitlines()[-1]) if out.returncode == 0 else None
    except (subprocess.TimeoutExpired, json.JSONDecodeError, IndexError):
        return None


def gpu_target_of(gpu: dict[str, str] | None) -> str | None:
    if not gpu:
        return None
    major, minor = gpu["capability"].split(".")
    return f"cuda:{major}{minor}"


def collect_env(gpu: dict[str, str] | None) -> dict[str, Any]:
    return {
        "triton": _version("triton"),
        "numpy": _version("numpy"),
        "torch": _version("torch"),
        "python": platform.python_version(),
        "platform": f"{platform.system().lower()}-{platform.machine()}",
        "gpu": gpu,
    }


def default_run_id(env: dict[str, Any]) -> str:
    gpu = env.get("gpu")
    return run_id(
        env["triton"], env["numpy"], "gpu-" + gpu["name"].split()[-1].lower() if gpu else ""
    )
