"""Compile records of the fused split-K for one config on the installed release, without a GPU.

``python -m matrix.backends.compile_records --out FILE.json`` compiles ``splitk_fused_kernel`` for
``cuda:90`` at the configs below (the fp32-ieee table config of the 256x256xK cases, with each
loader, and fp16 for contrast) and writes, per config: registers, spill bytes, shared memory,
PTX instruction counts by opcode family, the TTGIR ops that move data between layouts, and the
TTGIR itself, so two releases can be diffed (why one release's kernel is slower than another's).
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import sys

CONFIGS = [
    # (name, dtype, loader, BM, BN, BK, warps, stages)
    ("fp32-ieee-desc-128x64x64-w8s3", "fp32", "descriptor", 128, 64, 64, 8, 3),
    ("fp32-ieee-ptr-128x64x64-w8s3", "fp32", "pointer", 128, 64, 64, 8, 3),
    ("fp32-ieee-desc-64x64x32-w4s3", "fp32", "descriptor", 64, 64, 32, 4, 3),
    ("fp32-ieee-ptr-64x64x32-w4s3", "fp32", "pointer", 64, 64, 32, 4, 3),
    ("fp16-desc-128x64x64-w8s3", "fp16", "descriptor", 128, 64, 64, 8, 3),
]
# Header directives that bound registers or threads (a register cap would explain spills).
DIRECTIVE = re.compile(
    r"^\s*(\.(?:maxnreg|reqntid|maxntid|minnctapersm|pragma|target)\b[^\n]*)", re.M
)
TTGIR_OPS = (
    "ttg.convert_layout",
    "triton_gpu.convert_layout",
    "ttg.local_alloc",
    "triton_gpu.local_alloc",
    "ttg.local_load",
    "triton_gpu.local_load",
    "ttng.async_tma_copy_global_to_local",
    "ttg.async_copy_global_to_local",
    "triton_gpu.async_copy_global_to_local",
    "tt.dot",
    "ttng.warp_group_dot",
    "tt.descriptor_load",
    "tt.experimental_descriptor_load",
    "ttng.tensormap_create",
    "ttg.memdesc_trans",
    "ttg.memdesc_subview",
    "ttg.memdesc_index",
    "ttng.wait_barrier",
    "ttg.async_wait",
    "tt.trans",
    "tt.load",
)


def ptx_families(ptx: str) -> dict[str, int]:
    counts: collections.Counter[str] = collections.Counter()
    for line in ptx.splitlines():
        m = re.match(r"\s*(?:@%p\d+\s+)?([a-z][a-z0-9_]*(?:\.[a-z0-9_:]+)*)", line)
        if not m or line.strip().startswith(("//", ".", "$", "{", "}")):
            continue
        op = m.group(1)
        parts = op.split(".")
        fam = parts[0]
        if fam in ("ld", "st", "cp", "mma", "wgmma", "fma", "bar", "shfl", "ldmatrix", "stmatrix"):
            fam = ".".join(parts[:2])
        counts[fam] += 1
    return dict(counts.most_common(40))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    import triton

    from kernels.fused import splitk_fused_kernel
    from matrix.backends.aot import compile_for_target
    from matrix.backends.kernels import ptx_resources

    doc = {"triton": triton.__version__, "configs": {}}
    for name, dtype, loader, bm, bn, bk, w, s in CONFIGS:
        el = "fp32" if dtype == "fp32" else "fp16"
        sig = {"a_ptr": f"*{el}", "b_ptr": f"*{el}", "c_ptr": f"*{el}", "ws_ptr": "*fp32",
               "lock_ptr": "*i32", "M": "i32", "N": "i32", "K": "i32", "chunk_k": "i32",
               "split_k": "i32", "stride_am": "i32", "stride_ak": "i32", "stride_bk": "i32",
               "stride_bn": "i32", "stride_cm": "i32", "stride_cn": "i32"}  # fmt: skip
        cx = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, PRECISION="ieee", HAS_INPUT_PRECISION=True,
                  UPCAST=False, USE_DESC=loader == "descriptor", B_KMAJOR=False, EVEN_M=True,
                  EVEN_N=True, EVEN_K=True, SINGLE=False, ORDERED=False, RELAXED=True,
                  FENCE=True)  # fmt: skip
        if dtype != "fp32":
            cx["PRECISION"] = "tf32"
        rec: dict = {}
        try:
            art = compile_for_target(
                splitk_fused_kernel, sig, cx, "cuda:90", options={"num_warps": w, "num_stages": s}
            )
        except Exception as e:  # a release refusing the config is a record, not a crash
            rec["error"] = f"{type(e).__name__}: {str(e)[:500]}"
            doc["configs"][name] = rec
            continue
        ttgir, ptx = art.ir.get("ttgir", ""), art.ir.get("ptx", "")
        regs, spills, tool = ptx_resources(ptx)
        rec.update(
            registers=regs, spill_bytes=spills, ptxas=tool, shared=art.metadata.get("shared"),
            ttgir_ops={op: ttgir.count(op + " ") + ttgir.count(op + "(") for op in TTGIR_OPS
                       if op in ttgir},
            ptx_families=ptx_families(ptx), ptx_lines=ptx.count("\n"), ttgir=ttgir,
            ptx_directives=sorted(set(DIRECTIVE.findall(ptx)))[:20],
        )  # fmt: skip
        doc["configs"][name] = rec
        print(name, {k: rec[k] for k in ("registers", "spill_bytes", "shared")}, file=sys.stderr)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
