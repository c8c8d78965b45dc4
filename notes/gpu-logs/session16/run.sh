#!/bin/bash
# One call per release (session 12's run.sh, with the machine label read off the card): keep the
# carried pack of release $1 (34-53 MB each against the 64 MiB a call carries) and start that
# release's GPU probe row at once from a private copy of the tree (copied on the first call), so
# the rows run while the next packs travel. Every release runs from its own pack, the lease's
# installed Triton is never used. With WAIT=1 the call then waits until every started release is
# done or WAIT_S passes, and brings the raw files and logs back as one tarball.
set -u
r=$1
export PYTHONUNBUFFERED=1 MATRIX_TREE_ID=${MATRIX_TREE_ID:?}
mkdir -p /root/persist/pack
if [ ! -d /root/persist/tree ]; then
  mkdir -p /root/persist/tree && tar --exclude=./.gpu --exclude=./.git -cf - . | tar -xf - -C /root/persist/tree
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv,noheader | tee /root/persist/card.txt
fi
# h100 / h200: the label in the raw file names comes from the card that measured.
machine=$(grep -o 'H[0-9]00' /root/persist/card.txt | head -1 | tr 'H' 'h')
args=(--release "$r" --out-dir /root/persist/p-$r --machine "${machine:-gpu}" --no-bench --timeout ${PROBE_TIMEOUT:-400})
if [ -f .gpu/pack/triton-$r-slim-sm90.tar.xz ]; then
  cp .gpu/pack/triton-$r-slim-sm90.tar.xz /root/persist/pack/ && args+=(--pack /root/persist/pack/triton-$r-slim-sm90.tar.xz)
fi
if [ ! -e /root/persist/done-$r ] && [ ! -e /root/persist/probes-$r.log ]; then
  (cd /root/persist/tree && setsid bash -c "python3 -m matrix.measure.gpu_run ${args[*]} > /root/persist/probes-$r.log 2>&1; echo \$? > /root/persist/done-$r" < /dev/null > /dev/null 2>&1 &)
fi
echo "started $r on $machine; $(ls /root/persist | grep -c '^probes-') started, $(ls /root/persist | grep -c '^done-') done"
if [ "${WAIT:-0}" = 1 ]; then
  n=$(ls /root/persist | grep -c '^probes-')
  t0=$(date +%s)
  while [ $(ls /root/persist/done-* 2>/dev/null | wc -l) -lt $n ] && [ $(( $(date +%s) - t0 )) -lt ${WAIT_S:-540} ]; do sleep 5; done
  echo "waited $(( $(date +%s) - t0 )) s; done: $(ls /root/persist/ | grep -c done-) of $n"; uptime
  grep -h "fp gpu\|done in" /root/persist/probes-*.log
  cat /root/persist/done-*
  cd /root/persist && tar czf $OUT/probes.tar.gz card.txt p-* probes-*.log done-* 2>/dev/null; ls -la $OUT
fi
