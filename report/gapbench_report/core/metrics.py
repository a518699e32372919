"""Derived figures: the ratios that can be compared across machines, and the machine fingerprint.

Raw times differ between an H100 and a T4 for reasons nobody can fix; what a person can compare
is how each machine does against itself: the GPU/CPU speed-up, the share of the machine's own
measured peak, the pinned/pageable ratio. portable_metrics() names each such figure.
"""

from __future__ import annotations

import math
import os
import re
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from gapbench_report.core import framework
from gapbench_report.core.tables import FLOP_LOOP_WORDS, SGEMM_DRIFT_LIMIT
from gapbench_report.inputs.results import FP32, Benchmark, Results

# Context keys that identify a machine and its software, shown side by side against a baseline.
FINGERPRINT_KEYS = (
    "machine.id", "gpu.name", "gpu.compute_capability", "gpu.sm_count", "gpu.memory_total_bytes",
    "nvidia.driver_release", "cuda.driver_version", "cuda.runtime_version",
    "cublas.version_loaded", "cudnn.version_loaded", "pcie.gen_current", "pcie.width_current",
    "pcie.gen_max", "pcie.width_max", "cpu.model", "cpu.cores", "cpu.memory_total_bytes",
    "openblas.version", "openblas.core", "onednn.version", "gapbench.version", "gapbench.commit",
    "gapbench.tree", "gapbench.profile",
)
# A row's arithmetic (Benchmark.math) in a sentence (labels.math_words).
MATH_WORDS = {"fp32": "float32", "tf32": "TF32", "fp16": "fp16", "bf16": "bf16"}


def number(value: object) -> float | None:
    """A context value as a finite number, or None ("unavailable (...)", "none", "nan", absent):
    a NaN compares false with every limit, so a NaN probe would pass every check."""
    try:
        found = float(str(value))
    except (TypeError, ValueError):
        return None
    return found if math.isfinite(found) else None


def median_or_none(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def find(benchmarks: Iterable[Benchmark], family: str, variant: str, device: str,
         **axes: str) -> list[Benchmark]:
    """The timed benchmarks of one variant whose axes include `axes`."""
    return [b for b in benchmarks
            if b.status == "ok" and b.parsed.family == family and b.parsed.variant == variant
            and b.parsed.device == device
            and all(b.parsed.axes.get(k) == v for k, v in axes.items())]


def largest(benchmarks: list[Benchmark], axis: str) -> Benchmark | None:
    """The one with the largest numeric `axis` (the largest size in a sweep)."""
    sized = [b for b in benchmarks if number(b.parsed.axes.get(axis)) is not None]
    return max(sized, key=lambda b: number(b.parsed.axes[axis])) if sized else None


def single_thread_peak_benchmark(benchmarks: Iterable[Benchmark], kind: str
                                 ) -> Benchmark | None:
    """peak/<kind>/cpu with one thread, at its largest buffer."""
    rows = [b for b in find(benchmarks, "peak", kind, "cpu") if b.parsed.threads in (None, 1)]
    return largest(rows, "mib")


def single_thread_peak(benchmarks: Iterable[Benchmark], kind: str) -> float | None:
    """Memory traffic (bytes/s) of peak/<kind>/cpu with one thread, at its largest buffer."""
    best = single_thread_peak_benchmark(benchmarks, kind)
    return traffic(best) if best else None


def traffic_samples(b: Benchmark) -> tuple[float, ...]:
    """Bytes read plus written per second, per repetition: traffic_bytes_per_second, or
    bytes_per_second where a benchmark has no separate traffic counter (a kernel's bytes are its
    traffic; files from before the counter counted traffic there)."""
    return b.counters.get("traffic_bytes_per_second") or b.counters.get("bytes_per_second", ())


def traffic(b: Benchmark) -> float | None:
    """The median of traffic_samples()."""
    values = traffic_samples(b)
    return statistics.median(values) if values else None


def crossover(xs: list[float], cpu: list[float], gpu: list[float]) -> float | None:
    """The smallest size from which the GPU's time stays below the CPU's, or None if it never
    does. Sizes ascending; times per size."""
    for i in range(len(xs)):
        if all(g < c for c, g in zip(cpu[i:], gpu[i:])):
            return xs[i]
    return None


def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or not denominator:
        return None
    return numerator / denominator


# ---- the pipeline against its ideal ----------------------------------------------------------

# The cores are named the limit of a pipeline's ideal only where they cap it this far below what
# its producers and consumer allow: at a tie (2 producers of 2 ms and a step of 2 ms on 2 cores)
# the stage costs' noise would flip the name from one run to the next.
CORE_MARGIN = 0.05


@dataclass(frozen=True)
class PipelineIdeal:
    """A pipeline benchmark against its ideal, from its counters: rates and bounds in batches/s
    from the medians over its repetitions, each stage cost's range over them."""

    rate: float  # measured
    ideal: float  # gapbench's ideal_items_per_second
    # What each bound allows: "producers" workers / t_produce, "consumer" 1 / t_consume and
    # "cores" the cores over the CPU time of one batch (absent from files before the cores were
    # counted).
    bounds: dict[str, float]
    limit: str  # the bound that limits the ideal, one of bounds'
    cores: int | None
    produce_ms: tuple[float, float]  # min and max over the repetitions, each measured alone
    consume_ms: tuple[float, float]

    @property
    def ratio(self) -> float:
        return self.rate / self.ideal

    @property
    def stages_allow(self) -> float:
        """The ideal were every thread on a core of its own: min(producers, consumer)."""
        return min(self.bounds["producers"], self.bounds["consumer"])

    @property
    def stage_ranges(self) -> str:
        """"produce 4.1–6.7 ms, consume 1.0–1.1 ms": how far the stage costs moved."""
        return ", ".join(f"{stage} {lo:.1f}–{hi:.1f} ms" for stage, (lo, hi) in
                         (("produce", self.produce_ms), ("consume", self.consume_ms)))

    @property
    def stage_spread(self) -> float:
        """The larger of the two stage costs' (max - min) / min over the repetitions."""
        return max((hi - lo) / lo for lo, hi in (self.produce_ms, self.consume_ms))


def pipeline_ideal(b: Benchmark) -> PipelineIdeal | None:
    """`b` against its ideal, and the bound that limits it, as gapbench's ideal counts them
    (fixtures/pipeline.h: ideal_items_per_second): the cores bound the CPU time of a batch,
    t_produce + t_consume, or on the GPU, whose consumer thread sleeps while the device computes,
    t_produce alone. The one place the report decides which bound limits. None for a benchmark
    without its rate, ideal or stage costs."""
    rate, ideal = b.counter("items_per_second"), b.counter("ideal_items_per_second")
    produce = b.counters.get("produce_ms_measured", ())
    consume = b.counters.get("consume_ms_measured", ())
    workers = number(b.parsed.axes.get("workers", "1"))
    if not (rate and ideal and workers and produce and consume) or min(produce + consume) <= 0:
        return None
    t_produce, t_consume = statistics.median(produce) * 1e-3, statistics.median(consume) * 1e-3
    bounds = {"producers": workers / t_produce, "consumer": 1 / t_consume}
    cores = b.counter("cores")
    if cores:
        bounds["cores"] = cores / (t_produce + (t_consume if b.parsed.device == "cpu" else 0.0))
    stage = min(("producers", "consumer"), key=bounds.__getitem__)
    capped = bounds.get("cores", math.inf) < (1 - CORE_MARGIN) * bounds[stage]
    return PipelineIdeal(rate, ideal, bounds, "cores" if capped else stage,
                         round(cores) if cores else None, (min(produce), max(produce)),
                         (min(consume), max(consume)))


# The op of each preprocess shape and the ceiling it is judged against: sumsq only reads,
# image writes four bytes per byte it reads.
PREPROCESS_PEAK = {"sumsq": "read", "image": "triad"}
PREPROCESS_SIZE_AXIS = {"sumsq": "rows", "image": "n"}


def preprocess_metrics(benchmarks: list[Benchmark]) -> dict[str, float | None]:
    """Each variant at its largest size, compared per element (per row or image): the GPU's
    quick profile times its element-wise sumsq, a launch per row, at fewer rows than the rest."""
    out: dict[str, float | None] = {}
    for op, size_axis in PREPROCESS_SIZE_AXIS.items():
        def median(variant: str, device: str, op: str = op, size_axis: str = size_axis):
            b = largest(find(benchmarks, "preprocess", variant, device, op=op), size_axis)
            size = number(b.parsed.axes[size_axis]) if b else None
            return b.median / size if b and b.median is not None and size else None
        vec = largest(find(benchmarks, "preprocess", "vectorized", "cpu", op=op), size_axis)
        out[f"preprocess {op}: CPU element-wise / vectorized time"] = _ratio(
            median("elementwise", "cpu"), median("vectorized", "cpu"))
        out[f"preprocess {op}: GPU element-wise / vectorized time"] = _ratio(
            median("elementwise", "gpu"), median("vectorized", "gpu"))
        out[f"preprocess {op}: CPU vectorized share of peak/{PREPROCESS_PEAK[op]}"] = _ratio(
            traffic(vec) if vec else None,
            single_thread_peak(benchmarks, PREPROCESS_PEAK[op]))
        out[f"preprocess {op}: GPU kernel speed-up over CPU vectorized"] = _ratio(
            median("vectorized", "cpu"), median("vectorized", "gpu"))
        out[f"preprocess {op}: GPU end-to-end speed-up over CPU vectorized"] = _ratio(
            median("vectorized", "cpu"), median("vectorized_e2e", "gpu"))
    return out


def transfer_pair(benchmarks: list[Benchmark], direction: str, mode: str):
    """(bytes, pinned, pageable) at the largest size both were timed, or None."""
    pinned = {b.parsed.axes["bytes"]: b
              for b in find(benchmarks, "transfer", "pinned", "gpu", dir=direction, mode=mode)}
    pageable = {b.parsed.axes["bytes"]: b
                for b in find(benchmarks, "transfer", "pageable", "gpu", dir=direction, mode=mode)}
    common = [s for s in pinned if s in pageable and number(s) is not None]
    if not common:
        return None
    size = max(common, key=number)
    return int(number(size)), pinned[size], pageable[size]


def transfer_metrics(benchmarks: list[Benchmark], context: dict) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    link = number(context.get("pcie.bandwidth_max_gbps"))
    for direction in ("h2d", "d2h"):
        pair = transfer_pair(benchmarks, direction, "sync")
        if pair:
            _, pinned, pageable = pair
            out[f"transfer {direction}: pinned / pageable bandwidth"] = _ratio(
                pinned.counter("bytes_per_second"), pageable.counter("bytes_per_second"))
        fastest = largest(find(benchmarks, "transfer", "pinned", "gpu", dir=direction,
                               mode="async"), "bytes")
        if fastest and link:
            out[f"transfer {direction}: pinned share of the PCIe link"] = _ratio(
                fastest.counter("bytes_per_second"), link * 1e9)
    return out


# A ResNet layer both the CPU and the GPU conv sweeps run, and the libraries that compute it.
SHARE_CONV = {"n": "32", "c": "64", "hw": "56", "k": "64", "r": "3", "stride": "1", "pad": "1"}
CONV_LIBRARIES = {"gpu": ("cudnn",), "cpu": ("onednn", "im2col_blas")}


def gemm_peaks(benchmarks: Iterable[Benchmark]) -> dict[tuple[str, str], Benchmark]:
    """The GEMM ceiling of each (device, math) the run measured: the peak/sgemm (float32) or
    peak/gemm row of that math with the highest FLOP rate, whatever its size."""
    peaks: dict[tuple[str, str], Benchmark] = {}
    for b in benchmarks:
        rate = b.counter("flops") if b.status == "ok" else None
        if b.parsed.family == "peak" and b.parsed.variant in ("sgemm", "gemm") and rate:
            key = (b.parsed.device, b.math)
            if key not in peaks or rate > (peaks[key].counter("flops") or 0.0):
                peaks[key] = b
    return peaks


# ---- the hardware's own compute limits ---------------------------------------------------------

# peak/flops/cpu/isa:<isa>/math:<fp32|bf16>/real_time/threads:<n>: register-resident multiply-add
# loops, no library. Counted as the instructions do it: an FMA lane 2 FLOP, SSE's multiply and add
# 1 each.
CPU_FLOPS_VARIANT = "flops"
CPU_ISA_WORDS = FLOP_LOOP_WORDS  # tables/isa.json, in kernels/flops.h's order


def cpu_flop_peak(benchmarks: Iterable[Benchmark], math: str) -> Benchmark | None:
    """The CPU's physical FLOP peak in `math`: of the peak/flops/cpu rows of that math, the
    fastest (highest `flops`) at the run's all-CPUs thread count (the most threads any such row
    ran); None where the run has none (a file from before the rows, or every ISA skipped)."""
    rows = [b for b in find(benchmarks, "peak", CPU_FLOPS_VARIANT, "cpu")
            if b.math == math and b.counter("flops")]
    if not rows:
        return None
    most = max(b.parsed.threads or 1 for b in rows)
    return max((b for b in rows if (b.parsed.threads or 1) == most),
               key=lambda b: b.counter("flops") or 0.0)


def best(b: Benchmark, key: str = "flops") -> float | None:
    """A ceiling's best repetition: other work on the machine only ever lowers a peak, so its
    best, not its median, is the limit nothing honest passes."""
    values = b.counters.get(key, ())
    return max(values) if values else None


def cpu_flop_bound(benchmarks: Iterable[Benchmark], peak: Benchmark) -> tuple[float, str]:
    """The bound noise cannot lower that a CPU row is held to, and how it was read
    (docs/report.md, rule_above_ceiling)."""
    bound, how = best(peak) or 0.0, "its best repetition"
    threads = peak.parsed.threads or 1
    one = [b for b in find(benchmarks, "peak", CPU_FLOPS_VARIANT, "cpu")
           if b.math == peak.math and (b.parsed.threads or 1) == 1
           and b.parsed.axis("isa") == peak.parsed.axis("isa") and best(b)]
    scaled = best(one[0]) * threads if one else 0.0
    if threads > 1 and scaled > bound:
        bound, how = scaled, f"one CPU's best repetition x {threads}"
    return bound, how


# A peak/flops row skipped because GAPBENCH_MAX_CPU_ISA capped its instruction set away says so:
# "this CPU lacks AVX2 (GAPBENCH_MAX_CPU_ISA=sse41 caps it at sse41)".
CPU_FLOPS_CAP = re.compile(r"GAPBENCH_MAX_CPU_ISA=([a-z0-9_]+) caps it")


def cpu_flop_cap(benchmarks: Iterable[Benchmark]) -> str | None:
    """The instruction set GAPBENCH_MAX_CPU_ISA capped the peak/flops loops at, where it capped
    one away: the peak is then that set's, not the CPU's, and a library the cap does not bind
    (OpenBLAS, unless OPENBLAS_CORETYPE says so too) may pass it honestly."""
    for b in benchmarks:
        if (b.parsed.family == "peak" and b.parsed.variant == CPU_FLOPS_VARIANT
                and (found := CPU_FLOPS_CAP.search(b.skip_reason or ""))):
            return found[1]
    return None


def cpu_peak_words(peak: Benchmark, cap: str | None = None) -> str:
    """"this CPU's float32 AVX2 FMA peak on 2 CPUs", and the cap (cpu_flop_cap) where one
    applied."""
    isa = CPU_ISA_WORDS.get(peak.parsed.axis("isa", ""), peak.parsed.axis("isa", "?"))
    threads = peak.parsed.threads or 1
    capped = f" (GAPBENCH_MAX_CPU_ISA={cap} capped it)" if cap else ""
    return (f"this CPU's {MATH_WORDS.get(peak.math, peak.math)} {isa} peak on {threads} "
            f"CPU{'s' if threads > 1 else ''}{capped}")


# FLOP per SM per clock, dense (no 2:4 sparsity), by compute capability: fp32 on the CUDA cores
# (an FMA is 2 FLOP), tf32, fp16 and bf16 on the tensor cores with float32 accumulation, as
# gapbench's peak/gemm rows compute. None: the math has no tensor-core path on that
# architecture, and cuBLAS computes it otherwise (tf32 as float32; the report then has no
# theoretical figure for it). Sources, each checked against its datasheet's figure in
# report/tests/test_compute_peaks.py:
GPU_FLOP_PER_SM_CLOCK: dict[str, dict[str, int | None]] = {
    # Volta, V100 whitepaper: 64 FP32 lanes per SM; 8 tensor cores of 64 FP16 FMA per clock
    # (V100 SXM2: 80 SMs x 1530 MHz: 15.7 TFLOP/s fp32, 125 fp16).
    "7.0": {"fp32": 128, "tf32": None, "fp16": 1024, "bf16": None},
    # Turing, Turing whitepaper: 64 FP32 lanes; 8 tensor cores of 64 FP16 FMA (T4: 40 SMs x
    # 1590 MHz: 8.1 fp32, 65 fp16).
    "7.5": {"fp32": 128, "tf32": None, "fp16": 1024, "bf16": None},
    # Ampere GA100, A100 whitepaper: 64 FP32 lanes; 4 tensor cores of 256 FP16 FMA, TF32 half
    # that (A100: 108 SMs x 1410 MHz: 19.5 fp32, 156 tf32, 312 fp16 and bf16).
    "8.0": {"fp32": 128, "tf32": 1024, "fp16": 2048, "bf16": 2048},
    # Ampere GA10x, GA102 whitepaper (table 6: 512 dense FP16 FMA per SM): 128 FP32 lanes
    # (A40: 84 SMs x 1740 MHz: 37.4 fp32, 74.8 tf32, 149.7 fp16). GeForce boards run fp16 and
    # bf16 with float32 accumulation at half this rate: an upper bound there.
    "8.6": {"fp32": 256, "tf32": 512, "fp16": 1024, "bf16": 1024},
    # Ada, Ada whitepaper: 128 FP32 lanes; float32-accumulate fp16 and bf16 at 512 (L40: 142 SMs
    # x 2490 MHz: 90.5 fp32, 90.5 tf32, 181 fp16).
    "8.9": {"fp32": 256, "tf32": 256, "fp16": 512, "bf16": 512},
    # Hopper, H100 whitepaper: 128 FP32 lanes; 4 tensor cores of 512 FP16 FMA, TF32 half that
    # (H100 SXM5: 132 SMs: 66.9 fp32 at 1980 MHz; 494.7 tf32 and 989.4 fp16 at 1830 MHz, the
    # whitepaper's boost clock for tensor-core work).
    "9.0": {"fp32": 256, "tf32": 2048, "fp16": 4096, "bf16": 4096},
    # Blackwell B200, HGX B200 datasheet: 128 FP32 lanes; tensor cores twice Hopper's per SM
    # (148 SMs: 75.0 fp32 at 1980 MHz; 2250 fp16 and bf16 dense, 1130 tf32, at its 1860 MHz
    # tensor clock).
    "10.0": {"fp32": 256, "tf32": 4096, "fp16": 8192, "bf16": 8192},
    # Blackwell GB20x (RTX PRO 6000 Blackwell, RTX 50xx), the RTX Blackwell whitepaper: 128 FP32
    # lanes; 1024 fp16 FLOP per SM per clock with float32 accumulation on the professional
    # boards (188 SMs x 2617 MHz: 126 fp32, 504 fp16, 252 tf32), half on GeForce: an upper
    # bound there.
    "12.0": {"fp32": 256, "tf32": 512, "fp16": 1024, "bf16": 1024},
}


@dataclass(frozen=True)
class GpuClock:
    """The SM clock a GPU's theoretical peak is computed at, and where it came from."""

    mhz: float
    source: str  # "clock during the run (gpu.clock_sm_mhz)", or the max clock's words


def gpu_clock(context: dict) -> GpuClock | None:
    """The SM clock during the run (gpu.clock_sm_mhz), else the GPU's maximum
    (gpu.clock_sm_max_mhz: what it may reach, not what it ran at, said so), else None."""
    if (mhz := number(context.get("gpu.clock_sm_mhz"))) and mhz > 0:
        return GpuClock(mhz, "clock during the run (gpu.clock_sm_mhz)")
    if (mhz := number(context.get("gpu.clock_sm_max_mhz"))) and mhz > 0:
        return GpuClock(mhz, "maximum clock (gpu.clock_sm_max_mhz), as the run's was not "
                             "recorded")
    return None


def gpu_theoretical_missing(context: dict) -> list[str]:
    """The facts a GPU theoretical peak needs that this context lacks, in words (none: it can be
    computed)."""
    missing = []
    if str(context.get("gpu.compute_capability", "")).strip() not in GPU_FLOP_PER_SM_CLOCK:
        cc = context.get("gpu.compute_capability")
        missing.append(f"compute capability {cc} not in the table" if cc
                       else "gpu.compute_capability")
    if not number(context.get("gpu.sm_count")):
        missing.append("gpu.sm_count")
    if gpu_clock(context) is None:
        missing.append("gpu.clock_sm_mhz (or gpu.clock_sm_max_mhz)")
    return missing


def gpu_theoretical_flops(context: dict, math: str) -> float | None:
    """The GPU's theoretical FLOP/s in `math` (fp32, tf32, fp16, bf16): SMs x the SM clock
    (gpu_clock: during the run, else the maximum) x GPU_FLOP_PER_SM_CLOCK of its compute
    capability. None where a fact is missing (gpu_theoretical_missing) or the math has no
    tensor-core path there."""
    table = GPU_FLOP_PER_SM_CLOCK.get(str(context.get("gpu.compute_capability", "")).strip())
    per_clock = table.get(math) if table else None
    sms, clock = number(context.get("gpu.sm_count")), gpu_clock(context)
    if not (per_clock and sms and clock):
        return None
    return sms * clock.mhz * 1e6 * per_clock


@dataclass(frozen=True)
class ComputeCeiling:
    """What a row's FLOP rate is read against on its device: the CPU's physical peak of its
    math (peak/flops), else, in files from before it, the GEMM measured beside it."""

    row: Benchmark
    physical: bool
    cap: str | None = None  # cpu_flop_cap of a physical one

    @property
    def rate(self) -> float:
        return self.row.counter("flops") or 0.0

    @property
    def words(self) -> str:
        if self.physical:
            return cpu_peak_words(self.row, self.cap)
        math = MATH_WORDS.get(self.row.math, self.row.math)
        return (f"the {self.row.parsed.device.upper()}'s {math} GEMM peak measured beside it "
                f"({self.row.name})")


def compute_ceiling(benchmarks: Iterable[Benchmark], device: str, math: str
                    ) -> ComputeCeiling | None:
    """The ceiling a `device` row of `math` is read against: on the CPU its physical peak
    (cpu_flop_peak) where the run has one, else (the GPU, or a file from before the peak rows)
    the fastest GEMM of that math (gemm_peaks)."""
    benchmarks = list(benchmarks)
    if device == "cpu" and (peak := cpu_flop_peak(benchmarks, math)):
        return ComputeCeiling(peak, True, cpu_flop_cap(benchmarks))
    gemm = gemm_peaks(benchmarks).get((device, math))
    return ComputeCeiling(gemm, False) if gemm else None


def cpu_library_shares(benchmarks: Iterable[Benchmark], math: str = FP32
                       ) -> dict[str, tuple[float, Benchmark]]:
    """Each CPU library's best share of the CPU's physical peak in `math`: library words ->
    (share, its fastest row). OpenBLAS's SGEMM (peak/sgemm/cpu) is a library row like the
    others. Empty without the physical peak."""
    benchmarks = list(benchmarks)
    peak = cpu_flop_peak(benchmarks, math)
    if not peak:
        return {}
    best: dict[str, tuple[float, Benchmark]] = {}
    for b in benchmarks:
        library = CPU_LIBRARY_OF.get(b.parsed.variant)
        rate = b.counter("flops") if b.status == "ok" else None
        if library and rate and b.parsed.device == "cpu" and b.math == math \
                and (library not in best or rate / peak.counter("flops") > best[library][0]):
            best[library] = (rate / peak.counter("flops"), b)
    return best


# The CPU variants whose FLOPs a library computes, by the library's name.
CPU_LIBRARY_OF = {"sgemm": "OpenBLAS", "openblas": "OpenBLAS", "blas": "OpenBLAS",
                  "im2col_blas": "OpenBLAS", "onednn": "oneDNN"}


def peak_share_metrics(benchmarks: list[Benchmark], context: dict | None = None
                       ) -> dict[str, float | None]:
    """Each machine's share of its own peak, which carries across machines whatever their
    devices. The fastest float32 library conv of one ResNet layer (SHARE_CONV; never a row that
    may have used TF32) over its device's float32 ceiling: on the GPU where the run has one, the
    cuBLAS SGEMM measured beside it; else on the CPU, the CPU's physical float32 peak
    (cpu_flop_peak), or in files from before it OpenBLAS's SGEMM. Beside it, each CPU library's
    best share of that physical peak, and cuBLAS's GEMM of each math over the GPU's theoretical
    peak (gpu_theoretical_flops), where the context has its facts."""
    out: dict[str, float | None] = {}
    for device in ("gpu", "cpu"):
        rows = [b for v in CONV_LIBRARIES[device]
                for b in find(benchmarks, "conv", v, device, **SHARE_CONV)
                if b.math == FP32 and b.counter("flops")]
        ceiling = compute_ceiling(benchmarks, device, FP32)
        if rows and ceiling:
            best = max(b.counter("flops") for b in rows)
            against = ("its CPU's float32 FMA peak" if ceiling.physical
                       else "its device's SGEMM peak")
            out[f"conv n 32 · c 64 · hw 56 · k 64 · r 3, fastest float32 library: share of "
                f"{against}"] = _ratio(best, ceiling.rate)
            break
    for library, (share, _) in cpu_library_shares(benchmarks).items():
        out[f"CPU {library}, best float32 row: share of the CPU's float32 FMA peak"] = share
    for (device, math_), gemm in gemm_peaks(benchmarks).items():
        theory = gpu_theoretical_flops(context or {}, math_) if device == "gpu" else None
        if theory:
            out[f"GPU cuBLAS {MATH_WORDS.get(math_, math_)} GEMM: share of the GPU's "
                f"theoretical peak"] = _ratio(gemm.counter("flops"), theory)
    return out


def portable_metrics(results: Results, files: Sequence[Results] = ()) -> dict[str, float]:
    """Named figures comparable across machines; absent where the run lacks the data. A file is
    judged against its ceilings (judged_benchmarks: its own peak/ rows, or those of the peak
    file it names among `files`)."""
    benchmarks = judged_benchmarks(results, files)
    out = {**preprocess_metrics(benchmarks), **transfer_metrics(benchmarks, results.context),
           **peak_share_metrics(benchmarks, results.context)}
    return {k: v for k, v in out.items() if v is not None}


def run_metrics(runs: list[Results]) -> dict[str, float]:
    """portable_metrics over the files of one run (one per family), each against its ceilings."""
    out: dict[str, float] = {}
    for results in runs:
        for key, value in portable_metrics(results, runs).items():
            out.setdefault(key, value)
    return out


# ---- where a file's ceilings are ---------------------------------------------------------------

# The bench workflow measures peak/ once, to its own file; each family's file names it here.
PEAK_FILE_KEY = "peak.results_file"


def own_peak_rows(results: Results) -> list[Benchmark]:
    return [b for b in results.benchmarks().values() if b.parsed.family == "peak"]


# The facts that must agree between a family's file and its peak file for the ceilings to be
# its run's: the machine, and the caps that change what the machine's libraries run (a peak file
# run with OPENBLAS_CORETYPE forced put an uncapped OpenBLAS at 255% of the hardware's limit).
PEAK_FILE_AGREES = ("machine.id", "onednn.isa_cap", "openblas.coretype")


def named_peak_file(results: Results, files: Sequence[Results] = ()
                    ) -> tuple[Results | None, str]:
    """The peak file `results` names (PEAK_FILE_KEY) among `files`, and "" where it may judge
    it; else None, or the file, with why not in words. The name is a path from the folder of
    `results` (as gapbench's --peak takes it), so only the file at that path is its: another of
    the same name elsewhere is not. A file whose facts of PEAK_FILE_AGREES differ is not its."""
    named = str(results.context.get(PEAK_FILE_KEY, "")).strip()
    if not named:
        return None, f"it has no peak/ rows and its context names no file of them ({PEAK_FILE_KEY})"
    beside = Path(os.path.realpath(results.path.parent / named))
    found = next((r for r in files if r is not results
                  and Path(os.path.realpath(r.path)) == beside), None)
    whose = f"its ceilings' file {named} (context {PEAK_FILE_KEY})"
    if found is None:
        return None, (f"{whose} was not given with it (it is {beside}: pass it too)"
                      if beside.is_file() else f"{whose} is not among the files read, nor "
                      f"beside it ({beside})")
    for key in PEAK_FILE_AGREES:
        mine, its = (str(r.context.get(key, "")).strip() for r in (results, found))
        if mine != its:
            other = "machine's" if key == "machine.id" else "setting's"
            return found, (f"{whose} has {key} {its or 'unset'}, this file {mine or 'unset'}: "
                           f"its ceilings are another {other}, not this run's")
    if not own_peak_rows(found):
        return found, f"{whose} has no peak/ rows"
    return found, ""


def peak_rows(results: Results, files: Sequence[Results] = ()) -> list[Benchmark] | None:
    """The peak/ rows `results` is judged against: its own, where it has any (a file run with
    peak/ beside it); else those of the file its context names (named_peak_file) among `files`;
    None where it has neither: it is read without its ceilings (ceilings_missing)."""
    if own := own_peak_rows(results):
        return own
    peak_file, why = named_peak_file(results, files)
    return own_peak_rows(peak_file) if peak_file and not why else None


def judged_benchmarks(results: Results, files: Sequence[Results] = ()) -> list[Benchmark]:
    """A file's benchmarks with the peak/ rows it is judged against (peak_rows) where they are
    another file's."""
    own = list(results.benchmarks().values())
    rows = peak_rows(results, files) or []
    names = {b.name for b in own}
    return own + [b for b in rows if b.name not in names]


def ceilings_missing(results: Results, files: Sequence[Results] = ()) -> str | None:
    """One line where a file is read without its ceilings (none where it has them, or is no
    family's file): why named_peak_file does not judge it by the file it names, or it has no
    peak/ rows and names none. Its share of peak is then unknown."""
    if peak_rows(results, files) is not None or framework.is_framework_file(results) \
            or not file_families(results):
        return None
    where = results.path.name
    _, why = named_peak_file(results, files)
    return (f"{where} ({file_family(results)}) is read without its ceilings: {why}. Its share "
            "of peak is unknown, and its rows are not checked against the machine's limits.")


# ---- each file's ceilings, and whether they held during its run ----------------------------

# A ceiling measured at the end of a run this far from the one at its start (either way): the
# machine changed speed during the run. Each probe is the fastest run over half a second; on the
# 2-core CI VM the start and end probes of eleven short runs agreed within 21% (most within 7%),
# where a median of five had moved by 45% (one of two vCPUs taken for a moment) in one run of
# three. The limit is tables/stability.json's, which the bench workflow reruns a family past.
STABILITY_DRIFT = SGEMM_DRIFT_LIMIT
CEILINGS = {"SGEMM": ("stability.sgemm_gflops", "GFLOP/s"),
            "read": ("stability.read_gbps", "GB/s")}


def file_families(results: Results) -> list[str]:
    """The families a results file was run for: its benchmarks' families other than peak (one
    for a family's bench run, all of them for a whole run in one file)."""
    families = {b.parsed.family for b in results.benchmarks().values()}
    return sorted(families - {"peak"}) or (["peak"] if families else [])


def file_family(results: Results) -> str:
    return ", ".join(file_families(results))


def ceilings_held(results: Results) -> dict[str, tuple[float, float]]:
    """Ceiling -> (at the start, at the end) of this file's run, where gapbench measured both."""
    return ceilings_held_in(results.context)


def ceilings_held_in(context: dict) -> dict[str, tuple[float, float]]:
    """ceilings_held from a results file's context alone (the bench workflow reads its runs'
    probes before they are one file)."""
    out = {}
    for label, (key, _) in CEILINGS.items():
        start = number(context.get(f"{key}_start"))
        end = number(context.get(f"{key}_end"))
        if start and end:
            out[label] = (start, end)
    return out


# The ceilings that judge whether the machine changed: SGEMM, which follows the cores and their
# clocks. The read probe is shown but not judged: on the CI VM it read 20-30% faster at a run's
# end than at its start in quiet runs (the buffer's pages, freshly allocated at the start, are
# not yet in huge pages), which would call every run changed.
JUDGED_CEILINGS = ("SGEMM",)


def ceiling_drifts(results: Results) -> list[str]:
    """The judged ceilings that moved more than STABILITY_DRIFT during this file's run, in
    words."""
    return [f"{label} {start:g} → {end:g} {CEILINGS[label][1]} ({end / start - 1:+.0%})"
            for label, (start, end) in ceilings_held(results).items()
            if label in JUDGED_CEILINGS and abs(end / start - 1) > STABILITY_DRIFT]


# ---- other work beside a run, and the CPUs' parallel capacity -------------------------------

# Other processes' CPU time during a file's run, in CPUs' worth, from this share of one CPU
# (stability.other_cpus), or the hypervisor's steal from this share of all CPUs' time
# (stability.steal): other work shared the CPUs, and the run's times are slower than the machine
# can do. A quiet 2-vCPU VM's bench workflow read 0.05-0.17 of a CPU and steal 0.5-2.9% per
# family (the workflow's own ctest and Python among it); one busy loop reads about 1.
OTHER_WORK_CPUS = 0.25
OTHER_WORK_STEAL = 0.05
# All threads delivering less than this share of the thread count times one thread's FLOP rate:
# the CPUs are not that many whole cores (two hyperthreads of one, or a core another tenant
# shares).
CAPACITY_SHORT = 0.75
RERUN_KEY = "gapbench.rerun"


@dataclass(frozen=True)
class OtherWork:
    """What a file's run recorded of the work beside it: other processes' CPUs' worth and the
    hypervisor's steal (a fraction of all CPUs' time), each None where not recorded."""

    other_cpus: float | None
    steal: float | None

    @classmethod
    def of(cls, results: Results) -> OtherWork:
        return cls(number(results.context.get("stability.other_cpus")),
                   number(results.context.get("stability.steal")))

    @property
    def seen(self) -> bool:
        return ((self.other_cpus or 0.0) >= OTHER_WORK_CPUS
                or (self.steal or 0.0) >= OTHER_WORK_STEAL)

    @property
    def recorded(self) -> bool:
        return self.other_cpus is not None or self.steal is not None

    @property
    def cpus_words(self) -> str:
        """"0.9 of a CPU"; "" where other processes' time is not recorded."""
        return cpus_worth(self.other_cpus) if self.other_cpus is not None else ""

    @property
    def steal_words(self) -> str:
        return f"steal {self.steal:.0%}" if self.steal is not None else ""

    def words(self) -> str:
        """"0.9 of a CPU, steal 0%", what of it is recorded."""
        return ", ".join(w for w in (self.cpus_words, self.steal_words) if w)


def cpus_worth(value: float, low: float | None = None) -> str:
    """"0.9 of a CPU", "1.4 CPUs"; with `low`, a range: "0.8–1.1 CPUs"."""
    high = f"{value:.1f}"
    shown = high if low is None or f"{low:.1f}" == high else f"{low:.1f}–{high}"
    return f"{shown} of a CPU" if float(high) < 1 else f"{shown} CPUs"


def probe_capacity(results: Results) -> tuple[dict[str, float], int | None]:
    """The CPUs' parallel capacity at this file's run's start and end ({"start": 1.0, "end":
    1.9}): the register FMA loop's GFLOP/s on every CPU online over one thread's
    (stability.fma_*), and that thread count (stability.fma_threads)."""
    out = {}
    for when in ("start", "end"):
        one = number(results.context.get(f"stability.fma_one_gflops_{when}"))
        every = number(results.context.get(f"stability.fma_all_gflops_{when}"))
        if one and every and one > 0:
            out[when] = every / one
    threads = number(results.context.get("stability.fma_threads"))
    return out, int(threads) if threads else None


def peak_capacity(benchmarks: Iterable[Benchmark]) -> tuple[float, int] | None:
    """The CPUs' parallel capacity the peak/ rows show: the float32 FLOP peak at all CPUs
    over one thread's of the same loop, each at its best repetition (other work only lowers a
    peak), with the all-CPUs thread count; None without both rows, or on one CPU."""
    benchmarks = list(benchmarks)
    peak = cpu_flop_peak(benchmarks, FP32)
    threads = (peak.parsed.threads or 1) if peak else 1
    if peak is None or threads < 2:
        return None
    one = [b for b in find(benchmarks, "peak", CPU_FLOPS_VARIANT, "cpu")
           if b.math == FP32 and (b.parsed.threads or 1) == 1
           and b.parsed.axis("isa") == peak.parsed.axis("isa") and best(b)]
    if not one or not best(peak):
        return None
    return best(peak) / best(one[0]), threads


def capacity_short(capacity: float, threads: int) -> bool:
    return threads > 1 and capacity < CAPACITY_SHORT * threads


def unsteady(results: Results) -> list[str]:
    """What makes a file's run no one state of the machine, in words: its judged ceilings that
    moved (ceiling_drifts), and other work beside it (OtherWork.seen). Its peak is then no
    ceiling, and its times are slower than the machine can do."""
    other = OtherWork.of(results)
    return ceiling_drifts(results) + ([f"other work {other.words()}"] if other.seen else [])


def rerun(results: Results) -> str:
    """The bench workflow's line on a family it ran twice (gapbench.rerun), "" where none."""
    return " ".join(str(results.context.get(RERUN_KEY, "")).split())


def file_peaks(results: Results, files: Sequence[Results] = ()
               ) -> dict[str, tuple[float, float] | None]:
    """The ceilings a file is judged against (peak_rows: its own peak/ rows, or its peak
    file's), each as (median, spread): the CPU's physical float32 peak GFLOP/s (cpu_flop_peak),
    OpenBLAS's SGEMM GFLOP/s at its largest n, the one-thread read's GB/s at its largest
    buffer, the GPU's SGEMM GFLOP/s; the spread is (max - min) / median over the
    repetitions."""
    benchmarks = peak_rows(results, files) or []
    physical = cpu_flop_peak(benchmarks, FP32)
    sgemm = largest(find(benchmarks, "peak", "sgemm", "cpu"), "n")
    read = single_thread_peak_benchmark(benchmarks, "read")
    gpu_sgemm = largest(find(benchmarks, "peak", "sgemm", "gpu"), "n")

    def rate(values: tuple[float, ...]) -> tuple[float, float] | None:
        if not values:
            return None
        middle = statistics.median(values)
        return middle / 1e9, (max(values) - min(values)) / middle if middle else 0.0
    return {"CPU float32 peak GFLOP/s": rate(physical.counters.get("flops", ()) if physical
                                            else ()),
            "SGEMM GFLOP/s": rate(sgemm.counters.get("flops", ()) if sgemm else ()),
            "read GB/s": rate(traffic_samples(read) if read else ()),
            "GPU SGEMM GFLOP/s": rate(gpu_sgemm.counters.get("flops", ()) if gpu_sgemm else ())}


# ---- what a chart plots (and a table shows) of one benchmark ---------------------------------

@dataclass(frozen=True)
class Metric:
    """What a chart plots for one benchmark: its time, or a counter scaled to a unit."""

    key: str = "time"  # "time" or a counter name (results.COUNTERS)
    scale: float = 1.0
    label: str = "time per iteration"
    fallback: str | None = None  # the counter to read where a benchmark lacks `key`

    def spread(self, b: Benchmark, iqr: bool = False) -> tuple[float, float, float] | None:
        """(median, low, high) over the repetitions, scaled: low and high are the min and max,
        or with `iqr` the quartiles (robust to the odd slow repetition). None when nothing was
        timed."""
        key = self.key if b.counters.get(self.key) or not self.fallback else self.fallback
        values = sorted(b.samples if key == "time" else b.counters.get(key, ()))
        middle = b.median if key == "time" else b.counter(key)
        if middle is None or b.status != "ok":
            return None
        if not values:
            low = high = middle
        elif iqr:
            low, high = quantile(values, 0.25), quantile(values, 0.75)
        else:
            low, high = values[0], values[-1]
        return middle * self.scale, low * self.scale, high * self.scale


def quantile(ordered: Sequence[float], q: float) -> float:
    """Linear interpolation between the closest ranks (numpy's default), of sorted values."""
    position = q * (len(ordered) - 1)
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)


TIME = Metric()
