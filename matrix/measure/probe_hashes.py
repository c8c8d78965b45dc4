"""A hash per probe, kept in each raw file: what ``matrix.measure.incremental`` compares.

Name -> 16 hex digits of the probe module's source and its catalog row, under the run's
``probe_hashes`` key. The runner records them (hashed before the probes run: the source that
was measured); a probe whose results a cell kept keeps its earlier hash, or none where the
earlier run recorded none (measured before hashes were kept).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict
from pathlib import Path

from matrix.catalog import ProbeSpec
from matrix.measure.results import Run

# The raw file's key for the per-probe hashes (a top-level field of the run, like "complete").
HASHES_KEY = "probe_hashes"


def probe_source(package: str, name: str) -> Path:
    """The file of the probe module ``package.name`` (found, not imported: no Triton here)."""
    spec = importlib.util.find_spec(f"{package}.{name}")
    if spec is None or spec.origin is None:
        raise LookupError(f"probe {name!r}: no module {package}.{name} to hash")
    return Path(spec.origin)


def probe_hash(spec: ProbeSpec, package: str) -> str:
    """16 hex digits of what decides the probe's results: its module's source and its row."""
    digest = hashlib.sha256(probe_source(package, spec.name).read_bytes())
    digest.update(json.dumps(asdict(spec), sort_keys=True, default=str).encode("utf-8"))
    return digest.hexdigest()[:16]


def catalog_hashes(specs: Iterable[ProbeSpec], package: str) -> dict[str, str]:
    return {spec.name: probe_hash(spec, package) for spec in specs}


def recorded_hashes(run: Run) -> dict[str, str]:
    value = run.extra.get(HASHES_KEY)
    return dict(value) if isinstance(value, dict) else {}


def hashes_after(
    previous: Mapping[str, str], measured: Mapping[str, str], kept: Iterable[str]
) -> dict[str, str]:
    """The hashes a cell records: those of the probes measured now, and the earlier ones of
    the probes whose results it kept (absent where the earlier run recorded none)."""
    out = {name: previous[name] for name in kept if name in previous}
    out.update(measured)
    return out
