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


def committed_raw(run_id: str, raw_dir: Path = REPO / "reports" / "raw") -> Path:
    """The committed raw file of ``run_id``: ``<id>.json.gz`` once the folder is converted
    (``python -m matrix.measure.migrate --gzip``), the plain ``<id>.json`` before."""
    from matrix.results import LEGACY_SUFFIX, RAW_SUFFIX

    for suffix in (RAW_SUFFIX, LEGACY_SUFFIX):
        if (raw_dir / f"{run_id}{suffix}").exists():
            return raw_dir / f"{run_id}{suffix}"
    raise AssertionError(f"{raw_dir}: no raw file for {run_id} (*{RAW_SUFFIX} or *{LEGACY_SUFFIX})")


def operand_kinds(found: Any, op: str, where: Any, operand: int = 0) -> set[str]:
    """Every kind operand ``operand`` of the profile's ``op`` uses for which ``where(use)``
    holds takes ("?" for an unknown one); fails, listing what was found, where none is."""
    hits = [u for u in found if u.op == op and where(u)]
    assert hits, sorted({(u.op, u.kernel, u.code) for u in found})
    got: set[str] = set()
    for u in hits:
        got |= set(u.operands[operand] or {"?"})
    return got


PROFILE_HEAD = "import torch\nimport triton\nimport triton.language as tl\n\n\n"


def profiled_package(tmp_path: Path, files: dict[str, str]) -> Any:
    """The profile's uses of a package ``pkg`` of ``files`` (name -> body, dedented, under
    ``PROFILE_HEAD``'s imports), read with no launches captured."""
    import textwrap

    from matrix.gate.usage import build_profile

    pkg = tmp_path / "pkg"
    pkg.mkdir(exist_ok=True)
    (pkg / "__init__.py").write_text("")
    for name, body in files.items():
        (pkg / name).write_text(PROFILE_HEAD + textwrap.dedent(body))
    return build_profile([str(pkg)], [], []).uses
