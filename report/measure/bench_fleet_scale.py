"""Benchmark of the fleet report: `gapbench-report fleet` on 1,000 machines x 900 benchmarks.

    .venv/bin/python report/measure/bench_fleet_scale.py [--machines 1000] [--benchmarks 900]
                                                 [--runs 1] [--limit 30] [--keep DIR]

The fleet is made from real files: the H200's pipeline results and doctor.json, and the CPU
baseline (report/tests/data/fleet/h200/, results/baselines/ci-cpu-2core.json), every entry as
gapbench wrote it. Their benchmarks are repeated under one more axis (copy:N) until each
machine has --benchmarks of them; each of VARIANTS variants scales every time by its own noise
(3%), and one machine in a hundred has its link trained at Gen3 x8 and its pipeline benchmarks
4x slower. The machines' files are hard links to the variants' (1,000 folders, 40 distinct
files: the reading is the same work as for 1,000 distinct ones). Four machines in five are
H200s, the rest CPU nodes. The command runs in a fresh process (wall clock, imports included),
twice per --runs: first with every results file parsed, then with the digests the first run (or
`gapbench-ci fleet status`, as each task ends) left in each node folder. Exit status 1 when
the second's median is over --limit seconds. Run it on a quiet machine; pytest does not
collect it.
"""

from __future__ import annotations

import argparse
import copy
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

REPORT = Path(__file__).resolve().parents[1]  # report/: the package, its tests and data
sys.path.insert(0, str(REPORT))
from gapbench_report.inputs.fleet import DIGEST  # noqa: E402

H200 = REPORT / "tests" / "data" / "fleet" / "h200"
CPU = REPORT.parent / "results" / "baselines" / "ci-cpu-2core.json"
VARIANTS = 20


def with_copy_axis(name: str, k: int) -> str:
    """The name with one more axis, copy:k, before Google Benchmark's own suffixes."""
    parts = name.split("/")
    cut = next((i for i, p in enumerate(parts) if i > 2 and (
        p in ("real_time", "manual_time") or p.split(":")[0] in (
            "threads", "min_time", "iterations", "repeats"))), len(parts))
    return "/".join(parts[:cut] + [f"copy:{k}"] + parts[cut:])


def grown(document: dict, benchmarks: int) -> dict:
    """The document with its benchmarks repeated (copy:1, copy:2, ...) up to `benchmarks`."""
    by_name: dict[str, list[dict]] = {}
    for e in document["benchmarks"]:
        by_name.setdefault(e["run_name"], []).append(e)
    names = list(by_name)
    entries = []
    for i in range(benchmarks):
        k, name = divmod(i, len(names))
        for e in by_name[names[name]]:
            e = dict(e)
            if k:
                e["run_name"] = with_copy_axis(e["run_name"], k)
                e["name"] = (e["run_name"] if e.get("run_type") != "aggregate"
                             else f"{e['run_name']}_{e['aggregate_name']}")
            entries.append(e)
    return {"context": document["context"], "benchmarks": entries}


def scaled(document: dict, factor: float, rng: random.Random, slow: str = "",
           by: float = 1.0) -> dict:
    """Every time times `factor` and 3% noise per benchmark; names starting `slow` times `by`."""
    out = copy.deepcopy(document)
    noise: dict[str, float] = {}
    for e in out["benchmarks"]:
        f = noise.setdefault(e["run_name"], factor * math.exp(rng.gauss(0, 0.03)))
        f *= by if e["run_name"].startswith(slow) and slow else 1.0
        if e.get("aggregate_name") == "cv" or "real_time" not in e:
            continue
        for key in ("real_time", "cpu_time"):
            e[key] = e[key] * f
        for key in ("bytes_per_second", "items_per_second"):
            if key in e:
                e[key] = e[key] / f
    return out


def make_fleet(root: Path, machines: int, benchmarks: int) -> None:
    rng = random.Random(1)
    h200_doc = json.loads((H200 / "doctor.json").read_text())
    h200 = json.loads((H200 / "pipeline.json").read_text())
    cpu = json.loads(CPU.read_text())
    kinds = {"h200": grown(h200, benchmarks), "cpu": grown(cpu, benchmarks)}
    variants = root / ".variants"
    for kind, document in kinds.items():
        for v in range(VARIANTS):
            path = variants / kind / f"{v}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(scaled(document, 1.0, rng)))
        slow = scaled(document, 1.0, rng, slow="pipeline/", by=4.0)
        slow["context"] = {**slow["context"], "pcie.gen_current": "3", "pcie.width_current": "8"}
        (variants / kind / "slow.json").write_text(json.dumps(slow))
    for m in range(machines):
        kind = "h200" if m % 5 else "cpu"
        planted = m % 100 == 7
        folder = root / f"node{m:04d}"
        folder.mkdir(parents=True)
        source = variants / kind / ("slow.json" if planted else f"{m % VARIANTS}.json")
        os.link(source, folder / "results.json")
        facts = dict(h200_doc["facts"]) if kind == "h200" else {
            k: v for k, v in cpu["context"].items() if isinstance(v, str)}
        facts["machine.id"] = f"scale-{m:04d}"
        if planted:
            facts["pcie.gen_current"], facts["pcie.width_current"] = 3, 8
        (folder / "doctor.json").write_text(json.dumps({"facts": facts, "findings": []}))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--machines", type=int, default=1000)
    p.add_argument("--benchmarks", type=int, default=900)
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--limit", type=float, default=30.0,
                   help="seconds the report may take once the nodes are digested (median)")
    p.add_argument("--keep", type=Path, help="write the fleet and its report here")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        root = args.keep or Path(scratch)
        fleet = root / "fleet"
        if not fleet.exists():
            start = time.perf_counter()
            make_fleet(fleet, args.machines, args.benchmarks)
            print(f"made {args.machines} machines x {args.benchmarks} benchmarks in "
                  f"{time.perf_counter() - start:.0f} s", flush=True)
        env = {**os.environ, "PYTHONPATH": str(REPORT)}

        def timed() -> float:
            start = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "gapbench_report", "fleet", str(fleet),
                                   "--out", str(root / "report")], env=env, capture_output=True,
                                  text=True, timeout=3600)
            if done.returncode != 0:
                raise SystemExit(f"gapbench-report fleet failed: {done.stderr.strip()}")
            return time.perf_counter() - start

        cold, warm = [], []
        for _ in range(args.runs):
            for digest in fleet.glob(f"*/{DIGEST}"):
                digest.unlink()
            cold.append(timed())  # every file read and parsed
            warm.append(timed())  # the nodes' digests read (as after gapbench-ci fleet status)
        summary = (root / "report" / "summary.md").read_text()
        verdict = next(line for line in summary.splitlines() if line.startswith("**"))
        print(f"fleet report of {args.machines} machines x {args.benchmarks} benchmarks, "
              f"{os.cpu_count()} CPUs, median of {args.runs}:\n"
              f"  first (every results file parsed): {statistics.median(cold):.1f} s\n"
              f"  again (the nodes' digests):        {statistics.median(warm):.1f} s\n"
              f"{verdict[:400]}")
        return 1 if statistics.median(warm) > args.limit else 0


if __name__ == "__main__":
    sys.exit(main())
