"""``python -m kernels.bench``: see ``kernels.bench`` and ``kernels.bench.cli``."""

import sys

from kernels.bench.cli import main

sys.exit(main())
