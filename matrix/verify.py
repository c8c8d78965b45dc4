"""``python -m matrix.verify``: checks raw files are complete.

The code lives in ``matrix.measure.verify``; this entry point keeps the short command working.
"""

import sys

from matrix import cli
from matrix.measure.verify import main

if __name__ == "__main__":
    sys.exit(cli.run(main, "matrix.verify"))
