#!/bin/bash
# Start the GPU probe rows of the releases named in the background, each from its own copy
# of the tree (a later call re-syncs the checkout in place, which broke imports of runs that
# read it); with WAIT_S, wait here until ALL (the list in ALL_RELEASES) are done, then pack.
mkdir -p /root/persist
export PYTHONUNBUFFERED=1 MATRIX_TREE_ID=${MATRIX_TREE_ID:?}
here=$PWD
for r in "$@"; do
  mkdir -p /root/persist/tree-$r && tar --exclude=./.gpu --exclude=./.git -cf - . | tar -xf - -C /root/persist/tree-$r
  args=(--release "$r" --out-dir /root/persist/p-$r --machine h200 --no-bench --timeout ${PROBE_TIMEOUT:-400})
  if [ "$r" != 3.6.0 ]; then args+=(--pack "$here/.gpu/pack/triton-$r-slim-sm90.tar.xz"); fi
  (cd /root/persist/tree-$r && setsid bash -c "python3 -m matrix.measure.gpu_run ${args[*]} > /root/persist/probes-$r.log 2>&1; echo \$? > /root/persist/done-$r" < /dev/null > /dev/null 2>&1 &)
done
if [ -n "$WAIT_S" ]; then
  t0=$(date +%s); n=$(echo $ALL_RELEASES | wc -w)
  while [ $(ls /root/persist/done-* 2>/dev/null | wc -l) -lt $n ] && [ $(( $(date +%s) - t0 )) -lt $WAIT_S ]; do sleep 5; done
  echo "waited $(( $(date +%s) - t0 )) s; done: $(ls /root/persist/ | grep -c done-) of $n"
  grep -h "fp gpu\|done in" /root/persist/probes-*.log
  cd /root/persist && tar czf $OUT/probes.tar.gz p-* probes-*.log done-* 2>/dev/null; ls -la $OUT
else
  ls /root/persist; uptime
fi
