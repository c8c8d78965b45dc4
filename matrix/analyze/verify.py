"""``python -m matrix verify RAW_DIR [--cells N]``: check that a matrix run lost nothing.

Fails (exit 1, naming each problem) when a raw file cannot be read (the others are still
checked), a cell is missing or incomplete, an install failed,
a cell lacks a probe of the current catalog or holds one whose source changed since it was
measured (``matrix.measure.incremental``; ``nox -s matrix`` completes such a cell in place),
or a probe ended ``crashed``, ``timeout`` or an ``error`` that is not one of its own statuses
(a broken probe rather than an observation), a fingerprint cell is ``error`` (the battery's
harness broke on it), or a fingerprint run has fewer than ``fingerprint.MIN_CELLS`` cells.
Exit 0 when everything is there; 2 when there is nothing to check (no raw files at all).
Cells measured before probe hashes were kept are counted in a note, not as problems: their
probes' source then is unknown, and their results are kept as current.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from matrix import cli
from matrix.analyze import fingerprint
from matrix.catalog import PROBES_BY_NAME
from matrix.core import CRASHED, ERROR, TIMEOUT, install_ok
from matrix.exitcodes import ExitCode
from matrix.measure import incremental
from matrix.results import Run, SchemaError, partial_files, read_folder, read_runs

BROKEN = (CRASHED, TIMEOUT, ERROR)


def stale_cells(runs: list[Run], catalog: incremental.Catalog) -> tuple[list[str], int]:
    """Problems for cells not up to date with ``catalog``, and how many cells hold results
    without a recorded hash (measured before hashes were kept: kept as current)."""
    found, unknown = [], 0
    for run in runs:
        if not run.complete or not install_ok(run.install):
            continue  # said by problems(): incomplete, or nothing measured
        state = incremental.staleness(run, catalog.specs, catalog.hashes)
        if state.stale:
            # GPU rows are measured on a GPU machine only; the CPU matrix never redoes them
            how = ("re-run it on a GPU: python -m matrix gpu-run, docs/gpu.md"
                   if run.env.get("gpu") else "nox -s matrix completes it")  # fmt: skip
            found.append(f"{run.id}: not up to date with the probe catalog: {state.describe()} "
                         f"({how})")  # fmt: skip
        unknown += bool(state.unknown)
    return found, unknown


def problems(runs: list[Run], expected_cells: int | None) -> list[str]:
    found = []
    if expected_cells is not None and len(runs) != expected_cells:
        found.append(f"expected {expected_cells} cells, found {len(runs)}")
    for run in runs:
        if not run.complete:
            found.append(f"{run.id}: incomplete (interrupted)")
        if not install_ok(run.install):
            found.append(f"{run.id}: install {run.install.get('status')}: "
                         f"{run.install.get('detail', '')[:200]}")  # fmt: skip
        elif not run.results:
            found.append(f"{run.id}: installed but recorded no results")
        for r in run.results:
            spec = PROBES_BY_NAME.get(r.probe)
            own = spec.statuses if spec else ()
            if r.status in BROKEN and r.status not in own:
                where = f"{r.backend}{':' + r.target if r.target else ''}"
                found.append(f"{run.id}: {r.probe} [{where}] {r.status}: {r.detail[:300]}")
        found.extend(f"{run.id}: {line}" for line in fingerprint.problems(run.results))
    return found


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        allow_abbrev=False,  # --cand is no --candidate: a typo is refused, never guessed
        prog="python -m matrix verify",
        description=__doc__.split("\n")[0],
    )
    p.add_argument("raw", type=Path, help="folder of raw files (or a matrix.json)")
    p.add_argument("--cells", type=int, help="how many cells there must be")
    args = p.parse_args(argv)
    try:
        if args.raw.is_dir():
            runs, unreadable = read_folder(args.raw)
        else:
            runs, unreadable = read_runs(args.raw), []
    except (OSError, SchemaError) as e:
        print(f"matrix.analyze.verify: {e}", file=sys.stderr)
        return ExitCode.UNDECIDABLE
    found = [f"unreadable raw file: {m}" for m in unreadable] + problems(runs, args.cells)
    if args.raw.is_dir():
        found += [
            f"{p.name}: an interrupted cell (the matrix finishes it on a rerun)"
            for p in partial_files(args.raw)
        ]
    stale, unknown = stale_cells(runs, incremental.current_catalog())
    found += stale
    for line in found:
        print(f"matrix.analyze.verify: {line}", file=sys.stderr)
    results = sum(len(r.results) for r in runs)
    print(f"matrix.analyze.verify: {len(runs)} cells, {results} results, {len(found)} problems")
    if unknown:
        print(
            f"matrix.analyze.verify: note: {unknown} cell(s) hold results measured before probe "
            "hashes were kept: a later change to those probes' source is not seen there "
            "(re-measure with --probes NAME or --force)"
        )
    return ExitCode.FAILED if found else ExitCode.OK


if __name__ == "__main__":
    cli.deprecated("python -m matrix.analyze.verify", "verify")
    sys.exit(cli.run(main, "matrix.verify"))
