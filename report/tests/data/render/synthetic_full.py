"""Synthetic gapbench results for every family (present and planned), shaped like the real files.

Times follow simple models (bandwidth plus latency, FLOPs over a rate, launch floors) with seeded
noise, so charts show real-looking crossovers and gaps. Used by the render tests and to time a
full-profile render:

    python tests/data/render/synthetic_full.py OUT.json [--reps 20] [--no-gpu]
"""

from __future__ import annotations

import argparse
import json
import math
import random
from pathlib import Path

KIB, MIB = 1024, 1024 * 1024


def context(gpu: bool, machine: str = "synthetic-h100") -> dict:
    ctx = {
        "date": "2026-11-22T12:00:00+00:00", "host_name": "synthetic", "num_cpus": 16,
        "gapbench.schema": "1", "gapbench.version": "0.1.0", "gapbench.profile": "full",
        "gapbench.seed": "42", "machine.id": machine, "cpu.model": "Synthetic Xeon 16-core",
        "cpu.cores": "16", "cpu.frequency_scaling": "disabled", "openblas.version": "0.3.21",
        "gpu.status": "ok" if gpu else "no NVIDIA driver (libcuda.so.1 not found)",
        "cuda.driver_version": "13.0" if gpu else "none", "cuda.runtime_version": "13.0",
    }
    if gpu:
        ctx.update({"gpu.name": "Synthetic H100 PCIe", "gpu.compute_capability": "9.0",
                    "gpu.sm_count": "114", "gpu.memory_total_bytes": str(80 * 2**30),
                    "pcie.gen_current": "4", "pcie.width_current": "16", "pcie.gen_max": "5",
                    "pcie.width_max": "16", "pcie.bandwidth_current_gbps": "31.51",
                    "pcie.bandwidth_max_gbps": "63.02"})
    return ctx


class Run:
    """Collects entries: one per repetition plus Google Benchmark's four aggregates."""

    def __init__(self, reps: int, gpu: bool, seed: int = 1):
        self.reps, self.gpu, self.rng, self.entries = reps, gpu, random.Random(seed), []

    def add(self, name: str, seconds: float, bytes_: float = 0, items: float = 0,
            flops: float = 0, extra: dict | None = None, threads: int | None = None,
            timing: str | None = None) -> None:
        device = name.split("/")[2]
        full = name + f"/{timing or ('manual_time' if device == 'gpu' else 'real_time')}"
        full += f"/threads:{threads}" if threads else ""
        if device == "gpu" and not self.gpu:
            for i in range(self.reps):
                self.entries.append({"name": full, "run_name": full, "run_type": "iteration",
                                     "repetitions": self.reps, "repetition_index": i,
                                     "threads": 1, "error_occurred": True,
                                     "error_message": "skipped: no NVIDIA driver "
                                                      "(libcuda.so.1 not found)",
                                     "iterations": 0, "real_time": 0.0, "cpu_time": 0.0,
                                     "time_unit": "ns"})
            return
        times = []
        for i in range(self.reps):
            t = seconds * math.exp(self.rng.gauss(0, 0.03))
            if self.rng.random() < 0.05:  # the odd slow repetition
                t *= 1.3
            times.append(t)
            row = {"name": full, "run_name": full, "run_type": "iteration",
                   "repetitions": self.reps, "repetition_index": i, "threads": threads or 1,
                   "iterations": 10, "real_time": t * 1e9, "cpu_time": t * 1e9, "time_unit": "ns"}
            if bytes_:
                row["bytes_per_second"] = bytes_ / t
            if items:
                row["items_per_second"] = items / t
            if flops:
                row["flops"] = flops / t
            row.update(extra or {})
            self.entries.append(row)
        times.sort()
        mean = sum(times) / len(times)
        std = math.sqrt(sum((t - mean) ** 2 for t in times) / max(len(times) - 1, 1))
        for agg, value in (("mean", mean), ("median", times[len(times) // 2]), ("stddev", std),
                           ("cv", std / mean)):
            self.entries.append({"name": f"{full}_{agg}", "run_name": full,
                                 "run_type": "aggregate", "repetitions": self.reps,
                                 "threads": threads or 1, "aggregate_name": agg,
                                 "iterations": self.reps,
                                 "real_time": value if agg == "cv" else value * 1e9,
                                 "cpu_time": value * 1e9, "time_unit": "ns"})


def peak(run: Run) -> None:
    for mib in (256, 1024):
        for threads, speed in ((1, 1.0), (16, 2.5)):
            for variant, gbps, traffic in (("memcpy", 20, 2), ("triad", 18, 3), ("read", 15, 1)):
                b = mib * MIB * traffic
                run.add(f"peak/{variant}/cpu/mib:{mib}", b / (gbps * speed * 1e9), bytes_=b,
                        threads=threads)


def preprocess(run: Run) -> None:
    shapes = [(f"op:sumsq/rows:{r}/cols:100", r * 100 * 4.0, r) for r in
              (10_000, 100_000, 1_000_000)]
    shapes += [(f"op:image/n:{n}/hw:256/c:3", n * 256 * 256 * 3 * 5.0, n) for n in (1, 32, 128)]
    for axes, nbytes, items in shapes:
        cpu_vec = nbytes / 13e9
        run.add(f"preprocess/elementwise/cpu/{axes}", cpu_vec * 7, nbytes, items)
        run.add(f"preprocess/vectorized/cpu/{axes}", cpu_vec, nbytes, items)
        for variant, kernel in (("elementwise", nbytes / 150e9 + 5e-6),
                                ("vectorized", nbytes / 1500e9 + 5e-6)):
            run.add(f"preprocess/{variant}/gpu/{axes}", kernel, nbytes, items)
            e2e = kernel + nbytes / 8e9 + 30e-6
            run.add(f"preprocess/{variant}_e2e/gpu/{axes}", e2e, nbytes, items,
                    extra={"overhead_share": 1 - kernel / e2e})


def transfer(run: Run) -> None:
    for k in range(2, 19):  # 4 KiB to 256 MiB, every power of two: 17 sizes
        b = 2 ** (10 + k)
        for memory, gbps, latency in (("pageable", 9, 12e-6), ("pinned", 25, 6e-6)):
            for direction in ("h2d", "d2h"):
                for mode, extra in (("sync", 4e-6), ("async", 0.0)):
                    run.add(f"transfer/{memory}/gpu/dir:{direction}/mode:{mode}/bytes:{b}",
                            latency + extra + b / (gbps * 1e9), b, 1)
        run.add(f"transfer/device/gpu/dir:d2d/mode:async/bytes:{b}", 3e-6 + b / 1500e9, b, 1)
        run.add(f"transfer/memcpy/cpu/bytes:{b}", 0.3e-6 + b / 12e9, b, 1)


def conv(run: Run) -> None:
    shapes = [(1, 1, 28, 1, 3), (32, 3, 224, 64, 7), (32, 64, 56, 64, 3), (8, 64, 112, 128, 3),
              (32, 256, 14, 256, 3), (32, 64, 56, 256, 1), (16, 128, 28, 128, 3),
              (64, 32, 64, 32, 5)]
    rates = {("naive", "cpu"): 2e9, ("im2col_blas", "cpu"): 120e9, ("onednn", "cpu"): 180e9,
             ("naive", "gpu"): 600e9, ("tiled", "gpu"): 4e12, ("cudnn", "gpu"): 20e12}
    for n, c, hw, k, r in shapes:
        flops = 2.0 * n * k * c * r * r * hw * hw
        axes = f"n:{n}/c:{c}/hw:{hw}/k:{k}/r:{r}"
        for (variant, device), rate in rates.items():
            launch = 6e-6 if device == "gpu" else 0.5e-6
            run.add(f"conv/{variant}/{device}/{axes}", launch + flops / rate, items=n,
                    flops=flops)
        io = 4.0 * n * (c + k) * hw * hw
        run.add(f"conv/cudnn_e2e/gpu/{axes}", 30e-6 + flops / 20e12 + io / 9e9, items=n,
                flops=flops)


def lstm(run: Run) -> None:
    for hidden in (64, 512, 1024):
        for steps in (25, 100):
            for batch in (1, 2, 4, 8, 16, 32, 64, 128, 256):
                flops = 2.0 * batch * (hidden + 50) * 4 * hidden
                per_step = {("blas", "cpu"): 1e-6 + flops / 80e9,
                            ("onednn", "cpu"): 0.8e-6 + flops / 120e9,
                            ("cublas", "gpu"): 12e-6 + flops / 8e12,
                            ("cublas_graph", "gpu"): 5e-6 + flops / 8e12,
                            ("cudnn", "gpu"): 3e-6 + flops / 15e12}
                for (variant, device), t in per_step.items():
                    base = f"lstm/{variant}/{device}/hidden:{hidden}/steps:{steps}/batch:{batch}"
                    run.add(f"{base}/scope:step", t, items=batch, flops=flops)
                    run.add(f"{base}/scope:seq", t * steps, items=batch, flops=flops * steps)


def pipeline(run: Run) -> None:
    for produce in (0.5, 1, 2, 4, 8, 16):
        for consume in (1, 4, 16):
            ideal = 1e3 / max(produce, consume)
            cases = [("none", "", 1e3 / (produce + consume)),
                     ("prefetch", "/depth:2", 0.95 * ideal),
                     ("parallel", "/workers:4", 0.97 * 1e3 / max(produce / 4, consume))]
            for device in ("cpu", "gpu"):
                for variant, axes, rate in cases:
                    run.add(f"pipeline/{variant}/{device}/produce_ms:{produce}/consume_ms:{consume}"
                            f"{axes}", 1 / rate, items=1,
                            extra={"ideal_items_per_second": ideal})


def overhead(run: Run) -> None:
    for k in range(8, 25):  # matmul 16 to 4096, every half power of two
        n = round(2 ** (k / 2))
        flops = 2.0 * n**3
        run.add(f"overhead/openblas/cpu/op:matmul/n:{n}", 1e-6 + flops / 150e9, flops=flops)
        kernel = 8e-6 + flops / 20e12
        run.add(f"overhead/cublas/gpu/op:matmul/n:{n}", kernel, flops=flops)
        run.add(f"overhead/cublas_e2e/gpu/op:matmul/n:{n}", 40e-6 + kernel + 12.0 * n * n / 9e9,
                flops=flops)
    for variant, t in (("launch", 3e-6), ("launch_sync", 8e-6), ("graph", 1.5e-6)):
        run.add(f"overhead/{variant}/gpu/op:empty", t, items=1)
    for what, t in (("context", 0.25), ("cublas_handle", 0.02), ("cudnn_handle", 0.05),
                    ("first_launch", 0.001)):
        run.add(f"overhead/startup/gpu/what:{what}", t)
    for batch in (32, 128, 512, 2048):
        flops = 6.0 * batch * (784 * 128 + 128 * 10)
        run.add(f"overhead/dense/cpu/op:step/batch:{batch}", 2e-6 + flops / 60e9, items=batch)
        run.add(f"overhead/dense/gpu/op:step/batch:{batch}", 60e-6 + flops / 10e12, items=batch)


def framework(run: Run) -> None:
    """The framework probe's family: the same work through two frameworks, host wall time
    (real_time) on both devices, eager and, for the dense step, compiled."""
    for name, per_op in (("torch", 4e-6), ("tensorflow", 30e-6)):
        for k in range(8, 25, 2):
            n = round(2 ** (k / 2))
            flops = 2.0 * n**3
            run.add(f"framework/{name}/cpu/op:matmul/n:{n}", per_op + flops / 140e9, flops=flops,
                    timing="real_time")
            run.add(f"framework/{name}/gpu/op:matmul/n:{n}", 2 * per_op + 8e-6 + flops / 19e12,
                    flops=flops, timing="real_time")
        for batch in (32, 128, 512, 2048):
            flops = 6.0 * batch * (784 * 128 + 128 * 10)
            for mode, ops in (("", 12), ("/mode:compiled", 2)):
                run.add(f"framework/{name}/cpu/op:dense/batch:{batch}{mode}",
                        ops * per_op + flops / 50e9, items=batch, timing="real_time")
        run.add(f"framework/{name}/gpu/op:conv/n:32/c:64/hw:56/k:64/r:3/stride:1/pad:1",
                per_op + 2.0 * 32 * 64 * 64 * 9 * 56 * 56 / 15e12, timing="real_time")


FAMILIES = (peak, preprocess, transfer, conv, lstm, pipeline, overhead, framework)


def results(reps: int = 20, gpu: bool = True, families=FAMILIES, machine: str = "synthetic-h100",
            seed: int = 1) -> dict:
    run = Run(reps, gpu, seed)
    for family in families:
        family(run)
    return {"context": context(gpu, machine), "benchmarks": run.entries}


def write(path: Path, data: dict) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--no-gpu", action="store_true")
    args = parser.parse_args()
    data = results(args.reps, not args.no_gpu)
    write(args.out, data)
    names = {e["run_name"] for e in data["benchmarks"]}
    print(f"{args.out}: {len(names)} benchmarks, {len(data['benchmarks'])} entries")
