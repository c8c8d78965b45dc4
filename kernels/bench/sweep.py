"""``--tune``: candidate tiles x splits x loaders per shape and mode, timed under graph replay.

Every candidate is compiled first in parallel worker processes that share Triton's cache, then
checked on two fresh input sets (a configuration that is wrong only sometimes must fail one of
them) and timed; the fastest correct one per shape and mode goes to the TOML table that
``kernels.gpu_plan`` reads. A case is swept in full (every tile of ``tiles_for``) or, where
the table already has a validated entry and time is short, around that entry (its tile at
half, the same and twice its split, both loaders): ``neighbours``. Entries of cases not swept
in this run are kept (``merge_entries``).

Each candidate names its product form (``kernels.dot.product_acc``): the plain ``tl.dot``
everywhere, and for the dtype x layout pairs in ``PRODUCT_FORMS`` the other forms too, on
their own tiles where the form wants other tiles (``FORM_TILES``). The winner's form goes to
the table's ``product`` column.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from kernels.bench.checks import Operands, check, make_operands, tolerance
from kernels.bench.impls import ATOMIC, BASELINE, DETERMINISTIC, impl_fn
from kernels.bench.suite import Case
from kernels.bench.timing import rotating_sets, time_graph
from kernels.devices import DeviceTraits
from kernels.plan_search import Candidate  # one configuration, as the sweep and the search time it


def tiles_for(case: Case) -> list[tuple[int, int, int, int, int]]:
    """Candidate (BM, BN, BK, warps, stages): wgmma-friendly (BM >= 64, 4 or 8 warps) where M
    allows, narrow-M tiles for M = 16; BK halved for 4-byte elements (shared memory)."""
    if case.m <= 16:
        # Skinny shapes stream B once: deep pipelines of wide K tiles keep more bytes in flight.
        tiles = [(16, 64, 256, 4, 4), (16, 128, 128, 4, 4), (16, 64, 128, 4, 5),
                 (16, 128, 256, 8, 3), (16, 32, 256, 4, 4), (16, 256, 128, 8, 3),
                 (16, 32, 256, 4, 6), (16, 64, 256, 4, 5), (16, 32, 512, 4, 3)]  # fmt: skip
    elif case.m <= 64:
        tiles = [(64, 64, 128, 4, 4), (64, 64, 64, 4, 5), (64, 32, 128, 4, 4),
                 (32, 32, 128, 4, 4), (64, 64, 256, 8, 3)]  # fmt: skip
    else:
        tiles = [(64, 64, 128, 4, 4), (128, 128, 64, 8, 4), (64, 128, 64, 4, 4),
                 (128, 64, 128, 8, 3), (128, 128, 128, 8, 3)]  # fmt: skip
        if case.m >= 256:
            tiles += [(128, 256, 64, 8, 3), (64, 256, 64, 8, 4), (128, 128, 64, 8, 5),
                      (128, 64, 64, 4, 5)]  # fmt: skip
    if case.element_size == 4:
        tiles = [(bm, bn, max(32, bk // 2), w, s) for bm, bn, bk, w, s in tiles]
    if case.dtype == "fp32-tf32" and case.m > 16:
        # tf32 wgmma reads K in steps of 8: a 32-wide (128-byte) K tile with more stages
        # keeps the swizzled descriptor tile whole and hides DRAM latency.
        tiles += [(64, 64, 32, 4, 5), (128, 64, 32, 4, 5)]
    return list(dict.fromkeys(tiles))


# Product forms tried besides tl.dot, by (dtype, layout): tf32 with an N-major B (the swap
# feeds the K-contiguous A to wgmma's K-major B slot), ieee fp32 with a K-contiguous B (the
# broadcast multiply-add keeps the loaded layout; the FMA dot reads B from an unswizzled
# K-major shared tile with 16 threads of a warp on one bank, TTGIR on 3.6). The swap for
# ieee nk_t was swept once (notes/gpu-logs/splitk-round3, call 3): no case gained beyond
# the lease-to-lease noise, so it is not swept again. ``nmajor`` (ieee nk_t too) keeps the plain
# dot but has Triton stage B N-major in shared memory, where those 16 threads read 16 banks
# (kernels.dot; on an H100 every ieee nk_t case ran at 0.49-0.80 of cuBLAS with the K-major
# tile, the kn cases at 0.87-2.7).
PRODUCT_FORMS: dict[tuple[str, str], tuple[str, ...]] = {
    ("fp32-tf32", "kn"): ("swap",),
    ("fp32-ieee", "nk_t"): ("fma3d", "nmajor"),
}
# Tiles of a form that does not reuse tiles_for's, by the largest M they serve.
FORM_TILES: dict[str, tuple[tuple[int, tuple[tuple[int, int, int, int, int], ...]], ...]] = {
    # fma3d carries a BM x BN x BK accumulator: 64 registers a thread at these tiles.
    "fma3d": (
        (16, ((16, 64, 8, 4, 4), (16, 128, 4, 4, 4), (16, 32, 16, 4, 4), (16, 128, 8, 8, 3),
              (16, 256, 4, 8, 3), (16, 64, 16, 8, 3))),
        (64, ((32, 32, 8, 4, 4), (32, 64, 4, 4, 4), (64, 64, 2, 4, 4), (64, 64, 4, 8, 4),
              (64, 32, 4, 4, 4))),
        (1 << 30, ((64, 64, 4, 8, 3), (64, 128, 2, 8, 3), (128, 64, 2, 8, 3),
                   (32, 64, 8, 4, 4), (64, 64, 2, 4, 4))),
    ),
    # nmajor holds B twice per K step (the loaded tile and the N-major copy): BK 16 at the
    # larger tiles. Each of these compiles for cuda:90 on 3.6.0 without spills
    # (tests/test_splitk_nmajor.py); 128x128x16, 64x128x16 at 4 warps and 64x64x32 spilled.
    "nmajor": (
        (16, ((16, 128, 32, 4, 4), (16, 64, 32, 4, 4), (16, 128, 16, 4, 4),
              (16, 256, 16, 8, 3))),
        (64, ((64, 64, 16, 4, 4), (32, 64, 16, 4, 4), (64, 32, 32, 4, 4), (32, 32, 32, 4, 4),
              (64, 64, 16, 8, 4))),
        (1 << 30, ((64, 128, 16, 8, 4), (64, 64, 16, 4, 4), (128, 64, 16, 8, 4))),
    ),
}  # fmt: skip


def form_tiles(case: Case, product: str) -> list[tuple[int, int, int, int, int]]:
    """The tiles ``product`` is tried on for ``case``: its own (``FORM_TILES``) or tiles_for's."""
    for max_m, tiles in FORM_TILES.get(product, ()):
        if case.m <= max_m:
            return list(tiles)
    return tiles_for(case)


def products_for(case: Case) -> tuple[str, ...]:
    """``("dot", ...)``: the plain dot and the forms ``PRODUCT_FORMS`` adds for this case."""
    return ("dot", *PRODUCT_FORMS.get((case.dtype, case.layout), ()))


def candidates(
    case: Case, loaders: tuple[str, ...], products: tuple[str, ...] | None = None
) -> list[Candidate]:
    """Every (tile, split, loader) of each product form (default ``products_for(case)``)."""
    out = []
    for product in products_for(case) if products is None else products:
        out += _form_candidates(case, loaders, product)
    return out


def _form_candidates(case: Case, loaders: tuple[str, ...], product: str) -> list[Candidate]:
    out = []
    for bm, bn, bk, w, s in form_tiles(case, product):
        tiles = -(-case.m // bm) * -(-case.n // bn)
        k_tiles = -(-case.k // bk)
        # One and two programs per SM (132 SMs on an H200), rounded both ways: a launch one
        # program past a full wave runs a second, nearly empty wave.
        wanted = {-(-p // tiles) for p in (132, 264, 528)} | {p // tiles for p in (132, 264)}
        split_set = {max(1, min(k_tiles, 128, n)) for n in wanted}
        # No split at all only where the tiles alone half-fill the GPU (else it never won).
        for split in sorted(split_set | ({1} if tiles >= 66 else set())):
            for loader in loaders:
                out.append(Candidate(bm, bn, bk, w, s, split, loader, product))
    return out


def _precompile_worker(jobs: list[tuple[dict, list[dict], bool]]) -> int:
    """Run each (case, candidates, deterministic) once so Triton's shared cache holds them."""
    from kernels import splitk
    from kernels.checks import check_matmul

    done = 0
    for case_d, cands, det in jobs:
        case = Case(**case_d)
        ops = make_operands(case, seed=1)
        p = check_matmul(ops.a, ops.b, None, case.precision, interpreted=False)
        for cd in cands:
            c = Candidate(**cd)
            try:
                plan = splitk.plan_with(ops.a, ops.b, c.tile(), c.split_k, c.loader,
                                        product=c.product)  # fmt: skip
                splitk.run_plan(ops.a, ops.b, plan, p, precision=case.precision,
                                deterministic=det)  # fmt: skip
                done += 1
            except Exception:  # the main process times it again and records the error
                pass
    import torch

    torch.cuda.synchronize()
    return done


def precompile(jobs: list[tuple[Case, list[Candidate], bool]], workers: int) -> float:
    """Compile every candidate in ``workers`` processes; returns seconds spent."""
    t0 = time.monotonic()
    # One compile per distinct specialization; spread round-robin: compiles dominate.
    seen: set[tuple] = set()
    parts: list[list] = [[] for _ in range(workers)]
    i = 0
    for case, cands, det in jobs:
        for c in cands:
            key = (case.dtype, case.layout, case.m % c.block_m == 0, case.n % c.block_n == 0,
                   c.block_m, c.block_n, c.block_k, c.num_warps, c.num_stages, c.loader,
                   det, c.split_k == 1, c.split_k % 16 == 0, c.product)  # fmt: skip
            if key in seen:
                continue
            seen.add(key)
            parts[i % workers].append((asdict(case), [asdict(c)], det))
            i += 1
    with mp.get_context("spawn").Pool(workers) as pool:
        pool.map(_precompile_worker, [p for p in parts if p])
    return time.monotonic() - t0


def time_candidate(
    case: Case, ops: Operands, tol: float, cand: Candidate, det: bool, sets: list,
    ops2: Operands | None = None, tol2: float = 0.0,
) -> dict:  # fmt: skip
    from kernels import splitk

    rec: dict[str, Any] = {**asdict(cand), "deterministic": det}
    try:
        plan = splitk.plan_with(ops.a, ops.b, cand.tile(), cand.split_k, cand.loader,
                                product=cand.product)  # fmt: skip
        fn = impl_fn(case, DETERMINISTIC if det else ATOMIC, plan=plan)
        res = check(case, fn, ops, tol)
        if res["ok"] and ops2 is not None:
            # A second check on other data: some configurations were wrong only sometimes.
            res2 = check(case, fn, ops2, tol2)
            res = {**res, "ok": res2["ok"], "rel_err": max(res["rel_err"], res2["rel_err"])}
        rec.update(rel_err=res["rel_err"], ok=res["ok"], loader_used=plan.loader.loader)
        if res["ok"]:
            # Graph replay: the GPU time alone. do_bench here mostly measured host overhead,
            # which is the same for every candidate (seen in the first tuning run).
            rec["us"] = time_graph(case, fn, sets)
    except Exception as e:  # recorded with the candidate
        rec.update(ok=False, error=f"{type(e).__name__}: {str(e)[:200]}")
    return rec


def neighbours(entry: dict, loaders: tuple[str, ...]) -> list[Candidate]:
    """A validated table entry's tile and product form at half, the same and twice its split,
    every loader."""
    tile = {f: entry[f] for f in ("block_m", "block_n", "block_k", "num_warps", "num_stages")}
    splits = sorted({max(1, entry["split_k"] // 2), entry["split_k"], 2 * entry["split_k"]})
    product = entry.get("product", "dot")
    return [Candidate(**tile, split_k=s, loader=ld, product=product) for s in splits
            for ld in loaders]  # fmt: skip


def _entries_of(table: tuple[dict, ...], device: str, case: Case) -> list[dict]:
    """The table's validated entries for ``case``, ordered mode first (it was tuned for every
    case the last sweep reached), then atomic mode; empty if none."""
    key = (device, case.dtype, case.layout, case.m, case.n, case.k)
    found = [e for e in table
             if (e["device"], e["dtype"], e["layout"], e["m"], e["n"], e["k"]) == key]  # fmt: skip
    return sorted(found, key=lambda e: e["mode"] != "ordered")


def plan_sweep(
    cases: list[Case], full: Callable[[Case], bool], table: tuple[dict, ...], device: str,
    loaders: tuple[str, ...], forms: tuple[str, ...] | None = None,
) -> list[tuple[Case, list[Candidate]]]:  # fmt: skip
    """Atomic-mode candidates per case: the full sweep where ``full(case)`` or no entry exists,
    else the entry's neighbours and every candidate of the product forms other than the
    entry's (a form the table has not tried yet is swept in full; with ``forms``, only those
    of them: a short GPU call that tries one new form). Cases without an entry go
    first (they are what the table lacks), then the other full sweeps, then the
    neighbourhoods (a deadline cuts the last). A
    dtype with a loader rule (``kernels/data/loader_rules.toml``) is swept with that loader
    only: the plan would override any other."""
    from kernels.gpu_plan import load_loader_rules

    rules = load_loader_rules()
    plans = []
    for case in cases:
        entries = _entries_of(table, device, case)
        lds = (rules[case.dtype],) if case.dtype in rules else loaders
        if not entries:
            plans.append((0, case, candidates(case, lds)))
        elif full(case):
            plans.append((1, case, candidates(case, lds)))
        else:
            # Around both modes' entries: round 3's call 3 swept around the ordered entry
            # alone and lost the faster atomic one (16x4096x4096 fp32-ieee nk_t, 44 -> 62 us).
            near = [c for e in entries for c in neighbours(e, lds)]
            tried = {e.get("product", "dot") for e in entries}
            others = tuple(p for p in products_for(case)
                           if p not in tried and (forms is None or p in forms))  # fmt: skip
            plans.append((2, case, list(dict.fromkeys(near + candidates(case, lds, others)))))
    return [(case, cands) for _, case, cands in sorted(plans, key=lambda p: p[0])]


def ordered_candidates(ranked: list[Candidate]) -> list[Candidate]:
    """Ordered mode: the three fastest atomic configurations, each at half split, and the
    fastest at a quarter (ordered mode's last program reads every slice: fewer can win)."""
    top = ranked[:3]
    halves = [Candidate(**{**asdict(c), "split_k": max(1, c.split_k // 2)}) for c in top]
    quarter = [Candidate(**{**asdict(c), "split_k": max(1, c.split_k // 4)}) for c in top[:1]]
    return list(dict.fromkeys(top + halves + quarter))


def table_entry(device: str, case: Case, det: bool, best: dict) -> dict:
    return {
        "device": device, "dtype": case.dtype, "layout": case.layout,
        "mode": "ordered" if det else "atomic", "m": case.m, "n": case.n, "k": case.k,
        **{f: best[f] for f in ("block_m", "block_n", "block_k", "num_warps", "num_stages",
                                "split_k", "loader", "product")},
        "us": round(best["us"], 2),
    }  # fmt: skip


def tune(
    plans: list[tuple[Case, list[Candidate]]], device: str, workers: int, deadline: float,
    log: Callable[[str], None], l2_bytes: int,
) -> tuple[list[dict], list[dict]]:  # fmt: skip
    """Sweep each case's candidates in both modes; returns (table entries, every timing)."""
    jobs = []
    for case, cands in plans:
        jobs.append((case, cands, False))
        # Every tile in ordered mode too: its candidates are the fastest atomic ones, known
        # only later, and compiling them there is serial (one compile per split % 16 class).
        jobs.append((case, [c for c in cands if c.split_k > 1], True))
    log(f"precompiling {sum(len(c) for _, c, _ in jobs)} variants in {workers} workers")
    log(f"precompile took {precompile(jobs, workers):.0f} s")
    entries, sweep = [], []
    for case, cands in plans:
        if time.monotonic() > deadline:
            log(f"tune: deadline reached before {case}; it and the rest keep their entries")
            break
        ops = make_operands(case, seed=2)
        tol = tolerance(case, ops)
        ops2 = make_operands(case, seed=3)
        tol2 = tolerance(case, ops2)
        sets = rotating_sets(case, ops, l2_bytes)
        cublas_us = time_graph(case, impl_fn(case, BASELINE), sets)
        sweep.append({**asdict(case), "impl": BASELINE, "us": cublas_us})
        ranked: list[Candidate] = []
        for det in (False, True):
            mode_cands = ordered_candidates(ranked) if det else cands
            timings = [time_candidate(case, ops, tol, c, det, sets, ops2, tol2)
                       for c in mode_cands]  # fmt: skip
            sweep += [{**asdict(case), **t} for t in timings]
            good = [t for t in timings if t.get("ok") and t.get("us")]
            if not good:
                log(f"tune: no correct candidate for {case} det={det}")
                continue
            best = min(good, key=lambda t: t["us"])
            if not det:
                ranked = [Candidate(**{f: t[f] for f in Candidate.__dataclass_fields__})
                          for t in sorted(good, key=lambda t: t["us"])]  # fmt: skip
            entries.append(table_entry(device, case, det, best))
            log(f"tune {case} det={det}: best {best['us']:.1f} us of {len(good)} "
                f"(cuBLAS {cublas_us:.1f} us) {entries[-1]}")  # fmt: skip
    return entries, sweep


def _entry_key(e: dict) -> tuple:
    return (e["device"], e["dtype"], e["layout"], e["mode"], e["m"], e["n"], e["k"])


def merge_entries(old: tuple[dict, ...] | list[dict], new: list[dict]) -> list[dict]:
    """``new`` entries, plus the ``old`` ones for (device, case, mode) this run did not tune;
    in suite order (dtype, layout, mode, shape)."""
    by_key = {_entry_key(e): e for e in old}
    by_key.update({_entry_key(e): e for e in new})
    return sorted(by_key.values(), key=_entry_key)


def write_table(
    entries: list[dict], path: Path, note: str, devices: Iterable[DeviceTraits] = ()
) -> None:
    """The table file: the measured devices' traits, then the entries (``kernels.gpu_plan``)."""
    lines = [
        f"# {note}",
        "# Written by `python -m kernels.bench --tune`; read by kernels.gpu_plan.",
    ]
    lines.append("")
    for d in devices:
        lines.append("[[device]]")
        lines += [f"{k} = {json.dumps(v)}" for k, v in d.as_row().items()]
        lines.append("")
    for e in entries:
        lines.append("[[entry]]")
        for k, v in e.items():
            lines.append(f"{k} = {json.dumps(v)}")
        lines.append("")
    tmp = path.with_suffix(".tmp")
    tmp.write_text("\n".join(lines), encoding="utf-8")
    tmp.replace(path)
