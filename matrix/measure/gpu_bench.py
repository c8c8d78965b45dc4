"""Time split-K, tiled and cuBLAS on one Triton release, on a GPU: one benchmark file per release.

    python -m matrix gpu-bench --release 3.9.0 --out bench/triton-3.9.0-gpu-h200.json

The method is ``kernels.bench``'s (fresh random inputs, a NaN-poisoned output checked against
float64, then ``do_bench`` medians and CUDA-graph replay over input copies larger than 3x L2);
this module runs it on a subset that fits a few tens of seconds per release, and times each
graph ``ROUNDS`` times so that the run-to-run noise of each ratio is measured in the same run.
cuBLAS is the same library in every release's run, so split-K time / cuBLAS time in one run is
the number compared across releases (machine and clock drift cancel).

Benchmark file format (``"kind": "triton-gpu-bench"``, ``"schema": 1``)::

    {"schema": 1, "kind": "triton-gpu-bench",
     "release": "3.9.0",                 # the Triton release timed (checked by the preflight)
     "column": "gpu:cuda:90",            # backend:target, as in the raw files
     "machine": "h200",                  # label of the machine (file names end -gpu-<machine>)
     "env": {"device": "NVIDIA H200", "capability": "9.0", "sms": 132, "l2_bytes": ...,
             "torch": "2.11.0+cu130", "triton": "3.9.0", "cuda": "13.0", "python": "3.12.3",
             "loader": "descriptor", "torch_pairing": "...", "triton_source": "...",
             "tree": "the commit (or MATRIX_TREE_ID) of the code that measured"},
     "ceilings": {"copy_gbps": ..., "matmul_tflops_fp16": ..., ...},
     "subset": {"shapes": [[m, n, k], ...], "dtypes": [...], "layouts": [...],
                "impls": ["cublas", "tiled", "splitk"], "rounds": 2, "why": "..."},
     "records": [{"m", "n", "k", "dtype", "layout", "impl", "ok", "rel_err", "tolerance",
                  "unwritten", "us" (do_bench median, eager), "us_graph" (mean of rounds),
                  "us_graph_rounds": [..], "host_us", "config", "split_k", "error"?,
                  and kernels.bench's other record fields (tflops, gbps, pct_copy_bw, ...)}],
     "converted_from": "..."?,          # only in a file converted from a kernels.bench suite file
     "ratios": [{"case": "64x64x8192 fp16 kn", "m", "n", "k", "dtype", "layout",
                 "impl": "splitk" | "tiled",
                 "graph": impl / cuBLAS under graph replay (mean of the per-round ratios),
                 "graph_rounds": [per-round ratio, ...],
                 "noise": (max - min) / mean of graph_rounds (null: one round only),
                 "eager": impl / cuBLAS of the do_bench medians (host-bound on small shapes)}],
     "failed_checks": ["splitk 64x64x8192 fp16 kn", ...],
     "seconds": 31.2, "command": "..."}

A ratio above 1 means slower than cuBLAS. A ratio is present only where both timings exist and
both checks passed. ``python -m matrix gate`` compares these between two releases.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from kernels.bench import checks, cli, output, timing
from kernels.bench import suite as bench
from kernels.bench.impls import impl_fn
from matrix import cli as matrix_cli
from matrix.core import Release
from matrix.exitcodes import ExitCode

SCHEMA = 1
KIND = "triton-gpu-bench"
ROUNDS = 2
IMPLS = ("cublas", "tiled", "splitk")
# Launch-bound (64x64x8192), mid (256x256x32768) and bandwidth-bound (16x4096x14336) shapes of
# the suite, every dtype and layout: 24 of its 88 cases.
SHAPES = ((64, 64, 8192), (256, 256, 32768), (16, 4096, 14336))
SUBSET_WHY = (
    "3 of the suite's 11 shapes (launch-bound, mid, bandwidth-bound) x 4 dtypes x 2 "
    "layouts: 24 of 88 cases, to fit about 30 s per release"
)


def subset() -> list[bench.Case]:
    return [
        bench.Case(m, n, k, d, lay)
        for d in bench.DTYPES
        for lay in bench.LAYOUTS
        for (m, n, k) in SHAPES
    ]


def case_name(r: dict[str, Any]) -> str:
    return f"{r['m']}x{r['n']}x{r['k']} {r['dtype']} {r['layout']}"


def time_case(
    case: bench.Case, env: dict, copy_gbps: float, seed: int, impls=IMPLS, rounds: int = ROUNDS
) -> list[dict[str, Any]]:
    """``kernels.bench``'s record of each line (check, both timers, host time), plus
    ``rounds - 1`` more graph timings on the same inputs: ``us_graph`` is their mean."""
    records = cli.bench_case(case, env, copy_gbps, seed, tuple(impls))
    ops = checks.make_operands(case, seed)  # the same seed: the same inputs as the first round
    sets = timing.rotating_sets(case, ops, env["l2_bytes"])
    for rec in records:
        if rec.get("us_graph") is None:
            continue
        fn = impl_fn(case, rec["impl"])
        more = [timing.time_graph(case, fn, sets) for _ in range(rounds - 1)]
        rec["us_graph_rounds"] = [rec["us_graph"], *more]
        rec["us_graph"] = sum(rec["us_graph_rounds"]) / rounds
    return records


def ratios(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """impl / cuBLAS per case and round, where both ran and both checks passed."""
    by: dict[str, dict[str, dict]] = {}
    for r in records:
        by.setdefault(case_name(r), {})[r["impl"]] = r
    out = []
    for name, impls in by.items():
        cb = impls.get("cublas")
        if not cb or not cb.get("ok") or not cb.get("us_graph_rounds"):
            continue
        for impl, r in impls.items():
            if impl == "cublas" or not r.get("ok") or not r.get("us_graph_rounds"):
                continue
            rounds = [
                a / b for a, b in zip(r["us_graph_rounds"], cb["us_graph_rounds"], strict=False)
            ]
            mean = sum(rounds) / len(rounds)
            out.append(
                {
                    "case": name,
                    **{k: r[k] for k in ("m", "n", "k", "dtype", "layout")},
                    "impl": impl,
                    "graph": mean,
                    "graph_rounds": rounds,
                    # one round (a converted file): the noise was not measured
                    "noise": (max(rounds) - min(rounds)) / mean if len(rounds) > 1 else None,
                    "eager": r["us"] / cb["us"],
                }
            )
    return out


def convert_suite(doc: dict[str, Any], release: str, machine: str, source: str) -> dict:
    """A benchmark file in this format from a ``kernels.bench`` suite file (one graph timing
    per case, so no noise), restricted to this subset's cases and implementations."""
    if doc.get("env", {}).get("triton") != release:
        raise ValueError(
            f"{source}: env.triton is {doc.get('env', {}).get('triton')!r}, not {release!r}"
        )
    wanted = {str(c) for c in subset()}
    records = []
    for r in doc["records"]:
        if r["impl"] in IMPLS and case_name(r) in wanted:
            r = dict(r)
            if r.get("us_graph") is not None:
                r["us_graph_rounds"] = [r["us_graph"]]
            records.append(r)
    major, minor = doc["env"]["capability"].split(".")
    return {
        "schema": SCHEMA,
        "kind": KIND,
        "release": release,
        "column": f"gpu:cuda:{major}{minor}",
        "machine": machine,
        "env": doc["env"],
        "ceilings": doc["ceilings"],
        "subset": {
            "shapes": [list(s) for s in SHAPES],
            "dtypes": list(bench.DTYPES),
            "layouts": list(bench.LAYOUTS),
            "impls": list(IMPLS),
            "rounds": 1,
            "why": SUBSET_WHY,
            "cases": len(wanted),
        },
        "converted_from": source,
        "records": records,
        "ratios": ratios(records),
        "failed_checks": [f"{r['impl']} {case_name(r)}" for r in records if not r.get("ok")],
        "seconds": doc.get("seconds"),
        "command": doc.get("command"),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        allow_abbrev=False,  # --cand is no --candidate: a typo is refused, never guessed
        prog="python -m matrix gpu-bench",
        description=__doc__.split("\n")[0],
    )
    ap.add_argument("--release", required=True, help="the release expected to be imported")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--machine", default="h200", help="machine label (file names, column)")
    ap.add_argument("--env", default="{}", help="JSON fields added to env (pairing, source)")
    ap.add_argument("--limit", type=int, help="time only the first N cases (a quick try)")
    ap.add_argument("--convert", type=Path, help="write a kernels.bench suite file in this format")
    args = ap.parse_args(argv)
    doc: dict[str, Any]
    if args.convert:
        doc = convert_suite(
            json.loads(args.convert.read_text()), args.release, args.machine, str(args.convert)
        )
        args.out.write_text(json.dumps(doc, indent=1), encoding="utf-8")
        print(f"wrote {args.out}: {len(doc['records'])} records, {len(doc['ratios'])} ratios")
        return ExitCode.OK
    import torch
    import triton

    if not torch.cuda.is_available():
        print("gpu_bench: no CUDA device", file=sys.stderr)
        return ExitCode.UNDECIDABLE
    if Release.parse(triton.__version__, "triton.__version__") != Release.parse(
        args.release, "--release"
    ):
        print(
            f"gpu_bench: triton {triton.__version__} imported, expected {args.release}",
            file=sys.stderr,
        )
        return ExitCode.UNDECIDABLE
    t0 = time.monotonic()
    env = {**output.environment(), **json.loads(args.env)}
    ceil = timing.ceilings()
    cases = subset()[: args.limit]
    major, minor = env["capability"].split(".")
    doc = {
        "schema": SCHEMA,
        "kind": KIND,
        "release": args.release,
        "column": f"gpu:cuda:{major}{minor}",
        "machine": args.machine,
        "env": env,
        "ceilings": ceil,
        "subset": {
            "shapes": [list(s) for s in SHAPES],
            "dtypes": list(bench.DTYPES),
            "layouts": list(bench.LAYOUTS),
            "impls": list(IMPLS),
            "rounds": ROUNDS,
            "why": SUBSET_WHY,
            "cases": len(cases),
        },
        "records": [],
    }
    for i, case in enumerate(cases):
        doc["records"] += time_case(case, env, ceil["copy_gbps"], seed=100 + i)
        print(
            f"[bench {args.release}] {case}: "
            + ", ".join(
                f"{r['impl']} {r['us_graph']:.1f}us" if r.get("us_graph") else f"{r['impl']} FAILED"
                for r in doc["records"][-len(IMPLS) :]
            ),
            flush=True,
        )
    doc["ratios"] = ratios(doc["records"])
    doc["failed_checks"] = [
        f"{r['impl']} {case_name(r)}" for r in doc["records"] if not r.get("ok")
    ]
    doc["seconds"] = round(time.monotonic() - t0, 1)
    doc["command"] = "python -m matrix.measure.gpu_bench " + " ".join(
        sys.argv[1:] if argv is None else argv
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    return ExitCode.FAILED if doc["failed_checks"] else ExitCode.OK


if __name__ == "__main__":
    sys.exit(matrix_cli.run(main, "matrix.measure.gpu_bench"))
