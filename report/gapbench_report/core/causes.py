"""The causes the report names, one entry each. A cause carries what the report knows about it:
gapbench doctor's finding ids and their title, the comparison's ceiling that bounds it (its
words, its unit, which way is faster) and the recorded facts that show it. diagnose takes
doctor's titles from here, versus its ceilings' words and the facts cited with the CPUs
ceiling; a new cause is one entry of CAUSES (a doctor rule's id in fixtures/doctor_rules.cpp
without an entry here fails report/tests/test_causes.py).

The cause a shared VM meets first, fewer CPUs for this process than the machine has (a
container's quota, an affinity), lives here whole: its entry (CPUS), how its figure is read
(usable_cpus) and what set it (fewer_cpus_why). The fleet and the comparison word it from
these."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gapbench_report.core.metrics import number


@dataclass(frozen=True)
class Cause:
    """One cause. `ceiling` is its key in a comparison's ceilings ("" where no ceiling bounds
    it); `ceiling_words` and `unit` say that ceiling, `higher_is_faster` which side of it is the
    faster machine. `doctor` are the ids gapbench doctor writes for it (finding.<id> in a
    results file's context), `title` their title in the diagnosis. `facts` are the recorded
    facts that show it, cited with its ceiling and not on their own."""

    title: str
    doctor: tuple[str, ...] = ()
    ceiling: str = ""
    ceiling_words: str = ""
    unit: str = ""
    higher_is_faster: bool = True
    facts: tuple[str, ...] = ()


CPUS = Cause(
    "Fewer usable CPUs than the machine has", doctor=("fewer_usable_cpus",), ceiling="cpus",
    ceiling_words="CPUs this process may use", unit="cores",
    facts=("cpu.usable_cpus", "cpu.affinity_cpus", "cpu.quota_cpus", "cpu.cores"))

# The CPUs shared, which no ceiling bounds: other processes' time during a run (its words in
# diagnose's rule_other_work and the comparison's), and the CPUs' parallel capacity (all
# threads' FMA rate over one thread's) that the probes at each family run's start and end read.
OTHER_WORK = Cause("Other work shared these CPUs during the run",
                   facts=("stability.other_cpus", "stability.steal"))
PARALLEL_CAPACITY = Cause(
    "These CPUs' parallel capacity", facts=tuple(
        f"stability.fma_{who}_gflops_{when}" for who in ("one", "all")
        for when in ("start", "end")) + ("stability.fma_threads",))

CAUSES = (
    # The machine's ceilings, as a comparison between two machines reads them.
    Cause("GPU memory bandwidth", ceiling="gpu_memory",
          ceiling_words="GPU memory bandwidth (theoretical)", unit="B/s"),
    Cause("PCIe link below its maximum", doctor=("pcie_link_downgraded",), ceiling="pcie",
          ceiling_words="the PCIe link as trained (theoretical, per direction)", unit="B/s"),
    Cause("Host memory bandwidth", ceiling="host_read",
          ceiling_words="host memory bandwidth (one thread's read)", unit="B/s"),
    Cause("Host memory copy bandwidth", ceiling="host_memcpy",
          ceiling_words="host memory copy bandwidth (one thread's memcpy)", unit="B/s"),
    Cause("Kernel launch latency", ceiling="launch", ceiling_words="kernel launch latency",
          unit="s", higher_is_faster=False),
    Cause("Synchronize latency", ceiling="sync", ceiling_words="synchronize latency", unit="s",
          higher_is_faster=False),
    CPUS,
    OTHER_WORK,
    PARALLEL_CAPACITY,
    # What gapbench doctor finds wrong with the machine, the build or the stack.
    Cause("More library threads than usable CPUs", doctor=("threads_oversubscribed",)),
    Cause("CPU library capped to an older instruction set", doctor=("cpu_library_capped",)),
    Cause("A CPU library cap that holds nothing", doctor=("cpu_library_cap_ignored",)),
    Cause("Built without CUDA", doctor=("built_without_cuda",)),
    Cause("No usable GPU", doctor=("no_gpu",)),
    Cause("NVIDIA driver older than the CUDA runtime", doctor=("driver_older_than_runtime",)),
    Cause("cuBLAS loaded is not the one compiled against", doctor=("cublas_mismatch",)),
    Cause("cuDNN loaded is not the one compiled against", doctor=("cudnn_mismatch",)),
    Cause("GPU memory in use by other processes", doctor=("gpu_memory_in_use",)),
    Cause("GPU link and clocks unreadable", doctor=("nvml_unavailable",)),
    Cause("GPU clocks throttled", doctor=("gpu_throttled",)),
    Cause("CPU frequency scaling is on", doctor=("cpu_frequency_scaling",)),
    Cause("Google Benchmark built as debug", doctor=("gbench_debug_library",)),
    Cause("gapbench not built as release", doctor=("gapbench_not_release",)),
    Cause("Other processes compute on the GPU", doctor=("gpu_shared",)),
    Cause("GPU compute prohibited", doctor=("gpu_compute_prohibited",)),
    Cause("This GPU has no tensor cores", doctor=("no_tensor_cores",)),
)

# Doctor's finding id -> its title in the diagnosis.
DOCTOR_TITLES = {rule: c.title for c in CAUSES for rule in c.doctor}
# The comparison's ceiling key -> its cause.
BY_CEILING = {c.ceiling: c for c in CAUSES if c.ceiling}


def usable_cpus(context: Mapping) -> tuple[float, str] | None:
    """The CPUs this process may use, and where the figure comes from: cpu.usable_cpus, else
    (where it is missing, or above what it is the least of) the least of the cores, the
    affinity mask's CPUs and the container's quota that the run recorded; the source says
    which."""
    parts = {key: number(context.get(key))
             for key in ("cpu.cores", "cpu.affinity_cpus", "cpu.quota_cpus")}
    recorded = number(context.get("cpu.usable_cpus"))
    known = {k: v for k, v in parts.items() if v and v > 0}
    least = min(known.values()) if known else None
    recorded = recorded if recorded and recorded > 0 else None
    if recorded is None and least is None:
        return None
    words = ", ".join(f"{k} {v:g}" for k, v in known.items())
    if recorded is not None and (least is None or recorded <= least):
        return recorded, "cpu.usable_cpus" + (f" ({words})" if words else "")
    source = f"the least of ({words})"
    if recorded is not None:  # a figure above its own parts is not believed
        source += f"; cpu.usable_cpus {recorded:g} is more than they allow"
    elif set(known) == {"cpu.cores"}:
        source = "cpu.cores (the run recorded neither its affinity nor a quota)"
    return least, source


def fewer_cpus_why(values: Mapping[str, str]) -> tuple[str, str]:
    """What holds a process below its machine's cores, from its facts, in short and with its
    evidence: ("a container quota", "cgroup v1 cpu.cfs_quota_us 100000 / cpu.cfs_period_us
    100000"), ("its CPU affinity", "CPU 0, as taskset -c 0 sets it"), both joined, or ("", "")
    where neither does."""
    cores = number(values.get("cpu.cores"))
    if cores is None:
        return "", ""
    why, evidence = [], []
    affinity = number(values.get("cpu.affinity_cpus"))
    quota = number(values.get("cpu.quota_cpus"))
    # A limit holds the process only where it is the least of them: a quota of 1.5 CPUs under
    # an affinity of 1 CPU binds nothing.
    least = min(v for v in (cores, affinity, quota) if v is not None)
    if affinity is not None and affinity < cores and affinity <= least:
        why.append("its CPU affinity")
        if cpus := values.get("cpu.affinity_list", ""):
            evidence.append(f"CPU{'s' if affinity != 1 else ''} {cpus}, as taskset -c {cpus} "
                            "sets it")
    if quota is not None and quota < cores and quota <= least:
        why.append("a container quota")
        setting = values.get("cpu.quota_setting", "").split(" in /")[0]
        evidence.append(setting or values.get("cpu.quota_source", ""))
    return " and ".join(why), "; ".join(e for e in evidence if e)
