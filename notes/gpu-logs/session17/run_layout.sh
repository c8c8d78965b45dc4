#!/bin/bash
# One call per release: unpack its slim pack (carried in .gpu/pack) and launch every fp.layout
# descriptor case on the GPU (layout_gpu.py), results under $OUT.
set -u
r=$1
d=$(mktemp -d)
tar -xJf .gpu/pack/triton-$r-slim-sm90.tar.xz -C $d
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
PYTHONPATH=$d/site:. timeout 500 python3 notes/gpu-logs/session17/layout_gpu.py $OUT/layout-$r.jsonl
