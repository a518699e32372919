"""Benchmark of the report itself: render and diagnose of 5,000 benchmarks x 5 repetitions.

    .venv/bin/python report/measure/bench_report_scale.py [--runs 3] [--limit 10] [--keep DIR]

A user's nightly history or a full sweep can reach 5,000 benchmarks. This script writes two such
files, as Google Benchmark writes them (every repetition plus the mean, median, stddev and cv
aggregates), then times the commands a user runs on them, each in a fresh process (wall clock,
imports included), `--runs` times, and prints the median of each:

- mixed: every family, with many sizes (a full sweep): every chart and every diagnosis rule
  has work to do;
- cpu and gpu: CPU and GPU end-to-end variants of one family at 1,250 sizes (the rules that
  set each GPU variant against the CPU ones of the same shape);
- one family: 5,000 sizes of one benchmark, all in the same chart panel.

`compare` of each file against itself is timed too, for reference. Exit status 1 when a median
of render or diagnose is over `--limit` seconds (default 10), 0 otherwise. It is a benchmark, not
a test: pytest does not collect it. Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCHMARKS = 5000
REPETITIONS = 5
REPORT = Path(__file__).resolve().parents[1]  # report/: the package, its tests and data
CONTEXT = {
    "gapbench.schema": "1", "gapbench.version": "0.1.0", "gapbench.profile": "full",
    "gapbench.seed": "42", "machine.id": "scale-test", "gpu.status": "ok",
    "gpu.name": "Synthetic GPU", "cpu.model": "Synthetic CPU", "cuda.driver_version": "13.0",
    "cuda.runtime_version": "13.0", "pcie.gen_current": "4", "pcie.width_current": "16",
    "pcie.gen_max": "4", "pcie.width_max": "16", "pcie.bandwidth_max_gbps": "31.51",
    "date": "2026-01-01T00:00:00+00:00",
}


class Writer:
    """Google Benchmark's entries for each benchmark: the repetitions, then the aggregates."""

    def __init__(self, repetitions: int, seed: int = 1):
        self.repetitions, self.rng = repetitions, random.Random(seed)
        self.entries: list[dict] = []
        self.names: set[str] = set()

    def add(self, name: str, seconds: float, threads: int | None = None, **rates: float) -> None:
        """`rates`: counters per second of the work (bytes_per_second=bytes, ...), or shares."""
        name += "/manual_time" if name.split("/")[2] == "gpu" else "/real_time"
        name += f"/threads:{threads}" if threads else ""
        self.names.add(name)
        times = [seconds * math.exp(self.rng.gauss(0, 0.03)) for _ in range(self.repetitions)]
        for i, t in enumerate(times):
            entry = {"name": name, "run_name": name, "run_type": "iteration",
                     "repetitions": self.repetitions, "repetition_index": i,
                     "threads": threads or 1,
                     "iterations": 100, "real_time": t * 1e9, "cpu_time": t * 1e9,
                     "time_unit": "ns"}
            for key, amount in rates.items():
                entry[key] = amount if key in ("overhead_share", "idle_fraction") else amount / t
            self.entries.append(entry)
        mean = statistics.fmean(times)
        stddev = statistics.stdev(times) if len(times) > 1 else 0.0
        for kind, value in (("mean", mean), ("median", statistics.median(times)),
                            ("stddev", stddev), ("cv", stddev / mean)):
            self.entries.append({"name": f"{name}_{kind}", "run_name": name,
                                 "run_type": "aggregate", "repetitions": self.repetitions,
                                 "threads": threads or 1, "aggregate_name": kind,
                                 "iterations": self.repetitions,
                                 "real_time": value if kind == "cv" else value * 1e9,
                                 "cpu_time": value if kind == "cv" else value * 1e9,
                                 "time_unit": "ns"})


def mixed(w: Writer) -> None:
    """Every family with many sizes: 5,000 benchmarks."""
    for mib in (256, 1024):
        for threads in (1, 2):
            for variant in ("memcpy", "triad", "read"):
                w.add(f"peak/{variant}/cpu/mib:{mib}", mib * 2**20 / 15e9 / threads, threads,
                      bytes_per_second=mib * 2**20)
    for op, axis, sizes in (("sumsq", "rows", 200), ("image", "n", 100)):  # 1,800
        for k in range(sizes):
            n = 1000 * (k + 1)
            shape = f"op:{op}/{axis}:{n}" + ("/cols:100" if op == "sumsq" else "/hw:64/c:3")
            work = n * 400.0
            cpu = work / 10e9
            for variant, device, t in (("elementwise", "cpu", 8 * cpu), ("vectorized", "cpu", cpu),
                                       ("elementwise", "gpu", 5e-6 + work / 100e9),
                                       ("vectorized", "gpu", 5e-6 + work / 1000e9),
                                       ("elementwise_e2e", "gpu", 40e-6 + work / 8e9),
                                       ("vectorized_e2e", "gpu", 35e-6 + work / 8e9)):
                extra = {"overhead_share": 0.8} if variant.endswith("_e2e") else {}
                w.add(f"preprocess/{variant}/{device}/{shape}", t, bytes_per_second=work,
                      items_per_second=n, **extra)
    for k in range(100):  # 1,000
        size = 4096 * (k + 1) ** 2
        for memory, gbps in (("pageable", 6), ("pinned", 12)):
            for direction in ("h2d", "d2h"):
                for mode in ("sync", "async"):
                    w.add(f"transfer/{memory}/gpu/dir:{direction}/mode:{mode}/bytes:{size}",
                          8e-6 + size / (gbps * 1e9), bytes_per_second=size)
        w.add(f"transfer/device/gpu/dir:d2d/mode:async/bytes:{size}", 3e-6 + size / 900e9,
              bytes_per_second=size)
        w.add(f"transfer/memcpy/cpu/bytes:{size}", 1e-6 + size / 10e9, bytes_per_second=size)
    for k in range(100):  # 700
        n, c = 1 + k % 10, 16 * (1 + k // 10)
        flops = 2.0 * n * c * c * 9 * 56 * 56
        for variant, device, rate in (("naive", "cpu", 1e9), ("im2col_blas", "cpu", 60e9),
                                      ("onednn", "cpu", 90e9), ("naive", "gpu", 300e9),
                                      ("tiled", "gpu", 2e12), ("cudnn", "gpu", 10e12),
                                      ("cudnn_e2e", "gpu", 1e12)):
            w.add(f"conv/{variant}/{device}/n:{n}/c:{c}/hw:56/k:{c}/r:3", 5e-6 + flops / rate,
                  flops=flops, items_per_second=n)
    for hidden in (64, 256, 512, 1024):  # 800
        for steps in (25, 100):
            for batch in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512):
                flops = 8.0 * batch * hidden * hidden
                for variant, device, t in (("blas", "cpu", 1e-6 + flops / 50e9),
                                           ("onednn", "cpu", 1e-6 + flops / 80e9),
                                           ("cublas", "gpu", 7e-6 + flops / 5e12),
                                           ("cublas_graph", "gpu", 4e-6 + flops / 5e12),
                                           ("cudnn", "gpu", 3e-6 + flops / 9e12)):
                    base = f"lstm/{variant}/{device}/hidden:{hidden}/steps:{steps}/batch:{batch}"
                    w.add(f"{base}/scope:step", t, items_per_second=batch)
                    w.add(f"{base}/scope:seq", t * steps, items_per_second=batch)
    for produce in range(1, 21):  # 600
        for consume in (1, 2, 4, 8, 16):
            ideal = 1e3 / max(produce, consume)
            for device in ("cpu", "gpu"):
                for variant, axes, rate, idle in (
                        ("none", "", 1e3 / (produce + consume), produce / (produce + consume)),
                        ("prefetch", "/depth:2", 0.95 * ideal, 0.05),
                        ("parallel", "/workers:4", 0.9 * ideal, 0.1)):
                    w.add(f"pipeline/{variant}/{device}/produce_ms:{produce}/consume_ms:{consume}"
                          f"{axes}", 1 / rate, items_per_second=1,
                          ideal_items_per_second=ideal * (1 / rate), idle_fraction=idle)
    for k in range(20):  # 60 + 20 + 3 + 5
        n = round(16 * 2 ** (k / 2))
        flops = 2.0 * n**3
        w.add(f"overhead/openblas/cpu/op:matmul/n:{n}", 1e-6 + flops / 100e9, flops=flops)
        w.add(f"overhead/cublas/gpu/op:matmul/n:{n}", 8e-6 + flops / 10e12, flops=flops)
        w.add(f"overhead/cublas_e2e/gpu/op:matmul/n:{n}", 40e-6 + flops / 10e12 + n * n / 1e9,
              flops=flops)
    for batch in range(10):
        size = 16 * 2**batch
        w.add(f"overhead/dense/cpu/op:step/batch:{size}", 2e-6 + size * 1e-7,
              items_per_second=size)
        w.add(f"overhead/dense/gpu/op:step/batch:{size}", 60e-6 + size * 1e-9,
              items_per_second=size)
    for variant in ("launch", "launch_sync", "graph"):
        w.add(f"overhead/{variant}/gpu/what:launch", 3e-6)
    for what in ("context", "cublas_handle", "cudnn_handle", "first_launch", "module_load"):
        w.add(f"overhead/startup/gpu/what:{what}", 0.01)


def cpu_and_gpu(w: Writer) -> None:
    """Half CPU variants, half GPU end-to-end ones, of one family at 1,250 sizes: the rules that
    set each GPU variant against the CPU ones of the same shape have the most pairs to look at."""
    for op, axis in (("sumsq", "rows"), ("image", "n")):
        for k in range(625):
            n = 1000 * (k + 1)
            shape = f"op:{op}/{axis}:{n}" + ("/cols:100" if op == "sumsq" else "/hw:64/c:3")
            work = n * 400.0
            for variant, device, t in (("elementwise", "cpu", work / 1e9),
                                       ("vectorized", "cpu", work / 10e9),
                                       ("elementwise_e2e", "gpu", 40e-6 + work / 8e9),
                                       ("vectorized_e2e", "gpu", 35e-6 + work / 8e9)):
                extra = {"overhead_share": 0.8} if device == "gpu" else {}
                w.add(f"preprocess/{variant}/{device}/{shape}", t, bytes_per_second=work,
                      **extra)


def one_family(w: Writer) -> None:
    """5,000 sizes of one benchmark: one chart panel with 5,000 groups."""
    for i in range(BENCHMARKS):
        rows = 1000 + i
        w.add(f"preprocess/vectorized/cpu/op:sumsq/rows:{rows}/cols:100", rows * 4e-10,
              bytes_per_second=rows * 400.0)


def write(path: Path, shape) -> Path:
    w = Writer(REPETITIONS)
    shape(w)
    if len(w.names) != BENCHMARKS:
        raise SystemExit(f"{shape.__name__} made {len(w.names)} benchmarks, not {BENCHMARKS}")
    path.write_text(json.dumps({"context": CONTEXT, "benchmarks": w.entries}), encoding="utf-8")
    return path


def timed(args: list[str]) -> float:
    """Wall-clock seconds of `gapbench-report ARGS` in a fresh process; exits on a failure."""
    env = {**os.environ, "MPLBACKEND": "Agg",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPORT), os.environ.get("PYTHONPATH")]))}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "gapbench_report", *args], env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1):  # compare of a file against itself may say 1 by chance
        raise SystemExit(f"gapbench-report {args[0]} failed: {done.stderr.strip()}")
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="timed runs of each command")
    parser.add_argument("--limit", type=float, default=10.0,
                        help="seconds render and diagnose may take (median)")
    parser.add_argument("--keep", type=Path, help="write the files and reports here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.keep or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        over = []
        print(f"{BENCHMARKS} benchmarks x {REPETITIONS} repetitions, median of {args.runs} runs "
              f"(wall clock, one process each), {os.cpu_count()} CPUs")
        for shape in (mixed, cpu_and_gpu, one_family):
            label = shape.__name__.replace("_", " ")
            results = str(write(folder / f"{shape.__name__}.json", shape))
            commands = {"render": ["render", results, "--out", str(folder / shape.__name__)],
                        "diagnose": ["diagnose", results],
                        "compare": ["compare", results, results]}
            for command, cli in commands.items():
                runs = [timed(cli) for _ in range(args.runs)]
                median = statistics.median(runs)
                gated = command != "compare"
                if gated and median > args.limit:
                    over.append(f"{label} {command}")
                print(f"  {label:10} {command:8} {median:6.2f} s  (runs: "
                      f"{', '.join(f'{s:.2f}' for s in runs)})"
                      + (f"  OVER {args.limit:g} s" if gated and median > args.limit else ""))
        if over:
            print(f"over the {args.limit:g} s limit: {', '.join(over)}")
            return 1
        print(f"render and diagnose within {args.limit:g} s")
        return 0


if __name__ == "__main__":
    sys.exit(main())
