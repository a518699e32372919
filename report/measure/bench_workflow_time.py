"""The bench workflow's time: `ctest -L bench` on a built tree, wall clock, and each test's share.

    python report/measure/bench_workflow_time.py [--build-dir build/default]
        [--cache-bytes 503316480] [--limit 180] [--peak-share 0.15]

Runs the benchmark and report steps of `cmake --workflow --preset bench` (its configure and
build not counted: build the tree first) and prints, from ctest's own JUnit record, each test's
seconds and share: `bench.peak` (the ceilings, measured once), each family and `bench.report`;
and the CPU seconds of it all, which a machine's other load inflates far less than the wall
clock (on a shared machine, compare those).
`--cache-bytes` sets GAPBENCH_CACHE_BYTES for the run, the cache size peak/'s buffers are sized
by, to emulate a machine whose cores reach a larger cache (503316480: a 480 MiB L3 Xeon).
Results go where the tree's GAPBENCH_RESULTS_DIR says, as in the workflow itself.

The goal (docs/setup.md): at most three minutes on any 2-core machine, peak/ at most 15% of it.
Exit status 1 when either is missed, 2 when ctest could not run or a test failed, 0 otherwise.
A benchmark, not a test: pytest does not collect it. Run it on a quiet machine (`nice -n -19`
where others share it).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def run_bench(build_dir: Path, env: dict[str, str]) -> tuple[float, float, list]:
    """Wall seconds of `ctest -L bench`, the CPU seconds (user + system) of it and every test,
    and each test's name, seconds and status."""
    with tempfile.TemporaryDirectory() as folder:
        junit = Path(folder) / "bench.xml"
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.monotonic()
        done = subprocess.run(
            ["ctest", "--test-dir", str(build_dir), "-L", "bench", "--output-junit", str(junit)],
            env=env, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wall = time.monotonic() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        if not junit.exists():
            raise RuntimeError(f"ctest wrote no record (exit {done.returncode}): "
                               f"{done.stderr.strip()[-300:]}")
        cases = [(case.get("name", "?"), float(case.get("time", "0")), case.get("status", "?"))
                 for case in ElementTree.parse(junit).getroot().iter("testcase")]
    return wall, cpu, cases


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build-dir", type=Path, default=REPO / "build" / "default")
    p.add_argument("--cache-bytes", type=int, help="GAPBENCH_CACHE_BYTES for the run")
    p.add_argument("--limit", type=float, default=180.0, help="goal in seconds (default 180)")
    p.add_argument("--peak-share", type=float, default=0.15,
                   help="goal for bench.peak's share of the wall clock (default 0.15)")
    args = p.parse_args(argv)
    if not (args.build_dir / "CTestTestfile.cmake").exists():
        print(f"bench_workflow_time: {args.build_dir} is not a built tree (no "
              "CTestTestfile.cmake): configure and build it first", file=sys.stderr)
        return 2
    env = dict(os.environ)
    if args.cache_bytes is not None:
        env["GAPBENCH_CACHE_BYTES"] = str(args.cache_bytes)
    try:
        wall, cpu, cases = run_bench(args.build_dir, env)
    except (OSError, RuntimeError, ElementTree.ParseError) as e:
        print(f"bench_workflow_time: {e}", file=sys.stderr)
        return 2
    cache = f"GAPBENCH_CACHE_BYTES={args.cache_bytes}" if args.cache_bytes else "the probe's"
    print(f"ctest -L bench in {args.build_dir} ({cache} cache size): {wall:.1f} s wall clock, "
          f"{cpu:.1f} CPU seconds (user + system, every test's process included)")
    print()
    print("| test | seconds | share | status |")
    print("|---|---:|---:|---|")
    for name, seconds, status in cases:
        print(f"| {name} | {seconds:.1f} | {seconds / wall:.0%} | {status} |")
    peak = sum(seconds for name, seconds, _ in cases if name == "bench.peak")
    print(f"| (ctest itself, between tests) | {wall - sum(c[1] for c in cases):.1f} | | |")
    print()
    print(f"peak/: {peak:.1f} s, {peak / wall:.0%} of the wall clock "
          f"(goal {args.peak_share:.0%}); all: {wall:.1f} s (goal {args.limit:.0f} s)")
    if any(status not in ("run", "passed") for _, _, status in cases):
        print("bench_workflow_time: a test did not pass (see its status)", file=sys.stderr)
        return 2
    return 0 if wall <= args.limit and peak <= args.peak_share * wall else 1


if __name__ == "__main__":
    sys.exit(main())
