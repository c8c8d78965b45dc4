"""Run matrix cells: build each cell's environment, run the probes in it, keep every raw file.

    python -m matrix.measure.orchestrate [--releases 3.8.0,3.9.0] [--numpy 2.4.6] [--discover]
                                 [--tests PATH] [--force] [--jobs N] [--raw-dir reports/raw]

``nox -s matrix`` runs ``python -m matrix matrix``: these cells, then the pages built from
the raw folder (``matrix.orchestrate.report_step``: the report is a later stage, not imported here).
Faults are recorded, never fatal: a release that does not exist, one with no wheel for this
Python, or a numpy that cannot be installed each gives a raw file whose ``install`` says what
happened, and the other cells go on. A cell whose raw file is complete is skipped on a rerun
(``--force`` redoes it); an interrupted cell (``<cell>.json.partial``) is finished: the probes
it already has are kept. With ``--tests``, a cell that has not run that suite (same path and
contents, ``suite_identity``) is not complete: the suite runs there, the probes are kept.

What happens on a fault of the matrix itself:

- a second run over the same raw or envs folder (by default: the same checkout) waits for the
  first, saying so (``--no-wait`` refuses instead); the lock dies with its holder;
- Ctrl-C or SIGTERM kills every child process group, says one line and exits 130; a ``kill -9``
  takes the runners and their children with it (``matrix.measure.procs``); complete cells are
  kept and a rerun finishes the rest;
- a raw file that cannot be read is moved aside (``<name>.json.unreadable-<time>``, kept) and
  its cell redone;
- a release older than the harness supports (``supported_from`` in the data file) is refused
  before anything runs; a release that does not exist on the index and is not in the data file
  gets no raw file (it would add a column to every page). Both are the same mistake, one line
  listing the known releases, exit 2.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from matrix import cli
from matrix.core import (
    INSTALL_ERROR,
    NO_SUCH_RELEASE,
    REPO_ROOT,
    DataFileError,
    Release,
    install_ok,
)
from matrix.exitcodes import ExitCode
from matrix.measure import incremental, lock, migrate, procs, runner, test_device, triton_identity
from matrix.measure.cell_summary import (
    CellOutcome,
    status_counts,
    suite_summary,
    summary_table,
    test_counts,
)
from matrix.measure.cells import (
    Cell,
    MatrixConfig,
    MatrixConfigError,
    load_matrix,
    parse_list,
    plan,
)
from matrix.measure.discover import DiscoverError, discover_releases
from matrix.measure.envs import EnvSpec, Install, ensure_env, uv_binary
from matrix.measure.suite import suite_identity
from matrix.probes.support import run_cache
from matrix.results import (
    Run,
    SchemaError,
    move_aside,
    partial_path,
    read_raw,
    write_raw,
)

DEFAULT_RAW = REPO_ROOT / "reports" / "raw"
# Where a run with a team's suite (``--tests``) keeps its raw files and pages by default: never
# this project's committed reports/, which such a run would otherwise rewrite (the suite's
# outcomes in every raw file, every page rebuilt). Listed in .gitignore.
TEAM_RAW = REPO_ROOT / "team-results" / "raw"
DEFAULT_ENVS = REPO_ROOT / ".nox" / "matrix-envs"


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


def _readable(path: Path) -> Run | None:
    """The run in ``path``; one that cannot be read is moved aside (kept) and None returned."""
    try:
        return read_raw(path)
    except SchemaError as e:
        aside = move_aside(path)
        print(f"matrix: {e}; moved it aside to {aside.name} and redoing its cell", flush=True)
        return None


def existing_state(path: Path, cell: Cell, suite: dict[str, Any] | None = None) -> str:
    """ "complete", "partial" or "missing" for the raw file a cell would write.

    With ``suite`` (``suite_identity`` of ``--tests``), a cell whose recorded suite is another
    one (another path, or the same path with other contents) is "partial": its probe results
    are kept and the suite is run again.
    """
    partial = partial_path(path)
    if partial.exists():
        run = _readable(partial)
        if run is not None and run.release == cell.release and run.env.get("numpy") == cell.numpy:
            return "partial"
    if not path.exists():
        return "missing"
    run = _readable(path)
    if run is None or run.release != cell.release or run.env.get("numpy") != cell.numpy:
        return "missing"
    if suite is not None and install_ok(run.install) and run.extra.get("suite") != suite:
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
    # A transient failure (the index down) is not the cell's answer: incomplete, so that the
    # next run retries it (existing_state: "partial").
    complete = not install.transient
    return Run(
        id=cell.id, env=env, install=install.record(), results=[], extra={"complete": complete}
    )


def _holds_complete(out: Path) -> bool:
    """Whether ``out`` holds a complete, measured cell (one that a failed redo must not cost)."""
    try:
        run = read_raw(out) if out.exists() else None
    except SchemaError:
        return False
    return run is not None and run.complete and install_ok(run.install)


def record_failure(cell: Cell, install: Install, out: Path) -> tuple[str, bool]:
    """Write the raw file of a cell that could not be measured: (what to say, whether the run
    must fail because the failure is not in the raw file).

    A complete cell already at ``out`` stays as it was: a redo that fails (``--force`` with the
    disk full or the index down) says so and costs nothing it had. Any other file there is
    moved aside (kept), and a failure that cannot itself be written (the disk full) is said."""
    if _holds_complete(out):
        why = install.detail[:300]
        return f" [not redone ({why}); its complete raw file is kept as it was]", True
    note = ""
    try:
        if out.exists():
            note = f" [the raw file it had is kept as {move_aside(out, 'before-failure').name}]"
        write_raw(install_failure_run(cell, install), out)
    except OSError as e:
        return note + f" [its failure could not be recorded either: {cli.describe(e)}]", True
    return note, False


def run_cell(cell: Cell, args: argparse.Namespace, progress: Progress) -> CellOutcome:
    """One cell, whatever happens: an unexpected failure here is recorded in its raw file."""
    try:
        return _run_cell(cell, args, progress)
    except Exception as e:  # recorded for this cell; the other cells go on
        why = cli.describe(e) if isinstance(e, OSError) else f"{type(e).__name__}: {e}"
        detail = f"the matrix itself failed on this cell: {why}"
        install = Install("failed", 0.0, detail, None)
        note, _ = record_failure(cell, install, cell.raw_path(args.raw_dir))
        outcome = CellOutcome(cell, install="failed", note=f" [{detail}]{note}", failed=True)
        progress.end(outcome)
        return outcome


def _run_cell(cell: Cell, args: argparse.Namespace, progress: Progress) -> CellOutcome:
    out = cell.raw_path(args.raw_dir)
    seeded = seed_from_committed(out, cell) if args.seed_from_committed else ""
    adopted = seeded + migrate.adopt_legacy(out)  # a plain X.json from before becomes X.json.gz
    state = "missing" if args.force else existing_state(out, cell, args.suite)
    outcome = CellOutcome(cell, note=adopted)
    # A complete cell that lacks a probe of the catalog, holds a changed one or is named by
    # --probes is completed in place: only those probes run (matrix.measure.incremental).
    redo, why, suite_kept = _redo(out, state, cell, args)
    if state == "complete" and redo:
        state = "partial"
    if state == "complete":
        run = read_raw(out)
        outcome.install = run.install.get("status", "?")
        outcome.note += " [kept: already complete]"
        outcome.kept = True
        outcome.counts = status_counts(run)
        outcome.tests = test_counts(run)
        return outcome
    progress.start(cell)
    t0 = time.monotonic()
    spec = EnvSpec(
        python=cell.python,
        triton=str(cell.release),
        numpy=cell.numpy,
        torch=cell.torch,
        extras=(*EnvSpec.extras, "pytest") if args.tests else EnvSpec.extras,
    )
    install = ensure_env(spec, args.envs_dir / cell.id)
    outcome.install = install.status
    if install.status == NO_SUCH_RELEASE and cell.release not in args.config.releases:
        # A typo or a release not yet out: no raw file, or every page would grow its column.
        outcome.note += f" [no raw file written: {install.detail[:200]}]"
        outcome.unrecorded = True
    elif not install_ok(install) or install.python is None:
        note, outcome.failed = record_failure(cell, install, out)
        outcome.note += note
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
            "--release",
            str(cell.release),
            "--quiet",
            "--phases",
            "--timeout",
            str(args.timeout),
        ]
        if state == "partial":
            cmd.append("--resume")
            outcome.note += f" [completed in place: {why}]" if suite_kept else " [resumed]"
        if redo:
            cmd += ["--redo", ",".join(redo)]
        if args.fresh_compiles:
            cmd.append("--fresh-compiles")
        if args.tests and not suite_kept:
            cmd += ["--tests", str(args.tests), "--tests-args", args.tests_args]
            cmd += ["--tests-device", args.tests_device]
        # With --tests the runner's stdout (its suite progress lines) is shown as it comes.
        # The runner dies with the matrix by SIGTERM, so that it ends its own strays first.
        # Its temporary files go to a folder of ours, which a killed runner cannot leave behind;
        # if it fails, its output (with its phase lines) is kept in the environments folder.
        with tempfile.TemporaryDirectory(prefix="matrix-cell-", ignore_cleanup_errors=True) as tmp:
            proc = procs.run(
                cmd,
                cwd=REPO_ROOT,
                stdout=None if args.tests else subprocess.PIPE,
                # os.environ as it is now: the run's cache folder (MATRIX_RUN_CACHE, set once
                # the cells start) must reach them, less a Triton on PYTHONPATH.
                env={**triton_identity.without_shadowing(dict(os.environ))[0], "TMPDIR": tmp},
                death_signal=signal.SIGTERM,
            )
            output = (proc.stdout or "") + (proc.stderr or "")
            if proc.returncode == runner.EXIT_WRONG_TRITON:
                return _wrong_triton(cell, output, out, outcome, t0, progress)
            wrote = proc.returncode == 0 and out.exists()
            log = None if wrote else runner.keep_log(args.envs_dir / "logs", cell.id, output)
            crash = "" if wrote else runner.crash_note(cell.id, proc.returncode, output, log)
        if not wrote:
            outcome.note += " " + crash
            outcome.failed = True
            if _holds_complete(out):  # the runner never replaced it: it is from before
                outcome.note += " [the complete raw file from before is kept as it was]"
        done = read_raw(out) if out.exists() and not outcome.failed else None
        if done is not None:
            outcome.counts = status_counts(done)
            outcome.tests = test_counts(done)
    outcome.seconds = time.monotonic() - t0
    progress.end(outcome)
    return outcome


def _wrong_triton(
    cell: Cell, output: str, out: Path, outcome: CellOutcome, t0: float, progress: Progress
) -> CellOutcome:
    """The runner refused the cell: a probe process imported another Triton than the cell's
    (``runner.TritonCheck``). Recorded as the cell's install error, left incomplete so that the
    next run measures it again; a complete raw file from before is kept as it was."""
    said = [ln for ln in output.splitlines() if ln.startswith(runner.REFUSED)]
    detail = said[-1].removeprefix(runner.REFUSED) if said else output.strip()[-600:]
    install = Install(INSTALL_ERROR, 0.0, detail, None, transient=True)
    note, _ = record_failure(cell, install, out)
    outcome.install, outcome.failed = INSTALL_ERROR, True
    outcome.note += f" [not measured: {detail}]{note}"
    outcome.seconds = time.monotonic() - t0
    progress.end(outcome)
    return outcome


def _redo(
    out: Path, state: str, cell: Cell, args: argparse.Namespace
) -> tuple[tuple[str, ...], str, bool]:
    """(probes to measure again, why, whether the recorded suite is kept) for a cell whose raw
    file is complete (or, with --probes, partial). A complete cell's recorded suite is the
    one asked for (else it would not be complete), so completing it runs no test again."""
    if state == "missing":
        return (), "", False
    if state == "partial":  # the runner resumes it; --probes drops those probes' results too
        return args.probes, "", False
    run = read_raw(out)
    if not install_ok(run.install):
        return (), "", False
    redo, why = incremental.redo_plan(run, cell.backends, args.catalog, args.probes)
    return redo, why, state == "complete" and bool(redo)


def _parser() -> argparse.ArgumentParser:
    """The matrix's options (``parse_args`` checks what one option cannot say alone)."""
    p = argparse.ArgumentParser(
        allow_abbrev=False,  # --cand is no --candidate: a typo is refused, never guessed
        prog="nox -s matrix --",
        description=__doc__.split("\n")[0],
    )
    p.add_argument("--releases", help="comma-separated Triton releases (default: the data file)")
    p.add_argument("--numpy", help="comma-separated numpy releases (default: the data file)")
    p.add_argument(
        "--discover",
        action="store_true",
        help="also run releases on the package index that the data file lacks",
    )
    p.add_argument("--tests", type=Path, help="a pytest suite to run in every cell too")
    p.add_argument(
        "--tests-args",
        default="",
        help='options for pytest on the --tests suite, one string: --tests-args "-k add -x"',
    )
    p.add_argument(
        "--tests-device",
        default=test_device.AUTO,
        help="where the --tests suite's CUDA goes: cpu (the interpreter, as written), "
        "cuda-on-cpu (CUDA redirected to the CPU: launch observations, not GPU correctness) "
        "or auto (default: cuda-on-cpu when the suite mentions CUDA and this machine has none)",
    )
    p.add_argument("--force", action="store_true", help="redo cells that are already complete")
    p.add_argument(
        "--fresh-compiles",
        action="store_true",
        help="empty each measured cell's kept compile cache first: our kernels' aot compiles "
        "(splitk, tiled) are done anew instead of answered by Triton's cache",
    )
    p.add_argument(
        "--probes",
        help="comma-separated probes to measure again in every selected cell (the others are "
        "kept; a cell with no raw file is measured in full)",
    )
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="cells run at once")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per probe")
    p.add_argument(
        "--raw-dir",
        type=Path,
        help="where raw files go (default: reports/raw; with --tests team-results/raw, which "
        "starts from the committed cells: the team's run never rewrites reports/)",
    )
    p.add_argument("--envs-dir", type=Path, default=DEFAULT_ENVS, help="cell environments")
    p.add_argument(
        "--report-dir", type=Path, help="where the pages go (default: the folder above --raw-dir)"
    )
    p.add_argument("--no-report", action="store_true", help="run the cells only")
    p.add_argument(
        "--aot-numpy",
        help="run aot only in the cell with this numpy (CI's one-cell sessions pass the data "
        "file's, so that aot runs once per release)",
    )
    p.add_argument(
        "--no-wait",
        action="store_true",
        help="refuse (exit 2) instead of waiting when another matrix run uses the same folders",
    )
    return p


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = _parser()
    args = p.parse_args(argv)
    if args.discover and args.releases:
        p.error(
            "--discover adds releases to the data file's list and --releases replaces that list;"
            " give one: --releases A,B (name the releases) or --discover (all, plus new ones)"
        )
    if args.jobs < 1:
        p.error(f"--jobs: expected at least 1, got {args.jobs}")
    if not args.timeout > 0:  # also nan; the runner would refuse it in every cell, late
        p.error(f"--timeout: expected seconds > 0, got {args.timeout}")
    if args.tests is not None:
        if not args.tests.exists():
            p.error(f"--tests: {args.tests} does not exist")
        args.tests = args.tests.resolve()
    if args.tests_args and args.tests is None:
        p.error("--tests-args: options for a suite, and no --tests suite was given")
    args.seed_from_committed = args.raw_dir is None and args.tests is not None
    if args.raw_dir is None:
        args.raw_dir = default_raw_dir(args.tests is not None)
    try:
        pytest_args = shlex.split(args.tests_args)
    except ValueError as e:
        p.error(f"--tests-args: cannot split {args.tests_args!r} into words: {e}")
    try:
        test_device.check_mode(args.tests_device)
        if args.tests is not None:
            args.tests_device, why = test_device.resolve(args.tests_device, args.tests)
            print(f"matrix: the suite runs with --tests-device {args.tests_device} ({why})")
            test_device.capability()
    except (ValueError, DataFileError) as e:
        p.error(str(e))
    args.suite = (
        suite_identity(args.tests, pytest_args, args.timeout, args.tests_device)
        if args.tests is not None
        else None
    )
    args.catalog = incremental.current_catalog()
    try:
        args.probes = (
            incremental.parse_probe_names(args.probes, args.catalog) if args.probes else ()
        )
    except ValueError as e:
        p.error(str(e))
    return args


def default_raw_dir(team_suite: bool) -> Path:
    """The raw folder of a run without ``--raw-dir``: with a team's suite ``TEAM_RAW``, else
    this project's committed results (the gate session reads the same one back)."""
    return TEAM_RAW if team_suite else DEFAULT_RAW


def seed_from_committed(out: Path, cell: Cell) -> str:
    """Start a team folder's cell from this project's committed one: its probes are kept (as
    a fresh clone's run keeps them) and only the suite, and any probe changed since, run.
    Returns what to say; nothing where there is no complete committed cell to start from."""
    committed = cell.raw_path(DEFAULT_RAW)
    if out.exists() or partial_path(out).exists() or not committed.is_file():
        return ""
    try:
        if not read_raw(committed).complete:
            return ""
    except SchemaError:
        return ""  # measured afresh; the committed file's own problem is the project's
    out.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(committed, out)
    return f" [started from the committed {committed.name}]"


# Exit code of a run given a release that does not exist or is older than the harness supports:
# bad input (``matrix.cli``), whichever of the two checks finds it.
EXIT_UNKNOWN_RELEASE = ExitCode.UNDECIDABLE


def known_releases(config: MatrixConfig) -> str:
    """The releases a user may name, for the line that refuses one that is not."""
    return (
        f"known releases: {', '.join(map(str, sorted(config.releases)))} "
        "(matrix/data/matrix.toml; --discover adds newer ones from the package index)"
    )


# The step after the cells: build the pages (``matrix.orchestrate`` passes it; the report is
# a later stage than measuring, so this module never imports it).
ReportStep = Callable[[argparse.Namespace, Collection[str]], int]


def main(argv: Sequence[str] | None = None, report: ReportStep | None = None) -> int:
    """Run the selected cells; then ``report(args, names of the raw files measured)`` unless
    ``--no-report``. Without ``report`` (``python -m matrix.measure.orchestrate``) the pages
    are not built, and a line says so."""
    args = parse_args(argv)
    args.report_step = report
    procs.interrupt_on_sigterm()
    with procs.owning_descendants():  # what a killed runner leaves running is ours to end
        return _interruptible_main(args)


def _interruptible_main(args: argparse.Namespace) -> int:
    try:
        return _main(args)
    except KeyboardInterrupt:
        procs.stop_all()
        print(
            "\nmatrix: interrupted; every child process was stopped. Complete cells are kept; "
            "run the same command again to finish the others.",
            file=sys.stderr,
            flush=True,
        )
        return ExitCode.INTERRUPTED


def _main(args: argparse.Namespace) -> int:
    try:
        config = load_matrix()
        releases = parse_list(args.releases, "--releases") if args.releases else None
        numpys = parse_list(args.numpy, "--numpy") if args.numpy else None
    except (MatrixConfigError, DataFileError) as e:
        print(f"matrix: {e}", file=sys.stderr)
        return ExitCode.UNDECIDABLE
    args.config = config
    old = [r for r in releases or () if r < config.supported_from]
    if old:
        print(
            f"matrix: --releases: {', '.join(map(str, old))} older than "
            f"{config.supported_from}, the oldest release the harness supports "
            "(matrix/data/matrix.toml: supported_from); refused: its probes would record the "
            f"harness's own failures as Triton behaviour; {known_releases(config)}",
            file=sys.stderr,
        )
        return EXIT_UNKNOWN_RELEASE
    extra: list[Release] = []
    if args.discover:
        try:
            extra = discover_releases(config)
        except DiscoverError as e:
            print(f"matrix: --discover: {e}", file=sys.stderr)
            return ExitCode.UNDECIDABLE
        print(
            f"discover: {', '.join(map(str, extra)) or 'no releases beyond the data file'}",
            flush=True,
        )
    cells = plan(
        config, releases=releases, numpys=numpys, extra_releases=extra, aot_numpy=args.aot_numpy
    )
    # Each cell measures the Triton of its own environment: one on PYTHONPATH would come first
    # in every cell (the runner would then refuse each one). It is left out, and said.
    _, shadows = triton_identity.without_shadowing(dict(os.environ))
    if shadows:
        print(f"matrix: PYTHONPATH entries holding another triton are left out of every cell's "
              f"environment (each cell measures its own release): {', '.join(shadows)}",
              flush=True)  # fmt: skip
    uv_binary()  # resolved here, once, before the worker threads (see uv_binary)
    try:
        with lock.hold([args.raw_dir, args.envs_dir], wait=not args.no_wait):
            outcomes = _run_cells(cells, args)
    except lock.LockBusy as e:
        print(f"matrix: {e}", file=sys.stderr)
        return ExitCode.UNDECIDABLE
    kept = [o for o in outcomes if o.kept]
    if kept:
        print(
            f"\nmatrix: reused {len(kept)} of {len(outcomes)} cells from complete raw files in "
            f"{args.raw_dir} without measuring them again (on a fresh clone these are the "
            "committed results): " + ", ".join(o.cell.id for o in kept) + ". To re-measure: "
            "--force (every selected cell) or delete a cell's raw file.",
            flush=True,
        )
    unrecorded = [o for o in outcomes if o.unrecorded]
    failed = [o for o in outcomes if o.failed]
    # A release that does not exist is a mistake in the command, as one older than the harness
    # supports is (refused above): the same exit code for both.
    status = EXIT_UNKNOWN_RELEASE if unrecorded else ExitCode.FAILED if failed else ExitCode.OK
    if failed:
        print(
            f"matrix: {len(failed)} cell(s) could not be measured or recorded (see the summary): "
            + ", ".join(o.cell.id for o in failed),
            file=sys.stderr,
        )
    if unrecorded:
        gone = sorted({o.cell.release for o in unrecorded})
        print(
            f"matrix: --releases: no such release, so no raw file: {', '.join(map(str, gone))} "
            f"(the package index has none); {known_releases(config)}",
            file=sys.stderr,
        )
    if args.no_report:
        return status
    if args.report_step is None:
        print("matrix: pages not built here (python -m matrix matrix, as nox -s matrix "
              "runs it, builds them; --no-report says so quietly)", flush=True)  # fmt: skip
        return status
    measured = {o.cell.raw_path(args.raw_dir).name for o in outcomes if not o.kept}
    # The pages of the cells that did run are built; a bad release still decides the code.
    return max(status, args.report_step(args, measured))


@contextlib.contextmanager
def run_cache_folder(envs_dir: Path) -> Iterator[Path]:
    """The folder this run's cells share (``matrix.probes.support.run_cache``), named to them
    by ``MATRIX_RUN_CACHE`` and removed when the run ends, however it ends."""
    envs_dir.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix=".run-cache-", dir=envs_dir))
    saved = os.environ.get(run_cache.ENV)
    os.environ[run_cache.ENV] = str(folder)
    try:
        yield folder
    finally:
        if saved is None:
            os.environ.pop(run_cache.ENV, None)
        else:
            os.environ[run_cache.ENV] = saved
        shutil.rmtree(folder, ignore_errors=True)


def _run_cells(cells: Sequence[Cell], args: argparse.Namespace) -> list[CellOutcome]:
    progress = Progress(len(cells))
    print(
        f"matrix: {len(cells)} cells, {args.jobs} at a time, raw files in {args.raw_dir}",
        flush=True,
    )
    pool = ThreadPoolExecutor(max_workers=args.jobs)
    # The cells with aot (each release's longest, ~3x the others) start first: the jobs end
    # together, and a release's numpy cells then find what its aot cell left in the run cache.
    order = sorted(range(len(cells)), key=lambda i: ("aot" not in cells[i].backends, i))
    with run_cache_folder(args.envs_dir):
        try:
            futures = {i: pool.submit(run_cell, cells[i], args, progress) for i in order}
            outcomes = [futures[i].result() for i in range(len(cells))]
        except BaseException:
            procs.stop_all()  # the workers' children die, so the workers return at once
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        pool.shutdown()
    print("\n" + summary_table(outcomes), flush=True)
    if args.tests is not None:
        runs = [read_raw(p) for o in outcomes if (p := o.cell.raw_path(args.raw_dir)).exists()]
        print(f"\nyour suite ({args.suite['path']}), per release:", flush=True)
        print("\n".join(suite_summary(runs)) or "  no cell recorded it", flush=True)
    print(f"\nmatrix: {len(cells)} cells in {progress._elapsed()}", flush=True)
    return outcomes


if __name__ == "__main__":
    sys.exit(cli.run(main, "matrix.orchestrate"))
