"""The benchmark's pure parts (suite, summary against the goals, candidates) and the GPU plan's
table lookup; no GPU needed."""

import pytest

from kernels.bench import cli, output, sweep
from kernels.bench import suite as bench

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
    s = output.summarize(recs, copy_gbps=4000.0, key="us")["fp16"]
    assert s["splitk_over_cublas_geomean"] == pytest.approx(1.0)  # sqrt(2 * 0.5)
    assert s["worst"] == 0.5 and s["worst_case"] == "128x128x8192 kn"
    assert s["det_over_atomic_max"] == pytest.approx(1.2)
    assert s["goals_met"] == {"geomean>=1.2": False, "worst>=0.9": False,
                              "bandwidth>=85%": False, "det/atomic<=1.15": False}  # fmt: skip
    assert s["short_by"] == {"geomean>=1.2": 1.2, "worst>=0.9": 1.8, "bandwidth>=85%": None,
                             "det/atomic<=1.15": pytest.approx(1.2 / 1.15, abs=1e-3)}  # fmt: skip
    eager = output.summarize(recs, copy_gbps=4000.0, key="us", geomean_goal=1.0)["fp16"]
    assert eager["goals_met"]["geomean>=1.0"] and "geomean>=1.0" not in eager["short_by"]


def test_summary_bandwidth_share_at_the_skinny_shape():
    c = bench.Case(16, 4096, 14336, "bf16", "kn")
    us = c.min_bytes / (0.9 * 4000e9) * 1e6  # 90% of a 4000 GB/s copy
    recs = [_rec(16, 4096, 14336, "bf16", "cublas", us * 1.3),
            _rec(16, 4096, 14336, "bf16", "splitk", us)]  # fmt: skip
    s = output.summarize(recs, copy_gbps=4000.0, key="us")["bf16"]
    assert s["bandwidth_pct_16x4096x14336"] == [pytest.approx(90.0)]
    assert s["goals_met"]["bandwidth>=85%"] and s["goals_met"]["geomean>=1.2"]


def test_benchmark_is_declarative_and_every_line_is_registered():
    assert len(bench.Benchmark(bench.QUICK).cases) == 3 * 4 * 2
    from kernels.bench import impls

    assert set(cli.DEFAULT_IMPLS) <= set(impls.IMPLS)
    assert {impls.BASELINE, impls.ATOMIC, impls.DETERMINISTIC} <= set(impls.IMPLS)
    with pytest.raises(KeyError, match="expected one of"):
        impls.impl_fn(bench.Case(8, 8, 8, "fp16", "kn"), "cutlass")


def test_host_summary_against_the_goal():
    recs = [{"impl": "splitk", "host_us": x} for x in (18.0, 30.0, 25.0)]
    recs += [{"impl": "cublas", "host_us": 17.0}, {"impl": "tiled"}]
    h = output.host_summary(recs)
    assert h["splitk"] == {"median_us": 25.0, "max_us": 30.0, "records": 3}
    assert h["cublas"]["median_us"] == 17.0 and "tiled" not in h
    assert h["goal_met"] is False and h["short_by_us"] == 5.0


def test_full_sweep_filter():
    full = cli.full_sweep_filter("fp32-ieee:nk_t,fp32-tf32:*")
    assert full(bench.Case(16, 64, 64, "fp32-ieee", "nk_t"))
    assert full(bench.Case(16, 64, 64, "fp32-tf32", "kn"))
    assert not full(bench.Case(16, 64, 64, "fp32-ieee", "kn"))
    with pytest.raises(ValueError, match="dtype:layout"):
        cli.full_sweep_filter("fp16")
    shaped = cli.full_sweep_filter("fp16:*:256x256x*")
    assert shaped(bench.Case(256, 256, 8192, "fp16", "nk_t"))
    assert not shaped(bench.Case(128, 128, 8192, "fp16", "nk_t"))


ENTRY = {"device": "GPU X", "dtype": "fp16", "layout": "kn", "mode": "ordered", "m": 64,
         "n": 64, "k": 8192, "block_m": 32, "block_n": 32, "block_k": 128, "num_warps": 4,
         "num_stages": 4, "split_k": 16, "loader": "pointer", "us": 6.5}  # fmt: skip


def test_tune_matching_only_is_parsed_like_tune_full():
    """``--tune-matching-only`` takes the same dtype:layout[:MxNxK] globs as --tune-full."""
    only = cli.full_sweep_filter("fp32-tf32:kn,fp32-ieee:nk_t")
    cases = bench.suite()
    picked = [c for c in cases if only(c)]
    assert len(picked) == 22 and {(c.dtype, c.layout) for c in picked} == {
        ("fp32-tf32", "kn"), ("fp32-ieee", "nk_t")}  # fmt: skip


def test_sweep_plan_full_where_asked_or_missing_else_around_the_entry():
    tuned = bench.Case(64, 64, 8192, "fp16", "kn")
    missing = bench.Case(64, 64, 32768, "fp16", "kn")
    asked = bench.Case(64, 64, 8192, "fp32-tf32", "kn")
    plans = sweep.plan_sweep([tuned, missing, asked], lambda c: c.dtype == "fp32-tf32",
                             (ENTRY,), "GPU X", ("pointer", "descriptor"))  # fmt: skip
    assert [c for c, _ in plans] == [missing, asked, tuned]  # full sweeps first
    near = dict(plans)[tuned]
    assert {c.split_k for c in near} == {8, 16, 32} and {c.loader for c in near} == {
        "pointer", "descriptor"}  # fmt: skip
    assert {(c.block_m, c.block_n, c.block_k) for c in near} == {(32, 32, 128)}
    assert len(dict(plans)[missing]) > len(near)


def test_merge_keeps_untuned_entries_and_replaces_tuned_ones():
    other = {**ENTRY, "k": 32768}
    new = {**ENTRY, "split_k": 8, "us": 5.0}
    atomic = {**ENTRY, "mode": "atomic"}
    merged = sweep.merge_entries((ENTRY, other), [new, atomic])
    assert len(merged) == 3 and new in merged and other in merged and atomic in merged
    assert ENTRY not in merged


def test_sweep_plan_searches_around_both_modes_entries():
    """A case with an ordered and an atomic entry of other tiles is swept around both."""
    ordered = {**ENTRY, "block_m": 16, "block_n": 128, "block_k": 4, "split_k": 8}
    atomic = {**ENTRY, "mode": "atomic", "block_m": 16, "block_n": 64, "block_k": 8,
              "split_k": 9}  # fmt: skip
    case = bench.Case(64, 64, 8192, "fp16", "kn")
    ((_, cands),) = sweep.plan_sweep([case], lambda c: False, (ordered, atomic), "GPU X",
                                     ("pointer",))  # fmt: skip
    got = {(c.block_n, c.block_k, c.split_k) for c in cands}
    assert {(128, 4, 8), (64, 8, 9), (64, 8, 4), (64, 8, 18)} <= got


def test_candidates_use_wgmma_friendly_tiles_where_m_allows():
    for case in (
        bench.Case(256, 256, 32768, "fp16", "kn"),
        bench.Case(128, 128, 8192, "bf16", "kn"),
    ):
        tiles = sweep.tiles_for(case)
        assert any(bm >= 64 and w in (4, 8) for bm, _, _, w, _ in tiles)
    skinny = sweep.tiles_for(bench.Case(16, 4096, 4096, "fp16", "kn"))
    assert all(bm == 16 for bm, *_ in skinny)
    fp32 = sweep.tiles_for(bench.Case(64, 64, 8192, "fp32-ieee", "kn"))
    fp16 = sweep.tiles_for(bench.Case(64, 64, 8192, "fp16", "kn"))
    assert max(t[2] for t in fp32) == max(t[2] for t in fp16) // 2
    cands = sweep.candidates(bench.Case(64, 64, 8192, "fp16", "kn"), ("pointer",))
    assert all(2 <= c.split_k <= 128 for c in cands)  # 1 to 4 tiles: no split never wins
    # 16x32 tiles: 128 of them, so no split is a candidate, and one wave of 132 programs too.
    many = sweep.candidates(bench.Case(16, 4096, 4096, "fp16", "kn"), ("pointer",))
    assert any(c.split_k == 1 for c in many)
    assert any(c.block_n == 32 and c.split_k == 1 for c in many)
    wide = [c for c in many if c.block_n == 64]  # 64 tiles: splits 2 (128) and 3 (192)
    assert {2, 3} <= {c.split_k for c in wide} and 1 not in {c.split_k for c in wide}


def test_sweep_uses_the_ruled_loader_only():
    case = bench.Case(64, 64, 8192, "fp32-ieee", "nk_t")
    plans = sweep.plan_sweep([case], lambda c: True, (), "GPU X", ("pointer", "descriptor"))
    assert {c.loader for c in plans[0][1]} == {"pointer"}  # loader_rules.toml: fp32-ieee
    tf32 = bench.Case(64, 64, 8192, "fp32-tf32", "nk_t")
    plans = sweep.plan_sweep([tf32], lambda c: True, (), "GPU X", ("pointer", "descriptor"))
    assert {c.loader for c in plans[0][1]} == {"pointer", "descriptor"}


def test_ordered_candidates_add_smaller_splits():
    top = [sweep.Candidate(64, 64, 64, 4, 4, s, "pointer") for s in (32, 16, 8)]
    got = {c.split_k for c in sweep.ordered_candidates(top)}
    assert got == {32, 16, 8, 4}  # halves of each, a quarter of the fastest


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


def test_table_product_column_selects_the_form_default_dot(tmp_path):
    """An entry's ``product`` (kernels.dot.product_acc) reaches the plan; none means tl.dot;
    an unknown form is refused when the table loads."""
    assert gpu_plan.choose("GPU X", "fp16", "kn", "atomic", 64, 64, 8192, 264,
                           element_size=2, table=TABLE).product == "dot"  # fmt: skip
    swap = tuple({**e, "product": "swap"} for e in TABLE)
    got = gpu_plan.choose("GPU X", "fp16", "kn", "atomic", 64, 64, 8192, 264,
                          element_size=2, table=swap)  # fmt: skip
    assert got.product == "swap" and "-swap" in str(got)
    bad = tmp_path / "t.toml"
    lines = [f"{k} = {v!r}".replace("'", '"') for k, v in {**TABLE[0], "product": "x"}.items()]
    bad.write_text("[[entry]]\n" + "\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="product"):
        gpu_plan.load_table(bad)


def test_product_forms_are_swept_where_the_data_names_them():
    """tf32 kn adds the swap on tiles_for's tiles; fp32-ieee nk_t adds fma3d and nmajor on their
    own tiles; other cases sweep the plain dot only. An entry's neighbourhood keeps its form and
    adds the forms it was not tuned with."""
    tf32 = bench.Case(256, 256, 32768, "fp32-tf32", "kn")
    forms = {c.product for c in sweep.candidates(tf32, ("pointer",))}
    assert forms == {"dot", "swap"}
    ieee = bench.Case(16, 4096, 14336, "fp32-ieee", "nk_t")
    forms = {c.product for c in sweep.candidates(ieee, ("pointer",))}
    assert forms == {"dot", "fma3d", "nmajor"}
    fma = [c for c in sweep.candidates(ieee, ("pointer",)) if c.product == "fma3d"]
    assert fma and max(c.block_k for c in fma) <= 16
    # nmajor on its own tiles (kernels.bench.sweep.FORM_TILES), not tiles_for's.
    nmajor = {c.tile() for c in sweep.candidates(ieee, ("pointer",)) if c.product == "nmajor"}
    assert nmajor and {(t.block_m, t.block_n, t.block_k, t.num_warps, t.num_stages)
                       for t in nmajor} == set(sweep.form_tiles(ieee, "nmajor"))  # fmt: skip
    assert {c.product for c in sweep.candidates(bench.Case(64, 64, 8192, "fp16", "kn"),
                                                ("pointer",))} == {"dot"}  # fmt: skip
    entry = {**ENTRY, "dtype": "fp32-tf32", "product": "dot"}
    case = bench.Case(64, 64, 8192, "fp32-tf32", "kn")
    ((_, cands),) = sweep.plan_sweep([case], lambda c: False, (entry,), "GPU X", ("pointer",))
    assert {c.product for c in cands} == {"dot", "swap"}
    # --tune-forms: of the untried forms only those named; the entry's neighbours stay.
    ieee_entry = {**ENTRY, "dtype": "fp32-ieee", "layout": "nk_t", "product": "fma3d"}
    ieee_case = bench.Case(64, 64, 8192, "fp32-ieee", "nk_t")
    ((_, only),) = sweep.plan_sweep([ieee_case], lambda c: False, (ieee_entry,), "GPU X",
                                    ("pointer",), forms=("nmajor",))  # fmt: skip
    assert {c.product for c in only} == {"fma3d", "nmajor"}
    assert {c.split_k for c in only if c.product == "fma3d"} == {8, 16, 32}
    assert {c.split_k for c in cands if c.product == "dot"} == {8, 16, 32}
    assert all("product" in sweep.table_entry("GPU X", case, False, {
        **{f: getattr(c, f) for f in sweep.Candidate.__dataclass_fields__}, "us": 1.0})
        for c in cands[:1])  # fmt: skip


def test_loader_rule_overrides_the_tables_descriptor_for_fp32_ieee():
    """fp32-ieee takes pointers whatever the table (swept on 3.6.0) says: on 3.7.1+ its
    descriptor tile spills (kernels/data/loader_rules.toml); other dtypes keep the table's."""
    desc = tuple({**e, "loader": "descriptor"} for e in TABLE)
    ieee = tuple({**e, "dtype": "fp32-ieee"} for e in desc)
    for m in (64, 128):  # the exact entry and the nearest one
        got = gpu_plan.choose("GPU X", "fp32-ieee", "kn", "atomic", m, 64, 8192, 264,
                              element_size=4, table=ieee)  # fmt: skip
        assert got.loader == "pointer"
    fp16 = gpu_plan.choose("GPU X", "fp16", "kn", "atomic", 64, 64, 8192, 264,
                           element_size=2, table=desc)  # fmt: skip
    assert fp16.loader == "descriptor"


def test_loader_rules_refuse_a_rule_without_a_reason(tmp_path):
    bad = tmp_path / "rules.toml"
    bad.write_text('[[rule]]\ndtype = "fp16"\nloader = "pointer"\n', encoding="utf-8")
    with pytest.raises(ValueError, match="why"):
        gpu_plan.load_loader_rules(bad)


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


def test_repeat_check_needs_a_gpu(tmp_path, capsys):
    """kernels.bench.repeat checks the GPU path only: without CUDA it says so and exits 2."""
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present: the check would run")
    from kernels.bench import repeat

    assert repeat.main(["--out", str(tmp_path / "r.json")]) == 2
    assert "no CUDA device" in capsys.readouterr().err
    assert not (tmp_path / "r.json").exists()


def test_tune_forms_refuses_an_unknown_form(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--out", "/tmp/unused.json", "--tune-forms", "nmajor,wmma"])
    assert "--tune-forms" in capsys.readouterr().err
