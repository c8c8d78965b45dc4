"""What the kernel reader and host typing read, modeled on false gate entries of libraries
nobody here had tuned against (session 18: Megatron-LM, lightning-thunder, Triton-distributed,
aiter); each test fails without its mechanism."""

from __future__ import annotations

import textwrap
from pathlib import Path

from matrix.analyze.profile.declaration import Declaration
from matrix.analyze.profile.model import Use
from matrix.gate.usage import build_profile
from tests.support import operand_kinds

HEAD = "import torch\nimport triton\nimport triton.language as tl\n\n\n"
COMPILED = Declaration.parse({"targets": ["cuda:90"]}, "test")
INTERPRETED = Declaration.parse({"targets": ["interpret"]}, "test")


def _uses(tmp_path: Path, body: str, declaration: Declaration | None = None) -> list[Use]:
    pkg = tmp_path / "pkg"
    pkg.mkdir(exist_ok=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "k.py").write_text(HEAD + textwrap.dedent(body))
    return build_profile([str(pkg)], [], [], declaration).uses


def _kinds(found: list[Use], op: str, kernel: str, operand: int = 0) -> set[str]:
    """Every kind operand ``operand`` of ``op`` in ``kernel`` takes, over its readings."""
    return operand_kinds(found, op, lambda u: u.kernel == kernel, operand)


PREFIX_SUM = """
@triton.jit
def prefix_kernel(tok_ptr, out_ptr, n, alignment: tl.constexpr, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    h = tl.load(tok_ptr + r, mask=r < n, other=0)
    if alignment > 1:
        h = tl.where(h > 0, ((h + alignment - 1) // alignment) * alignment, h)
    tl.store(out_ptr + r, tl.cumsum(h, axis=0), mask=r < n)


def offsets(tokens: torch.Tensor, alignment: int = 1) -> torch.Tensor:
    out = torch.empty_like(tokens)
    n = tokens.shape[0]
    prefix_kernel[(1,)](tokens, out, n, alignment, BLOCK=triton.next_power_of_2(n))
    return out


def route(n, alignment):
    tokens = torch.zeros(n, dtype=torch.int32)
    return offsets(tokens, alignment=alignment)
"""


def test_a_host_parameter_annotated_int_passes_an_int(tmp_path):
    # Megatron's compute_expert_offsets(tokens_per_expert, alignment: int = 1): with the
    # constexpr read as "an int or a float", `h + alignment` of int32 counts became fp32 and
    # the cumsum "may be" a float one
    found = _uses(tmp_path, PREFIX_SUM)
    assert _kinds(found, "reduce.cumsum", "prefix_kernel") == {"int32"}
    assert _kinds(found, "binary.add", "prefix_kernel", 1) == {"cx_int"}


CROSS_ENTROPY = """
from enum import Enum


class Buf(Enum):
    kFP16 = 0
    kBF16 = 1
    kFP32 = 2


TORCH2BUF = {torch.float16: Buf.kFP16, torch.bfloat16: Buf.kBF16, torch.float32: Buf.kFP32}
BUF2TRITON = {Buf.kFP16: tl.float16, Buf.kBF16: tl.bfloat16, Buf.kFP32: tl.float32}


@triton.jit
def _rows(X, Y, BUFFER_DTYPE: tl.constexpr, BLOCK: tl.constexpr):
    buffer_dtype = BUFFER_DTYPE
    m = -float("inf")
    m = m.to(buffer_dtype)
    x = tl.load(X + tl.arange(0, BLOCK)).to(buffer_dtype)
    tl.store(Y, tl.maximum(tl.max(x, 0), m))


@triton.jit
def forward(X, Y, BUFFER_DTYPE: tl.constexpr, BLOCK: tl.constexpr):
    _rows(X, Y, BUFFER_DTYPE, BLOCK)


def run(logits):
    if logits.dtype in [torch.bfloat16, torch.float16]:
        buffer_dtype = torch.float32
    else:
        buffer_dtype = logits.dtype
    tag = TORCH2BUF[buffer_dtype]
    y = torch.empty(1, dtype=buffer_dtype)
    forward[(1,)](logits, y, BUFFER_DTYPE=BUF2TRITON[tag], BLOCK=128)
"""


def test_two_tables_through_an_enum_and_a_dtype_alias_passed_to_a_helper(tmp_path):
    # lightning-thunder's cross entropy: BUFFER_DTYPE = _DTYPE2TRITON[_TORCH2DTYPE[buf]] with
    # buf fp32 for a 16-bit input; the kernel hands it to a helper that casts through a local
    # alias. Read as a number constexpr before, its `tl.maximum` "may be" a bf16 one
    found = _uses(tmp_path, CROSS_ENTROPY)
    assert _kinds(found, "binary_fn.maximum", "_rows") == {"float32"}
    assert _kinds(found, "binary_fn.maximum", "_rows", 1) == {"float32"}


HISTOGRAM = """
@triton.jit
def histogram_block(values_ptr, N, BLOCK: tl.constexpr, BINS: tl.constexpr):
    out = tl.zeros((BINS,), dtype=tl.int32)
    for n in range(0, tl.cdiv(N, BLOCK)):
        offs = n * BLOCK + tl.arange(0, BLOCK)
        idx = tl.load(values_ptr + offs, mask=offs < N, other=BINS)
        out = out + tl.histogram(idx, BINS, mask=offs < N) * shim_scale(idx)
    return out


@triton.jit
def gather_index(experts_ptr, out_ptr, N, BLOCK: tl.constexpr, BINS: tl.constexpr):
    counts = histogram_block(experts_ptr, N, BLOCK, BINS)
    tl.store(out_ptr + tl.arange(0, BINS), tl.cumsum(counts, axis=0))
"""


def test_a_value_a_compiled_loop_carries_keeps_the_type_it_entered_with(tmp_path):
    # Triton-distributed's histogram_block_kernel: `out = tl.zeros(.., tl.int32)` carried round
    # a loop that adds what the reader cannot type (here an unknown shim); compiled Triton
    # refuses a loop whose carried value changes type, so `out` is int32 after it
    found = _uses(tmp_path, HISTOGRAM, COMPILED)
    assert _kinds(found, "reduce.cumsum", "gather_index") == {"int32"}


def test_the_interpreter_carries_no_type_round_a_loop(tmp_path):
    # where the team runs the interpreter, numpy may widen a carried value: not decided
    found = _uses(tmp_path, HISTOGRAM, INTERPRETED)
    assert "?" in _kinds(found, "reduce.cumsum", "gather_index")


TOPK = """
@triton.jit
def streaming_topk(X, Y, BLOCK: tl.constexpr, K: tl.constexpr):
    x_nbits: tl.constexpr = X.dtype.element_ty.primitive_bitwidth
    x_utype: tl.constexpr = tl.dtype(f"uint{x_nbits}")
    x_ultype: tl.constexpr = tl.dtype(f"uint{x_nbits * 2}")
    x = tl.load(X + tl.arange(0, BLOCK))
    key = (x.to(x_utype, bitcast=True).to(x_ultype) << 16) | tl.arange(0, BLOCK)
    acc = tl.topk(key, K, dim=0)
    acc = tl.maximum(acc, tl.sort(key, dim=0))
    lo, hi = acc.reshape([BLOCK // 2, 2]).split()
    tl.store(Y + tl.arange(0, BLOCK // 2), lo / hi)
"""


def test_a_dtype_spelt_by_an_f_string_and_sorting_keep_an_integer_key(tmp_path):
    # aiter's streaming_topk: keys are unsigned integers of the input's width (an f-string
    # dtype), merged with tl.maximum after tl.topk; read as open floats they "may be" bf16
    found = _uses(tmp_path, TOPK)
    ints = {"uint8", "uint16", "uint32", "uint64", "int32", "int64"}  # (uint8 | int32: int32)
    assert _kinds(found, "binary_fn.maximum", "streaming_topk") <= ints
    # x.split() is tl.split(x): halves of the key's dtype (aiter's e2e_moe accumulator)
    assert _kinds(found, "binary.truediv", "streaming_topk") <= ints


def test_a_dtype_bound_to_a_local_only_cast_to_is_no_evidence_for_inputs(tmp_path):
    # aiter's kv cache: `e4m3_dtype = tl.float8e4nv` then `scales.to(e4m3_dtype)` quantizes
    # block scales; it says nothing of what the fp32 scale pointer holds
    body = """
    @triton.jit
    def cache(kv_ptr, k_ptr, k_scale_ptr, BLOCK: tl.constexpr):
        k_scale = tl.load(k_scale_ptr)
        k = tl.load(k_ptr + tl.arange(0, BLOCK)) * (1 / k_scale)
        e4m3_dtype = tl.float8e4nv
        tl.store(kv_ptr + tl.arange(0, BLOCK), k.to(e4m3_dtype))
    """
    found = _uses(tmp_path, body)
    assert not {k for k in _kinds(found, "binary.truediv", "cache", 1) if "float8" in k}
    named = body.replace(
        "k.to(e4m3_dtype))", "k.to(e4m3_dtype))\n        tl.static_print(e4m3_dtype)"
    )
    (tmp_path / "again").mkdir()
    found = _uses(tmp_path / "again", named)  # read as something else too: evidence
    assert {k for k in _kinds(found, "binary.truediv", "cache", 1) if "float8" in k}


ENTROPY = """
@triton.jit
def update(acc_ptr, ent_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.load(acc_ptr + offs, mask=offs < n)
    ent = tl.load(ent_ptr + offs, mask=offs < n)
    tl.store(ent_ptr + offs, tl.fdiv(ent, acc), mask=offs < n)


@triton.jit
def scale_grad(g_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    g = tl.load(g_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, tl.fdiv(g, 2.0), mask=offs < n)


def forward_kernels(n):
    both = torch.empty((n * 2,), dtype=torch.float32)
    view = both.view(2, n)
    acc, ent = view[0, :], view[1, :]
    update[(1,)](acc, ent, n, BLOCK=128)
    return ent, acc


def backward_kernels(dent, n):
    out = torch.empty_like(dent)
    scale_grad[(1,)](dent, out, n, BLOCK=128)
    return out


class Entropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, n):
        ent, acc = forward_kernels(n)
        ctx.n = n
        return ent, acc

    @staticmethod
    def backward(ctx, dent, dacc):
        return backward_kernels(dent, ctx.n)
"""


def test_a_tensor_indexed_in_several_dimensions_and_a_backward_gradient_keep_dtypes(tmp_path):
    # verl's linear cross entropy: `accumulate = buf.view(2, n)[0, :]` of an fp32 buffer, and
    # `backward(ctx, dlogprobs, dentropy)` whose gradients autograd makes of forward's fp32
    # outputs' dtype; open, their fdiv "may be" a bf16 one
    found = _uses(tmp_path, ENTROPY)
    assert _kinds(found, "binary_fn.fdiv", "update") == {"float32"}
    assert _kinds(found, "binary_fn.fdiv", "update", 1) == {"float32"}
    assert _kinds(found, "binary_fn.fdiv", "scale_grad") == {"float32"}


def test_gather_keeps_its_sources_dtype(tmp_path):
    # FBGEMM's fp4 quantizer: offsets gathered from an int32 cumsum, then `offset % 4`; read
    # as untyped, the mod "may be" an fp8 one (the file names fp8)
    body = """
    @triton.jit
    def offsets(sizes_ptr, out_ptr, N: tl.constexpr):
        r = tl.arange(0, N)
        cumsum = tl.cumsum(tl.zeros((N,), dtype=tl.int32) + r, axis=0)
        offset = tl.gather(cumsum, r, 0) * 4
        tl.store(out_ptr + r, (offset % 4).to(tl.float8e4nv))
    """
    found = _uses(tmp_path, body)
    assert _kinds(found, "binary.mod", "offsets") == {"int32"}
