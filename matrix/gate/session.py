"""``nox -s gate``'s work, as one command that keeps the gate's exit code (0/1/2).

    python -m matrix gate-session [--baseline X] [--candidate Y] [--results DIR] [gate args...]

nox turns any failed command into exit 1, so the session cannot just run the gate: it runs this,
which resolves the defaults, runs the cells it needs and gates; ``matrix.cli.run`` writes its
code to ``MATRIX_EXIT_CODE_FILE`` and the session ends the nox process with that code.

- no ``--candidate``: the newest release on the package index (its JSON listing: nox's uv
  environments have no pip);
- no ``--baseline``: the release pinned in ``matrix/data/pinned.toml``; a malformed file is a
  one-line message and exit 2;
- ``--device cuda``: the GPU legs (``matrix.gate.legs``): each side's suite runs natively on
  this machine's GPU, no cells;
- no ``--results``: runs the two releases' cells (complete ones are reused) into reports/raw,
  or, with the team's suite (``--tests DIR``: the gate then decides on its code), into
  team-results/raw (``matrix.measure.orchestrate.default_raw_dir``).
- ``--config FILE`` (the team's ``[tool.triton-compat]`` declaration) and every other gate
  option pass through to the gate unchanged.

Everything this cannot decide (the index unreachable, a bad data file) is exit 2, fail closed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from matrix import cli
from matrix.core import DataFileError, Release, ReleaseError
from matrix.gate.config import pinned_release
from matrix.gate.verdict import EXIT_UNDECIDABLE, gate, parser, split_device

PROG = "nox -s gate"


def resolve(args: argparse.Namespace) -> argparse.Namespace:
    """The gate's arguments with the defaults filled in (may run the matrix's cells). ``args``
    come from the gate's own parser (``parser(session=True)``): argv is read once, there."""
    if args.candidate is None:
        from matrix.measure.discover import index_versions

        newest = max(Release.parse(v) for v in index_versions())
        print(f"{PROG}: candidate: {newest} (the newest release on the package index)")
        args.candidate = str(newest)
    if args.results is None:
        baseline = args.baseline or str(pinned_release(args.pinned))
        print(
            f"{PROG}: running the cells of {baseline} and {args.candidate} (complete ones are "
            "reused)"
        )
        from matrix.measure.orchestrate import default_raw_dir
        from matrix.measure.orchestrate import main as orchestrate

        cells = ["--releases", f"{baseline},{args.candidate}", "--no-report"]
        # the team's suite runs in the cells too, so that its launches are captured and the
        # gate's --tests reads them (the matrix takes one suite)
        if len(args.tests) > 1:
            raise DataFileError(
                "--tests", "", "one test suite (the matrix runs one per cell)", args.tests
            )
        if args.tests:
            cells += ["--tests", args.tests[0]]
            if args.tests_device is not None:
                cells += ["--tests-device", args.tests_device]
        code = orchestrate(cells)
        if code not in (0, 1):
            raise RuntimeError(f"the matrix run for {baseline},{args.candidate} exited {code}")
        # where the matrix wrote them: a team's suite never goes into reports/raw
        args.results = str(default_raw_dir(bool(args.tests)))
    return args


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    device, rest = split_device(argv)
    try:
        if device == "cuda":
            from matrix.gate import legs

            return legs.main(argv)  # its parser reads everything; no cells on this path
        return gate(resolve(parser(session=True).parse_args(rest)))
    except (DataFileError, ReleaseError, RuntimeError, OSError) as e:
        print(f"{PROG}: {e} (exit 2: undecidable)", file=sys.stderr)
        return EXIT_UNDECIDABLE


if __name__ == "__main__":
    cli.deprecated("python -m matrix.gate.session", "gate-session")
    sys.exit(cli.run(main, "matrix.gate.session"))
