"""``python -m matrix.scan``: the old name of ``python -m matrix scan`` (an alias, with a line
saying so); see matrix.scan.command."""

import sys

from matrix import cli
from matrix.scan.command import main

if __name__ == "__main__":
    cli.deprecated("python -m matrix.scan", "scan")
    sys.exit(cli.run(main, "matrix.scan"))
