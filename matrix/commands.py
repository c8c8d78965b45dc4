"""``python -m matrix <command>`` (and the ``triton-compat`` script): every command, one tree.

    python -m matrix --help                # lists every command
    python -m matrix gate --help           # one command's own options

The tree names the commands and refuses what is not one (``python -m matrix gat``); each
command's options are read by that command's own parser, which this module only reaches:
it runs ``main(argv)`` of the module that owns the command, through ``matrix.cli.run`` (one
line and a documented exit code for a full disk, a bad input or Ctrl-C). Every parser in the
tree refuses abbreviations (``--cand`` is no ``--candidate``). Exit codes: ``matrix.exitcodes``;
what each command means by each: docs/commands.md.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from matrix import cli
from matrix.exitcodes import ExitCode

PROG = "python -m matrix"


@dataclass(frozen=True)
class Command:
    name: str
    target: str  # "module:function", imported only when the command runs (no torch for --help)
    help: str

    def main(self) -> Callable[[list[str] | None], int]:
        module, _, function = self.target.partition(":")
        main: Callable[[list[str] | None], int] = getattr(importlib.import_module(module), function)
        return main


COMMANDS = (
    Command("matrix", "matrix.orchestrate:main",
            "every default cell (release x numpy) in its environment, then the pages "
            "(what nox -s matrix runs)"),
    Command("run", "matrix.measure.runner:main",
            "one cell: this environment's Triton, its probes, one raw file"),
    Command("gate", "matrix.gate.verdict:main",
            "is it safe to upgrade? compares recorded results (0 safe, 1 unsafe, 2 undecidable)"),
    Command("gate-session", "matrix.gate.session:main",
            "the gate with its defaults filled in (newest candidate, pinned baseline) and the "
            "cells it needs run first (what nox -s gate runs)"),
    Command("scan", "matrix.scan.command:main",
            "Triton upgrade hazards in kernel sources"),
    Command("report", "matrix.report.__main__:main",
            "matrix.json and the report pages from raw results"),
    Command("verify", "matrix.analyze.verify:main",
            "check that a matrix run lost nothing (raw files complete)"),
    Command("timings", "matrix.report.timings:main",
            "how long each cell and each release took, from raw files"),
    Command("claims", "matrix.report.claims:main",
            "the seed notes' claims checked against measured results"),
    Command("fingerprint", "matrix.analyze.fingerprint:main",
            "the fingerprint's cells of two raw files compared"),
    Command("discovery", "matrix.report.discovery:main",
            "the most consequential findings of the discovery probes, ranked, with first and "
            "last release"),
    Command("versions", "matrix.measure.probe_hashes:main",
            "the probes whose code changed under an unchanged version (probe.toml), for review"),
    Command("migrate", "matrix.measure.migrate:main",
            "rewrite results files in the current form"),
    Command("gpu-run", "matrix.measure.gpu_run:main",
            "the GPU columns for one Triton release, on a machine with an NVIDIA GPU"),
    Command("gpu-bench", "matrix.measure.gpu_bench:main",
            "time split-K, tiled and cuBLAS on one Triton release, on a GPU"),
)  # fmt: skip
BY_NAME = {c.name: c for c in COMMANDS}


def parser(prog: str = PROG) -> argparse.ArgumentParser:
    """The tree: one sub-parser per command (its options are its own parser's: ``--help``
    after a command reaches that parser, not this one)."""
    p = argparse.ArgumentParser(
        prog=prog,
        description="Is it safe to upgrade Triton? The compatibility matrix's commands.",
        epilog="Exit status (every command): 0 done, nothing wrong found (gate: safe); "
        "1 something wrong found (gate: unsafe); 2 could not decide (bad arguments, "
        "unreadable input); 3 wrong Triton in a cell; 130 interrupted. docs/commands.md "
        "has each command's.",
        allow_abbrev=False,
    )
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for c in COMMANDS:
        # add_help=False: ``python -m matrix gate --help`` is the gate's own help
        sub.add_parser(c.name, help=c.help, add_help=False, allow_abbrev=False)
    return p


def main(argv: Sequence[str] | None = None, prog: str = PROG) -> int:
    """Run ``argv[0]``'s command on the rest of ``argv``; the tree itself answers ``--help``
    and refuses an unknown command or option (exit 2)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0].startswith("-") or args[0] not in BY_NAME:
        parser(prog).parse_args(args[:1])  # prints the help, or one usage error and exits 2
        return ExitCode.UNDECIDABLE  # not reached: every such first word is help or an error
    command = BY_NAME[args[0]]
    return cli.run(command.main(), f"{prog} {command.name}", args[1:])


def entry() -> None:
    """The ``triton-compat`` console script (pyproject's [project.scripts])."""
    sys.exit(main(prog="triton-compat"))
