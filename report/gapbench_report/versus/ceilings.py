"""Each machine's ceilings, as the comparison between two machines reads them
(versus/comparison.py): what its run recorded, each with its spread where it was measured (a
ceiling is firm only where that spread is smaller than the difference it would explain), and
which of them can bound which work. The rules: docs/report.md#each-machines-ceilings."""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gapbench_report.core import causes, metrics, tables
from gapbench_report.core.catalogue import PAGEABLE_E2E
from gapbench_report.core.causes import BY_CEILING
from gapbench_report.core.labels import fmt_seconds, fmt_si, is_unheld, math_words
from gapbench_report.core.run_model import Run
from gapbench_report.inputs.results import FP32, Benchmark, Results

# NVML's memory bus width by exact GPU name, from each GPU's datasheet: for files from before runs
# recorded gpu.memory_bus_width_bits (the committed H100 and H200 among them).
BUS_WIDTH_BITS = {
    "NVIDIA H100 80GB HBM3": 5120, "NVIDIA H100 PCIe": 5120, "NVIDIA H200": 6144,
    "NVIDIA A100-SXM4-40GB": 5120, "NVIDIA A100-SXM4-80GB": 5120, "NVIDIA A100-PCIE-40GB": 5120,
    "NVIDIA A100 80GB PCIe": 5120, "Tesla V100-SXM2-16GB": 4096, "Tesla T4": 256,
    "NVIDIA L4": 192,
}
# A PCIe lane's usable bandwidth per direction by generation, GB/s (after line coding), as C++
# counts it too (tables/pcie.json): for a file that records the link's trained generation and
# width but not its bandwidth.
PCIE_LANE_GBPS = tables.PCIE_LANE_GBPS
# A GPU row is latency-bound, not bandwidth- or compute-bound, when it takes at most this many
# times a kernel launch plus a synchronize on its machine (the committed H100's 4 KiB device copy:
# 3.4 µs against 3.8 + 1.6 µs).
LATENCY_BOUND = 4
# A row is compute-bound at its size, so that a FLOP peak can bound it, when it reaches at least
# this share of its math's peak on both machines.
COMPUTE_BOUND = 0.5


@dataclass(frozen=True)
class Kind:
    """A ceiling: its words, its unit, and whether a higher figure is the faster machine."""

    words: str
    unit: str
    higher_is_faster: bool = True


KINDS = {key: Kind(c.ceiling_words, c.unit, c.higher_is_faster) for key, c in BY_CEILING.items()}


def gemm_key(device: str, math_: str) -> str:
    return f"gemm:{device}:{math_}"


def flops_key(math_: str) -> str:
    """The CPU's physical FLOP peak of a math (peak/flops/cpu)."""
    return f"cpu_flops:{math_}"


def kind(key: str) -> Kind:
    """A ceiling's Kind; a GEMM peak's is made from its key ("gemm:gpu:tf32")."""
    if key.startswith("gemm:"):
        _, device, math_ = key.split(":")
        what = ("CPU SGEMM" if math_ == FP32 else f"{math_words(math_)} CPU GEMM peak") \
            if device == "cpu" else f"{math_words(math_)} GPU GEMM peak"
        return Kind(what, "FLOP/s")
    if key.startswith("cpu_flops:"):
        return Kind(f"CPU FLOP peak (physical, {math_words(key.split(':')[1])})", "FLOP/s")
    return KINDS[key]


@dataclass(frozen=True)
class Figure:
    """One machine's figure for a ceiling, in its Kind's unit, where it comes from, and the range
    its measurements spanned (repetitions, or the start and end probes); low = high = value for a
    figure that is arithmetic, not measured (a theoretical bandwidth, a count)."""

    value: float
    source: str
    low: float | None = None
    high: float | None = None

    @property
    def spread(self) -> float:
        """The highest measurement over the lowest: 1 for an exact figure."""
        if self.low and self.high and self.low > 0:
            return self.high / self.low
        return 1.0

    def shown(self, key: str) -> str:
        unit = kind(key).unit
        if unit == "s":
            return fmt_seconds(self.value)
        if unit == "cores":
            return f"{self.value:g}"
        return fmt_si(self.value, unit)


def measured(value: float, source: str, samples: Sequence[float]) -> Figure:
    """A Figure with the range of its samples (already in the figure's unit)."""
    found = [s for s in samples if s and s > 0]
    return Figure(value, source, min(found), max(found)) if len(found) > 1 else \
        Figure(value, source)


def rate_figure(b: Benchmark, counter: str) -> Figure | None:
    rate = b.counter(counter)
    return measured(rate, b.name, b.counters.get(counter, ())) if rate else None


def gpu_memory_bandwidth(context: dict) -> Figure | None:
    """The GPU memory's theoretical bandwidth (B/s): the run's recorded figure, else the same
    arithmetic over its memory clock and bus width (NVML's, else BUS_WIDTH_BITS by its name)."""
    recorded = metrics.number(context.get("gpu.memory_bandwidth_theoretical_gbps"))
    if recorded:
        return Figure(recorded * 1e9, "gpu.memory_bandwidth_theoretical_gbps")
    clock = metrics.number(context.get("gpu.clock_mem_max_mhz"))
    bits = metrics.number(context.get("gpu.memory_bus_width_bits"))
    source = "gpu.memory_bus_width_bits"
    if not bits:
        bits = BUS_WIDTH_BITS.get(str(context.get("gpu.name", "")))
        source = f"the bus width of the {context.get('gpu.name')} from gapbench's table"
    if not clock or not bits:
        return None
    # NVML's memory clock is half the data rate per pin (fixtures/machine_gpus.cpp does the same).
    return Figure(2 * clock * 1e6 * bits / 8, f"2 x gpu.clock_mem_max_mhz {clock:g} MHz x "
                                              f"{bits:g} bits / 8 ({source})")


def pcie_link(context: dict) -> Figure | None:
    """The PCIe link as it trained, not its maximum: pcie.bandwidth_current_gbps, else its
    current generation's lane bandwidth times its current width."""
    current = metrics.number(context.get("pcie.bandwidth_current_gbps"))
    if current:
        return Figure(current * 1e9, "pcie.bandwidth_current_gbps")
    gen = metrics.number(context.get("pcie.gen_current"))
    width = metrics.number(context.get("pcie.width_current"))
    if gen and width and int(gen) in PCIE_LANE_GBPS:
        return Figure(PCIE_LANE_GBPS[int(gen)] * width * 1e9,
                      f"pcie.gen_current {gen:g} x pcie.width_current {width:g} lanes")
    return None


def usable_cpus(context: dict) -> Figure | None:
    """The CPUs this process may use, as a ceiling's Figure (the cause's own reading:
    causes.usable_cpus)."""
    found = causes.usable_cpus(context)
    return Figure(*found) if found else None


def probed(files: Iterable[Results], ceiling: str) -> list[float]:
    """A ceiling's probes at the start and the end of each file's run (metrics.ceilings_held:
    "SGEMM" in GFLOP/s, "read" in GB/s)."""
    return [v for r in files for v in metrics.ceilings_held(r).get(ceiling, ())]


def probed_figure(files: Iterable[Results], ceiling: str, scale: float, source: str
                  ) -> Figure | None:
    values = [v * scale for v in probed(files, ceiling)]
    if not values:
        return None
    return measured(statistics.median(values), f"{source} (the median of the run's start and "
                                                "end probes)", values)


def ceilings(run: Run) -> dict[str, Figure]:
    """A machine's ceilings, from what its run recorded: its measured GEMM peaks per device and
    math, the CPU's physical FLOP peaks, the host's SGEMM, one-thread read and memcpy (peak/ rows,
    else the probes every run with peak/ makes at its start and end), the GPU memory's theoretical
    bandwidth and the PCIe link's as trained, a kernel launch's and a synchronize's latency, and
    the CPUs this process may use."""
    out: dict[str, Figure] = {}
    for (device, math_), b in metrics.gemm_peaks(run.benchmarks).items():
        if figure := rate_figure(b, "flops"):
            out[gemm_key(device, math_)] = figure
    for math_ in sorted({b.parsed.axes.get("math", "") for b in run.benchmarks
                         if b.parsed.family == "peak" and b.parsed.variant == "flops"} - {""}):
        if (peak := metrics.cpu_flop_peak(run.benchmarks, math_)) and \
                (figure := rate_figure(peak, "flops")):
            out[flops_key(math_)] = figure
    files = run.library_files
    if gemm_key("cpu", FP32) not in out and (
            sgemm := probed_figure(files, "SGEMM", 1e9, "stability.sgemm_gflops")):
        out[gemm_key("cpu", FP32)] = sgemm
    for key, peak in (("host_read", "read"), ("host_memcpy", "memcpy")):
        row = metrics.single_thread_peak_benchmark(run.benchmarks, peak)
        if row and metrics.traffic(row):
            out[key] = measured(metrics.traffic(row), row.name, metrics.traffic_samples(row))
    if "host_read" not in out and (
            read := probed_figure(files, "read", 1e9, "stability.read_gbps")):
        out["host_read"] = read
    if memory := gpu_memory_bandwidth(run.context):
        out["gpu_memory"] = memory
    if link := pcie_link(run.context):
        out["pcie"] = link
    for key in ("launch", "sync"):
        found = metrics.find(run.benchmarks, "overhead", "launch", "gpu", what=key)
        if found and found[0].median:
            out[key] = measured(found[0].median, found[0].name, found[0].samples)
    if cpus := usable_cpus(run.context):
        out["cpus"] = cpus
    return out


COMPUTE = "compute"  # in bounds(): the FLOP peak of the row's own device and math, per side
HOST = gemm_key("cpu", FP32)  # the host CPU's SGEMM: its speed, for what the host does
LATENCY = ("launch", "sync")
# The CPU variants that spread their work over the CPUs this process may use.
THREADED = frozenset({"onednn", "openblas", "blas", "im2col_blas"})


def threaded(b: Benchmark) -> bool:
    return b.parsed.device == "cpu" and (b.parsed.variant in THREADED
                                         or (b.parsed.threads or 1) > 1)


def bounds(b: Benchmark) -> list[str]:
    """The ceilings that can bound a row, the likeliest first: what the row moves or computes,
    and on which device (docs/report.md#which-ceiling-bounds-which-work has the table). The
    latency of a small GPU row and the compute-bound test of a FLOP peak depend on both
    machines' figures: versus.comparison.explain applies them."""
    family, variant, device = b.parsed.family, b.parsed.variant, b.parsed.device
    first = ["cpus"] if threaded(b) else []
    if family == "transfer":
        if device == "cpu":
            return ["host_memcpy"]
        return {"device": ["gpu_memory"], "pinned": ["pcie"]}.get(variant, ["host_memcpy",
                                                                            "pcie"])
    if variant.endswith("_e2e") and family in PAGEABLE_E2E:  # host tensors copied in and out
        return ["host_memcpy", "pcie", COMPUTE]
    if is_unheld(b):  # the host's launches are in its time
        return ["launch", COMPUTE]
    if variant.endswith("_e2e"):  # the LSTM steps: launches, and a synchronize at the end
        return ["launch", "sync", COMPUTE]
    if family == "overhead" and variant in ("launch", "startup"):
        return [HOST]
    if family == "pipeline":
        return [HOST, "cpus"]
    if family == "preprocess":
        if variant == "vectorized":
            return ["gpu_memory"] if device == "gpu" else ["host_read"]
        return [HOST] if device == "cpu" else ["launch"]
    return [*first, COMPUTE]  # oneDNN's: the physical peak only (versus.comparison.compute_keys)
