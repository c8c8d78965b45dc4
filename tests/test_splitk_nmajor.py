"""The ``nmajor`` product form of the fused split-K (kernels.fused, kernels.dot): the plain dot on
a B tile routed through an N-contiguous layout, for fp32-ieee with B given transposed (nk_t).

Under the interpreter: right numbers against a float64 reference (relative Frobenius error
within the measured-noise tolerance of kernels.numerics) on odd shapes, both workspace modes,
transposed and sliced operands, NaN-poisoned outputs and workspace; ordered mode bitwise stable
across runs; and the same bits as the plain dot (b + -0.0 is b exactly). Ahead of time for
cuda:90 (slow): the form compiles, and its B operand is staged in an N-major shared tile where
the plain dot's is K-major (the reason the form exists), without register spills.
"""

import json
import textwrap

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

import compat  # noqa: E402
from kernels import splitk, workspace  # noqa: E402
from kernels.checks import check_matmul  # noqa: E402
from kernels.config import TileConfig  # noqa: E402
from kernels.numerics import random_operands, reference, rel_err, tolerance  # noqa: E402
from tests.support import REPO, compile_in_child  # noqa: E402

TILE = TileConfig(16, 32, 16)
# (M, N, K, split): ragged M/N with a partial K tile; more splits than K tiles (9 splits of
# 3 K tiles: 6 empty chunks, and in ordered mode a second group, of empty chunks only), on a
# 2x2-tile output whose last row and column are 1 wide (program count is the interpreter's
# cost: this case was 3x3 tiles x 16 splits, a fifth of the file's run time); one split (the
# single-program path, no workspace); M = 1.
CASES = [(37, 53, 200, 3), (17, 33, 40, 9), (20, 48, 96, 1), (1, 7, 33, 2)]


@pytest.fixture
def poisoned(monkeypatch):
    """Every torch.empty (the output, ordered mode's slices) starts as NaN, and the scratch is
    dropped first so its slices are allocated here: an unwritten element shows as NaN."""
    workspace.clear()
    real_empty = torch.empty

    def nan_empty(*args, **kwargs):
        t = real_empty(*args, **kwargs)
        if t.is_floating_point():
            t.fill_(float("nan"))
        return t

    monkeypatch.setattr(torch, "empty", nan_empty)
    yield
    workspace.clear()


def _interpreter_only():
    if not compat.FEATURES.interpreter:
        pytest.skip("needs TRITON_INTERPRET=1 (the kernels run on CPU tensors)")


def _run(a, b, split, det, product="nmajor", tile=TILE):
    p = check_matmul(a, b, None, "ieee", interpreted=True)
    plan = splitk.plan_with(a, b, tile, split, "pointer", product=product)
    assert plan.product == product and plan.fused
    return splitk.run_plan(a, b, plan, p, precision="ieee", deterministic=det)


def _layouts(a, b):
    """(name, a, b): plain; b as the transposed (N, K) weight (nk_t, what the form is for);
    both operands sliced out of larger tensors (offset bases, row strides not their widths)."""
    k, n = b.shape
    a_big = torch.randn(a.shape[0], k + 3, dtype=a.dtype)
    a_big[:, 1 : 1 + k] = a
    w_big = torch.randn(n + 5, k + 2, dtype=b.dtype)
    w_big[2 : 2 + n, 1 : 1 + k] = b.t()
    return [
        ("kn", a, b),
        ("nk_t", a, b.t().contiguous().t()),
        ("sliced-nk_t", a_big[:, 1 : 1 + k], w_big[2 : 2 + n, 1 : 1 + k].t()),
    ]


@pytest.mark.interpreter
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("det", [False, True], ids=["atomic", "ordered"])
def test_nmajor_matches_float64(poisoned, dtype, det):
    _interpreter_only()
    for i, (m, n, k, split) in enumerate(CASES):
        a, b = random_operands(m, n, k, dtype, seed=700 + 10 * i + det)
        for name, aa, bb in _layouts(a, b):
            c = _run(aa, bb, split, det)
            what = f"nmajor {name} {m}x{n}x{k} S{split} det={det}"
            assert c.shape == (m, n) and not torch.isnan(c.float()).any(), f"{what}: NaN"
            err, tol = rel_err(c, reference(aa, bb)), tolerance(aa, bb, dtype)
            assert err <= tol, f"{what}: relative error {err:.2e} > tolerance {tol:.2e}"


@pytest.mark.interpreter
def test_nmajor_ordered_is_bitwise_stable_and_equal_to_the_dot(poisoned):
    """Ordered mode gives the same bits on every run; and the same bits as the plain dot, since
    the form only adds -0.0 to B (exact for every value, -0.0 included: some are put in)."""
    _interpreter_only()
    a, b = random_operands(45, 70, 300, torch.float32, seed=731)
    b[::7, ::3] = -0.0
    b = b.t().contiguous().t()
    first = _run(a, b, 5, det=True)
    for _ in range(2):
        assert torch.equal(_run(a, b, 5, det=True).view(torch.int32), first.view(torch.int32))
    dot = _run(a, b, 5, det=True, product="dot")
    assert torch.equal(dot.view(torch.int32), first.view(torch.int32))
    assert rel_err(first, reference(a, b)) <= tolerance(a, b, torch.float32)


RUNNER = textwrap.dedent(
    """
    import json, os, re, subprocess, sys, tempfile
    from pathlib import Path
    sys.path.insert(0, sys.argv[1])
    import compat, triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from matrix.backends.aot import _find_attrs_descriptor, detect_spelling
    from kernels.fused import splitk_fused_kernel as fn

    spelling = detect_spelling(ASTSource, fn, _find_attrs_descriptor())
    if spelling.attrs != "path-dict" or not spelling.constexpr_in_signature:
        print(json.dumps({"skip": f"ASTSource spelling {spelling} (this check needs 3.3's)"}))
        sys.exit(0)
    # Specialized as a launch on real tensors is: 1 a constant, multiples of 16 marked so
    # (matrix.backends.aot marks pointers only, which changes vector widths and registers).
    m, n, k, split = 256, 256, 131072, 33
    # The bundled ptxas that takes this release's PTX (3.9's plain ptxas rejects PTX 9.4).
    bins = Path(triton.__file__).parent / "backends" / "nvidia" / "bin"
    ptxases = [p for p in (bins / "ptxas-blackwell", bins / "ptxas") if p.exists()]
    out = {}
    for case in json.loads(sys.argv[2]):
        bm, bn, bk, warps, stages = case["tile"]
        chunk = -(-(-(-k // split)) // bk) * bk
        ints = dict(M=m, N=n, K=k, chunk_k=chunk, split_k=split, stride_am=k, stride_ak=1,
                    stride_bk=1, stride_bn=k, stride_cm=n, stride_cn=1)
        consts = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, PRECISION="ieee",
                      HAS_INPUT_PRECISION=compat.FEATURES.dot_input_precision, UPCAST=False,
                      PRODUCT=case["product"], USE_DESC=False, B_KMAJOR=False, EVEN_M=True,
                      EVEN_N=True, EVEN_K=True, SINGLE=False, ORDERED=case["ordered"],
                      RELAXED=True, FENCE=True)
        sig, attrs = {}, {}
        for i, name in enumerate(fn.arg_names):
            if name.endswith("_ptr"):
                sig[name] = "*i32" if name == "lock_ptr" else "*fp32"
                attrs[(i,)] = [["tt.divisibility", 16]]
            elif name in ints and ints[name] == 1:
                sig[name], consts[name] = "constexpr", 1
            elif name in ints:
                sig[name] = "i32"
                if ints[name] % 16 == 0:
                    attrs[(i,)] = [["tt.divisibility", 16]]
            else:
                sig[name] = "constexpr"
        src = ASTSource(fn, signature=sig, constexprs=consts, attrs=attrs)
        with tempfile.TemporaryDirectory() as d:
            os.environ["TRITON_CACHE_DIR"] = d
            art = triton.compile(src, target=GPUTarget("cuda", 90, 32),
                                 options={"num_warps": warps, "num_stages": stages})
            ttgir, ptx = art.asm["ttgir"], art.asm["ptx"]
            spills = None
            path = os.path.join(d, "k.ptx")
            Path(path).write_text(ptx)
            for ptxas in ptxases:
                p = subprocess.run([str(ptxas), "-arch=sm_90a", "-v", path, "-o",
                                    os.path.join(d, "k.o")], capture_output=True, text=True)
                found = re.search(r"(\\d+) bytes spill stores", p.stderr)
                regs = re.search(r"Used (\\d+) registers", p.stderr)
                if p.returncode == 0 and found and regs:
                    spills = [int(found.group(1)), int(regs.group(1))]
                    break
        orders = dict(re.findall(r"^(#shared\\d*) = .*order = \\[([0-9, ]+)\\]", ttgir, re.M))
        staged = re.findall(r"-> !ttg.memdesc<(?:\\d+x)?" + f"{bk}x{bn}" + r"xf32, (#shared\\d*)",
                            ttgir)
        out[case["id"]] = {"b_orders": sorted({orders.get(s, "?") for s in staged}),
                           "spills_regs": spills}
    print(json.dumps(out))
    """
)


def _aot_cases() -> list[dict]:
    """The form at tiles it is swept on (kernels.bench.sweep.FORM_TILES), both modes at one;
    the plain dot at the same tile as the control."""
    from kernels.bench.sweep import FORM_TILES

    tiles = sorted({t for _, ts in FORM_TILES["nmajor"] for t in ts})
    ids = [f"nmajor-{'x'.join(map(str, t))}" for t in tiles]
    cases: list[dict] = [{"id": i, "tile": t, "product": "nmajor", "ordered": False}
                         for i, t in zip(ids, tiles, strict=True)]  # fmt: skip
    cases.append({**cases[0], "id": ids[0] + "-ordered", "ordered": True})
    cases.append({**cases[0], "id": "dot-" + ids[0], "product": "dot"})
    return cases


@pytest.fixture(scope="module")
def compiled() -> dict:
    return compile_in_child(RUNNER, str(REPO), json.dumps(_aot_cases()), timeout=1800)


@pytest.mark.slow
def test_nmajor_stages_b_n_major_for_cuda90_without_spills(compiled):
    if "skip" in compiled:
        pytest.skip(compiled["skip"])
    for case in _aot_cases():
        got = compiled[case["id"]]
        if case["product"] == "dot":
            # The control: what the form exists to avoid (a K-major B tile) is still there, so
            # the check below can tell the two apart.
            assert got["b_orders"] == ["0, 1"], f"{case['id']}: {got}"
            continue
        assert "1, 0" in got["b_orders"], f"{case['id']}: B not staged N-major: {got}"
        if got["spills_regs"] is None:
            continue  # no bundled ptxas took the PTX: the compile itself is what was checked
        spills, regs = got["spills_regs"]
        assert spills == 0, f"{case['id']}: {spills} bytes of spill stores ({regs} registers)"
