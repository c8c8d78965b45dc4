"""What the benchmark compares, as data: the cases (x values) and the goals they are judged by.

Pure Python: importable without torch, for tests. The lines (implementations) are
``kernels.bench.impls``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

MN_SQUARE = (64, 128, 256)
K_LONG = (8192, 32768, 131072)
SKINNY = ((16, 4096, 4096), (16, 4096, 14336))
QUICK = ((64, 64, 8192), (256, 256, 32768), (16, 4096, 14336))
DTYPES = ("fp16", "bf16", "fp32-ieee", "fp32-tf32")
LAYOUTS = ("kn", "nk_t")  # b as (K, N) row-major; b as the transposed (N, K) weight
BANDWIDTH_SHAPE = (16, 4096, 14336)
GOALS = {"geomean": 1.2, "worst": 0.9, "bandwidth_pct": 85.0, "det_over_atomic": 1.15,
         "eager_geomean": 1.0, "host_us": 20.0}  # fmt: skip


@dataclass(frozen=True)
class Case:
    m: int
    n: int
    k: int
    dtype: str
    layout: str

    @property
    def precision(self) -> str:
        return self.dtype.split("-")[1] if self.dtype.startswith("fp32") else "ieee"

    @property
    def element_size(self) -> int:
        return 4 if self.dtype.startswith("fp32") else 2

    @property
    def flops(self) -> int:
        return 2 * self.m * self.n * self.k

    @property
    def min_bytes(self) -> int:
        """Each input read once, the output written once."""
        return (self.m * self.k + self.k * self.n + self.m * self.n) * self.element_size

    def __str__(self) -> str:
        return f"{self.m}x{self.n}x{self.k} {self.dtype} {self.layout}"


@dataclass(frozen=True)
class Benchmark:
    """One declared comparison, like ``triton.testing.Benchmark``: shapes x dtypes x layouts
    are the x values, ``impls`` the lines; every line is checked and timed the same way."""

    shapes: tuple[tuple[int, int, int], ...]
    dtypes: tuple[str, ...] = DTYPES
    layouts: tuple[str, ...] = LAYOUTS
    impls: tuple[str, ...] = ()
    goals: dict[str, float] = field(default_factory=lambda: dict(GOALS))

    @property
    def cases(self) -> list[Case]:
        return [Case(m, n, k, d, lay) for d in self.dtypes for lay in self.layouts
                for (m, n, k) in self.shapes]  # fmt: skip


SUITE_SHAPES = tuple((mn, mn, k) for mn in MN_SQUARE for k in K_LONG) + SKINNY


def suite(quick: bool = False) -> list[Case]:
    """The committed suite's cases (88), or the quick one's (24)."""
    return Benchmark(QUICK if quick else SUITE_SHAPES).cases
