"""How far a float32 ``tl.dot`` with no ``input_precision`` is from ``"ieee"`` and ``"tf32x3"``.

``dot_f32_default_precision`` says which precision the default matches, on one 32x32 tile.
This probe measures what that costs: a 64x64 tile accumulated over K = 4096 (64 dots into one
float32 accumulator), run with the default and with each explicit precision on the same data.
Data: each variant's relative error against a float64 product, the default's error over the
ieee one's, and the largest element-wise difference between the default and "ieee"/"tf32x3".
Status: the explicit precision whose numbers the default matches bit for bit; if none, the one
with the nearest error (``near-<name>``); ``unknown`` if no explicit variant ran.
"""

import triton
import triton.language as tl

from matrix.probes.support.base import Context, Observation, attempt, first_line

BLOCK = 64
K = 4096
PRECISIONS = ("ieee", "tf32", "tf32x3")


# The PRECISION that passes no input_precision at all: what the release does by default. The
# kernel spells the string out: a plain global cannot be read inside a kernel on every release.
DEFAULT = "default"


@triton.jit
def _dot(a, b, c, K, BLOCK: tl.constexpr, BK: tl.constexpr, PRECISION: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    offs_k = tl.arange(0, BK)
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for k in range(0, K, BK):
        x = tl.load(a + offs[:, None] * K + (k + offs_k)[None, :])
        y = tl.load(b + (k + offs_k)[:, None] * BLOCK + offs[None, :])
        # A constexpr branch: the default variant's code never mentions input_precision.
        if PRECISION == "default":
            acc += tl.dot(x, y)
        else:
            acc += tl.dot(x, y, input_precision=PRECISION)
    tl.store(c + offs[:, None] * BLOCK + offs[None, :], acc)


def observe(ctx: Context) -> Observation:
    import torch

    gen = torch.Generator().manual_seed(23)
    a = torch.randn(BLOCK, K, generator=gen).to(ctx.device)
    b = (torch.rand(K, BLOCK, generator=gen) * 2 - 0.5).to(ctx.device)
    ref = a.double() @ b.double()
    out: dict[str, torch.Tensor | str] = {}  # the output, or why it is unavailable
    c = torch.full((BLOCK, BLOCK), float("nan"), device=ctx.device)
    _dot[(1,)](a, b, c, K, BLOCK=BLOCK, BK=32, PRECISION=DEFAULT)
    out["default"] = c
    for p in PRECISIONS:
        c = torch.full((BLOCK, BLOCK), float("nan"), device=ctx.device)

        # A precision this release lacks is recorded as such; attempt() raises what fails
        # outside Triton (gcc building the launcher) instead of calling it "unavailable".
        def launch(c: torch.Tensor = c, p: str = p) -> None:  # a def: mypy types no lambda=
            _dot[(1,)](a, b, c, K, BLOCK=BLOCK, BK=32, PRECISION=p)

        done = attempt(launch)
        out[p] = first_line(done.exception_text()) if done.raised else c
    torch.cuda.synchronize() if ctx.device == "cuda" else None
    ran = {k: v for k, v in out.items() if not isinstance(v, str)}
    errors = {k: float((v.double() - ref).norm() / ref.norm()) for k, v in ran.items()}
    data = {
        "rel_err": errors,
        "unavailable": {k: v for k, v in out.items() if isinstance(v, str)},
        "shape": [BLOCK, BLOCK, K],
        "default_over_ieee": errors["default"] / errors["ieee"] if "ieee" in errors else None,
        "max_abs_diff": {
            p: float((ran["default"] - ran[p]).abs().max()) for p in ("ieee", "tf32x3") if p in ran
        },
    }
    same = [p for p in PRECISIONS if p in ran and torch.equal(ran[p], ran["default"])]
    if same:
        status = same[0]
    elif len(ran) > 1:
        near = min((p for p in PRECISIONS if p in ran),
                   key=lambda p: abs(errors[p] - errors["default"]))  # fmt: skip
        status = f"near-{near}"
    else:
        status = "unknown"
    errs = ", ".join(f"{k} {v:.2e}" for k, v in errors.items())
    return Observation(status, f"default matches {same or 'none'}; rel. errors: {errs}", data)
