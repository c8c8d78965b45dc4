"""``python -m matrix.verify``: checks raw files are complete.

The code lives in ``matrix.analyze.verify``. Kept as a documented entry point (.ci/run, README:
``python -m matrix.verify reports/raw --cells N``), not a second implementation.
"""

import sys

from matrix import cli
from matrix.analyze.verify import main

if __name__ == "__main__":
    sys.exit(cli.run(main, "matrix.verify"))
