"""Find an ``ld.lld`` for Triton releases whose HIP backend shells out to an external linker.

Triton 3.0-3.3 call ``HIPBackend.path_to_rocm_lld()`` both to link the HSACO and, earlier, to
put ``ld.lld --version`` into the backend's cache key, so a HIP compile fails before any code is
generated when no linker is found. Their own search looks at ``TRITON_HIP_LLD_PATH``, the wheel's
``backends/amd/llvm/bin/ld.lld``, ``/opt/rocm/llvm/bin/ld.lld`` and ``/usr/bin/ld.lld``, but not at
versioned installs such as Debian's ``lld-19`` (``/usr/lib/llvm-19/bin/ld.lld``). Later releases
link in-process (``amd.link_hsaco``) and need nothing here.

>>> path = find_lld()          # doctest: +SKIP
>>> str(path)                  # doctest: +SKIP
'/usr/lib/llvm-19/bin/ld.lld'
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterable
from pathlib import Path

LLD_ENV = "TRITON_HIP_LLD_PATH"

# Places after the environment variable and the wheel, in Triton's own order, then the versioned
# Debian/Ubuntu layout that Triton does not search.
_FIXED_CANDIDATES = ("/opt/rocm/llvm/bin/ld.lld", "/usr/bin/ld.lld")
_VERSIONED_GLOB = "/usr/lib/llvm-*/bin/ld.lld"


class LldNotFound(Exception):
    """No usable ``ld.lld``; the message lists every place that was searched."""


def _llvm_major(path: Path) -> int:
    match = re.search(r"llvm-(\d+)", str(path))
    return int(match.group(1)) if match else -1


def candidate_paths(triton_amd_dir: Path | None = None) -> list[tuple[str, Path]]:
    """Every place searched, in order, as (why, path); the first existing file wins."""
    found: list[tuple[str, Path]] = []
    env = os.environ.get(LLD_ENV)
    if env:
        found.append((f"${LLD_ENV}", Path(env)))
    if triton_amd_dir is not None:
        found.append(("shipped with triton", triton_amd_dir / "llvm" / "bin" / "ld.lld"))
    on_path = shutil.which("ld.lld")
    if on_path:
        found.append(("PATH", Path(on_path)))
    found.extend(("fixed location", Path(p)) for p in _FIXED_CANDIDATES)
    versioned = sorted(Path("/").glob(_VERSIONED_GLOB.lstrip("/")), key=_llvm_major, reverse=True)
    found.extend(("versioned llvm", p) for p in versioned)
    return found


def first_existing(candidates: Iterable[tuple[str, Path]]) -> Path:
    """The first candidate that is a file; LldNotFound naming all of them otherwise."""
    searched = []
    for why, path in candidates:
        if path.is_file():
            return path
        searched.append(f"{path} ({why})")
    raise LldNotFound(
        "no ld.lld found for the HIP backend; searched: "
        + ", ".join(searched)
        + f", {_VERSIONED_GLOB}. Install one (Debian: apt-get install -y lld-19) "
        + f"or set {LLD_ENV}."
    )


def find_lld(triton_amd_dir: Path | None = None) -> Path:
    """The ``ld.lld`` to hand to Triton's HIP backend (see the module docstring for the order)."""
    return first_existing(candidate_paths(triton_amd_dir))
