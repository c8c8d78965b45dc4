"""Where the aot compiles of our own kernels may be answered from Triton's own on-disk cache.

A forced matrix run compiled the same kernels with the same release, source and options as the
run before it: ``splitk`` and ``tiled`` were 27% of the committed cells' time (2026-12-03,
``python -m matrix.timings --probes``), and Triton already knows how to answer a compile it has
done. Its cache key covers the kernel's source and the jitted functions it calls, the
signature, the constexprs, the options, the target and Triton's own sources (``triton_key``).

It does not cover every environment variable that changes what is compiled in every release
(3.0-3.2 leave ``TRITON_F32_DEFAULT`` out: docs/findings.md), so each set of compile-related
variables (``RELEVANT``) gets a folder of its own, and a probe with ``env`` may not use the
cache at all (the catalog refuses it). Only probes whose answer is the artifact alone say
``compile_cache = true`` in a probe's ``probe.toml``; the fingerprint, the precision and
the warning probes always compile into a fresh folder.

The base folder lives in the cell's environment (``base_of``), so a fresh clone or a new
environment compiles everything; ``--fresh-compiles`` empties it first. A result says which of
its compiles came from the cache (``Artifacts.cached``), so a cached pass is never mistaken
for a compile this run did.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from collections.abc import Mapping
from pathlib import Path

# The folder a child is given (by the task, not the environment, so that a probe's own
# children do not inherit it).
FOLDER_NAME = "compile-cache"
# Names of environment variables that can change what a compile produces: Triton's own knobs,
# MLIR/LLVM debugging and pass options, the CUDA/ROCm tool paths.
RELEVANT = re.compile(r"TRITON|MLIR|LLVM|PTXAS|CUDA|NVIDIA|ROCM|HIP|AMD")
# Variables that match but name where things go, not what is compiled.
IGNORED = frozenset({"TRITON_CACHE_DIR", "TRITON_HOME", "TRITON_DUMP_DIR", "TRITON_OVERRIDE_DIR"})
# Kernel entries kept before the whole cache is emptied (a kernel edit adds new entries and
# nothing reads the old ones; one entry is 50-400 kB).
MAX_ENTRIES = 400


def base_of(prefix: str | Path) -> Path:
    """The cache folder of the cell environment at ``prefix`` (the runner's ``sys.prefix``)."""
    return Path(prefix) / FOLDER_NAME


def relevant_environment(environ: Mapping[str, str]) -> list[tuple[str, str]]:
    return sorted((k, v) for k, v in environ.items() if RELEVANT.search(k) and k not in IGNORED)


def folder_for(base: str | Path, environ: Mapping[str, str] | None = None) -> Path:
    """The folder under ``base`` for this process's compile-related environment."""
    variables = relevant_environment(os.environ if environ is None else environ)
    digest = hashlib.sha256(json.dumps(variables).encode()).hexdigest()[:16]
    return Path(base) / digest


def entries(folder: str | Path) -> set[str]:
    """The kernel entries in ``folder`` (Triton keeps one subfolder per compile key)."""
    try:
        return set(os.listdir(folder))
    except FileNotFoundError:
        return set()


def prune(base: str | Path, max_entries: int = MAX_ENTRIES) -> bool:
    """Empty ``base`` when it holds more than ``max_entries`` entries; True if it did."""
    base = Path(base)
    if not base.is_dir():
        return False
    count = sum(len(entries(sub)) for sub in base.iterdir() if sub.is_dir())
    if count <= max_entries:
        return False
    shutil.rmtree(base, ignore_errors=True)
    return True


def empty(base: str | Path) -> None:
    """``--fresh-compiles``: every cached compile is done again (and cached anew)."""
    shutil.rmtree(base, ignore_errors=True)
