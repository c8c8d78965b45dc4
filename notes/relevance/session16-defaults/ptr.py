import re, triton, triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

@triton.jit
def cast_ptr(table_ptr, out_ptr):
    p = tl.load(table_ptr).to(tl.pointer_type(out_ptr.dtype.element_ty))
    tl.store(out_ptr, tl.load(p))

src = ASTSource(cast_ptr, signature={"table_ptr": "*i64", "out_ptr": "*fp16"}, constexprs={})
k = triton.compile(src, target=GPUTarget("cuda", 90, 32))
ttir = k.asm["ttir"]
print("triton", triton.__version__, [l.strip().split(" loc(")[0] for l in ttir.splitlines() if "int_to_ptr" in l or "tt.load" in l])
