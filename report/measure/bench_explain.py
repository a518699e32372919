"""How long `gapbench-report explain` takes, and how much memory, on a large trace.

    python report/measure/bench_explain.py [--mib 100] [--events launch|tiny] [--keep FILE]

Writes a synthesised PyTorch trace of about --mib MiB of JSON, then runs `gapbench-report
explain` on it in a fresh process and reports its wall time and peak resident memory (the
process's own VmHWM, on Linux). The events (--events):

- launch (the default; gzipped): the launch-bound case of tests/traces/synthesise_gpu_traces.py,
  repeated over as many steps as it takes: the densest GPU event mix, one op, one launch, one
  kernel and its two flow events per element;
- tiny (plain JSON): host ops in fewer bytes than torch.profiler writes for any op (117: no
  args at all), in 10 steps: the most events per MiB, so the most memory per MiB
  (HolisticTraceAnalysis holds a row per event). tests/test_explain_memory.py runs it at 30 MiB.

Exits 1 when it takes over --max-seconds (30) or --max-gib (2) of memory. A benchmark, not a
test: pytest does not collect it.
"""

from __future__ import annotations

import argparse
import gzip
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPORT = Path(__file__).resolve().parents[1]  # report/: the package, its tests and data
sys.path.insert(0, str(REPORT / "tests" / "traces"))

import synthesise_gpu_traces as synth  # noqa: E402


def big_trace(mib: float, path: Path) -> int:
    """Writes the trace; returns its size as JSON in bytes."""
    k = synth.Kineto()
    step, size = 0, 0
    while True:
        with k.span("user_annotation", f"ProfilerStep#{step + 2}"):
            synth.case_launch(k)
        step += 1
        if step % 10 == 0:
            size = len(json.dumps(k.document("bench")))
            if size >= mib * 2**20:
                break
    data = json.dumps(k.document(f"bench_{step}_steps")).encode()
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as out:
        out.write(data)
    return len(data)


TINY_EVENT = ('{{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 4242, "tid": 4242, '
              '"ts": {ts:.3f}, "dur": 1.5, "args": {{}}}}')


def tiny_trace(mib: float, path: Path, steps: int = 10) -> tuple[int, int]:
    """Writes a trace of about `mib` MiB of tiny host ops (TINY_EVENT, 2 us apart) in `steps`
    ProfilerStep spans, line by line; returns its size in bytes and its number of events."""
    per_step = max(1, int(mib * 2**20 / (len(TINY_EVENT.format(ts=1e6)) + 2) / steps))
    ts = 1000.0
    with open(path, "w", encoding="utf-8") as out:
        out.write('{"schemaVersion": 1, "deviceProperties": [], "traceEvents": [\n')
        for step in range(steps):
            out.write(("" if step == 0 else ",\n") + json.dumps(
                {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step + 2}",
                 "pid": 4242, "tid": 4242, "ts": ts, "dur": per_step * 2.0, "args": {}}))
            for _ in range(per_step):
                out.write(",\n" + TINY_EVENT.format(ts=ts))
                ts += 2.0
            ts += 1.0
        out.write('\n], "traceName": "tiny"}\n')
    return path.stat().st_size, steps * (per_step + 1)


# explain as gapbench-report runs it, then its own peak resident memory (VmHWM, bytes) as the last
# line of stderr. Not the parent's ru_maxrss of the child: Linux folds the memory the child had
# before exec, the parent's at the fork, into that (a parent that made a big trace in memory then
# reads as its child's peak).
RUN_AND_REPORT_PEAK = (
    "import sys\n"
    "from gapbench_report.cli.main import main\n"
    "status = main(sys.argv[1:])\n"
    "peak = next(line for line in open('/proc/self/status') if line.startswith('VmHWM'))\n"
    "print(int(peak.split()[1]) * 1024, file=sys.stderr)\n"
    "sys.exit(status)\n")


def peak_of_explain(trace: Path, timeout: float = 3600.0) -> tuple[int, float, dict]:
    """`gapbench-report explain TRACE --json` in a fresh process (Linux): its peak resident memory
    in bytes, its wall seconds and its JSON. RuntimeError when it fails."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", RUN_AND_REPORT_PEAK, "explain", str(trace),
                           "--json"], cwd=REPORT, capture_output=True, text=True, timeout=timeout)
    seconds = time.perf_counter() - start
    *message, peak = done.stderr.splitlines() or ["", "0"]
    if done.returncode != 0:
        raise RuntimeError(f"explain failed ({done.returncode}): {' '.join(message)}")
    return int(peak), seconds, json.loads(done.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=float, default=100.0)
    parser.add_argument("--max-seconds", type=float, default=30.0)
    parser.add_argument("--max-gib", type=float, default=2.0)
    parser.add_argument("--events", choices=("launch", "tiny"), default="launch")
    parser.add_argument("--keep", type=Path, help="write the trace here and keep it")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.events == "tiny":
            path = args.keep or Path(tmp) / "tiny.pt.trace.json"
            size, events = tiny_trace(args.mib, path)
            print(f"trace: {size / 2**20:.0f} MiB of JSON, {events:,} events", flush=True)
        else:
            path = args.keep or Path(tmp) / "big.pt.trace.json.gz"
            size = big_trace(args.mib, path)
            print(f"trace: {size / 2**20:.0f} MiB of JSON, {path.stat().st_size / 2**20:.1f} "
                  "MiB gzipped", flush=True)
        try:
            peak, seconds, answer = peak_of_explain(path)
        except RuntimeError as e:
            print(e)
            return 1
    verdict = answer["traces"][0]["verdict"]
    print(f"explain: {seconds:.1f} s, peak memory {peak / 2**30:.2f} GiB, "
          f"{peak / size:.1f}x the trace ({verdict})")
    over = seconds > args.max_seconds or peak > args.max_gib * 2**30
    if over:
        print(f"over the limit: {args.max_seconds:g} s and {args.max_gib:g} GiB")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
