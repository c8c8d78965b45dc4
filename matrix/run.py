"""``python -m matrix.run``: the runner (one cell's probes into a raw file).

The code lives in ``matrix.measure.runner``. Kept as a documented entry point (README, the GPU
workflow: ``python -m matrix.run --backends gpu``), not a second implementation.
"""

import sys

from matrix import cli
from matrix.measure.runner import main

if __name__ == "__main__":
    sys.exit(cli.run(main, "matrix.run"))
