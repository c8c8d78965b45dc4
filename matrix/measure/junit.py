"""A team's own pytest suite in a matrix cell: run it, read its JUnit XML, one record per test.

The suite runs under the interpreter (``TRITON_INTERPRET=1``), in a child process with a time
limit; a suite that cannot run at all is recorded as one ``error`` entry, never as a pass.
"""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

SUITE_TIMEOUT_S = 1800


def parse_junit(path: Path) -> list[dict[str, Any]]:
    """``[{"id", "outcome", "seconds", "detail"}]`` from a JUnit XML file (pytest's dialect).

    outcome is "passed", "failed", "error" or "skipped".
    """
    root = ET.parse(path).getroot()
    tests = []
    for case in root.iter("testcase"):
        cls, name = case.get("classname", ""), case.get("name", "")
        outcome, detail = "passed", ""
        for tag in ("failure", "error", "skipped"):
            node = case.find(tag)
            if node is not None:
                outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[tag]
                detail = (node.get("message") or node.text or "").strip()[:500]
                break
        tests.append(
            {
                "id": f"{cls}::{name}" if cls else name,
                "outcome": outcome,
                "seconds": float(case.get("time", 0) or 0),
                "detail": detail,
            }
        )
    return tests


def run_suite(suite: Path, workdir: Path, log: Callable[..., None]) -> list[dict[str, Any]]:
    xml = workdir / "user-tests.xml"
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    log(f"running user tests {suite}")
    cmd = [sys.executable, "-m", "pytest", str(suite), "-q", "-p", "no:cacheprovider",
           f"--junitxml={xml}"]  # fmt: skip
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=SUITE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return [{"id": str(suite), "outcome": "error", "seconds": SUITE_TIMEOUT_S,
                 "detail": f"the suite ran past {SUITE_TIMEOUT_S} s and was killed"}]  # fmt: skip
    if not xml.exists():
        tail = (proc.stdout + proc.stderr)[-800:]
        detail = f"pytest exited {proc.returncode} without a report: {tail}"
        return [{"id": str(suite), "outcome": "error", "seconds": 0.0, "detail": detail}]
    tests = parse_junit(xml)
    if not tests:
        return [{"id": str(suite), "outcome": "error", "seconds": 0.0,
                 "detail": f"pytest collected no tests (exit {proc.returncode})"}]  # fmt: skip
    return tests
