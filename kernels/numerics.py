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

Imported by tests and probes only (it needs torch); the report and gate never import it.
"""

import torch

UNIT_ROUNDOFF = {torch.float32: 2.0**-24, torch.float16: 2.0**-11, torch.bfloat16: 2.0**-8}
ORDER_FACTOR = 8.0
FLOOR = 1e-6


def rel_err(c: torch.Tensor, ref: torch.Tensor) -> float:
    diff = (c.double().cpu() - ref.cpu()).norm()
    return float(diff / ref.norm()) if ref.norm() > 0 else float(diff)


def reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a.double().cpu() @ b.double().cpu()


def tolerance(a: torch.Tensor, b: torch.Tensor, out_dtype: torch.dtype) -> float:
    ref = reference(a, b)
    # torch's float32 product computed on the CPU, with TF32 never involved.
    torch_err = rel_err(a.float().cpu() @ b.float().cpu(), ref.cpu())
    rounding = 2 * UNIT_ROUNDOFF[out_dtype] if out_dtype != torch.float32 else 0.0
    return max(ORDER_FACTOR * torch_err, FLOOR) + rounding


def random_operands(m: int, n: int, k: int, dtype: torch.dtype, seed: int, device: str = "cpu"):
    """Fresh, non-symmetric, non-constant data (a and b drawn independently)."""
    gen = torch.Generator().manual_seed(seed)
    a = torch.randn(m, k, generator=gen).to(dtype)
    b = (torch.rand(k, n, generator=gen) * 2 - 0.5).to(dtype)
    return a.to(device), b.to(device)
