"""Evidence for docs/findings.md: the PTX each release emits for an fp8 cast on cuda:90.

Run with each release's Python (no GPU needed): `python notes/evidence/fp8_satfinite_ptx.py`.
Output for all ten releases: fp8_satfinite_ptx.txt beside this file.
"""

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import triton, triton.language as tl
from matrix.backends.aot import compile_for_target

@triton.jit
def cast_e5(x_ptr, y_ptr):
    o = tl.arange(0, 4); x = tl.load(x_ptr + o)
    tl.store(y_ptr + o, x.to(tl.float8e5))

@triton.jit
def cast_e4(x_ptr, y_ptr):
    o = tl.arange(0, 4); x = tl.load(x_ptr + o)
    tl.store(y_ptr + o, x.to(tl.float8e4nv))

for k, src, dst in [(cast_e5, "*fp32", "*fp8e5"), (cast_e5, "*fp16", "*fp8e5"), (cast_e4, "*fp32", "*fp8e4nv"), (cast_e4, "*bf16", "*fp8e4nv")]:
    art = compile_for_target(k, {"x_ptr": src, "y_ptr": dst}, {}, "cuda:90")
    cvts = sorted(set(re.findall(r"cvt[.\w]*", art.ir["ptx"])))
    ttir_ops = sorted(set(re.findall(r"tt\.fp_to_fp[^\n]*", art.ir["ttir"])))
    print(triton.__version__, src, "->", dst, cvts, ttir_ops)
