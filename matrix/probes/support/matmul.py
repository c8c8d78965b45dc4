"""Shared by the ``splitk`` and ``tiled`` probes: the seed cases, judged like the test suite."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from matrix.probes.support.base import Context, Observation, attempt, exercise, first_line

# The seed notes' cases (M != N, neither a block multiple): K = 200 gives a partial tile in a
# chunk, K = 40 and K = 10 give short and empty chunks (4 splits, 2 and 1 K tiles).
SEED_CASES = ((37, 53, 200, 4), (37, 53, 40, 4), (33, 65, 10, 4))
DTYPES = ("float32", "float16", "bfloat16")


def numerics(
    ctx: Context,
    run: Callable[[Any, Any, int, bool], Any],
    modes: tuple[bool, ...],
    *,
    split: bool = True,
):
    """Run every seed case, dtype and mode; ``fail`` on the first wrong or raising case, with the
    worst relative error seen and the case it came from in the data. ``split=False`` (the tiled
    kernel, which has no split-K) names a case by dtype and shape alone."""
    import torch

    from kernels.numerics import random_operands, reference, rel_err, tolerance

    worst: dict[str, Any] = {"rel_err": 0.0}
    checked = 0
    for seed, (m, n, k, split_k) in enumerate(SEED_CASES):
        for dtype_name in DTYPES:
            dtype = getattr(torch, dtype_name)
            for deterministic in modes:
                case = f"{dtype_name} {m}x{n}x{k}"
                if split:
                    case += f" split_k={split_k} deterministic={deterministic}"
                a, b = random_operands(m, n, k, dtype, seed=1000 + seed, device=ctx.device)

                def call(
                    a: torch.Tensor = a, b: torch.Tensor = b, d: bool = deterministic,
                    s: int = split_k,
                ) -> Any:  # fmt: skip
                    return run(a, b, s, d)  # a def: mypy types no lambda with defaults

                out = attempt(call)
                if out.raised:
                    return Observation("fail", f"{case}: raised {out.exception_text()}",
                                       {"case": case, "checked": checked})  # fmt: skip
                c = out.value
                unwritten = int(torch.isnan(c.float()).sum())
                err, tol = rel_err(c, reference(a, b)), tolerance(a, b, dtype)
                checked += 1
                if err > worst["rel_err"] or unwritten:
                    worst = {"rel_err": err, "tolerance": tol, "case": case}
                if unwritten or not err <= tol:
                    return Observation(
                        "fail",
                        f"{case}: relative error {err:.3e} > tolerance {tol:.3e}"
                        + (f", {unwritten} unwritten (NaN) elements" if unwritten else ""),
                        {**worst, "unwritten": unwritten, "checked": checked},
                    )
    return Observation(
        "pass",
        f"{checked} cases within tolerance; worst {worst['rel_err']:.2e} ({worst['case']})",
        {**worst, "checked": checked},
    )


def compile_variants(ctx: Context, variants: dict[str, tuple[Any, dict, dict]]):
    """Compile each variant (kernel, launch args, constexprs) for ``ctx.target``.

    ``pass`` needs the pointer variant to compile. The descriptor variant must compile too
    wherever ``compat``'s own descriptor trial kernel compiles for the target (there compat
    would pick descriptors); where that trial does not compile, compat falls back to pointers,
    so the variant's failure is recorded as evidence, not as a kernel failure.
    Evidence: per variant, the matrix instructions seen in the assembly.
    """
    data: dict[str, Any] = {}
    notes = []
    for name, (kernel, args, constexprs) in variants.items():
        # A missing compile tool never gets here: attempt() raises it as CannotObserve (skipped).
        out = exercise(ctx, kernel, args, constexprs)
        if out.raised:
            error = out.exception_text(2000)
            data[name] = {"error": error}
            if name == "descriptor" and not _descriptor_trial_compiles(ctx):
                notes.append(f"descriptor loader does not compile for {ctx.target} "
                             f"({first_line(error)}), nor does compat's trial: compat "
                             "falls back to pointers there")  # fmt: skip
                continue
            return Observation("fail", f"{name}: {first_line(error)}", {"variant": name, **data})
        asm = out.value.ir
        text = asm.get("ptx") or asm.get("amdgcn") or ""
        data[name] = {
            "stages": sorted(asm),
            "matrix_instructions": sorted(
                {w for w in ("tcgen05.mma", "wgmma", "mma.sync", "v_mfma", "fma.rn") if w in text}
            ),
            "asm_lines": text.count("\n"),
            # Answered by Triton's cache kept in the cell (catalog ``compile_cache``): the same
            # artifact an earlier run of this release compiled from the same source and options.
            "cached": out.value.cached,
            # What it uses and how long it took to compile (the performance page and the gate's
            # "may slow your kernel": matrix.backends.resource_rules).
            **resource_row(ctx, out.value, kernel, args, constexprs),
        }
    compiled = [k for k, v in data.items() if "error" not in v]
    summary = "; ".join(
        f"{k}: {', '.join(data[k]['matrix_instructions']) or 'no MMA'}" for k in compiled
    )
    cached = [k for k in compiled if data[k]["cached"]]
    if cached:
        notes.append(f"{', '.join(cached)} from the kept compile cache (--fresh-compiles "
                     "compiles anew)")  # fmt: skip
    detail = f"compiled {', '.join(compiled)} ({summary})" + "".join(f"; {n}" for n in notes)
    return Observation("pass", detail, data)


def resource_row(
    ctx: Context, art: Any, kernel: Any, args: dict, constexprs: dict
) -> dict[str, Any]:
    """registers, local_bytes, shared, where they were read, and the compile seconds with
    their noise band (``matrix.backends.compile_time``) of one compiled variant."""
    from dataclasses import replace

    from matrix.backends import compile_cache, compile_time

    def recompile() -> Any:
        again = exercise(replace(ctx, compile_cache=None), kernel, args, constexprs)
        if again.raised:  # it compiled a moment ago: the same compile failing is our bug
            raise RuntimeError(f"a repeat compile failed: {again.exception_text()}")
        return again.value

    kept = str(compile_cache.folder_for(ctx.compile_cache)) if ctx.compile_cache else None
    seconds, source = compile_time.samples(art, recompile, kept)
    return {**art.resources, "compile_seconds": seconds, "seconds_from": source}


def _descriptor_trial_compiles(ctx: Context) -> bool:
    import torch

    from compat import trials

    src = torch.empty(12, 16)
    args = {"src": src, "dst": src, "R": 12, "C": 12, "stride_r": 16}
    return not exercise(ctx, trials._padded_load, args, {"BLOCK": 8}).raised
