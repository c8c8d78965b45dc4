"""``nox -s gate``'s work, as one entry point that keeps the gate's exit code (0/1/2).

    python -m matrix.gate.session [--baseline X] [--candidate Y] [--results DIR] [gate args...]

nox turns any failed command into exit 1, so the session cannot just run the gate: it runs this,
which resolves the defaults, runs the cells it needs, gates, and writes its code to
``--exit-code-file``; the session then ends the nox process with that code.

- no ``--candidate``: the newest release on the package index (its JSON listing: nox's uv
  environments have no pip);
- no ``--baseline``: the release pinned in ``matrix/data/pinned.toml``; a malformed file is a
  one-line message and exit 2;
- no ``--results``: runs the two releases' cells (complete ones are reused) into reports/raw,
  with the team's suite when ``--tests DIR`` is given (the gate then decides on its code).

Everything this cannot decide (the index unreachable, a bad data file) is exit 2, fail closed.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from matrix import cli
from matrix.core import DataFileError, Release, ReleaseError
from matrix.gate.config import PINNED_PATH, pinned_release
from matrix.gate.verdict import EXIT_UNDECIDABLE
from matrix.gate.verdict import main as gate_main

PROG = "nox -s gate"


def option(args: Sequence[str], name: str) -> str | None:
    """The value of ``name`` in ``args`` (``--x V`` or ``--x=V``), or None."""
    for i, a in enumerate(args):
        if a == name and i + 1 < len(args):
            return args[i + 1]
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return None


def resolve(args: list[str]) -> list[str]:
    """The gate's arguments with the defaults filled in (may run the matrix's cells)."""
    out = list(args)
    if option(out, "--candidate") is None:
        from matrix.measure.discover import index_versions

        newest = max(Release.parse(v) for v in index_versions())
        print(f"{PROG}: candidate: {newest} (the newest release on the package index)")
        out += ["--candidate", str(newest)]
    if option(out, "--results") is None:
        baseline = option(out, "--baseline") or str(
            pinned_release(option(out, "--pinned") or PINNED_PATH)
        )
        candidate = option(out, "--candidate")
        print(f"{PROG}: running the cells of {baseline} and {candidate} (complete ones are reused)")
        from matrix.measure.orchestrate import main as orchestrate

        cells = ["--releases", f"{baseline},{candidate}", "--no-report"]
        # the team's suite runs in the cells too, so that its launches are captured and the
        # gate's --tests reads them (the matrix takes one suite)
        tests = option(out, "--tests")
        if tests is not None:
            cells += ["--tests", tests]
            device = option(out, "--tests-device")
            if device is not None:
                cells += ["--tests-device", device]
        code = orchestrate(cells)
        if code not in (0, 1):
            raise RuntimeError(f"the matrix run for {baseline},{candidate} exited {code}")
        out += ["--results", "reports/raw"]
    return out


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    exit_file = option(args, "--exit-code-file")
    if exit_file is not None:
        i = args.index("--exit-code-file") if "--exit-code-file" in args else None
        if i is not None:
            del args[i : i + 2]
        else:
            args = [a for a in args if not a.startswith("--exit-code-file=")]
    try:
        code = gate_main(resolve(args))
    except (DataFileError, ReleaseError, RuntimeError, OSError) as e:
        print(f"{PROG}: {e} (exit 2: undecidable)", file=sys.stderr)
        code = EXIT_UNDECIDABLE
    if exit_file is not None:
        Path(exit_file).write_text(f"{code}\n", encoding="utf-8")
    return code


if __name__ == "__main__":
    sys.exit(cli.run(main, "matrix.gate.session"))
