"""Helpers several test modules share (import as ``tests.support``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def compile_in_child(script: str, *args: str, timeout: int, stdin: str | None = None) -> Any:
    """Run ``python -c script *args`` without TRITON_INTERPRET, the way the runner compiles
    (aot needs the real compiler, and the test session sets the interpreter on); return the JSON
    of its last output line. A child that fails fails the test with the end of its stderr."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    proc = subprocess.run([sys.executable, "-c", script, *args], input=stdin, cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=timeout, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])
