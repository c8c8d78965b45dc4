"""The fused split-K's atomic mode reads its workspace tile, then zeroes it: a CTA barrier must
separate the two, or one warp zeroes elements another warp has not loaded yet (issue 13: wrong
fp16/bf16 sums of exactly 0.0 on an H200 with Triton 3.6, where the load and the zero store got
different register layouts). The race depends on warp timing, so no run on a GPU can prove it
absent; the compiled code can. This compiles the kernel ahead of time for cuda:90 (no GPU
needed) in every atomic-mode variant the wrapper can launch and checks the PTX.

Ordered and single-split modes never overwrite memory they read within a program (they read
the per-split slices and write ``c``), so only atomic mode is compiled here.
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

from tests.support import compile_in_child

REPO = Path(__file__).resolve().parents[1]

LOAD = re.compile(r"\bld\.volatile\.global\b")
STORE = re.compile(r"\bst\.global\b")
BARRIER = re.compile(r"\b(bar\.sync|barrier\.sync)\b")


def barrier_problem(ptx: str) -> str | None:
    """Why the workspace loads and the zero stores after them are not separated, or None.

    In atomic mode the only volatile global loads are the last program's workspace loads, and
    the first global store after them is the first zero store. Every load must come before
    that store, with a barrier in between.
    """
    lines = ptx.splitlines()
    loads = [i for i, line in enumerate(lines) if LOAD.search(line)]
    if not loads:
        return "no volatile workspace loads (ld.volatile.global) in the PTX"
    stores = [i for i, line in enumerate(lines) if STORE.search(line) and i > loads[0]]
    if not stores:
        return "no global store after the workspace loads"
    first_store = stores[0]
    if first_store < loads[-1]:
        return (
            f"a global store (line {first_store + 1}: {lines[first_store].strip()!r}) sits "
            f"among the workspace loads (lines {loads[0] + 1}-{loads[-1] + 1})"
        )
    if not any(BARRIER.search(line) for line in lines[loads[-1] : first_store]):
        return (
            f"no bar.sync/barrier.sync between the last workspace load (line {loads[-1] + 1}) "
            f"and the first store after it (line {first_store + 1}: "
            f"{lines[first_store].strip()!r})"
        )
    return None


def test_barrier_problem_accepts_a_barrier_and_flags_its_absence():
    good = "ld.volatile.global.b32 {%r1}, [%rd1];\nbar.sync 0;\nst.global.b32 [%rd2], {%r0};"
    assert barrier_problem(good) is None
    assert barrier_problem(good.replace("bar.sync", "barrier.sync")) is None
    missing = good.replace("bar.sync 0;", "mov.b32 %r0, 0;")
    assert "no bar.sync" in barrier_problem(missing)
    interleaved = (
        "ld.volatile.global.b32 {%r1}, [%rd1];\nbar.sync 0;\nst.global.b32 [%rd2], {%r0};\n"
        "ld.volatile.global.b32 {%r3}, [%rd3];"
    )
    assert "among the workspace loads" in barrier_problem(interleaved)
    assert "no volatile" in barrier_problem("st.global.b32 [%rd2], {%r0};")


RUNNER = textwrap.dedent(
    """
    import inspect, json, sys
    sys.path.insert(0, sys.argv[1])
    import compat
    from matrix.backends.aot import compile_for_target
    from kernels.fused import splitk_fused_kernel

    INTS = ("M", "N", "K", "chunk_k", "split_k", "stride_am", "stride_ak", "stride_bk",
            "stride_bn", "stride_cm", "stride_cn")
    out = {}
    for case in json.loads(sys.argv[2]):
        if case["loader"] != "pointer" and compat.FEATURES.tensor_descriptor != "supported":
            out[case["id"]] = {"skip": "this release has no tensor descriptors"}
            continue
        sig = {n: "i32" for n in INTS}
        sig.update(a_ptr=case["in"], b_ptr=case["in"], c_ptr=case["out"], ws_ptr="*fp32",
                   lock_ptr="*i32")
        bm, bn, bk, warps, stages = case["tile"]
        consts = dict(
            BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, PRECISION=case["precision"],
            HAS_INPUT_PRECISION=compat.FEATURES.dot_input_precision, UPCAST=False,
            PRODUCT=case["product"],
            USE_DESC=case["loader"] != "pointer", B_KMAJOR=case["loader"] == "descriptor-nk",
            EVEN_M=True, EVEN_N=True, EVEN_K=True, SINGLE=False, ORDERED=False,
            RELAXED=case["relaxed"], FENCE=True,
        )
        art = compile_for_target(splitk_fused_kernel, sig, consts, "cuda:90",
                                 options={"num_warps": warps, "num_stages": stages})
        out[case["id"]] = {"ptx": art.ir["ptx"]}
    print(json.dumps(out))
    """
)

TYPES = {"fp16": "*fp16", "bf16": "*bf16", "fp32": "*fp32"}
BIG = (128, 128, 64, 8, 3)  # the tile whose layouts were seen to differ on 3.6
SMALL = (64, 64, 64, 4, 4)


def _cases() -> list[dict]:
    """Every (input, output) dtype pair and fp32 precision splitk_matmul accepts; both atomic
    flavours; each loader the wrapper can choose (descriptor ones where the release has them)."""
    cases = []
    for src in TYPES:
        for dst in TYPES:
            for precision in ("ieee", "tf32") if src == "fp32" else ("ieee",):
                cases.append((src, dst, precision, "pointer", True, BIG))
        cases.append((src, src, "ieee", "pointer", False, BIG))
        for loader in ("descriptor-kn", "descriptor-nk"):
            cases.append((src, src, "ieee", loader, True, SMALL))
    cases = [(*c, "dot") for c in cases]
    # The product forms the tuned table uses (kernels.dot.product_acc) change the
    # accumulator's layout, hence the epilogue's: at tiles of the committed table.
    cases += [
        ("fp32", "fp32", "tf32", "pointer", True, (64, 64, 32, 4, 5), "swap"),
        ("fp32", "fp32", "tf32", "descriptor-kn", True, (128, 128, 64, 8, 3), "swap"),
        ("fp32", "fp32", "ieee", "pointer", True, (16, 64, 8, 4, 4), "fma3d"),
        ("fp32", "fp32", "ieee", "pointer", True, (64, 128, 16, 8, 4), "nmajor"),
    ]
    return [
        {"id": f"{s}->{d}-{p}-{ld}-{'relaxed' if r else 'acqrel'}-{'x'.join(map(str, t))}"
               + ("" if f == "dot" else f"-{f}"),
         "in": TYPES[s], "out": TYPES[d], "precision": p, "loader": ld, "relaxed": r, "tile": t,
         "product": f}
        for s, d, p, ld, r, t, f in cases
    ]  # fmt: skip


@pytest.fixture(scope="module")
def compiled() -> dict:
    pytest.importorskip("triton")
    return compile_in_child(RUNNER, str(REPO), json.dumps(_cases()), timeout=1200)


@pytest.mark.slow
@pytest.mark.parametrize("case", [c["id"] for c in _cases()])
def test_atomic_mode_has_a_barrier_between_workspace_load_and_zero_store(compiled, case):
    result = compiled[case]
    if "skip" in result:
        pytest.skip(result["skip"])
    problem = barrier_problem(result["ptx"])
    assert problem is None, f"{case}: {problem}"
