"""``python -m matrix.timings``: per-release timings from raw files.

The code lives in ``matrix.report.timings``. Kept as a documented entry point (README:
``python -m matrix.timings reports/raw``), not a second implementation.
"""

import sys

from matrix import cli
from matrix.report.timings import main

if __name__ == "__main__":
    sys.exit(cli.run(main, "matrix.timings"))
