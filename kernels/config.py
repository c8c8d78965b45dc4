"""Tile shapes and the split-K heuristic, as data.

The interpreter runs each program as Python, so small tiles and few programs keep it fast; a GPU
wants tiles that feed its matrix units. Per-shape GPU tuning lives in the benchmark, not here.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TileConfig:
    block_m: int
    block_n: int
    block_k: int
    num_warps: int = 4
    num_stages: int = 3

    def __str__(self) -> str:
        return (
            f"BM{self.block_m}-BN{self.block_n}-BK{self.block_k}"
            f"-w{self.num_warps}-s{self.num_stages}"
        )


# Keyed by (device type, element size in bytes).
TILE_CONFIGS: dict[tuple[str, int], TileConfig] = {
    # The interpreter pays ~20 ms of Python per program, so fewer, larger tiles run faster.
    ("cpu", 2): TileConfig(64, 64, 32),
    ("cpu", 4): TileConfig(64, 64, 32),
    ("cuda", 2): TileConfig(64, 64, 64, num_warps=4, num_stages=4),
    ("cuda", 4): TileConfig(64, 64, 32, num_warps=4, num_stages=3),
}

# How many programs a split-K launch aims for: a GPU wants every SM busy (two programs per SM);
# the interpreter runs programs one after another, so more programs only cost time there.
PROGRAMS_PER_SM = 2
CPU_TARGET_PROGRAMS = 4
# A split should still have this many K tiles of work, or its fixed costs dominate.
MIN_K_TILES_PER_SPLIT = 2
MAX_SPLIT_K = 64


# Ordered (deterministic) mode past this many splits sums in two levels: groups of this many
# splits, then the group sums (kernels.fused reads the same constant). One program reading every
# slice was bounded by one SM's L2 bandwidth (det/atomic up to 1.9 on an H200 at S33-S64).
ORDERED_GROUP = 8


def ordered_group(split_k: int) -> int:
    """Splits per group of ordered mode's two-level sum; ``split_k`` itself means one level.

    >>> ordered_group(4), ordered_group(8), ordered_group(33)
    (4, 8, 8)
    """
    return split_k if split_k <= ORDERED_GROUP else ORDERED_GROUP


def tile_config(device_type: str, element_size: int) -> TileConfig:
    try:
        return TILE_CONFIGS[(device_type, element_size)]
    except KeyError:
        raise ValueError(
            f"no tile configuration for device {device_type!r} and {element_size}-byte elements; "
            f"known: {sorted(TILE_CONFIGS)}"
        ) from None


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def choose_split_k(m: int, n: int, k: int, cfg: TileConfig, target_programs: int) -> int:
    """Few output tiles and a long K get more splits; many tiles or a short K get one.

    >>> cfg = TileConfig(64, 64, 64)
    >>> choose_split_k(64, 64, 32768, cfg, target_programs=264)
    64
    >>> choose_split_k(4096, 4096, 4096, cfg, target_programs=264)
    1
    """
    tiles = cdiv(m, cfg.block_m) * cdiv(n, cfg.block_n)
    k_tiles = cdiv(k, cfg.block_k)
    if tiles >= target_programs:
        return 1
    wanted = cdiv(target_programs, tiles)
    most = max(1, k_tiles // MIN_K_TILES_PER_SPLIT)
    return max(1, min(wanted, most, MAX_SPLIT_K))
