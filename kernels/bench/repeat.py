"""Ordered mode's promise on a GPU: ``python -m kernels.bench.repeat --out FILE [--runs N]``.

For every suite case, ``splitk_matmul(deterministic=True)`` (the plan the table gives) runs
``--runs`` times on the same inputs between launches of other work that reuse its scratch
(atomic mode on the same shape): each result must equal the first bit for bit, have no NaN
(outputs start poisoned) and be within the float64 check's tolerance. Writes one JSON record
per case and exits 1 if any case fails.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kernels.bench.repeat", description=__doc__)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        print("kernels.bench.repeat: no CUDA device; this checks the GPU path", file=sys.stderr)
        return 2

    from kernels import splitk
    from kernels.bench.checks import check, make_operands, poisoned_empty, tolerance
    from kernels.bench.impls import ATOMIC, DETERMINISTIC, impl_fn
    from kernels.bench.suite import suite

    records, bad = [], []
    for i, case in enumerate(suite(args.quick)):
        ops = make_operands(case, seed=500 + i)
        tol = tolerance(case, ops)
        det, atomic = impl_fn(case, DETERMINISTIC), impl_fn(case, ATOMIC)
        plan = splitk.plan_splitk(ops.a, ops.b, precision=case.precision, deterministic=True)
        first = None
        same, worst = True, 0.0
        for _ in range(args.runs):
            atomic(ops.a, ops.b)  # other work on the same scratch between the runs
            res = check(case, det, ops, tol)
            worst = max(worst, res["rel_err"])
            with poisoned_empty():
                c = det(ops.a, ops.b)
            torch.cuda.synchronize()
            if first is None:
                first = c.clone()
            same = same and bool(torch.equal(c, first)) and res["ok"]
        rec = {"case": str(case), "split_k": plan.split_k, "plan": str(plan.config),
               "product": plan.product, "source": plan.source, "runs": args.runs,
               "bitwise_same_and_ok": same, "worst_rel_err": worst, "tolerance": tol}  # fmt: skip
        records.append(rec)
        if not same:
            bad.append(str(case))
        print(json.dumps(rec), flush=True)
    args.out.write_text(json.dumps({"records": records, "failed": bad}, indent=1), "utf-8")
    print(f"repeat: {len(records) - len(bad)} of {len(records)} cases bitwise stable and right")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
