"""Tiled matmul on this release: right numbers (interpret, gpu) and compiles (aot).

interpret/gpu: ``kernels.tiled_matmul`` on the seed notes' shapes in float32, float16 and
bfloat16 with the loader ``compat`` chose, judged against float64 as the test suite does.
aot: compiles ``tiled_kernel`` for the target with each available loader.
"""

from __future__ import annotations

from matrix.probes.support.base import Context, Observation
from matrix.probes.support.matmul import compile_variants, numerics


def _aot_variants():
    import torch

    import compat
    from kernels.launch import compile_flags
    from kernels.tiled import tiled_kernel

    a = torch.empty(64, 64, dtype=torch.float16)
    args = {"a_ptr": a, "b_ptr": a, "c_ptr": a, "M": 64, "N": 64, "K": 64,
            "stride_am": 64, "stride_ak": 1, "stride_bk": 64, "stride_bn": 1,
            "stride_cm": 64, "stride_cn": 1}  # fmt: skip
    base = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "PRECISION": "ieee",
            "B_KMAJOR": False, **compile_flags(torch.float16)}  # fmt: skip
    variants = {"pointer": (tiled_kernel, args, {**base, "USE_DESC": False})}
    if compat.FEATURES.descriptor_constructor is not None:
        variants["descriptor"] = (tiled_kernel, args, {**base, "USE_DESC": True})
    return variants


def observe(ctx: Context) -> Observation:
    if ctx.backend == "aot":
        return compile_variants(ctx, _aot_variants())
    from kernels import tiled_matmul

    return numerics(ctx, lambda a, b, s, d: tiled_matmul(a, b), (False,), split=False)
