"""Single-launch split-K for a GPU: the splits of a tile meet through a per-tile arrival counter.

The classic split-K (``kernels.splitk.splitk_kernel``) needs a zeroing launch before it (atomic
mode), or a summing launch after it (deterministic mode), plus a cast launch for fp16/bf16
results. On small skinny shapes those extra launches and their gaps cost more than the matmul.
Here every program, after adding (or storing) its partial tile, bumps a counter for its output
tile; the program that arrives last finishes the tile:

* atomic mode (``ORDERED=False``): partials are added with relaxed atomics into a float32
  workspace that is kept zeroed between calls; the last program reads the tile, writes ``c``
  in its dtype, and zeroes the workspace tile again;
* ordered mode (``ORDERED=True``, bitwise reproducible): each split stores its partial into its
  own slice; the last program adds the slices in split order 0, 1, ..., whoever it is.

The last program also resets the counter, so the counters and the atomic workspace are clean
at the end of every launch and need no memset (``kernels.workspace`` keeps one set per device
and stream). Memory ordering: every thread writes its part and fences (``fence.acq_rel.gpu``),
a CTA barrier, then one acq_rel atomic on the counter; the last program fences again and its
loads are volatile (neither cached in L1 nor moved above the counter by the compiler). Where
a program reads memory and then overwrites it (atomic mode's last program loads the workspace
tile, then zeroes it), a CTA barrier separates the two, whatever register layouts the compiler
gives the load and the store (tests/test_fused_barrier.py checks the compiled PTX). The
fences are inline PTX, so ``FENCE`` is off in the interpreter
(which runs programs one after another and needs none); ``FENCE`` also tells the product
forms (``PRODUCT``, ``kernels.dot.product_acc``) that inline PTX is allowed.

``SPLIT_K`` is a runtime argument (one compiled kernel serves every split), programs are ordered
tile-fastest so that programs reading the same K chunk run together and share it in L2, and
``EVEN_*`` switches drop the wrap-around and masks where the host knows the tiles are full,
which also lets the compiler know the contiguous axis is aligned (vector loads).

This path is chosen on the host for CUDA tensors only; the interpreter keeps the classic kernel.
Keep ``import triton.language as tl`` at module level (old releases resolve names through the
module globals) and no ``from __future__ import annotations`` here.
"""

import triton
import triton.language as tl

from compat.descriptors import make_descriptor_2d
from kernels.config import ORDERED_GROUP as _GROUP
from kernels.dot import product_acc

# Global constants a kernel reads must be tl.constexpr.
ORDERED_GROUP = tl.constexpr(_GROUP)


@triton.jit
def _fence_gpu(x):
    """``fence.acq_rel.gpu`` in every thread (a scalar argument runs it once per thread)."""
    tl.inline_asm_elementwise(
        "fence.acq_rel.gpu; mov.u32 $0, $1;", "=r,r", [x], dtype=tl.int32, is_pure=False, pack=1
    )


@triton.jit
def _ordered_sum(first, stride, count, mask, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """``sum(first[s * stride] for s in 0..count-1)``, added in that order. Several slices are
    loaded before the first add (a load-then-add loop keeps one in flight, so the sum cost
    ``count`` L2 round trips in a row): eight for tiles of up to 2048 elements (at most 16 per
    thread each at 4 warps), four for larger ones (registers). The adds stay in order, so the
    result is bitwise the same as one slice at a time. Loads are volatile: never hoisted above
    the counter atomic that published the slices."""
    total = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    if BLOCK_M * BLOCK_N <= 2048:
        full = count - count % 8
        for s in range(0, full, 8):
            p = first + s * stride
            x0 = tl.load(p, mask=mask, other=0.0, volatile=True)
            x1 = tl.load(p + stride, mask=mask, other=0.0, volatile=True)
            x2 = tl.load(p + 2 * stride, mask=mask, other=0.0, volatile=True)
            x3 = tl.load(p + 3 * stride, mask=mask, other=0.0, volatile=True)
            x4 = tl.load(p + 4 * stride, mask=mask, other=0.0, volatile=True)
            x5 = tl.load(p + 5 * stride, mask=mask, other=0.0, volatile=True)
            x6 = tl.load(p + 6 * stride, mask=mask, other=0.0, volatile=True)
            x7 = tl.load(p + 7 * stride, mask=mask, other=0.0, volatile=True)
            total += x0
            total += x1
            total += x2
            total += x3
            total += x4
            total += x5
            total += x6
            total += x7
    else:
        full = count - count % 4
        for s in range(0, full, 4):
            p = first + s * stride
            x0 = tl.load(p, mask=mask, other=0.0, volatile=True)
            x1 = tl.load(p + stride, mask=mask, other=0.0, volatile=True)
            x2 = tl.load(p + 2 * stride, mask=mask, other=0.0, volatile=True)
            x3 = tl.load(p + 3 * stride, mask=mask, other=0.0, volatile=True)
            total += x0
            total += x1
            total += x2
            total += x3
    for s in range(full, count):
        total += tl.load(first + s * stride, mask=mask, other=0.0, volatile=True)
    return total


@triton.jit
def splitk_fused_kernel(
    a_ptr, b_ptr, c_ptr, ws_ptr, lock_ptr, M, N, K, chunk_k, split_k,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    PRECISION: tl.constexpr, HAS_INPUT_PRECISION: tl.constexpr, UPCAST: tl.constexpr,
    PRODUCT: tl.constexpr, USE_DESC: tl.constexpr, B_KMAJOR: tl.constexpr,
    EVEN_M: tl.constexpr, EVEN_N: tl.constexpr, EVEN_K: tl.constexpr,
    SINGLE: tl.constexpr, ORDERED: tl.constexpr, RELAXED: tl.constexpr, FENCE: tl.constexpr,
):  # fmt: skip
    pid = tl.program_id(0)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_tiles = tl.cdiv(M, BLOCK_M) * num_pid_n
    tile = pid % num_tiles
    pid_k = pid // num_tiles
    pid_m = tile // num_pid_n
    pid_n = tile % num_pid_n

    k_start = pid_k * chunk_k
    k_end = tl.minimum(k_start + chunk_k, K)
    k_tiles = tl.cdiv(k_end - k_start, BLOCK_K)

    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    if PRODUCT == "swap":
        acc = tl.zeros((BLOCK_N, BLOCK_M), dtype=tl.float32)  # transposed (kernels.dot)
    elif PRODUCT == "fma3d":
        # (BM, BN, BK) partial products, summed over K once after the loop (kernels.dot): a
        # sum per K step made Triton 3.6 convert the 2-D accumulator's layout every step.
        acc = tl.zeros((BLOCK_M, BLOCK_N, BLOCK_K), dtype=tl.float32)
    else:
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    if USE_DESC:
        a_desc = make_descriptor_2d(a_ptr, M, K, stride_am, BLOCK_M, BLOCK_K)
        if B_KMAJOR:
            b_desc = make_descriptor_2d(b_ptr, N, K, stride_bn, BLOCK_N, BLOCK_K)
        else:
            b_desc = make_descriptor_2d(b_ptr, K, N, stride_bk, BLOCK_K, BLOCK_N)
        for i in range(0, k_tiles):
            k = k_start + i * BLOCK_K
            a = a_desc.load([pid_m * BLOCK_M, k])
            # Inline, not a helper: 3.3 cannot pass a descriptor to a jitted function.
            if B_KMAJOR:
                b = tl.trans(b_desc.load([pid_n * BLOCK_N, k]))
            else:
                b = b_desc.load([k, pid_n * BLOCK_N])
            acc = product_acc(a, b, acc, PRODUCT, PRECISION, HAS_INPUT_PRECISION, UPCAST, FENCE)
    else:
        # Full tiles need no wrap-around; the hints then tell the truth (contiguous, aligned).
        if EVEN_M:
            rows_in = tl.max_contiguous(tl.multiple_of(rows, BLOCK_M), BLOCK_M)
        else:
            rows_in = rows % M
        if EVEN_N:
            cols_in = tl.max_contiguous(tl.multiple_of(cols, BLOCK_N), BLOCK_N)
        else:
            cols_in = cols % N
        a_ptrs = a_ptr + rows_in[:, None] * stride_am + (k_start + offs_k)[None, :] * stride_ak
        b_ptrs = b_ptr + (k_start + offs_k)[:, None] * stride_bk + cols_in[None, :] * stride_bn
        if PRODUCT == "nmajor":
            # A (BK, BN) tile of -0.0 in an N-contiguous register layout: a load whose pointers
            # run along N (the coalesce pass orders its layout N-fastest) with a mask that is
            # false at run time (split_k >= 1, cols >= 0) but unknown to the compiler, so no
            # memory is read. b + (-0.0) is b exactly (also -0.0 and NaN), but the sum takes
            # this layout, so Triton stages the dot's B operand in an N-major shared tile
            # instead of the K-major one an nk_t tile gets (kernels.dot, "nmajor").
            z_ptrs = b_ptr + offs_k[:, None] * 0 + cols_in[None, :]
            z_mask = (offs_k[:, None] * 0 + cols_in[None, :]) < -split_k
            # In float32: the interpreter adds bfloat16 as raw bits (x + -0.0 flipped signs).
            b_zero = tl.load(z_ptrs, mask=z_mask, other=-0.0).to(tl.float32)
        for i in range(0, k_tiles):
            if EVEN_K:
                a = tl.load(a_ptrs)
                b = tl.load(b_ptrs)
            else:
                k_left = k_end - k_start - i * BLOCK_K
                a = tl.load(a_ptrs, mask=offs_k[None, :] < k_left, other=0.0)
                b = tl.load(b_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
            if PRODUCT == "nmajor":
                b = (b.to(tl.float32) + b_zero).to(b.dtype)
            acc = product_acc(a, b, acc, PRODUCT, PRECISION, HAS_INPUT_PRECISION, UPCAST, FENCE)
            a_ptrs += BLOCK_K * stride_ak
            b_ptrs += BLOCK_K * stride_bk
    if PRODUCT == "swap":
        acc = tl.trans(acc)
    elif PRODUCT == "fma3d":
        acc = tl.sum(acc, axis=2)

    c_mask = (rows[:, None] < M) & (cols[None, :] < N)
    c_ptrs = c_ptr + rows[:, None] * stride_cm + cols[None, :] * stride_cn
    if SINGLE:
        tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=c_mask)
    else:
        # Workspace tiles are row-major (M, N); ordered mode has one such slice per split.
        ws_ptrs = ws_ptr + rows[:, None] * N + cols[None, :]
        if ORDERED:
            tl.store(ws_ptrs + pid_k * M * N, acc, mask=c_mask)
        elif RELAXED:
            tl.atomic_add(ws_ptrs, acc, mask=c_mask, sem="relaxed")
        else:
            tl.atomic_add(ws_ptrs, acc, mask=c_mask)
        # Every thread's partial must be visible GPU-wide before the one thread that bumps the
        # counter does so: a CTA barrier alone was not enough for the relaxed atomic adds
        # (wrong sums in 96 of ~800 tuning runs on an H200), so each thread fences first.
        if FENCE:
            _fence_gpu(pid)
        tl.debug_barrier()
        if ORDERED:
            # Ordered mode sums in up to two levels: the last of each group of ORDERED_GROUP
            # splits adds the group's slices in split order; with one group that is c, else it
            # goes to the group's own slot (after the split_k slices) and the last group adds
            # the group sums in group order. The tree is fixed by split_k alone, so the result
            # is bitwise the same whatever order programs arrive in, and the reads spread over
            # the groups' programs instead of one program reading all split_k slices (one SM's
            # L2 bandwidth bounded that: det/atomic up to 1.9 on an H200). Group counters sit
            # after the tile counters; the host sizes both by kernels.config.ordered_group.
            group = tl.minimum(split_k, ORDERED_GROUP)
            ngroups = tl.cdiv(split_k, group)
            g = pid_k // group
            g_lo = g * group
            g_n = tl.minimum(g_lo + group, split_k) - g_lo
            g_lock = lock_ptr + num_tiles + tile * ngroups + g
            arrived_g = tl.atomic_add(g_lock, 1, sem="acq_rel")
            if arrived_g == g_n - 1:
                if FENCE:
                    _fence_gpu(pid)
                part = _ordered_sum(ws_ptrs + g_lo * M * N, M * N, g_n, c_mask,
                                    BLOCK_M, BLOCK_N)  # fmt: skip
                tl.store(g_lock, 0)
                if ngroups == 1:
                    tl.store(c_ptrs, part.to(c_ptr.dtype.element_ty), mask=c_mask)
                else:
                    tl.store(ws_ptrs + (split_k + g) * M * N, part, mask=c_mask)
                    if FENCE:
                        _fence_gpu(pid)
                    tl.debug_barrier()
                    arrived = tl.atomic_add(lock_ptr + tile, 1, sem="acq_rel")
                    if arrived == ngroups - 1:
                        if FENCE:
                            _fence_gpu(pid)
                        total = _ordered_sum(ws_ptrs + split_k * M * N, M * N, ngroups, c_mask,
                                             BLOCK_M, BLOCK_N)  # fmt: skip
                        tl.store(c_ptrs, total.to(c_ptr.dtype.element_ty), mask=c_mask)
                        tl.store(lock_ptr + tile, 0)
        else:
            arrived = tl.atomic_add(lock_ptr + tile, 1, sem="acq_rel")
            if arrived == split_k - 1:
                if FENCE:
                    _fence_gpu(pid)
                # volatile: a plain load may be hoisted above the counter atomic (seen on an
                # H200: wrong fp16/bf16 sums in ~25% of atomic-mode runs with .cg loads).
                total = tl.load(ws_ptrs, mask=c_mask, other=0.0, volatile=True)
                # Read, then overwrite the same tile: the compiler may give the load and the
                # zero store different register layouts (seen on 3.6: the load takes the layout
                # of the fp16/bf16 store to c), so without a CTA barrier one warp zeroes
                # elements another warp has not loaded yet (wrong sums of exactly 0.0 in 3797
                # of 5800 fp16/bf16 runs on an H200; 0 with it). The barrier makes it correct
                # whatever layouts are picked; tests/test_fused_barrier.py checks the PTX.
                tl.debug_barrier()
                tl.store(ws_ptrs, tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32), mask=c_mask)
                tl.store(c_ptrs, total.to(c_ptr.dtype.element_ty), mask=c_mask)
                tl.store(lock_ptr + tile, 0)
