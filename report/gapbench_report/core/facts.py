"""The facts that can explain why one machine is slower than another at the same work, as each
run recorded them (doctor's facts and the run context's, and the load average the run started
under), and which of them differ. The fleet report explains each slower run with them (one run
against the rest of its hardware group: fleet.judge); differences() is a function of the facts
alone, so two machines' results are set against each other the same way
(differences(Facts.of_context(a), Usual.of([Facts.of_context(b)]))."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from gapbench_report.core.causes import fewer_cpus_why, usable_cpus
from gapbench_report.core.metrics import median_or_none, number

LOAD = "load_avg"  # the run context's [1, 5, 15]-minute load averages; the first is the fact
# The CPUs this process may use: the least of the machine's cores, its affinity and its cgroup's
# CPU quota (doctor's cpu.* facts); what set it is read from the others, WHY_FEWER_CPUS.
USABLE_CPUS = "cpu.usable_cpus"
WHY_FEWER_CPUS = ("cpu.cores", "cpu.affinity_cpus", "cpu.affinity_list", "cpu.quota_cpus",
                  "cpu.quota_source", "cpu.quota_setting")

# The facts that explain a slower run, in the order they are cited: (key, the device whose
# benchmarks it explains ("" both), how it differs ("value", or "lower"/"higher" for a number
# that is worse that way), the words for it).
EXPLAINING = (
    # First: fewer CPUs for the process explains a CPU slowdown before the libraries' own facts,
    # which follow from it (OpenBLAS sizes its pool by the affinity).
    (USABLE_CPUS, "cpu", "lower", "this process may use fewer CPUs"),
    # How gapbench itself was built: a Debug build is slower at everything its own code times.
    ("gapbench.build_type", "", "value", "gapbench was built otherwise"),
    ("gapbench.compiler", "", "value", "gapbench was built by another compiler"),
    ("onednn.isa_cap", "cpu", "value", "its oneDNN was capped to an older instruction set"),
    ("openblas.coretype", "cpu", "value", "its OpenBLAS was forced to another CPU's kernels"),
    ("openblas.core", "cpu", "value", "its OpenBLAS ran another CPU's kernels"),
    ("openblas.version", "cpu", "value", "another OpenBLAS version"),
    ("onednn.version", "cpu", "value", "another oneDNN version"),
    ("pcie.gen_current", "gpu", "lower", "its link trained at a lower PCIe generation"),
    ("pcie.width_current", "gpu", "lower", "its link trained narrower"),
    ("gpu.throttle_reasons", "gpu", "value", "its GPU was throttled"),
    ("gpu.clock_sm_mhz", "gpu", "lower", "its GPU ran at a lower clock"),
    ("gpu.clock_mem_mhz", "gpu", "lower", "its GPU memory ran at a lower clock"),
    (LOAD, "", "higher", "other work loaded its cores"),
    ("cpu.governor", "cpu", "value", "another CPU frequency governor"),
    ("cpu.frequency_scaling", "cpu", "value", "other CPU frequency scaling"),
    ("openblas.threads", "cpu", "value", "OpenBLAS used another number of threads"),
    ("onednn.threads", "cpu", "value", "oneDNN used another number of threads"),
    ("nvidia.driver_release", "gpu", "value", "another NVIDIA driver"),
    ("cuda.driver_version", "gpu", "value", "another CUDA driver version"),
    ("cuda.runtime_version", "gpu", "value", "another CUDA runtime"),
    ("cudnn.version_loaded", "gpu", "value", "another cuDNN"),
    ("cublas.version_loaded", "gpu", "value", "another cuBLAS"),
    ("gpu.memory_free_bytes", "gpu", "lower", "less free GPU memory"),
    ("gpu.ecc", "gpu", "value", "ECC set otherwise"),
    ("gpu.compute_processes", "gpu", "higher", "other processes on its GPU"),
    ("gpu.persistence_mode", "gpu", "value", "persistence mode set otherwise"),
    ("onednn.isa", "cpu", "value", "oneDNN chose another instruction set"),
    ("cpu.model", "", "value", "another CPU model"),
    ("cpu.signature", "", "value", "another CPU generation"),
    ("cpu.frequency_nominal_mhz", "", "lower", "its CPU's nominal clock is lower"),
    ("cpu.frequency_max_mhz", "", "lower", "its CPU's highest clock is lower"),
    ("host.hypervisor", "", "value", "another hypervisor"),
    ("host.clocksource", "", "value", "its kernel's clock source differs (every host timer "
                                      "reads it)"),
    ("os.kernel", "", "value", "another kernel"),
)
# Facts every run records since gapbench began to (each says "unavailable (<why>)" where the
# machine does not tell): absent, the file is older, and an unknown value differs from nothing.
ALWAYS_RECORDED = frozenset({"cpu.signature", "cpu.frequency_nominal_mhz",
                             "cpu.frequency_max_mhz", "host.hypervisor", "host.clocksource",
                             "onednn.threads", "gapbench.build_type", "gapbench.compiler",
                             "openblas.version", "onednn.version"})
UNAVAILABLE = "unavailable"
# A setting that explains only where what it sets differs too: a cap of oneDNN's instruction set
# (invalid, above the CPU's or at its best) or a forced OpenBLAS core that left the kernels as
# they were binds nothing.
BINDS_ONLY_WITH = {"onednn.isa_cap": "onednn.isa", "openblas.coretype": "openblas.core"}
# A number counts as different beyond this share of the others' median; the load average
# beyond half a core's worth (and at least 1).
NUMBER_DIFFERS = 0.1
LOAD_PER_CORE = 0.5


@dataclass
class Difference:
    """A fact in which a run differs from the others (the rest of its group, or one other
    machine): its value, and theirs."""

    key: str
    words: str
    value: str
    others: str
    device: str
    # Compared as a number (EXPLAINING's "lower" or "higher"): the run's side is the worse one.
    # "value": another setting, with no better or worse side.
    how: str = "value"
    their_value: str = ""  # the others' value alone, without "(median)"
    why: str = ""  # what set this run's value, where its facts say: "a container quota"
    evidence: str = ""  # the facts that say so: "cgroup v1 cpu.cfs_quota_us 100000 / ..."

    @property
    def cited(self) -> str:
        source = "the run context's 1-minute load average" if self.key == LOAD else "doctor"
        why = f"{self.why}: {self.evidence}; " if self.why and self.evidence else (
            f"{self.why}; " if self.why else "")
        return (f"{self.words} ({why}{source}: `{self.key}` {self.value or 'not set'}; the "
                f"others: {self.others or 'not set'})")


    def contrast(self, mine: str, theirs: str, evidence: bool = False) -> str:
        """The difference with its direction, each side named (fewer usable CPUs with what set
        them, and with `evidence` the cgroup's or the affinity's own values; README.md's excerpt
        quotes one); "oneDNN used another number of threads (`onednn.threads` 1 here, 2
        there)"."""
        other = self.their_value or self.others or "not set"
        if self.key == USABLE_CPUS:
            cpus = "CPU" if self.value == "1" else "CPUs"
            why = ""
            if self.why:
                shown = f": {self.evidence}" if evidence and self.evidence else ""
                why = f" ({self.why} {mine}{shown})"
            return f"this process may use {self.value} {cpus} {mine} and {other} {theirs}{why}"
        return f"{self.words} (`{self.key}` {self.value or 'not set'} {mine}, {other} {theirs})"


def load_average(context: Mapping) -> float | None:
    """The 1-minute load average a run started under, from its context; None where the context
    has none, or no finite number for it."""
    load = context.get(LOAD)
    first = load[0] if isinstance(load, list) and load else None
    if isinstance(first, bool) or not isinstance(first, (int, float)) or number(first) is None:
        return None
    return float(first)


@dataclass(frozen=True)
class Facts:
    """One run's EXPLAINING facts as text ("" where not recorded), the load average it started
    under and its cores."""

    values: Mapping[str, str]
    load: float | None = None
    cores: float = 1.0

    @classmethod
    def of(cls, fact: Callable[[str], str], load: float | None) -> Facts:
        """From a lookup of each fact's text by its key ("" where absent), such as a fleet node's
        Node.fact."""
        keys = [key for key, _, _, _ in EXPLAINING] + list(WHY_FEWER_CPUS)
        values = {key: fact(key) for key in keys}
        if believed := usable_cpus(values):  # never above the facts it is the least of
            values[USABLE_CPUS] = f"{believed[0]:g}"
        return cls(values, load, number(fact("cpu.cores")) or 1)

    @classmethod
    def of_context(cls, context: Mapping, doctor: Mapping | None = None) -> Facts:
        """From a results file's run context, with doctor's facts (doctor.json's "facts") where
        the context lacks one."""
        doctor = doctor or {}

        def fact(key: str) -> str:
            value = context.get(key, doctor.get(key))
            return "" if value is None else str(value)
        return cls.of(fact, load_average(context))

    def number(self, key: str) -> float | None:
        return self.load if key == LOAD else number(self.values.get(key))

    def shown(self, key: str) -> str:
        """A fact as a page shows it."""
        return f"{self.load:.2f}" if key == LOAD and self.load is not None else self.values[key]


@dataclass(frozen=True)
class Usual:
    """What other runs have: how many have each value of each fact compared by value, and the
    median of each number."""

    counts: Mapping[str, Counter]
    medians: Mapping[str, float | None]

    @classmethod
    def of(cls, runs: Sequence[Facts]) -> Usual:
        return cls({key: Counter(f.values[key] for f in runs)
                    for key, _, how, _ in EXPLAINING if how == "value"},
                   {key: median_or_none([v for v in (f.number(key) for f in runs)
                                         if v is not None])
                    for key, _, how, _ in EXPLAINING if how != "value"})

    def without(self, facts: Facts) -> Usual:
        """The same with one of its runs taken out of the counts, so that it is set against the
        others; the medians stay the group's (one run moves a median little)."""
        counts = {}
        for key, counted in self.counts.items():
            counts[key] = counted.copy()
            counts[key][facts.values[key]] -= 1
        return Usual(counts, self.medians)


def unknown(value: str) -> bool:
    """A fact's value that says nothing: not recorded, or recorded as unavailable."""
    return not value or value.startswith(UNAVAILABLE)


def usual_value(others: Usual, key: str) -> str | None:
    """The value of a key compared by value that most of the others have; None where none do."""
    return next((v for v, c in others.counts[key].most_common() if c > 0), None)


def set_differs(mine: Facts, others: Usual, key: str) -> bool:
    """Whether a run's value of a key compared by value is not what the others usually have."""
    common = usual_value(others, key)
    return common is not None and mine.values[key] != common and not unknown(mine.values[key])


def differences(mine: Facts, others: Usual, device: str = "") -> list[Difference]:
    """The EXPLAINING facts in which a run differs from what the others usually have, in
    EXPLAINING's order; with `device`, the facts about that device (or both) first."""
    found = []
    for key, fact_device, how, words in EXPLAINING:
        if how == "value":
            value, common = mine.values[key], usual_value(others, key)
            if key in BINDS_ONLY_WITH and not set_differs(mine, others, BINDS_ONLY_WITH[key]):
                continue
            if common is not None and value != common and not (
                    key in ALWAYS_RECORDED and (unknown(value) or unknown(common))):
                found.append(Difference(key, words, value, common, fact_device,
                                        their_value=common))
            continue
        value = mine.number(key)
        typical = others.medians[key]
        if value is None or typical is None:
            continue
        margin = (max(1.0, LOAD_PER_CORE * mine.cores) if key == LOAD
                  else NUMBER_DIFFERS * abs(typical))
        if (value < typical - margin) if how == "lower" else (value > typical + margin):
            shown = f"{value:.2f}" if key == LOAD else f"{value:g}"
            typical_text = f"{typical:.2f}" if key == LOAD else f"{typical:g}"
            why, evidence = fewer_cpus_why(mine.values) if key == USABLE_CPUS else ("", "")
            found.append(Difference(key, words, shown, f"{typical_text} (median)", fact_device,
                                    how, typical_text, why, evidence))
    if device:
        found.sort(key=lambda d: d.device not in ("", device))  # stable: EXPLAINING's order
    return found
