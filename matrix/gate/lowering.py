"""A values case's lowering changed on an ``aot`` column: decided by its values where measured.

The fp probe records each values case (``fp.values.maximum`` on ``bfloat16``) twice over: on an
``aot`` column (compiled for a target without its GPU) as the TTIR ops that compute the stored
value (``arith.extf arith.extf arith.maxnumf`` on 3.8.0, ``arith.maxnumf`` on 3.9.0), and on the
``interpret`` and ``gpu`` columns as the values it computes on edge inputs, one cell per input
(``bfloat16(-1,2)``: ``right``, ``wrong``, an observed ``-0.0``), each judged against the
reference its own release compiles the case to (``probes/fp/semantics.toml``).

Other ops are not other values. So (``judge``):

- An ``aot:T`` lowering change of a values case whose values were measured on ``gpu:T`` on both
  releases, every value cell of that case the same there (status, the reference it was judged
  against, and the got value of a wrong one) under one result dtype (the case's type cell on
  ``gpu:T``), is *lowering changed, values equal on the GPU* (``LOWERING_EQUAL``): listed,
  never blocking. Equal on the inputs the battery asks, no more.
- Where those values are missing, not observed, or not comparable on either side, it stays a
  behaviour change (fail closed), and says that it is lowering only and what would decide it
  (``GateFinding.lowering``): the GPU values of that case. Where they changed, or the case's
  result dtype did, it says so there.

The interpreter's values do not decide it: its numerics are numpy's, not the compiled code's.

And (``fold_dtype``): a lowering change whose ops differ only by conversions
(``matrix/data/lowering.toml``), in a column where the result dtype of the same operation on the
same operands changed too (``fp.binary_fn.maximum[bfloat16,bfloat16]`` fp32 -> bf16, the type
cell ``UsageMap.values_type_cell`` names), at lines that dtype change is tied to, follows from
it: listed under it ("follows from it (not counted again)"), as ``matrix.gate.roots`` lists
what follows from a removal. The dtype change stays blocking: folding never changes a verdict.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from matrix.analyze import fingerprint as fp
from matrix.analyze.profile.model import SCALAR_KINDS, UsageMap
from matrix.core import DATA_DIR, NO_OBSERVATION_STATUSES, Column, DataFileError, Release, load_toml
from matrix.gate.findings import BEHAVIOUR, LOWERING_EQUAL, UNSAFE_KINDS, Comparison, GateFinding
from matrix.results import Result, Run

LOWERING_PATH = DATA_DIR / "lowering.toml"
NO_OP = "(no op)"  # an aot values cell whose stored value needs no op (probes/fp/fp_checks.py)
UNDEFINED = "undefined"  # a value cell whose result is undefined for its inputs: not asked


@lru_cache(maxsize=2)
def conversions(path: Path = LOWERING_PATH) -> frozenset[str]:
    """The TTIR ops that only convert a value between types (matrix/data/lowering.toml)."""
    got = load_toml(path).get("conversions")
    if not isinstance(got, list) or not got or not all(isinstance(x, str) for x in got):
        raise DataFileError(path, "conversions", "a non-empty list of TTIR op names", got)
    return frozenset(got)


def ops_of(status: str | None) -> list[str] | None:
    """The TTIR ops an ``aot`` values cell names (attributes kept), or None where it names a
    status instead (``rejected``, ``error``)."""
    if status is None:
        return None
    if status == NO_OP:
        return []
    words = status.split()
    if not words or not all("." in w.split("{", 1)[0] for w in words):
        return None
    return words


def lowering_change(f: GateFinding) -> bool:
    """Whether ``f`` is a change of the TTIR ops of a values case on an ``aot`` column: ops on
    both sides (a refusal on either side is a change of what compiles, not of how)."""
    if not f.probe.startswith(fp.VALUES) or fp.cell_parts(f.probe) is None:
        return False
    try:
        col = Column.parse(f.where)
    except ValueError:
        return False
    return (
        col.backend == "aot"
        and col.target is not None
        and ops_of(f.baseline) is not None
        and ops_of(f.candidate) is not None
    )


def gpu_column(where: str) -> str:
    """The column that measures the values of an ``aot:T`` column's cases: ``gpu:T``."""
    return str(Column("gpu", Column.parse(where).target))


# ------------------------------------------------------------------------------ values equal


@dataclass(frozen=True)
class Values:
    """What one side's GPU row says of one values case: its cells (input key -> status), the
    reference they were judged against, the got value of each wrong one; or why there is
    nothing to compare (``missing``)."""

    cells: Mapping[str, str]
    reference: Any = None
    got: Mapping[str, Any] | None = None
    missing: str = ""


def _values(rows: Sequence[Result], label: str, where: str) -> Values:
    """One side's ``Values`` of the case ``label`` from its rows of the case's group on the
    GPU column ``where`` (``missing`` says why there is none, without naming the side)."""
    group = rows[0].probe if rows else ""
    if not rows:
        return Values({}, missing=f"no {where} result")
    observed = [r for r in rows if r.status == fp.OBSERVED]
    if not observed:
        return Values({}, missing=f"`{rows[0].status}`")
    views = []
    for r in observed:
        cells = {
            k: str(v) for k, v in (r.data.get("cells") or {}).items() if fp.value_case(k) == label
        }
        sem = (r.data.get("semantics") or {}).get(label) or {}
        got = {k: fp.evidence(r, k).get("values", {}).get("got") for k in cells}
        views.append(Values(cells, sem.get("reference") if isinstance(sem, dict) else None, got))
    if any(v != views[0] for v in views[1:]):
        return Values({}, missing=f"{len(views)} {group} rows that disagree")
    return views[0]


def _measured(status: str) -> bool:
    """A value cell that holds a value the release computed (or an input it leaves undefined),
    not a refusal or a cell the probe did not get to look at."""
    return status not in NO_OBSERVATION_STATUSES and not fp.refused(status)


@dataclass(frozen=True)
class Verdict:
    """Whether a case's GPU values are equal on both sides, and the evidence in words."""

    equal: bool
    measured: bool  # both sides measured every value cell (then ``equal`` is a finding)
    text: str


def _result_dtype(rows: Sequence[Result], cell: str) -> str | None:
    """The status of the type cell ``cell`` (``fp.binary_fn.maximum[bfloat16,bfloat16]``) in
    one side's rows of its group: the case's result dtype there, or None where not recorded."""
    group_cell = fp.cell_parts(cell)
    if group_cell is None:
        return None
    seen = set()
    for r in rows:
        cells = r.data.get("cells") or {}
        if r.status == fp.OBSERVED and group_cell[1] in cells:
            seen.add(str(cells[group_cell[1]]))
    return seen.pop() if len(seen) == 1 else None


def compare_values(
    b_rows: Sequence[Result],
    c_rows: Sequence[Result],
    label: str,
    where: str,
    upgrade: tuple[Release, Release],
    dtypes: tuple[str | None, str | None] = (None, None),
    type_cell: str = "",
) -> Verdict:
    """The GPU values of the values case ``label`` (rows of its group on column ``where``, per
    side) compared: equal only where both sides observed every value cell of the case, judged
    against the same reference, with the same status (and, for a wrong one, the same value),
    and the case's result dtype (``dtypes``: its ``type_cell`` on that column, per side) is
    the same: ``right`` is judged against a reference computed in the result dtype (rounded,
    wrapped), so under two dtypes two ``right`` cells need not be one value, and a sum whose
    inputs were chosen exact in bf16 says nothing of one that now accumulates in bf16."""
    baseline, candidate = upgrade
    b = _values(b_rows, label, where)
    c = _values(c_rows, label, where)
    if b.missing or c.missing:
        said: dict[str, list[str]] = {}  # the same reason on both sides is said once
        for release, v in ((baseline, b), (candidate, c)):
            if v.missing:
                said.setdefault(v.missing, []).append(str(release))
        return Verdict(
            False, False, "; ".join(f"{w} on {' and '.join(r)}" for w, r in said.items())
        )
    empty = [str(r) for r, v in ((baseline, b), (candidate, c)) if not v.cells]
    if empty:
        return Verdict(False, False, f"no value cell of `{label}` on {' and '.join(empty)}")
    unmeasured = {
        str(r): sorted({st for st in v.cells.values() if not _measured(st)})
        for r, v in ((baseline, b), (candidate, c))
    }
    if any(unmeasured.values()):
        statuses = sorted({st for sts in unmeasured.values() for st in sts})
        sides = [r for r, sts in unmeasured.items() if sts]
        shown = "/".join(f"`{st}`" for st in statuses)
        return Verdict(False, False, f"{shown} on {' and '.join(sides)}")
    if set(b.cells) != set(c.cells):
        return Verdict(False, False, "the two sides asked different inputs")
    if not any(st != UNDEFINED for st in b.cells.values()):
        return Verdict(False, False, f"every input of `{label}` is undefined: no value to compare")
    if dtypes[0] != dtypes[1] and None not in dtypes and not any(map(fp.refused, dtypes)):
        return Verdict(
            False,
            True,
            f"the case's result dtype changed: `{dtypes[0]}` → `{dtypes[1]}` ({type_cell})",
        )
    unknown = [str(r) for r, d in zip(upgrade, dtypes, strict=True) if d is None or fp.refused(d)]
    if unknown:
        return Verdict(
            False,
            False,
            f"the case's result dtype ({type_cell or 'its type cell'}) is not recorded on "
            + " and ".join(unknown),
        )
    if b.reference != c.reference:
        return Verdict(
            False,
            True,
            f"judged against `{b.reference}` on {baseline}, `{c.reference}` on {candidate}",
        )
    changed = [
        k
        for k in b.cells
        if b.cells[k] != c.cells[k] or (b.got or {}).get(k) != (c.got or {}).get(k)
    ]
    if changed:
        k = changed[0]
        more = f" and {len(changed) - 1} more" if len(changed) > 1 else ""
        return Verdict(
            False, True, f"the values changed: `{k}` `{b.cells[k]}` → `{c.cells[k]}`{more}"
        )
    counts: dict[str, int] = {}
    for st in b.cells.values():
        counts[st] = counts.get(st, 0) + 1
    shown = ", ".join(f"{n} `{st}`" for st, n in sorted(counts.items(), key=lambda kv: -kv[1]))
    ref = f", judged against `{b.reference}` on both" if b.reference else ""
    return Verdict(
        True,
        True,
        f"the {len(b.cells)} value cell(s) of `{label}` are the same on {baseline} and "
        f"{candidate} ({shown}{ref}; result dtype `{dtypes[0]}` on both)",
    )


def _gpu_rows(runs: Sequence[Run]) -> dict[tuple[str, str | None], list[Result]]:
    """The fingerprint's GPU group rows (values and types) by (group, target)."""
    out: dict[tuple[str, str | None], list[Result]] = {}
    for run in runs:
        for r in run.results:
            if r.backend == "gpu" and fp.is_group(r):
                out.setdefault((r.probe, r.target), []).append(r)
    return out


def judge(
    out: Comparison,
    base_runs: Sequence[Run],
    cand_runs: Sequence[Run],
    baseline: Release,
    candidate: Release,
    usage: UsageMap,
) -> None:
    """Decide each lowering change among ``out``'s behaviour changes by the GPU values of its
    case (the module's rule): equal on both sides -> ``LOWERING_EQUAL``; otherwise it stays,
    saying what decides it (``GateFinding.lowering``) or that the values changed too.
    ``usage`` names the type cell that records a case's result dtype (``values_type_cell``)."""
    base_rows, cand_rows = _gpu_rows(base_runs), _gpu_rows(cand_runs)
    for f in out.findings:
        if f.kind != BEHAVIOUR or not lowering_change(f):
            continue
        group, label = fp.cell_parts(f.probe) or ("", "")
        gpu = gpu_column(f.where)
        target = Column.parse(gpu).target
        key = (group, target)
        cell = usage.values_type_cell(fp.group_name(group), label) or ""
        of = (fp.cell_parts(cell) or ("", ""))[0]
        dtypes = (
            _result_dtype(base_rows.get((of, target), []), cell),
            _result_dtype(cand_rows.get((of, target), []), cell),
        )
        verdict = compare_values(
            base_rows.get(key, []),
            cand_rows.get(key, []),
            label,
            gpu,
            (baseline, candidate),
            dtypes,
            cell,
        )
        if verdict.equal:
            f.kind = LOWERING_EQUAL
            f.evidence.append(f"lowering changed, values equal on {gpu}: {verdict.text}")
        elif verdict.measured:
            f.lowering = f"not only the lowering: on {gpu} {verdict.text}"
            f.evidence.append(f.lowering)
        else:
            # (said without the case: an entry lists its cells, and one text for them reads once)
            f.lowering = (
                f"lowering only (the TTIR ops changed); decided by the case's values on {gpu}, "
                f"not comparable: {verdict.text}"
            )
            f.evidence.append(f"{f.lowering} (`{label}`)")


# ------------------------------------------------------------------------- follows from a dtype


def conversions_only(before: str | None, after: str | None) -> bool:
    """Whether two sides' ops differ only by conversions (``conversions``), attributes aside."""
    conv = conversions()
    sides = [ops_of(s) for s in (before, after)]
    if any(s is None for s in sides):
        return False
    kept = [
        [op.split("{", 1)[0] for op in s or [] if op.split("{", 1)[0] not in conv] for s in sides
    ]
    return kept[0] == kept[1]


def _operands(probe: str) -> tuple[str, ...]:
    cell = (fp.cell_parts(probe) or ("", ""))[1]
    return tuple(cell.split("->") if "->" in cell else cell.split(","))


def _explains(root_probe: str, type_cell: str) -> bool:
    """Whether a type cell's change (``root_probe``) is about the operands of the values case
    whose type cell is ``type_cell``: the same cell, or one of the same operation with a scalar
    in place of one of the case's tensor operands (``bfloat16,lit_float`` for
    ``bfloat16,bfloat16``: the profile ties such uses to the case too)."""
    if root_probe == type_cell:
        return True
    mine, theirs = _operands(type_cell), _operands(root_probe)
    if (fp.cell_parts(root_probe) or ("",))[0] != (fp.cell_parts(type_cell) or ("",))[0] or len(
        mine
    ) != 2:
        return False
    if "->" in type_cell or len(theirs) != 2:
        return False
    return all(t == m or t in SCALAR_KINDS for t, m in zip(theirs, mine, strict=True))


def _dtype_change(f: GateFinding) -> bool:
    """A blocking change of a type cell between two result dtypes (no refusal either side)."""
    return (
        f.kind in UNSAFE_KINDS
        and f.baseline is not None
        and f.candidate is not None
        and not fp.refused(f.baseline)
        and not fp.refused(f.candidate)
    )


def fold_dtype(
    findings: list[GateFinding],
    tied: list[tuple[GateFinding, list[Any]]],
    usage: UsageMap,
    unused: Sequence[GateFinding] = (),
    may_why: dict[int, str] | None = None,
) -> list[tuple[GateFinding, GateFinding]]:
    """Take out of ``findings`` (in place) the lowering changes that follow from a result-dtype
    change still in them (the module's rule); return them as (finding, the dtype change).

    A lowering change tied to several lines follows at each line from the dtype change tied
    there; where only some of its lines have one (``tl.maximum(y, eps)`` with an fp32 ``eps``
    computes in fp32 on both releases), it is split: the part at those lines is folded, the
    rest stays a reason of its own (``tied`` and ``may_why``, the report's, follow the split).
    ``unused``: the changes the code does not use (``GateReport.unused``), where the case's
    own type cell may be (``tl.maximum(x, 0)`` ties ``bfloat16,lit_int``, not the case's
    ``bfloat16,bfloat16``): that it changed is what the case's lowering change shows."""
    uses_of = {id(f): list(u) for f, u in tied}

    def sites(f: GateFinding) -> set[tuple[str, int]]:
        return {(u.path, u.line) for u in uses_of.get(id(f), ())}

    # the type cells that changed between two dtypes, per (cell, column), used or not
    changed = {(f.probe, f.where) for f in (*findings, *unused) if _dtype_change(f)}
    roots: dict[tuple[str, str], list[GateFinding]] = {}
    for f in findings:
        split = fp.cell_parts(f.probe)
        if split is not None and not f.probe.startswith(fp.VALUES) and _dtype_change(f):
            roots.setdefault((split[0], f.where), []).append(f)
    folded: list[tuple[GateFinding, GateFinding]] = []
    kept: list[GateFinding] = []
    for f in findings:
        near = _roots_of(f, roots, changed, usage) if f.kind == BEHAVIOUR else []
        pieces = _pieces(uses_of.get(id(f), []), near, sites)
        if not any(root is not None for root, _ in pieces):
            kept.append(f)
            continue
        only = pieces[0][0]
        if len(pieces) == 1 and only is not None:
            folded.append((f, only))
            continue
        tied[:] = [(g, u) for g, u in tied if g is not f]
        for root, uses in pieces:
            part = _part(f, uses, uses_of.get(id(f), []))
            tied.append((part, uses))
            if may_why is not None and id(f) in may_why:
                may_why[id(part)] = may_why[id(f)]
            (kept.append(part) if root is None else folded.append((part, root)))
    findings[:] = kept
    return folded


def _roots_of(
    f: GateFinding,
    roots: Mapping[tuple[str, str], list[GateFinding]],
    changed: set[tuple[str, str]],
    usage: UsageMap,
) -> list[GateFinding]:
    """The dtype changes a lowering change ``f`` may follow from, the case's own type cell
    first: none unless its ops differ only by conversions and its own case's type cell changed
    dtype in the same column; then the blocking changes of that cell, and of those with a
    scalar operand in place of one of its tensors (the profile ties such a use to the case)."""
    if not lowering_change(f) or not conversions_only(f.baseline, f.candidate):
        return []
    group, case = fp.cell_parts(f.probe) or ("", "")
    cell = usage.values_type_cell(fp.group_name(group), case)
    if cell is None or (cell, f.where) not in changed:
        return []
    near = [r for r in roots.get((cell.partition("[")[0], f.where), []) if _explains(r.probe, cell)]
    return sorted(near, key=lambda r: (r.probe != cell, r.probe))


def _pieces(
    uses: Sequence[Any], near: Sequence[GateFinding], sites: Any
) -> list[tuple[GateFinding | None, list[Any]]]:
    """``uses`` by the first of ``near`` tied to each one's line (None: none is)."""
    out: dict[int, tuple[GateFinding | None, list[Any]]] = {}
    for u in uses:
        root = next((r for r in near if (u.path, u.line) in sites(r)), None)
        out.setdefault(id(root), (root, []))[1].append(u)
    return list(out.values())


def _part(f: GateFinding, uses: Sequence[Any], all_uses: Sequence[Any]) -> GateFinding:
    """``f`` with only ``uses`` of its profile's uses (its other use texts kept)."""
    described = {u.describe() for u in all_uses}
    texts = [t for t in f.uses if t not in described]
    texts += list(dict.fromkeys(u.describe() for u in uses))
    return replace(f, uses=texts, evidence=list(f.evidence))
