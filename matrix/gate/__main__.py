"""``python -m matrix.gate``: the old name of ``python -m matrix gate`` (an alias, with a line
saying so): the upgrade verdict, exit 0 safe, 1 unsafe, 2 undecidable."""

import sys

from matrix import cli
from matrix.gate.verdict import main

cli.deprecated("python -m matrix.gate", "gate")
sys.exit(cli.run(main, "matrix.gate"))
