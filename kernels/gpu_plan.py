"""Tiles, split and loader for the GPU split-K: a measured table per device, then a heuristic.

``kernels/data/splitk_tuned.toml`` holds the configuration that timed fastest for each shape of
the benchmark suite on a device (written by ``python -m kernels.bench --tune``; each entry keeps
the time it measured), and a ``[[device]]`` row per measured device with what decides its speed
(``kernels.devices``: capability, SM count, L2, shared memory). A device takes the entries of
the measured device with the same traits, else of the nearest measured device of its
architecture (the plan's source says whose); an architecture never measured takes none. A
shape in the table gets its entry; another shape borrows the tiles of the nearest tuned shape
(log-distance in M, N, K) and picks its own split; with no entries, a configuration searched on
first use (``kernels.plan_search``) or the default GPU tiles of ``kernels.config``. The table
is data: retuning a device rewrites the file, not this module. ``kernels/data/loader_rules.toml``
then overrides the loader for dtypes where the table's choice (swept on one release) is
pathological on others.
"""

from __future__ import annotations

import functools
import math
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path

import torch

from kernels.config import TileConfig, choose_split_k, ordered_group, tile_config
from kernels.devices import DeviceTraits, nearest_measured, traits_of_row

TABLE_PATH = Path(__file__).resolve().parent / "data" / "splitk_tuned.toml"
LOADER_RULES_PATH = TABLE_PATH.with_name("loader_rules.toml")
# Another table (e.g. one a tuning run just wrote) for this process.
TABLE_ENV = "KERNELS_SPLITK_TABLE"
LOADER_PREFS = ("pointer", "descriptor")
MODES = ("atomic", "ordered")
# The fused kernel's product forms (kernels.dot.product_acc); an entry without ``product``
# takes the first, the plain tl.dot.
PRODUCTS = ("dot", "swap", "fma3d", "nmajor")
# The workspace of ordered mode is addressed with 32-bit offsets in the kernel.
MAX_WS_ELEMS = 2**31 - 1


@dataclass(frozen=True)
class GpuChoice:
    """One GPU split-K configuration and where it came from (``source``: table/nearest/default)."""

    tile: TileConfig
    split_k: int
    loader: str  # preferred loader: "pointer", or "descriptor" where the inputs allow it
    source: str
    product: str = PRODUCTS[0]

    def __str__(self) -> str:
        form = "" if self.product == PRODUCTS[0] else f"-{self.product}"
        return f"{self.tile}-S{self.split_k}-{self.loader}{form} ({self.source})"

    @property
    def tuned(self) -> bool:
        """A configuration timed for this very shape (on this device or one it stands for)."""
        return self.source.startswith(TUNED_SOURCES)


# Sources of a configuration timed for the very shape: the table (this device's entries or a
# measured device's of the same architecture) or a first-use search on this device.
TUNED_SOURCES = ("table", "searched")


def dtype_key(dtype: torch.dtype, precision: str) -> str:
    """The table's dtype column: ``fp16``, ``bf16``, ``fp32-ieee``, ``fp32-tf32``, ..."""
    names = {torch.float16: "fp16", torch.bfloat16: "bf16", torch.float32: "fp32"}
    name = names[dtype]
    return f"{name}-{precision}" if dtype == torch.float32 else name


def layout_key(b: torch.Tensor) -> str:
    """``nk_t`` for the transposed (N, K) weight a linear layer passes, else ``kn``."""
    return "nk_t" if b.stride(0) == 1 and b.stride(1) != 1 and b.shape[1] > 1 else "kn"


def table_path() -> Path:
    return Path(os.environ.get(TABLE_ENV) or TABLE_PATH)


@functools.cache
def load_devices(path: Path | None = None) -> dict[str, DeviceTraits]:
    """The table's ``[[device]]`` rows by name (a note: entries name their device by it)."""
    path = path or table_path()
    if not path.exists():
        return {}
    with path.open("rb") as f:
        rows = tomllib.load(f).get("device", [])
    devices = [traits_of_row(r, f"{path}: device {i}") for i, r in enumerate(rows)]
    return {d.name: d for d in devices}


def table_device(
    device: DeviceTraits | str, devices: dict[str, DeviceTraits]
) -> tuple[str | None, str]:
    """Whose entries ``device`` takes, and a note when they are another device's.

    A plain name (tests, old callers) takes its own entries. Traits take the entries of the
    measured device with the same hardware, else of the nearest one of the same architecture.
    """
    if isinstance(device, str):
        return device, ""
    measured = nearest_measured(device, devices.values())
    if measured is None:
        return None, f"no measured {device.arch} device"
    if device.same_hardware(measured):
        return measured.name, ""
    return measured.name, f"{measured.name}'s, the nearest measured {device.arch} device"


@functools.cache
def load_table(path: Path | None = None) -> tuple[dict, ...]:
    """The tuned entries (empty when the file does not exist); malformed entries raise."""
    path = path or table_path()
    if not path.exists():
        return ()
    with path.open("rb") as f:
        doc = tomllib.load(f)
    entries = doc.get("entry", [])
    need = ("device", "dtype", "layout", "mode", "m", "n", "k", "block_m", "block_n",
            "block_k", "num_warps", "num_stages", "split_k", "loader")  # fmt: skip
    for i, e in enumerate(entries):
        missing = [k for k in need if k not in e]
        if missing:
            raise ValueError(f"{path}: entry {i} lacks {missing}")
        if e["loader"] not in LOADER_PREFS or e["mode"] not in MODES:
            raise ValueError(
                f"{path}: entry {i}: loader {e['loader']!r} / mode {e['mode']!r}; expected "
                f"one of {LOADER_PREFS} / {MODES}"
            )
        if e.get("product", PRODUCTS[0]) not in PRODUCTS:
            raise ValueError(
                f"{path}: entry {i}: product {e['product']!r}; expected one of {PRODUCTS}"
            )
    return tuple(entries)


def _tile_of(e: dict) -> TileConfig:
    return TileConfig(e["block_m"], e["block_n"], e["block_k"], e["num_warps"], e["num_stages"])


def _product_of(e: dict) -> str:
    return str(e.get("product", PRODUCTS[0]))


def _distance(e: dict, m: int, n: int, k: int) -> float:
    """Log-distance, M weighted most: a tile's rows must fit M (16-row tiles for M = 16)."""
    return sum(w * abs(math.log2(max(x, 1)) - math.log2(max(e[f], 1))) for f, x, w in
               (("m", m, 4), ("n", n, 1), ("k", k, 1)))  # fmt: skip


@functools.cache
def load_loader_rules(path: Path = LOADER_RULES_PATH) -> dict[str, str]:
    """``{dtype key: loader}`` from the rules file; a rule without a reason is refused."""
    with path.open("rb") as f:
        rules = tomllib.load(f).get("rule", [])
    out: dict[str, str] = {}
    for i, r in enumerate(rules):
        if r.get("loader") not in LOADER_PREFS or not r.get("dtype") or not r.get("why"):
            raise ValueError(
                f"{path}: rule {i}: needs dtype, a loader in {LOADER_PREFS} and why; got {r!r}"
            )
        out[r["dtype"]] = r["loader"]
    return out


def choose(
    device: DeviceTraits | str, dkey: str, layout: str, mode: str, m: int, n: int, k: int,
    programs: int, *, element_size: int, table: tuple[dict, ...] | None = None,
    devices: dict[str, DeviceTraits] | None = None,
) -> GpuChoice:  # fmt: skip
    """The configuration for one call (see the module docstring for the order of lookups)."""
    owner, lent = table_device(device, load_devices() if devices is None else devices)
    whose = f" ({lent})" if lent else ""
    entries = [
        e for e in (load_table() if table is None else table)
        if e["device"] == owner and e["dtype"] == dkey and e["layout"] == layout
        and e["mode"] == mode
    ]  # fmt: skip
    ruled = load_loader_rules().get(dkey)
    for e in entries:
        if (e["m"], e["n"], e["k"]) == (m, n, k):
            return GpuChoice(_tile_of(e), e["split_k"], ruled or e["loader"], "table" + whose,
                             _product_of(e))  # fmt: skip
    product = PRODUCTS[0]
    if entries:
        near = min(entries, key=lambda e: _distance(e, m, n, k))
        tile, product = _tile_of(near), _product_of(near)  # the tile was tuned with its form
        source = f"nearest tuned {near['m']}x{near['n']}x{near['k']}{whose}"
        loader = ruled or near["loader"]
    else:
        tile = tile_config("cuda", element_size)
        source, loader = f"default ({lent})" if lent else "default", "pointer"
    split = choose_split_k(m, n, k, tile, programs)
    return GpuChoice(tile, split, loader, source, product)


def fits_workspace(split: int, m: int, n: int) -> bool:
    """Whether ordered mode's ``split`` slices of (M, N), and the group sums of its two-level
    sum (``kernels.config.ordered_group``), stay within 32-bit offsets."""
    groups = -(-split // ordered_group(split))
    return (split + (groups if groups > 1 else 0)) * m * n <= MAX_WS_ELEMS
