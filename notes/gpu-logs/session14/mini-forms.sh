#!/usr/bin/env bash
# The last few minutes of device time: the fp32-ieee nk_t cases alone, re-tuned with the
# nmajor form for 110 s from the seed table (--tune-only), so the sweep file says per case
# whether nmajor beats the seed's form; cuBLAS is timed in the same sweep.
set -uo pipefail
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/../../.."
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$OUT/card.txt"
KERNELS_SPLITK_TABLE=notes/gpu-logs/session14/h100-seed.toml timeout 250 python3 -m kernels.bench \
  --tune "$OUT/table.toml" --sweep-out "$OUT/forms-sweep.json" --tune-seconds 110 --tune-only \
  --tune-full '' --tune-forms nmajor --tune-matching-only 'fp32-ieee:nk_t' \
  --out "$OUT/unused.json" > "$OUT/forms.log" 2>&1
echo "rc=$?"; tail -5 "$OUT/forms.log"
