"""A binary op's result typed with the result types the baseline and the candidate recorded
(the fingerprint's types cells), per release where they differ; the fixed rule only where no
cell records the combination, said in the profile's notes; constexpr dtype parameters typed by
their default (a module constant too) or their jit caller. Kernels written for these tests."""

from __future__ import annotations

import textwrap
from functools import lru_cache
from pathlib import Path

import pytest

from matrix.analyze.profile.match import match_uses
from matrix.analyze.profile.promotion import BASELINE, CANDIDATE, ReleaseTypes, SidedTypes
from matrix.gate.usage import build_profile
from matrix.results import Run, raw_files, read_runs

HEAD = "import triton\nimport triton.language as tl\n\n\n"
RAW = Path(__file__).resolve().parents[1] / "reports" / "raw"


@lru_cache(maxsize=1)
def committed() -> tuple[Run, ...]:
    files = [f for f in raw_files(RAW) if "-gpu-" not in f.name and "numpy-2.3.5" in f.name]
    if not files:
        pytest.skip("no committed raw results")
    return tuple(r for f in files for r in read_runs(f))


def profile(tmp_path: Path, body: str, baseline: str | None, candidate: str | None):
    (tmp_path / "k.py").write_text(HEAD + textwrap.dedent(body))
    runs = list(committed()) if baseline else []
    return build_profile([str(tmp_path)], [], runs, None, baseline=baseline, candidate=candidate)


def at(uses, op: str, text: str) -> dict[str, tuple]:
    """The operands of ``op`` on the line holding ``text``, by release ("" where one use)."""
    hits = [u for u in uses if u.op == op and text in u.code]
    assert hits, [u.describe() for u in uses if u.op == op]
    return {u.attr("release"): u.operands for u in hits}


F = frozenset

BF16_MAX = """
@triton.jit
def k(x_ptr, o_ptr, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + r).to(tl.bfloat16)
    m = tl.maximum(x, x)
    y = m * 2.0
    tl.store(o_ptr + r, y.to(tl.float16))
"""


def test_a_result_type_the_releases_record_differently_types_what_it_feeds_per_release(tmp_path):
    # 3.8.0 records tl.maximum of two bfloat16 as float32, 3.9.0 as bfloat16
    uses = profile(tmp_path, BF16_MAX, "3.8.0", "3.9.0").uses
    mul = at(uses, "binary.mul", "m * 2.0")
    assert mul == {
        "3.8.0": (F({"float32"}), F({"lit_float"})),
        "3.9.0": (F({"bfloat16"}), F({"lit_float"})),
    }
    cast = at(uses, "cast.to", "y.to(tl.float16)")
    assert cast["3.8.0"][0] == F({"float32"}) and cast["3.9.0"][0] == F({"bfloat16"})
    # each side's cell is found exactly (used, not "may affect")
    both = [u for u in uses if u.op == "binary.mul"]
    assert match_uses(both, "binary.mul", ["float32", "lit_float"]).status == "used"
    assert match_uses(both, "binary.mul", ["bfloat16", "lit_float"]).status == "used"
    assert match_uses(both, "binary.mul", ["float16", "lit_float"]).status == "not used"
    # the op itself has the same operands on both: one use
    assert at(uses, "binary_fn.maximum", "tl.maximum(x, x)") == {
        "": (F({"bfloat16"}), F({"bfloat16"}))
    }


def test_recorded_promotion_replaces_the_fixed_rule_on_both_sides(tmp_path):
    body = """
    @triton.jit
    def k(x_ptr, o_ptr, BLOCK: tl.constexpr):
        r = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + r).to(tl.int8)
        h = tl.load(x_ptr + r).to(tl.float16)
        tl.store(o_ptr + r, ((x + 1) % 7).to(tl.float32) + (h * 0.5) / 3)
    """
    # 3.1.0 widens int8 + literal to int32 and float16 * float literal to float32; 3.2.0 not
    uses = profile(tmp_path, body, "3.1.0", "3.2.0").uses
    assert at(uses, "binary.mod", "% 7") == {
        "3.1.0": (F({"int32"}), F({"lit_int"})),
        "3.2.0": (F({"int8"}), F({"lit_int"})),
    }
    div = at(uses, "binary.truediv", "/ 3")
    assert div["3.1.0"][0] == F({"float32"}) and div["3.2.0"][0] == F({"float16"})
    # with no pair of releases, the fixed rule: the tensor's dtype, one use
    fixed = profile(tmp_path, body, None, None).uses
    assert at(fixed, "binary.mod", "% 7") == {"": (F({"int8"}), F({"lit_int"}))}


def test_branches_loops_and_helpers_keep_each_releases_type(tmp_path):
    body = """
    @triton.jit
    def twice(v):
        return v * 2

    @triton.jit
    def k(x_ptr, o_ptr, flag, BLOCK: tl.constexpr):
        r = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + r).to(tl.bfloat16)
        if flag > 0:  # run-time: both sides joined (a constexpr is read per value)
            v = tl.minimum(x, x)
        else:
            v = x
        for i in range(4):
            v = v + 1.0
        w = twice(v)
        tl.store(o_ptr + r, w - 1)
    """
    uses = profile(tmp_path, body, "3.8.0", "3.9.0").uses
    sub = at(uses, "binary.sub", "w - 1")
    assert sub["3.8.0"][0] == F({"float32", "bfloat16"})  # either branch on 3.8.0
    assert sub["3.9.0"][0] == F({"bfloat16"})
    helper = at(uses, "binary.mul", "v * 2")
    assert helper["3.9.0"][0] == F({"bfloat16"}) and "float32" in helper["3.8.0"][0]


def test_a_combination_no_release_records_is_typed_by_the_fixed_rule_and_named_in_the_notes(
    tmp_path,
):
    body = """
    @triton.jit
    def k(x_ptr, o_ptr, BLOCK: tl.constexpr):
        r = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + r).to(tl.int32)
        tl.store(o_ptr + r, (x >> 1) + 1)
    """
    p = profile(tmp_path, body, "3.8.0", "3.9.0")
    assert at(p.uses, "binary.add", "+ 1") == {"": (F({"int32"}), F({"lit_int"}))}
    (note,) = [n for n in p.notes if "fixed promotion rule" in n]
    assert "binary.rshift [int32,lit_int]" in note


def test_a_scalar_on_the_left_the_battery_never_puts_there_takes_the_mirrored_cell(tmp_path):
    body = """
    @triton.jit
    def k(x_ptr, o_ptr, eps, BLOCK: tl.constexpr):
        r = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + r).to(tl.float16)
        y = eps + x
        tl.store(o_ptr + r, y * 3)
    """
    p = profile(tmp_path, body, "3.1.0", "3.2.0")
    # eps is a runtime scalar (arg_f32 among others): float16 with arg_f32 is float32 on 3.1.0
    mul = at(p.uses, "binary.mul", "y * 3")
    assert "float32" in mul["3.1.0"][0] and "float32" not in mul["3.2.0"][0]
    assert all("arg_f32,float16" not in n for n in p.notes)


def test_release_types_read_dtypes_refusals_and_gaps_from_the_cells():
    both = ReleaseTypes(
        "1.0.0",
        {("binary.add", "int8,lit_int"): F({"int32"})},
        [("binary.add", "float8e5,int8")],
    )
    assert both.result("binary.add", "int8", "lit_int") == F({"int32"})
    assert both.result("binary.add", "float8e5", "int8") == "rejected"
    assert both.result("binary.add", "int16", "lit_int") is None
    types = SidedTypes(both, ReleaseTypes("2.0.0", {("binary.add", "int8,lit_int"): F({"int8"})}))
    assert types.promote("binary.add", F({"int8"}), F({"lit_int"}), BASELINE) == F({"int32"})
    assert types.promote("binary.add", F({"int8"}), F({"lit_int"}), CANDIDATE) == F({"int8"})
    # refused on the baseline: the fixed rule stands in, not a gap to report
    assert types.promote("binary.add", F({"float8e5"}), F({"int8"}), BASELINE) == F({"float8e5"})
    assert "binary.add" not in types.unrecorded
    types.promote("binary.add", F({"int16"}), F({"lit_int"}), CANDIDATE)
    assert types.unrecorded == {"binary.add": {"int16,lit_int"}}


def test_committed_runs_record_the_bf16_maximum_change():
    types = SidedTypes.from_runs(committed(), "3.8.0", "3.9.0", {"fp32": "float32",
                                                                 "bf16": "bfloat16"})  # fmt: skip
    pair = F({"bfloat16"})
    assert types.promote("binary_fn.maximum", pair, pair, BASELINE) == F({"float32"})
    assert types.promote("binary_fn.maximum", pair, pair, CANDIDATE) == F({"bfloat16"})


def test_constexpr_dtypes_from_a_default_a_module_constant_and_a_jit_caller(tmp_path):
    body = """
    ACC: tl.constexpr = tl.float32

    @triton.jit
    def part(x, ACC_DTYPE: tl.constexpr):
        acc = tl.zeros([16], dtype=ACC_DTYPE)
        return acc / 3.0

    @triton.jit
    def k(o_ptr, BLOCK: tl.constexpr, D: tl.constexpr = tl.float16, E: tl.constexpr = ACC):
        r = tl.arange(0, BLOCK)
        a = tl.zeros([BLOCK], dtype=D)
        b = tl.zeros([BLOCK], dtype=E)
        c = a % 2
        d = b % 3
        tl.store(o_ptr + r, c + d + part(a, tl.bfloat16))
    """
    uses = profile(tmp_path, body, None, None).uses
    assert at(uses, "binary.mod", "a % 2") == {"": (F({"float16"}), F({"lit_int"}))}
    # E's default is a module constant
    assert at(uses, "binary.mod", "b % 3") == {"": (F({"float32"}), F({"lit_int"}))}
    assert at(uses, "binary.truediv", "acc / 3.0") == {"": (F({"bfloat16"}), F({"lit_float"}))}


def test_a_reduction_takes_each_releases_recorded_result_type(tmp_path):
    body = """
    @triton.jit
    def k(x_ptr, o_ptr, BLOCK: tl.constexpr):
        r = tl.arange(0, BLOCK)
        h = tl.load(x_ptr + r).to(tl.float16)
        i = tl.load(x_ptr + r).to(tl.int8)
        m = tl.max(h, 0)
        s = tl.sum(i, 0)
        tl.store(o_ptr, (h - m) * 2 + s % 5)
    """
    # tl.max of a float16 computes in float32 on every release the fingerprint measured
    uses = profile(tmp_path, body, "3.2.0", "3.3.1").uses
    assert at(uses, "binary.sub", "h - m") == {"": (F({"float16"}), F({"float32"}))}
    # tl.sum of an int8 stays int8 on 3.2.0 and is an int32 on 3.3.1
    assert at(uses, "binary.mod", "s % 5") == {
        "3.2.0": (F({"int8"}), F({"lit_int"})),
        "3.3.1": (F({"int32"}), F({"lit_int"})),
    }
    # without a pair of releases: the input's dtype, and the sum's fixed widening
    fixed = profile(tmp_path, body, None, None).uses
    assert at(fixed, "binary.sub", "h - m") == {"": (F({"float16"}), F({"float16"}))}
    assert at(fixed, "binary.mod", "s % 5") == {"": (F({"int32"}), F({"lit_int"}))}
