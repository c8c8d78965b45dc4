"""``--discover``: Triton releases on the package index that the matrix data file lacks.

Asks pip (``pip index versions triton``), which honours this machine's index configuration;
keeps final releases at or above the data file's ``discover_from``.
"""

from __future__ import annotations

import re
import subprocess
import sys

from matrix.core import Release, ReleaseError
from matrix.measure.cells import MatrixConfig


def parse_index_versions(output: str) -> list[str]:
    """The versions in ``pip index versions`` output ("Available versions: 3.9.0, 3.8.0, ...")."""
    m = re.search(r"Available versions:\s*(.+)", output)
    if not m:
        return []
    versions = []
    for v in m.group(1).split(","):
        try:
            versions.append(Release.parse(v))
        except ReleaseError:
            continue  # the index lists only PEP 440 versions; skip anything else pip prints
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


def new_releases(available: list[str], config: MatrixConfig) -> list[Release]:
    """Final releases >= discover_from that the data file does not list."""
    found = [Release.parse(v, "pip index versions") for v in available]
    return [
        r
        for r in found
        if r >= config.discover_from and not r.version.is_prerelease and r not in config.releases
    ]


def discover_releases(config: MatrixConfig) -> list[Release]:
    return new_releases(index_versions(), config)
