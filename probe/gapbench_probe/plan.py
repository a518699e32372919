"""What the probe runs: gapbench's shapes, per profile, and the names they are written under
(docs/probe.md)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

from gapbench_probe.gapbench_list import listed

FAMILY = "framework"
FRAMEWORKS = ("torch", "tensorflow")  # frameworks.ADAPTERS' names, for --help without numpy
DEVICES = ("cpu", "gpu")
Axes = tuple[tuple[str, str], ...]  # (key, value) as in gapbench's names, in their order
MATH = "math"  # the arithmetic, as gapbench names it: math:<tf32|fp16|bf16>; absent, float32
FP32 = "fp32"
HALF = ("fp16", "bf16")  # the maths whose data a framework holds in 16 bits (TF32 reads float32)
COMPILED = ("mode", "compiled")  # the framework's compiled mode; absent, eager
# The intra-op threads a case runs on, as gapbench's threads family names them: lib_threads:1, or
# lib_threads:all for every CPU online (os.cpu_count(), whatever the process's affinity or quota:
# what a library that ignores both starts). Absent, the framework's own setting.
LIB_THREADS = "lib_threads"
ALL_CPUS = "all"
# Where a name's op is not the adapter's: gapbench's threads family calls one LSTM cell step
# op:lstm_step, which is the lstm op's scope:step.
ADAPTER_OPS = {"lstm_step": "lstm"}


@dataclass(frozen=True)
class Profile:
    name: str
    repetitions: int
    min_time: float  # seconds per repetition, at least


# gapbench's own: quick for a first look and the tests (minutes), full for baselines.
PROFILES = {"quick": Profile("quick", 5, 0.05), "full": Profile("full", 10, 0.5)}


@dataclass(frozen=True)
class Case:
    """One benchmark before a framework and a device are chosen."""

    op: str
    axes: Axes
    devices: tuple[str, ...] = DEVICES

    def axis(self, key: str) -> str:
        return dict(self.axes)[key]

    def number(self, key: str) -> int:
        return int(self.axis(key))

    @property
    def compiled(self) -> bool:
        return COMPILED in self.axes

    @property
    def math(self) -> str:
        return dict(self.axes).get(MATH, FP32)

    @property
    def lib_threads(self) -> int | None:
        """The intra-op threads the case runs on; None where it keeps the framework's setting."""
        threads = dict(self.axes).get(LIB_THREADS)
        if threads is None:
            return None
        return (os.cpu_count() or 1) if threads == ALL_CPUS else int(threads)

    @property
    def adapter_op(self) -> str:
        return ADAPTER_OPS.get(self.op, self.op)

    @property
    def shape(self) -> Case:
        """The same work whatever its arithmetic and threads: one problem (data and reference)
        for all."""
        return Case(self.op, tuple(a for a in self.axes if a[0] not in (MATH, LIB_THREADS)))

    def name(self, framework: str, device: str) -> str:
        axes = "/".join(f"{k}:{v}" for k, v in (("op", self.op), *self.axes))
        return f"{FAMILY}/{framework}/{device}/{axes}/real_time"


def _modes(compiled: bool) -> tuple[Axes, ...]:
    return ((), (COMPILED,)) if compiled else ((),)


# The probe's choice among gapbench's shapes; every size comes from gapbench's list
# (gapbench_benchmarks.txt), in its order.
LOOP_MAX_ROWS = 100000  # sumsq's Python loop over a million rows takes minutes per call
# conv: the classic tiny input, and ResNet's 3x3 layer at 56x56 (n as gapbench's profile has it).
CONV_PICKED = ({"c": "1", "hw": "28"}, {"c": "64", "hw": "56", "r": "3"})
# Beyond float32, the arithmetic each op also runs in on the GPU: what gapbench's cuDNN and cuBLAS
# variants compute in (its math: axis), so that each of their rows has the framework's beside it.
GPU_MATHS = {"conv": ("tf32", "fp16"), "lstm": ("tf32", "fp16"),
             "matmul": ("tf32", "fp16", "bf16")}
STYLES = ("elementwise", "vectorized")  # preprocess's variants, without their _e2e twins
MEMORIES = ("pageable", "pinned")  # transfer's host memories


def shapes(profile: str, family: str, device: str | None = None, **match: str) -> list[Axes]:
    """The distinct axes of `family`'s benchmarks in gapbench's `profile` (on `device`, where
    given) whose axes include `match`, in gapbench's order; `math:` (the arithmetic) is
    gapbench's, not a shape."""
    found: dict[Axes, None] = {}
    for bench in listed(profile):
        axes = tuple(a for a in bench.axes if a[0] != MATH)
        if (bench.family == family and device in (None, bench.device)
                and match.items() <= dict(axes).items()):
            found[axes] = None
    return list(found)


def op_of(axes: Axes) -> str:
    return dict(axes)["op"]


def number(axes: Axes, key: str) -> int:
    return int(dict(axes)[key])


def without_op(axes: Axes) -> Axes:
    return tuple(a for a in axes if a[0] != "op")


def with_gpu_maths(op: str, both: list[Axes], gpu: list[Axes]) -> Iterator[Case]:
    """`op` at each shape of `both` on both devices, then at each other shape of `gpu` on the GPU
    only; each shape of `gpu` also in its GPU_MATHS on the GPU, right after its float32 case, so
    that they share its data."""
    for axes in both + [a for a in gpu if a not in both]:
        yield Case(op, axes, DEVICES if axes in both else ("gpu",))
        if axes in gpu:
            for math in GPU_MATHS[op]:
                yield Case(op, axes + ((MATH, math),), ("gpu",))


def cases(profile: Profile) -> Iterator[Case]:
    """Every case of the profile, in the families' order. Compiled mode costs a compilation per
    shape (torch.compile takes tens of seconds on two cores), so quick compiles only the cases
    where per-call overhead is the point: the smallest dense step and LSTM step. Last, the threads
    family's twins: each of its shapes on one intra-op thread and on every CPU.

    The GPU adds, in each profile, the shapes that judge gapbench's GPU libraries against the
    framework, in every arithmetic: the batch-32 3x3 conv, the profile's LSTMs, and the GEMM
    peak's sizes. They are GPU-only cases: a CPU run never builds their data."""
    mine, full = profile.name, profile.name == "full"
    # sumsq: the profile's rows and full's smallest, so that quick has one the loop finishes.
    smallest = shapes("full", "preprocess", op="sumsq")[0]
    rows = sorted({*shapes(mine, "preprocess", op="sumsq"), smallest},
                  key=lambda axes: number(axes, "rows"))
    for axes in rows:
        for style in STYLES:
            if style == "elementwise" and number(axes, "rows") > LOOP_MAX_ROWS:
                continue
            yield Case("sumsq", (("style", style), *without_op(axes)))
    for axes in shapes(mine, "preprocess", op="image"):
        for style in STYLES:
            yield Case("image", (("style", style), *without_op(axes)))
    convs = [axes for axes in shapes(mine, "conv")
             if any(pick.items() <= dict(axes).items() for pick in CONV_PICKED)]
    # On the GPU, ResNet's layer at full's batch (32), where a GPU has work enough for its speed.
    yield from with_gpu_maths("conv", convs, shapes("full", "conv", **CONV_PICKED[1]))
    # lstm: quick's shapes in both profiles (Keras' classic LSTM(64) on T=100, F=50, and
    # DeepBench's hidden 512 at T=25); a step and the whole sequence of each. On the GPU, every
    # shape of the profile, in each math.
    lstm = shapes("quick", "lstm")
    yield from with_gpu_maths("lstm", lstm, shapes(mine, "lstm"))
    for axes in lstm:
        if full or axes == lstm[0]:
            yield Case("lstm", axes + (COMPILED,))
    # copy: quick's largest host-to-device copy, in both profiles, on the GPU only.
    copies = shapes("quick", "transfer", dir="h2d", mode="sync")
    size = max(number(axes, "bytes") for axes in copies)
    for memory in MEMORIES:
        yield Case("copy", (("dir", "h2d"), ("memory", memory), ("bytes", str(size))),
                   devices=("gpu",))
    # pipeline: quick's stages and variants (none, prefetch, parallel); quick only the stage
    # where producing and consuming cost the same.
    for axes in shapes("quick", "pipeline"):
        if full or dict(axes)["produce_ms"] == dict(axes)["consume_ms"]:
            yield Case("pipeline", axes)
    # On the GPU, the GEMM peak's sizes of the full profile (peak/gemm/gpu: 2048 to 8192) in
    # each math, in both profiles.
    matmuls = [without_op(axes) for axes in shapes(mine, "overhead", op="matmul")]
    yield from with_gpu_maths("matmul", matmuls, shapes("full", "peak", device="gpu"))
    dense = shapes(mine, "overhead", op="dense")
    for axes in dense:
        for mode in _modes(full or axes == dense[0]):
            yield Case("dense", without_op(axes) + mode)
    # threads: gapbench's shapes and thread counts as it lists them (op:conv, op:lstm_step,
    # op:matmul at lib_threads:1 and lib_threads:all), on the CPU, where the threads wait.
    for axes in shapes(mine, "threads", device="cpu"):
        yield Case(op_of(axes), without_op(axes), ("cpu",))
