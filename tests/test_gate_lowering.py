"""A values case's lowering change on an aot column, decided by its values where measured, and
one that follows from a result-dtype change folded under it (matrix/gate/lowering.py). Small
synthetic runs: the statuses are made up, they test the gate's logic, not claims about Triton.

- ``aot:T`` ops changed, every value cell of that case equal on ``gpu:T`` on both sides (same
  status, same reference, same got value): listed, never blocking;
- the GPU values missing, not observed, asked of no input, judged against another reference,
  or changed: still blocking, saying that it is lowering only and what decides it;
- a lowering change that differs only by conversions, where the same operation's result dtype
  changed in the same column at the same lines: listed under that change, not counted again.
"""

from __future__ import annotations

from typing import Any

import pytest

from matrix.analyze import fingerprint as fp
from matrix.analyze.profile import USED, Profile, Use, load_map
from matrix.core import Release
from matrix.gate import compare as gc
from matrix.gate import lowering
from matrix.gate import verdict as gv
from matrix.results import Result, Run
from matrix.scan import ScanReport

OLD, NEW = Release.parse("3.8.0"), Release.parse("3.9.0")
MAX = "fp.values.maximum"
EXT = "arith.extf arith.extf arith.maxnumf"  # bf16 computed in fp32 (extend, then max)
NUM = "arith.maxnumf"


def _aot(ops: dict[str, str], group: str = MAX, target: str = "cuda:90") -> Result:
    return Result(group, "aot", target, "observed", "", 0.0, {"cells": ops})


def _gpu(
    cells: dict[str, str],
    group: str = MAX,
    target: str = "cuda:90",
    reference: str = "num_minmax",
    status: str = "observed",
    values: dict[str, Any] | None = None,
) -> Result:
    labels = {fp.value_case(k) for k in cells}
    data: dict[str, Any] = {"cells": cells, "semantics": {lb: {"reference": reference}
                                                         for lb in labels}}  # fmt: skip
    if values:
        data["values"] = values
    return Result(group, "gpu", target, status, "", 0.0, data)


def _gpu_types(cells: dict[str, str], group: str = "fp.binary_fn.maximum") -> Result:
    """The GPU column's type row: the result dtype of each operation, per operands."""
    return Result(group, "gpu", "cuda:90", "observed", "", 0.0, {"cells": cells})


# tl.maximum's result dtypes on the GPU column, the same on both sides unless a test says
DTYPES = _gpu_types({"bfloat16,bfloat16": "bf16", "float16,float16": "fp16",
                     "float8e5,float8e5": "fp8e5"})  # fmt: skip


def _run(release: str, results: list[Result]) -> Run:
    return Run(id=f"triton-{release}-numpy-2.4.6", env={"triton": release, "numpy": "2.4.6"},
               results=results)  # fmt: skip


def _decide(base: list[Result], cand: list[Result], profile: Profile | None = None):
    report = gv.GateReport("3.8.0", "3.9.0", "raw")
    runs = [_run("3.8.0", base), _run("3.9.0", cand)]
    gv.decide_runs(report, runs, OLD, NEW, [], ScanReport(), profile=profile)
    report.decide()
    return report


BF16 = {"bfloat16(-1,2)": "right", "bfloat16(nan,1.0)": "right", "bfloat16(-0.0,0.0)": "0.0"}
F16 = {"float16(-1,2)": "right", "float16(-0.0,0.0)": "0.0"}


def _only(report: gv.GateReport, probe: str) -> gc.GateFinding:
    [f] = [f for f in report.comparison.findings if f.probe == probe]
    return f


# ----------------------------------------------------------------------- 1. values decide it


def test_a_lowering_change_whose_gpu_values_are_equal_is_listed_never_blocking():
    base = [_aot({"bfloat16": EXT, "float16": NUM}), _gpu({**BF16, **F16}), DTYPES]
    cand = [_aot({"bfloat16": NUM, "float16": NUM}), _gpu({**BF16, **F16}), DTYPES]
    report = _decide(base, cand)
    assert report.exit_code == gv.EXIT_SAFE, gv.render_markdown(report)
    f = _only(report, f"{MAX}[bfloat16]")
    assert (f.kind, f.where, f.baseline, f.candidate) == (
        gc.LOWERING_EQUAL,
        "aot:cuda:90",
        EXT,
        NUM,
    )
    assert any(
        "values equal on gpu:cuda:90: the 3 value cell(s) of `bfloat16` are the same" in e
        and "judged against `num_minmax` on both; result dtype `bf16` on both" in e
        for e in f.evidence
    ), f.evidence
    md = gv.render_markdown(report)
    assert "### Lowering changed, values equal on the GPU (never blocking) (1)" in md
    assert "1 lowering change(s) with values equal on the GPU" in md
    doc = report.to_dict()
    assert doc["counts"]["lowering_values_equal"] == 1 and doc["counts"]["blocking"] == 0
    assert [x["probe"] for x in doc["lowering_values_equal"]] == [f"{MAX}[bfloat16]"]


def test_only_the_cells_of_the_changed_case_decide_it():
    """bfloat16's lowering changed; float16's values changed, bfloat16's did not: equal. The
    reverse (bfloat16's values changed) blocks, naming the input."""
    base = [_aot({"bfloat16": EXT}), _gpu({**BF16, **F16}), DTYPES]
    cand = [_aot({"bfloat16": NUM}), _gpu({**BF16, **F16, "float16(-0.0,0.0)": "-0.0"}), DTYPES]
    assert _only(_decide(base, cand), f"{MAX}[bfloat16]").kind == gc.LOWERING_EQUAL
    cand = [_aot({"bfloat16": NUM}), _gpu({**BF16, "bfloat16(-0.0,0.0)": "-0.0", **F16}), DTYPES]
    report = _decide(base, cand)
    f = _only(report, f"{MAX}[bfloat16]")
    assert f.kind == gc.BEHAVIOUR
    assert f.lowering == (
        "not only the lowering: on gpu:cuda:90 the values changed: `bfloat16(-0.0,0.0)` `0.0` → "
        "`-0.0`"
    )
    assert report.exit_code == gv.EXIT_UNSAFE


def test_a_case_whose_name_starts_another_is_read_apart():
    """``float8e5`` and ``float8e5b16`` are two cases of one group: the other's cells are not
    this one's."""
    e5 = {"float8e5(-1,2)": "right"}
    b16 = {"float8e5b16(-1,2)": "right"}
    base = [_aot({"float8e5": EXT}), _gpu({**e5, **b16}), DTYPES]
    cand = [_aot({"float8e5": NUM}), _gpu({**e5, "float8e5b16(-1,2)": "wrong"}), DTYPES]
    assert _only(_decide(base, cand), f"{MAX}[float8e5]").kind == gc.LOWERING_EQUAL


def test_a_reduction_case_is_its_own_value_cell():
    """A reduction's values cell is keyed by the case itself (``argmax.bfloat16``), as the aot
    cell is: the mapping reads it as that case."""
    group = "fp.values.reduce_nan"
    argmax = _gpu_types({"bfloat16": "int32"}, "fp.reduce.argmax")
    base = [
        argmax,
        _aot({"argmax.bfloat16": "arith.extf tt.reduce"}, group),
        _gpu({"argmax.bfloat16": "right", "argmax.float16": "right"}, group, reference=""),
    ]
    cand = [
        argmax,
        _aot({"argmax.bfloat16": "tt.reduce"}, group),
        _gpu({"argmax.bfloat16": "right", "argmax.float16": "wrong"}, group, reference=""),
    ]
    assert _only(_decide(base, cand), f"{group}[argmax.bfloat16]").kind == gc.LOWERING_EQUAL


@pytest.mark.parametrize(
    ("gpu_base", "gpu_cand", "said"),
    [
        (None, _gpu(BF16), "no gpu:cuda:90 result on 3.8.0"),
        (_gpu(BF16, status="error"), _gpu(BF16, status="error"), "`error` on 3.8.0 and 3.9.0"),
        (_gpu({k: "error" for k in BF16}), _gpu(BF16), "`error` on 3.8.0"),
        (_gpu({k: "rejected" for k in BF16}), _gpu({k: "rejected" for k in BF16}),
         "`rejected` on 3.8.0 and 3.9.0"),
        (_gpu(F16), _gpu(F16), "no value cell of `bfloat16` on 3.8.0 and 3.9.0"),
        (_gpu(BF16, target="cuda:80"), _gpu(BF16, target="cuda:80"),
         "no gpu:cuda:90 result on 3.8.0 and 3.9.0"),
        (_gpu({**BF16, "bfloat16(1.0,1.0)": "right"}), _gpu(BF16),
         "the two sides asked different inputs"),
        (_gpu({k: "undefined" for k in BF16}), _gpu({k: "undefined" for k in BF16}),
         "every input of `bfloat16` is undefined: no value to compare"),
    ],
    ids=["missing", "group-error", "cells-error", "refused", "no-input", "other-target",
         "other-inputs", "undefined"],
)  # fmt: skip
def test_without_comparable_gpu_values_it_still_blocks_saying_it_is_lowering_only(
    gpu_base, gpu_cand, said
):
    base = [_aot({"bfloat16": EXT}), *([gpu_base] if gpu_base else []), DTYPES]
    cand = [_aot({"bfloat16": NUM}), gpu_cand, DTYPES]
    report = _decide(base, cand)
    assert report.exit_code == gv.EXIT_UNSAFE, gv.render_markdown(report)
    f = _only(report, f"{MAX}[bfloat16]")
    assert f.kind == gc.BEHAVIOUR
    assert f.lowering.startswith("lowering only (the TTIR ops changed); decided by the case's "
                                 "values on gpu:cuda:90, not comparable: "), f.lowering  # fmt: skip
    assert f.lowering.endswith(said), f.lowering
    [entry] = [e for e in report.blocking() if e.group == MAX]
    assert entry.lowering == [f.lowering] and f.lowering in entry.line()
    assert report.to_dict()["blocking"][0]["lowering"] == [f.lowering]


def test_values_under_another_result_dtype_are_not_equal():
    """``right`` on both sides under two result dtypes: each equals a reference computed in its
    own dtype, so not one value (and a sum now accumulating in bf16 is a change even where the
    battery's inputs add up exactly); with no result dtype recorded, not comparable."""
    base = [_aot({"bfloat16": EXT}), _gpu(BF16), _gpu_types({"bfloat16,bfloat16": "fp32"})]
    cand = [_aot({"bfloat16": NUM}), _gpu(BF16), DTYPES]
    report = _decide(base, cand)
    f = _only(report, f"{MAX}[bfloat16]")
    assert f.kind == gc.BEHAVIOUR
    said = "result dtype changed: `fp32` → `bf16` (fp.binary_fn.maximum[bfloat16,bfloat16])"
    assert f.lowering.startswith("not only the lowering: on gpu:cuda:90 the case's "), f.lowering
    [entry] = [e for e in report.blocking() if e.group == MAX]
    assert f.lowering.endswith(said) and said in entry.line()
    f = _only(_decide(base[:2], cand), f"{MAX}[bfloat16]")
    assert f.kind == gc.BEHAVIOUR
    assert f.lowering.endswith("the case's result dtype (fp.binary_fn.maximum[bfloat16,bfloat16]) "
                               "is not recorded on 3.8.0"), f.lowering  # fmt: skip


def test_values_judged_against_another_reference_are_not_equal():
    """``right`` on both sides says nothing of equal values where the references differ."""
    base = [_aot({"bfloat16": EXT}), _gpu(BF16, reference="num_minmax"), DTYPES]
    cand = [_aot({"bfloat16": NUM}), _gpu(BF16, reference="ieee_minmax"), DTYPES]
    f = _only(_decide(base, cand), f"{MAX}[bfloat16]")
    assert f.kind == gc.BEHAVIOUR
    assert any("judged against `num_minmax` on 3.8.0, `ieee_minmax` on 3.9.0" in e
               for e in f.evidence)  # fmt: skip


def test_a_wrong_value_is_equal_only_where_the_same_value_came_out():
    key = "bfloat16(nan,1.0)"

    def wrong(got: str) -> Result:
        return _gpu({**BF16, key: "wrong"}, values={key: {"reference": "1.0", "got": got}})

    base = [_aot({"bfloat16": EXT}), wrong("nan"), DTYPES]
    assert _only(_decide(base, [_aot({"bfloat16": NUM}), wrong("nan"), DTYPES]),
                 f"{MAX}[bfloat16]").kind == gc.LOWERING_EQUAL  # fmt: skip
    f = _only(_decide(base, [_aot({"bfloat16": NUM}), wrong("-inf"), DTYPES]),
              f"{MAX}[bfloat16]")  # fmt: skip
    assert f.kind == gc.BEHAVIOUR


def test_a_refusal_is_no_lowering_change():
    """ops -> rejected: the candidate no longer compiles the case; that blocks as before and
    is not called lowering only."""
    base = [_aot({"bfloat16": EXT}), _gpu(BF16), DTYPES]
    cand = [_aot({"bfloat16": "rejected"}), _gpu(BF16), DTYPES]
    f = _only(_decide(base, cand), f"{MAX}[bfloat16]")
    assert (f.kind, f.lowering) == (gc.BEHAVIOUR, "")


def test_the_cell_the_ops_text_is():
    assert lowering.ops_of("arith.extf tt.fp_to_fp{rounding=rtne}") == [
        "arith.extf",
        "tt.fp_to_fp{rounding=rtne}",
    ]
    assert lowering.ops_of("(no op)") == []
    assert [lowering.ops_of(s) for s in ("rejected", "error", "absent", "right", None)] == [
        None
    ] * 5


# ------------------------------------------------------------------- 2. follows from a dtype


def test_the_type_cell_of_a_values_case():
    usage = load_map()
    assert usage.values_type_cell("values.maximum", "bfloat16(-1,2)") == (
        "fp.binary_fn.maximum[bfloat16,bfloat16]"
    )
    assert usage.values_type_cell("values.maximum_nan_all", "bfloat16") == (
        "fp.binary_fn.maximum[bfloat16,bfloat16]"
    )
    assert usage.values_type_cell("values.reduce_nan", "argmax.bfloat16") == (
        "fp.reduce.argmax[bfloat16]"
    )
    assert usage.values_type_cell("values.cast_float_dtypes", "bfloat16->float16") == (
        "fp.cast.to[bfloat16->float16]"
    )
    assert usage.values_type_cell("values.clamp", "bfloat16") == "fp.clamp[bfloat16,bfloat16]"
    assert usage.values_type_cell("values.nonesuch", "bfloat16") is None


TYPES = "fp.binary_fn.maximum"


def _types(cells: dict[str, str], target: str = "cuda:90") -> Result:
    return Result(TYPES, "aot", target, "observed", "", 0.0, {"cells": cells})


def _profile(*lines: int, kinds: frozenset[str] = frozenset({"bfloat16"})) -> Profile:
    return Profile(
        uses=[Use("binary_fn.maximum", (kinds, kinds), path="k.py", line=n, kernel="k",
                  code="tl.maximum(x, y)") for n in lines]
    )  # fmt: skip


def test_a_lowering_change_that_follows_from_a_dtype_change_is_listed_under_it():
    """No GPU values (fail closed), but the bf16 lowering lost only its extensions where
    tl.maximum(bf16, bf16) went fp32 -> bf16, at the same line: one reason, not two."""
    base = [_aot({"bfloat16": EXT}), _types({"bfloat16,bfloat16": "fp32"})]
    cand = [_aot({"bfloat16": NUM}), _types({"bfloat16,bfloat16": "bf16"})]
    report = _decide(base, cand, _profile(12))
    assert report.exit_code == gv.EXIT_UNSAFE
    [(f, root)] = report.folded_dtype
    assert (f.probe, root.probe) == (f"{MAX}[bfloat16]", f"{TYPES}[bfloat16,bfloat16]")
    assert f.lowering  # still said: lowering only, no GPU values
    [entry] = report.blocking()
    assert (entry.group, entry.relevance) == (TYPES, USED)
    assert "follows from it (not counted again): fp.values.maximum" in entry.line()
    doc = report.to_dict()
    assert doc["counts"]["follows_from_dtype"] == 1 and doc["counts"]["blocking"] == 1
    assert doc["follows_from_dtype"][0]["root"] == f"{TYPES}[bfloat16,bfloat16]"
    md = gv.render_markdown(report)
    assert "1 lowering change(s) follow from a result-dtype change (listed under it)" in md
    assert "### Follows from a result-dtype change (1)" in md


@pytest.mark.parametrize(
    ("ops", "types_after", "types_target", "lines", "why"),
    [
        (("arith.cmpi arith.select", "arith.minsi"), "bf16", "cuda:90", (12,), "not conversions"),
        ((EXT, "arith.maximumf"), "bf16", "cuda:90", (12,), "maxnum -> maximum"),
        ((EXT, NUM), "fp32", "cuda:90", (12,), "no dtype change"),
        ((EXT, NUM), "bf16", "cuda:80", (12,), "dtype changed in another column"),
        ((EXT, NUM), "rejected", "cuda:90", (12,), "refused, not a dtype"),
    ],
)  # fmt: skip
def test_what_does_not_follow_from_a_dtype_change_stays_a_reason(
    ops, types_after, types_target, lines, why
):
    base = [_aot({"bfloat16": ops[0]}), _types({"bfloat16,bfloat16": "fp32"}, types_target)]
    cand = [_aot({"bfloat16": ops[1]}), _types({"bfloat16,bfloat16": types_after}, types_target)]
    report = _decide(base, cand, _profile(*lines))
    assert report.folded_dtype == [], why
    assert any(f.probe == f"{MAX}[bfloat16]" and f.kind == gc.BEHAVIOUR
               for f in report.comparison.findings), why  # fmt: skip


def test_a_line_no_dtype_change_is_tied_to_keeps_the_lowering_change_there():
    """The lowering change is tied to two lines: bf16,bf16 at 12 (its dtype changed) and bf16
    with a float literal at 20. Where bfloat16,lit_float did not change, the part at 12 folds
    and the part at 20 stays a reason of its own; where it changed too, all of it folds."""
    lit = frozenset({"lit_float"})
    uses = [Use("binary_fn.maximum", (frozenset({"bfloat16"}),) * 2, path="k.py", line=12,
                kernel="k", code="tl.maximum(x, y)"),
            Use("binary_fn.maximum", (frozenset({"bfloat16"}), lit), path="k.py", line=20,
                kernel="k2", code="tl.maximum(x, 0.0)")]  # fmt: skip
    base = [_aot({"bfloat16": EXT}),
            _types({"bfloat16,bfloat16": "fp32", "bfloat16,lit_float": "fp32"})]  # fmt: skip
    cand = [_aot({"bfloat16": NUM}),
            _types({"bfloat16,bfloat16": "bf16", "bfloat16,lit_float": "fp32"})]  # fmt: skip
    report = _decide(base, cand, Profile(uses=uses))
    [(part, root)] = report.folded_dtype
    assert root.probe == f"{TYPES}[bfloat16,bfloat16]"
    [stays] = [f for f in report.comparison.findings if f.probe == f"{MAX}[bfloat16]"]
    tied = {id(f): [u.line for u in us] for f, us in report.tied}
    assert (tied[id(part)], tied[id(stays)]) == ([12], [20])
    assert all("k.py:12" not in t for t in stays.uses) and any("k.py:20" in t for t in stays.uses)
    # one entry per kernel: k2's lowering change blocks, k's is listed under its dtype change
    entries = {(e.group, e.kernel) for e in report.blocking()}
    assert entries == {(TYPES, "k"), (MAX, "k2")}
    cand = [_aot({"bfloat16": NUM}),
            _types({"bfloat16,bfloat16": "bf16", "bfloat16,lit_float": "bf16"})]  # fmt: skip
    report = _decide(base, cand, Profile(uses=uses))
    assert sorted(r.probe for _, r in report.folded_dtype) == [
        f"{TYPES}[bfloat16,bfloat16]",
        f"{TYPES}[bfloat16,lit_float]",
    ]
    assert not [f for f in report.comparison.findings if f.probe.startswith(MAX)]


def test_gpu_values_under_a_changed_dtype_fold_under_that_change():
    """bf16 max went fp32 -> bf16 on both columns: the GPU values cannot say the lowering
    change is only that (two dtypes), the dtype change says it: folded under it."""
    gpu_fp32 = _gpu_types({"bfloat16,bfloat16": "fp32"})
    base = [_aot({"bfloat16": EXT}), _types({"bfloat16,bfloat16": "fp32"}), _gpu(BF16), gpu_fp32]
    cand = [_aot({"bfloat16": NUM}), _types({"bfloat16,bfloat16": "bf16"}), _gpu(BF16), DTYPES]
    report = _decide(base, cand, _profile(12))
    [(f, root)] = report.folded_dtype
    assert (f.probe, root.probe, root.where) == (
        f"{MAX}[bfloat16]",
        f"{TYPES}[bfloat16,bfloat16]",
        "aot:cuda:90",
    )
    [entry] = report.blocking()  # the dtype change, on both columns, the one reason
    assert (entry.group, entry.columns) == (TYPES, ["aot:cuda:90", "gpu:cuda:90"])
    assert "follows from it (not counted again): fp.values.maximum" in entry.line()


def test_a_use_with_a_scalar_folds_under_its_own_cells_change():
    """``tl.maximum(x, 0)`` on bf16: the profile ties the case (bf16, bf16) and the cell
    ``bfloat16,lit_int``, not ``bfloat16,bfloat16`` (not used here). Where both cells changed
    fp32 -> bf16, the lowering change follows from the one tied to its line; where the case's
    own cell did not change, nothing explains it and it stays."""
    lit = Use("binary_fn.maximum", (frozenset({"bfloat16"}), frozenset({"lit_int"})),
              path="k.py", line=7, kernel="k", code="tl.maximum(x, 0)")  # fmt: skip
    base = [
        _aot({"bfloat16": EXT}),
        _types({"bfloat16,bfloat16": "fp32", "bfloat16,lit_int": "fp32"}),
    ]
    cand = [
        _aot({"bfloat16": NUM}),
        _types({"bfloat16,bfloat16": "bf16", "bfloat16,lit_int": "bf16"}),
    ]
    report = _decide(base, cand, Profile(uses=[lit]))
    [(f, root)] = report.folded_dtype
    assert (f.probe, root.probe) == (f"{MAX}[bfloat16]", f"{TYPES}[bfloat16,lit_int]")
    assert f"{TYPES}[bfloat16,bfloat16]" in {u.probe for u in report.unused}
    cand = [
        _aot({"bfloat16": NUM}),
        _types({"bfloat16,bfloat16": "fp32", "bfloat16,lit_int": "bf16"}),
    ]
    assert _decide(base, cand, Profile(uses=[lit])).folded_dtype == []


def test_a_use_with_the_scalar_on_the_left_folds_under_the_mirrored_cells_change():
    """``tl.maximum(0, x)`` (attorch's relu) is profiled ``[lit_int, bfloat16]``; the battery
    records ``bfloat16,lit_int``. Triton types either order alike, so the changed cell is tied
    to that line (it blocks as used) and the lowering change there folds under it; ``clamp``'s
    bound is no mirror, and two tensors are matched in their own order only."""
    lit = Use("binary_fn.maximum", (frozenset({"lit_int"}), frozenset({"bfloat16"})),
              path="k.py", line=7, kernel="k", code="tl.maximum(0, x)")  # fmt: skip
    both = {"bfloat16,bfloat16": "fp32", "bfloat16,lit_int": "fp32"}
    base = [_aot({"bfloat16": EXT}), _types(both)]
    cand = [_aot({"bfloat16": NUM}), _types({k: "bf16" for k in both})]
    report = _decide(base, cand, Profile(uses=[lit]))
    [(f, root)] = report.folded_dtype
    assert (f.probe, root.probe) == (f"{MAX}[bfloat16]", f"{TYPES}[bfloat16,lit_int]")
    [entry] = report.blocking()
    assert (entry.group, entry.relevance) == (TYPES, USED)
    assert "k.py" in entry.line() and "7" in entry.line()
    # the mirror holds for a scalar only: bf16 with fp16 is not fp16 with bf16's cell
    pair = Use("binary_fn.maximum", (frozenset({"float16"}), frozenset({"bfloat16"})),
               path="k.py", line=9, kernel="k", code="tl.maximum(h, b)")  # fmt: skip
    from matrix.analyze.profile.match import Matcher

    m = Matcher(Profile(uses=[pair, lit]))
    assert m.cell("binary_fn.maximum", "bfloat16,float16").status == "not used"
    assert m.cell("binary_fn.maximum", "float16,bfloat16").uses == [pair]
    assert m.cell("binary_fn.maximum", "bfloat16,lit_int").uses == [lit]
    assert m.cell("clamp", "bfloat16,lit_int").status == "not used"
