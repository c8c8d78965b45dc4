"""Test-wide setup: kernels run under the Triton interpreter on the CPU.

TRITON_INTERPRET is read when ``@triton.jit`` decorates a function, i.e. when ``kernels`` is
imported, so it is set here, before any test module imports Triton.
"""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")
