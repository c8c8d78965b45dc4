"""A bounded search, on first use, for a device whose architecture the tuned table never
measured: time a few of the table's own configurations for the nearest tuned shapes of this
call's class (dtype, layout, mode), keep the fastest, and cache it on disk per device.

Like Triton's autotune cache, the answer is kept across processes (a JSON file per device under
``KERNELS_SPLITK_CACHE``, default ``~/.cache/triton-compat/splitk``), so a shape is timed once
per device. ``KERNELS_SPLITK_SEARCH=0`` turns the search off (the default tiles of
``kernels.config`` then apply). It never runs during a CUDA-graph capture: timing launches
would be captured into the user's graph.

>>> rows = [{"device": "X", "dtype": "fp16", "layout": "kn", "mode": "atomic", "m": 64,
...          "n": 64, "k": 8192, "block_m": 32, "block_n": 32, "block_k": 128,
...          "num_warps": 4, "num_stages": 4, "split_k": 33, "loader": "pointer"}]
>>> [str(c) for c in candidates(rows, "fp16", "kn", "atomic", 64, 64, 4096)]
['BM32-BN32-BK128-w4-s4-S33-pointer']
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from kernels.config import TileConfig
from kernels.devices import DeviceTraits

SEARCH_ENV = "KERNELS_SPLITK_SEARCH"
CACHE_ENV = "KERNELS_SPLITK_CACHE"
DEFAULT_CACHE = Path.home() / ".cache" / "triton-compat" / "splitk"
# At most this many configurations are timed for one shape: a first call costs their compiles
# (about 1-2 s each) and a few milliseconds of timing each.
MAX_CANDIDATES = 6


@dataclass(frozen=True)
class Candidate:
    """One configuration of the table, as the search (and ``kernels.bench``'s sweep) times it."""

    block_m: int
    block_n: int
    block_k: int
    num_warps: int
    num_stages: int
    split_k: int
    loader: str
    product: str = "dot"

    def tile(self) -> TileConfig:
        return TileConfig(self.block_m, self.block_n, self.block_k, self.num_warps,
                          self.num_stages)  # fmt: skip

    def __str__(self) -> str:
        form = "" if self.product == "dot" else f"-{self.product}"
        return f"{self.tile()}-S{self.split_k}-{self.loader}{form}"


def enabled() -> bool:
    """Off with ``KERNELS_SPLITK_SEARCH=0``; any other value than 0/1/unset is refused."""
    value = os.environ.get(SEARCH_ENV, "").strip()
    if value not in ("", "0", "1"):
        raise ValueError(f"{SEARCH_ENV}={value!r}: expected 0 or 1")
    return value != "0"


def candidates(
    table: Iterable[dict], dkey: str, layout: str, mode: str, m: int, n: int, k: int
) -> list[Candidate]:
    """The distinct configurations of any device's entries for this class, nearest shape
    first (log-distance, M weighted most as in ``kernels.gpu_plan``), at most MAX_CANDIDATES."""

    def distance(e: dict) -> float:
        return sum(w * abs(math.log2(max(x, 1)) - math.log2(max(e[f], 1))) for f, x, w in
                   (("m", m, 4), ("n", n, 1), ("k", k, 1)))  # fmt: skip

    rows = sorted((e for e in table if (e["dtype"], e["layout"], e["mode"]) == (dkey, layout,
                   mode)), key=distance)  # fmt: skip
    out: list[Candidate] = []
    for e in rows:
        c = Candidate(
            e["block_m"], e["block_n"], e["block_k"], e["num_warps"], e["num_stages"],
            e["split_k"], e["loader"], e.get("product", "dot"),
        )  # fmt: skip
        if c not in out:
            out.append(c)
        if len(out) == MAX_CANDIDATES:
            break
    return out


def cache_file(device: DeviceTraits) -> Path:
    """One file per device, named by its traits (two cards of one kind share it)."""
    root = Path(os.environ.get(CACHE_ENV) or DEFAULT_CACHE)
    slug = re.sub(r"[^A-Za-z0-9]+", "-", f"{device.arch}-{device.sms}sm-{device.l2_bytes}-"
                  f"{device.smem_per_block}-{device.name}").strip("-")  # fmt: skip
    return root / f"{slug}.json"


def _read(path: Path) -> dict[str, dict]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}  # no cache yet, or a damaged one: searched again and rewritten
    return doc if isinstance(doc, dict) else {}


def _write(path: Path, doc: dict[str, dict]) -> None:
    """Atomically (temp file + rename), so a crash or a second process never leaves half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".tmp", delete=False,
                                     encoding="utf-8") as f:  # fmt: skip
        json.dump(doc, f, indent=1, sort_keys=True)
    os.replace(f.name, path)


def search(
    device: DeviceTraits,
    key: str,
    options: list[Candidate],
    time_us: Callable[[Candidate], float],
    *,
    capturing: bool,
) -> tuple[Candidate, str] | None:
    """The fastest of ``options`` for the call ``key`` on ``device``, from the cache or timed
    now with ``time_us``; None when the search is off, capturing, or nothing ran.

    A candidate whose timing raises (it does not compile on this device, say) is skipped; the
    reason of each is kept in the cache entry.
    """
    if not options or capturing or not enabled():
        return None
    path = cache_file(device)
    doc = _read(path)
    hit = doc.get(key)
    if isinstance(hit, dict) and isinstance(hit.get("config"), dict):
        try:
            return Candidate(**hit["config"]), f"searched on first use, cached ({path.name})"
        except TypeError:
            pass  # an entry of another version of this module: search again
    timed: list[tuple[float, Candidate]] = []
    failed: dict[str, str] = {}
    for c in options:
        try:
            us = time_us(c)
        except Exception as e:  # a config this device cannot run is not the search's failure
            failed[str(c)] = f"{type(e).__name__}: {str(e)[:200]}"
            continue
        if math.isfinite(us):
            timed.append((us, c))
    if not timed:
        return None
    us, best = min(timed, key=lambda t: t[0])
    doc[key] = {"config": asdict(best), "us": round(us, 2), "timed": len(timed),
                "failed": failed, "device": device.describe()}  # fmt: skip
    _write(path, doc)
    return best, f"searched on first use: {best} at {us:.1f} us, fastest of {len(timed)}"
