#!/usr/bin/env bash
# Session 13's one GPU call (device time was short after failed starts): the GPU legs on
# Triton's own test_vecadd.py (3.5.1 slim pack vs the machine's 3.6.0, at most 200 s), then the
# split-K suite with the traits-keyed table (issue 45) on whichever card came.
set -u
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/../../.."
card=$(python3 -c 'import torch; n = torch.cuda.get_device_name(0); print("h100" if "H100" in n else "h200" if "H200" in n else "gpu")')
python3 - <<'PY' | tee "$OUT/$card-props.txt"
import torch, triton
p = torch.cuda.get_device_properties(0)
print(torch.cuda.get_device_name(0), f"{p.major}.{p.minor}", p.multi_processor_count,
      getattr(p, "L2_cache_size", None), getattr(p, "shared_memory_per_block_optin", None),
      "torch", torch.__version__, "triton", triton.__version__)
from kernels import devices, gpu_plan
d = devices.current(0)
print("traits", d, "->", gpu_plan.table_device(d, gpu_plan.load_devices()))
PY
sed 's/^DEADLINE=450 /DEADLINE=200 /' notes/gpu-legs/run.sh > /tmp/legs.sh
bash /tmp/legs.sh > /dev/null 2>&1
tail -25 "$OUT/run.log"
python3 -m kernels.bench --out "$OUT/$card.json" > "$OUT/$card-bench.log" 2>&1
echo "bench rc=$?"; grep -E "geomean|host|table|classic" "$OUT/$card-bench.log" | tail -15
