"""How long `gapbench-report explain` takes, and how much memory, on a large trace.

    python report/bench_explain.py [--mib 100] [--keep FILE]

Writes a synthesised PyTorch GPU trace of about --mib MiB of JSON (gzipped; the launch-bound
case of tests/traces/synthesise_gpu_traces.py, repeated over as many steps as it takes: the
densest event mix, one op, one launch, one kernel and its two flow events per element), then
runs `gapbench-report explain` on it in a fresh process and reports its wall time and peak
resident memory (the child's ru_maxrss). Exits 1 when it takes over --max-seconds (30) or
--max-gib (2) of memory. A benchmark, not a test: pytest does not collect it.
"""

from __future__ import annotations

import argparse
import gzip
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "tests" / "traces"))

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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=float, default=100.0)
    parser.add_argument("--max-seconds", type=float, default=30.0)
    parser.add_argument("--max-gib", type=float, default=2.0)
    parser.add_argument("--keep", type=Path, help="write the trace here and keep it")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.keep or Path(tmp) / "big.pt.trace.json.gz"
        size = big_trace(args.mib, path)
        print(f"trace: {size / 2**20:.0f} MiB of JSON, {path.stat().st_size / 2**20:.1f} MiB "
              "gzipped", flush=True)
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "gapbench_report", "explain", str(path),
                               "--json"], cwd=HERE, capture_output=True, text=True)
        seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024  # KiB on Linux
    if done.returncode != 0:
        print(f"explain failed ({done.returncode}): {done.stderr.strip()}")
        return 1
    verdict = json.loads(done.stdout)["traces"][0]["verdict"]
    print(f"explain: {seconds:.1f} s, peak memory {peak / 2**30:.2f} GiB ({verdict})")
    over = seconds > args.max_seconds or peak > args.max_gib * 2**30
    if over:
        print(f"over the limit: {args.max_seconds:g} s and {args.max_gib:g} GiB")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
