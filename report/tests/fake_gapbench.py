"""A stand-in for the gapbench executable, for the tests of baseline, nightly and gate_proof: it
honours the flags those tools pass and writes Google Benchmark JSON with times from a spec.

    python fake_gapbench.py SPEC.json [gapbench flags]     (make_fake() wraps it in a script)

SPEC: {"benchmarks": {name: seconds}, "noise": relative sd of every time (default 0.002),
       "noisy": {regex: relative sd}, "slow": {regex: factor}, "slow_runs": N (the slow factors
       apply to this executable's first N runs only; default all), "fail": [regex],
       "injected": regex (times * (1 + GAPBENCH_INJECT_FRACTION)), "facts": {extra facts},
       "log": path (one JSON line per invocation: its label and arguments), "label": str,
       "hang": regex (a run whose filter matches a name it matches sleeps an hour, as a benchmark
       that never ends)}
"""

from __future__ import annotations

import json
import os
import random
import re
import statistics
import sys
import time
from pathlib import Path

DEFAULT_FACTS = {"gapbench.version": "0.1.0", "gapbench.build_type": "release",
                 "machine.id": "fake-machine", "cpu.model": "Fake CPU", "cpu.cores": "2",
                 "gpu.status": "no NVIDIA driver (fake)", "openblas.version": "0.3.21",
                 "onednn.version": "2.6.3", "cuda.runtime_version": "13.0"}


def flag(args: list[str], name: str, default: str | None = None) -> str | None:
    for a in args:
        if a.startswith(f"--{name}="):
            return a.split("=", 1)[1]
    return default


def entry(name: str, i: int, n: int, seconds: float) -> dict:
    ns = seconds * 1e9
    return {"name": name, "family_index": 0, "per_family_instance_index": 0, "run_name": name,
            "run_type": "iteration", "repetitions": n, "repetition_index": i, "threads": 1,
            "iterations": 100, "real_time": ns, "cpu_time": ns, "time_unit": "ns"}


def aggregates(name: str, times: list[float]) -> list[dict]:
    ns = [t * 1e9 for t in times]
    mean = statistics.mean(ns)
    sd = statistics.stdev(ns) if len(ns) > 1 else 0.0
    values = {"mean": mean, "median": statistics.median(ns), "stddev": sd, "cv": sd / mean}
    return [{"name": f"{name}_{k}", "run_name": name, "run_type": "aggregate",
             "repetitions": len(ns), "threads": 1, "aggregate_name": k, "iterations": len(ns),
             "real_time": v, "cpu_time": v, "time_unit": "ns"} for k, v in values.items()]


def main() -> int:
    spec_path, args = Path(sys.argv[1]), sys.argv[2:]
    spec = json.loads(spec_path.read_text())
    facts = {**DEFAULT_FACTS, **spec.get("facts", {})}
    if spec.get("log"):
        with open(spec["log"], "a") as f:
            f.write(json.dumps({"label": spec.get("label", spec_path.stem), "args": args}) + "\n")
    if args[:1] == ["--help"]:
        print("usage: gapbench [--profile=quick|full] (fake)")
        return 0
    if args[:1] == ["doctor"]:
        print(json.dumps({"facts": facts, "findings": ["a fake finding"]}))
        return 0
    pattern = re.compile(flag(args, "benchmark_filter", "."))
    names = [n for n in spec["benchmarks"] if pattern.search(n)]
    if not names:
        print("gapbench: the filter matches no benchmark", file=sys.stderr)
        return 2
    if flag(args, "benchmark_list_tests") == "true":
        print("\n".join(names))
        return 0
    if spec.get("hang") and any(re.search(spec["hang"], n) for n in names):
        time.sleep(3600)
    profile = flag(args, "profile", "quick")
    reps = int(flag(args, "benchmark_repetitions", "10" if profile == "full" else "5"))
    # How many runs this executable has made (for slow_runs), counted beside the spec.
    counter = spec_path.with_suffix(".runs")
    run_index = int(counter.read_text()) if counter.exists() else 0
    counter.write_text(str(run_index + 1))
    slow_now = run_index < spec.get("slow_runs", 1 << 30)
    fraction = float(os.environ.get("GAPBENCH_INJECT_FRACTION", "0") or 0)
    # Seeded per executable and run: repeatable tests, yet each run's noise is its own.
    rng = random.Random(f"{spec.get('label', '')}/{run_index}")
    rows, failed = [], False
    for name in names:
        factor = 1.0
        if slow_now:
            for regex, f in spec.get("slow", {}).items():
                if re.search(regex, name):
                    factor *= f
        if spec.get("injected") and re.search(spec["injected"], name):
            factor *= 1 + fraction
        sd = spec.get("noise", 0.002)
        for regex, s in spec.get("noisy", {}).items():
            if re.search(regex, name):
                sd = s
        if any(re.search(r, name) for r in spec.get("fail", [])):
            failed = True
            rows += [{**entry(name, i, reps, 1e-9), "error_occurred": True,
                      "error_message": "validation failed: fake", "real_time": 0,
                      "iterations": 0} for i in range(reps)]
            continue
        times = [spec["benchmarks"][name] * factor * max(0.05, 1 + rng.gauss(0, sd))
                 for _ in range(reps)]
        rows += [entry(name, i, reps, t) for i, t in enumerate(times)] + aggregates(name, times)
    context = {"date": "2026-01-01T00:00:00+00:00", "library_build_type": "release",
               "gapbench.schema": "2", "gapbench.profile": profile,
               "gapbench.seed": flag(args, "seed", "42"), **facts}
    out = flag(args, "benchmark_out")
    if out:
        Path(out).write_text(json.dumps({"context": context, "benchmarks": rows}))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
