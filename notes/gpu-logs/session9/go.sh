#!/bin/bash
# Every release's GPU probe row at once from a private copy of the tree (a later call re-syncs
# the checkout in place), packs from /root/persist/pack (3.6.0: the lease's installed release);
# wait here until all are done or WAIT_S passes, then bring the raw files and logs back.
pkill -9 -f "python3 -m matrix" ; sleep 1
rm -rf /root/persist/tree /root/persist/p-* /root/persist/probes-* /root/persist/done-*
mkdir -p /root/persist/tree && tar --exclude=./.gpu --exclude=./.git -cf - . | tar -xf - -C /root/persist/tree
cd /root/persist/tree
export PYTHONUNBUFFERED=1 MATRIX_TREE_ID=${MATRIX_TREE_ID:?}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader
for r in "$@"; do
  args=(--release "$r" --out-dir /root/persist/p-$r --machine h200 --no-bench --timeout ${PROBE_TIMEOUT:-400})
  if [ "$r" != 3.6.0 ]; then
    pack=/root/persist/pack/triton-$r-slim-sm90.tar.xz
    [ -f "$pack" ] || { echo "no pack for $r"; continue; }; args+=(--pack "$pack")
  fi
  setsid bash -c "python3 -m matrix.measure.gpu_run ${args[*]} > /root/persist/probes-$r.log 2>&1; echo \$? > /root/persist/done-$r" < /dev/null > /dev/null 2>&1 &
done
t0=$(date +%s)
while [ $(ls /root/persist/done-* 2>/dev/null | wc -l) -lt $# ] && [ $(( $(date +%s) - t0 )) -lt ${WAIT_S:-500} ]; do sleep 5; done
echo "waited $(( $(date +%s) - t0 )) s; done: $(ls /root/persist/ | grep -c done-) of $#"; uptime
grep -h "fp gpu\|done in" /root/persist/probes-*.log
cd /root/persist && tar czf $OUT/probes.tar.gz p-* probes-*.log done-* 2>/dev/null; ls -la $OUT
