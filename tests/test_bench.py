"""The benchmark's pure parts (suite, summary against the goals, candidates) and the GPU plan's
table lookup; no GPU needed."""

import pytest

from kernels import bench

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from kernels import gpu_plan  # noqa: E402
from kernels.config import TileConfig  # noqa: E402


def test_suite_covers_the_issue():
    cases = bench.suite()
    shapes = {(c.m, c.n, c.k) for c in cases}
    assert len(shapes) == 11 and (16, 4096, 14336) in shapes and (256, 256, 131072) in shapes
    assert {c.dtype for c in cases} == {"fp16", "bf16", "fp32-ieee", "fp32-tf32"}
    assert {c.layout for c in cases} == {"kn", "nk_t"}
    assert len(cases) == 11 * 4 * 2


def test_case_bytes_and_flops():
    c = bench.Case(16, 4096, 14336, "bf16", "nk_t")
    assert c.min_bytes == (16 * 14336 + 14336 * 4096 + 16 * 4096) * 2
    assert c.flops == 2 * 16 * 4096 * 14336
    assert bench.Case(8, 8, 8, "fp32-tf32", "kn").precision == "tf32"
    assert bench.Case(8, 8, 8, "fp16", "kn").precision == "ieee"


def _rec(m, n, k, dtype, impl, us, layout="kn"):
    return {"m": m, "n": n, "k": k, "dtype": dtype, "layout": layout, "impl": impl, "us": us,
            "min_bytes": bench.Case(m, n, k, dtype, layout).min_bytes}  # fmt: skip


def test_summary_geomean_worst_and_goals():
    recs = [
        _rec(64, 64, 8192, "fp16", "cublas", 10.0), _rec(64, 64, 8192, "fp16", "splitk", 5.0),
        _rec(64, 64, 8192, "fp16", "splitk_deterministic", 6.0),
        _rec(128, 128, 8192, "fp16", "cublas", 10.0), _rec(128, 128, 8192, "fp16", "splitk", 20.0),
    ]  # fmt: skip
    s = bench.summarize(recs, copy_gbps=4000.0)["fp16"]
    assert s["splitk_over_cublas_geomean"] == pytest.approx(1.0)  # sqrt(2 * 0.5)
    assert s["worst"] == 0.5 and s["worst_case"] == "128x128x8192 kn"
    assert s["det_over_atomic_max"] == pytest.approx(1.2)
    assert s["goals_met"] == {"geomean>=1.2": False, "worst>=0.9": False,
                              "bandwidth>=85%": False, "det/atomic<=1.15": False}  # fmt: skip


def test_summary_bandwidth_share_at_the_skinny_shape():
    c = bench.Case(16, 4096, 14336, "bf16", "kn")
    us = c.min_bytes / (0.9 * 4000e9) * 1e6  # 90% of a 4000 GB/s copy
    recs = [_rec(16, 4096, 14336, "bf16", "cublas", us * 1.3),
            _rec(16, 4096, 14336, "bf16", "splitk", us)]  # fmt: skip
    s = bench.summarize(recs, copy_gbps=4000.0)["bf16"]
    assert s["bandwidth_pct_16x4096x14336"] == [pytest.approx(90.0)]
    assert s["goals_met"]["bandwidth>=85%"] and s["goals_met"]["geomean>=1.2"]


def test_candidates_use_wgmma_friendly_tiles_where_m_allows():
    for case in (
        bench.Case(256, 256, 32768, "fp16", "kn"),
        bench.Case(128, 128, 8192, "bf16", "kn"),
    ):
        tiles = bench.tiles_for(case)
        assert any(bm >= 64 and w in (4, 8) for bm, _, _, w, _ in tiles)
    skinny = bench.tiles_for(bench.Case(16, 4096, 4096, "fp16", "kn"))
    assert all(bm == 16 for bm, *_ in skinny)
    fp32 = bench.tiles_for(bench.Case(64, 64, 8192, "fp32-ieee", "kn"))
    fp16 = bench.tiles_for(bench.Case(64, 64, 8192, "fp16", "kn"))
    assert max(t[2] for t in fp32) == max(t[2] for t in fp16) // 2
    cands = bench.candidates(bench.Case(64, 64, 8192, "fp16", "kn"), ("pointer",))
    assert all(1 <= c.split_k <= 128 for c in cands) and any(c.split_k == 1 for c in cands)


TABLE = (
    {"device": "GPU X", "dtype": "fp16", "layout": "kn", "mode": "atomic", "m": 64, "n": 64,
     "k": 8192, "block_m": 32, "block_n": 32, "block_k": 128, "num_warps": 4, "num_stages": 4,
     "split_k": 33, "loader": "pointer"},
)  # fmt: skip


def test_table_exact_nearest_and_default():
    exact = gpu_plan.choose("GPU X", "fp16", "kn", "atomic", 64, 64, 8192, 264,
                            element_size=2, table=TABLE)  # fmt: skip
    assert (exact.tile, exact.split_k, exact.source) == (TileConfig(32, 32, 128, 4, 4), 33, "table")
    near = gpu_plan.choose("GPU X", "fp16", "kn", "atomic", 64, 64, 16384, 264,
                           element_size=2, table=TABLE)  # fmt: skip
    assert near.tile == TileConfig(32, 32, 128, 4, 4) and near.source.startswith("nearest")
    other = gpu_plan.choose("GPU Y", "fp16", "kn", "atomic", 64, 64, 8192, 264,
                            element_size=2, table=TABLE)  # fmt: skip
    assert other.source == "default" and other.loader == "pointer"
    assert gpu_plan.choose("GPU X", "fp16", "kn", "ordered", 64, 64, 8192, 264,
                           element_size=2, table=TABLE).source == "default"  # fmt: skip


def test_table_rejects_malformed_entries(tmp_path):
    bad = tmp_path / "t.toml"
    bad.write_text('[[entry]]\ndevice = "X"\ndtype = "fp16"\n', encoding="utf-8")
    with pytest.raises(ValueError, match="lacks"):
        gpu_plan.load_table(bad)


def test_committed_table_loads():
    """The committed table parses and names only known loaders and modes."""
    for e in gpu_plan.load_table(gpu_plan.TABLE_PATH):
        assert e["split_k"] >= 1 and e["block_m"] >= 16


def test_layout_and_dtype_keys():
    w = torch.randn(32, 64)
    assert gpu_plan.layout_key(w.t()) == "nk_t" and gpu_plan.layout_key(w) == "kn"
    assert gpu_plan.dtype_key(torch.float32, "tf32") == "fp32-tf32"
    assert gpu_plan.dtype_key(torch.bfloat16, "ieee") == "bf16"
