"""``python -m matrix <command>``: every command of the matrix (``matrix.commands``)."""

import sys

from matrix.commands import main

sys.exit(main())
