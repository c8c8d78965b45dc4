#!/usr/bin/env bash
# Issue 45, session 14: an H100 table of its own. Seed: the H200's entries copied under the
# H100's name (h100-seed.toml, made from kernels/data/splitk_tuned.toml), then the cases
# that were weakest on the H100 in session 13 (fp32-ieee nk_t, the 256x256 one-wave cases,
# a few others) re-tuned on this card, then the whole suite benched with the new table,
# cuBLAS in the same run. Last: the first-use search check (never run on a GPU before).
set -uo pipefail
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/../../.."
d=notes/gpu-logs/session14
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$OUT/card.txt"
KERNELS_SPLITK_TABLE=$d/h100-seed.toml timeout 540 python3 -m kernels.bench \
  --tune "$OUT/h100-table.toml" --sweep-out "$OUT/h100-sweep.json" --tune-seconds 250 \
  --tune-full 'fp32-ieee:nk_t' \
  --tune-matching-only 'fp32-ieee:*,*:*:256x256x*,fp32-tf32:kn:128x128x8192,*:nk_t:16x4096x4096' \
  --out "$OUT/h100.json" > "$OUT/h100-bench.log" 2>&1
echo "bench rc=$?"; grep -E "geomean|host|tuned|failed" "$OUT/h100-bench.log" | tail -14
sed 's/^capability = "9.0"/capability = "8.0"/' "$OUT/h100-table.toml" > /tmp/sm80.toml
KERNELS_SPLITK_TABLE=/tmp/sm80.toml KERNELS_SPLITK_CACHE=/tmp/splitk-cache timeout 50 python3 \
    notes/gpu-logs/session13/search_check.py > "$OUT/h100-search.txt" 2>&1
echo "search rc=$?"; tail -6 "$OUT/h100-search.txt"
