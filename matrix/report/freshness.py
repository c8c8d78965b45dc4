"""When and from what the pages were built: every page's footer says it.

The build reads no clock: the date and commit are those of the last git commit that changed
the raw folder (``git log -1 -- RAW``), and each raw file's measurement date is the date of the
last commit that changed it. The same checkout therefore gives the same pages, so a test can
rebuild them and compare bytes. ``--commit``/``--date`` on ``python -m matrix report`` pass them
in instead (a CI job that builds before committing). Raw files with changes git has not
committed are counted and said, never dated as if committed.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from matrix.results import LEGACY_SUFFIX, RAW_SUFFIX, raw_files

UNKNOWN = "not in git"


@dataclass(frozen=True)
class Freshness:
    """What a footer says: the commit and date the raw results come from, and per raw file
    (by name) the date it was last measured (committed)."""

    commit: str = UNKNOWN
    date: str = UNKNOWN
    measured: dict[str, str] = field(default_factory=dict)
    uncommitted: int = 0  # raw files git reports as changed or untracked

    @property
    def measured_range(self) -> str:
        dates = sorted(set(self.measured.values()))
        if not dates:
            return UNKNOWN
        return dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}"


def _git(args: list[str], cwd: Path) -> str | None:
    """``git args`` in ``cwd``; None where git or the repository is missing (a copied folder)."""
    try:
        done = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, check=False, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def of_raw_folder(raw_dir: Path, commit: str | None = None, date: str | None = None) -> Freshness:
    """The freshness of ``raw_dir`` from git; ``commit``/``date`` override what git says."""
    raw_dir = Path(raw_dir).resolve()
    names = {p.name for p in raw_files(raw_dir)}
    head = _git(["log", "-1", "--format=%h %cs", "--", "."], raw_dir)
    git_commit, git_date = head.split() if head and head.strip() else (UNKNOWN, UNKNOWN)
    measured: dict[str, str] = {}
    log = _git(["log", "--format=%x00%cs", "--name-only", "--relative", "--", "."], raw_dir)
    for chunk in (log or "").split("\0"):
        lines = [ln for ln in chunk.splitlines() if ln.strip()]
        if not lines:
            continue
        day = lines[0]
        for name in lines[1:]:
            base = Path(name).name
            if base in names and base not in measured:
                measured[base] = day
    status = _git(["status", "--porcelain", "--", "."], raw_dir)
    lines = (status or "").splitlines()
    uncommitted = len([ln for ln in lines if ln.endswith((RAW_SUFFIX, LEGACY_SUFFIX))])
    return Freshness(commit or git_commit, date or git_date, measured, uncommitted)
