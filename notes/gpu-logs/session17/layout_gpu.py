"""Session 17: the fp.layout descriptor cases launched on the GPU, each in its own process.

fp.layout asks the interpreter and an ahead-of-time compile; neither runs a descriptor on a
GPU. 3.9.0's compile refuses a constexpr descriptor stride that is not a multiple of 16 bytes
(`descriptor.stride_constexpr_not_16B`, accepted by 3.8.0's compile): does 3.8.0's launch of
that kernel compute the load right on an H100, or fail? Each case runs in a child (a bad TMA
descriptor can poison the CUDA context), poisoned output checked against the rule
(fp_layout.expected), as the interpreter case is.

usage: PYTHONPATH=<slim pack site>:. python3 layout_gpu.py OUT.jsonl   (parent)
       python3 layout_gpu.py --case NAME                               (child)
"""

import json
import subprocess
import sys


def child(name: str) -> dict:
    import torch
    import triton

    from matrix.probes.fp import battery, fp_layout
    from matrix.probes.support.base import Context

    if hasattr(triton, "set_allocator"):  # in-kernel descriptors take a global scratch
        triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8,
                                                                     device="cuda"))
    cpu_tensors, cpu_expected = fp_layout._tensors, fp_layout.expected

    def gpu_tensors(case):
        # the case's view of its storage, on the GPU: strides and base offset kept (a plain
        # .cuda() copies a strided view contiguous; the 13:35 run of 3.8.0 did, so its rows
        # for cases whose view is not contiguous are not of those cases)
        src, dst = cpu_tensors(case)
        whole = torch.as_strided(src, (src.untyped_storage().nbytes() // src.element_size(),),
                                 (1,), 0)
        return whole.cuda().as_strided(src.shape, src.stride(), src.storage_offset()), dst.cuda()

    fp_layout._tensors = gpu_tensors
    fp_layout.expected = lambda case, src: cpu_expected(case, src.cpu())
    (case,) = [c for c in fp_layout.parse_cases(battery.load().raw["layout"]["case"])
               if c.name == name]
    status, detail, values = fp_layout.run_case(Context("gpu", "cuda:90"), case)
    return {"case": name, "triton": triton.__version__, "status": status, "detail": detail,
            "values": values, "device": torch.cuda.get_device_name()}


def main(out: str) -> None:
    from matrix.probes.fp import battery, fp_layout

    names = [c.name for c in fp_layout.parse_cases(battery.load().raw["layout"]["case"])
             if c.kind == "descriptor"]
    with open(out, "w") as f:
        for name in names:
            p = subprocess.run([sys.executable, __file__, "--case", name], capture_output=True,
                               text=True, timeout=300)
            try:
                row = json.loads(p.stdout.strip().splitlines()[-1])
            except (IndexError, json.JSONDecodeError):
                row = {"case": name, "status": "crashed", "rc": p.returncode,
                       "detail": p.stderr.strip().splitlines()[-1:] }
            print(json.dumps(row), flush=True)
            f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    if sys.argv[1] == "--case":
        print(json.dumps(child(sys.argv[2])))
    else:
        main(sys.argv[1])
