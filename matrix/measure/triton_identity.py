"""Which Triton a process imported, and whether it is the release a cell is labelled with.

A cell's raw file says ``triton: 3.9.0`` because the cell's environment holds that distribution
(``importlib.metadata``). The probes import whatever ``import triton`` finds first: another
Triton first on ``PYTHONPATH`` (a slim GPU package on purpose, a user's checkout by accident)
makes a cell labelled 3.9.0 hold 3.8.0's behaviour. So every probe process says which Triton it
imported (``imported``: its file and ``__version__``), and the runner refuses a cell where that
is not the distribution the cell is labelled with (``mismatch``), naming both. The GPU preflight
checks the same thing the same way (``matrix.measure.gpu_preflight``).

Nothing here imports Triton: the caller has (a probe), or ``imported`` only locates it.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matrix.core import Release, names_release

# A folder holds a Triton if ``import triton`` could load one from it, or if importlib.metadata
# would read a Triton distribution's version there.
_PACKAGE_MARKERS = ("triton/__init__.py", "triton.py")


@dataclass(frozen=True)
class Identity:
    """The Triton a process imported: its ``__file__`` and ``__version__`` (None where the
    process never imported it: then ``file`` is what ``import triton`` would load, found by
    ``importlib.util.find_spec``, and the version is that file's distribution's)."""

    file: str | None
    version: str | None
    imported: bool

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "version": self.version, "imported": self.imported}

    def portable(self) -> dict[str, Any]:
        """``to_json`` with the file relative to this Python's prefix where it is inside it
        (``lib/python3.11/site-packages/triton/__init__.py``): the same on every machine."""
        out = self.to_json()
        if self.file is not None:
            path, prefix = Path(self.file).resolve(), Path(sys.prefix).resolve()
            if path.is_relative_to(prefix):
                out["file"] = path.relative_to(prefix).as_posix()
        return out

    @classmethod
    def from_json(cls, d: Any) -> Identity:
        d = d if isinstance(d, dict) else {}
        file, version = d.get("file"), d.get("version")
        return cls(
            file if isinstance(file, str) else None,
            version if isinstance(version, str) else None,
            bool(d.get("imported")),
        )


def imported() -> Identity:
    """The Triton this process imported, or (not imported) the one it would import."""
    module = sys.modules.get("triton")
    if module is not None:
        version = getattr(module, "__version__", None)
        return Identity(getattr(module, "__file__", None), str(version) if version else None, True)
    try:
        spec = importlib.util.find_spec("triton")
    except (ImportError, ValueError):
        spec = None
    return Identity(spec.origin if spec is not None else None, None, False)


@dataclass(frozen=True)
class Distribution:
    """The installed Triton distribution a cell is labelled with (``importlib.metadata``)."""

    version: str
    root: Path  # the folder its ``triton`` package is in (site-packages, or a slim package's)

    def owns(self, file: str) -> bool:
        """Whether ``file`` (a module's ``__file__``) is this distribution's ``triton``."""
        return Path(file).resolve().is_relative_to((self.root / "triton").resolve())


def distribution() -> Distribution | None:
    """The Triton distribution ``importlib.metadata`` finds first on this process's path."""
    try:
        dist = importlib.metadata.distribution("triton")
    except importlib.metadata.PackageNotFoundError:
        return None
    return Distribution(dist.version, Path(str(dist.locate_file(""))))


def distribution_mismatch(dist: Distribution | None, release: Release | str) -> str | None:
    """Why the distribution ``importlib.metadata`` finds is not ``release``, or None."""
    release = Release.parse(release, "release")
    if dist is None:
        return f"no triton distribution is installed (expected {release})"
    if not names_release(dist.version, release):
        return (
            f"the triton distribution found first is {dist.version} in {dist.root}, not {release}"
        )
    return None


def mismatch(
    identity: Identity, release: Release | str, dist: Distribution | None = None
) -> str | None:
    """Why ``identity`` is not ``release`` (of ``dist``, where given), or None.

    The version must name the release; where ``dist`` is given, it must be ``release`` too,
    and the file that distribution's own ``triton`` package (another copy reporting the same
    version is still another package: a development build says the last release)."""
    release = Release.parse(release, "release")
    if dist is not None and (wrong := distribution_mismatch(dist, release)):
        return wrong
    if identity.version is not None and not names_release(identity.version, release):
        return f"imported triton {identity.version} from {identity.file}, not {release}" + (
            f" (the environment's triton {dist.version} is in {dist.root})" if dist else ""
        )
    if dist is not None:
        if identity.file is None:
            return f"no triton can be imported (the environment's {dist.version} is in {dist.root})"
        if not dist.owns(identity.file):
            seen = f"triton {identity.version}" if identity.version else "a triton"
            verb = "imported" if identity.imported else "would import"
            return (
                f"{verb} {seen} from {identity.file}, not the environment's triton "
                f"{dist.version} in {dist.root}"
            )
    return None


def shadowing(entries: Iterable[str]) -> list[str]:
    """The entries of a ``PYTHONPATH`` that hold a Triton (a package or a distribution's
    metadata), which would come before a cell environment's own."""
    found = []
    for entry in entries:
        if not entry:
            continue
        folder = Path(entry)
        try:
            holds = any((folder / m).exists() for m in _PACKAGE_MARKERS) or any(
                folder.glob("triton-*.dist-info")
            )
        except OSError:
            holds = False
        if holds:
            found.append(entry)
    return found


def without_shadowing(env: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """``env`` with the ``PYTHONPATH`` entries that hold a Triton left out, and those entries."""
    parts = env.get("PYTHONPATH", "").split(os.pathsep)
    dropped = shadowing(parts)
    if not dropped:
        return env, []
    kept = [p for p in parts if p and p not in dropped]
    out = dict(env)
    if kept:
        out["PYTHONPATH"] = os.pathsep.join(kept)
    else:
        out.pop("PYTHONPATH", None)
    return out, dropped
