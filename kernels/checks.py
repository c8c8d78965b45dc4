"""Input checks shared by the matmul wrappers: each error names the argument and what was wanted."""

from __future__ import annotations

from dataclasses import dataclass

import torch

SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
PRECISIONS = ("ieee", "tf32", "tf32x3")


class DeviceError(RuntimeError):
    """The tensors' device cannot run these kernels in this process (e.g. CPU without the
    interpreter)."""


@dataclass(frozen=True)
class MatmulProblem:
    """Validated ``a @ b``: shapes, dtypes and where it runs."""

    m: int
    n: int
    k: int
    in_dtype: torch.dtype
    out_dtype: torch.dtype
    device: torch.device


def trivial_result(p: MatmulProblem) -> torch.Tensor | None:
    """The result of an empty product, with no launch: empty for M or N = 0, zeros for K = 0."""
    if p.m == 0 or p.n == 0:
        return torch.empty((p.m, p.n), dtype=p.out_dtype, device=p.device)
    if p.k == 0:
        return torch.zeros((p.m, p.n), dtype=p.out_dtype, device=p.device)
    return None


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def check_matmul(
    a: object, b: object, out_dtype: object, precision: object, *, interpreted: bool
) -> MatmulProblem:
    """Validate the operands of ``a @ b``; raise TypeError/ValueError naming the culprit."""
    for name, t in (("a", a), ("b", b)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name}: expected a torch.Tensor, got {type(t).__name__}")
    assert isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)
    for name, t in (("a", a), ("b", b)):
        if t.ndim != 2:
            raise ValueError(
                f"{name}: expected a 2-D tensor, got {t.ndim}-D of shape {tuple(t.shape)}"
            )
        if t.dtype not in SUPPORTED_DTYPES:
            raise TypeError(
                f"{name}.dtype: expected one of float16, bfloat16, float32, "
                f"got {_dtype_name(t.dtype)}"
            )
    if a.dtype != b.dtype:
        raise TypeError(
            "a and b must have the same dtype, "
            f"got a={_dtype_name(a.dtype)}, b={_dtype_name(b.dtype)}"
        )
    if a.shape[1] != b.shape[0]:
        raise ValueError(
            f"shape mismatch: a is {tuple(a.shape)} and b is {tuple(b.shape)}; "
            f"expected a.shape[1] == b.shape[0]"
        )
    if a.device != b.device:
        raise ValueError(f"a and b must be on one device, got a on {a.device}, b on {b.device}")
    if out_dtype is None:
        out = a.dtype
    elif out_dtype in SUPPORTED_DTYPES:
        out = out_dtype
    else:
        raise TypeError(
            f"out_dtype: expected None, float16, bfloat16 or float32, got {out_dtype!r}"
        )
    if precision not in PRECISIONS:
        raise ValueError(f"precision: expected one of {PRECISIONS}, got {precision!r}")
    if a.device.type == "cpu" and not interpreted:
        raise DeviceError(
            "a and b are CPU tensors, which need the Triton interpreter: set TRITON_INTERPRET=1 "
            "before importing kernels (or move the tensors to a CUDA device)"
        )
    if a.device.type not in ("cpu", "cuda"):
        raise DeviceError(f"a.device: expected a CPU or CUDA tensor, got {a.device}")
    assert isinstance(out, torch.dtype)
    return MatmulProblem(a.shape[0], b.shape[1], a.shape[1], a.dtype, out, a.device)
