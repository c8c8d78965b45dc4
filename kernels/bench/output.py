"""What a run writes: the records, the environment, the summary against the goals under both
timers (``us``: eager ``do_bench`` median; ``us_graph``: CUDA-graph replay), the host-time
comparison, and the table printed at the end."""

from __future__ import annotations

import math
import platform
from typing import Any

from kernels.bench.impls import ATOMIC, BASELINE, DETERMINISTIC
from kernels.bench.suite import BANDWIDTH_SHAPE, GOALS

# The two timers every record carries, and what each measures.
TIMERS = {
    "us": "eager: triton.testing.do_bench median, L2 flushed before each call (host included "
    "where a call's host time exceeds the flush)",
    "us_graph": "CUDA-graph replay over input copies that do not fit in L2 (GPU time alone)",
}


def geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def summarize(
    records: list[dict[str, Any]], copy_gbps: float, key: str = "us_graph",
    geomean_goal: float = GOALS["geomean"],
) -> dict:  # fmt: skip
    """Per dtype, under timer ``key``: split-K's speed-up over cuBLAS (geomean, worst case),
    deterministic over atomic, and the bandwidth share at the skinny shape; each against its
    goal, and ``short_by`` for each goal missed (the factor, or percentage points, still
    needed)."""
    by_case: dict[tuple, dict[str, dict]] = {}
    for r in records:
        if r.get(key) is None:
            continue
        by_case.setdefault((r["m"], r["n"], r["k"], r["dtype"], r["layout"]), {})[r["impl"]] = r
    out: dict[str, Any] = {}
    for dtype in sorted({k[3] for k in by_case}):
        speedups, det_ratios, bw = [], [], []
        for case, impls in by_case.items():
            if case[3] != dtype or BASELINE not in impls or ATOMIC not in impls:
                continue
            s = impls[BASELINE][key] / impls[ATOMIC][key]
            speedups.append((s, f"{case[0]}x{case[1]}x{case[2]} {case[4]}"))
            if DETERMINISTIC in impls:
                det_ratios.append(impls[DETERMINISTIC][key] / impls[ATOMIC][key])
            if case[:3] == BANDWIDTH_SHAPE:
                r = impls[ATOMIC]
                bw.append(100.0 * r["min_bytes"] / (r[key] * 1e-6) / 1e9 / copy_gbps)
        if not speedups:
            continue
        worst = min(speedups)
        gm = geomean([s for s, _ in speedups])
        out[dtype] = {
            "splitk_over_cublas_geomean": round(gm, 3),
            "worst": round(worst[0], 3),
            "worst_case": worst[1],
            "cases": len(speedups),
            "below_0.9": sum(s < GOALS["worst"] for s, _ in speedups),
            "det_over_atomic_max": round(max(det_ratios), 3) if det_ratios else None,
            "det_over_atomic_geomean": round(geomean(det_ratios), 3) if det_ratios else None,
            "bandwidth_pct_16x4096x14336": [round(x, 1) for x in bw],
        }
        met = {
            f"geomean>={geomean_goal}": (gm >= geomean_goal, round(geomean_goal / gm, 3)),
            f"worst>={GOALS['worst']}": (worst[0] >= GOALS["worst"],
                                         round(GOALS["worst"] / worst[0], 3)),
            f"bandwidth>={GOALS['bandwidth_pct']:g}%": (
                bool(bw) and min(bw) >= GOALS["bandwidth_pct"],
                round(GOALS["bandwidth_pct"] - min(bw), 1) if bw else None),
            f"det/atomic<={GOALS['det_over_atomic']}": (
                bool(det_ratios) and max(det_ratios) <= GOALS["det_over_atomic"],
                round(max(det_ratios) / GOALS["det_over_atomic"], 3) if det_ratios else None),
        }  # fmt: skip
        out[dtype]["goals_met"] = {g: ok for g, (ok, _) in met.items()}
        out[dtype]["short_by"] = {g: by for g, (ok, by) in met.items() if not ok}
    allspeed = [
        impls[BASELINE][key] / impls[ATOMIC][key]
        for impls in by_case.values()
        if BASELINE in impls and ATOMIC in impls
    ]
    if allspeed:
        out["all"] = {"splitk_over_cublas_geomean": round(geomean(allspeed), 3),
                      "worst": round(min(allspeed), 3), "cases": len(allspeed)}  # fmt: skip
    return out


def host_summary(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Host µs per call (median over the suite's records) of each line, beside cuBLAS's in the
    same run, against the goal."""
    by_impl: dict[str, list[float]] = {}
    for r in records:
        if r.get("host_us") is not None:
            by_impl.setdefault(r["impl"], []).append(r["host_us"])
    out: dict[str, Any] = {}
    for impl, xs in sorted(by_impl.items()):
        xs = sorted(xs)
        out[impl] = {"median_us": round(xs[len(xs) // 2], 2), "max_us": round(xs[-1], 2),
                     "records": len(xs)}  # fmt: skip
    if ATOMIC in out:
        med = out[ATOMIC]["median_us"]
        out["goal_us"] = GOALS["host_us"]
        out["goal_met"] = med <= GOALS["host_us"]
        if not out["goal_met"]:
            out["short_by_us"] = round(med - GOALS["host_us"], 2)
    return out


def environment() -> dict[str, Any]:
    import torch
    import triton

    import compat
    from kernels.launch import relaxed_atomics

    props = torch.cuda.get_device_properties(0)
    return {
        "device": torch.cuda.get_device_name(0),
        "capability": "{}.{}".format(*torch.cuda.get_device_capability(0)),
        "sms": props.multi_processor_count,
        "l2_bytes": getattr(props, "L2_cache_size", 0) or 50 * 2**20,
        "smem_per_block": getattr(props, "shared_memory_per_block_optin", 0),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "cuda": torch.version.cuda,
        "python": platform.python_version(),
        "loader": compat.LOADER,
        "relaxed_atomics": relaxed_atomics(),
        "fp16_reduced_precision_reduction": (
            torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction
        ),
    }


def ratio(d: dict[str, dict], num: str, den: str, key: str) -> float:
    """``d[num][key] / d[den][key]``, NaN where either is missing."""
    x, y = d.get(num, {}).get(key), d.get(den, {}).get(key)
    return x / y if x and y else float("nan")


def print_table(records: list[dict], doc: dict) -> None:
    """Per case: graph-replay µs of each line, cuBLAS/split-K under both timers, det/atomic."""
    by: dict[tuple, dict] = {}
    for r in records:
        by.setdefault((r["dtype"], r["layout"], r["m"], r["n"], r["k"]), {})[r["impl"]] = r
    impls = list(dict.fromkeys(r["impl"] for r in records))
    print(f"{'case (graph us)':30} " + " ".join(f"{i[:8]:>8}" for i in impls)
          + f" {'x_graph':>7} {'x_eager':>7} {'det/at':>6}  config")  # fmt: skip
    for key, d in by.items():
        cells = " ".join(
            f"{d[i]['us_graph']:8.1f}" if d.get(i, {}).get("us_graph") else "       -"
            for i in impls
        )
        name = f"{key[2]}x{key[3]}x{key[4]} {key[0]} {key[1]}"
        print(f"{name:30} {cells} {ratio(d, BASELINE, ATOMIC, 'us_graph'):7.2f} "
              f"{ratio(d, BASELINE, ATOMIC, 'us'):7.2f} "
              f"{ratio(d, DETERMINISTIC, ATOMIC, 'us_graph'):6.2f}  "
              f"{d.get(ATOMIC, {}).get('config', '')}")  # fmt: skip
    for label in ("summary_graph", "summary"):
        print(label)
        for dtype, s in doc[label].items():
            print(f"  {dtype}: {s}")
    print("host:", doc.get("host"))
    print("guards:", doc["guards"])
    print("failed checks:", doc["failed_checks"] or "none")
