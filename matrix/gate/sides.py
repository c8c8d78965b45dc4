"""What every comparison of an upgrade reads: both sides' runs, and the error for bad data.

Its own module so that the comparisons built on it (``matrix.gate.compare``,
``matrix.gate.kernel_compiles``) import it and not each other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from matrix.core import Release
from matrix.results import Run


class DataError(ValueError):
    """The recorded results contradict themselves or the contract (exit 2)."""


@dataclass(frozen=True)
class Sides:
    """Both sides of an upgrade: each release with its runs; what every comparison reads."""

    base: Sequence[Run]
    cand: Sequence[Run]
    baseline: Release
    candidate: Release
