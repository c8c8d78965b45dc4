"""The matrix cells as values: which release, which numpy, which backends, which raw file.

>>> cells = plan(load_matrix(), releases=["3.9.0"])
>>> [str(c) for c in cells]
['triton-3.9.0-numpy-1.26.4', 'triton-3.9.0-numpy-2.3.5', 'triton-3.9.0-numpy-2.4.6']
>>> cells[-1].backends
('interpret', 'aot')
"""

from __future__ import annotations

import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from packaging.version import InvalidVersion, Version

from matrix.core import DATA_DIR

DATA = DATA_DIR / "matrix.toml"


class MatrixConfigError(ValueError):
    """The matrix data file or a command-line selection is not usable; the message says which."""


@dataclass(frozen=True)
class MatrixConfig:
    python: str
    torch: str
    releases: tuple[str, ...]
    numpy: tuple[str, ...]
    aot_numpy: str
    discover_from: str


@dataclass(frozen=True)
class Cell:
    """One environment and one raw file: a Triton release with one numpy."""

    release: str
    numpy: str
    backends: tuple[str, ...]
    python: str
    torch: str

    @property
    def id(self) -> str:
        return f"triton-{self.release}-numpy-{self.numpy}"

    def __str__(self) -> str:
        return self.id

    def raw_path(self, raw_dir: Path) -> Path:
        return raw_dir / f"{self.id}.json"


def _check_version(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise MatrixConfigError(f"{where}: expected a version string, got {value!r}")
    try:
        Version(value)
    except InvalidVersion:
        raise MatrixConfigError(f"{where}: {value!r} is not a version") from None
    return value


def load_matrix(path: Path = DATA) -> MatrixConfig:
    """Read and check the matrix data file."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise MatrixConfigError(f"{path}: {e}") from e
    for key in ("python", "torch", "releases", "numpy", "aot_numpy", "discover_from"):
        if key not in raw:
            raise MatrixConfigError(f"{path}: missing key {key!r}")
    for key in ("releases", "numpy"):
        if not isinstance(raw[key], list) or not raw[key]:
            raise MatrixConfigError(f"{path}: {key!r} must be a non-empty list")
    releases = tuple(_check_version(v, f"{path}: releases") for v in raw["releases"])
    numpys = tuple(_check_version(v, f"{path}: numpy") for v in raw["numpy"])
    aot_numpy = _check_version(raw["aot_numpy"], f"{path}: aot_numpy")
    if aot_numpy not in numpys:
        raise MatrixConfigError(f"{path}: aot_numpy {aot_numpy} is not one of numpy {numpys}")
    return MatrixConfig(
        python=str(raw["python"]),
        torch=_check_version(raw["torch"], f"{path}: torch"),
        releases=releases,
        numpy=numpys,
        aot_numpy=aot_numpy,
        discover_from=_check_version(raw["discover_from"], f"{path}: discover_from"),
    )


def parse_list(value: str, what: str) -> list[str]:
    """``"3.8.0, 3.9.0"`` -> ``["3.8.0", "3.9.0"]``, each a valid version."""
    items = [v.strip() for v in value.split(",") if v.strip()]
    if not items:
        raise MatrixConfigError(
            f"{what}: expected a comma-separated list of versions, got {value!r}"
        )
    return [_check_version(v, what) for v in items]


def plan(
    config: MatrixConfig,
    releases: Sequence[str] | None = None,
    numpys: Sequence[str] | None = None,
    extra_releases: Sequence[str] = (),
    backends: Sequence[str] = ("interpret", "aot"),
) -> list[Cell]:
    """The cells to run: every release x numpy; aot only in each release's ``aot_numpy`` cell.

    ``releases`` narrows (or, for releases not in the data file, extends) the list.
    """
    chosen = list(releases) if releases else list(config.releases) + list(extra_releases)
    numpy_axis = list(numpys) if numpys else list(config.numpy)
    aot_numpy = config.aot_numpy if config.aot_numpy in numpy_axis else numpy_axis[-1]
    cells = []
    for release in sorted(dict.fromkeys(chosen), key=Version):
        for np_version in numpy_axis:
            cell_backends = tuple(b for b in backends if b != "aot" or np_version == aot_numpy)
            cells.append(Cell(release, np_version, cell_backends, config.python, config.torch))
    return cells
