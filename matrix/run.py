"""``python -m matrix.run``: the runner (one cell's probes into a raw file).

The code lives in ``matrix.measure.runner``.
A deprecated alias of ``python -m matrix run`` (issue 43), kept for one release: it
says so on stderr, then runs the same code.
"""

import sys

from matrix import cli
from matrix.measure.runner import main

if __name__ == "__main__":
    cli.deprecated("python -m matrix.run", "run")
    sys.exit(cli.run(main, "matrix.run"))
