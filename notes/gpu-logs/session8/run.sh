#!/bin/bash
# GPU rows and benches for the releases named, one after another (session 8 re-run).
export PYTHONUNBUFFERED=1 MATRIX_TREE_ID=${MATRIX_TREE_ID:-cf9b93f}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader > $OUT/gpu-$1.txt 2>&1
for r in "$@"; do
  pack=.gpu/pack/triton-$r-slim-sm90.tar.xz
  args=(--release "$r" --out-dir "$OUT" --machine h200)
  [ -f "$pack" ] && args+=(--pack "$pack")
  t0=$(date +%s)
  timeout ${PER_RELEASE_S:-290} python3 -m matrix.measure.gpu_run "${args[@]}" > "$OUT/triton-$r-h200.log" 2>&1
  echo "$r rc=$? $(( $(date +%s) - t0 )) s" | tee -a $OUT/gpu-$1.txt
done
ls -la $OUT $OUT/*/ 2>&1 | tail -12
