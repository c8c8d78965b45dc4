"""``python -m matrix.verify``: checks raw files are complete.

The code lives in ``matrix.analyze.verify``.
A deprecated alias of ``python -m matrix verify`` (issue 43), kept for one release: it
says so on stderr, then runs the same code.
"""

import sys

from matrix import cli
from matrix.analyze.verify import main

if __name__ == "__main__":
    cli.deprecated("python -m matrix.verify", "verify")
    sys.exit(cli.run(main, "matrix.verify"))
