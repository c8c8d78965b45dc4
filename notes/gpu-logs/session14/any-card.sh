#!/usr/bin/env bash
# Whichever card comes: an H100 runs tune-h100.sh (its own table, weakest cases re-tuned);
# an H200 benches the suite with the committed table (its row was last measured before the
# traits keying), then the first-use search check.
set -uo pipefail
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/../../.."
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "card: $name"
case "$name" in
  *H100*) exec bash notes/gpu-logs/session14/tune-h100.sh ;;
esac
timeout 420 python3 -m kernels.bench --out "$OUT/h200.json" > "$OUT/h200-bench.log" 2>&1
echo "bench rc=$?"; grep -E "geomean|host|failed" "$OUT/h200-bench.log" | tail -12
sed 's/^capability = "9.0"/capability = "8.0"/' kernels/data/splitk_tuned.toml > /tmp/sm80.toml
KERNELS_SPLITK_TABLE=/tmp/sm80.toml KERNELS_SPLITK_CACHE=/tmp/splitk-cache timeout 90 python3 \
    notes/gpu-logs/session13/search_check.py > "$OUT/h200-search.txt" 2>&1
echo "search rc=$?"; tail -6 "$OUT/h200-search.txt"
