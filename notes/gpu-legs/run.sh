#!/usr/bin/env bash
# The GPU legs end to end, ONCE, on the lent GPU (H100/H200, Triton 3.6.0 + torch 2.11
# installed, no network), from the checkout root:
#
#   bash notes/gpu-legs/run.sh          # results under $OUT (or /tmp/gpulegs-out)
#
# Needs (carried with the checkout; both git-ignored):
#   .gpu/pack/triton-3.5.1-slim-sm90.tar.xz   python3 -m matrix.backends.gpu_pack 3.5.1
#   .gpulegs/                                 the two real suites (.gpulegs/SOURCES.txt)
#
# Two pairs, baseline 3.5.1 (the slim pack, first on PYTHONPATH) and candidate 3.6.0 (the
# machine's): Triton's own test_vecadd.py, then, if time is left, attorch's softmax tests on
# two of its shapes. Every step is bounded: the whole script ends within about 7.5 minutes
# (a gate cut by its bound leaves gate.md/gate.json marked incomplete, saved after each step).
# Exit 0 whatever the gates said: the verdicts are in $OUT/*/gate.md, the exit codes in
# $OUT/run.log. Seven files come back (the device returns at most 8): run.log and, per suite,
# gate.md, gate.json and console.log.
set -u
OUT=${OUT:-/tmp/gpulegs-out}
mkdir -p "$OUT"
START=$SECONDS
PACK=.gpu/pack/triton-3.5.1-slim-sm90.tar.xz
DEADLINE=450          # seconds from the start by which every gate must have ended
PY=${PYTHON:-python3}  # the lent machine: python3 is the one with torch
export MATRIX_TREE_ID=${MATRIX_TREE_ID:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}

say() { echo "[run.sh +$((SECONDS - START))s] $*" | tee -a "$OUT/run.log"; }

{
  date -u
  nvidia-smi -L 2>&1 || true
  $PY -c 'import sys, torch, triton; print(sys.version.split()[0], "torch", torch.__version__,
"triton", triton.__version__, "cuda", torch.cuda.is_available())' 2>&1
  $PY -m pytest --version 2>&1
  ls -la "$PACK" 2>&1
  echo "tree $MATRIX_TREE_ID"
} 2>&1 | tee -a "$OUT/run.log"
[ -f "$PACK" ] || { say "missing $PACK: build it with python3 -m matrix.backends.gpu_pack 3.5.1"; exit 0; }

# One gate, bounded by what is left before DEADLINE (and by $2 at most).
gate() {
  local name=$1 cap=$2; shift 2
  local left=$((DEADLINE - (SECONDS - START)))
  [ "$left" -gt "$cap" ] && left=$cap
  if [ "$left" -lt 60 ]; then
    say "$name: skipped, only ${left}s left"
    return
  fi
  mkdir -p "$OUT/$name"
  say "$name: gate --device cuda, at most ${left}s"
  timeout -k 10 "$left" $PY -m matrix.gate --device cuda \
      --baseline 3.5.1 --baseline-pack "$PACK" --candidate 3.6.0 \
      --out "$OUT/$name" "$@" > "$OUT/$name/console.log" 2>&1
  local rc=$?
  say "$name: exit $rc (0 safe, 1 unsafe, 2 undecidable, 124 cut by the time bound)"
  tail -n 40 "$OUT/$name/console.log" | tee -a "$OUT/run.log"
}

# Per side: the suite at most --suite-timeout s, the timings at most --timing-budget s.
gate vecadd 300 --tests .gpulegs/vecadd --test-timeout 60 --suite-timeout 90 \
    --timing-budget 20 --warmup 10 --loops 50 --rounds 5
gate attorch 240 --tests .gpulegs/attorch "--tests-args=--subset -k 'shape0 or shape11'" \
    --test-timeout 60 --suite-timeout 80 --timing-budget 20 --warmup 5 --loops 20 --rounds 5
say "done; results in $OUT"
exit 0
