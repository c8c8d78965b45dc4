"""``python -m matrix.orchestrate``: the cell orchestrator behind nox -s matrix.

The code lives in ``matrix.measure.orchestrate``; this entry point keeps the short command working.
"""

import sys

from matrix import cli
from matrix.measure.orchestrate import main

if __name__ == "__main__":
    sys.exit(cli.run(main, "matrix.orchestrate"))
