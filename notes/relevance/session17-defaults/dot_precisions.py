"""Session 17: CUDAOptions.allowed_dot_input_precisions grew at 3.6.0 (bf16x3, bf16x6 added).
Does a tl.dot compile the same under the old and the new default? TTIR for cuda:90, ahead of
time (no GPU), with the option left out (the new default) and with the old tuple passed, for
each precision the old default allowed and the default precision."""
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource


@triton.jit
def mm(a, b, c, P: tl.constexpr):
    r = tl.arange(0, 16)
    x = tl.load(a + r[:, None] * 16 + r[None, :])
    y = tl.load(b + r[:, None] * 16 + r[None, :])
    if P == "default":
        z = tl.dot(x, y)
    else:
        z = tl.dot(x, y, input_precision=P)
    tl.store(c + r[:, None] * 16 + r[None, :], z)


def ttir(precision, options):
    src = ASTSource(mm, {"a": "*fp32", "b": "*fp32", "c": "*fp32", "P": "constexpr"},
                    constexprs={"P": precision})
    k = triton.compile(src, target=GPUTarget("cuda", 90, 32), options=options)
    return [ln.strip() for ln in k.asm["ttir"].splitlines() if "tt.dot" in ln]


old = ("tf32", "tf32x3", "ieee")
for p in ("default", *old):
    new_default, old_passed = ttir(p, {}), ttir(p, {"allowed_dot_input_precisions": old})
    print(triton.__version__, p, "same" if new_default == old_passed else "DIFFERENT", new_default)
