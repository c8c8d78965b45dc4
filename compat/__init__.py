"""Runtime compatibility layer: probe the installed Triton once, at import, and pick a tile loader.

>>> import compat
>>> compat.LOADER in ("pointer", "descriptor")
True

``compat.TRITON_VERSION`` is informational: the choices below come from probing, because version
strings lie (development builds report the last release).
"""

from __future__ import annotations

import triton
from packaging.version import Version

from compat.features import Features, detect, environment_override
from compat.loader import LOADERS, LoaderChoice, LoaderError, choose_loader

TRITON_VERSION: Version = Version(triton.__version__)
FEATURES: Features = detect()
_CHOICE: LoaderChoice = choose_loader(FEATURES, environment_override())
LOADER: str = _CHOICE.name
LOADER_REASON: str = _CHOICE.reason

__all__ = [
    "FEATURES",
    "LOADER",
    "LOADERS",
    "LOADER_REASON",
    "TRITON_VERSION",
    "Features",
    "LoaderError",
    "report",
]


def report() -> dict:
    """What ``python -m compat --json`` prints."""
    return {
        "triton": str(TRITON_VERSION),
        "features": FEATURES.to_dict(),
        "loader": LOADER,
        "reason": LOADER_REASON,
    }
