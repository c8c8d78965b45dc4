"""Split-K matmul: the K range is cut into SPLIT_K chunks, one program per (output tile, chunk).

Design (seed note "Triton: Split-K Matmul"):

* 1-D grid of ``cdiv(M, BM) * cdiv(N, BN) * SPLIT_K`` programs, ``pid_k`` fastest-varying so the
  programs sharing an output tile are adjacent;
* the chunk is in K *elements*, rounded up on the host to a multiple of BLOCK_K: every chunk start
  then stays 16-byte aligned (a chunk computed in-kernel lost that alignment and ran up to 1.7x
  slower on an H200) and no tile straddles two chunks;
* the K mask compares each lane's absolute coordinate with ``k_end = min(k_start + chunk, K)``, so
  a partial last tile never reads the next chunk and an empty chunk runs no iterations;
* float32 accumulation; partials meet in a float32 workspace: ``tl.atomic_add`` into a zeroed one,
  or (``deterministic=True``) one slice per split summed by a second kernel in a fixed order.
  Low-precision results take one cast at the end, never atomics into fp16/bf16.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import triton
import triton.language as tl

import compat
from compat.descriptors import make_descriptor_2d
from kernels import devices, gpu_plan, plan_search, workspace
from kernels.binding import BoundKernel
from kernels.checks import MatmulProblem, check_matmul, trivial_result
from kernels.config import (
    MAX_SPLIT_K,
    TileConfig,
    cdiv,
    choose_split_k,
    ordered_group,
    tile_config,
)
from kernels.dot import dot_acc
from kernels.fused import splitk_fused_kernel
from kernels.launch import (
    LoaderPlan,
    compile_flags,
    interpreted,
    launch_options,
    loader_plan,
    relaxed_atomics,
    target_programs,
)

SUM_BLOCK = 1024


@triton.jit
def splitk_kernel(
    a_ptr, b_ptr, ws_ptr, M, N, K, chunk_k,
    stride_am, stride_ak, stride_bk, stride_bn,
    stride_ws_split, stride_ws_m, stride_ws_n,
    SPLIT_K: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    PRECISION: tl.constexpr, HAS_INPUT_PRECISION: tl.constexpr, UPCAST: tl.constexpr,
    USE_DESC: tl.constexpr, B_KMAJOR: tl.constexpr,
    ATOMIC: tl.constexpr,
):  # fmt: skip
    pid = tl.program_id(0)
    pid_k = pid % SPLIT_K
    pid_mn = pid // SPLIT_K
    num_pid_n = tl.cdiv(N, BLOCK_N)
    pid_m = pid_mn // num_pid_n
    pid_n = pid_mn % num_pid_n

    # Chunk bounds in K elements; k_tiles counts BLOCK_K steps (<= 0 for an empty chunk).
    k_start = pid_k * chunk_k
    k_end = tl.minimum(k_start + chunk_k, K)
    k_tiles = tl.cdiv(k_end - k_start, BLOCK_K)

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
        for i in range(0, k_tiles):
            k = k_start + i * BLOCK_K
            a = a_desc.load([pid_m * BLOCK_M, k])
            # Inline, not a helper: 3.3 cannot pass a descriptor to a jitted function.
            if B_KMAJOR:
                b = tl.trans(b_desc.load([pid_n * BLOCK_N, k]))
            else:
                b = b_desc.load([k, pid_n * BLOCK_N])
            acc = dot_acc(a, b, acc, PRECISION, HAS_INPUT_PRECISION, UPCAST)
    else:
        # Wrap rows/cols onto valid ones (the store mask drops the duplicates).
        rows_in = rows % M
        cols_in = cols % N
        a_ptrs = a_ptr + rows_in[:, None] * stride_am + (k_start + offs_k)[None, :] * stride_ak
        b_ptrs = b_ptr + (k_start + offs_k)[:, None] * stride_bk + cols_in[None, :] * stride_bn
        for i in range(0, k_tiles):
            # Lane j holds coordinate k_start + i*BLOCK_K + j; it is inside the chunk iff
            # j < k_end - k_start - i*BLOCK_K.
            k_left = k_end - k_start - i * BLOCK_K
            a = tl.load(a_ptrs, mask=offs_k[None, :] < k_left, other=0.0)
            b = tl.load(b_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
            acc = dot_acc(a, b, acc, PRECISION, HAS_INPUT_PRECISION, UPCAST)
            a_ptrs += BLOCK_K * stride_ak
            b_ptrs += BLOCK_K * stride_bk

    c_mask = (rows[:, None] < M) & (cols[None, :] < N)
    ws_ptrs = ws_ptr + rows[:, None] * stride_ws_m + cols[None, :] * stride_ws_n
    if ATOMIC:
        tl.atomic_add(ws_ptrs, acc, mask=c_mask)
    else:
        tl.store(ws_ptrs + pid_k * stride_ws_split, acc, mask=c_mask)


@triton.jit
def sum_splits_kernel(ws_ptr, c_ptr, MN, SPLIT_K: tl.constexpr, BLOCK: tl.constexpr):
    """c = sum of the SPLIT_K partial slices, always added in split order (bitwise reproducible)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < MN
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for s in range(0, SPLIT_K):
        acc += tl.load(ws_ptr + s * MN + offs, mask=mask, other=0.0)
    tl.store(c_ptr + offs, acc.to(c_ptr.dtype.element_ty), mask=mask)


@dataclass(frozen=True)
class SplitKPlan:
    """How one call runs: tiles, split, chunk, loader. ``plan_splitk`` makes it without running.

    ``fused`` is the single-launch GPU kernel (``kernels.fused``); ``source`` says where the
    tiles and split came from (``interpreter``, or the GPU table/nearest/default lookup);
    ``product`` is the fused kernel's product form (``kernels.dot.product_acc``).
    """

    config: TileConfig
    split_k: int
    chunk_k: int
    loader: LoaderPlan
    fused: bool = False
    source: str = "interpreter"
    product: str = "dot"

    def grid(self, m: int, n: int) -> tuple[int]:
        return (cdiv(m, self.config.block_m) * cdiv(n, self.config.block_n) * self.split_k,)


def split_k_limit(k: int) -> int:
    """The most splits a call may ask for: ``max(K, MAX_SPLIT_K)``.

    More splits than K elements only add empty programs; unbounded values launched
    ``tiles * split_k`` of them (K = 16 with ``split_k=10**9`` spun for minutes). Up to
    ``MAX_SPLIT_K`` (the planner's own cap) stays allowed on any K, so short-K calls can still
    have empty chunks (the seed notes' cases).
    """
    return max(k, MAX_SPLIT_K)


def _check_split_k(split_k: object, k: int) -> int | None:
    """``split_k`` as given (None: the planner picks); refused outside ``1..split_k_limit(K)``."""
    if split_k is None:
        return None
    if isinstance(split_k, bool) or not isinstance(split_k, int):
        raise TypeError(f"split_k: expected None or an int >= 1, got {split_k!r}")
    if split_k < 1:
        raise ValueError(f"split_k: expected None or an int >= 1, got {split_k}")
    limit = split_k_limit(k)
    if split_k > limit:
        raise ValueError(
            f"split_k: expected at most max(K, MAX_SPLIT_K) = max({k}, {MAX_SPLIT_K}) = {limit}, "
            f"got {split_k}"
        )
    return split_k


def plan_splitk(
    a: torch.Tensor,
    b: torch.Tensor,
    split_k: int | None = None,
    *,
    precision: str = "ieee",
    deterministic: bool = False,
) -> SplitKPlan:
    """The tiles, split and loader ``splitk_matmul(a, b, split_k, ...)`` would use.

    CUDA tensors outside the interpreter take the fused kernel where the tuned table
    (``kernels.gpu_plan``) has an entry for this shape, dtype, layout and mode; everything else
    the classic kernel with ``kernels.config``'s tiles.
    """
    m, k = a.shape
    n = b.shape[1]
    if a.device.type == "cuda" and not interpreted():
        # deterministic=False takes the atomic workspace, tuned for atomic mode where the table
        # has an entry; the ordered mode's tuned tiles otherwise (they are validated for the
        # shape, and atomic mode runs the same main loop). See kernels.fused for the barrier
        # that made atomic mode correct.
        device = devices.current(a.device.index or 0)
        dkey, layout = gpu_plan.dtype_key(a.dtype, precision), gpu_plan.layout_key(b)
        modes = ("ordered",) if deterministic else ("atomic", "ordered")
        for mode in modes:
            choice = gpu_plan.choose(
                device, dkey, layout, mode, m, n, k, target_programs(a.device),
                element_size=a.element_size(),
            )  # fmt: skip
            if choice.tuned:
                break
        if not choice.tuned and split_k is None:
            found = _searched(a, b, device, dkey, layout, modes[0], precision, deterministic)
            choice = found or choice
        # Only configurations timed for this very shape take the fused kernel; everything
        # else keeps the classic kernel below.
        split = _check_split_k(split_k, k) or choice.split_k
        if choice.tuned and split == choice.split_k and gpu_plan.fits_workspace(split, m, n):
            return plan_with(a, b, choice.tile, split, choice.loader, source=choice.source,
                             product=choice.product)  # fmt: skip
    cfg = tile_config(a.device.type, a.element_size())
    split = _check_split_k(split_k, k) or choose_split_k(m, n, k, cfg, target_programs(a.device))
    chunk_k = cdiv(cdiv(max(k, 1), split), cfg.block_k) * cfg.block_k
    source = "interpreter" if a.device.type == "cpu" else "classic: no tuned entry"
    return SplitKPlan(cfg, split, chunk_k, loader_plan(a, b, cfg), source=source)


def plan_with(
    a: torch.Tensor, b: torch.Tensor, tile: TileConfig, split_k: int, loader: str,
    *, source: str = "given", product: str = "dot",
) -> SplitKPlan:  # fmt: skip
    """A fused-kernel plan with these tiles, split and product form; ``loader="descriptor"``
    still falls back to pointers when the inputs break a descriptor rule
    (``kernels.launch.loader_plan``). ``product`` is one of ``gpu_plan.PRODUCTS``."""
    if product not in gpu_plan.PRODUCTS:
        raise ValueError(f"product: expected one of {gpu_plan.PRODUCTS}, got {product!r}")
    k = a.shape[1]
    chunk_k = cdiv(cdiv(max(k, 1), split_k), tile.block_k) * tile.block_k
    if loader == "descriptor":
        lp = loader_plan(a, b, tile)
    else:
        lp = LoaderPlan("pointer", False, f"the plan asks for {loader!r}")
    return SplitKPlan(tile, split_k, chunk_k, lp, fused=True, source=source, product=product)


def _searched(
    a: torch.Tensor, b: torch.Tensor, device: devices.DeviceTraits, dkey: str, layout: str,
    mode: str, precision: str, deterministic: bool,
) -> gpu_plan.GpuChoice | None:  # fmt: skip
    """A configuration timed on first use, where no measured device shares this one's
    architecture (``kernels.plan_search``); None where the search does not apply or is off."""
    if gpu_plan.table_device(device, gpu_plan.load_devices())[0] is not None:
        return None
    m, k = a.shape
    n = b.shape[1]
    table = gpu_plan.load_table()
    options = [
        c for c in plan_search.candidates(table, dkey, layout, mode, m, n, k)
        if c.split_k <= split_k_limit(k) and gpu_plan.fits_workspace(c.split_k, m, n)
    ]  # fmt: skip
    p = check_matmul(a, b, None, precision, interpreted=False)

    def time_us(c: plan_search.Candidate) -> float:
        plan = plan_with(a, b, c.tile(), c.split_k, c.loader, source="search", product=c.product)
        call = bind_plan(a, b, plan, p, precision=precision, deterministic=deterministic)
        return 1e3 * float(triton.testing.do_bench(lambda: call(a, b), warmup=5, rep=20))

    key = f"{dkey}-{layout}-{mode}-{m}x{n}x{k}"
    found = plan_search.search(device, key, options, time_us,
                               capturing=torch.cuda.is_current_stream_capturing())  # fmt: skip
    if found is None:
        return None
    best, why = found
    return gpu_plan.GpuChoice(best.tile(), best.split_k, best.loader, why, best.product)


def splitk_matmul(
    a: torch.Tensor,
    b: torch.Tensor,
    split_k: int | None = None,
    *,
    out_dtype: torch.dtype | None = None,
    precision: str = "ieee",
    deterministic: bool = False,
) -> torch.Tensor:
    """``a @ b`` with K split across programs; float32 accumulation, result in ``out_dtype``.

    >>> import torch, kernels  # doctest: +SKIP
    >>> c = kernels.splitk_matmul(a, b, split_k=4, deterministic=True)  # doctest: +SKIP

    Host time is a large share of a small split-K call, so a call like an earlier one (same
    dtypes, shapes, strides, pointer alignment, devices and options: everything the checks
    and the plan depend on) goes straight to that call's bound launch.
    """
    key: tuple[Any, ...] | None
    try:
        key = (a.dtype, b.dtype, a.device, b.device, a.shape, b.shape, a.stride(), b.stride(),
               a.data_ptr() % 16, b.data_ptr() % 16, out_dtype, precision, deterministic,
               deterministic.__class__, split_k, split_k.__class__, compat.LOADER)  # fmt: skip
        call = _CALLS.get(key)
    except (AttributeError, TypeError):  # not tensors, or an unhashable option: checks say why
        key = call = None
    if call is not None:
        return call(a, b)
    if not isinstance(deterministic, bool):
        raise TypeError(f"deterministic: expected a bool, got {deterministic!r}")
    p = check_matmul(a, b, out_dtype, precision, interpreted=interpreted())
    split_k = _check_split_k(split_k, p.k)
    trivial = trivial_result(p)
    if trivial is not None:
        return trivial
    plan = plan_splitk(a, b, split_k, precision=precision, deterministic=deterministic)
    call = bind_plan(a, b, plan, p, precision=precision, deterministic=deterministic)
    if key is not None:
        _CALLS[key] = call
    return call(a, b)


# Bound launches by call key (see splitk_matmul); bounded by the distinct kinds of call made.
_CALLS: dict[tuple, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {}


def clear_plan_cache() -> None:
    """Forget bound plans (after the tuned table changed, e.g. in the benchmark)."""
    _CALLS.clear()


def run_plan(
    a: torch.Tensor, b: torch.Tensor, plan: SplitKPlan, p: MatmulProblem, *, precision: str,
    deterministic: bool,
) -> torch.Tensor:  # fmt: skip
    """Launch ``plan`` once on checked, non-empty operands (binds it first; callers that launch
    one plan many times keep ``bind_plan``'s result instead)."""
    return bind_plan(a, b, plan, p, precision=precision, deterministic=deterministic)(a, b)


def bind_plan(
    a: torch.Tensor, b: torch.Tensor, plan: SplitKPlan, p: MatmulProblem, *, precision: str,
    deterministic: bool,
) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:  # fmt: skip
    """A callable ``(a, b) -> c`` for operands like these, with everything fixed once."""
    if plan.fused:
        return FusedCall(a, b, plan, p, precision, deterministic)
    return ClassicCall(a, b, plan, p, precision, deterministic)


def _stream_reader(device: torch.device) -> Callable[[int], int] | None:
    """The raw current-stream getter Triton itself launches on (None for the interpreter)."""
    if device.type != "cuda":
        return None
    from triton.runtime import driver

    return driver.active.get_current_stream


class FusedCall:
    """One plan of the single-launch kernel (``kernels.fused``): per call, only the output
    allocation, a read of the current stream, and the launch."""

    VARYING = ("a_ptr", "b_ptr", "c_ptr")

    def __init__(
        self, a: torch.Tensor, b: torch.Tensor, plan: SplitKPlan, p: MatmulProblem,
        precision: str, deterministic: bool,
    ) -> None:  # fmt: skip
        cfg = plan.config
        m, n, k = p.m, p.n, p.k
        self.shape, self.out_dtype, self.device = (m, n), p.out_dtype, p.device
        self.index = p.device.index if p.device.index is not None else 0
        single = plan.split_k == 1
        # deterministic=False takes the atomic workspace (ORDERED=False). It was off while its
        # fp16/bf16 sums were intermittently wrong; the cause was a missing barrier between
        # the workspace load and the zero store (kernels.fused, issue 13).
        self.ordered = ordered = deterministic and not single
        # Ordered mode sums in groups of ordered_group(split_k) splits (kernels.fused): a
        # counter per (tile, group) after the tile counters, and past one group a slot per
        # group after the slices.
        groups = cdiv(plan.split_k, ordered_group(plan.split_k)) if ordered else 0
        slots = groups if groups > 1 else 0
        tiles = cdiv(m, cfg.block_m) * cdiv(n, cfg.block_n)
        self.sizes = (0 if (single or ordered) else m * n, tiles * (1 + groups),
                      (plan.split_k + slots) * m * n if ordered else 0)  # fmt: skip
        self._stream = _stream_reader(p.device)
        self.stream = self._stream(self.index) if self._stream else None
        s = workspace.scratch(p.device, *self.sizes, stream=self.stream)
        even_k = k % cfg.block_k == 0 and plan.chunk_k % cfg.block_k == 0
        args = dict(
            a_ptr=a, b_ptr=b, c_ptr=None, ws_ptr=s.slices if ordered else s.ws,
            lock_ptr=s.locks, M=m, N=n, K=k, chunk_k=plan.chunk_k, split_k=plan.split_k,
            stride_am=a.stride(0), stride_ak=a.stride(1), stride_bk=b.stride(0),
            stride_bn=b.stride(1), stride_cm=n, stride_cn=1,
            BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, BLOCK_K=cfg.block_k,
            PRECISION=precision, PRODUCT=plan.product,
            USE_DESC=plan.loader.loader == "descriptor", B_KMAJOR=plan.loader.b_kmajor,
            EVEN_M=m % cfg.block_m == 0, EVEN_N=n % cfg.block_n == 0, EVEN_K=even_k,
            SINGLE=single, ORDERED=ordered, RELAXED=relaxed_atomics(), FENCE=not interpreted(),
            **compile_flags(a.dtype),
        )  # fmt: skip
        self.kernel = BoundKernel(
            splitk_fused_kernel, plan.grid(m, n), args,
            launch_options(p.device, cfg, plan.loader), self.VARYING,
        )  # fmt: skip

    def _rebind_stream(self, stream: int | None) -> None:
        """Another stream: its own counters and workspace (two streams must not share them)."""
        s = workspace.scratch(self.device, *self.sizes, stream=stream)
        self.kernel.rebind(ws_ptr=s.slices if self.ordered else s.ws, lock_ptr=s.locks)
        self.stream = stream

    def __call__(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        c = torch.empty(self.shape, dtype=self.out_dtype, device=self.device)
        stream = self._stream(self.index) if self._stream else None
        if stream != self.stream:
            self._rebind_stream(stream)
        self.kernel(stream, a, b, c)
        return c


class ClassicCall:
    """One plan of the classic kernel (interpreter, and GPU shapes the table lacks): a float32
    workspace per call, then a cast (atomic) or an ordered summing launch (deterministic)."""

    def __init__(
        self, a: torch.Tensor, b: torch.Tensor, plan: SplitKPlan, p: MatmulProblem,
        precision: str, deterministic: bool,
    ) -> None:  # fmt: skip
        cfg = plan.config
        m, n = p.m, p.n
        self.deterministic, self.split_k = deterministic, plan.split_k
        self.shape, self.out_dtype, self.device = (m, n), p.out_dtype, p.device
        self._stream = _stream_reader(p.device)
        self.index = p.device.index if p.device.index is not None else 0
        splits = plan.split_k if deterministic else 1
        self.ws_shape = (splits, m, n)
        args = dict(
            a_ptr=a, b_ptr=b, ws_ptr=None, M=m, N=n, K=p.k, chunk_k=plan.chunk_k,
            stride_am=a.stride(0), stride_ak=a.stride(1), stride_bk=b.stride(0),
            stride_bn=b.stride(1), stride_ws_split=m * n, stride_ws_m=n, stride_ws_n=1,
            SPLIT_K=plan.split_k, BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n,
            BLOCK_K=cfg.block_k, PRECISION=precision,
            USE_DESC=plan.loader.loader == "descriptor", B_KMAJOR=plan.loader.b_kmajor,
            ATOMIC=not deterministic, **compile_flags(a.dtype),
        )  # fmt: skip
        opts = launch_options(p.device, cfg, plan.loader)
        self.kernel = BoundKernel(
            splitk_kernel, plan.grid(m, n), args, opts, ("a_ptr", "b_ptr", "ws_ptr")
        )
        mn = m * n
        self.sum = BoundKernel(
            sum_splits_kernel, (cdiv(mn, SUM_BLOCK),),
            dict(ws_ptr=None, c_ptr=None, MN=mn, SPLIT_K=plan.split_k, BLOCK=SUM_BLOCK),
            {"num_warps": 4} if p.device.type == "cuda" else {}, ("ws_ptr", "c_ptr"),
        )  # fmt: skip

    def __call__(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        stream = self._stream(self.index) if self._stream else None
        if not self.deterministic:
            ws = torch.zeros(self.ws_shape, dtype=torch.float32, device=self.device)
            self.kernel(stream, a, b, ws)
            out = ws[0]
            return out if self.out_dtype == torch.float32 else out.to(self.out_dtype)
        ws = torch.empty(self.ws_shape, dtype=torch.float32, device=self.device)
        self.kernel(stream, a, b, ws)
        c = torch.empty(self.shape, dtype=self.out_dtype, device=self.device)
        self.sum(stream, ws, c)
        return c
