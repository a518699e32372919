#!/bin/bash
# make-runs.sh NAME LOAD: one bench workflow run (`ctest -L bench` on build/default, quick
# profile) beside the planted LOAD, its results files copied into report/tests/data/shared-vm/NAME.
# Run from the repository root, after `cmake --workflow --preset bench` has built it once.
#   plain   nothing else
#   busy1   one busy shell loop pinned to CPU 1
#   membw1  a memory streamer pinned to CPU 1 (numpy copying 256 MiB, over and over)
#   nice15  two busy shell loops at nice 15, unpinned
#   pinned  nothing else; the whole workflow under `taskset -c 0`
# A load starts 20 s before the run and is stopped after it.
set -u
name=$1 load=$2
out=report/tests/data/shared-vm/$name
python=.venv/bin/python
case "$load" in
  plain | pinned) pids="" ;;
  busy1) taskset -c 1 sh -c 'while :; do :; done' & pids=$! ;;
  membw1) taskset -c 1 "$python" -c "
import numpy as np
a = np.ones(32 << 20, dtype=np.float64); b = np.empty_like(a)
while True: np.copyto(b, a)" & pids=$! ;;
  nice15) nice -n 15 sh -c 'while :; do :; done' & p1=$!
          nice -n 15 sh -c 'while :; do :; done' & pids="$p1 $!" ;;
  *) echo "make-runs.sh: unknown load '$load' (plain, busy1, membw1, nice15, pinned)" >&2; exit 2 ;;
esac
[ -n "$pids" ] && sleep 20
rm -rf results/local && mkdir -p results/local
pin=""; [ "$load" = pinned ] && pin="taskset -c 0"
$pin ctest --test-dir build/default -L bench > "/tmp/make-runs-$name.log" 2>&1
rc=$?
[ -n "$pids" ] && kill $pids
mkdir -p "$out" && cp results/local/*.json "$out"/
[ -d results/local/reruns ] && cp -r results/local/reruns "$out"/
echo "$name load=$load rc=$rc $(uptime)"
