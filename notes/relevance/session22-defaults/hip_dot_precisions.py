"""Session 22: the census says HIPOptions.allowed_dot_input_precisions grew at 3.6.0 (('ieee',)
-> ('ieee', 'bf16x3', 'bf16x6')). Does a tl.dot that leaves the option out compile the same on
3.5.1 and 3.6.0 for hip:gfx942 and hip:gfx950? TTIR, ahead of time (no GPU), per input dtype,
for the default precision and 'ieee' (the one the old tuple allows), with the option left out;
and, for comparison, with the old tuple passed. Run it under each release and diff the lines
after the version. (The CUDA twin: ../session17-defaults/dot_precisions.py.)"""
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


def ttir(precision, options, dtype, arch):
    src = ASTSource(mm, {"a": f"*{dtype}", "b": f"*{dtype}", "c": "*fp32", "P": "constexpr"},
                    constexprs={"P": precision})
    k = triton.compile(src, target=GPUTarget("hip", arch, 64), options=options)
    return [ln.strip().split(" loc(")[0] for ln in k.asm["ttir"].splitlines() if "tt.dot" in ln]


old = ("ieee",)
for arch in ("gfx942", "gfx950"):
    for dtype in ("fp32", "fp16", "bf16"):
        for p in ("default", *old):
            left_out = ttir(p, {}, dtype, arch)
            old_passed = ttir(p, {"allowed_dot_input_precisions": old}, dtype, arch)
            print(triton.__version__, "|", arch, dtype, p, "left out:", left_out, "| old tuple:", old_passed)
