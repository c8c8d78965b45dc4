"""The fingerprint: its battery file, its cells, their comparison and the gate's use of them.

The recorded observations below come from real runs (``python -m matrix.run --probes fp`` in a
Triton 3.9.0 / 3.0.0 environment): the interpreter's int32 -> bfloat16 cast stores the integer
itself as bf16 bits (127 -> 0x007f), and Triton 3.0's interpreter under numpy 2.x stores
nothing at all. Both must come out ``wrong`` with the reference, never ``right``.
"""

import json
from pathlib import Path

import pytest
import triton
import triton.language as tl

from matrix.analyze import fingerprint as fpm
from matrix.core import Release
from matrix.probes.fp import battery as bt
from matrix.probes.fp import fp_checks
from matrix.results import Result, Run, read_raw

ROOT = Path(__file__).resolve().parent.parent


# ------------------------------------------------------------------------------- battery file


def test_the_battery_expands_into_thousands_of_grouped_cases():
    b = bt.load()
    assert len(b.cases) + sum(len(v.inputs) for v in b.values) >= 1000
    keys = [(c.group, c.key) for c in b.cases]
    assert len(keys) == len(set(keys)), "every case is one cell: no key twice in a group"
    groups = {c.group for c in b.cases}
    assert {"binary.add", "cast.to", "dot", "atomic.add", "where", "clamp", "reduce.sum"} <= groups
    assert ("binary.add", "int8,uint16") in keys
    assert ("binary.sub", "lit_int,float16") in keys  # a scalar on the left, reflected
    assert not any(c.operands[0] in bt.SCALAR_ARGS and c.operands[-1] in bt.SCALAR_ARGS
                   for c in b.cases)  # fmt: skip


def test_a_malformed_battery_names_what_is_wrong(tmp_path):
    bad = tmp_path / "fp.toml"
    bad.write_text('[operands]\nints = ["int8"]\n[families.x]\ncall = "operator"\n'
                   'lhs = ["nope"]\nrhs = ["ints"]\nops = { add = "__add__" }\n')  # fmt: skip
    with pytest.raises(bt.BatteryError, match=r"families\.x: unknown operand list 'nope'"):
        bt.load(bad)
    bad.write_text('[operands]\nints = ["int8"]\n[[values]]\ngroup = "g"\nop = "mod"\n'
                   'dtypes = ["int8"]\nreference = "c_mod"\nlhs = [1, 2]\nrhs = [1]\n')  # fmt: skip
    with pytest.raises(bt.BatteryError, match="lhs has 2 inputs, rhs 1"):
        bt.load(bad)


def test_exceptions_from_triton_are_rejections_and_from_the_harness_errors():
    import types

    try:
        bt._function(types.SimpleNamespace(), "nonesuch")  # raises inside matrix/probes
    except LookupError as e:
        status, text = bt.classify_exception(e)
        assert status == "error" and "raised in battery.py" in text
    else:
        pytest.fail("_function found a name that does not exist")
    try:
        import numpy as np

        np.zeros(2).reshape(3)
    except ValueError as e:
        assert bt.classify_exception(e)[0] == "rejected"
    assert bt.classify_exception(bt.HarnessFault("x"))[0] == "error"
    unexpected = TypeError("dot() got an unexpected keyword argument 'input_precision'")
    assert bt.classify_exception(unexpected)[0] == "rejected"


# --------------------------------------------------------------------- values and references


def _sink_with(vc: bt.ValueCase, result: str, got_bits: list[int] | None):
    """A Sink as a traced launch leaves it: inputs encoded, output row holding ``got_bits``."""
    import torch

    rows = bt.TYPE_ROWS + 2 * (vc.index + 1)
    ins = {w: torch.ones(rows, bt.BLOCK, dtype=getattr(torch, f"int{w}")) for w in bt.WIDTHS}
    fp_checks.encode_inputs(ins, [vc])
    # Poisoned, as fp._buffers fills them; got_bits None: the kernel stored nothing.
    outs = {w: torch.full((vc.index + 2, bt.BLOCK), fp_checks.poison(w),
                          dtype=getattr(torch, f"int{w}")) for w in bt.WIDTHS}  # fmt: skip
    w = fp_checks.width_of(result)
    if got_bits is not None:
        row = torch.tensor(got_bits, dtype=getattr(torch, f"int{w}"))
        outs[w][vc.index, : len(got_bits)] = row
    sink = bt.Sink(value_dtypes={vc.index: result})
    sink.inputs, sink.outputs = ins, outs
    return sink


def _value_case(group: str, **kw) -> bt.ValueCase:
    (vc,) = [v for v in bt.load().values if v.group == group and all(
        getattr(v, k) == x for k, x in kw.items())]  # fmt: skip
    return vc


def test_recorded_wrong_interpreter_cast_comes_out_wrong_with_the_reference():
    vc = _value_case("values.cast_int_to_float", label="int32->bfloat16")
    # Triton 3.9.0's interpreter, recorded: bits 0x007f for 127 (the int written as bf16 bits).
    inputs = [x for (x,) in vc.inputs]
    bits = [127 if x == 127 else 0x4B80 for x in inputs]
    (row,) = fp_checks.value_rows(_sink_with(vc, "bf16", bits), [vc])
    key = "int32->bfloat16(127)"
    assert row.data["cells"][key] == "wrong"
    assert row.data["values"][key]["reference"] == "127.0"
    assert row.data["values"][key]["got"] == repr(1.1663108012064884e-38)
    assert "right" not in {row.data["cells"][k] for k in row.data["cells"] if "(127)" in k}


def test_a_launch_that_stored_nothing_is_unwritten_in_every_cell():
    """Triton 3.0.0/3.1.0's interpreter with numpy >= 2 stores nothing (measured 2026-12-01: a
    plain fp32 -> fp16 tl.store leaves its output as it was). The poisoned rows say so: every
    cell is `unwritten` (what the release did; as bad as wrong to the gate), never a value read
    from the buffer (nor `right` where 0 was the answer), and the group says why."""
    vc = _value_case("values.int_div", label="int32")
    (row,) = fp_checks.value_rows(_sink_with(vc, "int32", None), [vc])
    assert row.status == "observed"
    assert set(row.data["cells"].values()) == {fp_checks.UNWRITTEN}
    assert row.data["values"]["int32(0,3)"]["got"] == fp_checks.UNWRITTEN
    assert row.data["values"]["int32(7,2)"]["reference"] == "3"
    assert "stored nothing" in row.detail


def test_zeros_that_were_stored_are_judged_as_values():
    vc = _value_case("values.int_div", label="int32")
    (row,) = fp_checks.value_rows(_sink_with(vc, "int32", [0] * len(vc.inputs)), [vc])
    assert row.data["cells"]["int32(7,2)"] == "wrong"
    assert row.data["values"]["int32(7,2)"] == {
        "inputs": ["7", "2"], "reference": "3", "got": "0", "dtype": "int32",
        "semantics": "trunc_div"}  # fmt: skip
    assert row.data["cells"]["int32(0,3)"] == "right"  # 0 // 3 is 0: right for the right reason


# The kernel body of Triton 3.2.0's TTIR for the float32 `%` values case, compiled for cuda:90
# by ``fp._compile_semantics`` (locations cut): floor-mod, four ops.
TTIR_320_FLOAT_MOD = """module {
  tt.func public @battery_kernel(%arg0: !tt.ptr<i8>, %arg2: !tt.ptr<i32>) {
    %cst = arith.constant dense<368> : tensor<16xi32>
    %cst_0 = arith.constant dense<1008> : tensor<16xi32>
    %cst_1 = arith.constant dense<992> : tensor<16xi32>
    %0 = tt.make_range {end = 16 : i32, start = 0 : i32} : tensor<16xi32>
    %1 = tt.bitcast %arg2 : !tt.ptr<i32> -> !tt.ptr<f32>
    %2 = arith.addi %0, %cst_1 : tensor<16xi32>
    %3 = tt.splat %1 : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %4 = tt.addptr %3, %2 : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    %5 = tt.load %4 : tensor<16x!tt.ptr<f32>> loc(#loc3)
    %6 = arith.addi %0, %cst_0 : tensor<16xi32>
    %7 = tt.addptr %3, %6 : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    %8 = tt.load %7 : tensor<16x!tt.ptr<f32>>
    %9 = arith.divf %5, %8 : tensor<16xf32> loc(#loc7)
    %10 = math.floor %9 : tensor<16xf32>
    %11 = arith.mulf %10, %8 : tensor<16xf32>
    %12 = arith.subf %5, %11 : tensor<16xf32>
    %13 = tt.bitcast %arg6 : !tt.ptr<i32> -> !tt.ptr<f32>
    %14 = arith.addi %0, %cst : tensor<16xi32>
    %15 = tt.splat %13 : !tt.ptr<f32> -> tensor<16x!tt.ptr<f32>>
    %16 = tt.addptr %15, %14 : tensor<16x!tt.ptr<f32>>, tensor<16xi32>
    tt.store %16, %12 : tensor<16x!tt.ptr<f32>>
    tt.return
  }
}"""
TTIR_331_FLOAT_MOD = TTIR_320_FLOAT_MOD.replace(
    "    %9 = arith.divf %5, %8 : tensor<16xf32> loc(#loc7)\n"
    "    %10 = math.floor %9 : tensor<16xf32>\n"
    "    %11 = arith.mulf %10, %8 : tensor<16xf32>\n"
    "    %12 = arith.subf %5, %11 : tensor<16xf32>\n",
    "    %12 = arith.remf %5, %8 : tensor<16xf32>\n",
)


def _float_mod_as_compiled(ttir: str):
    """The float32 % case judged with the semantics read from ``ttir``, on the values
    Triton 3.2.0's interpreter stored (recorded: 7.5 % -2.0 -> -0.5, -7.5 % 2.0 -> 0.5)."""
    import struct

    from matrix.probes.fp import semantics as sem

    vc = _value_case("values.float_mod", label="float32")
    got = {(7.5, 2.0): 1.5, (-7.5, 2.0): 0.5, (7.5, -2.0): -0.5, (-7.5, -2.0): -1.5,
           (1.0, float("inf")): float("nan"), (float("inf"), 2.0): float("nan"),
           (5.0, 0.0): float("nan")}  # fmt: skip
    bits = [struct.unpack("<i", struct.pack("<f", got[x]))[0] for x in vc.inputs]
    (ops,) = sem.case_ops(ttir, 1)
    semantics = sem.Semantics("cuda:90", "ttir", {vc.index: ops}, {}, {})
    (row,) = fp_checks.value_rows(_sink_with(vc, "fp32", bits), [vc], semantics)
    return row


def test_the_reference_is_the_semantics_the_release_compiles_to():
    """3.2.0 compiles float % to floor-mod: its negative-operand results are right, with the
    ops recorded; the same values under 3.3.1's arith.remf (C fmod) are wrong."""
    old = _float_mod_as_compiled(TTIR_320_FLOAT_MOD)
    assert set(old.data["cells"].values()) == {"right"}, old.data
    assert old.data["semantics"]["float32"]["ops"] == [
        "arith.divf", "math.floor", "arith.mulf", "arith.subf"]  # fmt: skip
    assert old.data["semantics"]["float32"]["reference"] == "floor_mod"
    new = _float_mod_as_compiled(TTIR_331_FLOAT_MOD)
    assert new.data["semantics"]["float32"]["ops"] == ["arith.remf"]
    assert new.data["cells"]["float32(-7.5,2.0)"] == "wrong"
    assert new.data["values"]["float32(-7.5,2.0)"]["reference"] == "-1.5"
    assert new.data["cells"]["float32(7.5,2.0)"] == "right"


def test_ops_matching_no_rule_are_not_judged_and_unread_ops_say_why():
    from matrix.probes.fp import semantics as sem

    weird = TTIR_331_FLOAT_MOD.replace("arith.remf", "arith.frobf")
    row = _float_mod_as_compiled(weird)
    assert set(row.data["cells"].values()) == {"skipped"}
    assert "no rule of semantics.toml matches" in row.data["semantics"]["float32"]["means"]
    with pytest.raises(sem.SemanticsError, match=r"1 tt\.store in the kernel for 2 stored"):
        sem.case_ops(TTIR_320_FLOAT_MOD, 2)


def test_the_aot_row_names_the_ops_so_the_change_is_a_behaviour_change():
    from matrix.probes.fp import semantics as sem

    vc = _value_case("values.float_mod", label="float32")
    rows = {}
    for release, ttir in (("3.2.0", TTIR_320_FLOAT_MOD), ("3.3.1", TTIR_331_FLOAT_MOD)):
        semantics = sem.Semantics("cuda:90", "ttir", {vc.index: sem.case_ops(ttir, 1)[0]}, {}, {})
        (row,) = fp_checks.ops_rows([vc], semantics)
        rows[release] = Result(row.name, "aot", "cuda:90", row.status, data=row.data)
    (change,) = fpm.compare([rows["3.2.0"]], [rows["3.3.1"]])
    assert change.kind == fpm.BEHAVIOUR
    assert (change.before, change.after) == ("arith.divf math.floor arith.mulf arith.subf",
                                             "arith.remf")  # fmt: skip
    assert "floor-mod" in rows["3.2.0"].data["semantics"]["float32"]["means"]
    assert "C fmod" in rows["3.3.1"].data["semantics"]["float32"]["means"]


def _fake_gpu_values(monkeypatch, fails, refused=None):
    """fp's GPU values path with a fake launch: ``fails(vals)`` says whether a kernel of those
    cases fails to build ("PassManager::run failed"); the calls are returned."""
    from matrix.probes.fp import probe as fp
    from matrix.probes.fp import semantics as sem

    semantics = sem.Semantics("cuda:90", "ttir", {}, refused or {}, {})
    monkeypatch.setattr(fp, "values_semantics", lambda ctx, v: semantics)
    calls = []

    def launch(ctx, part, cases, vals, stop):
        calls.append(list(vals))
        sink = bt.Sink(traced=True)  # no result dtypes: cells skipped, the group observed
        sink.inputs, sink.outputs = fp._buffers(vals)
        return sink, "RuntimeError: PassManager::run failed" if fails(vals) else "ok"

    monkeypatch.setattr(fp, "trace_isolated", launch)
    return calls


def test_a_gpu_values_kernel_that_fails_to_lower_costs_only_the_case_that_fails(monkeypatch):
    """Recorded on the H200 (3.6.0, notes/gpu-logs/session5): the kernel of every accepted values
    case failed with "PassManager::run failed", which left all 33 groups error; on 2026-12-03
    6-10 groups per release still failed alone. Now each group gets a kernel of its own, and a
    failing group is halved until the failing case stands alone: that cell is rejected with
    the reason, the rest of its group and every other group observed."""
    from matrix.probes.fp import probe as fp
    from matrix.probes.support import base

    values = bt.load().values
    bad_group = max({v.group for v in values}, key=lambda g: sum(v.group == g for v in values))
    members = [v for v in values if v.group == bad_group]
    bad = members[len(members) // 3]
    calls = _fake_gpu_values(
        monkeypatch, lambda vals: len({v.group for v in vals}) > 1 or bad in vals
    )
    rows = fp._value_rows(base.Context("gpu", "cuda:90"), values, None, "", {})
    groups = {v.group for v in values}
    narrowing = len(calls) - 1 - len(groups)
    assert 0 < narrowing <= 2 * len(members).bit_length()  # halving, not one kernel per case
    by_name = {r.name: r for r in rows}
    assert all(r.status == "observed" for r in by_name.values())
    cells = by_name[f"fp.{bad_group}"].data["cells"]
    bad_cells = {k: c for k, c in cells.items() if k.startswith(bad.label)}
    assert bad_cells and set(bad_cells.values()) == {"rejected"}
    assert "rejected" not in {c for k, c in cells.items() if k not in bad_cells}


def test_a_gpu_group_not_narrowed_within_the_budget_is_error_never_guessed(monkeypatch):
    from matrix.probes.fp import probe as fp
    from matrix.probes.support import base

    values = bt.load().values
    bad_group = values[-1].group
    _fake_gpu_values(monkeypatch, lambda vals: any(v.group == bad_group for v in vals))
    monkeypatch.setattr(fp, "MAX_BISECT_LAUNCHES", 2)
    rows = fp._value_rows(base.Context("gpu", "cuda:90"), values, None, "", {})
    row = {r.name: r for r in rows}[f"fp.{bad_group}"]
    assert row.status == "error" and "narrowing stopped after 2 kernels" in row.detail
    assert set(row.data["cells"].values()) == {"error"}


def test_each_failing_gpu_group_has_its_own_narrowing_budget(monkeypatch):
    """Until 2026-12-07 the narrowing budget was shared by the run: the groups narrowed first
    used it up and the last three stayed error on every release. Two failing groups, with a
    budget that covers either one's narrowing but not both: both are narrowed."""
    from matrix.probes.fp import probe as fp
    from matrix.probes.support import base

    values = bt.load().values
    groups = {v.group for v in values}
    first, last = values[0].group, values[-1].group
    ctx = base.Context("gpu", "cuda:90")

    def narrowing(bad_groups: set[str]) -> tuple[int, dict]:
        bad = {next(v for v in values if v.group == g) for g in bad_groups}
        calls = _fake_gpu_values(monkeypatch, lambda vals: len({v.group for v in vals}) > 1
                                 or bool(bad & set(vals)))  # fmt: skip
        rows = {r.name: r for r in fp._value_rows(ctx, values, None, "", {})}
        return len(calls) - 1 - len(groups), rows

    alone = [narrowing({g})[0] for g in (first, last)]
    assert min(alone) > 0
    monkeypatch.setattr(fp, "MAX_BISECT_LAUNCHES", max(alone))
    spent, rows = narrowing({first, last})
    assert spent == sum(alone) > fp.MAX_BISECT_LAUNCHES
    for g in (first, last):
        assert rows[f"fp.{g}"].status == "observed", rows[f"fp.{g}"].detail
        assert "rejected" in rows[f"fp.{g}"].data["cells"].values()


def test_no_narrowing_kernel_starts_past_the_deadline(monkeypatch):
    from matrix.probes.fp import probe as fp
    from matrix.probes.support import base

    values = bt.load().values
    bad_group = values[-1].group
    _fake_gpu_values(monkeypatch, lambda vals: any(v.group == bad_group for v in vals))
    # the runner tells the child its limit; with 100 s and a 130 s margin none may start
    monkeypatch.setenv("MATRIX_PROBE_LIMIT_S", "100")
    rows = fp._value_rows(base.Context("gpu", "cuda:90"), values, None, "", {})
    row = {r.name: r for r in rows}[f"fp.{bad_group}"]
    assert row.status == "error" and "narrowing stopped at -30 s" in row.detail


def test_a_gpu_group_the_frontend_refuses_whole_is_its_refusals(monkeypatch):
    """Every case of a group refused by the frontend leaves its kernel no case: the group's
    cells are those refusals (recorded on the H200 as "this group alone: no case", error)."""
    from matrix.probes.fp import probe as fp
    from matrix.probes.support import base

    values = bt.load().values
    group = values[0].group
    refused = {v.index: ("rejected", "refused by the frontend") for v in values if v.group == group}
    _fake_gpu_values(monkeypatch, lambda vals: len({v.group for v in vals}) > 1, refused)
    rows = fp._value_rows(base.Context("gpu", "cuda:90"), values, None, "", {})
    row = {r.name: r for r in rows}[f"fp.{group}"]
    assert row.status == "observed" and set(row.data["cells"].values()) == {"rejected"}


def test_no_two_traces_share_a_compiled_kernel(monkeypatch):
    """What a trace holds is the Python global bt.PLAN, which no compile cache key sees: two
    traces of one PART must differ in a constexpr, or the second launches the first's cached
    kernel untraced (on the H200, 31 of 33 per-group values kernels did, on every release)."""
    from matrix.probes.fp import probe as fp
    from matrix.probes.support import base

    seen = []

    def exercise(ctx, kernel, args, constexprs):
        seen.append(dict(constexprs))
        raise RuntimeError("not launched in this test")

    monkeypatch.setattr(base, "exercise", exercise)
    values = bt.load().values
    ctx = base.Context("aot", "cuda:90")
    for group in (values[0].group, values[-1].group):
        with pytest.raises(RuntimeError, match="not launched"):
            fp._trace(ctx, 5, [], [v for v in values if v.group == group], stop=False)
    assert len(seen) == 2 and seen[0]["PART"] == seen[1]["PART"] == 5
    assert seen[0]["TRACE"] != seen[1]["TRACE"]


def test_a_values_part_that_did_not_run_is_error_in_every_cell_never_wrong(monkeypatch):
    """Recorded on the H200 (reports/raw/triton-3.5.1-numpy-2.5.2-gpu-h200.json): the values
    compile ended "RuntimeError: error encountered during parsing"; the zeros in the output
    buffers were judged and 428 cells came out wrong. Now: error, the reason once per group."""
    from matrix.probes.fp import probe as fp
    from matrix.probes.fp import semantics as sem
    from matrix.probes.support import base

    values = bt.load().values
    monkeypatch.setattr(fp, "values_semantics",
                        lambda ctx, v: sem.Semantics("cuda:90", "ttir", {}, {}, {}))  # fmt: skip

    def failed(ctx, part, cases, vals, stop):
        sink = bt.Sink(traced=True)
        sink.inputs, sink.outputs = fp._buffers(vals)
        return sink, "RuntimeError: error encountered during parsing"

    monkeypatch.setattr(fp, "trace_isolated", failed)
    rows = fp._value_rows(base.Context("gpu", "cuda:90"), values, None, "", {})
    assert {r.name for r in rows} == {f"fp.{v.group}" for v in values}
    cells = [s for r in rows for s in r.data["cells"].values()]
    assert len(cells) > 400 and set(cells) == {"error"}
    assert all(r.status == "error" and "error encountered during parsing" in r.detail
               for r in rows)  # fmt: skip
    assert all("wrong" not in r.data and "values" not in r.data for r in rows)


def test_right_values_are_right_and_undefined_inputs_are_not_asked():
    vc = _value_case("values.int_div", label="int8")
    refs = [fp_checks.reference(vc, x, "int8") for x in vc.inputs]
    assert refs[:4] == [3, -3, -3, 3]  # truncation toward zero, not Python's floor
    (row,) = fp_checks.value_rows(_sink_with(vc, "int8", refs), [vc])
    assert set(row.data["cells"].values()) == {"right"}
    shift = _value_case("values.shift", label="int8")
    assert fp_checks.reference(shift, (1, 8), "int8") is None  # shift by the width: undefined


def test_float_checks_keep_nan_and_signed_zero_and_one_ulp_only_where_asked():
    assert fp_checks.same(float("nan"), float("nan"), "fp32")
    assert not fp_checks.same(-0.0, 0.0, "fp32")
    up = 1.0 + 2**-23
    assert not fp_checks.same(up, 1.0, "fp32")
    assert fp_checks.same(up, 1.0, "fp32", one_ulp=True)
    assert not fp_checks.same(1.0 + 2**-22, 1.0, "fp32", one_ulp=True)


# ------------------------------------------------------------------ cells, comparison, gate


def _group(probe, cells, status="observed", backend="interpret", **data):
    return Result(probe, backend, None, status, "", 0.0, {"cells": cells, **data})


def test_cells_expand_with_their_evidence():
    r = _group("fp.binary.add", {"int8,fp8e5": "rejected", "int8,int16": "int16"},
               details={"int8,fp8e5": 0}, reasons=["TypeError: unexpected type"])  # fmt: skip
    cells = {c.probe: c for c in fpm.expand([r])}
    assert cells["fp.binary.add[int8,int16]"].status == "int16"
    assert cells["fp.binary.add[int8,fp8e5]"].data == {"details": "TypeError: unexpected type"}
    assert fpm.group_name("fp.binary.add[int8,int16]") == "binary.add"
    not_run = _group("fp.binary.add", {}, status="error")
    assert [c.status for c in fpm.expand([not_run])] == ["error"]


@pytest.mark.parametrize(
    ("before", "after", "kind"),
    [
        ("right", "wrong", fpm.REGRESSION),
        ("rejected", "wrong", fpm.RELAXATION),
        ("rejected-runtime", "accepted", fpm.RELAXATION),
        ("wrong", "right", fpm.FIXED),
        ("int16", "int32", fpm.BEHAVIOUR),
        ("accepted", "rejected", fpm.BEHAVIOUR),
        ("int16", "error", fpm.UNOBSERVED),
        (None, "int16", fpm.UNOBSERVED),
    ],
)
def test_classify(before, after, kind):
    assert fpm.classify(before, after) == kind


def test_compare_lists_each_changed_cell_once_grouped():
    before = [_group("fp.values.int_div", {"int32(7,2)": "right", "int32(0,3)": "right"}),
              _group("fp.binary.add", {"int8,int16": "int16"})]  # fmt: skip
    after = [_group("fp.values.int_div", {"int32(7,2)": "wrong", "int32(0,3)": "right"},
                    values={"int32(7,2)": {"reference": "3", "got": "0"}}),
             _group("fp.binary.add", {"int8,int16": "int32"})]  # fmt: skip
    changes = fpm.compare(before, after)
    assert [(c.group, c.case, c.kind) for c in changes] == [
        ("binary.add", "int8,int16", fpm.BEHAVIOUR),
        ("values.int_div", "int32(7,2)", fpm.REGRESSION),
    ]
    assert changes[1].evidence["after"]["values"] == {"reference": "3", "got": "0"}
    assert list(fpm.by_group(changes)) == ["binary.add", "values.int_div"]


def test_disagreements_between_interpreter_and_compile_are_listed():
    rs = [_group("fp.rules", {"global_plain": "accepted", "while_loop": "accepted"}),
          _group("fp.rules", {"global_plain": "rejected", "while_loop": "accepted"},
                 backend="aot")]  # fmt: skip
    assert fpm.disagreements(rs) == [
        ("rules", "global_plain", {"interpret": "accepted", "aot": "rejected"})]  # fmt: skip


def _run(release, results):
    return Run(id=f"triton-{release}-numpy-2.4.6", env={"triton": release, "numpy": "2.4.6"},
               results=results)  # fmt: skip


def test_gate_calls_a_value_turning_wrong_a_regression_and_a_dtype_change_a_behaviour_change():
    from matrix.gate import compare as gc
    from matrix.gate.config import AcceptedChange

    base = _run("3.8.0", [_group("fp.values.int_div", {"int32(7,2)": "right"}),
                          _group("fp.binary.add", {"int8,int16": "int16"})])  # fmt: skip
    cand = _run("3.9.0", [_group("fp.values.int_div", {"int32(7,2)": "wrong"},
                                 values={"int32(7,2)": {"reference": "3", "got": "0"}}),
                          _group("fp.binary.add", {"int8,int16": "int32"})])  # fmt: skip
    old, new = Release.parse("3.8.0"), Release.parse("3.9.0")
    out = gc.compare([base], [cand], old, new, [], [])
    kinds = {f.probe: f.kind for f in out.findings}
    assert kinds == {"fp.values.int_div[int32(7,2)]": gc.REGRESSION,
                     "fp.binary.add[int8,int16]": gc.BEHAVIOUR}  # fmt: skip
    regression = next(f for f in out.findings if f.kind == gc.REGRESSION)
    assert "reference" in " ".join(regression.evidence) and "got" in " ".join(regression.evidence)
    # A glob acknowledges a whole group's behaviour change, never the regression.
    ack = AcceptedChange(probe="fp.*", where="*", from_status="*", to_status="*",
                         reason="reviewed", baseline="*", candidate="*")  # fmt: skip
    out = gc.compare([base], [cand], old, new, [ack], [])
    kinds = {f.probe: f.kind for f in out.findings}
    assert kinds["fp.binary.add[int8,int16]"] == gc.ACCEPTED
    assert kinds["fp.values.int_div[int32(7,2)]"] == gc.REGRESSION


def test_the_gate_names_a_group_s_change_once_and_its_ack_covers_the_group(tmp_path):
    """40 cells of one group changing the same way are one entry with the cells listed (not 40
    entries repeating evidence), and the acknowledgement the entry offers accepts all of them
    and nothing of another group."""
    import tomllib

    from matrix.gate import compare as gc
    from matrix.gate import verdict
    from matrix.gate.config import load_accepted

    keys = [f"int8,c{i}" for i in range(40)]
    base = _run("3.8.0", [_group("fp.binary.add", dict.fromkeys(keys, "int16")),
                          _group("fp.binary.sub", {"int8,c0": "int16"})])  # fmt: skip
    cand = _run("3.9.0", [_group("fp.binary.add", dict.fromkeys(keys, "int32")),
                          _group("fp.binary.sub", {"int8,c0": "int32"})])  # fmt: skip
    old, new = Release.parse("3.8.0"), Release.parse("3.9.0")
    report = verdict.GateReport("3.8.0", "3.9.0", "raw")
    report.comparison = gc.compare([base], [cand], old, new, [], [])
    md = verdict.render_markdown(report)
    assert md.count("- **fp.binary.add**: `int16` → `int32`") == 1
    assert "cells (40): `int8,c0`" in md and "and 28 more" in md
    assert md.count("- **fp.binary.sub**:") == 1 and "fp.binary.sub[int8,c0]" in md
    block = md.split("- **fp.binary.add**:")[1].split("```toml")[1].split("```")[0]
    toml = "\n".join(line.strip() for line in block.splitlines()).replace('"..."', '"seen"')
    assert tomllib.loads(toml)["change"][0]["probe"] == "fp.binary.add[[]*"
    (tmp_path / "acc.toml").write_text(toml)
    out = gc.compare([base], [cand], old, new, load_accepted(tmp_path / "acc.toml"), [])
    kinds = {f.probe: f.kind for f in out.findings}
    assert all(kinds[f"fp.binary.add[{k}]"] == gc.ACCEPTED for k in keys)
    assert kinds["fp.binary.sub[int8,c0]"] == gc.BEHAVIOUR


# ------------------------------------------------------------------ rows through the runner


def _runner(out: Path, *extra: str) -> int:
    """The runner in a process of its own (it installs signal handlers: not in pytest's)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "MATRIX_PROBE_PACKAGE": "tests.fixtures.rows_probes",
           "PYTHONPATH": str(ROOT)}  # fmt: skip
    cmd = [sys.executable, "-m", "matrix.run", "--out", str(out), "--backends", "interpret",
           "--quiet", *extra]  # fmt: skip
    return subprocess.run(cmd, cwd=ROOT, env=env, timeout=120).returncode


def test_a_probe_s_rows_reach_the_raw_file_and_misnamed_rows_are_an_error(tmp_path):
    out = tmp_path / "raw.json"
    assert _runner(out) == 0
    run = read_raw(out)
    statuses = {r.probe: r.status for r in run.results}
    assert statuses == {"many.g0": "observed", "many.g1": "observed", "many.g2": "observed",
                        "many": "observed", "bad_rows": "error"}  # fmt: skip
    assert "must start with 'bad_rows.'" in next(r for r in run.results
                                                  if r.probe == "bad_rows").detail  # fmt: skip
    assert run.results[0].task == ("many", "interpret", None)
    # --resume keeps a finished task's rows with it instead of dropping them as unknown probes.
    assert _runner(out, "--resume") == 0
    assert len(json.loads(out.read_text())["runs"][0]["results"]) == 5


# ------------------------------------------------------------------ the battery, for real


def test_the_battery_runs_under_the_interpreter_and_classifies_cells():
    import os

    if os.environ.get("TRITON_INTERPRET") != "1":
        pytest.skip("needs TRITON_INTERPRET=1 at import (the suite runs with it)")
    from matrix.probes.fp import probe as fp
    from matrix.probes.support.base import Context

    b = bt.load()
    wanted = {("binary.add", "int8,int16"), ("binary.add", "int8,fp8e5"),
              ("binary.add", "int32,lit_float"), ("binary.floordiv", "float32,float32"),
              ("cast.to", "float32->float8e4b15"), ("binary.lshift", "float32,int32")}  # fmt: skip
    cases = [c for c in b.cases if (c.group, c.key) in wanted]
    cases.append(bt.Case("unary.exp", "nonesuch", "unary", "exp", ("float99",)))
    values = [v for v in b.values if v.group == "values.int_div" and v.label == "int32"]
    sink, ending = fp._trace(Context("interpret", None), 3, cases, values)
    assert ending == "ok" and sink.traced
    cells = {(g, k): s for g, d in sink.cells.items() for k, s in d.items()}
    assert cells[("binary.add", "int8,int16")] == "int16"
    assert cells[("binary.add", "int32,lit_float")] == "fp32"
    assert cells[("binary.lshift", "float32,int32")] == "rejected"
    assert cells[("unary.exp", "nonesuch")] == "absent"
    (row,) = fp_checks.value_rows(sink, values)
    assert row.data["cells"]["int32(7,2)"] == "right"
    assert row.data["cells"]["int32(-7,2)"] == "right"  # -3: truncation, as compiled code does


OPERAND_DTYPES = ("int1", "int8", "uint8", "float8e5", "int16", "float16", "bfloat16",
                  "uint32", "float32", "int64", "float64")  # fmt: skip


@triton.jit
def _operand_bits_kernel(i8, i16, i32, i64, o8, o16, o32, o64, BLOCK: tl.constexpr):
    _store_operand_bits(i8, i16, i32, i64, o8, o16, o32, o64, BLOCK)


def _store_operand_bits(i8, i16, i32, i64, o8, o16, o32, o64, BLOCK):
    """Under the interpreter: each dtype's type-row operand (row 3) and the float16 tile, as
    raw bits into output row k (a plain Python helper: the interpreter runs kernels as Python)."""
    ins = {"i8": i8, "i16": i16, "i32": i32, "i64": i64, "BLOCK": BLOCK}
    ops = bt.Operands(ins, {})
    outs = {8: o8, 16: o16, 32: o32, 64: o64}
    offs = tl.arange(0, BLOCK)
    for k, name in enumerate(OPERAND_DTYPES):
        x = ops.tensor(name, 3)
        w = 8 if x.dtype.primitive_bitwidth == 1 else x.dtype.primitive_bitwidth
        bits = x.to(tl.int8) if name == "int1" else x  # a bool tensor: its 0/1 as int8
        bits = bits.to(getattr(tl, f"int{w}"), bitcast=True)
        tl.store(outs[w] + k * BLOCK + offs, bits)
    tile = ops.tile("float16").to(tl.int16, bitcast=True)
    grid = tl.expand_dims(offs, 1) * BLOCK + tl.expand_dims(offs, 0)
    tl.store(o16 + len(OPERAND_DTYPES) * BLOCK + grid, tile)


def test_interpreter_type_operands_are_the_loaded_bits_without_reading_memory(monkeypatch):
    """3.0.0/3.1.0 with numpy 2 load from the wrong addresses, and some type cases' outcomes
    depend on the data (numpy 2 raises for an int8 sum that does not fit, 3.0's fp8 upcast
    raises on a zero): loaded operands made such cells flip between runs. The interpreter's
    type operands are built in registers: the bits a load of the type rows gives, whatever
    the buffers hold."""
    import os

    import torch

    if os.environ.get("TRITON_INTERPRET") != "1":
        pytest.skip("needs TRITON_INTERPRET=1 at import (the suite runs with it)")
    from matrix.probes.fp import probe as fp

    expected, _ = fp._buffers([])  # what the type rows hold
    garbage = {w: torch.full_like(t, 119) for w, t in expected.items()}
    rows = len(OPERAND_DTYPES) + bt.BLOCK
    outs = {w: torch.zeros(rows, bt.BLOCK, dtype=getattr(torch, f"int{w}")) for w in bt.WIDTHS}
    monkeypatch.setattr(bt.PLAN, "computed_operands", True)
    _operand_bits_kernel[(1,)](*garbage.values(), *outs.values(), BLOCK=bt.BLOCK)
    for k, name in enumerate(OPERAND_DTYPES):
        width = 8 if name == "int1" else int(getattr(tl, name).primitive_bitwidth)
        want = expected[width][3] != 0 if name == "int1" else expected[width][3]
        got = outs[width][k] != 0 if name == "int1" else outs[width][k]
        assert torch.equal(got, want), name
    tile = outs[16][len(OPERAND_DTYPES) :]
    assert torch.equal(tile, expected[16][: bt.TYPE_ROWS])


@pytest.fixture
def no_fault_dump():
    """The forked child inherits pytest's faulthandler, whose dump of the planted abort goes
    to the terminal past pytest's capture and reads as a failure on a green run. The child's
    death is the evidence the test checks (SIGABRT), so the dump is switched off meanwhile."""
    import faulthandler
    import sys

    enabled = faulthandler.is_enabled()
    faulthandler.disable()
    yield
    if enabled:
        faulthandler.enable(file=sys.__stderr__)


def test_a_case_that_kills_the_process_costs_that_cell_only(monkeypatch, no_fault_dump):
    import os

    if os.environ.get("TRITON_INTERPRET") != "1":
        pytest.skip("needs TRITON_INTERPRET=1 at import (the suite runs with it)")
    from matrix.probes.fp import probe as fp
    from matrix.probes.support.base import Context

    b = bt.load()
    cases = [c for c in b.cases if c.group == "binary.add" and c.key.startswith("int8,")][:3]
    doomed = cases[1]
    real_apply = bt.apply

    def apply(ops, case):
        if case == doomed:
            os.abort()  # what an MLIR assertion does to the process
        return real_apply(ops, case)

    monkeypatch.setattr(bt, "apply", apply)
    sink, ending = fp.trace_isolated(Context("interpret", None), 3, cases, [], False)
    cells = sink.cells["binary.add"]
    assert cells[doomed.key] == "crashed"
    assert "SIGABRT" in sink.reasons["binary.add"][sink.details["binary.add"][doomed.key]]
    monkeypatch.setattr(bt, "apply", real_apply)
    others = [c for c in cases if c != doomed]
    alone, _ = fp._trace(Context("interpret", None), 3, others, [], False)
    assert {c.key: cells[c.key] for c in others} == alone.cells["binary.add"]
    assert "crashed" not in alone.cells["binary.add"].values()
    assert ending == "ok"


def test_a_spawned_child_isolates_a_crash_too(monkeypatch, tmp_path):
    """The GPU's start method (spawn: a fresh interpreter, as CUDA needs) singles out the case
    that aborts, as fork does. The abort is planted through a sitecustomize the spawned
    interpreter runs at start-up: a monkeypatch does not reach a fresh process."""
    import os

    if os.environ.get("TRITON_INTERPRET") != "1":
        pytest.skip("needs TRITON_INTERPRET=1 at import (the suite runs with it)")
    from matrix.probes.fp import probe as fp
    from matrix.probes.support.base import Context

    b = bt.load()
    cases = [c for c in b.cases if c.group == "binary.add" and c.key.startswith("int8,")][:3]
    doomed = cases[1]
    (tmp_path / "sitecustomize.py").write_text(
        "import os\n"
        "from matrix.probes.fp import battery as bt\n"
        "real = bt.apply\n"
        "def apply(ops, case):\n"
        f"    if (case.group, case.key) == {(doomed.group, doomed.key)!r}:\n"
        "        os.abort()\n"
        "    return real(ops, case)\n"
        "bt.apply = apply\n"
    )
    root = str(Path(__file__).resolve().parents[1])  # sitecustomize runs before spawn's sys.path
    path = os.pathsep.join([str(tmp_path), root, os.environ.get("PYTHONPATH", "")]).rstrip(
        os.pathsep
    )
    monkeypatch.setenv("PYTHONPATH", path)
    monkeypatch.setitem(fp.START_METHOD, "interpret", "spawn")
    sink, ending = fp.trace_isolated(Context("interpret", None), 3, cases, [], False)
    cells = sink.cells["binary.add"]
    assert cells[doomed.key] == "crashed"
    assert "SIGABRT" in sink.reasons["binary.add"][sink.details["binary.add"][doomed.key]]
    assert all(cells[c.key] not in ("crashed", "error") for c in cases if c != doomed)
    assert ending == "ok"


def test_verify_flags_harness_errors_and_a_short_battery():
    fp_row = Result("fp", "interpret", None, "observed")
    many = {f"c{i}": "int8" for i in range(fpm.MIN_CELLS)}
    ok = [_group("fp.binary.add", many), fp_row]
    assert fpm.problems(ok) == []
    broken = [_group("fp.binary.add", {**many, "x": "error"}), fp_row]
    assert "1 cells error" in fpm.problems(broken)[0]
    short = [_group("fp.binary.add", {"a": "int8"}), fp_row]
    assert "fewer than 1000" in fpm.problems(short)[0]


# ------------------------------------------- a failure outside Triton costs its own cell only
# Issue 11: a file missing inside one case (Triton reading a library, a tool it runs) marked the
# whole ``fp`` probe skipped through attempt(), or the case ``rejected`` as if Triton refused it.

MISSING = "/nonexistent/triton-lib/libdevice.10.bc"


def _needs_interpreter() -> None:
    import os

    if os.environ.get("TRITON_INTERPRET") != "1":
        pytest.skip("needs TRITON_INTERPRET=1 at import (the suite runs with it)")


def _missing_file() -> None:
    open(MISSING, "rb")  # noqa: SIM115 (raises: the file a compile needs is not there)


def test_a_case_failing_outside_triton_is_skipped_with_its_reason_alone(monkeypatch):
    _needs_interpreter()
    from matrix.probes.fp import probe as fp
    from matrix.probes.support.base import Context

    cases = [c for c in bt.load().cases if c.group == "binary.add" and c.key.startswith("int8,")]
    cases = cases[:3]
    doomed, real_apply = cases[1], bt.apply

    def apply(ops, case):
        if case == doomed:
            _missing_file()
        return real_apply(ops, case)

    monkeypatch.setattr(bt, "apply", apply)
    sink, ending = fp._trace(Context("interpret", None), 3, cases, [])
    cells = sink.cells["binary.add"]
    assert ending == "ok" and cells[doomed.key] == "skipped", cells
    assert MISSING in sink.reasons["binary.add"][sink.details["binary.add"][doomed.key]]
    monkeypatch.setattr(bt, "apply", real_apply)
    alone, _ = fp._trace(Context("interpret", None), 3, [cases[0], cases[2]], [])
    assert {k: v for k, v in cells.items() if k != doomed.key} == alone.cells["binary.add"]


def test_a_rule_failing_outside_triton_costs_that_rule_only(monkeypatch):
    _needs_interpreter()
    from matrix.probes.fp import fp_rules
    from matrix.probes.support import base

    real = fp_rules.exercise

    def exercise(ctx, kernel, args, constexprs, grid=(1,)):
        if kernel is fp_rules.global_plain:
            return base.attempt(_missing_file)
        return real(ctx, kernel, args, constexprs, grid)

    monkeypatch.setattr(fp_rules, "exercise", exercise)
    ctx = base.Context("interpret", None)
    (row,) = fp_rules.rule_rows(ctx, ["global_plain", "builtin_max_tensor"])
    assert row.status == "observed"
    assert row.data["cells"] == {"global_plain": "skipped", "builtin_max_tensor": "accepted"}
    assert MISSING in row.data["details"]["global_plain"]


def test_a_part_failing_outside_triton_costs_its_groups_and_the_rest_is_observed(monkeypatch):
    """The dot part's launch needs a file that is missing: its groups are skipped with the
    reason, the other part's groups and the rules are observed, the probe is ``observed``."""
    _needs_interpreter()
    import dataclasses

    from matrix.probes.fp import probe as fp
    from matrix.probes.support import base

    full = bt.load()
    adds = [c for c in full.cases if c.group == "binary.add"][:4]
    dots = [c for c in full.cases if c.call == "dot"][:2]
    small = dataclasses.replace(full, cases=adds + dots, values=[],
                                raw={"rules": {"cases": ["builtin_max_tensor"]}})  # fmt: skip
    monkeypatch.setattr(bt, "load", lambda: small)
    real = base.exercise

    def exercise(ctx, kernel, args, constexprs, grid=(1,)):
        if constexprs["PART"] == 4:  # the dot part (fp._parts)
            return base.attempt(_missing_file)
        return real(ctx, kernel, args, constexprs, grid)

    monkeypatch.setattr(base, "exercise", exercise)
    obs = fp.observe(base.Context("interpret", None))
    rows = {r.name: r for r in obs.rows}
    assert obs.status == "observed", obs.detail
    for group in {c.group for c in dots}:
        assert rows[f"fp.{group}"].status == "skipped", rows[f"fp.{group}"]
        assert MISSING in rows[f"fp.{group}"].detail
    assert rows["fp.binary.add"].status == "observed"
    assert len(rows["fp.binary.add"].data["cells"]) == len(adds)
    assert rows["fp.rules"].data["cells"] == {"builtin_max_tensor": "accepted"}


# ------------------------------------------------------------------ summaries and known issues


def test_a_group_summary_counts_its_problem_cells_and_takes_its_worst_meaning():
    # The GPU rows before the values fix: status observed, 428 wrong cells, shown green.
    cells = {f"c{i}": "wrong" for i in range(428)} | {f"r{i}": "right" for i in range(93)}
    r = _group("fp.values.int_div", cells, backend="gpu")
    s = fpm.summarise(r)
    assert (s.text, s.meaning) == ("observed, 428 wrong", "wrong")
    r = _group("fp.dot", {"a": "fp32", "b": "crashed", "c": "rejected", "d": "error"})
    assert fpm.summarise(r).text == "observed, 1 crashed, 1 error"
    assert fpm.summarise(r).meaning == "breaking"
    assert fpm.summarise(_group("fp.binary.add", {"a": "int16"})).meaning == "neutral"
    (row,) = fpm.with_summaries([r])
    assert row.status == "observed" and row.data["summary"] == "observed, 1 crashed, 1 error"
    assert row.data["worst"] == "breaking"


def test_known_issues_are_cells_wrong_in_every_release_of_their_column():
    value = {"inputs": ["127"], "reference": "127.0", "got": "1.16e-38", "dtype": "bf16"}
    runs = []
    for release in ("3.0.0", "3.1.0", "3.9.0"):
        cells = {"int32->bfloat16(127)": "wrong", "int32->float32(1)": "right"}
        if release == "3.9.0":
            cells["int32->float32(1)"] = "wrong"  # wrong in one release only: not listed
        runs.append((release, [_group("fp.values.cast_int_to_float", cells,
                                      values={"int32->bfloat16(127)": value})]))  # fmt: skip
    gpu = [_group("fp.values.cast_int_to_float", {"int32->bfloat16(127)": "right"},
                  backend="gpu")]  # fmt: skip
    runs.append(("3.9.0", gpu))
    (issue,) = fpm.known_issues(runs)
    assert (issue.group, issue.case, issue.backend) == (
        "values.cast_int_to_float", "int32->bfloat16(127)", "interpret")  # fmt: skip
    assert issue.releases == ("3.0.0", "3.1.0", "3.9.0")
    assert issue.evidence["3.0.0"]["values"] == value


def test_every_semantics_rule_names_a_group_of_the_battery_and_a_reference_that_exists():
    from matrix.probes.fp import semantics as sem

    values = {v.group: v for v in bt.load().values}
    rules = sem.load_rules()
    assert rules["values.float_mod"], "float % has its two semantics"
    for group, items in rules.items():
        assert group in values, f"semantics.toml names {group!r}, not in the battery"
        for rule in items:
            vc = values[group]
            xs = (7.5,) if vc.op == "cast" else (7.5, 2.0)  # the case's own arity
            fp_checks.reference(vc, xs, "fp32", rule.reference)  # ValueError if unknown


def test_a_part_holding_a_subset_of_the_values_has_an_output_row_for_each_case_index():
    """The GPU values part holds only the accepted cases: case k still stores into row k."""
    from matrix.probes.fp import probe as fp

    values = bt.load().values
    subset = [v for v in values if v.index != values[0].index]  # one case refused
    _, outs = fp._buffers(subset)
    assert all(outs[w].shape[0] > max(v.index for v in subset) for w in bt.WIDTHS)


# What the H200 stored for inf cast to fp8 on every release 3.0.0-3.9.0 (reports/raw/*-gpu-h200,
# 2026-12-01): 57344 (0x7B) for float8e5 and 448 (0x7E) for float8e4nv, and the conversion
# instructions the same release's PTX holds for these casts (notes/evidence/fp8_satfinite_ptx.txt).
SATFINITE_PTX = [
    "cvt.f32.bf16", "cvt.rn.satfinite.e4m3x2.f32", "cvt.rn.satfinite.e5m2x2.f16x2",
    "cvt.rn.satfinite.e5m2x2.f32", "cvt.u64.u32",
]  # fmt: skip


def _fp8_cast_row(label: str, result: str, lowered: list[str] | None, gpu_bits: int):
    from matrix.probes.fp import semantics as sem

    vc = _value_case("values.cast_float_down", label=label)
    inputs = [x for (x,) in vc.inputs]
    # Right values for the finite inputs, the GPU's saturated bits for inf (nan kept as nan).
    bits = []
    for x in inputs:
        want = fp_checks.round_to(x, result, saturate=True)
        bits.append(gpu_bits if x == float("inf") else int(fp_checks.encode([want], result)[0]))
    sink = _sink_with(vc, result, bits)
    sink.lowered = lowered
    semantics = sem.Semantics("cuda:90", "ttir", {vc.index: ["tt.fp_to_fp{rounding=rtne}"]}, {}, {})
    (row,) = fp_checks.value_rows(sink, [vc], semantics)
    return row, f"{label}(inf)"


def test_fp8_saturation_is_right_where_the_kernel_ran_satfinite_and_wrong_elsewhere():
    """Judged by what the kernel that ran was lowered to: with the PTX's cvt.rn.satfinite the
    GPU's 57344 / 448 for inf are right; the same values with no lowered code read (the
    interpreter's case) are judged non-saturating, where inf -> e5m2 is inf: wrong."""
    row, key = _fp8_cast_row("float32->float8e5", "fp8e5", SATFINITE_PTX, 0x7B)
    assert row.data["cells"][key] == "right", row.data
    assert row.data["semantics"]["float32->float8e5"]["reference"] == (
        "round_to_nearest_even_satfinite"
    )
    assert "cvt.rn.satfinite.e5m2x2.f32" in row.data["semantics"]["float32->float8e5"]["lowered"]
    row, key = _fp8_cast_row("float32->float8e4nv", "fp8e4nv", SATFINITE_PTX, 0x7E)
    assert row.data["cells"][key] == "right"
    row, key = _fp8_cast_row("float32->float8e5", "fp8e5", None, 0x7B)
    assert row.data["cells"][key] == "wrong"
    assert row.data["values"][key]["reference"] == "inf"
    # A kernel lowered without satfinite (made-up PTX) keeps the non-saturating reference.
    row, key = _fp8_cast_row("float32->float8e5", "fp8e5", ["cvt.rn.e5m2x2.f32"], 0x7B)
    assert row.data["cells"][key] == "wrong"


def test_fp8_overflow_is_spelt_out_not_left_to_torch():
    """Non-saturating overflow is inf for e5m2 and NaN for e4m3fn (which has no inf), whatever
    the installed torch does (torch 2.13 saturates e4m3fn); ties at the top round to even."""
    import math

    assert fp_checks.round_to(math.inf, "fp8e5") == math.inf
    assert math.isnan(fp_checks.round_to(math.inf, "fp8e4nv"))
    assert math.isnan(fp_checks.round_to(-1e6, "fp8e4nv"))
    assert fp_checks.round_to(464.0, "fp8e4nv") == 448.0  # tie: 448 is even
    assert math.isnan(fp_checks.round_to(464.5, "fp8e4nv"))
    assert fp_checks.round_to(59392.0, "fp8e5") == math.inf  # tie: 57344 is odd
    assert fp_checks.round_to(59391.0, "fp8e5") == 57344.0
    assert fp_checks.round_to(-math.inf, "fp8e5", saturate=True) == -57344.0
    assert fp_checks.round_to(math.inf, "fp8e4nv", saturate=True) == 448.0
    assert math.isnan(fp_checks.round_to(math.nan, "fp8e4nv", saturate=True))
    assert fp_checks.round_to(-2.25, "fp8e5") == -2.0


def test_lowered_ops_reads_the_conversions_of_a_compiled_kernels_ptx():
    from matrix.probes.fp import semantics as sem

    class Compiled:
        def __init__(self) -> None:
            self.asm = {"ptx": "cvt.rn.satfinite.e4m3x2.f32 %rs1, %r2;\n cvt.u64.u32 %rd1, %r1;"}

    assert sem.lowered_ops(Compiled()) == ["cvt.rn.satfinite.e4m3x2.f32", "cvt.u64.u32"]
    assert sem.lowered_ops(None) is None


def test_the_analysis_spells_unwritten_as_the_probe_records_it():
    from matrix.analyze import fingerprint

    assert fingerprint.UNWRITTEN == fp_checks.UNWRITTEN
    assert fingerprint.classify(fingerprint.UNWRITTEN, "nan") == fingerprint.FIXED
    assert fingerprint.classify("2.0", fingerprint.UNWRITTEN) == fingerprint.REGRESSION
