"""Derived figures: the ratios that can be compared across machines, and the machine fingerprint.

Raw times differ between an H100 and a T4 for reasons nobody can fix; what a person can compare
is how each machine does against itself: the GPU/CPU speed-up, the share of the machine's own
measured peak, the pinned/pageable ratio. portable_metrics() names each such figure.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gapbench_report.results import FP32, Benchmark, Results

# Context keys that identify a machine and its software, shown side by side against a baseline.
FINGERPRINT_KEYS = (
    "machine.id", "gpu.name", "gpu.compute_capability", "gpu.sm_count", "gpu.memory_total_bytes",
    "nvidia.driver_release", "cuda.driver_version", "cuda.runtime_version",
    "cublas.version_loaded", "cudnn.version_loaded", "pcie.gen_current", "pcie.width_current",
    "pcie.gen_max", "pcie.width_max", "cpu.model", "cpu.cores", "cpu.memory_total_bytes",
    "openblas.version", "openblas.core", "onednn.version", "gapbench.version", "gapbench.commit",
    "gapbench.tree", "gapbench.profile",
)


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


def cpu_flop_peak(benchmarks: Iterable[Benchmark], math: str) -> Benchmark | None:
    """The CPU's physical FLOP peak of one math: the fastest peak/flops/cpu row of it (highest
    `flops`) at its all-CPUs thread count (the highest `threads:` the run timed); None where the
    run has none."""
    rows = [b for b in find(benchmarks, "peak", "flops", "cpu")
            if b.parsed.axes.get("math") == math and b.counter("flops")]
    if not rows:
        return None
    most = max(b.parsed.threads or 1 for b in rows)
    return max((b for b in rows if (b.parsed.threads or 1) == most),
               key=lambda b: b.counter("flops"))


def peak_share_metrics(benchmarks: list[Benchmark]) -> dict[str, float | None]:
    """Each machine's share of its own peak, which carries across machines whatever their
    devices: the fastest float32 library conv of one ResNet layer (SHARE_CONV; never a row that
    may have used TF32), its FLOP/s over the float32 GEMM ceiling measured beside it
    (gemm_peaks), on the GPU where the run has one, else on the CPU."""
    peaks = gemm_peaks(benchmarks)
    for device in ("gpu", "cpu"):
        rows = [b for v in CONV_LIBRARIES[device]
                for b in find(benchmarks, "conv", v, device, **SHARE_CONV)
                if b.math == FP32 and b.counter("flops")]
        peak = peaks.get((device, FP32))
        if rows and peak:
            best = max(b.counter("flops") for b in rows)
            return {"conv n 32 · c 64 · hw 56 · k 64 · r 3, fastest float32 library: share of "
                    "its device's SGEMM peak": _ratio(best, peak.counter("flops"))}
    return {}


def portable_metrics(results: Results) -> dict[str, float]:
    """Named figures comparable across machines; absent where the run lacks the data."""
    benchmarks = list(results.benchmarks().values())
    out = {**preprocess_metrics(benchmarks), **transfer_metrics(benchmarks, results.context),
           **peak_share_metrics(benchmarks)}
    return {k: v for k, v in out.items() if v is not None}


def run_metrics(runs: list[Results]) -> dict[str, float]:
    """portable_metrics over the files of one run (one per family): each file is judged against
    the peak/ entries measured in that same file."""
    out: dict[str, float] = {}
    for results in runs:
        for key, value in portable_metrics(results).items():
            out.setdefault(key, value)
    return out


# ---- each file's ceilings, and whether they held during its run ----------------------------

# A ceiling measured at the end of a run this far from the one at its start (either way): the
# machine changed speed during the run. Each probe is the fastest run over half a second; on the
# 2-core CI VM the start and end probes of eleven short runs agreed within 21% (most within 7%),
# where a median of five had moved by 45% (one of two vCPUs taken for a moment) in one run of
# three.
STABILITY_DRIFT = 0.25
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
    out = {}
    for label, (key, _) in CEILINGS.items():
        start = number(results.context.get(f"{key}_start"))
        end = number(results.context.get(f"{key}_end"))
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


def file_peaks(results: Results) -> dict[str, tuple[float, float] | None]:
    """This file's own ceilings as its peak/ entries measured them (what its "% of peak" ratios
    are judged against), each as (median, spread): SGEMM GFLOP/s at its largest n, the
    one-thread read's GB/s at its largest buffer, the GPU's SGEMM GFLOP/s; the spread is (max - min) / median over the
    repetitions."""
    benchmarks = list(results.benchmarks().values())
    sgemm = largest(find(benchmarks, "peak", "sgemm", "cpu"), "n")
    read = single_thread_peak_benchmark(benchmarks, "read")
    gpu_sgemm = largest(find(benchmarks, "peak", "sgemm", "gpu"), "n")

    def rate(values: tuple[float, ...]) -> tuple[float, float] | None:
        if not values:
            return None
        middle = statistics.median(values)
        return middle / 1e9, (max(values) - min(values)) / middle if middle else 0.0
    return {"SGEMM GFLOP/s": rate(sgemm.counters.get("flops", ()) if sgemm else ()),
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
