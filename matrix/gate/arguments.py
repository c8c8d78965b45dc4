"""The gate's command line: its one argument parser (abbreviations and unknown options
refused), the ``--device`` split, and the checks of the arguments that need no results read."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from matrix import cli
from matrix.core import Release, ReleaseError
from matrix.gate import timing
from matrix.gate.config import ACCEPTED_PATH, PINNED_PATH
from matrix.gate.gate_report import EXIT_UNDECIDABLE
from matrix.measure import test_device
from matrix.results import raw_files, release_named

PROJECT_KERNELS = "kernels"
# The project's own declaration (targets) for its own verdict: a file in its kernels/ (not
# pyproject.toml's table, which every test fixture under the root would read as its own).
OWN_CONFIG = "triton-compat.toml"
PROJECT_CONFIG = f"{PROJECT_KERNELS}/{OWN_CONFIG}"


# Where the gate writes without ``--out``: a folder of the current directory that no checkout
# commits (.gitignore), so that a team's gate run never dirties the project's committed files.
DEFAULT_OUT = "triton-compat-gate"


def default_out() -> Path:
    """Where the gate writes when ``--out`` is not given: ``DEFAULT_OUT`` in the current
    directory."""
    return Path(DEFAULT_OUT)


def check_out(out: str | Path, results: str | Path) -> None:
    """Refuse an ``--out`` that is the results folder or inside it: the gate.json left there
    would sit among the raw files of every later run."""
    folder = cli.resolved(results)
    if not folder.is_dir():
        return
    target = cli.resolved(out)
    if target == folder or target.is_relative_to(folder):
        raise UsageError(
            f"--out {str(out)!r}: inside the --results folder {str(results)!r}; expected a "
            "folder outside it (gate.md and gate.json must not sit among the raw files)"
        )


def recorded_releases(results: Path) -> list[Release] | None:
    """The releases a results folder holds cells of, told from the raw files' names alone (no
    file is read); None where a name does not spell a cell (the contents decide then)."""
    if not results.is_dir():
        return None
    found: set[Release] = set()
    for path in raw_files(results):
        release = release_named(path)
        if release is None:
            return None
        found.add(release)
    return sorted(found) or None


class UsageError(ValueError):
    """A command-line argument is wrong; the message names it, its value and what was expected."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(
            EXIT_UNDECIDABLE, f"{self.prog}: bad arguments: {message} (exit 2: undecidable)\n"
        )


def parser(session: bool = False) -> argparse.ArgumentParser:
    """The gate's one argument parser: abbreviations refused (``--cand`` is no ``--candidate``),
    unknown options refused. ``session``: ``nox -s gate``'s (``matrix.gate.session``), where
    ``--candidate`` and ``--results`` have defaults it resolves."""
    p = _Parser(
        prog="nox -s gate --" if session else "python -m matrix gate",
        description="Compare recorded matrix results of a baseline and a candidate Triton release.",
        epilog="Exit status: 0 safe, 1 unsafe, 2 undecidable (missing/failed data, bad arguments).",
        allow_abbrev=False,
    )
    p.add_argument("--baseline", help=f"release to upgrade from (default: {PINNED_PATH.name})")
    p.add_argument(
        "--candidate",
        required=not session,
        help="release to upgrade to (nox -s gate: default the newest on the package index)",
    )
    p.add_argument(
        "--results",
        required=not session,
        help="raw results folder or a merged matrix.json (nox -s gate: default, run the two "
        "releases' cells into reports/raw)",
    )
    p.add_argument(
        "--scan", action="append", default=[], metavar="PATH", help="more sources to scan"
    )
    p.add_argument(
        "--tests",
        action="append",
        default=[],
        metavar="DIR",
        help="the team's test suite (as given to the matrix): its sources are read and the "
        "kernels its tests launched (captured in the results) are typed by those launches",
    )
    p.add_argument(
        "--tests-device",
        choices=test_device.MODES,
        help="with nox -s gate and no --results: where the cells run the --tests suite "
        "(cpu, cuda-on-cpu, auto; the matrix's option); the gate reads what they recorded",
    )
    p.add_argument(
        "--no-project-scan",
        action="store_true",
        help="do not scan the project's kernels/ folder (with --scan/--tests it is not scanned)",
    )
    p.add_argument(
        "--accepted",
        default=None,
        help=f"accepted behaviour changes (default: {ACCEPTED_PATH.name}, this project's, "
        "without --scan/--tests; with them only the file given here, whose entries name the "
        "paths or kernels they were justified for)",
    )
    p.add_argument("--pinned", default=str(PINNED_PATH), help="file with the pinned release")
    p.add_argument(
        "--config",
        default=None,
        metavar="FILE",
        help="the team's declaration: a pyproject.toml with [tool.triton-compat] (targets, "
        "dtypes), or a TOML file that is that table (default: the nearest pyproject.toml above "
        "the --scan/--tests paths that has one; none: every column counts)",
    )
    p.add_argument(
        "--out",
        default=None,
        help=f"folder for gate.md and gate.json (default: {DEFAULT_OUT}/ in the current "
        "directory; never inside the --results folder)",
    )
    p.add_argument(
        "--bench",
        help="folder of GPU benchmark files (default: bench/ beside the --results folder or file)",
    )
    p.add_argument(
        "--slowdown-threshold",
        type=float,
        default=timing.DEFAULT_THRESHOLD,
        help="GPU slowdown (vs cuBLAS in the same run) that is a regression, beyond measured "
        f"noise (default {timing.DEFAULT_THRESHOLD})",
    )
    return p


def bench_folder(args: argparse.Namespace) -> Path | None:
    """``--bench``, or ``bench/`` beside the results (reports/raw -> reports/bench)."""
    if args.bench:
        path = Path(args.bench)
        if not path.is_dir():
            raise UsageError(f"--bench {args.bench!r}: no such folder")
        return path
    return default_bench_folder(args.results)


def default_bench_folder(results: str | Path) -> Path | None:
    """``bench/`` beside a results folder or file, where it exists."""
    path = cli.resolved(results).parent / "bench"
    return path if path.is_dir() else None


def release_arg(arg: str, value: str | Release) -> Release:
    """The release an argument names (``3.8`` is exactly ``3.8.0``)."""
    try:
        return Release.parse(value, arg)
    except ReleaseError as e:
        raise UsageError(str(e)) from None


def split_device(argv: Sequence[str]) -> tuple[str, list[str]]:
    """``--device`` of the gate's arguments (``cpu`` when absent), read by argparse, and the
    other arguments: ``cuda`` runs the GPU legs (``matrix.gate.legs``, their own parser) instead
    of comparing recorded results, so the device picks the parser that reads the rest."""
    p = _Parser(prog="python -m matrix gate", add_help=False, allow_abbrev=False)
    p.add_argument("--device", default="cpu")
    known, rest = p.parse_known_args(list(argv))
    return known.device, rest
