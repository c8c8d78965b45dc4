"""splitk_matmul and tiled_matmul under the interpreter: the seed notes' cases, every dtype, both
loaders (forced), deterministic mode, poisoned outputs, and edge shapes."""

import itertools

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

import compat  # noqa: E402
import kernels  # noqa: E402
from kernels import launch  # noqa: E402
from kernels.numerics import random_operands, reference, rel_err, tolerance  # noqa: E402

pytestmark = pytest.mark.interpreter

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
LOADERS = ["pointer", "descriptor"]
# (M, N, K): the seed notes' K = 200 (partial second tile of a chunk), 40 and 10 (short and
# empty chunks), M != N and neither a multiple of the 32-wide blocks; one aligned case.
SHAPES = [(37, 53, 200), (37, 53, 40), (33, 65, 10), (64, 96, 256)]
SPLITS = [1, 3, 16]  # 16 is more splits than any of these shapes has K tiles


@pytest.fixture(params=LOADERS)
def loader(request, monkeypatch):
    """Force a loader for the test; a release without descriptors skips the descriptor half."""
    if request.param == "descriptor" and compat.FEATURES.descriptor_trial != "ok":
        pytest.skip(f"descriptor loader unavailable: {compat.FEATURES.descriptor_trial}")
    monkeypatch.setattr(compat, "LOADER", request.param)
    return request.param


@pytest.fixture
def poisoned(monkeypatch):
    """Every torch.empty the wrappers allocate starts as NaN, so an unwritten element shows."""
    real_empty = torch.empty

    def nan_empty(*args, **kwargs):
        t = real_empty(*args, **kwargs)
        if t.is_floating_point():
            t.fill_(float("nan"))
        return t

    monkeypatch.setattr(torch, "empty", nan_empty)


def _check(c, a, b, out_dtype, what):
    assert c.dtype == out_dtype, f"{what}: dtype {c.dtype}, expected {out_dtype}"
    assert c.shape == (a.shape[0], b.shape[1])
    assert not torch.isnan(c).any(), f"{what}: unwritten (NaN) elements"
    err, tol = rel_err(c, reference(a, b)), tolerance(a, b, out_dtype)
    assert err <= tol, f"{what}: relative error {err:.3e} > tolerance {tol:.3e}"
    return err


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("m,n,k", SHAPES)
def test_splitk_seed_cases(loader, poisoned, dtype, m, n, k):
    for i, (split, det) in enumerate(itertools.product(SPLITS, (False, True))):
        a, b = random_operands(m, n, k, dtype, seed=hash((m, n, k, i)) % 2**31)
        plan = kernels.plan_splitk(a, b, split)
        expected_loader = loader if (m, n, k) == (64, 96, 256) else plan.loader.loader
        assert plan.loader.loader == expected_loader, plan.loader.reason
        c = kernels.splitk_matmul(a, b, split, deterministic=det)
        _check(c, a, b, dtype, f"splitk {m}x{n}x{k} split={split} det={det} {plan.loader}")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("m,n,k", SHAPES)
def test_tiled(loader, poisoned, dtype, m, n, k):
    a, b = random_operands(m, n, k, dtype, seed=k)
    _check(kernels.tiled_matmul(a, b), a, b, dtype, f"tiled {m}x{n}x{k}")


@pytest.mark.parametrize("out_dtype", DTYPES, ids=str)
def test_out_dtype_and_precision(loader, out_dtype):
    a, b = random_operands(40, 72, 96, torch.float32, seed=7)
    for precision in ("ieee", "tf32"):
        c = kernels.splitk_matmul(a, b, 2, out_dtype=out_dtype, precision=precision)
        _check(c, a, b, out_dtype, f"splitk out={out_dtype} {precision}")
        c = kernels.tiled_matmul(a, b, out_dtype=out_dtype, precision=precision)
        _check(c, a, b, out_dtype, f"tiled out={out_dtype} {precision}")


def test_low_precision_inputs_accumulate_in_fp32(loader):
    """bf16/fp16 inputs with a float32 result: only accumulation noise is allowed, which a
    low-precision accumulator would exceed by orders of magnitude."""
    for dtype in (torch.float16, torch.bfloat16):
        a, b = random_operands(33, 40, 512, dtype, seed=3)
        c = kernels.splitk_matmul(a, b, 4, out_dtype=torch.float32)
        _check(c, a, b, torch.float32, f"splitk {dtype} -> float32")


def test_deterministic_is_bitwise_stable(loader):
    a, b = random_operands(45, 70, 300, torch.float32, seed=11)
    first = kernels.splitk_matmul(a, b, 5, deterministic=True)
    for _ in range(3):
        assert torch.equal(kernels.splitk_matmul(a, b, 5, deterministic=True), first)


def test_transposed_and_strided_inputs(loader, poisoned):
    """A linear layer passes b as the transposed (N, K) weight; a may be a column slice."""
    a_full, _ = random_operands(50, 8, 192, torch.float32, seed=5)
    w, _ = random_operands(61, 8, 192, torch.float32, seed=6)
    b_t = w.t()  # (K, N) view with stride (1, K)
    a_cols = torch.randn(50, 400)[:, 3:195]  # misaligned base and non-unit row stride
    for a in (a_full, a_cols):
        for b in (b_t, b_t.contiguous()):
            _check(kernels.splitk_matmul(a, b, 3), a, b, torch.float32, "splitk strided")
            _check(kernels.tiled_matmul(a, b), a, b, torch.float32, "tiled strided")


def test_descriptor_rules_fall_back_to_pointers(monkeypatch):
    """Inputs that break a descriptor rule take the pointer loader for that call."""
    monkeypatch.setattr(compat, "LOADER", "descriptor")
    a = torch.randn(40, 100)[:, 1:97]  # base off by 4 bytes; row stride 400 B is aligned
    b = torch.randn(96, 30)  # row stride 120 B: not a multiple of 16
    cfg = kernels.plan_splitk(torch.randn(40, 96), torch.randn(96, 32), 1).config
    assert "base address" in launch.loader_plan(a, torch.randn(96, 32), cfg).reason
    assert "row stride" in launch.loader_plan(torch.randn(40, 96), b, cfg).reason
    assert launch.loader_plan(torch.randn(40, 96), torch.randn(96, 32), cfg).loader == "descriptor"
    kmajor = launch.loader_plan(torch.randn(40, 96), torch.randn(32, 96).t(), cfg)
    assert kmajor.loader == "descriptor" and kmajor.b_kmajor


def test_tolerance_catches_a_dropped_tile():
    """The tolerance must reject the bugs it exists for: one K tile missing from the sum."""
    a, b = random_operands(37, 53, 200, torch.float32, seed=1)
    dropped = a[:, 32:].double() @ b[32:, :].double()
    assert rel_err(dropped, reference(a, b)) > 100 * tolerance(a, b, torch.float32)


@pytest.mark.parametrize("fn", ["splitk", "tiled"])
def test_empty_shapes(fn, loader):
    mm = kernels.splitk_matmul if fn == "splitk" else kernels.tiled_matmul
    for m, n, k in [(0, 5, 7), (5, 0, 7), (0, 0, 0)]:
        c = mm(torch.randn(m, k), torch.randn(k, n))
        assert c.shape == (m, n) and c.dtype == torch.float32
    c = mm(torch.randn(4, 0, dtype=torch.float16), torch.randn(0, 6, dtype=torch.float16))
    assert c.shape == (4, 6) and c.dtype == torch.float16 and torch.count_nonzero(c) == 0


BAD_INPUTS = [
    ("ndim", lambda: (torch.randn(2, 3, 4), torch.randn(4, 5)), ValueError, "a: expected a 2-D"),
    ("ndim b", lambda: (torch.randn(3, 4), torch.randn(4)), ValueError, "b: expected a 2-D"),
    ("shape", lambda: (torch.randn(3, 4), torch.randn(5, 6)), ValueError, "shape mismatch"),
    (
        "mixed dtypes",
        lambda: (torch.randn(3, 4), torch.randn(4, 5).half()),
        TypeError,
        "same dtype",
    ),
    (
        "unsupported dtype",
        lambda: (torch.randn(3, 4).double(), torch.randn(4, 5).double()),
        TypeError,
        "a.dtype",
    ),
    ("int dtype", lambda: (torch.ones(3, 4, dtype=torch.int32),) * 2, TypeError, "a.dtype"),
    ("not a tensor", lambda: ([[1.0]], torch.randn(1, 1)), TypeError, "a: expected a torch.Tensor"),
    (
        "mixed devices",
        lambda: (torch.randn(3, 4), torch.randn(4, 5, device="meta")),
        ValueError,
        "one device",
    ),
]


@pytest.mark.parametrize("name,make,exc,match", BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
@pytest.mark.parametrize("fn", ["splitk", "tiled"])
def test_bad_input(fn, name, make, exc, match):
    mm = kernels.splitk_matmul if fn == "splitk" else kernels.tiled_matmul
    with pytest.raises(exc, match=match):
        mm(*make())


@pytest.mark.parametrize(
    "kwargs,exc,match",
    [
        ({"split_k": 0}, ValueError, "split_k"),
        ({"split_k": -2}, ValueError, "split_k"),
        ({"split_k": 2.0}, TypeError, "split_k"),
        ({"split_k": True}, TypeError, "split_k"),
        ({"precision": "fast"}, ValueError, "precision"),
        ({"out_dtype": torch.int8}, TypeError, "out_dtype"),
        ({"deterministic": "yes"}, TypeError, "deterministic"),
    ],
)
def test_bad_arguments(kwargs, exc, match):
    a, b = torch.randn(4, 8), torch.randn(8, 4)
    with pytest.raises(exc, match=match):
        kernels.splitk_matmul(a, b, **kwargs)


def test_split_k_has_an_upper_bound_named_in_the_error():
    """K = 16 with split_k=10**9 used to launch 10**9 programs (minutes of CPU); the limit is
    max(K, MAX_SPLIT_K), and the largest allowed value still computes the product."""
    from kernels.splitk import split_k_limit

    a, b = torch.randn(8, 16), torch.randn(16, 8)
    limit = split_k_limit(16)
    assert limit == 64
    for bad in (limit + 1, 10**9):
        with pytest.raises(ValueError, match=r"split_k: expected at most max\(K, MAX_SPLIT_K\)"):
            kernels.splitk_matmul(a, b, bad)
        with pytest.raises(ValueError, match="= 64, got"):
            kernels.plan_splitk(a, b, bad)
    big_k = torch.randn(2, 100), torch.randn(100, 2)
    assert split_k_limit(100) == 100
    _check(kernels.splitk_matmul(*big_k, 100), *big_k, torch.float32, "split_k = K = 100")


def test_tiled_rejects_bad_precision():
    with pytest.raises(ValueError, match="precision"):
        kernels.tiled_matmul(torch.randn(4, 8), torch.randn(8, 4), precision="tf64")


def test_split_k_none_picks_more_splits_for_long_k():
    a, b = torch.randn(16, 4096), torch.randn(4096, 16)
    short = kernels.plan_splitk(torch.randn(16, 64), torch.randn(64, 16))
    long = kernels.plan_splitk(a, b)
    assert long.split_k > short.split_k >= 1
    assert long.chunk_k % long.config.block_k == 0
