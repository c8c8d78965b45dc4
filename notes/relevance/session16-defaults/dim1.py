import os
os.environ["TRITON_INTERPRET"] = "1"
import numpy as np, torch, triton, triton.language as tl
@triton.jit
def sm2(x_ptr, o_ptr, M: tl.constexpr, N: tl.constexpr):
    r = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    tl.store(o_ptr + r, tl.softmax(tl.load(x_ptr + r), 1))
x = torch.randn(16, 16); o = torch.full((16, 16), float("nan"))
try:
    sm2[(1,)](x, o, M=16, N=16)
    ref = torch.softmax(x.double(), 1).numpy()
    print("triton", triton.__version__, "softmax 2-D dim=1 rel err", float(np.linalg.norm(o.double().numpy() - ref) / np.linalg.norm(ref)))
except Exception as e:
    print("triton", triton.__version__, "softmax 2-D dim=1 raised", type(e).__name__, str(e)[:120])
