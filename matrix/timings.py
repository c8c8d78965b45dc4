"""``python -m matrix.timings``: per-release timings from raw files.

The code lives in ``matrix.report.timings``.
A deprecated alias of ``python -m matrix timings`` (issue 43), kept for one release: it
says so on stderr, then runs the same code.
"""

import sys

from matrix import cli
from matrix.report.timings import main

if __name__ == "__main__":
    cli.deprecated("python -m matrix.timings", "timings")
    sys.exit(cli.run(main, "matrix.timings"))
