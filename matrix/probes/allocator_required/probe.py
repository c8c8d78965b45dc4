"""Whether an in-kernel tensor descriptor needs ``triton.set_allocator`` on this GPU and release.

A kernel that builds a descriptor in-kernel may need global scratch for it, which the launcher
asks the host for through the allocator ``triton.set_allocator`` installs. This probe launches
such a kernel first with no allocator installed, in a fresh Python process (the probe runner's
child may already have imported ``compat``, which installs one), then here with a torch-backed
one, and checks the numbers each time.

Status: ``required`` (the launch without one raised, with one it worked), ``not-required``
(worked without one), ``absent`` (no in-kernel constructor, or no ``set_allocator``), ``broken``
(failed even with an allocator, or wrong numbers).
"""

import json
import subprocess
import sys
from typing import Any

import triton
import triton.language as tl

from matrix.probes.support.base import Context, Observation, attempt, cause_text

# Old releases resolve every tl.<name> a kernel mentions, even in dead branches: one definition
# per spelling, chosen here (as compat.descriptors does, without importing compat).
if callable(getattr(tl, "make_tensor_descriptor", None)):
    CONSTRUCTOR: str | None = "tl.make_tensor_descriptor"

    @triton.jit
    def _copy_tile(src, dst, R, C, BLOCK: tl.constexpr):
        desc = tl.make_tensor_descriptor(src, shape=[R, C], strides=[C, 1],
                                         block_shape=[BLOCK, BLOCK])  # fmt: skip
        offs = tl.arange(0, BLOCK)
        tl.store(dst + offs[:, None] * BLOCK + offs[None, :], desc.load([0, 0]))

elif callable(getattr(tl, "_experimental_make_tensor_descriptor", None)):
    CONSTRUCTOR = "tl._experimental_make_tensor_descriptor"

    @triton.jit
    def _copy_tile(src, dst, R, C, BLOCK: tl.constexpr):
        desc = tl._experimental_make_tensor_descriptor(
            src, shape=[R, C], strides=[C, 1], block_shape=[BLOCK, BLOCK]
        )
        offs = tl.arange(0, BLOCK)
        tl.store(dst + offs[:, None] * BLOCK + offs[None, :], desc.load([0, 0]))

else:
    CONSTRUCTOR = None
    _copy_tile = None


def observe(ctx: Context) -> Observation:
    import torch

    set_allocator = getattr(triton, "set_allocator", None)
    if CONSTRUCTOR is None:
        return Observation("absent", "no in-kernel tensor-descriptor constructor")
    block = 16
    src = torch.randn(block, block, device=ctx.device)
    data: dict = {"constructor": CONSTRUCTOR, "set_allocator": set_allocator is not None}

    bare = _run_bare(ctx.device)
    data["without"] = bare
    if "error" not in bare:
        status = "not-required" if bare["correct"] else "broken"
        return Observation(status, f"ran with no allocator set; correct={bare['correct']}", data)
    if set_allocator is None:
        return Observation("absent", f"raised with no allocator, and there is no "
                           f"triton.set_allocator: {bare['error']}", data)  # fmt: skip
    set_allocator(lambda size, alignment, stream: torch.empty(size, dtype=torch.int8,
                                                              device=ctx.device))  # fmt: skip
    fixed = attempt(lambda: _copies_exactly(src, ctx.device))
    data["with"] = fixed.exception_text() if fixed.raised else {"correct": fixed.value}
    if fixed.raised or not fixed.value:
        return Observation("broken", f"failed even with an allocator: {data['with']}", data)
    return Observation(
        "required", f"without an allocator: {bare['error']}; with one: correct", data
    )


def _copies_exactly(src: Any, device: str) -> bool:
    """One launch of the descriptor copy into a NaN-filled square tile: is it ``src`` exactly?"""
    import torch

    block = src.shape[0]
    dst = torch.full((block, block), float("nan"), device=device)
    _copy_tile[(1,)](src, dst, block, block, BLOCK=block)
    if device == "cuda":
        torch.cuda.synchronize()
    return bool(torch.equal(dst, src))


def _run_bare(device: str) -> dict:
    """Launch once in a fresh process with no allocator: ``{"correct": bool}`` or ``{"error"}``."""
    out = subprocess.run(
        [sys.executable, "-m", "matrix.probes.allocator_required", device],
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    lines = out.stdout.strip().splitlines()
    if out.returncode != 0 or not lines:
        return {"error": f"child exited {out.returncode}: {out.stderr.strip()[-500:]}"}
    return json.loads(lines[-1])


def _bare_main(device: str) -> None:
    import torch

    block = 16
    src = torch.randn(block, block, device=device)
    res = attempt(lambda: _copies_exactly(src, device))
    print(json.dumps({"error": cause_text(res.exception)} if res.exception is not None else
                     {"correct": res.value}))  # fmt: skip


if __name__ == "__main__":
    _bare_main(sys.argv[1])
