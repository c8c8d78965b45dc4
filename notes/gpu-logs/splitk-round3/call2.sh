#!/bin/bash
# Round 3, call 2 (copied with kernels/ and compat/ into .gpu/splitk, run there on the H200):
# re-tune tf32 kn and fp32-ieee nk_t with the product forms, then the full bench on the new
# table, the ordered-mode repeat check and the atomic-mode race test. Each step has its own
# time limit so the logs come back.
export PYTHONUNBUFFERED=1 TRITON_INTERPRET=0 TREE=${TREE:-unknown}
cd "$(dirname "$0")"
{ nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv
  python3 -c "import torch, triton; print(torch.__version__, triton.__version__)"; } 2>&1 | tee $OUT/tune.log
cp kernels/data/splitk_tuned.toml $OUT/splitk_tuned.toml
timeout 260 python3 -m kernels.bench --out /tmp/unused.json --tune $OUT/splitk_tuned.toml \
  --tune-matching-only fp32-tf32:kn,fp32-ieee:nk_t --tune-full "" --tune-seconds ${TUNE_S:-200} \
  --sweep-out /tmp/sweep.json --tune-only 2>&1 | tee -a $OUT/tune.log
gzip -c /tmp/sweep.json > $OUT/sweep.json.gz
export KERNELS_SPLITK_TABLE=$OUT/splitk_tuned.toml
timeout ${BENCH_S:-230} python3 -m kernels.bench --out $OUT/h200.json 2>&1 | tee $OUT/bench.log
{ timeout 70 python3 -m kernels.bench.repeat --out $OUT/repeat.json
  echo "repeat rc=$?"
  timeout 50 python3 -m pytest -q -p no:cacheprovider tests/test_fused_race_gpu.py
  echo "race rc=$?"; } 2>&1 | tee $OUT/checks.log | tail -5
# The per-release bench for the machine's own release (3.6.0), on the new table.
timeout 90 python3 -m matrix.measure.gpu_bench --release 3.6.0 --out $OUT/triton-3.6.0-gpu-h200.json \
  --machine h200 --env "{\"torch_pairing\": \"machine's torch 2.11.0 with its own triton 3.6.0\", \"triton_source\": \"the machine's preinstalled triton 3.6.0\", \"tree\": \"$TREE\"}" 2>&1 | tail -3
