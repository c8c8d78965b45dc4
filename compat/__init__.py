"""Runtime compatibility layer: probe the installed Triton once, at import, and pick a tile loader.

>>> import compat
>>> compat.LOADER in ("pointer", "descriptor")
True

``compat.TRITON_VERSION`` is informational: the choices below come from probing, because version
strings lie (development builds report the last release). It is a ``packaging`` Version made on
first use, so that importing ``compat`` (and ``kernels``) needs nothing beyond Triton.
"""

from __future__ import annotations

from typing import Any

import triton

from compat.features import Features, detect, environment_override
from compat.loader import LOADERS, LoaderChoice, LoaderError, choose_loader

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


def __getattr__(name: str) -> Any:
    if name == "TRITON_VERSION":  # packaging only for whoever asks for the Version
        from packaging.version import Version

        globals()[name] = version = Version(triton.__version__)
        return version
    raise AttributeError(f"module 'compat' has no attribute {name!r}")


def report() -> dict:
    """What ``python -m compat --json`` prints."""
    return {
        "triton": triton.__version__,
        "features": FEATURES.to_dict(),
        "loader": LOADER,
        "reason": LOADER_REASON,
    }
