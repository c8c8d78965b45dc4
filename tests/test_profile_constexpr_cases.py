"""Branches on constexpr parameters, read the way Triton compiles them: one reading per value
of each parameter (the constants it is compared with, one unequal to all of them, True/False
where it is tested bare), so values from different branches never meet. Modeled on a norm
kernel with a casting mode: Gemma's path casts an fp32 result back to the input dtype, Llama's
casts the input down first; read joined, the two paths pair a narrow value with the other
mode's cast (a bf16 -> fp16 cast no path does)."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

from matrix.analyze.profile.constexprs import (
    MAX_CONSTEXPR_CASES,
    OTHER_VALUE,
    constexpr_cases,
    static_truth,
)
from matrix.analyze.profile.declaration import Declaration
from matrix.analyze.profile.match import match_uses
from matrix.analyze.profile.model import Use
from matrix.analyze.profile.modules import module_globals
from matrix.gate.usage import build_profile

HEAD = "import triton\nimport triton.language as tl\n\n"

NORM = """
MODE_NONE: tl.constexpr = tl.constexpr(-1)
MODE_LLAMA: tl.constexpr = tl.constexpr(0)
MODE_GEMMA: tl.constexpr = tl.constexpr(1)


@triton.jit
def norm(y_ptr, x_ptr, w_ptr, n, mode: tl.constexpr, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + r, mask=r < n, other=0.0)
    w = tl.load(w_ptr + r, mask=r < n, other=0.0)
    x_dtype = x.dtype
    if mode == MODE_LLAMA:
        x = x.to(tl.float32)
    if mode == MODE_GEMMA:
        w = w.to(tl.float32)
        x = x.to(tl.float32)
    x = x * tl.rsqrt(tl.sum(x * x, 0) / n)
    if mode == MODE_LLAMA:
        x = x.to(x_dtype)
    y = x * w
    if mode == MODE_GEMMA:
        y = y.to(x_dtype)
    tl.store(y_ptr + r, y, mask=r < n)
"""


def _uses(tmp_path: Path, body: str, declaration: Declaration | None = None) -> list[Use]:
    (tmp_path / "k.py").write_text(HEAD + textwrap.dedent(body))
    return build_profile([str(tmp_path)], [], [], declaration).uses


def test_each_constexpr_value_is_read_on_its_own_so_branches_never_meet(tmp_path: Path) -> None:
    found = _uses(tmp_path, NORM)
    back = [u for u in found if u.op == "cast.to" and "y.to(x_dtype)" in u.code]
    assert back, [u.describe() for u in found if u.op == "cast.to"]
    # Gemma: y is fp32 (x and w both cast up), so its cast back is fp32 -> the input's dtype;
    # a narrow y (Llama's x_dtype * w) never reaches this cast
    assert match_uses(back, "cast.to", ["bfloat16", "float16"]).status == "not used"
    assert match_uses(back, "cast.to", ["float32", "float16"]).status in ("used", "may affect")
    # the joined reading (no constexpr cases) pairs them: the same kernel with the mode
    # compared against a value the reader cannot resolve keeps the old, wider answer (where
    # x and w may take any dtype: by default one launch never pairs bf16 with fp16)
    joined = _uses(
        tmp_path,
        NORM.replace("mode == MODE_GEMMA", "mode == UNKNOWN_MODE"),
        Declaration.parse({"dtypes": {"*": ["*"]}}, "test"),
    )
    back = [u for u in joined if u.op == "cast.to" and "y.to(x_dtype)" in u.code]
    assert match_uses(back, "cast.to", ["bfloat16", "float16"]).status == "may affect"


def test_the_cases_are_the_compared_constants_one_other_value_and_bools() -> None:
    tree = ast.parse(textwrap.dedent(NORM))
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef))
    cases = constexpr_cases(fn, module_globals(tree))
    assert sorted(str(c["mode"]) for c in cases if c["mode"] is not OTHER_VALUE) == ["0", "1"]
    assert sum(c["mode"] is OTHER_VALUE for c in cases) == 1
    # a launch that fixes the parameter: no enumeration
    assert constexpr_cases(fn, module_globals(tree), {"mode"}) == [{}]
    flags = ast.parse(
        "def k(a, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr, D: tl.constexpr):\n"
        "    if A and not B:\n        pass\n    if C:\n        pass\n    if D:\n        pass\n"
    ).body[0]
    assert isinstance(flags, ast.FunctionDef)
    # 2**4 = 16 combinations: more than the cap, so one joined reading
    assert MAX_CONSTEXPR_CASES < 2**4
    assert constexpr_cases(flags, {}) == [{}]
    three = ast.parse(
        "def k(a, A: tl.constexpr, B: tl.constexpr):\n    if A and not B:\n        pass\n"
    ).body[0]
    assert isinstance(three, ast.FunctionDef)
    assert len(constexpr_cases(three, {})) == 4


def test_static_truth_folds_only_what_the_fixed_values_decide() -> None:
    g = module_globals(ast.parse("M: tl.constexpr = tl.constexpr(2)\nN = 7\n"))

    def t(src: str, **fixed: object) -> bool | None:
        return static_truth(ast.parse(src, mode="eval").body, fixed, g)

    assert t("m == M", m=2) is True and t("m != M", m=2) is False
    assert t("m == N", m=7) is True and t("M == m", m=OTHER_VALUE) is False
    assert t("m == x", m=2) is None  # x: not a constant
    assert t("F and m == M", F=False, m=OTHER_VALUE) is False
    assert t("F or m == M", F=False, m=2) is True
    assert t("F and y > 0", F=True) is None
    assert t("not F", F=True) is False and t("m", m=OTHER_VALUE) is None
