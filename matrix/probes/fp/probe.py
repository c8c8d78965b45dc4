"""The semantic fingerprint: thousands of small language questions, answered in one launch.

The battery (``fingerprint.toml`` here, expanded by ``battery``) asks for result
dtypes of operators, math functions, reductions, ``tl.where``, ``tl.clamp``, casts, ``tl.dot``
combinations and atomics over every dtype pair and scalar kind; values on edge inputs against a
float64/numpy/torch reference (interpreter and gpu: aot does not run); language rules (module
globals, Python builtins in kernels, one tiny kernel each); and runtime defaults of the host API.

No ``from __future__ import annotations`` here: Triton 3.0's interpreter tells constexpr
parameters by their annotation object, and a string annotation would turn them into tensors.

One ``observe`` returns one row per group (``fp.<group>``): its status is ``observed`` when the
battery ran (each cell has its own Triton status in ``data.cells``), or the harness's own status
when it could not (``error``/``skipped``, with the reason). See ``support.base.Observation.rows``.
"""

import itertools
import os
import time
from typing import Literal

import triton
import triton.language as tl

from matrix.probes.fp import battery as bt
from matrix.probes.fp import fp_checks, fp_env, fp_layout, fp_rules, fp_runtime, fp_warnings
from matrix.probes.fp import semantics as sem
from matrix.probes.fp.battery import trace_battery
from matrix.probes.support.base import Context, Observation, root_cause
from matrix.probes.support.probe_limit import probe_limit_s

NAME = "fp"
BACKENDS = ("interpret", "aot", "gpu")
# aot compiles for one target (matrix/catalog.py says which): the frontend's answers hardly
# depend on the arch, and target-dependent refusals in lowering are not asked (the battery's
# results are dead code after TTIR).


@triton.jit
def battery_kernel(
    i8, i16, i32, i64, o8, o16, o32, o64, s_i32, s_i64, s_f32,
    C_INT: tl.constexpr, C_FLOAT: tl.constexpr, PART: tl.constexpr, BLOCK: tl.constexpr,
    TRACE: tl.constexpr,
):  # fmt: skip
    # The literals are the Python-scalar operands: the code generator makes them constexprs,
    # the interpreter passes them as Python numbers. Each backend's own view is what is asked.
    trace_battery(
        i8, i16, i32, i64, o8, o16, o32, o64, s_i32, s_i64, s_f32,
        C_INT, C_FLOAT, 3, 2.5, True, PART, BLOCK,
    )  # fmt: skip


SCALARS = {"s_i32": 7, "s_i64": 2**40, "s_f32": 1.5}
CONSTEXPRS = {"C_INT": 3, "C_FLOAT": 2.5}
# Which trace this is (``TRACE``, unused in the body): what the battery holds is the Python
# global ``bt.PLAN``, which no cache key sees, so two traces of one PART would share a
# compiled kernel, and the second would launch the first's code untraced. On the H200 every
# per-group values kernel after the first was served from the probe's TRITON_CACHE_DIR: 31 of
# 33 groups ended 'error' ("this group alone: ok", nothing traced) on all ten releases.
_TRACES = itertools.count()
# Backends whose type cases build their operands in registers (``battery.Operands._computed``):
# the interpreter, where a load can read the wrong memory and an op's outcome can depend on
# the data. Compiled backends load them, so that no case is constant-folded away.
COMPUTED_OPERANDS = frozenset({"interpret"})


def _buffers(values: list[bt.ValueCase]):
    import torch

    rows = bt.TYPE_ROWS + 2 * max((v.index + 1 for v in values), default=1)
    ins = {}
    for w in bt.WIDTHS:
        t = torch.arange(1, rows * bt.BLOCK + 1, dtype=torch.int64) % bt.TYPE_DATA_PERIOD + 1
        ins[w] = t.to(getattr(torch, f"int{w}")).reshape(rows, bt.BLOCK)
    fp_checks.encode_inputs(ins, values)
    # Rows by case index, not by count: a part may hold a subset (the GPU values part holds
    # only the cases the frontend accepts), and case k stores into row k.
    out_rows = max((v.index + 1 for v in values), default=1) + 1
    outs = {w: torch.full((out_rows, bt.BLOCK), fp_checks.poison(w),
                          dtype=getattr(torch, f"int{w}")) for w in bt.WIDTHS}  # fmt: skip
    return ins, outs


def _args(ins, outs) -> dict:
    args = {f"i{w}": ins[w] for w in bt.WIDTHS}
    args.update({f"o{w}": outs[w] for w in bt.WIDTHS})
    args.update(SCALARS)
    return args


def _trace(ctx: Context, part: int, cases, values, stop: bool = True) -> tuple[bt.Sink, str]:
    """Run the planned cases once; return what was seen and how the launch/compile ended."""
    from matrix.probes.support.base import CannotObserve, exercise

    bt.PLAN.cases, bt.PLAN.values, bt.PLAN.sink = list(cases), list(values), bt.Sink()
    bt.PLAN.stop_after_trace = stop
    bt.PLAN.computed_operands = ctx.backend in COMPUTED_OPERANDS
    ins, outs = _buffers(values)
    args = _args(ins, outs)
    trace = os.getpid() * 10_000 + next(_TRACES)  # unique across the spawned/forked children
    constexprs = {**CONSTEXPRS, "PART": part, "BLOCK": bt.BLOCK, "TRACE": trace}
    sink = bt.PLAN.sink
    stopped = ""  # how the launch stopped outside Triton, where it did
    try:
        if ctx.backend == "aot":
            # Scalars are described by type, not value: i64 for the one that needs it.
            out = exercise(ctx, battery_kernel, args, constexprs)
        else:
            dev = {k: (v.to(ctx.device) if hasattr(v, "to") else v) for k, v in args.items()}
            out = exercise(ctx, battery_kernel, dev, constexprs)
            for w in bt.WIDTHS:
                outs[w].copy_(dev[f"o{w}"].cpu())
            sink.lowered = sem.lowered_ops(out.value)
    except CannotObserve as e:  # outside Triton: this part's launch, not the whole fingerprint
        sink.cannot_observe = (e.status, e.reason)
        stopped = f"{e.status}: {e.reason}"
        out = None
    sink.ttir_text = _ttir_text(out)
    sink.outputs = outs
    sink.inputs = ins
    if out is None:
        ending = stopped
    elif out.exception is not None and type(root_cause(out.exception)).__name__ == "TraceComplete":
        ending = "traced"
    elif out.exception is not None and isinstance(root_cause(out.exception), sem.TTIRReady):
        ending = "ttir"
    else:
        ending = "ok" if not out.raised else out.exception_text()
    return sink, ending


def _ttir_text(out) -> str | None:
    """The TTIR of an aot compile: read where the compile stopped (``sem.stop_after_ttir``),
    or from the finished compile's artifacts."""
    if out is None:
        return None
    if out.raised:
        cause = root_cause(out.exception)
        return cause.text if isinstance(cause, sem.TTIRReady) else None
    ir = getattr(out.value, "ir", None)
    return ir.get("ttir") if isinstance(ir, dict) else None


# Crashes (an MLIR assertion aborting the process) a part may survive before the rest of its
# cells are given up as `crashed`: each costs one more trace of the part.
MAX_CRASHES = 8


def _parts(battery: bt.Battery, backend: str) -> list[tuple[int, list, list, bool]]:
    """(PART, cases, values, stop after tracing). tl.dot gets a part of its own: it is where
    releases abort inside MLIR, and a crash re-traces only its part."""
    dots = [c for c in battery.cases if c.call == "dot"]
    atomics = [c for c in battery.cases if c.call == "atomic"]
    rest = [c for c in battery.cases if c.call not in ("dot", "atomic")]
    if backend == "aot":
        return [(0, rest, [], True), (4, dots, [], True), (1, atomics, [], False)]
    if backend == "gpu":
        # A compile of the whole battery fails (a refused case leaves a half-built op or
        # function: "PassManager::run failed" on 3.0.0-3.4.0, "error encountered during
        # parsing" on 3.5.1-3.9.0, measured on the H200), so on a GPU the types are traced, as
        # for aot, and the values run in a kernel of their own (``_value_rows``).
        return [(0, rest, [], True), (4, dots, [], True), (1, atomics, [], False)]
    return [(3, rest + atomics, battery.values, False), (4, dots, [], False)]


def trace_isolated(ctx: Context, part: int, cases, values, stop: bool):
    """``_trace`` in a child process, so that a case that kills the process costs that case
    (``crashed``, with the signal) and a re-trace of the rest, not the whole battery."""
    cases, values = list(cases), list(values)
    crashed: dict[str, str] = {}  # "C\tgroup\tkey" / "V\tindex" -> why
    for _ in range(MAX_CRASHES + 1):
        todo_c = [c for c in cases if f"C\t{c.group}\t{c.key}" not in crashed]
        todo_v = [v for v in values if f"V\t{v.index}" not in crashed]
        outcome, last, why = _in_child(ctx, part, todo_c, todo_v, stop)
        if outcome is not None:
            sink, ending = outcome
            for line, reason in crashed.items():
                kind, *rest = line.split("\t")
                if kind == "C":
                    sink.put(rest[0], rest[1], "crashed", reason)
                else:
                    sink.value_errors[int(rest[0])] = ("crashed", reason)
            return sink, ending
        if not last or last == "T" or last in crashed:
            break  # died outside any one case: nothing to single out
        crashed[last] = f"the process died in this case ({why})"
    sink = bt.Sink(traced=True)
    sink.inputs, sink.outputs = _buffers(values)
    for c in cases:
        line = f"C\t{c.group}\t{c.key}"
        sink.put(c.group, c.key, "crashed", crashed.get(line, f"given up after crashes ({why})"))
    for v in values:
        sink.value_errors[v.index] = ("crashed", f"given up after crashes ({why})")
    return sink, f"crashed: {why}"


# How the child that traces a part starts. A GPU child is spawned, a fresh interpreter that
# opens its own CUDA context (a forked child must not inherit one: CUDA does not survive
# fork); elsewhere it is forked, which costs no re-import. Measured on the H200: 3.4.0-3.7.1
# abort inside MLIR on a fingerprint case, which in-process cost the whole GPU battery.
# The two start methods the children below are written for (``_in_child``).
START_METHOD: dict[str, Literal["fork", "spawn"]] = {"gpu": "spawn"}


def _in_child(ctx: Context, part: int, cases, values, stop: bool):
    """``_trace`` in a child: ((sink, ending), None, None), or (None, last log line, why)
    when the child died."""
    import multiprocessing
    import os
    import pickle
    import signal
    import tempfile

    files = []
    for suffix in (".log", ".pickle"):
        fd, path = tempfile.mkstemp(prefix="fp-trace-", suffix=suffix)
        os.close(fd)
        files.append(path)
    log, result = files
    # Each context by its name: typeshed gives Process only to the concrete contexts.
    spawn = START_METHOD.get(ctx.backend, "fork") == "spawn"
    mp = multiprocessing.get_context("spawn") if spawn else multiprocessing.get_context("fork")
    child = mp.Process(
        target=_child_trace, args=(ctx, part, cases, values, stop, log, result), daemon=True
    )
    try:
        child.start()
        child.join()
        with open(log, encoding="utf-8") as f:
            lines = f.read().splitlines()
        with open(result, "rb") as f:
            payload = f.read()
    finally:
        for path in files:
            os.unlink(path)
    if payload and child.exitcode in (0, 1):
        fields, ending = pickle.loads(payload)
        if fields is None:  # our own code failed there: this part is not observed, the rest is
            failed = f"the fingerprint's child failed: {ending}"
            sink = bt.Sink(cannot_observe=("error", failed))
            sink.inputs, sink.outputs = _buffers(values)
            return (sink, f"error: {failed}"), None, None
        sink = bt.Sink(**{k: v for k, v in fields.items() if k in bt.Sink.__dataclass_fields__})
        sink.inputs, sink.outputs = fields.get("inputs"), fields.get("outputs")
        return (sink, ending), None, None
    code = child.exitcode
    why = f"killed by {signal.Signals(-code).name}" if code and code < 0 else f"exit code {code}"
    return None, lines[-1] if lines else "", why


def _child_trace(ctx: Context, part: int, cases, values, stop: bool, log: str, result: str):
    """The child's side: trace, write the sink to ``result`` (the parent reads it after the
    child ends: a file, not a pipe, so a spawned child needs no inherited descriptor)."""
    import os
    import pickle

    code = 0
    try:
        bt.TRACE_LOG = log
        sink, ending = _trace(ctx, part, cases, values, stop)
        payload = pickle.dumps((vars(sink), ending))
    except BaseException as e:  # sent to the parent, which reports it as the ending
        payload, code = pickle.dumps((None, f"{type(e).__name__}: {e}"[:2000])), 1
    with open(result, "wb") as out:
        out.write(payload)
    os._exit(code)  # leave without cleanup handlers (a forked child shares the parent's)


def observe(ctx: Context) -> Observation:
    t0 = time.perf_counter()
    if START_METHOD.get(ctx.backend, "fork") == "fork":
        # The forked parts build their buffers with torch: imported here once, each fork
        # inherits it. Where fp ran first in its child (a ``--probes fp`` run), each part paid
        # the import itself: interpreter types took 7.4 s against 3.1 s, aot 8.1 s against 1.9.
        import torch  # noqa: F401
    battery = bt.load()
    rows: list[Observation] = []
    endings: dict = {}
    value_sink, value_ending = None, ""  # the interpreter runs the values within part 3
    seconds: dict[str, float] = {}  # what each part cost, for docs/fingerprint.md's table
    clock = time.perf_counter()

    def took(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        seconds[name] = round(seconds.get(name, 0.0) + now - clock, 2)
        clock = now

    for part, cases, values, stop in _parts(battery, ctx.backend):
        sink, ending = trace_isolated(ctx, part, cases, values, stop)
        endings[part] = ending
        if not sink.traced:
            # The kernel never reached the battery: nothing was observed; say why, per group.
            endings[part] = f"the battery did not run: {ending}"
            # Outside Triton (a tool or file missing): its status; else our own failure.
            status = sink.cannot_observe[0] if sink.cannot_observe else "error"
            for group in sorted({c.group for c in cases} | {v.group for v in values}):
                rows.append(Observation(status, f"the battery did not run: {ending}",
                                        {}, name=f"fp.{group}"))  # fmt: skip
            continue
        rows.extend(_group_rows(sink, cases, compile_ending=ending))
        if values:
            value_sink, value_ending = sink, ending
    took("types")
    if battery.values:
        rows.extend(_value_rows(ctx, battery.values, value_sink, value_ending, endings))
        took("values")
    rows.extend(fp_rules.rule_rows(ctx, list(battery.raw.get("rules", {}).get("cases", []))))
    took("rules")
    layout = list(battery.raw.get("layout", {}).get("case", []))
    if layout and ctx.backend in ("interpret", "aot"):  # the same cases on both: they part
        rows.extend(fp_layout.layout_rows(ctx, layout))
        took("layout")
    if ctx.backend == "interpret":
        rows.extend(fp_rules.runtime_rows())
        took("runtime")
    if ctx.backend == "aot":  # host-side only: once per release (aot runs in one cell)
        env = battery.raw["env_values"]
        rows.extend(fp_env.env_value_rows(list(env["spellings"]), list(env.get("variables", []))))
        took("env_values")
        rules = list(battery.raw["runtime_semantics"]["rules"])
        rows.extend(fp_runtime.runtime_semantics_rows(rules))
        took("runtime_semantics")
        warned = battery.raw["warnings"]
        rows.extend(fp_warnings.warning_rows(ctx, list(warned["kernels"]), list(warned["env"]),
                                             list(warned["env_kernels"])))  # fmt: skip
        took("warnings")
    cells = sum(len(r.data.get("cells", {})) for r in rows)
    traced = [p for p, e in endings.items() if not e.startswith("the battery did not run")]
    return Observation(
        "observed" if traced else "error",
        f"{len(rows)} groups, {cells} cells in {time.perf_counter() - t0:.1f} s",
        {
            "groups": len(rows),
            "cells": cells,
            "endings": endings,
            "part_seconds": seconds,
            **({"values_semantics": SEMANTICS_SOURCE} if SEMANTICS_SOURCE else {}),
        },
        rows=rows,
    )


def _group_rows(sink: bt.Sink, cases, compile_ending: str) -> list[Observation]:
    order: dict[str, None] = {}
    for c in cases:
        order.setdefault(c.group, None)
    rows = []
    for group in order:
        data = sink.group_data(group)
        detail = "" if compile_ending in ("ok", "traced") else f"after tracing: {compile_ending}"
        rows.append(Observation("observed", detail, data, name=f"fp.{group}"))
    return rows


# Where the values' TTIR is compiled when the backend itself has no target (the interpreter):
# the catalog's aot target for fp (its probe.toml).
SEMANTICS_TARGET = "cuda:90"
# How the child that compiles the values semantics starts: forked from an aot process (it can
# compile, and is warm: measured on 3.0.0 and 3.9.0, a forked child 0.9-2.6 s, a spawned one
# 6.7-8.5 s, most of it re-importing torch), spawned elsewhere (an interpreter process cannot
# compile; a GPU one must not fork its CUDA context).
SEMANTICS_START: dict[str, Literal["fork", "spawn"]] = {"aot": "fork"}
# Where this process's values semantics came from (``run_cache``): the fp row's evidence.
SEMANTICS_SOURCE = ""


def values_semantics(ctx: Context, values: list) -> sem.Semantics:
    """The TTIR ops the installed release compiles each values case to, from a child that
    compiles without the interpreter (``TRITON_INTERPRET`` is read at import, so an interpreter
    process spawns a fresh one; ``SEMANTICS_START``) and stops once TTIR exists. A child that
    fails or dies gives a Semantics that says so (``read`` False), never guessed ops."""
    import multiprocessing
    import os
    import pickle
    import tempfile

    from matrix.probes.support import run_cache

    global SEMANTICS_SOURCE
    target = ctx.target if ctx.backend in ("aot", "gpu") and ctx.target else SEMANTICS_TARGET
    digest = run_cache.key(run_cache.triton_identity(), target, values, run_cache.sources_digest())
    cached = run_cache.load("fp-values-semantics", digest)
    if isinstance(cached, sem.Semantics):
        SEMANTICS_SOURCE = "shared: compiled by an earlier cell of this release in this run"
        return cached
    fd, result = tempfile.mkstemp(prefix="fp-ttir-", suffix=".pickle")
    os.close(fd)
    saved = os.environ.pop("TRITON_INTERPRET", None)
    try:
        spawn = SEMANTICS_START.get(ctx.backend, "spawn") == "spawn"
        mp = multiprocessing.get_context("spawn") if spawn else multiprocessing.get_context("fork")
        child = mp.Process(target=_child_semantics, args=(target, values, result), daemon=True)
        child.start()
    finally:
        if saved is not None:
            os.environ["TRITON_INTERPRET"] = saved
    try:
        child.join()
        with open(result, "rb") as f:
            payload = f.read()
    finally:
        os.unlink(result)
    if payload and child.exitcode == 0:
        semantics = pickle.loads(payload)
        # Only what was read is shared: a failure is each cell's own observation.
        if semantics.ending == "ttir" and run_cache.store("fp-values-semantics", digest, semantics):
            SEMANTICS_SOURCE = "compiled here, shared with this release's later cells in this run"
        else:
            SEMANTICS_SOURCE = "compiled here"
        return semantics
    SEMANTICS_SOURCE = "compiled here"
    why = pickle.loads(payload) if payload else f"the TTIR child ended with {child.exitcode}"
    return sem.Semantics(target, f"not read: {why}", {}, {}, {})


def _child_semantics(target: str, values: list, result: str) -> None:
    import os
    import pickle

    try:
        payload, code = pickle.dumps(_compile_semantics(target, values)), 0
    except BaseException as e:  # sent to the parent, which records it as the ending
        payload, code = pickle.dumps(f"{type(e).__name__}: {e}"[:500]), 1
    with open(result, "wb") as out:
        out.write(payload)
    os._exit(code)


def _compile_semantics(target: str, values: list) -> sem.Semantics:
    """Trace the values for ``target`` (which the frontend refuses), then compile the accepted
    ones to TTIR and attribute its stores to them (a refused case would leave a half-built op
    behind and fail the whole compile)."""
    ctx = Context("aot", target)
    traced, ending = _trace(ctx, 5, [], values, stop=True)
    if not traced.traced:
        return sem.Semantics(target, f"not read: the trace did not run: {ending}", {}, {}, {})
    refused = dict(traced.value_errors)
    accepted = [v for v in values if v.index not in refused]
    stops = sem.stop_after_ttir(target)
    compiled, ending = _trace(ctx, 6, [], accepted, stop=False)
    text = compiled.ttir_text
    if text is None:
        how = "stopped at TTIR" if stops else "compiled"
        dtypes = traced.value_dtypes
        return sem.Semantics(target, f"not read ({how}): {ending}", {}, refused, dtypes)
    stored = [v.index for v in accepted if v.index not in compiled.value_errors]
    refused.update(compiled.value_errors)
    try:
        per_store = sem.case_ops(text, len(stored))
    except sem.SemanticsError as e:
        return sem.Semantics(target, f"not read: {e}", {}, refused, traced.value_dtypes)
    return sem.Semantics(target, "ttir", dict(zip(stored, per_store, strict=True)), refused,
                         traced.value_dtypes)  # fmt: skip


# Kernels a GPU fp run may spend narrowing one failing values group down to the cases that
# fail (``_bisected``): each is a compile. Until 2026-12-07 the 48 were shared by the whole run,
# and the groups narrowed first (minimum, maximum, clamp, where: about 8 each) left none for
# the last three (reduce_dtypes, reduce_nan, cast_float_dtypes), which stayed error on every
# release; now each group has its own.
MAX_BISECT_LAUNCHES = 48
# Seconds before the per-probe limit (--timeout, told to the child: ``probe_limit``) at which
# no narrowing kernel starts any more, kept for the rows and a last kernel: a values kernel took
# about 3-4 s with ten releases at once on the H100 lease's 16 cores, and the GPU run's probe
# took 236 s before its narrowing and 285-298 s with it under a 400 s limit (2026-12-07).
NARROWING_MARGIN_S = 130.0


def _gpu_rows_by_group(ctx: Context, values: list, accepted: list, semantics, whole: str,
                      endings: dict) -> list[Observation]:  # fmt: skip
    """The GPU values rows, one kernel per group, after the kernel of all of them failed
    (``whole``). Where some group's kernel built (so building works here), a group whose own
    kernel fails is halved until each failing case stands alone: that case is ``rejected``
    (the release would not build it: "PassManager::run failed") or ``crashed``, the rest of
    the group observed. Where none built, or the group's ``MAX_BISECT_LAUNCHES`` or the time
    up to ``NARROWING_MARGIN_S`` before the probe's limit ran out first, the group is ``error``
    with both reasons: nothing is blamed on a case that was never seen to build anything."""
    narrowing_s = probe_limit_s() - NARROWING_MARGIN_S
    deadline = time.monotonic() + narrowing_s
    by_group: dict[str, list] = {}
    for v in values:
        by_group.setdefault(v.group, []).append(v)
    ran = {v.index for v in accepted}
    outcomes: dict[str, tuple] = {}
    for group, cases in by_group.items():
        todo = [v for v in cases if v.index in ran]
        outcomes[group] = _group_kernel(ctx, todo)
    built = any(sink is not None for sink, _ in outcomes.values())
    rows: list[Observation] = []
    for group, cases in by_group.items():
        sink, ending = outcomes[group]
        if sink is None and built and not isinstance(ending, tuple):
            todo = [v for v in cases if v.index in ran]
            sink, ending = _bisected(
                ctx, todo, ending, [MAX_BISECT_LAUNCHES], (deadline, narrowing_s)
            )
        if sink is None:
            status, why = ending if isinstance(ending, tuple) else ("error", ending)
            why = f"the values part did not run: {whole}; this group alone: {why}"
            endings[f"5:{group}"] = why
            rows += fp_checks.failed_part_rows(cases, status, why)
            continue
        endings[f"5:{group}"] = ending
        for index, reason in semantics.refused.items():
            sink.value_errors.setdefault(index, reason)
        rows += fp_checks.value_rows(sink, cases, semantics)
    return rows


def _group_kernel(ctx: Context, todo: list):
    """(sink, "ok") for one kernel of the values ``todo``; (None, why) when it failed to
    build or run, (None, (status, why)) when the harness could not run it. An empty ``todo``
    (every case refused by the frontend) is observed: its cells are the refusals."""
    if not todo:
        sink = bt.Sink(traced=True)
        sink.inputs, sink.outputs = _buffers(todo)
        return sink, "ok: every case refused by the frontend"
    sink, ending = trace_isolated(ctx, 5, [], todo, False)
    if sink.cannot_observe is not None:
        return None, sink.cannot_observe
    if sink.traced and ending == "ok":
        return sink, ending
    return None, ending


def _bisected(
    ctx: Context, todo: list, first: str, budget: list[int], deadline: tuple[float, float]
):
    """(sink, ending) for values ``todo`` whose one kernel failed with ``first``: halves,
    recursively, each case that fails alone recorded in ``value_errors``; (None, why) when
    the harness could not run, ``budget`` (kernels left for this group) ran out, or the
    monotonic clock passed ``deadline`` (the time, and the seconds it is from the start)."""
    sink = bt.Sink(traced=True)
    sink.inputs, sink.outputs = _buffers(todo)
    failed: dict[int, tuple[str, str]] = {}
    pending = [todo]
    while pending:
        part = pending.pop()
        if part is todo:
            ending = first  # already launched: _group_kernel
        elif budget[0] <= 0:
            return None, f"{first}; narrowing stopped after {MAX_BISECT_LAUNCHES} kernels"
        elif time.monotonic() > deadline[0]:
            return None, f"{first}; narrowing stopped at {deadline[1]:.0f} s"
        else:
            budget[0] -= 1
            got, ending = _group_kernel(ctx, part)
            if got is not None:
                _merge(sink, got, part)
                continue
            if isinstance(ending, tuple):
                return None, ending
        if len(part) == 1:
            status = "crashed" if ending.startswith("crashed") else "rejected"
            failed[part[0].index] = (status, f"fails to build alone on the GPU: {ending}"[:500])
            continue
        pending += [part[len(part) // 2 :], part[: len(part) // 2]]
    sink.value_errors.update(failed)
    return sink, f"ok after narrowing: {len(failed)} cases fail alone ({first})"[:500]


def _merge(into: bt.Sink, got: bt.Sink, part: list) -> None:
    """Copy what the kernel of ``part`` observed into the group's sink (rows by case index)."""
    for v in part:
        for w in bt.WIDTHS:
            into.outputs[w][v.index] = got.outputs[w][v.index]
        if v.index in got.value_dtypes:
            into.value_dtypes[v.index] = got.value_dtypes[v.index]
        if v.index in got.value_errors:
            into.value_errors[v.index] = got.value_errors[v.index]


def _value_rows(ctx: Context, values: list, sink, ending: str, endings: dict) -> list[Observation]:
    """The values groups' rows: each case judged against the semantics the release compiles
    it to (``values_semantics``). On a GPU the values run in a kernel of their own, holding
    only the cases the frontend accepts. A values part that did not run is no observation:
    its cells are ``error`` (or ``skipped``) with the reason, once per group."""
    semantics = values_semantics(ctx, values)
    endings["semantics"] = f"{semantics.target}: {semantics.ending}"
    if ctx.backend == "aot":
        return fp_checks.ops_rows(values, semantics)
    if ctx.backend == "gpu":
        accepted = [v for v in values if v.index not in semantics.refused]
        sink, ending = trace_isolated(ctx, 5, [], accepted, False)
        endings[5] = ending
        for index, why in semantics.refused.items():
            sink.value_errors.setdefault(index, why)
        if sink.cannot_observe is None and (not sink.traced or ending != "ok"):
            # One case the frontend accepts but the lowering refuses fails the whole kernel
            # ("PassManager::run failed": measured on 3.6.0 with the every-dtype battery), so
            # each group gets a kernel of its own: a failure then costs that group alone.
            return _gpu_rows_by_group(ctx, values, accepted, semantics, ending, endings)
    elif sink is None:
        return []  # the part holding the values did not run: its rows already say why
    if not sink.traced or ending != "ok":
        status = sink.cannot_observe[0] if sink.cannot_observe else "error"
        return fp_checks.failed_part_rows(values, status, f"the values part did not run: {ending}")
    return fp_checks.value_rows(sink, values, semantics)
