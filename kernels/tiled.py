"""Tiled matmul: one program per BLOCK_M x BLOCK_N output tile, looping over all of K.

As in the seed note "Triton matmul": with the pointer loader, row and column offsets wrap with
``% M`` / ``% N`` so the ragged last tile reads valid memory, and the store mask (on the unwrapped
offsets) drops the duplicates; the K mask zeroes the tail tile. With the descriptor loader the
descriptor zero-pads outside the matrix instead.
"""

import torch
import triton
import triton.language as tl

from compat.descriptors import make_descriptor_2d
from kernels.checks import check_matmul, trivial_result
from kernels.config import cdiv, tile_config
from kernels.dot import dot_acc
from kernels.launch import compile_flags, interpreted, launch_options, loader_plan


@triton.jit
def tiled_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    PRECISION: tl.constexpr, HAS_INPUT_PRECISION: tl.constexpr, UPCAST: tl.constexpr,
    USE_DESC: tl.constexpr, B_KMAJOR: tl.constexpr,
):  # fmt: skip
    pid = tl.program_id(0)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    pid_m = pid // num_pid_n
    pid_n = pid % num_pid_n
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    if USE_DESC:
        a_desc = make_descriptor_2d(a_ptr, M, K, stride_am, BLOCK_M, BLOCK_K)
        if B_KMAJOR:
            b_desc = make_descriptor_2d(b_ptr, N, K, stride_bn, BLOCK_N, BLOCK_K)
        else:
            b_desc = make_descriptor_2d(b_ptr, K, N, stride_bk, BLOCK_K, BLOCK_N)
        for k in range(0, tl.cdiv(K, BLOCK_K)):
            a = a_desc.load([pid_m * BLOCK_M, k * BLOCK_K])
            # Inline, not a helper: 3.3 cannot pass a descriptor to a jitted function.
            if B_KMAJOR:
                b = tl.trans(b_desc.load([pid_n * BLOCK_N, k * BLOCK_K]))
            else:
                b = b_desc.load([k * BLOCK_K, pid_n * BLOCK_N])
            acc = dot_acc(a, b, acc, PRECISION, HAS_INPUT_PRECISION, UPCAST)
    else:
        offs_m = rows % M
        offs_n = cols % N
        a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
        b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
        for k in range(0, tl.cdiv(K, BLOCK_K)):
            a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
            b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
            acc = dot_acc(a, b, acc, PRECISION, HAS_INPUT_PRECISION, UPCAST)
            a_ptrs += BLOCK_K * stride_ak
            b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + rows[:, None] * stride_cm + cols[None, :] * stride_cn
    c_mask = (rows[:, None] < M) & (cols[None, :] < N)
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=c_mask)


def tiled_matmul(
    a: torch.Tensor,
    b: torch.Tensor,
    *,
    out_dtype: torch.dtype | None = None,
    precision: str = "ieee",
) -> torch.Tensor:
    """``a @ b`` with one program per output tile; float32 accumulation, result in ``out_dtype``."""
    p = check_matmul(a, b, out_dtype, precision, interpreted=interpreted())
    trivial = trivial_result(p)
    if trivial is not None:
        return trivial
    cfg = tile_config(p.device.type, a.element_size())
    plan = loader_plan(a, b, cfg)
    c = torch.empty((p.m, p.n), dtype=p.out_dtype, device=p.device)
    grid = (cdiv(p.m, cfg.block_m) * cdiv(p.n, cfg.block_n),)
    tiled_kernel[grid](
        a, b, c, p.m, p.n, p.k,
        a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, BLOCK_K=cfg.block_k,
        PRECISION=precision, USE_DESC=plan.loader == "descriptor", B_KMAJOR=plan.b_kmajor,
        **compile_flags(a.dtype), **launch_options(p.device, cfg, plan),
    )  # fmt: skip
    return c
