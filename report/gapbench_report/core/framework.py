"""The framework family beside the libraries: the probe's figures (the user's own PyTorch or
TensorFlow) set against gapbench's for the same work and shape, "your framework's conv takes
1.3x cuDNN's time here".

TWINS is the one mapping from a framework benchmark to the library benchmarks that do the same
work: framework/<fw>/<device>/op:<op>/<axes> -> <family>/<variant>/<device>/<axes>. Where several
library variants qualify, the fastest one timed stands for the libraries. Nothing is paired by
guesswork: an op or a shape without a twin in this table (or not run by gapbench) has no row.

Both sides name their arithmetic alike (math:tf32|fp16|bf16; absent, or math:fp32, float32), and
a pair computes in one: the framework's math:fp16 matmul pairs with cuBLAS's math:fp16 rows only.
A framework computing TF32 where gapbench has no TF32 twin (the dense step; the cuDNN LSTM before
gapbench has one) pairs with its float32 twin, marked as TF32 against float32. What each row
computed in is its Benchmark's `math` (results.row_math, which also reads the files from before
the math axis): a library row that may have used TF32 is never a float32 twin.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from gapbench_report.core.formats import fmt_ratio
from gapbench_report.core.same_work import THREADS_AXIS, fastest_by, work, work_key
from gapbench_report.inputs.results import (
    FP32,
    MATH_AXIS,
    TF32,
    Benchmark,
    Name,
    Results,
    is_framework_file,
)

FAMILY = "framework"
COMPILED = ("mode", "compiled")  # the framework's compiled mode; absent, eager
# gapbench's threads family: the same op on one intra-op thread and on every CPU online
# (lib_threads:1|all), the framework's twins named alike. A row on a set thread count pairs only
# with the threads family's row of that count, and a row without one never with those.
THREADS_FAMILY = "threads"


@dataclass(frozen=True)
class Twin:
    """The library benchmarks that do a framework op's work."""

    family: str
    variants: Mapping[str, tuple[str, ...]] | Callable[[Name], str]  # by device, or from the axes
    keep: tuple[str, ...]  # the framework's axes the library's name carries too
    fixed: tuple[tuple[str, str], ...] = ()  # axes only the library's name has
    only: tuple[tuple[str, str], ...] = ()  # framework axes a pair needs

    def candidates(self, name: Name) -> tuple[str, ...]:
        if callable(self.variants):
            return (self.variants(name),)
        return self.variants.get(name.device, ())

    def axes(self, name: Name) -> dict[str, str]:
        return {**{k: name.axes[k] for k in self.keep if k in name.axes}, **dict(self.fixed)}

    def fits(self, name: Name) -> bool:
        """Whether a framework row may pair here: it has the `only` axes, and a thread count
        exactly where this twin is the threads family."""
        return (all(name.axis(k) == v for k, v in self.only)
                and (THREADS_AXIS in name.axes) == (self.family == THREADS_FAMILY))


# The libraries the frameworks call themselves: oneDNN under TensorFlow's and PyTorch's CPU
# convolutions and LSTMs, cuDNN under both on the GPU, BLAS for matmul and the dense step (kernel
# time on the GPU: what a framework's call costs beyond it is its overhead). An LSTM step pairs
# with oneDNN's and cuDNN's, which pay x_t's projection as a framework's cell does (gapbench's
# blas and cublas steps have it hoisted out). A copy pairs with the synchronous copy of the same
# memory. A GPU matmul also pairs with the GEMM peak's cuBLAS of the same n (peak/gemm in each
# math, peak/sgemm in float32): the sizes above the overhead family's. No twin: a per-row Python
# loop (gapbench's element-wise variant is a C loop), and the input pipeline, whose producer is
# the probe's own (compare its prefetch with its none). The threads family's twins (a conv, one
# LSTM cell step, matmuls on the CPU at lib_threads:1 and all) pair with its oneDNN and OpenBLAS
# rows of the same count.
TWINS: dict[str, tuple[Twin, ...]] = {
    "conv": (Twin("conv", {"cpu": ("onednn", "im2col_blas"), "gpu": ("cudnn",)},
                  ("n", "c", "hw", "k", "r", "stride", "pad")),
             Twin(THREADS_FAMILY, {"cpu": ("onednn",)},
                  ("op", "n", "c", "hw", "k", "r", "stride", "pad", THREADS_AXIS))),
    "lstm": (Twin("lstm", {"cpu": ("onednn",), "gpu": ("cudnn",)},
                  ("scope", "batch", "input", "hidden", "steps")),),
    "lstm_step": (Twin(THREADS_FAMILY, {"cpu": ("onednn",)},
                       ("op", "batch", "input", "hidden", THREADS_AXIS)),),
    "matmul": (Twin("overhead", {"cpu": ("openblas",), "gpu": ("cublas",)}, ("n",),
                    (("op", "matmul"),)),
               Twin("peak", {"gpu": ("gemm", "sgemm")}, ("n",)),
               Twin(THREADS_FAMILY, {"cpu": ("openblas",)}, ("op", "n", THREADS_AXIS))),
    "dense": (Twin("overhead", {"cpu": ("openblas",), "gpu": ("cublas",)}, ("batch",),
                   (("op", "dense"),)),),
    "copy": (Twin("transfer", lambda name: name.axis("memory") or "", ("dir", "bytes"),
                  (("mode", "sync"),)),),
    "sumsq": (Twin("preprocess", {"cpu": ("vectorized",), "gpu": ("vectorized",)},
                   ("rows", "cols"), (("op", "sumsq"),), (("style", "vectorized"),)),),
    "image": (Twin("preprocess", {"cpu": ("vectorized",), "gpu": ("vectorized",)},
                   ("n", "hw", "c"), (("op", "image"),), (("style", "vectorized"),)),),
}


MIXED_MATH = "framework TF32, library float32"


def library_first(runs: Iterable[Results]) -> list[Results]:
    """The run's files with gapbench's own first: the machine's context (its GPU, its findings)
    is theirs; a framework file's context is the framework's view."""
    runs = list(runs)
    return [r for r in runs if not is_framework_file(r)] + [r for r in runs if is_framework_file(r)]


def twin_key(family: str, variant: str, device: str, axes: Mapping[str, str], math: str
             ) -> tuple:
    """A library row's variant and device, and its work (same_work.work_key): `axes` without
    the math axis, `math` the row's (Benchmark.math)."""
    return variant, device, work_key(family, axes, math)


@dataclass(frozen=True)
class Pair:
    """A framework benchmark and the fastest library benchmark of the same work."""

    framework: Benchmark
    library: Benchmark
    version: str = ""  # the framework's, from its file's context
    mixed_math: bool = False  # the framework ran TF32, the library (no TF32 twin) float32

    @property
    def ratio(self) -> float:
        return self.framework.median / self.library.median

    @property
    def name(self) -> str:
        """"tensorflow 2.21.0" (with its compiled mode where it ran in it)."""
        text = f"{self.framework.parsed.variant} {self.version}".strip()
        return f"{text} compiled" if self.compiled else text

    @property
    def compiled(self) -> bool:
        return self.framework.parsed.axis(COMPILED[0]) == COMPILED[1]

    @property
    def op(self) -> str:
        return self.framework.parsed.axis("op") or ""

    @property
    def library_name(self) -> str:
        """"cuBLAS", "cuBLAS TF32", "OpenBLAS, 1 thread": the library's words, with its math
        where not float32 and its threads where the row sets them."""
        words = library_words(self.library.parsed.variant)
        math = self.library.math
        words = words if math == FP32 else f"{words} {math.upper()}"
        threads = self.library.parsed.axis(THREADS_AXIS)
        return words if threads is None else f"{words}, {threads_words(threads)}"

    @property
    def note(self) -> str:
        return MIXED_MATH if self.mixed_math else ""

    @property
    def notes(self) -> str:
        """The math note and what each side times (SIDES), as the page prints them."""
        sides = SIDES.get((self.op, self.framework.parsed.device), "")
        return "; ".join(n for n in (self.note, sides) if n)

    @property
    def math(self) -> str:
        """The arithmetic both sides computed in (the framework's, where they differ)."""
        return TF32 if self.mixed_math else self.library.math


def pairs(benchmarks: Iterable[Benchmark], contexts: Mapping[str, Mapping] | None = None
          ) -> list[Pair]:
    """Every timed framework benchmark that has a timed library twin in the same arithmetic
    (each row's Benchmark.math), in the framework's order; `contexts` maps a framework's name
    to its file's context (framework_contexts), for its version."""
    benchmarks = list(benchmarks)
    fastest = fastest_by((b for b in benchmarks if b.parsed.family != FAMILY),
                         key=lambda b: (b.parsed.variant, b.parsed.device, work(b)))

    def fastest_twin(twins: tuple[Twin, ...], name: Name, math: str) -> Benchmark | None:
        rivals = [fastest.get(twin_key(twin.family, v, name.device, twin.axes(name), math))
                  for twin in twins for v in twin.candidates(name)]
        return min((r for r in rivals if r is not None), key=lambda r: r.median, default=None)

    found = []
    for b in benchmarks:
        op = b.parsed.axis("op") or ""
        twins = TWINS.get(op, ()) if b.parsed.family == FAMILY else ()
        twins = tuple(t for t in twins if t.fits(b.parsed))
        if not twins or not b.median:
            continue
        context = (contexts or {}).get(b.parsed.variant, {})
        best = fastest_twin(twins, b.parsed, b.math)
        mixed = b.math == TF32 and best is None
        if mixed:
            best = fastest_twin(twins, b.parsed, FP32)
        if best is not None:
            found.append(Pair(b, best, str(context.get("framework.version", "")), mixed))
    return found


def framework_contexts(runs: Iterable[Results]) -> dict[str, dict]:
    """Framework name -> its file's context."""
    return {str(r.context["framework.name"]): r.context for r in runs if is_framework_file(r)}


LIBRARY_WORDS = {"onednn": "oneDNN", "im2col_blas": "im2col + OpenBLAS", "cudnn": "cuDNN",
                 "openblas": "OpenBLAS", "cublas": "cuBLAS", "gemm": "cuBLAS",
                 "sgemm": "cuBLAS SGEMM", "pinned": "a pinned cudaMemcpy",
                 "pageable": "a pageable cudaMemcpy", "vectorized": "vectorized C++"}


def library_words(variant: str) -> str:
    return LIBRARY_WORDS.get(variant, variant)


def threads_words(lib_threads: str) -> str:
    """lib_threads:1 -> "1 thread"; lib_threads:all -> "every CPU" (all online, whatever the
    process's affinity or quota)."""
    return {"1": "1 thread", "all": "every CPU"}.get(lib_threads, f"{lib_threads} threads")


NOT_SIZES = ("stride", "pad")  # how a conv walks its input, not how much work it does


def size_of(pair: Pair) -> float:
    """The product of the framework benchmark's numeric shape axes: which shape of an op is
    largest."""
    size = 1.0
    for key, value in pair.framework.parsed.axes.items():
        if value.isdigit() and key not in NOT_SIZES:
            size *= int(value)
    return size


def headlines(pairs: Iterable[Pair]) -> list[str]:
    """Per framework and device, each op at its largest shape (eager, unmarked and on the
    framework's own threads, as it runs by default; the other maths and the threads twins are the
    table's): "tensorflow 2.21.0 on the CPU
    takes, at each op's largest size, this many times the library's time: conv 1.98x (oneDNN),
    ..."."""
    largest: dict[tuple[str, str], dict[str, Pair]] = {}
    for p in pairs:
        if p.compiled or {MATH_AXIS, THREADS_AXIS} & p.framework.parsed.axes.keys():
            continue
        ops = largest.setdefault((p.name, p.framework.parsed.device), {})
        if p.op not in ops or (size_of(p), p.framework.median) > (size_of(ops[p.op]),
                                                                  ops[p.op].framework.median):
            ops[p.op] = p
    return [f"{name} on the {device.upper()} takes, at each op's largest size, this many times "
            "the library's time: " + ", ".join(
                f"{op} {fmt_ratio(p.ratio)} ({p.library_name}{'; ' + p.notes if p.notes else ''})"
                for op, p in ops.items()) for (name, device), ops in largest.items()]


def cuda_version(text: object) -> tuple[int, int] | None:
    """"12.4" -> (12, 4); None for "none", "none (CPU-only build)", absent."""
    match = re.match(r"^(\d+)\.(\d+)", str(text or ""))
    return (int(match[1]), int(match[2])) if match else None


# What each side of a pair times, where it is more than the same op with the framework's call
# around it: said beside the ratio, so that a 10x is not read as the framework's matmul speed.
SIDES = {
    ("dense", "gpu"): "framework: a whole training step through Python, autograd and the "
                      "optimizer; library: that step's kernels alone",
}
