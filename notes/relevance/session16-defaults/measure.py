"""Does leaving softmax's keep_dims and pointer_type's address_space to their defaults behave
the same on Triton 3.8.0 and 3.9.0? softmax: interpreter values of 1-D and 2-D (dim left out)
inputs against a float64 reference; pointer_type: the TTIR of a pointer cast compiled for
cuda:90 ahead of time (no GPU needed)."""
import os, re, sys
os.environ["TRITON_INTERPRET"] = "1"
import numpy as np, torch, triton, triton.language as tl

@triton.jit
def sm1(x_ptr, o_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    tl.store(o_ptr + tl.arange(0, N), tl.softmax(x))

@triton.jit
def sm2(x_ptr, o_ptr, M: tl.constexpr, N: tl.constexpr):
    r = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + r)
    tl.store(o_ptr + r, tl.softmax(x))

def rel(a, b):
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))

g = torch.Generator().manual_seed(int.from_bytes(os.urandom(4), "little"))
x = torch.randn(16, generator=g)
o = torch.full((16,), float("nan"))
sm1[(1,)](x, o, N=16)
ref = torch.softmax(x.double(), 0).numpy()
print("triton", triton.__version__, "softmax 1-D rel err", rel(o.double().numpy(), ref))
x2 = torch.randn(8, 16, generator=g)
o2 = torch.full((8, 16), float("nan"))
sm2[(1,)](x2, o2, M=8, N=16)
ref2 = torch.softmax(x2.double(), 0).numpy()
print("triton", triton.__version__, "softmax 2-D dim left out (0) rel err", rel(o2.double().numpy(), ref2))
