"""Shared by the two default-precision probes: compile or run a float32 ``tl.dot`` with no
``input_precision`` and report what it got, with TTIR and assembly evidence."""

import os

import triton
import triton.language as tl

from matrix.probes.support.base import (
    Context,
    Observation,
    Pointer,
    attempt,
    exercise,
    first_line,
)
from matrix.probes.support.precision_evidence import asm_instructions, dot_line, ttir_precision

BLOCK = 32


@triton.jit
def load_square(ptr, BLOCK: tl.constexpr):
    """The row-major BLOCK x BLOCK tile at ``ptr``."""
    offs = tl.arange(0, BLOCK)
    return tl.load(ptr + offs[:, None] * BLOCK + offs[None, :])


@triton.jit
def store_square(ptr, value, BLOCK: tl.constexpr):
    """``value`` into the row-major BLOCK x BLOCK tile at ``ptr``."""
    offs = tl.arange(0, BLOCK)
    tl.store(ptr + offs[:, None] * BLOCK + offs[None, :], value)


@triton.jit
def f32_dot_default(a, b, c, BLOCK: tl.constexpr):
    x, y = load_square(a, BLOCK), load_square(b, BLOCK)
    store_square(c, tl.dot(x, y), BLOCK)


@triton.jit
def f32_dot_explicit(a, b, c, BLOCK: tl.constexpr, PRECISION: tl.constexpr):
    x, y = load_square(a, BLOCK), load_square(b, BLOCK)
    store_square(c, tl.dot(x, y, input_precision=PRECISION), BLOCK)


def observe_default_precision(ctx: Context) -> Observation:
    env = {"TRITON_F32_DEFAULT": os.environ.get("TRITON_F32_DEFAULT")}
    if ctx.backend == "aot":
        t = Pointer("fp32")  # no torch: the env probe's child imports nothing else
        # A missing compile tool never gets here: attempt() raises it as CannotObserve (skipped).
        out = exercise(ctx, f32_dot_default, {"a": t, "b": t, "c": t}, {"BLOCK": BLOCK})
        if out.exception is not None:
            raise out.exception  # a float32 dot that does not compile is a broken probe
        ir = out.value.ir
        return classify_precision(ir.get("ttir", ""), ir.get("ptx") or ir.get("amdgcn") or "",
                                  env)  # fmt: skip
    return _measure_on_gpu(ctx, env)


def classify_precision(ttir: str, asm: str, env: dict) -> Observation:
    """Status from the TTIR attribute, with the assembly's instruction counts as evidence."""
    status = ttir_precision(ttir)
    if status is None:
        return Observation("error", "no tt.dot in the TTIR", {"ttir": ttir[-2000:]})
    counts = asm_instructions(asm)
    seen = ", ".join(f"{k}={v}" for k, v in counts.items() if v) or "no MMA/FMA found"
    return Observation(
        status,
        f"TTIR: {dot_line(ttir)}; asm: {seen}",
        {"ttir_dot": dot_line(ttir), "asm_counts": counts, "env": env},
    )


def _measure_on_gpu(ctx: Context, env: dict) -> Observation:
    """On hardware: which explicit precision the default's numbers match, bit for bit."""
    import torch

    gen = torch.Generator().manual_seed(5)
    a = torch.randn(BLOCK, BLOCK, generator=gen).to(ctx.device)
    b = torch.randn(BLOCK, BLOCK, generator=gen).to(ctx.device)
    ref = (a.double() @ b.double()).cpu()
    results: dict[str, torch.Tensor | str] = {}  # the output, or why it is unavailable
    c = torch.full_like(a, float("nan"))
    f32_dot_default[(1,)](a, b, c, BLOCK=BLOCK)
    results["default"] = c.clone()
    for p in ("ieee", "tf32", "tf32x3"):
        c = torch.full_like(a, float("nan"))

        # A precision this release lacks is recorded as such; attempt() raises what fails
        # outside Triton (gcc building the launcher) instead of calling it "unavailable".
        def launch(c: torch.Tensor = c, p: str = p) -> None:  # a def: mypy types no lambda=
            f32_dot_explicit[(1,)](a, b, c, BLOCK=BLOCK, PRECISION=p)

        done = attempt(launch)
        results[p] = first_line(done.exception_text()) if done.raised else c.clone()
    torch.cuda.synchronize()
    errors = {
        k: (float((v.double().cpu() - ref).norm() / ref.norm()) if not isinstance(v, str) else v)
        for k, v in results.items()
    }
    default = results["default"]
    same = [
        p
        for p in ("ieee", "tf32", "tf32x3")
        if isinstance(r := results[p], torch.Tensor)
        and isinstance(default, torch.Tensor)
        and torch.equal(r, default)
    ]
    status = same[0] if same else "unknown"
    return Observation(
        status,
        f"default matches {same or 'none'} bit for bit; rel. errors {errors}",
        {"rel_err": errors, "matches": same, "env": env},
    )
