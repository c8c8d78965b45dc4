"""``python -m matrix report``: rebuild matrix.json and the report pages from raw results.

Exit status: 0 pages written; 1 pages written but the claims module raised (the claims page
shows the error); 2 bad arguments or unreadable raw results (nothing trustworthy written).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from matrix import cli
from matrix.exitcodes import ExitCode
from matrix.report import build
from matrix.report.sources import PROBES_DIR
from matrix.results import SchemaError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        allow_abbrev=False,  # --cand is no --candidate: a typo is refused, never guessed
        prog="python -m matrix report",
        description=__doc__.splitlines()[0],
    )
    parser.add_argument(
        "--raw", type=Path, default=Path("reports/raw"), help="folder of raw run files"
    )
    parser.add_argument("--out", type=Path, default=Path("reports"), help="where pages are written")
    parser.add_argument(
        "--bench", type=Path, default=None, help="benchmark records folder (default: OUT/bench)"
    )
    parser.add_argument(
        "--probes", type=Path, default=PROBES_DIR, help="probe modules shown on probe pages"
    )
    parser.add_argument(
        "--commit", help="the commit the footers name (default: git's last commit of --raw)"
    )
    parser.add_argument(
        "--date", help="the build date the footers name (default: that commit's date)"
    )
    parser.add_argument(
        "--rebuild",
        action="store_true",
        help="build even if nothing it reads changed since the last build (OUT/.build-stamp.json)",
    )
    args = parser.parse_args(argv)
    try:
        built = build(
            args.raw,
            args.out,
            bench_dir=args.bench,
            probes_dir=args.probes,
            commit=args.commit,
            date=args.date,
            rebuild=args.rebuild,
        )
    except (FileNotFoundError, SchemaError) as e:
        print(f"matrix.report: {e}", file=sys.stderr)
        return ExitCode.UNDECIDABLE
    if built.skipped:
        print(
            f"matrix.report: {len(built.pages)} files in {args.out} kept: the raw and bench files,"
            " code and suites they were built from are unchanged (--rebuild to build anyway)"
        )
    else:
        print(f"matrix.report: {built.runs} runs -> {len(built.pages)} files in {args.out}; built "
              f"because of {built.why}")  # fmt: skip
    if built.claims.error:
        print(f"matrix.report: claims evaluation failed: {built.claims.error}", file=sys.stderr)
        return ExitCode.FAILED
    return ExitCode.OK


if __name__ == "__main__":
    cli.deprecated("python -m matrix.report", "report")
    sys.exit(cli.run(main, "matrix.report"))
