"""``python -m matrix matrix``: the matrix as ``nox -s matrix`` runs it: cells, then pages.

A documented entry point (noxfile, .ci/run, README), and the one place that joins two stages:
``matrix.measure.orchestrate`` runs the cells, then ``report_step`` builds the pages with
``matrix.report`` and says which committed files changed. Measuring never imports the report
(the layering test holds it to that), so the join lives here, above both.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Collection, Sequence
from pathlib import Path

from matrix import cli
from matrix.core import REPO_ROOT
from matrix.exitcodes import ExitCode
from matrix.measure import orchestrate, procs


def report_step(args: argparse.Namespace, measured: Collection[str] = ()) -> int:
    """Build the pages; say which committed files differ from the commit now: raw files this
    run measured (``measured``: their names), raw files an earlier run left, and pages."""
    from matrix.report import stamp
    from matrix.report.__main__ import main as report_main

    report_dir = args.report_dir or args.raw_dir.parent
    try:
        before = stamp.read(report_dir)
        code = report_main(["--raw", str(args.raw_dir), "--out", str(report_dir)])
        after = stamp.read(report_dir)
        kept = before is not None and after == before
    except OSError as e:
        print(f"matrix: the report step could not write {report_dir}: {e}", file=sys.stderr)
        return ExitCode.UNDECIDABLE  # a machine fault, as cli.run's OSError: not a finding
    changed = changed_committed(report_dir)
    raw = changed_committed(args.raw_dir)
    # The stamp records what the pages were built from: not a page, and it changes whenever
    # they are rebuilt, even into the same bytes.
    pages = [c for c in changed if c not in raw and Path(c).name != stamp.STAMP_NAME]
    anew = [r for r in raw if Path(r).name in measured]
    earlier = [r for r in raw if r not in anew]
    if anew:
        print(
            f"matrix: this run measured anew {len(anew)} committed raw file(s): " + _named(anew),
            flush=True,
        )
    if earlier:
        print(
            f"matrix: {len(earlier)} committed raw file(s) differ from the commit (an earlier "
            "run's measurements, kept by this one): " + _named(earlier),
            flush=True,
        )
    if pages and kept:
        print(
            f"matrix: {len(pages)} committed page(s) differ from the commit (an earlier build's,"
            " kept by this one): " + _named(pages),
            flush=True,
        )
    elif not kept and (pages or after is not None):
        read = after.inputs_read if after is not None else None
        why = stamp.changes(before, read) if read is not None else ""
        outcome = (
            f"{len(pages)} committed page(s) now differ from the commit: " + _named(pages)
            if pages
            else "every committed page came out as committed"
        )
        print(f"matrix: the report step rebuilt the pages{', because of ' + why if why else ''}"
              f"; {outcome}", flush=True)  # fmt: skip
    return code


NAMED_AT_MOST = 6  # a full run rewrites ~150 pages: a screenful of names says nothing more


def _named(paths: list[str]) -> str:
    """The first few of ``paths``, then how many more (``git status`` lists them all)."""
    shown = ", ".join(paths[:NAMED_AT_MOST])
    rest = len(paths) - NAMED_AT_MOST
    return shown + (f" and {rest} more (git status lists them)" if rest > 0 else "")


def changed_committed(folder: Path) -> list[str]:
    """Tracked files under ``folder`` that differ from the commit (none outside a checkout)."""
    try:
        proc = procs.run(
            ["git", "-C", str(REPO_ROOT), "diff", "--name-only", "--", str(folder.resolve())],
            timeout=60,
        )
    except (OSError, subprocess.SubprocessError):
        return []
    return proc.stdout.split() if proc.returncode == 0 else []


def main(argv: Sequence[str] | None = None) -> int:
    return orchestrate.main(argv, report=report_step)


if __name__ == "__main__":
    cli.deprecated("python -m matrix.orchestrate", "matrix")
    sys.exit(cli.run(main, "matrix.orchestrate"))
