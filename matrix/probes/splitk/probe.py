"""Split-K matmul on this release: right numbers (interpret, gpu) and compiles (aot).

interpret/gpu: ``kernels.splitk_matmul`` on the seed notes' cases (K = 200, 40, 10; M != N;
more splits than K tiles) in float32, float16 and bfloat16, atomic and deterministic, with the
loader ``compat`` chose. Each result is compared with a float64 product of the same rounded
inputs; the tolerance is the one the test suite uses (8x torch's own float32 error, plus the
output format's rounding). A silently wrong answer is ``fail`` with its error and case.

aot: compiles ``splitk_kernel`` for the target with the pointer loader, and with the descriptor
loader where this release has an in-kernel constructor, and, for CUDA targets, the fused
single-launch kernel the GPU path uses (``kernels.fused``, ordered reduction, with its PTX
fence); the evidence lists the matrix instructions found in the assembly.
"""

from __future__ import annotations

from matrix.probes.support.base import Context, Observation
from matrix.probes.support.matmul import compile_variants, numerics


def _aot_variants(target: str):
    import torch

    import compat
    from kernels.launch import compile_flags
    from kernels.splitk import splitk_kernel

    a = torch.empty(64, 64, dtype=torch.float16)
    args = {"a_ptr": a, "b_ptr": a, "ws_ptr": a.float(), "M": 64, "N": 64, "K": 64,
            "chunk_k": 64, "stride_am": 64, "stride_ak": 1, "stride_bk": 64, "stride_bn": 1,
            "stride_ws_split": 4096, "stride_ws_m": 64, "stride_ws_n": 1}  # fmt: skip
    base = {"SPLIT_K": 4, "BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "PRECISION": "ieee",
            "B_KMAJOR": False, "ATOMIC": True, **compile_flags(torch.float16)}  # fmt: skip
    variants = {"pointer": (splitk_kernel, args, {**base, "USE_DESC": False})}
    if compat.FEATURES.descriptor_constructor is not None:
        variants["descriptor"] = (splitk_kernel, args, {**base, "USE_DESC": True})
    if target.startswith("cuda:"):
        variants["fused"] = _fused_variant(a, compile_flags(torch.float16))
    return variants


def _fused_variant(a, flags):
    """The GPU path's kernel as it launches on the H200 (ordered reduction, fence on)."""
    import torch

    from kernels.fused import splitk_fused_kernel
    from kernels.gpu_plan import PRODUCTS

    args = {"a_ptr": a, "b_ptr": a, "c_ptr": a, "ws_ptr": a.float(),
            "lock_ptr": torch.empty(1, dtype=torch.int32), "M": 64, "N": 64, "K": 64,
            "chunk_k": 64, "split_k": 4, "stride_am": 64, "stride_ak": 1, "stride_bk": 64,
            "stride_bn": 1, "stride_cm": 64, "stride_cn": 1}  # fmt: skip
    consts = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64, "PRECISION": "ieee",
              "USE_DESC": False, "B_KMAJOR": False, "EVEN_M": False, "EVEN_N": False,
              "EVEN_K": False, "SINGLE": False, "ORDERED": True, "RELAXED": False,
              "FENCE": True, "PRODUCT": PRODUCTS[0], **flags}  # fmt: skip
    return (splitk_fused_kernel, args, consts)


def observe(ctx: Context) -> Observation:
    if ctx.backend == "aot":
        return compile_variants(ctx, _aot_variants(ctx.compile_target))
    from kernels import splitk_matmul

    return numerics(ctx, lambda a, b, s, d: splitk_matmul(a, b, s, deterministic=d), (False, True))
