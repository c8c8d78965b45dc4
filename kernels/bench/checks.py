"""Correctness before timing: fresh inputs, a poisoned output, a float64 reference, and the
tolerance ``kernels.numerics.library_tolerance`` builds from cuBLAS's error on the same inputs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kernels.bench.impls import Fn, cublas_mode
from kernels.bench.suite import Case


def torch_dtype(name: str):
    import torch

    return {"fp16": torch.float16, "bf16": torch.bfloat16}.get(name, torch.float32)


@dataclass
class Operands:
    a: Any
    b: Any
    ref: Any  # float64 product, on the device


def make_operands(case: Case, seed: int) -> Operands:
    """Fresh random inputs (never zeros); b in the case's layout; the float64 reference."""
    import torch

    gen = torch.Generator(device="cuda").manual_seed(seed)
    dt = torch_dtype(case.dtype)
    a = torch.randn(case.m, case.k, device="cuda", generator=gen).to(dt)
    if case.layout == "kn":
        b = (torch.rand(case.k, case.n, device="cuda", generator=gen) * 2 - 0.5).to(dt)
    else:
        w = (torch.rand(case.n, case.k, device="cuda", generator=gen) * 2 - 0.5).to(dt)
        b = w.t()
    ref = a.double() @ b.double()
    return Operands(a, b, ref)


class poisoned_empty:
    """Every floating torch.empty inside starts as NaN: an unwritten element shows."""

    def __enter__(self):
        import torch

        self.real = torch.empty

        def nan_empty(*args, **kwargs):
            t = self.real(*args, **kwargs)
            if t.is_floating_point():
                t.fill_(float("nan"))
            return t

        torch.empty = nan_empty

    def __exit__(self, *exc):
        import torch

        torch.empty = self.real


def check(case: Case, fn: Fn, ops: Operands, tol: float) -> dict[str, Any]:
    import torch

    from kernels.numerics import rel_err

    with cublas_mode(case), poisoned_empty():
        c = fn(ops.a, ops.b)
    torch.cuda.synchronize()
    nan = int(torch.isnan(c.float()).sum())
    err = rel_err(c, ops.ref)
    return {"rel_err": err, "tolerance": tol, "unwritten": nan,
            "ok": nan == 0 and err <= tol and c.dtype == ops.a.dtype}  # fmt: skip


def tolerance(case: Case, ops: Operands) -> float:
    """``library_tolerance`` of cuBLAS's error on these inputs, in the case's precision."""
    import torch

    from kernels.numerics import library_tolerance, rel_err

    with cublas_mode(case):
        err = rel_err(torch.matmul(ops.a, ops.b), ops.ref)
    return library_tolerance(err, case.k, ops.a.dtype)


def guard_evidence() -> dict[str, Any]:
    """Misaligned inputs with the descriptor loader on: the plan must take pointers, numbers
    must be right (the host-side refusal the probes' silent-wrong result calls for)."""
    import torch

    import compat
    from kernels import numerics, splitk
    from kernels.checks import check_matmul

    saved = compat.LOADER
    compat.LOADER = "descriptor"
    out = {}
    try:
        base = torch.randn(64, 4096 + 8, device="cuda")
        cases = {
            "a base 4 bytes off": (base[:, 1:4097], torch.randn(4096, 64, device="cuda")),
            "b row stride 52 bytes": (
                torch.randn(64, 4096, device="cuda"),
                torch.randn(4096, 13, device="cuda"),
            ),
        }
        for name, (a, b) in cases.items():
            plan = splitk.plan_with(a, b, splitk.TileConfig(64, 64, 64, 4, 3), 4, "descriptor")
            p = check_matmul(a, b, None, "ieee", interpreted=False)
            c = splitk.run_plan(a, b, plan, p, precision="ieee", deterministic=False)
            ref = a.double() @ b.double()
            out[name] = {"loader": plan.loader.loader, "reason": plan.loader.reason,
                         "rel_err": numerics.rel_err(c, ref)}  # fmt: skip
    finally:
        compat.LOADER = saved
    return out
