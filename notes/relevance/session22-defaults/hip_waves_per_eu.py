"""Session 22: the census says HIPOptions.waves_per_eu's default went 1 -> 0 at 3.6.0. Does a
kernel that leaves it out compile differently? The LLVM IR's function attributes for
hip:gfx942, ahead of time (no GPU), with the option left out; run under each release."""
import re

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource


@triton.jit
def add(a, c):
    r = tl.arange(0, 64)
    tl.store(c + r, tl.load(a + r) + 1.0)


src = ASTSource(add, {"a": "*fp32", "c": "*fp32"})
k = triton.compile(src, target=GPUTarget("hip", "gfx942", 64), options={})
attrs = sorted(set(re.findall(r'"amdgpu-waves-per-eu"="[^"]*"', k.asm["llir"])))
print(triton.__version__, "waves_per_eu option:", k.metadata.waves_per_eu, "llir:", attrs or "no amdgpu-waves-per-eu attribute")
