"""Run matrix cells: build each cell's environment, run the probes in it, keep every raw file.

    python -m matrix.measure.orchestrate [--releases 3.8.0,3.9.0] [--numpy 2.4.6] [--discover]
                                 [--tests PATH] [--force] [--jobs N] [--raw-dir reports/raw]

``nox -s matrix`` calls this: it runs the cells, then builds the report from the raw folder.
Faults are recorded, never fatal: a release that does not exist, one with no wheel for this
Python, or a numpy that cannot be installed each gives a raw file whose ``install`` says what
happened, and the other cells go on. A cell whose raw file is complete is skipped on a rerun
(``--force`` redoes it); an interrupted cell (``"complete": false``) is finished: the probes
it already has are kept. With ``--tests``, a cell that has not run that suite (same path and
contents, ``suite_identity``) is not complete: the suite runs there, the probes are kept.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from matrix.core import REPO_ROOT, DataFileError, Release
from matrix.measure.cells import Cell, MatrixConfigError, load_matrix, parse_list, plan
from matrix.measure.discover import discover_releases
from matrix.measure.envs import EnvSpec, Install, ensure_env, uv_binary
from matrix.measure.results import Run, SchemaError, read_raw, write_raw
from matrix.measure.suite import suite_identity

DEFAULT_RAW = REPO_ROOT / "reports" / "raw"
DEFAULT_ENVS = REPO_ROOT / ".nox" / "matrix-envs"


@dataclass
class CellOutcome:
    cell: Cell
    install: str = ""
    counts: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    note: str = ""
    tests: str = ""  # what the team's suite did here (_test_counts), "" without --tests


class Progress:
    """One line per cell start and end, with status counts and elapsed time; thread-safe."""

    def __init__(self, total: int) -> None:
        self.total, self.started, self.finished = total, 0, 0
        self.t0 = time.monotonic()
        self.lock = threading.Lock()

    def _elapsed(self) -> str:
        s = int(time.monotonic() - self.t0)
        return f"{s // 60}:{s % 60:02d}"

    def start(self, cell: Cell) -> None:
        with self.lock:
            self.started += 1
            print(
                f"[{self._elapsed()}] start {self.started}/{self.total} {cell} "
                f"({', '.join(cell.backends)})",
                flush=True,
            )

    def end(self, o: CellOutcome) -> None:
        with self.lock:
            self.finished += 1
            counts = ", ".join(f"{n} {s}" for s, n in sorted(o.counts.items())) or "no results"
            print(
                f"[{self._elapsed()}] done  {self.finished}/{self.total} {o.cell}: "
                f"install {o.install}; {counts} ({o.seconds:.0f} s){o.note}",
                flush=True,
            )


def existing_state(path: Path, cell: Cell, suite: dict[str, str] | None = None) -> str:
    """ "complete", "partial" or "missing" for the raw file a cell would write.

    With ``suite`` (``suite_identity`` of ``--tests``), a cell whose recorded suite is another
    one (another path, or the same path with other contents) is "partial": its probe results
    are kept and the suite is run again.
    """
    if not path.exists():
        return "missing"
    try:
        run = read_raw(path)
    except SchemaError:
        return "missing"  # unreadable: redo it
    if run.release != cell.release or run.env.get("numpy") != cell.numpy:
        return "missing"
    if suite is not None and run.install.get("status") == "ok" and run.extra.get("suite") != suite:
        return "partial"
    return "complete" if run.complete else "partial"


def install_failure_run(cell: Cell, install: Install) -> Run:
    """The raw file of a cell whose environment could not be built: no results, the reason."""
    env = {
        "triton": str(cell.release),
        "numpy": cell.numpy,
        "torch": cell.torch,
        "python": cell.python,
        "platform": f"{platform.system().lower()}-{platform.machine()}",
        "gpu": None,
    }
    return Run(id=cell.id, env=env, install=install.record(), results=[], extra={"complete": True})


def run_cell(cell: Cell, args: argparse.Namespace, progress: Progress) -> CellOutcome:
    """One cell, whatever happens: an unexpected failure here is recorded in its raw file."""
    try:
        return _run_cell(cell, args, progress)
    except Exception as e:  # recorded for this cell; the other cells go on
        detail = f"the matrix itself failed on this cell: {type(e).__name__}: {e}"
        install = Install("failed", 0.0, detail, None)
        write_raw(install_failure_run(cell, install), cell.raw_path(args.raw_dir))
        outcome = CellOutcome(cell, install="failed", note=f" [{detail}]")
        progress.end(outcome)
        return outcome


def _run_cell(cell: Cell, args: argparse.Namespace, progress: Progress) -> CellOutcome:
    out = cell.raw_path(args.raw_dir)
    state = "missing" if args.force else existing_state(out, cell, args.suite)
    outcome = CellOutcome(cell)
    if state == "complete":
        run = read_raw(out)
        outcome.install = run.install.get("status", "?")
        outcome.note = " [kept: already complete]"
        outcome.counts = _counts(run)
        outcome.tests = _test_counts(run)
        return outcome
    progress.start(cell)
    t0 = time.monotonic()
    spec = EnvSpec(
        python=cell.python,
        triton=str(cell.release),
        numpy=cell.numpy,
        torch=cell.torch,
        extras=("packaging", "pytest") if args.tests else ("packaging",),
    )
    install = ensure_env(spec, args.envs_dir / cell.id)
    outcome.install = install.status
    if install.status != "ok" or install.python is None:
        run = install_failure_run(cell, install)
        write_raw(run, out)
    else:
        cmd = [
            str(install.python),
            "-m",
            "matrix.measure.runner",
            "--out",
            str(out),
            "--id",
            cell.id,
            "--backends",
            ",".join(cell.backends),
            "--install",
            json.dumps(install.record()),
            "--quiet",
            "--timeout",
            str(args.timeout),
        ]
        if state == "partial":
            cmd.append("--resume")
            outcome.note = " [resumed]"
        if args.tests:
            cmd += ["--tests", str(args.tests)]
        # With --tests the runner's stdout (its suite progress lines) is shown as it comes.
        proc = subprocess.run(
            cmd, cwd=REPO_ROOT, text=True, stderr=subprocess.PIPE,
            stdout=None if args.tests else subprocess.PIPE,
        )  # fmt: skip
        if proc.returncode != 0 or not out.exists():
            note = (proc.stderr or proc.stdout or "").strip()[-400:]
            outcome.note += f" [runner exited {proc.returncode}: {note}]"
        run = read_raw(out) if out.exists() else None
        if run is not None:
            outcome.counts = _counts(run)
            outcome.tests = _test_counts(run)
    outcome.seconds = time.monotonic() - t0
    progress.end(outcome)
    return outcome


def _counts(run: Run) -> dict[str, int]:
    counts: dict[str, int] = {}
    for r in run.results:
        counts[r.status] = counts.get(r.status, 0) + 1
    return counts


def _test_counts(run: Run) -> str:
    """``"7/8 tests passed, 14/24 kernel compiles"`` for a cell that ran a suite, else ``""``."""
    tests = run.extra.get("tests")
    if not isinstance(tests, list):
        return ""
    passed = sum(isinstance(t, dict) and t.get("outcome") == "passed" for t in tests)
    text = f"{passed}/{len(tests)} tests passed"
    compiles = run.extra.get("kernel_compiles")
    if isinstance(compiles, list):
        ok = sum(isinstance(c, dict) and c.get("status") == "compiled" for c in compiles)
        text += f", {ok}/{len(compiles)} kernel compiles ok"
    return text


def summary_table(outcomes: Sequence[CellOutcome]) -> str:
    with_tests = any(o.tests for o in outcomes)
    rows = [("cell", "install", "seconds", "results") + (("tests",) if with_tests else ())]
    for o in outcomes:
        counts = ", ".join(f"{n} {s}" for s, n in sorted(o.counts.items())) or "-"
        row = (o.cell.id, o.install, f"{o.seconds:.0f}", counts + o.note)
        rows.append(row + ((o.tests or "-",) if with_tests else ()))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    w0, w1, w2 = widths
    if with_tests:  # the tests column before the (long) results column
        rows = [(r[0], r[1], r[2], r[4], r[3]) for r in rows]
        w3 = max(len(r[3]) for r in rows)
        lines = [f"{r[0]:<{w0}}  {r[1]:<{w1}}  {r[2]:>{w2}}  {r[3]:<{w3}}  {r[4]}" for r in rows]
    else:
        lines = [f"{r[0]:<{w0}}  {r[1]:<{w1}}  {r[2]:>{w2}}  {r[3]}" for r in rows]
    lines.insert(1, "-" * min(120, max(len(ln) for ln in lines)))
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="nox -s matrix --", description=__doc__.split("\n")[0])
    p.add_argument("--releases", help="comma-separated Triton releases (default: the data file)")
    p.add_argument("--numpy", help="comma-separated numpy releases (default: the data file)")
    p.add_argument(
        "--discover",
        action="store_true",
        help="also run releases on the package index that the data file lacks",
    )
    p.add_argument("--tests", type=Path, help="a pytest suite to run in every cell too")
    p.add_argument("--force", action="store_true", help="redo cells that are already complete")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="cells run at once")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per probe")
    p.add_argument("--raw-dir", type=Path, default=DEFAULT_RAW, help="where raw files go")
    p.add_argument("--envs-dir", type=Path, default=DEFAULT_ENVS, help="cell environments")
    p.add_argument(
        "--report-dir", type=Path, help="where the pages go (default: the folder above --raw-dir)"
    )
    p.add_argument("--no-report", action="store_true", help="run the cells only")
    args = p.parse_args(argv)
    if args.jobs < 1:
        p.error(f"--jobs: expected at least 1, got {args.jobs}")
    if args.tests is not None:
        if not args.tests.exists():
            p.error(f"--tests: {args.tests} does not exist")
        args.tests = args.tests.resolve()
    args.suite = suite_identity(args.tests) if args.tests is not None else None
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        config = load_matrix()
        releases = parse_list(args.releases, "--releases") if args.releases else None
        numpys = parse_list(args.numpy, "--numpy") if args.numpy else None
    except (MatrixConfigError, DataFileError) as e:
        print(f"matrix: {e}", file=sys.stderr)
        return 2
    extra: list[Release] = []
    if args.discover:
        extra = discover_releases(config)
        print(
            f"discover: {', '.join(map(str, extra)) or 'no releases beyond the data file'}",
            flush=True,
        )
    cells = plan(config, releases=releases, numpys=numpys, extra_releases=extra)
    args.raw_dir.mkdir(parents=True, exist_ok=True)
    uv_binary()  # resolved here, once, before the worker threads (see uv_binary)
    progress = Progress(len(cells))
    print(
        f"matrix: {len(cells)} cells, {args.jobs} at a time, raw files in {args.raw_dir}",
        flush=True,
    )
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        outcomes = list(pool.map(lambda c: run_cell(c, args, progress), cells))
    print("\n" + summary_table(outcomes), flush=True)
    print(f"\nmatrix: {len(cells)} cells in {progress._elapsed()}", flush=True)
    if args.no_report:
        return 0
    from matrix.report.__main__ import main as report_main

    report_dir = args.report_dir or args.raw_dir.parent
    return report_main(["--raw", str(args.raw_dir), "--out", str(report_dir)])


if __name__ == "__main__":
    sys.exit(main())
