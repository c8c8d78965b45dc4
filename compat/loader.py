"""The tile-loader choice: ``"pointer"`` (pointer arithmetic with masks) or ``"descriptor"``.

Descriptors are chosen only when the installed release has an in-kernel constructor and a trial
load with zero padding gave exact numbers (``features.descriptor_trial``). ``COMPAT_LOADER``
overrides the choice; forcing ``descriptor`` where it cannot work is an error at import, not a
silent fallback, so a forced test run never tests the wrong loader.
"""

from __future__ import annotations

from dataclasses import dataclass

from compat.features import Features

LOADERS = ("pointer", "descriptor")


class LoaderError(ValueError):
    """``COMPAT_LOADER`` names an unknown loader, or one this Triton cannot run."""


@dataclass(frozen=True)
class LoaderChoice:
    """The loader the kernels use (one of ``LOADERS``) and why, in words, for the report."""

    name: str
    reason: str


def choose_loader(features: Features, override: str | None = None) -> LoaderChoice:
    """Pick the loader from what was detected; ``override`` is ``COMPAT_LOADER``'s value."""
    if override is not None:
        if override not in LOADERS:
            raise LoaderError(f"COMPAT_LOADER={override!r}: expected one of {', '.join(LOADERS)}")
        if override == "descriptor" and features.descriptor_constructor is None:
            raise LoaderError(
                "COMPAT_LOADER='descriptor': this Triton has no in-kernel tensor-descriptor "
                "constructor (neither tl.make_tensor_descriptor nor "
                "tl._experimental_make_tensor_descriptor)"
            )
        return LoaderChoice(override, f"forced by COMPAT_LOADER={override}")
    if features.descriptor_constructor is None:
        return LoaderChoice("pointer", "no in-kernel tensor-descriptor constructor")
    if features.descriptor_trial != "ok":
        return LoaderChoice(
            "pointer",
            f"{features.descriptor_constructor} exists but its trial load did not pass "
            f"({features.descriptor_trial})",
        )
    return LoaderChoice(
        "descriptor",
        f"{features.descriptor_constructor} ({features.tensor_descriptor}) passed a zero-padded "
        "trial load",
    )
