"""The single-launch split-K (kernels.fused) under the interpreter: right numbers in both modes,
bitwise-stable ordered mode, scratch left clean for the next call, and descriptor rules enforced
on the host before any launch. The GPU picks this kernel on the host; these tests force it."""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

import compat  # noqa: E402
from kernels import splitk, workspace  # noqa: E402
from kernels.checks import check_matmul  # noqa: E402
from kernels.config import TileConfig  # noqa: E402
from kernels.numerics import random_operands, reference, rel_err, tolerance  # noqa: E402

pytestmark = pytest.mark.interpreter
TILE = TileConfig(32, 32, 32)


@pytest.fixture(autouse=True)
def _interpreter_only():
    if not compat.FEATURES.interpreter:
        pytest.skip("needs TRITON_INTERPRET=1 (the kernels run on CPU tensors)")


def _fused(a, b, split, det, loader="pointer", out_dtype=None):
    p = check_matmul(a, b, out_dtype, "ieee", interpreted=True)
    plan = splitk.plan_with(a, b, TILE, split, loader)
    assert plan.fused
    return splitk.run_plan(a, b, plan, p, precision="ieee", deterministic=det), plan


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("det", [False, True], ids=["atomic", "ordered"])
def test_fused_matches_float64(dtype, det):
    """Seed-note cases: ragged M/N, partial K tile (200), empty chunks (9 splits of K = 40: 2
    chunks hold its 2 K tiles; in ordered mode the second group is one empty chunk)."""
    for i, (m, n, k, split) in enumerate([(37, 53, 200, 3), (33, 65, 40, 9), (64, 64, 96, 1)]):
        a, b = random_operands(m, n, k, dtype, seed=300 + i)
        for bb in (b, b.t().contiguous().t()):  # (K, N) and the transposed weight
            c, _ = _fused(a, bb, split, det)
            assert not torch.isnan(c.float()).any()
            err, tol = rel_err(c, reference(a, bb)), tolerance(a, bb, dtype)
            assert err <= tol, f"{m}x{n}x{k} split={split} det={det}: {err:.2e} > {tol:.2e}"


def test_fused_leaves_scratch_clean():
    """Atomic mode relies on a zeroed workspace and zero counters at entry: each call must leave
    them that way, or the next call adds to stale partials."""
    workspace.clear()
    a, b = random_operands(40, 72, 160, torch.float32, seed=9)
    first, _ = _fused(a, b, 4, det=False)
    assert rel_err(first, reference(a, b)) <= tolerance(a, b, torch.float32)
    s = workspace.scratch(torch.device("cpu"), 0, 0)
    assert torch.count_nonzero(s.ws) == 0 and torch.count_nonzero(s.locks) == 0
    again, _ = _fused(a, b, 4, det=False)
    assert rel_err(again, reference(a, b)) <= tolerance(a, b, torch.float32)


def test_ordered_mode_is_bitwise_stable():
    a, b = random_operands(45, 70, 300, torch.float32, seed=11)
    first, _ = _fused(a, b, 5, det=True)
    for _ in range(2):
        assert torch.equal(_fused(a, b, 5, det=True)[0], first)


@pytest.mark.parametrize("split", [9, 13, 30])
def test_ordered_two_level_sum_is_right_stable_and_leaves_counters_clean(split):
    """Past ORDERED_GROUP (8) splits, ordered mode sums groups, then group sums: 9 splits make
    groups of 8 and 1, 13 of 8 and 5; 30 of K = 300 leave chunks empty (BK 32: 10 K tiles)."""
    from kernels.config import ordered_group

    assert ordered_group(split) < split
    workspace.clear()
    a, b = random_operands(45, 70, 300, torch.float32, seed=12)
    first, _ = _fused(a, b, split, det=True)
    assert not torch.isnan(first).any()
    assert rel_err(first, reference(a, b)) <= tolerance(a, b, torch.float32)
    s = workspace.scratch(torch.device("cpu"), 0, 0)
    assert torch.count_nonzero(s.locks) == 0  # tile and group counters back at zero
    for _ in range(2):
        assert torch.equal(_fused(a, b, split, det=True)[0], first)


def test_ordered_sum_of_large_tiles_loads_four_at_a_time_and_is_right():
    """TILE (32x32) takes the eight-wide slice sum; a 64x64 tile the four-wide one."""
    a, b = random_operands(70, 66, 300, torch.float32, seed=13)
    p = check_matmul(a, b, None, "ieee", interpreted=True)
    for split in (6, 13):  # one level (4 + 2 slices); two levels (groups of 8 and 5)
        plan = splitk.plan_with(a, b, TileConfig(64, 64, 32), split, "pointer")
        c = splitk.run_plan(a, b, plan, p, precision="ieee", deterministic=True)
        assert not torch.isnan(c).any()
        assert rel_err(c, reference(a, b)) <= tolerance(a, b, torch.float32)


def test_misaligned_descriptors_are_refused_on_the_host(monkeypatch):
    """On an H200 a descriptor over a misaligned base raised 'misaligned address' and poisoned
    the CUDA context (probe descriptor_misaligned): the host must fall back to pointers first."""
    monkeypatch.setattr(compat, "LOADER", "descriptor")
    a = torch.randn(40, 100)[:, 1:97]  # base 4 bytes off
    b = torch.randn(96, 30)  # row stride 120 bytes
    for aa, bb, why in ((a, torch.randn(96, 32), "base address"),
                        (torch.randn(40, 96), b, "row stride")):  # fmt: skip
        c, plan = _fused(aa, bb, 2, det=False, loader="descriptor")
        assert plan.loader.loader == "pointer" and why in plan.loader.reason
        assert rel_err(c, reference(aa, bb)) <= tolerance(aa, bb, torch.float32)


@pytest.mark.parametrize("product", ["swap", "fma3d"])
@pytest.mark.parametrize("det", [False, True], ids=["atomic", "ordered"])
def test_product_forms_match_float64(product, det):
    """The tuned table's product forms (kernels.dot.product_acc) compute the same product as
    the plain dot: ragged M/N, a partial K tile, empty chunks, both layouts of b, fp32 and
    bf16 inputs (fma3d's K step is the tile's BLOCK_K, here 8)."""
    tile = TILE if product == "swap" else TileConfig(32, 32, 8)
    for dtype in (torch.float32, torch.bfloat16):
        for i, (m, n, k, split) in enumerate([(37, 53, 200, 3), (33, 65, 40, 9)]):
            a, b = random_operands(m, n, k, dtype, seed=400 + i)
            for bb in (b, b.t().contiguous().t()):
                p = check_matmul(a, bb, None, "ieee", interpreted=True)
                plan = splitk.plan_with(a, bb, tile, split, "pointer", product=product)
                assert plan.product == product
                c = splitk.run_plan(a, bb, plan, p, precision="ieee", deterministic=det)
                assert not torch.isnan(c.float()).any()
                err, tol = rel_err(c, reference(a, bb)), tolerance(a, bb, dtype)
                assert err <= tol, f"{product} {m}x{n}x{k} S{split}: {err:.2e} > {tol:.2e}"


def test_unknown_product_form_is_refused():
    a, b = random_operands(16, 16, 32, torch.float32, seed=1)
    with pytest.raises(ValueError, match="product"):
        splitk.plan_with(a, b, TILE, 2, "pointer", product="wmma")
