"""Descriptor against pointer loader for the same split-K plan, on the installed release (GPU).

``python -m kernels.bench.loader_ab --out FILE.json`` runs each case's own plan (the tuned
table's tiles, split and loader) and the same plan with the other loader, checks both against
float64 on fresh random inputs (output poisoned with NaN), and times both by CUDA-graph replay
and ``do_bench`` median, twice each, so the run-to-run spread sits beside the difference. It
records each compiled kernel's registers and spills as the JIT reports them. Why: on 3.7.1+ the
fp32-ieee descriptor path is ~30x slower at 256x256x32768 while a pointer matmul is not.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import Any

from kernels.bench.suite import Case

CASES = [
    Case(256, 256, 32768, "fp32-ieee", "kn"),
    Case(256, 256, 131072, "fp32-ieee", "kn"),
    Case(1024, 1024, 1024, "fp32-ieee", "kn"),
    Case(256, 256, 8192, "fp32-ieee", "kn"),
    Case(16, 4096, 14336, "fp32-ieee", "kn"),
    Case(256, 256, 32768, "fp32-tf32", "kn"),
    Case(256, 256, 32768, "fp16", "kn"),
]


def _kernel_resources() -> list[dict[str, Any]]:
    """Registers and spills of every compiled fused-kernel variant the JIT holds."""
    from kernels.fused import splitk_fused_kernel

    out = []
    caches = getattr(splitk_fused_kernel, "device_caches", None) or {}
    for dev_cache in caches.values():
        table = dev_cache[0] if isinstance(dev_cache, tuple) else dev_cache
        for key, k in table.items():
            regs, spills = getattr(k, "n_regs", None), getattr(k, "n_spills", None)
            out.append({"n_regs": regs, "n_spills": spills, "key": str(key)[:160]})
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--out", required=True)
    p.add_argument("--deterministic", action="store_true")
    args = p.parse_args(argv)
    import torch
    import triton

    from kernels import splitk
    from kernels.bench import checks, timing
    from kernels.bench.impls import _forced
    from kernels.launch import LoaderPlan

    env = {"triton": triton.__version__, "torch": torch.__version__,
           "gpu": torch.cuda.get_device_name(), "l2_bytes": 60 * 2**20}  # fmt: skip
    records = []
    for i, case in enumerate(CASES):
        ops = checks.make_operands(case, seed=1000 + i)
        tol = checks.tolerance(case, ops)
        sets = timing.rotating_sets(case, ops, env["l2_bytes"])
        plan = splitk.plan_splitk(ops.a, ops.b, precision=case.precision,
                                  deterministic=args.deterministic)  # fmt: skip
        other = "pointer" if plan.loader.loader == "descriptor" else "descriptor"
        variants = {plan.loader.loader: plan}
        variants[other] = dataclasses.replace(
            plan, loader=LoaderPlan(other, plan.loader.b_kmajor, "forced")
        )
        for loader, pl in variants.items():
            rec: dict[str, Any] = {"case": str(case), "loader": loader, "source": pl.source,
                                   "table_loader": plan.loader.loader,
                                   "config": f"{pl.config}-S{pl.split_k}"}  # fmt: skip
            try:
                fn = _forced(case, pl, args.deterministic)
                rec.update(checks.check(case, fn, ops, tol))
                rec["us_graph"] = [timing.time_graph(case, fn, sets) for _ in range(2)]
                rec["us"] = [timing.time_do_bench(case, fn, ops) for _ in range(2)]
            except Exception as e:  # a variant that fails is a record, not a time
                rec.update(ok=False, error=f"{type(e).__name__}: {str(e)[:300]}")
            records.append(rec)
            print(json.dumps({k: rec.get(k) for k in ("case", "loader", "config", "ok", "rel_err",
                              "us_graph", "us", "error")}), flush=True)  # fmt: skip
    doc = {"env": env, "records": records, "kernels": _kernel_resources()}
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
