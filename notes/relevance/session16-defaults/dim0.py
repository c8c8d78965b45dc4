import os
os.environ["TRITON_INTERPRET"] = "1"
import numpy as np, torch, triton, triton.language as tl
# Session 17: softmax with dim=0 passed explicitly (lmdeploy v4_compressor.py `tl.softmax(x, 0)`)
@triton.jit
def sm2(x_ptr, o_ptr, M: tl.constexpr, N: tl.constexpr):
    r = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    tl.store(o_ptr + r, tl.softmax(tl.load(x_ptr + r), 0))
@triton.jit
def sm2kw(x_ptr, o_ptr, M: tl.constexpr, N: tl.constexpr):
    r = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    tl.store(o_ptr + r, tl.softmax(tl.load(x_ptr + r), dim=0))
for k, name in ((sm2, "positional 0"), (sm2kw, "dim=0")):
    x = torch.randn(16, 16); o = torch.full((16, 16), float("nan"))
    try:
        k[(1,)](x, o, M=16, N=16)
        ref = torch.softmax(x.double(), 0).numpy()
        print("triton", triton.__version__, f"softmax 2-D {name} rel err", float(np.linalg.norm(o.double().numpy() - ref) / np.linalg.norm(ref)))
    except Exception as e:
        print("triton", triton.__version__, f"softmax 2-D {name} raised", type(e).__name__, str(e)[:120])
