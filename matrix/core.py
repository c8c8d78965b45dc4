"""The words every stage of the matrix shares.

Importable by every stage (measure, backends, probes, report, gate, scan); imports none of them.
"""

from __future__ import annotations

from pathlib import Path

MATRIX_DIR = Path(__file__).resolve().parent
# The matrix's own data files: the default matrix, claims, scanner rules, pins.
DATA_DIR = MATRIX_DIR / "data"
# The checkout: children run from here so ``kernels``/``compat``/``matrix`` import.
REPO_ROOT = MATRIX_DIR.parent
