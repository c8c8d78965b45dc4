#!/bin/bash
# Kill earlier background runs, snapshot the tree (calls re-sync the checkout in place, which
# broke the imports of runs reading it), then start every release's GPU probe row from the copy.
pkill -9 -f "python3 -m matrix" ; sleep 1
rm -rf /root/persist; mkdir -p /root/persist
cp -a . /root/persist/tree
cd /root/persist/tree
export PYTHONUNBUFFERED=1 MATRIX_TREE_ID=${MATRIX_TREE_ID:?}
for r in "$@"; do
  pack=.gpu/pack/triton-$r-slim-sm90.tar.xz
  args=(--release "$r" --out-dir /root/persist/p-$r --machine h200 --no-bench --timeout ${PROBE_TIMEOUT:-400})
  if [ "$r" != 3.6.0 ]; then [ -f "$pack" ] || { echo "no pack for $r"; continue; }; args+=(--pack "$pack"); fi
  setsid bash -c "python3 -m matrix.measure.gpu_run ${args[*]} > /root/persist/probes-$r.log 2>&1; echo \$? > /root/persist/done-$r" < /dev/null > /dev/null 2>&1 &
done
# Wait here (the call keeps the machine warm) until all are done or WAIT_S passes.
t0=$(date +%s)
while [ $(ls /root/persist/done-* 2>/dev/null | wc -l) -lt $# ] && [ $(( $(date +%s) - t0 )) -lt ${WAIT_S:-500} ]; do sleep 10; done
echo "waited $(( $(date +%s) - t0 )) s; done: $(ls /root/persist/ | grep -c done-) of $#"
grep -h "fp gpu\|done in" /root/persist/probes-*.log
cd /root/persist && tar czf $OUT/probes.tar.gz p-* probes-*.log done-* 2>/dev/null; ls -la $OUT
