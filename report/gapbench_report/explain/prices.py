"""explain's prices: the figures of one machine's gapbench run that price each fix a trace's
findings suggest, each with the benchmark it comes from, and whether that machine is the one
traced (explain.rules reads them as diagnose's rules read metrics)."""

from __future__ import annotations

from collections.abc import Sequence

from gapbench_report.core.metrics import crossover, find, pipeline_ideal, preprocess_metrics
from gapbench_report.core.run_model import Run
from gapbench_report.inputs.results import FP32, Benchmark, loaded_runs, require_one_machine
from gapbench_report.inputs.traces import Profile


class Prices:
    """The figures of a gapbench run that price the fixes, each with the benchmark it comes
    from."""

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
