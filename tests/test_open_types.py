"""What an open element type admits when no launch, host site or declaration decides it
(``[open_types]``, matrix/analyze/profile/open_types.py): what tensors carry in practice
(fp16/bf16/fp32; int32/int64 where the code rules floats out), any other dtype only with
evidence (the file names it, a declaration), and one 16-bit format per launch. Small kernels
written for these tests, shaped like the lines real libraries got false entries on
(``input / (1 - p)``, ``acc.to(out_ptr.dtype.element_ty)``)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from matrix.analyze.profile.declaration import WIDE, Declaration
from matrix.analyze.profile.match import match_uses
from matrix.analyze.profile.model import ELEM_DTYPES, Use, load_map
from matrix.core import DataFileError
from matrix.gate.usage import build_profile
from matrix.results import raw_files

HEAD = "import torch\nimport triton\nimport triton.language as tl\n\n\n"
ROOT = Path(__file__).resolve().parents[1]
RAW = ROOT / "reports" / "raw"
OPEN = frozenset({"float16", "bfloat16", "float32"})
EVERY = Declaration.parse({"dtypes": {"*": ["*"]}}, "test")

DROPOUT = """
@triton.jit
def dropout(x_ptr, o_ptr, n, drop_p, BLOCK: tl.constexpr):
    r = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + r, mask=r < n)
    tl.store(o_ptr + r, x / (1 - drop_p) + x / 6, mask=r < n)
"""
CAST = """
@triton.jit
def attn(q_ptr, k_ptr, o_ptr, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    q = tl.load(q_ptr + r)
    k = tl.load(k_ptr + r)
    s = q * 2.0
    tl.store(o_ptr + r, s.to(k.dtype))
    tl.store(o_ptr + r, (s * 0.5).to(o_ptr.dtype.element_ty))
    tl.store(o_ptr + r, q.to(tl.float16))
"""


def uses(tmp_path: Path, body: str, declaration: Declaration | None = None) -> list[Use]:
    (tmp_path / "k.py").write_text(HEAD + textwrap.dedent(body))
    return build_profile([str(tmp_path)], [], [], declaration).uses


def status(found: list[Use], op: str, line_has: str, cell: list[str]) -> str:
    return match_uses([u for u in found if u.op == op and line_has in u.code], op, cell).status


def test_an_fp8_cell_needs_evidence_the_file_names_fp8_or_a_declaration(tmp_path):
    fp8 = ["float8e4nv", "lit_int"]
    found = uses(tmp_path, DROPOUT)
    assert status(found, "binary.truediv", "x / 6", fp8) == "not used"
    assert status(found, "binary.truediv", "x / 6", ["bfloat16", "lit_int"]) == "may affect"
    # the file names the format (a helper's cast, a host check): its kernels may see it
    named = uses(tmp_path, "\nFP8 = tl.float8e4nv\n" + DROPOUT)
    assert status(named, "binary.truediv", "x / 6", fp8) == "may affect"
    assert status(named, "binary.truediv", "x / 6", ["float8e5", "lit_int"]) == "not used"
    host = uses(tmp_path, DROPOUT + "\n\ndef run(x):\n    assert x.dtype != torch.float8_e5m2\n")
    assert status(host, "binary.truediv", "x / 6", ["float8e5", "lit_int"]) == "may affect"
    # a team's declaration: every dtype ("*"), or the fp8 format itself
    assert status(uses(tmp_path, DROPOUT, EVERY), "binary.truediv", "x / 6", fp8) == "may affect"
    only = Declaration.parse({"dtypes": {"dropout.x_ptr": ["fp8e4nv"]}}, "test")
    assert status(uses(tmp_path, DROPOUT, only), "binary.truediv", "x / 6", fp8) == "used"


def test_two_open_variables_never_pair_bf16_with_fp16_but_an_explicit_cast_does(tmp_path):
    found = uses(tmp_path, CAST)
    for line in ("s.to(k.dtype)", "o_ptr.dtype.element_ty"):
        assert status(found, "cast.to", line, ["bfloat16", "float16"]) == "not used", line
        assert status(found, "cast.to", line, ["float16", "bfloat16"]) == "not used", line
        assert status(found, "cast.to", line, ["float32", "bfloat16"]) == "may affect", line
        assert status(found, "cast.to", line, ["bfloat16", "bfloat16"]) == "may affect", line
    # the code's own dtype is evidence: a bf16 q cast to fp16 is what it says
    assert status(found, "cast.to", "q.to(tl.float16)", ["bfloat16", "float16"]) == "may affect"
    # every dtype (declared "*"): the two variables are independent again
    wide = uses(tmp_path, CAST, EVERY)
    assert status(wide, "cast.to", "s.to(k.dtype)", ["bfloat16", "float16"]) == "may affect"


def test_a_launch_passing_one_16_bit_format_gives_it_to_the_open_variables(tmp_path):
    host = """

    def run(q, k):
        o = torch.empty(q.shape, dtype=torch.bfloat16, device=q.device)
        attn[(1,)](q, k, o, BLOCK=128)
    """
    found = uses(tmp_path, CAST + textwrap.dedent(host))
    (load,) = [u for u in found if u.op == "load" and "q = tl.load" in u.code]
    assert load.operands[0] == frozenset({"bfloat16", "float32"})


def test_a_value_used_as_an_integer_is_int32_or_int64_unless_the_file_names_another(tmp_path):
    body = """
        @triton.jit
        def gather(idx_ptr, x_ptr, o_ptr, BLOCK: tl.constexpr):
            r = tl.arange(0, BLOCK)
            i = tl.load(idx_ptr + r)
            tl.store(o_ptr + r, tl.load(x_ptr + i) * 2 + (i % 7))
        """
    found = uses(tmp_path, body)
    (mod,) = [u for u in found if u.op == "binary.mod"]
    assert mod.operands[0] == frozenset({"int32", "int64"})
    named = uses(tmp_path, "\nIDX = tl.int16\n" + textwrap.dedent(body))
    (mod,) = [u for u in named if u.op == "binary.mod"]
    assert mod.operands[0] == frozenset({"int16", "int32", "int64"})


def test_the_default_never_narrows_to_nothing_and_falls_back_to_integers():
    rule = load_map().open_types
    none = frozenset[str]()
    assert rule.domain(ELEM_DTYPES, none, None) == OPEN
    assert rule.domain(ELEM_DTYPES, none, "bfloat16") == {"bfloat16", "float32"}
    assert rule.domain(ELEM_DTYPES - OPEN, none, None) == {"int32", "int64"}
    # what the code admits and nothing practical fits: the code's own answer
    assert rule.domain(frozenset({"uint8"}), none, None) == {"uint8"}
    assert rule.domain(frozenset({"bfloat16"}), none, "float16") == {"bfloat16"}
    assert rule.mentioned("x.to(tl.float8e4nv)\ny = torch . uint8\nz = a.tl.int16") == {
        "float8e4nv", "uint8"
    }  # fmt: skip


def test_a_declared_star_stands_alone():
    assert Declaration.parse({"dtypes": {"k": "*"}}, "t").dtypes_of("k", "x_ptr") == WIDE
    with pytest.raises(DataFileError):
        Declaration.parse({"dtypes": {"k": ["*", "float16"]}}, "t")


def _gate(tmp_path: Path, source: str, pyproject: str = "") -> tuple[int, dict, str]:
    if not raw_files(RAW):
        pytest.skip("reports/raw has no committed results")
    src = tmp_path / "team"
    src.mkdir(exist_ok=True)
    (src / "k.py").write_text(HEAD + textwrap.dedent(source))
    if pyproject:
        (src / "pyproject.toml").write_text(pyproject)
    out = tmp_path / "gate"
    cmd = [sys.executable, "-m", "matrix.gate", "--baseline", "3.8.0", "--candidate", "3.9.0",
           "--results", str(RAW), "--scan", str(src), "--out", str(out)]  # fmt: skip
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert (out / "gate.json").is_file(), proc.stdout + proc.stderr
    return (
        proc.returncode,
        json.loads((out / "gate.json").read_text()),
        (out / "gate.md").read_text(),
    )


def test_the_gate_says_the_assumption_once_and_a_declared_star_widens_it(tmp_path):
    exported = DROPOUT + '\n__all__ = ["dropout"]\n'  # named: reached (gate/reach.py)
    code, doc, md = _gate(tmp_path, exported)
    assert code == 0, md[:3000]
    assert doc["open_types"]["assumed"] == 2
    first = md.split("## Details", 1)[0]
    assert first.count("open element type(s) assumed fp16/bf16/fp32") == 1
    assert '"*" = ["*"]' in first
    # every dtype declared: the fp8 division (3.8.0 -> 3.9.0 changed it) may affect the code
    code, doc, md = _gate(tmp_path, exported, '[tool.triton-compat.dtypes]\n"*" = ["*"]\n')
    assert code == 1, md[:3000]
    assert doc["open_types"]["assumed"] == 0 and "assumed" not in md.split("## Details", 1)[0]
    cells = {c for e in doc["blocking"] if e["group"] == "fp.binary.truediv" for c in e["cells"]}
    assert any(c.startswith("float8e4nv") for c in cells), doc["blocking"]


def test_a_host_check_admitting_both_16_bit_formats_still_gives_a_launch_one(tmp_path):
    body = """
        @triton.jit
        def copy(x_ptr, y_ptr, BLOCK: tl.constexpr):
            r = tl.arange(0, BLOCK)
            x = tl.load(x_ptr + r)
            tl.store(y_ptr + r, (x * 2).to(y_ptr.dtype.element_ty))


        def run(x, y):
            assert x.dtype in (torch.float16, torch.bfloat16)
            assert y.dtype in (torch.float16, torch.bfloat16)
            copy[(1,)](x, y, BLOCK=128)
        """
    found = uses(tmp_path, body)
    # the host's domain, one format per reading (of two: each pointer takes one dtype)
    assert {u.operands for u in found if u.op == "load"} == {
        (frozenset({"float16"}),),
        (frozenset({"bfloat16"}),),
    }
    assert status(found, "cast.to", "y_ptr.dtype", ["bfloat16", "float16"]) == "not used"
    assert status(found, "cast.to", "y_ptr.dtype", ["bfloat16", "bfloat16"]) == "used"
    assert status(uses(tmp_path, body, EVERY), "cast.to", "y_ptr.dtype",
                  ["bfloat16", "float16"]) == "may affect"  # fmt: skip


def test_an_unknown_value_is_no_dtype_nothing_in_its_kernel_gives(tmp_path):
    body = """
        from mylib import ext

        @triton.jit
        def k(x_ptr, o_ptr, BLOCK: tl.constexpr):
            r = tl.arange(0, BLOCK)
            y = ext.mystery(tl.load(x_ptr + r))
            tl.store(o_ptr + r, y / 3)
        """
    found = uses(tmp_path, body)
    (div,) = [u for u in found if u.op == "binary.truediv"]
    assert div.operands[0] is None  # the reader cannot type it: fail closed, but not on fp8
    assert status(found, "binary.truediv", "y / 3", ["bfloat16", "lit_int"]) == "may affect"
    assert status(found, "binary.truediv", "y / 3", ["uint32", "lit_int"]) == "may affect"
    assert status(found, "binary.truediv", "y / 3", ["float8e4nv", "lit_int"]) == "not used"
    # the file names fp8, or a pointer may hold it (declared "*"): an unknown may be fp8
    named = "\n        FP8 = tl.float8e4nv\n" + body
    assert status(uses(tmp_path, named), "binary.truediv", "y / 3",
                  ["float8e4nv", "lit_int"]) == "may affect"  # fmt: skip
    assert status(uses(tmp_path, body, EVERY), "binary.truediv", "y / 3",
                  ["float8e4nv", "lit_int"]) == "may affect"  # fmt: skip


def test_an_unknown_value_cast_to_an_open_pointers_dtype_is_of_the_launchs_format(tmp_path):
    body = """
        from mylib import ext

        @triton.jit
        def k(x_ptr, o_ptr, BLOCK: tl.constexpr):
            r = tl.arange(0, BLOCK)
            y = ext.mystery(tl.load(x_ptr + r))
            tl.store(o_ptr + r, y.to(o_ptr.dtype.element_ty))
        """
    found = uses(tmp_path, body)
    assert status(found, "cast.to", "y.to(", ["bfloat16", "float16"]) == "not used"
    assert status(found, "cast.to", "y.to(", ["float32", "float16"]) == "may affect"
    assert status(found, "cast.to", "y.to(", ["bfloat16", "bfloat16"]) == "may affect"
    # the host names both formats: nothing of a value inside one launch
    host = (
        body
        + "\n\n        def run(x):\n            return x.dtype in (torch.float16, torch.bfloat16)\n"
    )
    assert status(uses(tmp_path, host), "cast.to", "y.to(", ["bfloat16", "float16"]) == ("not used")
    # the kernel itself names the other format: an unknown may be a value cast to it
    own = body.replace("tl.arange(0, BLOCK)", "tl.arange(0, BLOCK)\n            h = tl.bfloat16")
    assert status(uses(tmp_path, own), "cast.to", "y.to(", ["bfloat16", "float16"]) == (
        "may affect"
    )


def test_a_branch_on_two_dtype_predicates_joined_by_a_bitwise_or_is_read_per_side(tmp_path):
    body = """
        @triton.jit
        def scan(x_ptr, o_ptr, BLOCK: tl.constexpr):
            r = tl.arange(0, BLOCK)
            x = tl.load(x_ptr + r)
            if x.dtype.is_fp16() | x.dtype.is_bf16():
                x = x.to(tl.float32)
            tl.store(o_ptr + r, tl.cumsum(x, 0))
        """
    found = uses(tmp_path, body)
    assert status(found, "reduce.cumsum", "tl.cumsum", ["bfloat16"]) == "not used"
    assert status(found, "reduce.cumsum", "tl.cumsum", ["float32"]) in ("used", "may affect")
    only = uses(tmp_path, body.replace(" | x.dtype.is_bf16()", ""))
    assert status(only, "reduce.cumsum", "tl.cumsum", ["bfloat16"]) == "may affect"


QUANT = """
@triton.jit
def quant(x_ptr, v_ptr, s_ptr, o_ptr, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + r)
    v = tl.load(v_ptr + r)
    s = tl.load(s_ptr)
    acc = tl.zeros((BLOCK,), dtype=tl.float8e5)
    tl.store(o_ptr + r, (x / s).to(tl.float8e4nv))
    tl.store(o_ptr + r, tl.cast(x / s, tl.float8e5) + acc)
    tl.store(o_ptr + r, v / 3)
    {check}

def run(x, v, s, o):
    quant[(1,)](x, v, s, o, FP8_MAX=torch.finfo(torch.float8_e4m3fn).max)
"""


def test_fp8_named_only_as_what_a_value_is_made_is_no_evidence_for_an_input(tmp_path):
    """FlagGems concat_and_cache_mla.py, lightllm destindex_copy_kv_fp8.py: a bf16/fp16 input
    divided by an fp32 scale and cast to fp8 for the cache. The cast's target, a ``dtype=``,
    ``tl.cast(x, T)`` and ``torch.finfo(T)`` say what a value is made, not what ``x_ptr``
    holds: no fp8 division. A comparison of a parameter's dtype with fp8 (FlagGems
    attention.py ``V.dtype.element_ty == tl.float8e5``) is evidence for that parameter only;
    of a local's, for every parameter of its function; a host's ``torch`` dtype anywhere
    else, for the whole file (what the host passes is not followed that far: fail closed)."""
    fp8 = [["float8e4nv", "float8e4nv"], ["float8e5", "float8e5"], ["float8e5", "float32"]]

    def division(found: list[Use], line: str, cells: list[list[str]]) -> set[str]:
        return {status(found, "binary.truediv", line, c) for c in cells}

    found = uses(tmp_path, QUANT.format(check=""))
    assert division(found, "(x / s)", fp8) == {"not used"}
    assert division(found, "x / s, tl.float8e5", fp8) == {"not used"}
    assert status(found, "binary.truediv", "(x / s)", ["bfloat16", "bfloat16"]) == "may affect"
    # the code ties fp8e5 to v_ptr: v may be fp8e5, x still is not
    tied = uses(
        tmp_path, QUANT.format(check="tl.static_assert(v_ptr.dtype.element_ty != tl.float8e5)")
    )
    assert status(tied, "binary.truediv", "v / 3", ["float8e5", "lit_int"]) == "may affect"
    assert division(tied, "(x / s)", fp8) == {"not used"}
    # a local's dtype compared: any parameter of the function may hold it
    local = uses(tmp_path, QUANT.format(check="tl.static_assert(x.dtype != tl.float8e4nv)"))
    assert status(local, "binary.truediv", "(x / s)", fp8[0]) == "may affect"
    # a host that casts a tensor to fp8 somewhere in the file: any pointer of the file
    host = uses(
        tmp_path, QUANT.format(check="") + "\n\ndef h(x):\n    return x.to(torch.float8_e5m2)\n"
    )
    assert status(host, "binary.truediv", "v / 3", ["float8e5", "lit_int"]) == "may affect"


COPY = """
@triton.jit
def copy_fp8(x_ptr, o_ptr, s_ptr, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + r)
    scale = tl.max(tl.abs(x), axis=0) / 448.0
    tl.store(s_ptr, scale)
    tl.store(o_ptr + r, (x / scale).to(tl.float8e4nv))
    tl.store(o_ptr + r, tl.load(o_ptr + r) / 2)


def copy(x, o, s):
    assert x.shape == o.shape
    copy_fp8[(1,)](x, o, s, BLOCK=x.shape[0])


if __name__ == "__main__":
    fp8 = torch.float8_e4m3fn
    x = torch.load("x.pt")  # no dtype the host reading can name: x_ptr stays open
    buf = torch.zeros(66, dtype=torch.uint8)
    o = buf[:64].view(fp8)
    copy(x, o, buf[64:].view(torch.bfloat16))
    print(o[:4].to(torch.bfloat16){tail})
"""


def test_a_host_dtype_is_evidence_for_the_kernel_parameters_its_tensor_reaches(tmp_path):
    """lightllm destindex_copy_kv_fp8.py's ``__main__``: ``o = buf.view(fp8)`` reaches the
    kernel's ``o_ptr`` through the wrapper, so ``x_ptr`` (a tensor of a dtype the code does
    not name) holds no fp8; the uint8 buffer is only viewed as other dtypes. Where the tensor
    goes somewhere not followed (here: returned), the dtype is the whole file's again. The
    module's own launch types ``o_ptr`` fp8 outright (the host reading reads module code)."""
    fp8, u8 = ["float8e4nv"], ["uint8"]
    found = uses(tmp_path, COPY.replace("{tail}", ""))
    assert status(found, "load", "tl.load(x_ptr", fp8) == "not used"
    assert status(found, "load", "tl.load(x_ptr", u8) == "not used"
    assert status(found, "load", "tl.load(o_ptr", fp8) == "used"
    # a function that returns what it is given, called with the fp8 tensor: not followed
    gone = COPY.replace("{tail}", "").replace("copy(x, o, buf", "keep(o)\n    copy(x, o, buf")
    gone += "\n\ndef keep(t):\n    return t\n"
    assert status(uses(tmp_path, gone), "load", "tl.load(x_ptr", fp8) == "may affect"
    # converted back before it is read on the host: ends there; read otherwise: not followed
    read = COPY.replace("{tail}", "").replace("o[:4].to(torch.bfloat16)", "o[:4] + 1")
    assert status(uses(tmp_path, read), "load", "tl.load(x_ptr", fp8) == "may affect"


CHECKED = """
@triton.jit
def gemm_fp8(a_ptr, s_ptr, o_ptr, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + r)
    s = tl.load(s_ptr + r)
    tl.store(o_ptr + r, a.to(tl.float32) * tl.maximum(s * s, 1e-12))


def supported(a, scale):
    fp8 = (torch.float8_e4m3fn,)
    if hasattr(torch, "float8_e5m2"):
        fp8 = fp8 + (torch.float8_e5m2,)
    if not a.is_cuda or a.dtype not in fp8:
        return False
    return scale.dim() == 1


def gemm(a, scale, out):
    assert supported(a, scale)
    gemm_fp8[(1,)](a, scale, out, BLOCK=a.shape[0])
"""


def test_a_host_check_of_a_tensors_dtype_is_evidence_for_what_that_tensor_reaches(tmp_path):
    """lmdeploy blocked_fp8_fused_moe.py: a helper checks ``input.dtype not in fp8_dtypes``
    (a tuple grown with ``+``); its caller passes that tensor to the kernel's A, not to the
    scales: A may be fp8, the scales are not."""
    found = uses(tmp_path, CHECKED)
    fp8 = ["float8e4nv", "float8e4nv"]
    assert status(found, "binary.mul", "s * s", fp8) == "not used"
    assert status(found, "load", "tl.load(a_ptr", ["float8e4nv"]) == "may affect"
    assert status(found, "load", "tl.load(a_ptr", ["float8e5"]) == "may affect"
    # the checker called from a file that is not followed (no caller here): the whole file
    alone = CHECKED.replace("    assert supported(a, scale)\n", "")
    assert status(uses(tmp_path, alone), "binary.mul", "s * s", fp8) == "may affect"
