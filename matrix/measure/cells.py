"""The matrix cells as values: which release, which numpy, which backends, which raw file.

>>> cells = plan(load_matrix(), releases=["3.9.0"])
>>> [str(c) for c in cells]
['triton-3.9.0-numpy-1.26.4', 'triton-3.9.0-numpy-2.3.5', 'triton-3.9.0-numpy-2.4.6']
>>> cells[-1].backends
('interpret', 'aot')
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matrix.core import (
    DATA_DIR,
    DataFileError,
    Release,
    ReleaseError,
    load_toml,
    parse_releases,
    release_key,
    run_id,
)

DATA = DATA_DIR / "matrix.toml"


class MatrixConfigError(ValueError):
    """A command-line selection of cells is not usable; the message names the argument."""


@dataclass(frozen=True)
class MatrixConfig:
    """``matrix/data/matrix.toml`` read and checked: the cells' Python and torch, the default
    releases and numpys, the numpy the aot step runs under, and the release bounds."""

    python: str
    torch: str
    releases: tuple[Release, ...]
    numpy: tuple[str, ...]
    aot_numpy: str
    discover_from: Release
    # The oldest release the harness can measure; older ones are refused, not run.
    supported_from: Release
    # Where ``nox -s tests`` runs (the data file's [tests]); see ``test_targets``.
    tests_older: SuiteTarget | None = None

    @property
    def newest(self) -> Release:
        return max(self.releases)

    @property
    def newest_numpy(self) -> str:
        return max(self.numpy, key=release_key)

    def test_targets(self) -> tuple[SuiteTarget, ...]:
        """The whole suite on the newest release with the newest numpy, then the older one."""
        newest = SuiteTarget(self.newest, self.newest_numpy, ("tests",))
        return (newest,) + ((self.tests_older,) if self.tests_older else ())


@dataclass(frozen=True)
class SuiteTarget:
    """One environment of ``nox -s tests``: a release, its numpy, the test paths run there."""

    release: Release
    numpy: str
    paths: tuple[str, ...]


@dataclass(frozen=True)
class Cell:
    """One environment and one raw file: a Triton release with one numpy."""

    release: Release
    numpy: str
    backends: tuple[str, ...]
    python: str
    torch: str

    @property
    def id(self) -> str:
        return run_id(self.release, self.numpy)

    def __str__(self) -> str:
        return self.id

    def raw_path(self, raw_dir: Path) -> Path:
        """Where this cell's raw file is (gzip-compressed JSON: ``results.RAW_SUFFIX``)."""
        from matrix.results import raw_name

        return raw_dir / raw_name(self.id)


def _release(value: Any, path: Path, key: str) -> Release:
    try:
        return Release.parse(value, f"{path}: {key}")
    except ReleaseError:
        raise DataFileError(path, key, "a release X.Y.Z", value) from None


def load_matrix(path: Path = DATA) -> MatrixConfig:
    """Read and check the matrix data file (a DataFileError names the key that is wrong)."""
    raw = load_toml(path)
    for key in (
        "python",
        "torch",
        "releases",
        "numpy",
        "aot_numpy",
        "discover_from",
        "supported_from",
    ):
        if key not in raw:
            raise DataFileError(path, key, "a value (the key is missing)")
    for key in ("releases", "numpy"):
        if not isinstance(raw[key], list) or not raw[key]:
            raise DataFileError(path, key, "a non-empty list of releases", raw[key])
    releases = tuple(_release(v, path, "releases") for v in raw["releases"])
    numpys = tuple(str(_release(v, path, "numpy")) for v in raw["numpy"])
    aot_numpy = str(_release(raw["aot_numpy"], path, "aot_numpy"))
    if aot_numpy not in numpys:
        raise DataFileError(path, "aot_numpy", f"one of numpy {numpys}", raw["aot_numpy"])
    return MatrixConfig(
        tests_older=_tests_older(raw.get("tests"), path),
        python=str(raw["python"]),
        torch=str(_release(raw["torch"], path, "torch")),
        releases=releases,
        numpy=numpys,
        aot_numpy=aot_numpy,
        discover_from=_release(raw["discover_from"], path, "discover_from"),
        supported_from=_release(raw["supported_from"], path, "supported_from"),
    )


def _tests_older(table: Any, path: Path) -> SuiteTarget | None:
    if table is None:
        return None
    if not isinstance(table, dict):
        raise DataFileError(path, "tests", "a table", table)
    for key in ("older_release", "older_numpy", "older_paths"):
        if key not in table:
            raise DataFileError(path, f"tests.{key}", "a value (the key is missing)")
    paths = table["older_paths"]
    if not isinstance(paths, list) or not paths or not all(isinstance(p, str) for p in paths):
        raise DataFileError(path, "tests.older_paths", "a non-empty list of test paths", paths)
    return SuiteTarget(
        _release(table["older_release"], path, "tests.older_release"),
        str(_release(table["older_numpy"], path, "tests.older_numpy")),
        tuple(paths),
    )


def parse_list(value: str, what: str) -> list[Release]:
    """``"3.8, 3.9.0"`` -> ``[Release('3.8.0'), Release('3.9.0')]``, each a valid release."""
    try:
        return parse_releases(value, what)
    except ReleaseError as e:
        raise MatrixConfigError(str(e)) from None


def plan(
    config: MatrixConfig,
    releases: Sequence[Release | str] | None = None,
    numpys: Sequence[Release | str] | None = None,
    extra_releases: Sequence[Release | str] = (),
    backends: Sequence[str] = ("interpret", "aot"),
    aot_numpy: str | None = None,
) -> list[Cell]:
    """The cells to run: every release x numpy; aot only in each release's ``aot_numpy`` cell.

    ``releases`` narrows (or, for releases not in the data file, extends) the list. Without
    ``aot_numpy``, a ``numpys`` selection that lacks the data file's aot numpy gets aot in its
    newest numpy; with it (CI's one-cell sessions), aot runs only in that numpy's cell, so a
    fan-out over cells compiles once per release, not once per cell.
    """
    chosen = [
        Release.parse(r)
        for r in (releases if releases else list(config.releases) + list(extra_releases))
    ]
    numpy_axis = [str(Release.parse(n)) for n in numpys] if numpys else list(config.numpy)
    if aot_numpy is None:
        aot_numpy = config.aot_numpy if config.aot_numpy in numpy_axis else numpy_axis[-1]
    else:
        aot_numpy = str(Release.parse(aot_numpy, "--aot-numpy"))
    cells = []
    for release in sorted(dict.fromkeys(chosen)):
        for np_version in numpy_axis:
            cell_backends = tuple(b for b in backends if b != "aot" or np_version == aot_numpy)
            cells.append(Cell(release, np_version, cell_backends, config.python, config.torch))
    return cells
