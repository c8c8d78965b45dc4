"""The command line: ``python -m kernels.bench --out FILE [--tune TABLE ...]``.

Runs the declared suite (``kernels.bench.suite``) for the chosen lines (``kernels.bench.impls``):
every record is checked, then timed by both timers and for host time (``kernels.bench.timing``);
``--tune`` sweeps first (``kernels.bench.sweep``) and the suite then runs on the new table. The
JSON is rewritten after every case, so a run cut short keeps what it measured.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from kernels.bench import checks, output, sweep, timing
from kernels.bench.impls import ATOMIC, BASELINE, DETERMINISTIC, IMPLS, impl_fn
from kernels.bench.suite import GOALS, Case, suite

DEFAULT_IMPLS = ("cublas", "tiled", "splitk", "splitk_deterministic")
# The host-time comparison: a small skinny call whose GPU time (5-12 µs) is below its host time.
HOST_CASE = Case(16, 4096, 4096, "fp16", "kn")


def bench_case(case: Case, env: dict, copy_gbps: float, seed: int, impls: tuple[str, ...]):
    ops = checks.make_operands(case, seed)
    tol = checks.tolerance(case, ops)
    sets = timing.rotating_sets(case, ops, env["l2_bytes"])
    records = []
    for impl in impls:
        fn = impl_fn(case, impl)
        split, config = IMPLS[impl].describe(case, ops.a, ops.b)
        rec: dict[str, Any] = {
            **asdict(case), "precision": case.precision, "impl": impl, "split_k": split,
            "config": config, "min_bytes": case.min_bytes,
        }  # fmt: skip
        try:
            rec.update(checks.check(case, fn, ops, tol))
            rec["us"] = timing.time_do_bench(case, fn, ops)
            rec["us_graph"] = timing.time_graph(case, fn, sets)
            # Fewer calls where the GPU time is long: host time is what is measured here.
            calls = 100 if rec["us_graph"] < 200 else 10
            rec["host_us"] = timing.host_time(case, fn, ops, calls=calls, repeats=3)
        except Exception as e:  # recorded as a failed variant, never as a time
            rec.update({"ok": False, "error": f"{type(e).__name__}: {str(e)[:300]}"})
            rec["us"] = None
        if rec.get("us"):
            rec["tflops"] = case.flops / (rec["us_graph"] * 1e-6) / 1e12
            rec["gbps"] = case.min_bytes / (rec["us"] * 1e-6) / 1e9
            rec["pct_copy_bw"] = 100 * rec["gbps"] / copy_gbps
            rec["gbps_graph"] = case.min_bytes / (rec["us_graph"] * 1e-6) / 1e9
            rec["pct_copy_bw_graph"] = 100 * rec["gbps_graph"] / copy_gbps
        records.append(rec)
    return records


def host_comparison(impls: tuple[str, ...]) -> dict[str, Any]:
    """Host µs per call at ``HOST_CASE``: ``timing.HOST_CALLS`` back-to-back calls without sync,
    median of ``timing.HOST_REPEATS``, each line beside cuBLAS in the same process."""
    ops = checks.make_operands(HOST_CASE, seed=7)
    out: dict[str, Any] = {"case": str(HOST_CASE), "calls": timing.HOST_CALLS,
                           "repeats": timing.HOST_REPEATS}  # fmt: skip
    for impl in (BASELINE, ATOMIC, DETERMINISTIC):
        if impl in impls:
            out[f"{impl}_us"] = round(timing.host_time(HOST_CASE, impl_fn(HOST_CASE, impl), ops), 2)
    if f"{ATOMIC}_us" in out:
        out["goal_us"] = GOALS["host_us"]
        out["goal_met"] = out[f"{ATOMIC}_us"] <= GOALS["host_us"]
    return out


def full_sweep_filter(patterns: str) -> Any:
    """``"fp32-ieee:nk_t,fp32-tf32:*,fp16:*:256x256x*"`` -> predicate on cases (dtype:layout
    globs, optionally :MxNxK)."""
    pats = [p.strip().split(":") for p in patterns.split(",") if p.strip()]
    bad = [":".join(p) for p in pats if len(p) not in (2, 3)]
    if bad:
        raise ValueError(f"--tune-full: expected dtype:layout[:MxNxK] patterns, got {bad}")
    return lambda c: any(
        fnmatch.fnmatch(c.dtype, p[0]) and fnmatch.fnmatch(c.layout, p[1])
        and (len(p) == 2 or fnmatch.fnmatch(f"{c.m}x{c.n}x{c.k}", p[2]))
        for p in pats
    )  # fmt: skip


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m kernels.bench", description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True, help="benchmark JSON to write")
    ap.add_argument("--tune", type=Path, help="sweep configs first; write this TOML table")
    ap.add_argument("--tune-full", default="*:*",
                    help="dtype:layout globs swept in full; other tuned cases are swept around "
                         "their table entry (default: all in full)")  # fmt: skip
    ap.add_argument("--tune-matching-only", metavar="PATTERNS",
                    help="re-tune only the cases these dtype:layout[:MxNxK] globs match; every "
                         "other entry is kept as it is (the suite still runs in full)")  # fmt: skip
    ap.add_argument("--tune-forms", metavar="FORMS",
                    help="around a table entry, sweep only these of the product forms it was "
                         "not tuned with (comma-separated, e.g. nmajor); default: all")  # fmt: skip
    ap.add_argument("--sweep-out", type=Path, help="every tuning timing, as JSON")
    ap.add_argument("--tune-only", action="store_true",
                    help="stop after --tune has written the table and --sweep-out")  # fmt: skip
    ap.add_argument("--quick", action="store_true", help="3 shapes instead of 11")
    ap.add_argument("--loaders", default="pointer,descriptor", help="loaders to try in --tune")
    ap.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) - 2))
    ap.add_argument("--tune-seconds", type=float, default=300.0, help="sweep time limit")
    ap.add_argument("--impls", default=",".join(DEFAULT_IMPLS))
    return ap


def _tune(
    args: argparse.Namespace,
    cases: list[Case],
    env: dict[str, Any],
    full: Any,
    only: Any,
    forms: tuple[str, ...] | None,
    log: Any,
    t0: float,
) -> None:
    """Sweep the cases --tune names, write the merged table, and point this process's
    lookup at it (the bench that follows runs on the new table)."""
    from kernels import devices, gpu_plan, splitk

    loaders = tuple(x.strip() for x in args.loaders.split(",") if x.strip())
    old = gpu_plan.load_table()
    tuned_cases = cases if only is None else [c for c in cases if only(c)]
    log(f"tuning {len(tuned_cases)} of {len(cases)} cases")
    plans = sweep.plan_sweep(tuned_cases, full, old, env["device"], loaders, forms)
    entries, timings = sweep.tune(plans, env["device"], args.workers,
                                  t0 + args.tune_seconds, log, env["l2_bytes"])  # fmt: skip
    merged = sweep.merge_entries(old, entries)
    note = (f"tuned on {env['device']}, triton {env['triton']}, torch {env['torch']} "
            f"({time.strftime('%Y-%m-%d')}); {len(entries)} entries from this sweep, "
            f"{len(merged) - len(entries)} kept from the table before")  # fmt: skip
    measured = {**gpu_plan.load_devices(), env["device"]: devices.current(0)}
    sweep.write_table(merged, args.tune, note, measured.values())
    if args.sweep_out:
        args.sweep_out.write_text(json.dumps(timings), encoding="utf-8")
    os.environ["KERNELS_SPLITK_TABLE"] = str(args.tune)
    gpu_plan.load_table.cache_clear()
    gpu_plan.load_devices.cache_clear()
    splitk.clear_plan_cache()
    log(f"tuned {len(entries)} entries in {time.monotonic() - t0:.0f} s")


def main(argv: list[str] | None = None) -> int:
    ap = _parser()
    args = ap.parse_args(argv)
    impls = tuple(i.strip() for i in args.impls.split(",") if i.strip())
    bad = [i for i in impls if i not in IMPLS]
    if bad:
        ap.error(f"--impls: unknown {bad}; expected some of {sorted(IMPLS)}")
    forms = None
    if args.tune_forms is not None:
        from kernels.gpu_plan import PRODUCTS

        forms = tuple(f.strip() for f in args.tune_forms.split(",") if f.strip())
        if not forms or any(f not in PRODUCTS for f in forms):
            ap.error(f"--tune-forms: expected some of {PRODUCTS}, got {args.tune_forms!r}")
    try:
        full = full_sweep_filter(args.tune_full)
        only = full_sweep_filter(args.tune_matching_only) if args.tune_matching_only else None
    except ValueError as e:
        ap.error(str(e))

    import torch

    if not torch.cuda.is_available():
        print("kernels.bench: no CUDA device; the benchmark times a GPU", file=sys.stderr)
        return 2
    log = lambda s: print(s, flush=True)  # noqa: E731
    t0 = time.monotonic()
    env = output.environment()
    log(f"env: {env}")
    cases = suite(args.quick)
    if args.tune:
        _tune(args, cases, env, full, only, forms, log, t0)
        if args.tune_only:
            return 0
    ceil = timing.ceilings()
    log("ceilings: " + ", ".join(f"{k}={v:.4g}" for k, v in ceil.items()))
    host = host_comparison(impls)
    log(f"host: {host}")
    records: list[dict] = []
    args.out.parent.mkdir(parents=True, exist_ok=True)
    for i, case in enumerate(cases):
        records += bench_case(case, env, ceil["copy_gbps"], seed=100 + i, impls=impls)
        doc: dict[str, Any] = {"env": env, "ceilings": ceil, "host": host, "records": records}
        args.out.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    failed = [f"{r['impl']} {Case(r['m'], r['n'], r['k'], r['dtype'], r['layout'])}"
              for r in records if not r.get("ok")]  # fmt: skip
    doc = {
        "env": env,
        "ceilings": ceil,
        "goals": GOALS,
        "timers": output.TIMERS,
        "summary_graph": output.summarize(records, ceil["copy_gbps"], "us_graph"),
        "summary": output.summarize(records, ceil["copy_gbps"], "us", GOALS["eager_geomean"]),
        "host": {**host, "suite": output.host_summary(records)},
        "guards": checks.guard_evidence(),
        "failed_checks": failed,
        "command": "python -m kernels.bench " + " ".join(sys.argv[1:] if argv is None else argv),
        "seconds": round(time.monotonic() - t0, 1),
        "records": records,
    }
    args.out.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    output.print_table(records, doc)
    return 1 if failed else 0
