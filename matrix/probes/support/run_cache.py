"""What the cells of one matrix run may share: a folder the orchestrator makes for the run
(``MATRIX_RUN_CACHE``) and removes when the run ends, so nothing outlives it: a ``--force``
run, the next run and a single probe run outside the matrix (no variable) compute afresh.

Only a result that is a function of the installed Triton wheel and our own sources alone
belongs here, never one of numpy (each cell has its own) or of the process that made it. The
fingerprint's values semantics are one: the TTIR a release compiles the values cases to for
``cuda:90`` is the same in the three numpy cells of a release and its aot cell (Triton's
compiler does not import numpy), and compiling it was 90% of the values part (3.1 s of 3.4 s,
measured on 3.6.0) in each of the 40 cells.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from pathlib import Path
from typing import Any

ENV = "MATRIX_RUN_CACHE"
SOURCES = Path(__file__).resolve().parent.parent  # matrix/probes: the probes and their support


def folder() -> Path | None:
    value = os.environ.get(ENV)
    return Path(value) if value and Path(value).is_dir() else None


def sources_digest() -> str:
    """Every probe module's and support module's bytes: a cached result is our code's too."""
    h = hashlib.sha256()
    for path in sorted(SOURCES.rglob("*.py")):
        h.update(path.relative_to(SOURCES).as_posix().encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def triton_identity() -> str:
    """The installed Triton by version and the size of its compiled library (the same wheel in
    every cell of a release: uv links one unpacked copy)."""
    from importlib import metadata

    import triton

    lib = Path(triton.__file__).parent / "_C" / "libtriton.so"
    size = lib.stat().st_size if lib.is_file() else -1
    return f"{metadata.version('triton')} libtriton {size}"


def key(*parts: Any) -> str:
    return hashlib.sha256(pickle.dumps(parts, protocol=4)).hexdigest()


def load(kind: str, digest: str) -> Any | None:
    """The value stored under ``kind``/``digest`` in this run, or None (no run cache, no entry,
    or an entry that does not read back: then it is computed again)."""
    base = folder()
    if base is None:
        return None
    try:
        return pickle.loads((base / kind / f"{digest}.pickle").read_bytes())
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
        return None


def store(kind: str, digest: str, value: Any) -> bool:
    """Keep ``value`` for the run's later cells; False when there is no run cache. Written to a
    temporary name and renamed, so a cell running beside this one never reads half of it."""
    base = folder()
    if base is None:
        return False
    target = base / kind
    target.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target, prefix=".", suffix=".tmp")
    with os.fdopen(fd, "wb") as f:
        pickle.dump(value, f, protocol=4)
    os.replace(tmp, target / f"{digest}.pickle")
    return True
