"""Why is this machine slower than that one? Two machines' runs set side by side: every work both
ran, whether its two rows can be compared at all, and each difference put down to one of the
machines' ceilings, else to a recorded fact in which they differ (machine_facts, as the fleet
explains an outlier). Pure functions over each side's run_model.Run; render's model shows them
and writes comparison.json. The rules: docs/report.md#against-another-machine."""

from __future__ import annotations

import functools
import math
import re
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from gapbench_report import metrics
from gapbench_report.catalogue import PAGEABLE_E2E, SHARED_WORK
from gapbench_report.labels import (
    axes_label,
    fmt_seconds,
    fmt_si,
    is_unheld,
    math_words,
    unnamed_math,
    variant_label,
    with_threads,
)
from gapbench_report.machine_facts import Difference, Facts, Usual, differences
from gapbench_report.results import FP32, Benchmark, Results
from gapbench_report.run_model import Run
from gapbench_report.same_work import fastest_by

# A work differs when one machine is this much faster, beyond its repetitions' spread (Pair).
DIFFERS = 0.10
# The share of a difference a ceiling explains, ln(ceiling ratio) / ln(speed ratio): "fully" from
# FULLY up to 1 / FULLY, "partly" from PARTLY; beyond 1 / FULLY the ceilings differ far more than
# the work does, which something else then bounds.
FULLY = 0.8
PARTLY = 0.25
# The families compared: peak/ holds the ceilings themselves, framework/ the user's framework
# (set against the libraries per machine, and between machines by versus_framework).
NOT_COMPARED = ("peak", "framework")
# The variants that run a library whose own facts (onednn.*, openblas.*, ...) concern them alone.
LIBRARY_OF = {"onednn": "onednn", "im2col_blas": "openblas", "openblas": "openblas",
              "blas": "openblas", "cudnn": "cudnn", "cudnn_e2e": "cudnn", "cublas": "cublas",
              "cublas_e2e": "cublas", "cublas_graph": "cublas", "cublas_graph_e2e": "cublas"}
LIBRARIES = frozenset(LIBRARY_OF.values())
# Facts that differ between two GPU models by their make, not by how either was set up: between
# an H100 and an H200 they say nothing the ceilings do not (the fleet never compares those).
GPU_MAKE_FACTS = frozenset({"gpu.clock_sm_mhz", "gpu.clock_mem_mhz", "gpu.memory_free_bytes"})
# NVML's memory bus width by exact GPU name, from each GPU's datasheet: for files from before runs
# recorded gpu.memory_bus_width_bits (the committed H100 and H200 among them).
BUS_WIDTH_BITS = {
    "NVIDIA H100 80GB HBM3": 5120, "NVIDIA H100 PCIe": 5120, "NVIDIA H200": 6144,
    "NVIDIA A100-SXM4-40GB": 5120, "NVIDIA A100-SXM4-80GB": 5120, "NVIDIA A100-PCIE-40GB": 5120,
    "NVIDIA A100 80GB PCIe": 5120, "Tesla V100-SXM2-16GB": 4096, "Tesla T4": 256,
    "NVIDIA L4": 192,
}
SHORT_COMMIT = 7
# The fields of a row's label that say how it was configured (cuDNN's "algo:... math:...", the
# fp16 conv's "data:fp16 layout:nhwc"), and their words.
CONFIG_FIELDS = {"algo": "algorithm", "math": "math mode", "data": "data type",
                 "layout": "layout"}
LABEL_FIELD = re.compile(r"(?<![\w])(" + "|".join(CONFIG_FIELDS) + r"):([^\s,;]+)")


# ---- each machine's ceilings -----------------------------------------------------------------

@dataclass(frozen=True)
class Kind:
    """A ceiling: its words, its unit, and whether a higher figure is the faster machine."""

    words: str
    unit: str
    higher_is_faster: bool = True


KINDS = {
    "gpu_memory": Kind("GPU memory bandwidth (theoretical)", "B/s"),
    "pcie": Kind("the PCIe link (theoretical, per direction)", "B/s"),
    "host_read": Kind("host memory bandwidth (one thread's read)", "B/s"),
    "launch": Kind("kernel launch latency", "s", higher_is_faster=False),
    "sync": Kind("synchronize latency", "s", higher_is_faster=False),
    "cores": Kind("CPU core count", "cores"),
}


def gemm_key(device: str, math_: str) -> str:
    return f"gemm:{device}:{math_}"


def kind(key: str) -> Kind:
    """A ceiling's Kind; a GEMM peak's is made from its key ("gemm:gpu:tf32")."""
    if key.startswith("gemm:"):
        _, device, math_ = key.split(":")
        what = ("CPU SGEMM" if math_ == FP32 else f"{math_words(math_)} CPU GEMM peak") \
            if device == "cpu" else f"{math_words(math_)} GPU GEMM peak"
        return Kind(what, "FLOP/s")
    return KINDS[key]


@dataclass(frozen=True)
class Figure:
    """One machine's figure for a ceiling, in its Kind's unit, and where it comes from."""

    value: float
    source: str

    def shown(self, key: str) -> str:
        unit = kind(key).unit
        if unit == "s":
            return fmt_seconds(self.value)
        if unit == "cores":
            return f"{self.value:g}"
        return fmt_si(self.value, unit)


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
    # NVML's memory clock is half the data rate per pin (fixtures/machine.cpp does the same).
    return Figure(2 * clock * 1e6 * bits / 8, f"2 x gpu.clock_mem_max_mhz {clock:g} MHz x "
                                              f"{bits:g} bits / 8 ({source})")


def probed(files: Iterable[Results], ceiling: str) -> float | None:
    """The median of a ceiling's probes at the start and the end of each file's run
    (metrics.ceilings_held: "SGEMM" in GFLOP/s, "read" in GB/s)."""
    values = [v for r in files for v in metrics.ceilings_held(r).get(ceiling, ())]
    return statistics.median(values) if values else None


def ceilings(run: Run) -> dict[str, Figure]:
    """A machine's ceilings, from what its run recorded: its measured GEMM peaks per device and
    math, the host's SGEMM and one-thread read (peak/ rows, else the probes every run with peak/
    makes at its start and end), the GPU memory's and the PCIe link's theoretical bandwidth, a
    kernel launch's and a synchronize's latency, and the cores."""
    out: dict[str, Figure] = {}
    for (device, math_), b in metrics.gemm_peaks(run.benchmarks).items():
        out[gemm_key(device, math_)] = Figure(b.counter("flops"), b.name)
    files = run.library_files
    if gemm_key("cpu", FP32) not in out and (sgemm := probed(files, "SGEMM")):
        out[gemm_key("cpu", FP32)] = Figure(sgemm * 1e9, "stability.sgemm_gflops (the median "
                                                         "of the run's start and end probes)")
    read = metrics.single_thread_peak_benchmark(run.benchmarks, "read")
    if read and metrics.traffic(read):
        out["host_read"] = Figure(metrics.traffic(read), read.name)
    elif gbps := probed(files, "read"):
        out["host_read"] = Figure(gbps * 1e9, "stability.read_gbps (the median of the run's "
                                              "start and end probes)")
    if memory := gpu_memory_bandwidth(run.context):
        out["gpu_memory"] = memory
    if link := metrics.number(run.context.get("pcie.bandwidth_max_gbps")):
        out["pcie"] = Figure(link * 1e9, "pcie.bandwidth_max_gbps")
    for key in ("launch", "sync"):
        found = metrics.find(run.benchmarks, "overhead", "launch", "gpu", what=key)
        if found and found[0].median:
            out[key] = Figure(found[0].median, found[0].name)
    if cores := metrics.number(run.context.get("cpu.cores")):
        out["cores"] = Figure(cores, "cpu.cores")
    return out


COMPUTE = "compute"  # in bounds(): the GEMM peak of the row's own device and math, per side
HOST = gemm_key("cpu", FP32)  # the host CPU's SGEMM: its speed, for what the host does


def bounds(b: Benchmark) -> list[str]:
    """The ceilings that can bound a row, the likeliest first: what the row moves or computes,
    and on which device (docs/report.md#against-another-machine has the table)."""
    family, variant, device = b.parsed.family, b.parsed.variant, b.parsed.device
    if family == "transfer":
        if device == "cpu":
            return ["host_read"]
        return {"device": ["gpu_memory"], "pinned": ["pcie"]}.get(variant, ["host_read", "pcie"])
    if variant.endswith("_e2e") and family in PAGEABLE_E2E:  # host tensors copied in and out
        return ["host_read", "pcie", COMPUTE]
    if is_unheld(b):  # the host's launches are in its time
        return ["launch", COMPUTE]
    if variant.endswith("_e2e"):  # the LSTM steps: launches, and a synchronize at the end
        return ["launch", "sync", COMPUTE]
    if family == "overhead" and variant in ("launch", "startup"):
        return [HOST]
    if family == "pipeline":
        return [HOST, "cores"]
    if family == "preprocess":
        if variant == "vectorized":
            return ["gpu_memory"] if device == "gpu" else ["host_read"]
        return [HOST] if device == "cpu" else ["launch"]
    if variant == "onednn":  # it JITs its own kernels: OpenBLAS's SGEMM is not its ceiling
        return ["cores"]
    return [COMPUTE, "cores"] if device == "cpu" else [COMPUTE]


# ---- the two sides --------------------------------------------------------------------------

@dataclass(frozen=True)
class Side:
    """One machine's run as the comparison reads it: its name, its run and its gapbench commit
    (the context's, else its baseline's provenance; "" where neither says)."""

    label: str
    run: Run
    commit: str = ""

    @classmethod
    def of(cls, label: str, files: Sequence[Results]) -> Side:
        run = Run.of(list(files))
        return cls(label, run, commit_of(run.library_files or run.files))

    @functools.cached_property
    def ceilings(self) -> dict[str, Figure]:
        return ceilings(self.run)

    @functools.cached_property
    def facts(self) -> Facts:
        return Facts.of_context(self.run.context)


def commit_of(files: Iterable[Results]) -> str:
    for r in files:
        commit = str(r.context.get("gapbench.commit") or r.provenance.get("gapbench_commit")
                     or "")
        if re.fullmatch(r"[0-9a-f]{7,40}", commit):
            return commit[:SHORT_COMMIT]
    return ""


# ---- pairs of the same work ---------------------------------------------------------------

def label_fields(label: str) -> dict[str, str]:
    return dict(LABEL_FIELD.findall(label))


def configuration_differs(here: Benchmark, there: Benchmark, commits: tuple[str, str]
                          ) -> list[str]:
    """Why two rows of one name are not the same work, in words; empty when they are: the math
    each may have computed in, the algorithm, math mode, data type and layout their labels name,
    a held against an unheld kernel time, and another gapbench that labelled the row otherwise."""
    reasons = []
    if here.math != there.math:
        reasons.append(f"math: {math_words(here.math)} here, {math_words(there.math)} there")
    mine, theirs = label_fields(here.label), label_fields(there.label)
    for key, words in CONFIG_FIELDS.items():
        if mine.get(key) != theirs.get(key):
            reasons.append(f"{words}: {mine.get(key, 'not named')} here, "
                           f"{theirs.get(key, 'not named')} there")
    if is_unheld(here) != is_unheld(there):
        held = ("unheld", "held") if is_unheld(here) else ("held", "unheld")
        reasons.append(f"{held[0]} here, {held[1]} there (an unheld kernel time includes the "
                       "host's launches)")
    if all(commits) and commits[0] != commits[1] and here.label != there.label:
        labels = "" if reasons else (f": \"{here.label or 'none'}\" here, "
                                     f"\"{there.label or 'none'}\" there")
        reasons.append(f"another gapbench (commit {commits[0]} here, {commits[1]} there) "
                       f"labelled it otherwise{labels}")
    return reasons


@dataclass(frozen=True)
class Pair:
    """The same work on both machines: the same benchmark, or (between devices) each machine's
    fastest row of it."""

    here: Benchmark
    there: Benchmark
    reasons: tuple[str, ...] = ()  # why the rows are not comparable; empty when they are

    @property
    def across_devices(self) -> bool:
        return self.here.parsed.device != self.there.parsed.device

    @property
    def speed(self) -> float:
        """How much faster this machine does the work: the other's time over this one's."""
        return self.there.median / self.here.median

    @property
    def differs(self) -> bool:
        if abs(math.log(self.speed)) <= math.log(1 + DIFFERS):
            return False
        a, b = self.here.samples, self.there.samples
        if len(a) > 1 and len(b) > 1:  # the repetitions' ranges overlap: within their noise
            return max(a) < min(b) or max(b) < min(a)
        return True

    @property
    def words(self) -> str:
        return work_words(self.here, self.there if self.across_devices else None)


def compared(b: Benchmark) -> bool:
    return b.status == "ok" and bool(b.median) and b.parsed.family not in NOT_COMPARED


def pairs(here: Side, there: Side) -> list[Pair]:
    """Every benchmark both machines timed, with why it is not comparable where it is not; and,
    for the work of SHARED_WORK families that each machine did fastest on another device (a GPU
    against a CPU-only machine), each machine's fastest row of it: the GPU's speed-up, whatever
    library each ran (their algorithms and layouts are each machine's own choice there)."""
    commits = (here.commit, there.commit)
    theirs = {b.name: b for b in there.run.benchmarks if compared(b)}
    found = [Pair(b, theirs[b.name], tuple(configuration_differs(b, theirs[b.name], commits)))
             for b in here.run.benchmarks if compared(b) and b.name in theirs]

    def fastest(side: Side) -> dict:
        return fastest_by(b for b in side.run.benchmarks
                          if compared(b) and b.parsed.family in SHARED_WORK)
    mine, other = fastest(here), fastest(there)
    found += [Pair(b, other[key]) for key, b in mine.items()
              if key in other and other[key].parsed.device != b.parsed.device]
    return found


def other_sizes(here: Side, there: Side) -> list[tuple[str, list[str], list[str]]]:
    """Variants both machines ran, in the same math, but at no size in common (each ran its
    profile's sizes): (the variant in words, its sizes here, its sizes there). Not comparable."""
    def groups(side: Side) -> dict[tuple, dict[str, Benchmark]]:
        out: dict[tuple, dict[str, Benchmark]] = {}
        for b in side.run.benchmarks:
            if compared(b):
                p = b.parsed
                key = (p.family, p.variant, p.device, frozenset(p.axes_but_math()), b.math)
                out.setdefault(key, {})[b.name] = b
        return out
    mine, theirs = groups(here), groups(there)
    found = []
    for key, rows in mine.items():
        if key in theirs and not set(rows) & set(theirs[key]):
            first = next(iter(rows.values()))
            found.append((variant_words(first),
                          [axes_label(b.parsed.axes_but_math()) for b in rows.values()],
                          [axes_label(b.parsed.axes_but_math()) for b in theirs[key].values()]))
    return found


# ---- what explains a difference ---------------------------------------------------------------

@dataclass(frozen=True)
class Explanation:
    """The ceiling that explains a difference and how much of it, and the recorded facts in
    which the slower machine differs (each with the machine it is about)."""

    ceiling: str | None = None  # this machine's: a KINDS key or a gemm_key
    here: Figure | None = None
    there: Figure | None = None
    share: float | None = None  # ln(ceiling ratio) / ln(speed ratio)
    # "fully", "partly", "beyond" (the ceilings differ far more than the work), "against" (they
    # differ the other way) or "no"
    how: str = "no"
    facts: tuple[tuple[str, Difference], ...] = ()
    there_ceiling: str | None = None  # the other's, where it differs (another device's GEMM)

    @property
    def other_key(self) -> str | None:
        return self.there_ceiling or self.ceiling

    @property
    def ratio(self) -> float | None:
        """This machine's ceiling over the other's, as a speed: above 1, faster here."""
        if not (self.here and self.there):
            return None
        ratio = self.here.value / self.there.value
        return ratio if kind(self.ceiling).higher_is_faster else 1 / ratio

    @property
    def explained(self) -> bool:
        return self.how in ("fully", "partly")


def share_of(ceiling_ratio: float, speed: float) -> float:
    """ln(ceiling ratio) / ln(speed ratio) (docs/report.md#the-share-a-ceiling-explains)."""
    if abs(math.log(ceiling_ratio)) <= math.log(1 + DIFFERS):
        return 0.0  # ceilings within the noise of each other explain nothing
    return math.log(ceiling_ratio) / math.log(speed)


def how_much(share: float, residual: float) -> str:
    """"fully", "partly", "beyond" or "no" for a share; `residual`, the ceiling ratio over the
    speed ratio, is what the ceiling leaves unexplained: within DIFFERS of 1, that is noise."""
    if FULLY <= share <= 1 / FULLY or (share > 0 and abs(math.log(residual))
                                        <= math.log(1 + DIFFERS)):
        return "fully"
    if share > 1 / FULLY:
        return "beyond"
    if share >= PARTLY:
        return "partly"
    return "against" if share <= -PARTLY else "no"


def explain(pair: Pair, here: Side, there: Side) -> Explanation:
    """The first of the row's bounds that explains the difference fully, else the one that
    explains most of it; else, to say why none does, the nearest that differs far more
    ("beyond"), the other way ("against") or not at all ("no"); with the recorded facts in
    which the slower machine differs, where they concern the row."""
    candidates = []
    for key in [COMPUTE] if pair.across_devices else bounds(pair.here):
        mine_key, theirs_key = key, key
        if key == COMPUTE:
            mine_key = gemm_key(pair.here.parsed.device, pair.here.math)
            theirs_key = gemm_key(pair.there.parsed.device, pair.there.math)
        mine, theirs = here.ceilings.get(mine_key), there.ceilings.get(theirs_key)
        if mine and theirs and mine.value > 0 and theirs.value > 0:
            ratio = Explanation(mine_key, mine, theirs).ratio
            share = share_of(ratio, pair.speed)
            candidates.append(Explanation(mine_key, mine, theirs, share,
                                          how_much(share, ratio / pair.speed), (),
                                          theirs_key if theirs_key != mine_key else None))
    facts = () if pair.across_devices else tuple(facts_for(pair, here, there))
    full = [c for c in candidates if c.how == "fully"]
    partly = sorted((c for c in candidates if c.how == "partly"), key=lambda c: -c.share)
    beyond = sorted((c for c in candidates if c.how == "beyond"), key=lambda c: c.share)
    against = sorted((c for c in candidates if c.how == "against"), key=lambda c: c.share)
    alike = [c for c in candidates if c.how == "no"]
    best = (full or partly or beyond or against or alike or [Explanation()])[0]
    # A ceiling that differs the other way overrules the facts: the machine with the higher
    # ceiling is the slower one at this work, so what made its ceiling higher explains nothing.
    return replace(best, facts=() if best.how == "against" else facts)


def facts_for(pair: Pair, here: Side, there: Side) -> list[tuple[str, Difference]]:
    """The recorded facts in which the slower machine differs from the faster one
    (machine_facts.differences), those that can explain it: about this row (its device's or
    both's; a library's own facts only for that library's rows; no GPU fact that two GPU
    models' makes decide) and about the slower machine (a fact set there and unset on the
    faster one, such as a cap, or set on both; never one only the faster machine has set)."""
    slow, fast = (here, there) if pair.speed < 1 else (there, here)
    found = differences(slow.facts, Usual.of([fast.facts]), device=pair.here.parsed.device)
    makes_differ = (str(here.run.context.get("gpu.name", ""))
                    != str(there.run.context.get("gpu.name", "")))
    library = LIBRARY_OF.get(pair.here.parsed.variant, "")
    kept = []
    for d in found:
        owner = d.key.split(".")[0]
        if (d.device not in ("", pair.here.parsed.device)
                or (owner in LIBRARIES and owner != library)
                or (makes_differ and d.key in GPU_MAKE_FACTS)
                or not d.value):
            continue
        kept.append((slow.label, d))
    return kept


# ---- the comparison ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Work:
    """One pair, judged."""

    pair: Pair
    explanation: Explanation = field(default_factory=Explanation)

    @property
    def cost(self) -> float:
        """How much the difference costs the slower machine: its time over the faster's."""
        return max(self.pair.speed, 1 / self.pair.speed)


@dataclass(frozen=True)
class Comparison:
    """This machine against another: every pair judged, the differing comparable ones ranked by
    what they cost (slower here first), and the variants run at other sizes only."""

    here: Side
    there: Side
    works: tuple[Work, ...]
    sizes: tuple[tuple[str, list[str], list[str]], ...] = ()

    @property
    def slower(self) -> list[Work]:
        return sorted((w for w in self.differing if w.pair.speed < 1), key=lambda w: -w.cost)

    @property
    def faster(self) -> list[Work]:
        return sorted((w for w in self.differing if w.pair.speed > 1), key=lambda w: -w.cost)

    @property
    def differing(self) -> list[Work]:
        return [w for w in self.works if not w.pair.reasons and w.pair.differs]

    @property
    def not_comparable(self) -> list[Work]:
        return [w for w in self.works if w.pair.reasons]

    @property
    def alike(self) -> list[Work]:
        return [w for w in self.works if not w.pair.reasons and not w.pair.differs]


def compare(here: Side, there: Side) -> Comparison:
    works = tuple(Work(p, explain(p, here, there) if not p.reasons and p.differs
                       else Explanation()) for p in pairs(here, there))
    return Comparison(here, there, works, tuple(other_sizes(here, there)))


# ---- in words -------------------------------------------------------------------------------

COPY_WORDS = {"device": "device memory copies", "pinned": "pinned {dir} copies",
              "pageable": "pageable {dir} copies", "memcpy": "host memory copies"}
LAUNCH_WORDS = {"launch": "kernel launches", "launch_sync": "a launch and a synchronize",
                "sync": "a synchronize", "graph": "CUDA graph launches",
                "graph_sync": "a CUDA graph launch and a synchronize"}
STARTUP_WORDS = {"context": "creating a CUDA context", "first_launch": "the first launch",
                 "cublas_handle": "creating a cuBLAS handle",
                 "cudnn_handle": "creating a cuDNN handle",
                 "cudnn_find_conv": "cuDNN's algorithm search"}


def variant_words(b: Benchmark) -> str:
    """"GPU cudnn end-to-end (pageable copies) conv", with its math where not float32."""
    p = b.parsed
    text = f"{p.device.upper()} {variant_label(p.variant, p.family)} {p.family}"
    default = " (library default)" if unnamed_math(b) else ""
    return text if b.math == FP32 else f"{text} in {math_words(b.math)}{default}"


def work_words(b: Benchmark, other: Benchmark | None = None) -> str:
    """A work in words for a verdict: the classic ones by name ("device memory copies (256
    MiB)", "kernel launches"), every other one as its variant and sizes; between devices, the
    work with each machine's fastest way of doing it."""
    p = b.parsed
    axes = p.axes_but_math()
    if other is not None:
        sizes = axes_label(axes)
        return (f"{p.family} ({sizes}) in {math_words(b.math)}: {p.device.upper()} "
                f"{variant_label(p.variant, p.family)} here, {other.parsed.device.upper()} "
                f"{variant_label(other.parsed.variant, other.parsed.family)} there")
    if p.family == "transfer" and p.variant in COPY_WORDS:
        what = COPY_WORDS[p.variant].format(dir=axes.get("dir", ""))
        extra = {k: v for k, v in axes.items() if k == "bytes"}
        mode = f", {axes['mode']}" if p.variant != "device" and "mode" in axes else ""
        return f"{what} ({axes_label(extra)}{mode})"
    if p.family == "overhead" and p.variant == "launch" and axes.get("what") in LAUNCH_WORDS:
        return LAUNCH_WORDS[axes["what"]]
    if p.family == "overhead" and p.variant == "startup" and axes.get("what") in STARTUP_WORDS:
        return STARTUP_WORDS[axes["what"]]
    sizes = axes_label({k: v for k, v in with_threads(p).items() if k != "math"})
    return f"{variant_words(b)} ({sizes})" if sizes else variant_words(b)


def ratio_text(ratio: float) -> str:
    """0.713 -> "0.71x", 431.2 -> "431x", 0.00232 -> "0.0023x"."""
    return f"{ratio:.3g}x" if ratio >= 10 else f"{ratio:.2f}x" if ratio >= 0.1 else \
        f"{ratio:.2g}x"


def ceiling_text(e: Explanation) -> str:
    """"GPU memory bandwidth (theoretical), 3.35 TB/s against 4.92 TB/s"; between devices,
    "CPU SGEMM here, GPU GEMM peak, float32 there: 142 GFLOP/s against 51.3 TFLOP/s"."""
    words = kind(e.ceiling).words
    if e.there_ceiling:
        words = f"{words} here, {kind(e.there_ceiling).words} there:"
    else:
        words += ","
    return f"{words} {e.here.shown(e.ceiling)} against {e.there.shown(e.other_key)}"


def facts_text(facts: Sequence[tuple[str, Difference]], here: str, there: str) -> str:
    """"on sse41, its oneDNN was capped to an older instruction set (onednn.isa_cap SSE41; not
    set here)"."""
    parts = []
    for machine, d in facts:
        where, other = ("here", there) if machine == here else (f"on {machine}", "here")
        parts.append(f"{where}, {d.words} ({d.key} {d.value}; {d.others or 'not set'} "
                     f"{'here' if other == 'here' else 'on ' + other})")
    return "; ".join(parts)


def reading(w: Work, here: str, there: str) -> str:
    """Why a work differs, in words: the ceiling and how much of it it explains, and the
    recorded facts in which the slower machine differs; else that nothing recorded explains
    it (and a ceiling that differs far more, or the other way)."""
    e = w.explanation
    facts = facts_text(e.facts, here, there)
    if e.explained:
        share = "" if e.how == "fully" else f", which explains {e.share:.0%} of it"
        return f"{ceiling_text(e)}{share}" + (f"; {facts}" if facts else "")
    text = facts or "unexplained by the recorded facts"
    if e.how == "beyond":
        return f"{text} (the {kind(e.ceiling).words} differs far more: {ratio_text(e.ratio)})"
    if e.how == "against":
        return (f"{text} (the {kind(e.ceiling).words} differs the other way: "
                f"{e.here.shown(e.ceiling)} against {e.there.shown(e.other_key)})")
    if e.ceiling and not facts:
        return (f"{text} (the {kind(e.ceiling).words} differs by less than {DIFFERS:.0%}: "
                f"{e.here.shown(e.ceiling)} against {e.there.shown(e.other_key)})")
    return text


def item(w: Work, c: Comparison) -> str:
    """"device memory copies (256 MiB) (0.71x: GPU memory bandwidth ...)"."""
    return f"{w.pair.words} ({ratio_text(w.pair.speed)}: " \
           f"{reading(w, c.here.label, c.there.label)})"


VERDICT_ITEMS = 3


def cause(w: Work) -> tuple:
    """What a work's difference is put down to: its ceiling, else the facts cited, else nothing
    (unexplained)."""
    e = w.explanation
    if e.explained:
        return ("ceiling", e.ceiling, e.other_key)
    if e.facts:
        return ("facts", tuple(d.key for _, d in e.facts))
    return ()


def headline(works: Sequence[Work], limit: int = VERDICT_ITEMS) -> tuple[list[Work], int]:
    """The costliest work of each variant (the same variant at other sizes and maths is
    counted, not repeated), at most `limit`, and how many works that leaves unnamed."""
    seen, shown = set(), []
    for w in works:
        p = w.pair.here.parsed
        key = (p.family, p.variant, p.device, w.pair.across_devices)
        if key not in seen and len(shown) < limit:
            seen.add(key)
            shown.append(w)
    return shown, len(works) - len(shown)


def causes(works: Sequence[Work], c: Comparison) -> list[str]:
    """One direction's works as the verdict names them, by cause
    (docs/report.md#the-verdict-the-findings-the-charts)."""
    by_cause: dict[tuple, list[Work]] = {}
    for w in works:
        by_cause.setdefault(cause(w), []).append(w)
    explained = [g for k, g in by_cause.items() if k]
    parts = []
    for group in explained[:VERDICT_ITEMS]:
        more = f"; and {len(group) - 1} more it explains" if len(group) > 1 else ""
        w = group[0]
        parts.append(f"{w.pair.words} ({ratio_text(w.pair.speed)}: "
                     f"{reading(w, c.here.label, c.there.label)}{more})")
    if rest := sum(len(g) for g in explained[VERDICT_ITEMS:]):
        parts.append(f"{rest} more explained otherwise (below)")
    if unexplained := by_cause.get((), []):
        shown, rest = headline(unexplained)
        more = f"; and {rest} more" if rest else ""
        parts.append("unexplained by the recorded facts: " + "; ".join(
            f"{w.pair.words} ({ratio_text(w.pair.speed)})" for w in shown) + more)
    return parts


def verdict_lines(c: Comparison) -> list[tuple[str, list[str]]]:
    """The verdict as (its lead, its items): the works slower here by cause, the costliest cause
    first, each with its ratio, its ceiling's figures or its facts, then those nothing recorded
    explains; the same for the works faster here; or that nothing differs; and how many rows
    were not comparable."""
    lines = []
    if c.slower:
        lines.append((f"Slower here than on {c.there.label}:", causes(c.slower, c)))
    if c.faster:
        lead = "Faster here:" if c.slower else f"Faster here than on {c.there.label}:"
        lines.append((lead, causes(c.faster, c)))
    if not lines and not c.works:
        lines.append((f"This run and {c.there.label} share no work: no benchmark both ran.", []))
    elif not lines:
        lines.append((f"Nothing differs from {c.there.label} by more than {DIFFERS:.0%} in the "
                       f"{len(c.alike)} works both ran.", []))
    if c.not_comparable or c.sizes:
        count = len(c.not_comparable) + len(c.sizes)
        lines.append((f"{count} not comparable (configured otherwise: see the list).", []))
    return lines


def verdict(c: Comparison) -> str:
    """verdict_lines in one line."""
    return " ".join(f"{lead} {'; '.join(items)}." if items else lead
                    for lead, items in verdict_lines(c))


def clause(c: Comparison, name: str) -> str:
    """What the comparison says of one benchmark, for a finding that quotes it; "" where the
    other machine did not run it."""
    w = next((w for w in c.works if w.pair.here.name == name and not w.pair.across_devices),
             None)
    if w is None:
        return ""
    if w.pair.reasons:
        return f"Against {c.there.label}, not comparable: {'; '.join(w.pair.reasons)}."
    if not w.pair.differs:
        return (f"Against {c.there.label}: the same ({ratio_text(w.pair.speed)} its speed "
                "there).")
    return (f"Against {c.there.label}: {ratio_text(w.pair.speed)} its speed there, "
            f"{reading(w, c.here.label, c.there.label)}.")


# ---- comparison.json ----------------------------------------------------------------------

def figure_json(key: str, f: Figure | None) -> dict | None:
    return None if f is None else {"value": f.value, "unit": kind(key).unit, "source": f.source}


def row_json(b: Benchmark) -> dict:
    return {"name": b.name, "seconds": b.median, "math": b.math, "label": b.label,
            "repetitions": len(b.samples)}


def work_json(w: Work, c: Comparison) -> dict:
    p, e = w.pair, w.explanation
    return {
        "work": p.words, "this": row_json(p.here), "baseline": row_json(p.there),
        "speed_ratio": p.speed, "differs": p.differs and not p.reasons,
        "comparable": not p.reasons, "not_comparable_because": list(p.reasons),
        "ceiling": None if e.ceiling is None else {
            "key": e.ceiling, "words": kind(e.ceiling).words,
            "baseline_key": e.other_key, "this": figure_json(e.ceiling, e.here),
            "baseline": figure_json(e.other_key, e.there),
            "ratio": e.ratio},
        "share_explained": e.share, "explained": e.how if p.differs and not p.reasons else None,
        "facts": [{"machine": machine, "key": d.key, "words": d.words, "value": d.value,
                   "other": d.others} for machine, d in e.facts],
        "reading": (reading(w, c.here.label, c.there.label) if p.differs and not p.reasons
                    else None),
    }


def side_json(side: Side) -> dict:
    ctx = side.run.context
    return {"label": side.label, "files": [str(r.path) for r in side.run.files],
            "gapbench_commit": side.commit or None, "gpu": ctx.get("gpu.name"),
            "cpu": ctx.get("cpu.model"),
            "ceilings": {k: figure_json(k, f) | {"words": kind(k).words}
                         for k, f in side.ceilings.items()}}


def document(comparisons: Sequence[Comparison]) -> dict:
    """comparison.json: for scripts and CI, what the page's comparison says, in figures."""
    return {
        "schema": 1,
        "this": side_json(comparisons[0].here) if comparisons else None,
        "rules": "docs/report.md#against-another-machine",
        "comparisons": [{
            "baseline": side_json(c.there), "verdict": verdict(c),
            "works": [work_json(w, c)
                      for w in c.slower + c.faster + c.not_comparable + c.alike],
            "other_sizes": [{"variant": v, "this": here, "baseline": there}
                            for v, here, there in c.sizes],
        } for c in comparisons],
    }
