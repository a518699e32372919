#!/usr/bin/env bash
# Makes this folder's planted-cause runs (README.md says what each plants). As root, from the
# repository root, on an otherwise idle 2-CPU Linux machine with cgroup v1's cpu controller at
# /sys/fs/cgroup/cpu:
#   report/tests/data/versus/this-machine/make-runs.sh build/cpu-only/gapbench [case...]
# Each case writes <case>/gapbench.json (the run) and <case>/doctor.json (doctor --json under the
# same cause), at nice -19 so that other users' work barely touches it.
set -euo pipefail
exe=$(realpath "$1")
shift
here=$(dirname "$(realpath "$0")")
filter='^(conv/(onednn|im2col_blas)/cpu/|lstm/(blas|onednn)/cpu/|overhead/openblas/cpu/|preprocess/(elementwise|vectorized)/cpu/|peak/(read|sgemm)/cpu/)'
quota=/sys/fs/cgroup/cpu/gapbench-quota
spinners=()

cleanup() {
  for pid in "${spinners[@]}"; do kill "$pid" 2>/dev/null || true; done
  [ -d "$quota" ] && rmdir "$quota" 2>/dev/null || true
}
trap cleanup EXIT

# Waits (at most 5 minutes) until no other process at a negative nice, such as another user's
# measurement at nice -19, has used a CPU for 3 seconds: at nice -19 only those compete with a
# run. Says what it waited for.
wait_quiet() {
  python3 - "$$" <<'PY' >&2
import os, sys, time
mine = {int(sys.argv[1])}
def busy():
    seen = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ppid, nice, cpu = int(fields[1]), int(fields[16]), int(fields[11]) + int(fields[12])
        seen[int(pid)] = (ppid, nice, cpu)
    return seen
def others(a, b):
    ours = set(mine)
    for _ in range(8):  # this script's own children, whatever their depth
        ours |= {p for p, (pp, _, _) in b.items() if pp in ours}
    tick = os.sysconf("SC_CLK_TCK")
    return [p for p, (_, nice, cpu) in b.items()
            if nice < 0 and p not in ours and p in a and (cpu - a[p][2]) / tick > 0.3]
start = time.time()
while time.time() - start < 300:
    before = busy(); time.sleep(3); found = others(before, busy())
    if not found:
        print(f"   quiet after {time.time() - start:.0f} s")
        break
    time.sleep(7)
else:
    print(f"   not quiet after 300 s: {found}")
PY
}

# run <case> [command prefix...]: doctor, then the benchmarks, both under the prefix.
run() {
  local case=$1
  shift
  mkdir -p "$here/$case"
  wait_quiet
  echo "== $case: $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  "$@" nice -n -19 "$exe" doctor --json >"$here/$case/doctor.json"
  "$@" nice -n -19 "$exe" --profile=quick --benchmark_filter="$filter" \
    --benchmark_out="$here/$case/gapbench.json" --benchmark_out_format=json >/dev/null
  echo "   done $(date -u +%FT%TZ)" >&2
}

# in_quota <command...>: runs it inside the quota's cgroup.
in_quota() { sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$quota" "$@"; }

cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(plain-1 plain-2 pinned-1cpu quota-1cpu isa-capped loaded)
for case in "${cases[@]}"; do
  case $case in
    plain-*) run "$case" ;;
    pinned-1cpu) run "$case" taskset -c 0 ;;
    quota-1cpu)
      mkdir -p "$quota"
      echo 100000 >"$quota/cpu.cfs_period_us"
      echo 100000 >"$quota/cpu.cfs_quota_us"
      run "$case" in_quota
      rmdir "$quota"
      ;;
    isa-capped)
      run "$case" env DNNL_MAX_CPU_ISA=SSE41 OPENBLAS_CORETYPE=Haswell GAPBENCH_MAX_CPU_ISA=sse41
      ;;
    loaded)
      for _ in 1 2; do
        nice -n -19 sh -c 'while :; do :; done' &
        spinners+=($!)
      done
      # A minute first, so that the 1-minute load average the run records has risen with them,
      # as it has on a machine whose other work was running before the run.
      sleep 60
      run "$case"
      for pid in "${spinners[@]}"; do kill "$pid"; done
      spinners=()
      ;;
    *) echo "unknown case: $case" >&2; exit 2 ;;
  esac
done
