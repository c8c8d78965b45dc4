"""Split-K matmul on this release: right numbers (interpret, gpu) and compiles (aot).

interpret/gpu: ``kernels.splitk_matmul`` on the seed notes' cases (K = 200, 40, 10; M != N;
more splits than K tiles) in float32, float16 and bfloat16, atomic and deterministic, with the
loader ``compat`` chose. Each result is compared with a float64 product of the same rounded
inputs; the tolerance is the one the test suite uses (8x torch's own float32 error, plus the
output format's rounding). A silently wrong answer is ``fail`` with its error and case.

aot: compiles ``splitk_kernel`` for the target with the pointer loader, and with the descriptor
loader where this release has an in-kernel constructor; the evidence lists the matrix
instructions found in the assembly.
"""

from __future__ import annotations

from matrix.probes.base import Context, Observation
from matrix.probes.matmul_common import compile_variants, numerics


def _aot_variants():
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
    variants = {"pointer": (args, {**base, "USE_DESC": False})}
    if compat.FEATURES.descriptor_constructor is not None:
        variants["descriptor"] = (args, {**base, "USE_DESC": True})
    return splitk_kernel, variants


def observe(ctx: Context) -> Observation:
    if ctx.backend == "aot":
        kernel, variants = _aot_variants()
        return compile_variants(ctx, kernel, variants)
    from kernels import splitk_matmul

    return numerics(ctx, lambda a, b, s, d: splitk_matmul(a, b, s, deterministic=d), (False, True))
