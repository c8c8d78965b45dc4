"""The values battery over every dtype (min/max, clamp, where, reductions, casts), judged on
outputs recorded from real interpreters: tests/fixtures/fp_values/ holds, for Triton 3.0.0
(numpy 1.26.4) and 3.9.0 (numpy 2.4.6), the bits each case stored and the TTIR ops the same
release compiles it to for cuda:90 (recorded 2026-12-02 with ``fp._trace`` and
``fp._compile_semantics`` on this battery). The judging code runs here on those recordings."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from matrix.probes.fp import battery as bt
from matrix.probes.fp import fp_checks as C
from matrix.probes.fp import probe as fp
from matrix.probes.fp import semantics as sem

FIXTURES = Path(__file__).parent / "fixtures" / "fp_values"


def judged(release: str) -> dict[str, dict[str, str]]:
    """The cells ``value_rows`` gives the recorded outputs of ``release``, by group."""
    import torch

    rec = json.loads((FIXTURES / f"{release}-interpret.json").read_text())
    wanted = [(c["group"], c["label"]) for c in rec["cases"]]
    by_key = {(v.group, v.label): v for v in bt.load().values}
    values = [by_key[k] for k in wanted]
    ins, outs = fp._buffers(values)
    sink = bt.Sink(traced=True)
    ops = {}
    for vc, case in zip(values, rec["cases"], strict=True):
        if case["error"]:
            sink.value_errors[vc.index] = tuple(case["error"])
            continue
        sink.value_dtypes[vc.index] = case["dtype"]
        width = C.width_of(case["dtype"])
        outs[width][vc.index] = torch.tensor(case["bits"], dtype=outs[width].dtype)
        ops[vc.index] = case["ops"]
    sink.inputs, sink.outputs = ins, outs  # type: ignore[attr-defined]
    semantics = sem.Semantics("cuda:90", "ttir", ops, {}, dict(sink.value_dtypes))
    rows = C.value_rows(sink, values, semantics)
    return {r.name: r.data["cells"] for r in rows if r.name}


def test_bf16_min_with_a_negative_operand_is_wrong_on_3_9_0_only() -> None:
    """3.9.0's interpreter compares bf16 as raw bits (a negative is a large unsigned number):
    min(-1, 2) gives 2. 3.0.0 computes tl.minimum on bf16 in fp32 and gets -1."""
    new, old = judged("3.9.0"), judged("3.0.0")
    assert new["fp.values.minimum"]["bfloat16(-1,2)"] == "wrong"
    assert new["fp.values.minimum"]["bfloat16(-1.5,2.5)"] == "wrong"
    assert old["fp.values.minimum"]["bfloat16(-1,2)"] == "right"
    # tl.where(x < y, x, y) on bf16 is a compare and select in both: wrong in both.
    assert new["fp.values.where"]["bfloat16(-1,2)"] == "wrong"
    assert old["fp.values.where"]["bfloat16(-1,2)"] == "wrong"


def test_nan_into_plain_minimum_is_judged_by_the_compiled_minnum() -> None:
    """Both releases compile tl.minimum(fp32) to arith.minnumf (NaN ignored): 3.9.0's
    interpreter agrees (1.0), 3.0.0's propagates the NaN, which its own compile would not."""
    new, old = judged("3.9.0"), judged("3.0.0")
    assert new["fp.values.minimum"]["float32(nan,1.0)"] == "right"
    assert old["fp.values.minimum"]["float32(nan,1.0)"] == "wrong"
    # Both NaN: NaN under either rule; equal zeros of either sign: minnum leaves it open.
    assert new["fp.values.minimum"]["float32(nan,nan)"] == "right"
    assert new["fp.values.minimum"]["float32(-0.0,0.0)"] in ("-0.0", "0.0")


def test_signed_zero_under_propagate_nan_all_follows_arith_maximumf() -> None:
    """propagate_nan=ALL compiles to arith.maximumf, which orders -0.0 < +0.0: max(0.0, -0.0)
    is 0.0. Both interpreters return -0.0 there (recorded), and 0.0 for max(-0.0, 0.0)."""
    for release in ("3.0.0", "3.9.0"):
        cells = judged(release)["fp.values.maximum_nan_all"]
        assert cells["float32(nan,1.0)"] == "right"  # NaN propagates, as the op says
        assert cells["float32(0.0,-0.0)"] == "wrong", release  # recorded: -0.0 came out
        assert cells["float32(-0.0,0.0)"] == "right", release


def test_integer_min_and_the_symmetric_clamp_are_right_on_both() -> None:
    for release in ("3.0.0", "3.9.0"):
        cells = judged(release)
        assert set(cells["fp.values.minimum"][k] for k in cells["fp.values.minimum"]
                   if k.startswith(("int8(", "uint8("))) == {"right"}  # fmt: skip
        clamp = cells["fp.values.clamp"]
        assert clamp["float32(-5,2)"] == "right" and clamp["float32(-0.0,1.0)"] == "right"
        assert clamp["float32(nan,2.0)"] in ("nan", "2.0", "-2.0")  # NaN x: recorded as seen


def test_int32_to_bf16_and_a_max_over_nan() -> None:
    new, old = judged("3.9.0"), judged("3.0.0")
    # 3.9.0's interpreter casts int32 to bf16 wrongly (the committed matrix shows it too).
    assert new["fp.values.cast_int_to_float_dtypes"]["int32->bfloat16(-1)"] == "wrong"
    assert new["fp.values.cast_int_to_float_dtypes"]["int32->bfloat16(0)"] == "right"
    # max over a NaN is not judged: the value is recorded.
    for cells in (new, old):
        assert cells["fp.values.reduce_nan"]["max.float32"] in ("nan", "6.0")


@pytest.mark.parametrize(
    ("ref", "is_max", "a", "b", "want"),
    [
        ("ieee_minmax", False, math.nan, 1.0, math.nan),
        ("ieee_minmax", False, 0.0, -0.0, -0.0),
        ("ieee_minmax", True, -0.0, 0.0, 0.0),
        ("num_minmax", False, math.nan, 1.0, 1.0),
        ("num_minmax", True, 2.0, math.nan, 2.0),
        ("num_minmax", False, math.nan, math.nan, math.nan),
        ("num_minmax", False, -0.0, 0.0, C.OBSERVE),
        ("observe_nan_minmax", False, math.nan, 1.0, C.OBSERVE),
        ("observe_nan_minmax", True, -1.5, 2.5, 2.5),
        ("exact_minmax", False, -128, 127, -128),
    ],
)
def test_minmax_references(ref: str, is_max: bool, a, b, want) -> None:
    got = C._minmax(ref, is_max, a, b)
    if want is C.OBSERVE or not isinstance(want, float):
        assert got is want or got == want
    elif math.isnan(want):
        assert math.isnan(got)
    else:
        assert got == want and math.copysign(1, got) == math.copysign(1, want)


def test_where_clamp_and_int_convert_references() -> None:
    where = bt.ValueCase("g", "float32", "where", ("float32",) * 2, (), "where_lt")
    assert math.isnan(C.reference(where, (1.0, math.nan), "fp32"))  # 1 < NaN is false: y
    assert C.reference(where, (-0.0, 0.0), "fp32") == 0.0
    clamp = bt.ValueCase("g", "int8", "clamp", ("int8",) * 2, (), "clamp_sym")
    assert C.reference(clamp, (-5, 2), "int8") == -2
    assert C.reference(clamp, (5, -2), "int8") is None  # -y > y: bounds undefined, not asked
    cast = bt.ValueCase("g", "int16->uint8", "cast", ("int16", "uint8"), (), "int_convert")
    assert C.reference(cast, (-1,), "uint8") == 255
    assert C.reference(cast, (256,), "uint8") == 0
