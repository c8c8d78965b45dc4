"""Shared by the descriptor alignment probes: run the padded load on a broken layout, classify."""

from __future__ import annotations

from matrix.probes.support.base import Context, Observation, attempt, cause_text


def classify_rejection(e: BaseException, step: str, backend: str, data: dict) -> Observation:
    """Where a broken layout was refused: at compile time, by the host, or while running.

    The interpreter runs the kernel inside the launch call, so its refusals are run time.
    """
    text = cause_text(e)
    data = {**data, "exception": text, "raised_during": step}
    if step == "device" or backend == "interpret":
        return Observation("rejected-runtime", text, data)
    if "Compilation" in type(e).__name__:
        return Observation("rejected-compile", text, data)
    return Observation("rejected-host", text, data)


def misaligned_case(ctx: Context, base_offset: int, row_stride: int, what: str) -> Observation:
    import torch
    import triton.language as tl

    from compat import trials
    from compat.features import find_descriptor_constructor

    found = find_descriptor_constructor(tl)
    if found is None:
        return Observation("skipped", "no in-kernel tensor-descriptor constructor on this release")
    rows, block = 12, 8
    storage = torch.randn(rows, row_stride + base_offset, device=ctx.device)
    src = storage[:, base_offset:]
    dst = torch.full((block, block), float("nan"), device=ctx.device)
    if ctx.device == "cuda":
        from compat.allocator import ensure_allocator

        ensure_allocator()

    phase = {"step": "launch"}  # which step raised: compiling/launching, or the device run

    def launch() -> None:
        trials._padded_load[(1,)](src, dst, rows, 12, src.stride(0), BLOCK=block)
        if ctx.device == "cuda":
            phase["step"] = "device"
            torch.cuda.synchronize()

    outcome = attempt(launch)
    data = {"layout": what, "base_mod_16": src.data_ptr() % 16,
            "row_stride_bytes": src.stride(0) * 4, "warnings": outcome.warning_texts()}  # fmt: skip
    if outcome.exception is not None:
        return classify_rejection(outcome.exception, phase["step"], ctx.backend, data)
    expected = torch.zeros(block, block, device=ctx.device)
    expected[: rows - block, : 12 - block] = src[block:rows, block:12]
    data["correct"] = bool(torch.equal(dst, expected))
    verdict = "numbers right" if data["correct"] else "numbers WRONG"
    return Observation("accepted", f"{what}: ran silently, {verdict}", data)
