"""Fingerprint group ``layout``: block-pointer and tensor-descriptor shape, stride and alignment
rules, asked the same way of the interpreter and of a compile, so that where the two part is a
fact of the matrix (``matrix.analyze.fingerprint.disagreements``), not a surprise on a GPU.

Each case of ``[[layout.case]]`` in the battery file is one small kernel call: a 2-D view of a
torch tensor (shape, row and column strides in elements, a base offset in elements), one block
loaded through ``tl.make_block_ptr`` or an in-kernel tensor descriptor (block shape, offsets,
``boundary_check``, ``padding_option``; strides passed as runtime arguments, as constexprs, or the
usual ``[stride, 1]``), and stored through a well-formed block of the same shape. Its cell:

- interpreter: ``accepted`` (it ran and every element the rule defines is right: in-bounds
  elements, and padded ones where a padding is asked), ``wrong`` (``data.values`` has the first
  wrong element), ``rejected`` (with the innermost message);
- aot (``cuda:90``): ``accepted`` when the compile reached PTX generation (stopped there: the
  rules live in the frontend and the lowering, not in ptxas; ``data.details`` says so when the
  stop did not take), ``rejected`` with the message;
- ``absent`` where the release has no such constructor (found by trying the name, never by
  version), ``crashed`` where the case killed its child, ``error`` where our harness failed.

A compile only sees what is constant: a runtime stride or a misaligned base is a value it is
never shown, so "the interpreter rejects, the compile accepts" on such a case means the check
is left to the launch (the driver, or nothing), which this machine (no GPU) cannot observe.
The cases run in a forked child (the probe process has Triton imported: a fork costs
milliseconds), re-forked past a case that aborts it: such a case costs itself (``crashed``).

No ``from __future__ import annotations``: Triton 3.0's interpreter tells constexpr parameters
by their annotation object.
"""

import json
import multiprocessing
import os
import tempfile
from dataclasses import dataclass
from typing import Any

import triton
import triton.language as tl

from matrix.probes.support.base import CannotObserve, Context, Observation, exercise, root_cause

# A case's child is given this long (seconds) before it counts as hung.
CASE_TIMEOUT = 60.0
# The compile stops when it reaches this stage of the CUDA backend (after TTGIR and LLVM IR).
STOP_STAGE = "make_ptx"

# How the strides reach the constructor: runtime arguments, constexprs, or the usual spelling
# (row stride a runtime argument, last stride the literal 1).
STRIDE_MODES = {"runtime": 0, "row": 1, "constexpr": 2}
# boundary_check spellings: a constexpr code, since a tuple constexpr is not passable on 3.0.
BOUNDARY_CODES = {(): 0, (0,): 1, (1,): 2, (0, 1): 3, (2,): 4}
# order= of a block pointer.
ORDER_CODES = {(1, 0): 0, (0, 1): 1, (0, 0): 2}


@triton.jit
def block_ptr_case(
    src, dst, M, N, sm, sn, CSM: tl.constexpr, CSN: tl.constexpr, STRIDES: tl.constexpr,
    BM: tl.constexpr, BN: tl.constexpr, OM: tl.constexpr, ON: tl.constexpr,
    ORDER: tl.constexpr, BOUNDARY: tl.constexpr, PADDING: tl.constexpr,
):  # fmt: skip
    if STRIDES == 0:
        if ORDER == 0:
            p = tl.make_block_ptr(src, (M, N), (sm, sn), (OM, ON), (BM, BN), (1, 0))
        elif ORDER == 1:
            p = tl.make_block_ptr(src, (M, N), (sm, sn), (OM, ON), (BM, BN), (0, 1))
        else:
            p = tl.make_block_ptr(src, (M, N), (sm, sn), (OM, ON), (BM, BN), (0, 0))
    elif STRIDES == 1:
        p = tl.make_block_ptr(src, (M, N), (sm, 1), (OM, ON), (BM, BN), (1, 0))
    else:
        p = tl.make_block_ptr(src, (M, N), (CSM, CSN), (OM, ON), (BM, BN), (1, 0))
    if BOUNDARY == 0:
        x = tl.load(p, padding_option=PADDING)
    elif BOUNDARY == 1:
        x = tl.load(p, boundary_check=(0,), padding_option=PADDING)
    elif BOUNDARY == 2:
        x = tl.load(p, boundary_check=(1,), padding_option=PADDING)
    elif BOUNDARY == 3:
        x = tl.load(p, boundary_check=(0, 1), padding_option=PADDING)
    else:
        x = tl.load(p, boundary_check=(2,), padding_option=PADDING)
    q = tl.make_block_ptr(dst, (BM, BN), (BN, 1), (0, 0), (BM, BN), (1, 0))
    tl.store(q, x)


# The in-kernel descriptor constructor, reached as ``tl.<name>`` in the kernel body (the
# interpreter patches ``tl``), and defined only under the name the release has: 3.0-3.2 resolve
# every ``tl.<name>`` a kernel mentions when computing its cache key, even in a dead branch.
DESCRIPTOR: str | None  # the constructor's name on this release, None where it has none
if callable(getattr(tl, "make_tensor_descriptor", None)):
    DESCRIPTOR = "tl.make_tensor_descriptor"

    @triton.jit
    def _descriptor(src, M, N, s0, s1, BM: tl.constexpr, BN: tl.constexpr, PADDING: tl.constexpr):
        if PADDING == "":
            d = tl.make_tensor_descriptor(src, shape=[M, N], strides=[s0, s1], block_shape=[BM, BN])
        else:
            d = tl.make_tensor_descriptor(src, shape=[M, N], strides=[s0, s1],
                                          block_shape=[BM, BN], padding_option=PADDING)  # fmt: skip
        return d

    @triton.jit
    def _descriptor_row(src, M, N, s0, BM: tl.constexpr, BN: tl.constexpr, PADDING: tl.constexpr):
        if PADDING == "":
            d = tl.make_tensor_descriptor(src, shape=[M, N], strides=[s0, 1], block_shape=[BM, BN])
        else:
            d = tl.make_tensor_descriptor(src, shape=[M, N], strides=[s0, 1],
                                          block_shape=[BM, BN], padding_option=PADDING)  # fmt: skip
        return d

elif callable(getattr(tl, "_experimental_make_tensor_descriptor", None)):
    DESCRIPTOR = "tl._experimental_make_tensor_descriptor"

    @triton.jit
    def _descriptor(src, M, N, s0, s1, BM: tl.constexpr, BN: tl.constexpr, PADDING: tl.constexpr):
        # No padding_option on these releases: a case asking for one is refused by the frontend
        # (the keyword is passed, so the refusal is the release's own).
        if PADDING == "":
            d = tl._experimental_make_tensor_descriptor(src, shape=[M, N], strides=[s0, s1],
                                                        block_shape=[BM, BN])  # fmt: skip
        else:
            d = tl._experimental_make_tensor_descriptor(src, shape=[M, N], strides=[s0, s1],
                                                        block_shape=[BM, BN],
                                                        padding_option=PADDING)  # fmt: skip
        return d

    @triton.jit
    def _descriptor_row(src, M, N, s0, BM: tl.constexpr, BN: tl.constexpr, PADDING: tl.constexpr):
        if PADDING == "":
            d = tl._experimental_make_tensor_descriptor(src, shape=[M, N], strides=[s0, 1],
                                                        block_shape=[BM, BN])  # fmt: skip
        else:
            d = tl._experimental_make_tensor_descriptor(src, shape=[M, N], strides=[s0, 1],
                                                        block_shape=[BM, BN],
                                                        padding_option=PADDING)  # fmt: skip
        return d

else:
    DESCRIPTOR = None

if DESCRIPTOR is not None:

    @triton.jit
    def descriptor_case(
        src, dst, M, N, sm, sn, CSM: tl.constexpr, CSN: tl.constexpr, STRIDES: tl.constexpr,
        BM: tl.constexpr, BN: tl.constexpr, OM: tl.constexpr, ON: tl.constexpr,
        ORDER: tl.constexpr, BOUNDARY: tl.constexpr, PADDING: tl.constexpr,
    ):  # fmt: skip
        if STRIDES == 0:
            d = _descriptor(src, M, N, sm, sn, BM, BN, PADDING)
        elif STRIDES == 1:
            d = _descriptor_row(src, M, N, sm, BM, BN, PADDING)
        else:
            d = _descriptor(src, M, N, CSM, CSN, BM, BN, PADDING)
        x = d.load([OM, ON])
        o = _descriptor_row(dst, BM, BN, BN, BM, BN, "")
        o.store([0, 0], x)


@dataclass(frozen=True)
class LayoutCase:
    """One case of ``[[layout.case]]``: the view, the block and how it is loaded."""

    name: str
    kind: str  # "block_ptr" | "descriptor"
    dtype: str = "float32"
    shape: tuple[int, int] = (16, 16)
    row_stride: int = 0  # elements; 0: the shape's column count times col_stride
    col_stride: int = 1
    base_offset: int = 0  # elements from the start of the storage
    block: tuple[int, int] = (16, 16)
    offsets: tuple[int, int] = (0, 0)
    strides: str = "row"  # STRIDE_MODES
    boundary: tuple[int, ...] = ()
    padding: str = ""
    order: tuple[int, int] = (1, 0)
    # aot: pass an int argument equal to 1 as a constant, as a JIT launch specializes it
    # (False: as a runtime i32, what ``do_not_specialize`` gives)
    specialize: bool = True
    why: str = ""

    @property
    def strides_elements(self) -> tuple[int, int]:
        return (self.row_stride or self.shape[1] * self.col_stride, self.col_stride)


FIELDS = set(LayoutCase.__dataclass_fields__)
KINDS = ("block_ptr", "descriptor")


def parse_cases(entries: list[dict[str, Any]]) -> list[LayoutCase]:
    """The battery's ``[[layout.case]]`` entries; ValueError names the entry and what is wrong."""
    out = []
    for i, e in enumerate(entries):
        where = f"[[layout.case]] #{i} ({e.get('name', '?')})"
        unknown = set(e) - FIELDS
        if unknown or "name" not in e or e.get("kind") not in KINDS:
            raise ValueError(f"{where}: needs name and kind in {KINDS}; fields {sorted(FIELDS)},"
                             f" got unknown {sorted(unknown)}")  # fmt: skip
        fields: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in e.items()}
        case = LayoutCase(**fields)
        if case.strides not in STRIDE_MODES:
            raise ValueError(f"{where}: strides = {case.strides!r}; one of {sorted(STRIDE_MODES)}")
        if case.boundary not in BOUNDARY_CODES or case.order not in ORDER_CODES:
            known = f"boundary in {sorted(BOUNDARY_CODES)}, order in {sorted(ORDER_CODES)}"
            raise ValueError(f"{where}: {known}; got {case.boundary}, {case.order}")
        out.append(case)
    names = [c.name for c in out]
    if len(set(names)) != len(names):
        raise ValueError(f"[[layout.case]]: names repeat: {names}")
    return out


def _tensors(case: LayoutCase) -> tuple[Any, Any]:
    """The source view (values 1, 2, 3, ... in storage order, so every element is distinct and
    none is a padding value) and the destination block (filled with a sentinel)."""
    import torch

    dtype = getattr(torch, case.dtype)
    (m, n), (rs, cs) = case.shape, case.strides_elements
    size = case.base_offset + (m - 1) * rs + (n - 1) * cs + 1
    flat = (torch.arange(size, dtype=torch.int64) % 1000 + 1).to(dtype)
    src = flat.as_strided((m, n), (rs, cs), case.base_offset)
    dst = torch.full(case.block, -7, dtype=dtype)  # no source element is negative
    return src, dst


def expected(case: LayoutCase, src: Any) -> tuple[Any, Any]:
    """(values, judged): what the load defines for each element of the block, and where it is
    defined. In bounds: the source element. Out of bounds: the padding where the kind pads
    (a descriptor always, zero unless ``nan``; a block pointer on the dims of boundary_check,
    with ``zero`` or ``nan``); elsewhere undefined, not judged."""
    import torch

    (bm, bn), (om, on), (m, n) = case.block, case.offsets, case.shape
    rows = (torch.arange(bm) + om)[:, None].expand(bm, bn)
    cols = (torch.arange(bn) + on)[None, :].expand(bm, bn)
    in_r, in_c = (rows >= 0) & (rows < m), (cols >= 0) & (cols < n)
    inside = in_r & in_c
    values = torch.zeros((bm, bn), dtype=torch.float64)
    values[inside] = src.to(torch.float64)[rows[inside], cols[inside]]
    pad = {"zero": 0.0, "nan": float("nan")}
    if case.kind == "descriptor":
        padded = ~inside
        fill: float | None = pad.get(case.padding or "zero", 0.0)
    else:
        fill = pad.get(case.padding)
        # an element is padded when every dim it is out of is a checked one
        padded = ~inside & (in_r | (0 in case.boundary)) & (in_c | (1 in case.boundary))
        if fill is None:
            padded = torch.zeros_like(inside)
    if fill is not None:
        values[padded] = fill
    judged = inside | padded
    return values, judged


def _kernel(case: LayoutCase) -> Any:
    return block_ptr_case if case.kind == "block_ptr" else globals().get("descriptor_case")


def _constexprs(case: LayoutCase) -> dict[str, Any]:
    rs, cs = case.strides_elements
    return {"CSM": rs, "CSN": cs, "STRIDES": STRIDE_MODES[case.strides],
            "BM": case.block[0], "BN": case.block[1], "OM": case.offsets[0],
            "ON": case.offsets[1], "ORDER": ORDER_CODES[case.order],
            "BOUNDARY": BOUNDARY_CODES[case.boundary], "PADDING": case.padding}  # fmt: skip


class PTXReady(Exception):
    """Raised in place of the backend's PTX stage: the compile got through TTGIR and LLVM IR."""


def _reason(e: BaseException) -> str:
    """The innermost cause and the last line of its message (a CompilationError's message
    starts with the kernel's source), or the raising line for a bare assert."""
    from matrix.probes.support.base import cause_text

    cause = root_cause(e)
    lines = [ln.strip() for ln in str(cause).splitlines() if ln.strip()]
    if not lines:
        return cause_text(e, 300)
    return f"{type(cause).__name__}: {lines[-1]}"[:300]


def run_case(ctx: Context, case: LayoutCase) -> tuple[str, str, dict[str, Any] | None]:
    """(status, detail, values) of one case in this process (call it in a child: an aot case
    patches the backend's PTX stage)."""
    import torch

    from matrix.probes.fp import semantics as sem

    kernel = _kernel(case)
    if kernel is None:
        return "absent", "no in-kernel tensor-descriptor constructor on this release", None
    src, dst = _tensors(case)
    rs, cs = case.strides_elements
    args = {"src": src, "dst": dst, "M": case.shape[0], "N": case.shape[1], "sm": rs, "sn": cs}
    stops = ctx.backend == "aot" and sem.stop_before(ctx.target or "", STOP_STAGE,
                                                     lambda _src: PTXReady())  # fmt: skip
    constexprs = _constexprs(case)
    if ctx.backend == "aot" and case.specialize:
        for name in ("M", "N", "sm", "sn"):
            if args[name] == 1:
                constexprs[name] = args.pop(name)
    try:
        outcome = exercise(ctx, kernel, args, constexprs)
    except CannotObserve as e:  # outside Triton: this case is not observed
        return e.status, e.reason[:300], None
    raised = outcome.exception
    if ctx.backend == "aot":
        if raised is not None and isinstance(root_cause(raised), PTXReady):
            return "accepted", "", None
        if raised is not None:
            return "rejected", _reason(raised), None
        how = "" if not stops else "; the stop before PTX did not take"
        return "accepted", f"compiled to the binary{how}", None
    if raised is not None:
        return "rejected", _reason(raised), None
    want, judged = expected(case, src)
    got = dst.to(torch.float64)
    for i, j in judged.nonzero().tolist():
        g, w = float(got[i, j]), float(want[i, j])
        if not (g == w or (g != g and w != w)):
            return "wrong", f"element [{i},{j}] is {g}, the rule defines {w}", {
                "element": [i, j], "got": repr(g), "reference": repr(w)}  # fmt: skip
    return "accepted", "", None


def _batch_child(ctx: Context, cases: list[LayoutCase], log: str) -> None:
    """The child's side: each case named in ``log`` before it runs and its result after (JSON
    lines, flushed), so that a case that kills the child is the last one named."""
    with open(log, "a", encoding="utf-8") as f:
        for case in cases:
            f.write(json.dumps({"start": case.name}) + "\n")
            f.flush()
            try:
                status, detail, got = run_case(ctx, case)
            except BaseException as e:  # our harness failing: the cell says so, not a verdict
                status, detail, got = "error", f"{type(e).__name__}: {e}"[:300], None
            f.write(json.dumps({"name": case.name, "result": [status, detail, got]}) + "\n")
            f.flush()
    os._exit(0)  # leave without the parent's cleanup handlers


# Crashes a batch survives before the rest of its cases are given up.
MAX_CRASHES = 4


def run_batch(ctx: Context, cases: list[LayoutCase]) -> dict[str, tuple[str, str, Any]]:
    """``run_case`` of every case in one forked child (the first compile of a process costs
    about 2 s, later ones about 0.1 s), re-forked past a case that kills it (``crashed``)."""
    results: dict[str, tuple[str, str, Any]] = {}
    for _ in range(MAX_CRASHES + 1):
        todo = [c for c in cases if c.name not in results]
        if not todo:
            break
        fd, log = tempfile.mkstemp(prefix="fp-layout-", suffix=".jsonl")
        os.close(fd)
        try:
            child = multiprocessing.get_context("fork").Process(target=_batch_child,
                                                                args=(ctx, todo, log))  # fmt: skip
            child.start()
            child.join(CASE_TIMEOUT * len(todo))
            hung = child.is_alive()
            if hung:
                child.kill()
                child.join()
            with open(log, encoding="utf-8") as f:
                lines = [json.loads(line) for line in f if line.strip()]
        finally:
            os.unlink(log)
        started = None
        for line in lines:
            if "start" in line:
                started = line["start"]
            else:
                results[line["name"]], started = tuple(line["result"]), None
        if started is None:
            break  # the child ended between cases: nothing to single out
        why = "hung" if hung else f"exit code {child.exitcode}"
        results[started] = ("crashed", f"the case killed its child ({why})", None)
    for c in cases:
        results.setdefault(c.name, ("crashed", "given up after crashes of earlier cases", None))
    return results


def layout_rows(ctx: Context, entries: list[dict[str, Any]]) -> list[Observation]:
    """The ``fp.layout`` row of this backend: one cell per case."""
    cases = parse_cases(entries)
    cells: dict[str, str] = {}
    details: dict[str, str] = {}
    values: dict[str, dict[str, Any]] = {}
    results = run_batch(ctx, cases)
    for case in cases:
        status, detail, got = results[case.name]
        cells[case.name] = status
        if detail:
            details[case.name] = detail
        if got:
            values[case.name] = got
    data: dict[str, Any] = {"cells": cells, "constructor": DESCRIPTOR or "absent"}
    if details:
        data["details"] = details
    if values:
        data["values"] = values
    return [Observation("observed", "", data, name="fp.layout")]
