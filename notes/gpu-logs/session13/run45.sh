#!/usr/bin/env bash
# Issue 45 on a lent GPU, one call per card: the device's traits, the split-K suite with the
# traits-keyed table (kernels.bench), the same suite with the old lookup's outcome on a card
# the table does not name (no [[device]] rows, search off: every case classic) side by side,
# and the first-use search on a table whose only measured device is of another architecture.
set -uo pipefail
export PYTHONUNBUFFERED=1
card=${1:?card name: h100 or h200}
cd "$(dirname "$0")/../../.."
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
python3 -m kernels.bench --out "$OUT/$card.json" > "$OUT/$card-bench.log" 2>&1
echo "bench rc=$?"; grep -E "geomean|host" "$OUT/$card-bench.log" | tail -12
# The lookup before this change, on a card the table does not name: no entries apply.
sed '/^\[\[device\]\]/,/^$/d' kernels/data/splitk_tuned.toml > /tmp/nodevice.toml
KERNELS_SPLITK_TABLE=/tmp/nodevice.toml KERNELS_SPLITK_SEARCH=0 python3 -m kernels.bench \
    --impls cublas,splitk --out "$OUT/$card-untuned.json" > "$OUT/$card-untuned.log" 2>&1
echo "untuned rc=$?"
# First-use search: the table's only device row claims sm80, so this card's architecture is
# unmeasured; the first call of a shape times up to 6 of the table's configurations.
sed 's/^capability = "9.0"/capability = "8.0"/' kernels/data/splitk_tuned.toml > /tmp/sm80.toml
KERNELS_SPLITK_TABLE=/tmp/sm80.toml KERNELS_SPLITK_CACHE=/tmp/splitk-cache python3 \
    notes/gpu-logs/session13/search_check.py > "$OUT/$card-search.txt" 2>&1
echo "search rc=$?"; tail -15 "$OUT/$card-search.txt"
