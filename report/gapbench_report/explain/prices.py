"""explain's prices: the figures of one machine's gapbench run that price each fix a trace's
findings suggest, each with the benchmark it comes from, and whether that machine is the one
traced (explain.rules reads them as diagnose's rules read metrics)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gapbench_report.core.labels import fmt_seconds, mib, pct
from gapbench_report.core.metrics import crossover, find, pipeline_ideal, preprocess_metrics
from gapbench_report.core.run_model import Run
from gapbench_report.inputs.results import FP32, Benchmark, loaded_runs, require_one_machine
from gapbench_report.inputs.traces import Profile


def ms(seconds: float) -> str:
    return fmt_seconds(seconds) if seconds > 0 else "0 s"


@dataclass(frozen=True)
class Price:
    """What a fix is worth on the machine priced: the seconds a step it saves, and the
    measurement that says so."""

    saving: float
    basis: str


def priced(price: Price | None, unpriced: str) -> tuple[float | None, str]:
    """A finding's (saving, basis): its price's, else no saving and `unpriced`, the trace's own
    figure it rests on."""
    return (price.saving, price.basis) if price else (None, unpriced)


@dataclass(frozen=True)
class InputPrice(Price):
    step: float  # the step's time with its input overlapped, as measured here
    workers: int
    cores: int
    limit: str  # what bounds it then: "producers", "step" or "cores"


@dataclass(frozen=True)
class CopyPrice(Price):
    expected: float  # the copies' time from pinned memory
    pinned: float  # B/s
    pageable: float  # B/s


@dataclass(frozen=True)
class GraphPrice(Price):
    per_kernel: float  # a short kernel's time replayed from a graph
    graph_kernel: float  # a graph's cost per kernel, as measured here


class Prices:
    """The figures of a gapbench run that price the fixes, each with the benchmark it comes
    from, and each fix's price from them (the methods that return a Price): one place says what
    each of explain's fixes is worth here."""

    def __init__(self, run: Run, label: str):
        self.run, self.label = run, label
        self.benchmarks = run.benchmarks
        ctx = run.context
        self.machine = str(ctx.get("machine.id", ""))
        self.host = ctx.get("host_name")
        self.gpu = ctx.get("gpu.name") if ctx.get("gpu.status") == "ok" else None

    def _median(self, family, variant, device, **axes) -> Benchmark | None:
        found = find(self.benchmarks, family, variant, device, **axes)
        return found[0] if found else None

    def transfer(self, direction: str, size: float):
        """(pinned B/s, pageable B/s, bytes, pinned benchmark) at the measured size nearest a
        copy of `size` bytes: pinned async (the copy engine), pageable sync (staged)."""
        pinned = {int(b.parsed.axes["bytes"]): b for b in find(
            self.benchmarks, "transfer", "pinned", "gpu", dir=direction, mode="async")}
        pageable = {int(b.parsed.axes["bytes"]): b for b in find(
            self.benchmarks, "transfer", "pageable", "gpu", dir=direction, mode="sync")}
        sizes = [s for s in pinned if s in pageable and pinned[s].counter("bytes_per_second")
                 and pageable[s].counter("bytes_per_second")]
        if not sizes:
            return None
        at = min(sizes, key=lambda s: abs(s - size) / s)
        return (pinned[at].counter("bytes_per_second"), pageable[at].counter("bytes_per_second"),
                at, pinned[at])

    def launch(self, what: str) -> Benchmark | None:
        b = self._median("overhead", "launch", "gpu", what=what)
        return b if b and b.median else None

    def matmuls(self) -> tuple[dict[int, Benchmark], dict[int, Benchmark]]:
        """OpenBLAS and cuBLAS end to end, float32 (no math axis), by n."""
        cpu = {int(b.parsed.axes["n"]): b for b in find(
            self.benchmarks, "overhead", "openblas", "cpu", op="matmul") if b.median}
        gpu = {int(b.parsed.axes["n"]): b for b in find(
            self.benchmarks, "overhead", "cublas_e2e", "gpu", op="matmul")
            if b.median and "math" not in b.parsed.axes}
        return cpu, gpu

    def crossover(self) -> tuple[int, bool] | None:
        """(n, True): the GPU end to end beats the CPU from n on; (n, False): it never did, up
        to the largest n measured."""
        cpu, gpu = self.matmuls()
        sizes = sorted(set(cpu) & set(gpu))
        if len(sizes) < 2:
            return None
        at = crossover(sizes, [cpu[n].median for n in sizes], [gpu[n].median for n in sizes])
        return (int(at), True) if at is not None else (sizes[-1], False)

    def cpu_matmul_seconds(self, n: float, flops: float) -> tuple[float, Benchmark] | None:
        """OpenBLAS's time for `flops` of a matmul of side about n, scaled from the measured size
        nearest it by the flops."""
        cpu, _ = self.matmuls()
        if not cpu:
            return None
        at = min(cpu, key=lambda s: abs(s - n))
        return cpu[at].median * flops / (2.0 * at**3), cpu[at]

    def tf32_gain(self) -> tuple[float, Benchmark, Benchmark] | None:
        """cuBLAS float32 time over TF32 time at the largest n both measured."""
        for family, variant, kw in (("overhead", "cublas", {"op": "matmul"}),
                                    ("peak", "gemm", {})):
            fp32 = {b.parsed.axes["n"]: b for b in find(self.benchmarks, family, variant, "gpu",
                                                          **kw)
                    if b.median and b.math == FP32}
            tf32 = {b.parsed.axes["n"]: b for b in find(self.benchmarks, family, variant, "gpu",
                                                          math="tf32", **kw) if b.median}
            common = [n for n in fp32 if n in tf32]
            if common:
                n = max(common, key=int)
                return fp32[n].median / tf32[n].median, fp32[n], tf32[n]
        return None

    def pipelines(self, device: str) -> list[tuple[Benchmark, float, int, int]]:
        """Each prefetch and parallel benchmark on `device` with its measured share of its ideal
        (at most 1), its workers and the cores it counted."""
        out = []
        for variant in ("prefetch", "parallel"):
            for b in find(self.benchmarks, "pipeline", variant, device):
                ideal = pipeline_ideal(b)
                if ideal and ideal.cores:
                    workers = int(b.parsed.axes.get("workers", "1"))
                    out.append((b, min(1.0, ideal.ratio), workers, ideal.cores))
        return out

    def dense(self, device: str) -> tuple[Benchmark, Benchmark] | None:
        """The dense training step at its smallest and largest batch (samples/s)."""
        variant = "openblas" if device == "cpu" else "cublas_e2e"
        rows = [b for b in find(self.benchmarks, "overhead", variant, device, op="dense")
                if b.counter("items_per_second")]
        if len(rows) < 2:
            return None
        rows.sort(key=lambda b: int(b.parsed.axes["batch"]))
        return rows[0], rows[-1]

    def elementwise(self, device: str) -> float | None:
        ratios = [v for k, v in preprocess_metrics(self.benchmarks).items()
                  if f"{device.upper()} element-wise / vectorized" in k and v]
        return max(ratios) if ratios else None

    # ---- each fix's price ------------------------------------------------------------------

    def overlapped_input(self, device: str, input_seconds: float, rest_seconds: float,
                         step_seconds: float, on_device: bool) -> InputPrice | None:
        """A step that waits `input_seconds` for its input, with its input overlapped:
        gapbench's ideal with the user's stage costs and this machine's cores (the CPU time of a
        step: the input, and on the CPU the step's own work), at the share of it gapbench
        measured the pipeline reaching here; the best of its prefetch and parallel pipelines."""
        measured = self.pipelines(device) or self.pipelines("cpu")
        if not measured:
            return None
        cpu_time = input_seconds + (0.0 if on_device else rest_seconds)
        best = None
        for b, efficiency, workers, cores in measured:
            bounds = {"producers": input_seconds / workers, "step": rest_seconds,
                      "cores": cpu_time / cores}
            limit = max(bounds, key=bounds.get)
            step = bounds[limit] / efficiency
            if best is None or step < best[0]:
                best = (step, b, efficiency, workers, cores, limit)
        step, b, efficiency, workers, cores, limit = best
        return InputPrice(max(0.0, step_seconds - step),
                          f"gapbench's {b.parsed.variant} pipeline ({workers} producer"
                          f"{'s' if workers > 1 else ''}) reached {pct(efficiency)} of its ideal "
                          f"on this machine's {cores} cores ({b.name})",
                          step, workers, cores, limit)

    def pinned_copies(self, direction: str, total_bytes: float, count: float,
                      seconds: float) -> CopyPrice | None:
        """`count` copies of `total_bytes` a step from pageable memory, taking `seconds`, made
        from pinned memory at the rate gapbench measured nearest their size."""
        rates = self.transfer(direction, total_bytes / max(count, 1))
        if not rates:
            return None
        pinned, pageable, at, bench = rates
        expected = total_bytes / pinned
        return CopyPrice(max(0.0, seconds - expected),
                         f"gapbench's pinned {direction.upper()} at {mib(at)}: "
                         f"{pinned / 1e9:.1f} GB/s ({bench.name})", expected, pinned, pageable)

    def fewer_syncs(self, calls: float, lost: float) -> Price | None:
        """`calls` synchronisations a step, which the trace shows costing `lost`, gone: at least
        what each costs here."""
        floor = self.launch("sync")
        if not floor:
            return None
        at_least = calls * floor.median
        return Price(max(lost, at_least),
                     f"each synchronisation costs at least {ms(floor.median)} here "
                     f"({floor.name}): {calls:g} of them at least {ms(at_least)}")

    def vectorized(self, device: str, seconds: float) -> Price | None:
        """`seconds` a step of a Python loop written as whole-tensor operations: gapbench's
        element-wise loops against one vectorized pass on this device."""
        ratio = self.elementwise(device)
        if not ratio:
            return None
        return Price(seconds * (1 - 1 / ratio),
                     f"gapbench's element-wise loops took {ratio:.0f}x the time of one "
                     f"vectorized pass here (preprocess, {device.upper()})")

    def graph_replay(self, lost: float, short_kernels: float,
                     short_kernel_seconds: float) -> GraphPrice | None:
        """Short kernels replayed from a CUDA graph: they follow each other at the graph's cost
        per kernel (or their own time, if longer); the waits between them (`lost`) go, and each
        costs that."""
        launch, graph = self.launch("launch"), self.launch("graph")
        if not (launch and graph):
            return None
        per_kernel = max(short_kernel_seconds, graph.median)
        return GraphPrice(max(0.0, lost - short_kernels * (per_kernel - short_kernel_seconds)),
                          f"a kernel replayed from a CUDA graph costs {ms(graph.median)} here "
                          f"against {ms(launch.median)} launched ({graph.name})",
                          per_kernel, graph.median)

    def matmuls_on_the_cpu(self, small) -> Price | None:
        """The trace's GPU matmuls below the crossover (traces' matmuls: per_step, gpu_seconds,
        n, flops) done by OpenBLAS here instead: its time scaled by their flops."""
        total, reference = 0.0, None
        for m in small:
            cpu = self.cpu_matmul_seconds(m.n, m.flops)
            if cpu:
                seconds, reference = cpu
                total += m.per_step * max(0.0, m.gpu_seconds - seconds)
        if reference is None:
            return None
        return Price(total, f"OpenBLAS's time at n = {reference.parsed.axes['n']} scaled by "
                            f"flops ({reference.name}), against the trace's GPU time")

    def tf32(self, fp32_seconds: float) -> Price | None:
        """`fp32_seconds` a step of float32 kernels in TF32, at cuBLAS's gain measured here."""
        gain = self.tf32_gain()
        if not gain:
            return None
        ratio, fp32, fast = gain
        return Price(fp32_seconds * (1 - 1 / ratio),
                     f"cuBLAS TF32 ran {ratio:.1f}x float32's speed here at n = "
                     f"{fp32.parsed.axes['n']} ({fast.name})")

    def bigger_batch(self, device: str, step_seconds: float) -> Price | None:
        """A step at a bigger batch: what the dense step keeps of its samples/s at its smallest
        batch against its largest (a lower bound for a batch smaller still)."""
        dense = self.dense(device)
        if not dense:
            return None
        small, big = dense
        kept = small.counter("items_per_second") / big.counter("items_per_second")
        return Price(step_seconds * (1 - kept),
                     f"gapbench's dense step did {small.counter('items_per_second'):,.0f} "
                     f"samples/s at batch {small.parsed.axes['batch']} and "
                     f"{big.counter('items_per_second'):,.0f} at {big.parsed.axes['batch']} "
                     f"here: a lower bound, as your batch is smaller still ({big.name})")


# ---- the machine the results come from ----------------------------------------------------------

def load_prices(paths: Sequence[str]) -> Prices | None:
    """gapbench's results, one machine's: files or folders (one run). Results of several machines
    are refused with one line."""
    if not paths:
        return None
    loaded = [r for run in loaded_runs(paths) for r in run]  # each file parsed once
    files = [r.path for r in loaded]
    require_one_machine(loaded, "the --results files", "give one machine's results")
    label = ", ".join(str(f) for f in files[:3]) + (f" (+{len(files) - 3} more)"
                                                     if len(files) > 3 else "")
    return Prices(Run.of(loaded), label)


def _gpu_key(name: str) -> str:
    return " ".join(name.lower().replace("nvidia", "").split())


def machine_note(profile: Profile, prices: Prices | None) -> str:
    if prices is None:
        return ("No --results: the findings are ranked by the time the trace shows them costing; "
                "each names the gapbench family whose figures would price its fix (run them on "
                "this machine: cmake --workflow --preset bench).")
    who = f"machine.id {prices.machine}, host {prices.host or 'unknown'}"
    differ = []
    if profile.host_name and prices.host and profile.host_name != prices.host:
        differ.append(f"the trace's host is {profile.host_name}, the results' {prices.host}")
    if profile.gpus and prices.gpu and not any(_gpu_key(g) == _gpu_key(prices.gpu)
                                               for g in profile.gpus):
        differ.append(f"the trace's GPU is {', '.join(profile.gpus)}, the results' {prices.gpu}")
    if profile.gpus and not prices.gpu:
        differ.append(f"the trace ran on {', '.join(profile.gpus)}; the results' machine had no "
                      "usable GPU")
    if differ:
        return (f"The results come from another machine ({who}): {'; '.join(differ)}. The "
                "savings are what each fix would be worth on that machine, not on the one traced.")
    if not profile.host_name:
        return (f"Priced with gapbench's results ({who}); the trace does not name its host, so "
                "whether they are the traced machine's is not known.")
    return f"Priced with gapbench's results of this machine ({who})."
