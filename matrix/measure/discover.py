"""``--discover``: Triton releases on the package index that the matrix data file lacks.

Asks pip (``pip index versions triton``), which honours this machine's index configuration;
keeps final releases at or above the data file's ``discover_from``.
"""

from __future__ import annotations

import re
import subprocess
import sys

from packaging.version import InvalidVersion, Version

from matrix.measure.cells import MatrixConfig


def parse_index_versions(output: str) -> list[str]:
    """The versions in ``pip index versions`` output ("Available versions: 3.9.0, 3.8.0, ...")."""
    m = re.search(r"Available versions:\s*(.+)", output)
    if not m:
        return []
    versions = []
    for v in m.group(1).split(","):
        try:
            versions.append(Version(v.strip()))
        except InvalidVersion:
            continue
    return [str(v) for v in sorted(versions)]


def index_versions(package: str = "triton") -> list[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "index", "versions", package],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"pip index versions {package} failed: {proc.stderr.strip()[-300:]}")
    return parse_index_versions(proc.stdout)


def new_releases(available: list[str], config: MatrixConfig) -> list[str]:
    """Final releases >= discover_from that the data file does not list."""
    floor = Version(config.discover_from)
    known = {Version(r) for r in config.releases}
    return [
        v
        for v in available
        if Version(v) >= floor and not Version(v).is_prerelease and Version(v) not in known
    ]


def discover_releases(config: MatrixConfig) -> list[str]:
    return new_releases(index_versions(), config)
