"""gapbench's oneDNN conv row against TensorFlow's CPU tf.nn.conv2d, interleaved in one window.

    bash ci/setup --tensorflow          # .venv-tf (TensorFlow's CPU build)
    cmake --preset default && cmake --build build/default --target gapbench
    .venv-tf/bin/python report/measure/bench_conv_tensorflow.py [--rounds 4] [--reps 5]
                                  [--threads N] [--max-isa ISA] [--gapbench PATH] [--verbose]
                                  [--precedence]

The layer is ResNet's first-stage 3x3 conv, 64 -> 64 channels, 56x56, batch 32, stride 1, pad 1
(gapbench's `conv/onednn/cpu/n:32/c:64/hw:56/k:64/r:3/stride:1/pad:1` in the full profile), in
float32 and in bf16 (where oneDNN runs bf16 natively; gapbench skips it otherwise and so does
this script).

Each round runs gapbench (one process, --reps repetitions of one iteration per math) and
TensorFlow (in this process, --reps timed calls per math after two warm-up calls), the order
swapped every round (A B, B A, ...), so that load from other work on the machine falls on both
sides alike. --max-isa (AVX2, AVX512_CORE, ...) caps both oneDNNs' instruction set, as on another
CPU (DNNL_MAX_CPU_ISA for Debian's oneDNN 2.6, ONEDNN_MAX_CPU_ISA for TensorFlow's 3.x). Both use
--threads threads (default: the cores this process may use): oneDNN's OpenMP threads
(OMP_NUM_THREADS) and TensorFlow's intra-op threads, inter-op 1. TensorFlow runs
eagerly on NHWC tensors, its filter HWIO, through its bundled oneDNN; a bf16 conv there takes
and returns bf16 (gapbench's bf16 row writes float32). Each TensorFlow sample is one call, timed
on the host clock; eager CPU ops return when their output is written.

Other work on the machine moves both sides' times several-fold. --precedence (root, Linux with
scheduler autogroups) raises this session's autogroup to nice -20 for the measurement and puts
it back after, so that both sides run near their idle speed while others' work waits; without
it, the figures are those of a shared machine.

gapbench's oneDNN runs on GNU OpenMP, whose waiting threads spin before they sleep. Where other
sessions load the cores (Linux then shares the CPU between sessions, not threads), the thread
that finished its half spins on a core its partner could have used: 6-30% on this layer under
loads of 4 to 20 on 2 cores. OMP_WAIT_POLICY=PASSIVE in the environment (passed on to gapbench)
makes it sleep at once; near idle it changes nothing here. The policy in force is printed.

Prints each side's median, quartiles, min-max and sample count per math, gapbench/TensorFlow
(the ratio of the medians, and its range over the rounds' own medians), and the load average at
each round. --verbose first prints, for each side, the distinct oneDNN primitives it executes
(ONEDNN_VERBOSE / DNNL_VERBOSE: implementation, formats, attributes). Exits 2 with a message
when gapbench or TensorFlow is missing; a benchmark, not a test: pytest does not collect it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
N, C, HW, K, R = 32, 64, 56, 64, 3
ROW = f"conv/onednn/cpu/n:{N}/c:{C}/hw:{HW}/k:{K}/r:{R}/stride:1/pad:1"
MATHS = ("fp32", "bf16")


def fail(message: str) -> None:
    print(f"bench_conv_tensorflow: {message}", file=sys.stderr)
    sys.exit(2)


def gapbench_env(threads: int, verbose: bool) -> dict[str, str]:
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    if verbose:
        env.update(ONEDNN_VERBOSE="1", DNNL_VERBOSE="1")
    return env


def gapbench_command(gapbench: Path, reps: int) -> list[str]:
    return [str(gapbench), "--profile=full", f"--benchmark_filter=^{ROW}/",
            f"--benchmark_repetitions={reps}", "--benchmark_min_time=0.001",
            "--benchmark_format=json"]


def run_gapbench(gapbench: Path, reps: int, threads: int) -> dict[str, list[float]]:
    """Seconds per call of each repetition, by math; a skipped math is absent."""
    done = subprocess.run(gapbench_command(gapbench, reps), env=gapbench_env(threads, False),
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        fail(f"gapbench failed ({done.returncode}):\n{done.stderr[-2000:]}")
    samples: dict[str, list[float]] = {}
    scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
    for b in json.loads(done.stdout)["benchmarks"]:
        if b.get("run_type") != "iteration" or b.get("error_occurred"):
            continue
        math = "bf16" if "/math:bf16/" in b["name"] else "fp32"
        samples.setdefault(math, []).append(b["real_time"] * scale[b["time_unit"]])
    return samples


class TensorFlowConv:
    """tf.nn.conv2d on the same layer, NHWC, seeded data, in float32 and bf16."""

    def __init__(self, threads: int) -> None:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        try:
            import numpy as np
            import tensorflow as tf
        except ImportError as e:
            fail(f"cannot import TensorFlow ({e}): run with .venv-tf/bin/python after "
                 "`bash ci/setup --tensorflow`")
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(1)
        rng = np.random.default_rng(42)
        x = rng.uniform(-1, 1, (N, HW, HW, C)).astype(np.float32)
        w = rng.uniform(-1, 1, (R, R, C, K)).astype(np.float32)
        self.tf = tf
        self.inputs = {"fp32": (tf.constant(x), tf.constant(w))}
        self.inputs["bf16"] = tuple(tf.cast(t, tf.bfloat16) for t in self.inputs["fp32"])

    def call(self, math: str) -> float:
        x, w = self.inputs[math]
        t0 = time.perf_counter()
        y = self.tf.nn.conv2d(x, w, strides=1, padding="SAME")
        seconds = time.perf_counter() - t0
        del y
        return seconds

    def run(self, maths: list[str], reps: int) -> dict[str, list[float]]:
        samples = {}
        for math in maths:
            for _ in range(2):
                self.call(math)
            samples[math] = [self.call(math) for _ in range(reps)]
        return samples


def primitives(text: str) -> list[str]:
    """The distinct oneDNN primitives executed, from verbose output, without their times."""
    seen = []
    for line in text.splitlines():
        if ",exec," in line and "verbose" in line:
            fields = line.split(",")
            start = fields.index("exec") + 1
            entry = ",".join(fields[start:-1])
            if entry not in seen:
                seen.append(entry)
    return seen


def show_primitives(gapbench: Path, threads: int) -> None:
    done = subprocess.run(gapbench_command(gapbench, 1), env=gapbench_env(threads, True),
                          capture_output=True, text=True, check=False)
    print("gapbench's oneDNN primitives (reorders before and after are outside the timing):")
    for p in primitives(done.stdout + done.stderr):
        print("  " + p)
    tf_side = subprocess.run(
        [sys.executable, __file__, "--tensorflow-once", "--threads", str(threads)],
        env=dict(os.environ, ONEDNN_VERBOSE="1"), capture_output=True, text=True, check=False)
    print("TensorFlow's oneDNN primitives (each call):")
    for p in primitives(tf_side.stdout + tf_side.stderr):
        print("  " + p)
    print()


class Precedence:
    """This session's scheduler autogroup at nice -20 inside the `with`, as it was after."""

    PATH = Path("/proc/self/autogroup")

    def __enter__(self) -> Precedence:
        try:
            self.before = self.PATH.read_text().split()[-1]
            self.PATH.write_text("-20")
        except (OSError, IndexError) as e:
            fail(f"--precedence: cannot set {self.PATH} ({e}); it needs root and autogroups")
        return self

    def __exit__(self, *exc: object) -> None:
        self.PATH.write_text(self.before)


def summary(values: list[float]) -> str:
    ms = sorted(v * 1e3 for v in values)
    q = statistics.quantiles(ms, n=4) if len(ms) > 1 else [ms[0]] * 3
    return (f"median {statistics.median(ms):7.2f} ms  quartiles {q[0]:6.2f}-{q[2]:6.2f}  "
            f"min-max {ms[0]:6.2f}-{ms[-1]:6.2f}  n={len(ms)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--reps", type=int, default=5, help="samples per side, math and round")
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--gapbench", type=Path, default=REPO / "build" / "default" / "gapbench")
    ap.add_argument("--max-isa", help="cap oneDNN's instruction set on both sides, e.g. AVX2")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--precedence", action="store_true",
                    help="run at autogroup nice -20 (root), put back after")
    ap.add_argument("--tensorflow-once", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.rounds < 1 or args.reps < 1 or args.threads < 1:
        fail("--rounds, --reps and --threads must be at least 1")
    if args.max_isa:  # before TensorFlow loads, and inherited by gapbench
        os.environ.update(DNNL_MAX_CPU_ISA=args.max_isa, ONEDNN_MAX_CPU_ISA=args.max_isa)
    if args.tensorflow_once:
        TensorFlowConv(args.threads).run(list(MATHS), 1)
        return
    if not os.access(args.gapbench, os.X_OK):
        fail(f"no gapbench at {args.gapbench}: build it (cmake --build build/default "
             "--target gapbench) or pass --gapbench")

    if args.verbose:
        show_primitives(args.gapbench, args.threads)
    tf = TensorFlowConv(args.threads)
    if args.precedence:
        with Precedence():
            measure(args, tf)
    else:
        measure(args, tf)


def measure(args: argparse.Namespace, tf: TensorFlowConv) -> None:
    gb: dict[str, list[float]] = {}
    ref: dict[str, list[float]] = {}
    round_ratios: dict[str, list[float]] = {}
    loads = []
    maths: list[str] = []  # those gapbench runs here (bf16 only where it is native)
    for i in range(args.rounds):
        loads.append(os.getloadavg()[0])
        if i % 2 == 0:
            g = run_gapbench(args.gapbench, args.reps, args.threads)
            maths = maths or [m for m in MATHS if m in g]
            t = tf.run(maths, args.reps)
        else:
            t = tf.run(maths, args.reps)
            g = run_gapbench(args.gapbench, args.reps, args.threads)
        for math in g:
            gb.setdefault(math, []).extend(g[math])
            ref.setdefault(math, []).extend(t[math])
            round_ratios.setdefault(math, []).append(
                statistics.median(g[math]) / statistics.median(t[math]))
    loads.append(os.getloadavg()[0])

    print(f"{ROW} (NHWC in TensorFlow; the primitive's own layout in gapbench)")
    cap = f", oneDNN capped at {args.max_isa}" if args.max_isa else ""
    nice = ", at autogroup nice -20" if args.precedence else ""
    wait = os.environ.get("OMP_WAIT_POLICY", "unset (spin, then sleep)")
    print(f"threads {args.threads} each{cap}{nice}, gapbench's OMP_WAIT_POLICY {wait}, "
          f"{args.rounds} rounds of {args.reps} samples per side, "
          f"interleaved; 1-minute load average {min(loads):.1f}-{max(loads):.1f} "
          f"on {os.cpu_count()} CPUs")
    for math in MATHS:
        if math not in gb:
            print(f"{math}: skipped by gapbench (no native bf16 in oneDNN here{cap})")
            continue
        ratio = statistics.median(gb[math]) / statistics.median(ref[math])
        rr = round_ratios[math]
        print(f"{math}  gapbench    {summary(gb[math])}")
        print(f"{math}  TensorFlow  {summary(ref[math])}")
        print(f"{math}  gapbench/TensorFlow {ratio:.3f} (rounds: {min(rr):.3f}-{max(rr):.3f})")


if __name__ == "__main__":
    main()
