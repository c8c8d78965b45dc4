"""How the kernel tests and the numerics probes judge numbers: float64 reference, relative
Frobenius error, and a
tolerance built from measurement and the output format, never a guess.

* accumulation noise: the error torch's own float32 matmul makes on the same (rounded) inputs,
  times a small factor for a different summation order (split-K sums in another order);
* output rounding: a result stored as float16/bfloat16 is off by at most the format's unit
  roundoff per element (2^-11, 2^-8), or twice that where the backend truncates instead of
  rounding (the interpreter's bfloat16 conversion was measured to do so);
* a floor of 1e-6 so that a lucky exact torch result does not make the bound zero.

A dropped K tile or a wrong mask moves the error to 1e-2 or more, orders above these bounds;
``test_tolerance_catches_a_dropped_tile`` checks that.

Imported by tests, probes and the benchmark (it needs torch); the report and gate never import
it. The benchmark's own bound, against cuBLAS on the GPU, is ``library_tolerance``.
"""

import torch

UNIT_ROUNDOFF = {torch.float32: 2.0**-24, torch.float16: 2.0**-11, torch.bfloat16: 2.0**-8}
ORDER_FACTOR = 8.0
FLOOR = 1e-6


def rel_err(c: torch.Tensor, ref: torch.Tensor) -> float:
    """``||c - ref|| / ||ref||`` (Frobenius) in float64, on ``ref``'s device."""
    ref = ref.double()
    diff = (c.to(device=ref.device, dtype=torch.float64) - ref).norm()
    return float(diff / ref.norm()) if ref.norm() > 0 else float(diff)


def reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a.double().cpu() @ b.double().cpu()


def output_rounding(out_dtype: torch.dtype) -> float:
    """The error a float16/bfloat16 result may add by its storage alone (2 unit roundoffs:
    truncating backends); none for float32, whose rounding the accumulation term covers."""
    return 2 * UNIT_ROUNDOFF[out_dtype] if out_dtype != torch.float32 else 0.0


def tolerance(a: torch.Tensor, b: torch.Tensor, out_dtype: torch.dtype) -> float:
    ref = reference(a, b)
    # torch's float32 product computed on the CPU, with TF32 never involved.
    torch_err = rel_err(a.float().cpu() @ b.float().cpu(), ref.cpu())
    return max(ORDER_FACTOR * torch_err, FLOOR) + output_rounding(out_dtype)


# The GPU benchmark's bound: the library (cuBLAS) is the measured accumulation noise there, in
# the same precision as the kernel (TF32 for the tf32 cases), so float32 products on the CPU
# would be the wrong yardstick.
LIBRARY_FACTOR = 4.0
LIBRARY_FLOOR = 1e-7


def library_tolerance(library_err: float, k: int, out_dtype: torch.dtype) -> float:
    """``LIBRARY_FACTOR`` x the library's own error on the same inputs, or a float32 sum over K
    in one sequence (``2 sqrt(K) u``: the library splits K, a one-split kernel does not),
    whichever is larger, plus output rounding. A dropped K chunk costs 1e-2 or more."""
    sequential = 2 * k**0.5 * UNIT_ROUNDOFF[torch.float32]
    accumulation = max(LIBRARY_FACTOR * max(library_err, LIBRARY_FLOOR), sequential)
    return accumulation + output_rounding(out_dtype)


def random_operands(m: int, n: int, k: int, dtype: torch.dtype, seed: int, device: str = "cpu"):
    """Fresh, non-symmetric, non-constant data (a and b drawn independently)."""
    gen = torch.Generator().manual_seed(seed)
    a = torch.randn(m, k, generator=gen).to(dtype)
    b = (torch.rand(k, n, generator=gen) * 2 - 0.5).to(dtype)
    return a.to(device), b.to(device)
