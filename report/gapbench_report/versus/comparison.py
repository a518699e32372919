"""Why is this machine slower than that one? Two machines' runs set side by side: every work both
ran, whether its two rows are the same work at all (the same code, configuration, scope and
FLOPs), and each difference put down to a firm ceiling of the machines that bounds that work
(versus.ceilings), else to a recorded fact in which they differ (core.facts, as the fleet
explains an outlier), else to the machine itself being unsteady where both runs are of one
machine. Pure functions over each side's run_model.Run; render's model shows them and writes
comparison.json. The rules: docs/report.md#against-another-machine."""

from __future__ import annotations

import functools
import math
import re
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from gapbench_report.core import metrics
from gapbench_report.core.catalogue import SHARED_WORK
from gapbench_report.core.causes import CPUS, fewer_cpus_why
from gapbench_report.core.facts import (
    LOAD,
    Difference,
    Facts,
    Usual,
    differences,
)
from gapbench_report.core.formats import fmt_ratio_short
from gapbench_report.core.labels import (
    axes_label,
    is_unheld,
    math_words,
    unnamed_math,
    variant_label,
    with_threads,
)
from gapbench_report.core.run_model import Run
from gapbench_report.core.same_work import fastest_by, work
from gapbench_report.core.tables import ONEDNN_ISA_ORDER
from gapbench_report.inputs.results import FP32, Benchmark, Results
from gapbench_report.versus import methods
from gapbench_report.versus.ceilings import (  # noqa: F401 (the comparison's names)
    BUS_WIDTH_BITS,
    COMPUTE,
    COMPUTE_BOUND,
    LATENCY,
    LATENCY_BOUND,
    Figure,
    Kind,
    bounds,
    ceilings,
    flops_key,
    gemm_key,
    gpu_memory_bandwidth,
    kind,
    probed,
    usable_cpus,
)

# A work differs when one machine is more than this much faster (a ratio beyond 1.1x either way:
# above 1.1, or below 1 / 1.1 = 0.91), beyond its repetitions' spread (Pair).
DIFFERS = 0.10
# A ceiling explains a difference fully when what it leaves unexplained, the work's ratio over
# the ceiling's, is at most this factor (either way); else it bounds the work partly.
FULLY_LEFT = 1.25
# A ceiling that moves less than this share of the work's difference (ln c / ln t) explains
# none of it.
PARTLY = 0.25
# The families compared: peak/ holds the ceilings themselves, framework/ the user's framework
# (set against the libraries per machine, and between machines by versus.framework).
NOT_COMPARED = ("peak", "framework")
# The variants that run a library whose own facts (onednn.*, openblas.*, ...) concern them alone.
LIBRARY_OF = {"onednn": "onednn", "im2col_blas": "openblas", "openblas": "openblas",
              "blas": "openblas", "cudnn": "cudnn", "cudnn_e2e": "cudnn", "cublas": "cublas",
              "cublas_e2e": "cublas", "cublas_graph": "cublas", "cublas_graph_e2e": "cublas"}
LIBRARIES = frozenset(LIBRARY_OF.values())
LIBRARY_NAMES = {"onednn": "oneDNN", "openblas": "OpenBLAS", "cudnn": "cuDNN",
                 "cublas": "cuBLAS"}
# Facts that differ between two GPU models by their make, not by how either was set up: between
# an H100 and an H200 they say nothing the ceilings do not (the fleet never compares those).
GPU_MAKE_FACTS = frozenset({"gpu.clock_sm_mhz", "gpu.clock_mem_mhz", "gpu.memory_free_bytes"})
# The facts behind the "cpus" ceiling: cited with it, not on their own.
CPU_FACTS = frozenset(CPUS.facts)
# Facts with a direction: one is cited for the slower machine only where its value is the worse
# one (a newer instruction set never explains slowness). Each: its values from worst to best,
# or None for a number (fewer is worse), and its words.
ISA_ORDER = ONEDNN_ISA_ORDER  # tables/isa.json, which kernels/onednn_isa.cpp is held to
DIRECTED = {"onednn.isa": (ISA_ORDER, "oneDNN ran an older instruction set"),
            "openblas.threads": (None, "OpenBLAS ran fewer threads"),
            "onednn.threads": (None, "oneDNN ran fewer threads"),
            "gapbench.build_type": (("debug", "minsizerel", "relwithdebinfo", "release"),
                                    "gapbench was built with less optimisation")}
SHORT_COMMIT = 7
# The fields of a row's label that say how it was configured (cuDNN's "algo:... math:...", the
# fp16 conv's "data:fp16 layout:nhwc"), and their words.
CONFIG_FIELDS = {"algo": "algorithm", "math": "math mode", "data": "data type",
                 "layout": "layout"}
LABEL_FIELD = re.compile(r"(?<![\w])(" + "|".join(CONFIG_FIELDS) + r"):([^\s,;]+)")
OWN_KERNEL_LABELS = frozenset({"onednn"})
# Two rows do the same arithmetic when their FLOPs per iteration agree this closely.
SAME_FLOPS = 0.02


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

    @functools.cached_property
    def other_work(self) -> str:
        """"0.8–1.0 CPUs": the other work its family runs recorded, over all of them (one figure
        for the whole comparison, whichever family a work is of)."""
        cpus = [o.other_cpus for r in self.run.files
                if (o := metrics.OtherWork.of(r)).other_cpus is not None]
        return metrics.cpus_worth(max(cpus), min(cpus)) if cpus else "nothing recorded"

    @functools.cached_property
    def method_versions(self) -> tuple[dict[str, str] | None, str]:
        """Its method versions and its commit (versus.methods), read once for every row."""
        return methods.versions(self.run.context, self.commit), self.commit


def commit_of(files: Iterable[Results]) -> str:
    for r in files:
        commit = str(r.context.get("gapbench.commit") or r.provenance.get("gapbench_commit")
                     or "")
        if re.fullmatch(r"[0-9a-f]{7,40}", commit):
            return commit[:SHORT_COMMIT]
    return ""


def same_machine(here: Side, there: Side) -> bool:
    """Both runs are of one machine: the same machine.id, else the same CPU, GPU and kernel."""
    a, b = here.run.context, there.run.context
    if a.get("machine.id") and b.get("machine.id"):
        return a["machine.id"] == b["machine.id"]
    keys = ("cpu.model", "cpu.cores", "gpu.name", "os.kernel")
    return bool(a.get("cpu.model")) and all(a.get(k) == b.get(k) for k in keys)


# ---- pairs of the same work ---------------------------------------------------------------

def labels_of(b: Benchmark) -> tuple[str, ...]:
    """Every repetition's label (files read before labels were kept per repetition: the one)."""
    return b.labels or (b.label,)


def label_fields(labels: Iterable[str]) -> dict[str, str]:
    """The configuration fields over all of a row's labels, each with every value it took
    ("GEMM/FFT" where the repetitions differ)."""
    found: dict[str, list[str]] = {}
    for label in labels:
        for key, value in LABEL_FIELD.findall(label):
            if value not in found.setdefault(key, []):
                found[key].append(value)
    return {k: "/".join(sorted(v)) for k, v in found.items()}


def flops_per_iteration(b: Benchmark) -> float | None:
    return per_iteration(b, "flops")


def per_iteration(b: Benchmark, rate_counter: str) -> float | None:
    """A rate counter times the time, repetition by repetition: the work one iteration does
    (their median). The median rate times the median time is that work only for an odd number
    of repetitions; a row pooled from two runs has an even one."""
    rates = b.counters.get(rate_counter, ())
    if rates and len(rates) == len(b.samples):
        works = [rate * seconds for rate, seconds in zip(rates, b.samples) if rate and seconds]
        return statistics.median(works) if works else None
    rate = b.counter(rate_counter)
    return rate * b.median if rate and b.median else None


SAME_METHOD = methods.Identity(methods.SAME)


def configuration_differs(here: Benchmark, there: Benchmark,
                          method: methods.Identity = SAME_METHOD) -> list[str]:
    """Why two rows of one name are not the same work, in words; empty when they are: the math
    each may have computed in, the algorithm, math mode, data type and layout any of their
    repetitions' labels name, a held against an unheld kernel time, other FLOPs per iteration,
    the benchmark's method changed (versus.methods), and, where the method is not known to be
    the same, labels that differ (oneDNN's, which name its kernels for the machine, aside)."""
    reasons = []
    if here.math != there.math:
        reasons.append(f"math: {math_words(here.math)} here, {math_words(there.math)} there")
    mine, theirs = label_fields(labels_of(here)), label_fields(labels_of(there))
    for key, words in CONFIG_FIELDS.items():
        if mine.get(key) != theirs.get(key):
            reasons.append(f"{words}: {mine.get(key, 'not named')} here, "
                           f"{theirs.get(key, 'not named')} there")
    if is_unheld(here) != is_unheld(there):
        held = ("unheld", "held") if is_unheld(here) else ("held", "unheld")
        reasons.append(f"{held[0]} here, {held[1]} there (an unheld kernel time includes the "
                       "host's launches)")
    a, b = flops_per_iteration(here), flops_per_iteration(there)
    if a and b and abs(a / b - 1) > SAME_FLOPS:
        reasons.append(f"other arithmetic: {a / 1e6:.3g} MFLOP here, {b / 1e6:.3g} there")
    # One name can do other work per iteration where a profile sets it (the pipeline's batches:
    # 4 in the quick profile, 8 in the full): its items per iteration tell.
    a, b = per_iteration(here, "items_per_second"), per_iteration(there, "items_per_second")
    if a and b and abs(a / b - 1) > SAME_FLOPS:
        reasons.append(f"other work per iteration: {a:.3g} items here, {b:.3g} there")
    # oneDNN's labels name the implementation it picked for the machine's instruction set (a
    # fact of the machine, which explains them), not a configuration.
    if method.state == methods.CHANGED:
        reasons.append(method.words)
    elif method.state == methods.UNKNOWN and here.parsed.variant not in OWN_KERNEL_LABELS \
            and set(labels_of(here)) != set(labels_of(there)):
        shown = "" if reasons else (f": \"{labels_of(here)[0] or 'none'}\" here, "
                                    f"\"{labels_of(there)[0] or 'none'}\" there")
        reasons.append(f"a gapbench not known to be the same labelled it otherwise{shown}")
    return reasons


@dataclass(frozen=True)
class Pair:
    """The same work on both machines: the same benchmark, or (between devices) each machine's
    fastest row of it in the same scope and FLOPs."""

    here: Benchmark
    there: Benchmark
    reasons: tuple[str, ...] = ()  # why the rows are not comparable; empty when they are
    caveats: tuple[str, ...] = ()  # what could not be checked (the code's identity)

    @property
    def across_devices(self) -> bool:
        return self.here.parsed.device != self.there.parsed.device

    @property
    def speed(self) -> float:
        """How much faster this machine does the work: the other's time over this one's."""
        return self.there.median / self.here.median

    @property
    def cost(self) -> float:
        """The slower machine's time over the faster's (at least 1)."""
        return max(self.speed, 1 / self.speed)

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


def end_to_end(b: Benchmark) -> bool:
    return b.parsed.variant.endswith("_e2e")


def scoped_work(b: Benchmark) -> tuple:
    """same_work.work with the row's scope (end to end, pageable copies included, or not) and its
    FLOPs per iteration to two digits: between devices, like is paired with like only."""
    flops = flops_per_iteration(b)
    return (*work(b), end_to_end(b), float(f"{flops:.2g}") if flops else None)


def method_identity(here: Side, there: Side, b: Benchmark,
                    configured: bool = True) -> methods.Identity:
    """Whether both machines ran the row's method at the same version (versus.methods): its
    family's, and its variant's where `configured` (between devices each machine ran its own
    variant, so the family's alone)."""
    return methods.identity_of([b.name if configured else b.parsed.family],
                               here.method_versions, there.method_versions)


def pair_of(a: Benchmark, b: Benchmark, identity: methods.Identity,
            configured: bool = True) -> Pair:
    """Two machines' rows as a Pair: why they are not the same work, if they are not (only
    the method's identity where `configured` is False: each machine's own choice of library),
    and what could not be checked."""
    reasons = configuration_differs(a, b, identity) if configured else \
        [identity.words] if identity.state == methods.CHANGED else []
    caveats = (identity.words,) if identity.state == methods.UNKNOWN else ()
    return Pair(a, b, tuple(reasons), caveats)


def pairs(here: Side, there: Side) -> list[Pair]:
    """Every benchmark both machines timed, with why it is not comparable where it is not; and,
    for the work of SHARED_WORK families that each machine did fastest on another device (a GPU
    against a CPU-only machine), each machine's fastest row of it in the same scope and FLOPs:
    the GPU's speed-up, whatever library each ran (their algorithms and layouts are each
    machine's own choice there)."""
    def pair(a: Benchmark, b: Benchmark, configured: bool = True) -> Pair:
        return pair_of(a, b, method_identity(here, there, a, configured), configured)

    theirs = {b.name: b for b in there.run.benchmarks if compared(b)}
    found = [pair(b, theirs[b.name]) for b in here.run.benchmarks
             if compared(b) and b.name in theirs]

    def fastest(side: Side) -> dict:
        return fastest_by((b for b in side.run.benchmarks
                           if compared(b) and b.parsed.family in SHARED_WORK), scoped_work)
    mine, other = fastest(here), fastest(there)
    found += [pair(b, other[key], configured=False) for key, b in mine.items()
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
    """The ceiling that explains a difference and how much of it, the recorded facts in which the
    slower machine differs (each with the machine it is about), and what was checked and found
    wanting (notes: a bound neither run measured, a row not compute-bound)."""

    ceiling: str | None = None  # this machine's: a KINDS key, a gemm_key or a flops_key
    here: Figure | None = None
    there: Figure | None = None
    share: float | None = None  # ln(ceiling ratio) / ln(speed ratio)
    # "fully" (at most FULLY_LEFT left), "partly" (the ceiling moves less than the work),
    # "beyond" (it moves more: the work is partly bound by it), "unsteady" (its own spread
    # covers the difference), "against" (it differs the other way) or "no"
    how: str = "no"
    facts: tuple[tuple[str, Difference], ...] = ()
    there_ceiling: str | None = None  # the other's, where it differs (another device's peak)
    notes: tuple[str, ...] = ()
    library: str = ""  # the library whose own cause this is (the CPUs' physical peaks equal)
    peaks: str = ""  # those equal peaks, in words
    why: str = ""  # what holds a machine below its cores, where the ceiling is the usable CPUs
    unsteady: str = ""  # two runs of one machine: what shows it was unsteady
    # Two runs of one machine: the CPUs shared, in words, where either run recorded other work
    # or their parallel capacity differed (shared_cpus): the cause, not a ceiling or a library.
    shared: str = ""
    shared_kind: str = ""  # "other_work" or "capacity"

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
        """A ceiling bounds the work, fully or partly ("beyond" is partly bound too)."""
        return self.how in ("fully", "partly", "beyond")


def share_of(ceiling_ratio: float, speed: float) -> float:
    """ln(ceiling ratio) / ln(speed ratio) (docs/report.md#how-much-a-ceiling-explains)."""
    if abs(math.log(ceiling_ratio)) <= math.log(1 + DIFFERS):
        return 0.0  # ceilings within the noise of each other explain nothing
    return math.log(ceiling_ratio) / math.log(speed)


def how_much(ceiling_ratio: float, speed: float) -> str:
    """"fully" where the work's ratio over the ceiling's is within FULLY_LEFT either way (in
    plain terms, not as a share of the logarithm); "partly" or "beyond" where the ceiling moves
    the same way less or more than that; "against", or "no" where it moves less than PARTLY."""
    share = share_of(ceiling_ratio, speed)
    if share <= -PARTLY:
        return "against"
    if share < PARTLY:
        return "no"
    if abs(math.log(speed / ceiling_ratio)) <= math.log(FULLY_LEFT):
        return "fully"
    return "partly" if share < 1 else "beyond"


def latency_bound(pair: Pair, here: Side, there: Side) -> bool:
    """A GPU row that takes at most LATENCY_BOUND times a launch plus a synchronize on either
    machine: its time is latency, whatever it moves or computes."""
    if pair.across_devices or pair.here.parsed.device != "gpu":
        return False
    for row, side in ((pair.here, here), (pair.there, there)):
        launch, sync = side.ceilings.get("launch"), side.ceilings.get("sync")
        if launch and sync and row.median <= LATENCY_BOUND * (launch.value + sync.value):
            return True
    return False


def compute_keys(b: Benchmark, side: Side, other: Side | None) -> str | None:
    """The FLOP peak that bounds a row's compute on its machine: the GPU's GEMM peak of its
    math; on the CPU the physical peak (peak/flops/cpu) where both machines measured it, else
    its SGEMM (never for oneDNN, which JITs its own kernels)."""
    device, math_ = b.parsed.device, b.math
    if device == "cpu" and flops_key(math_) in side.ceilings and (
            other is None or flops_key(math_) in other.ceilings):
        return flops_key(math_)
    if device == "cpu" and b.parsed.variant == "onednn" and other is not None:
        return None  # between devices the CPU's best-known compute ceiling bounds it
    return gemm_key(device, math_)


def compute_bound(pair: Pair, mine: Figure, theirs: Figure) -> str:
    """"" where the row reaches COMPUTE_BOUND of its peak on both machines; else why a FLOP peak
    cannot bound it, in words."""
    a, b = pair.here.counter("flops"), pair.there.counter("flops")
    if not a or not b:
        return "no FLOP count to tell whether it is compute-bound"
    if a >= COMPUTE_BOUND * mine.value and b >= COMPUTE_BOUND * theirs.value:
        return ""
    return (f"not compute-bound at this size: {a / mine.value:.0%} of its peak here, "
            f"{b / theirs.value:.0%} there")


def candidate_keys(pair: Pair, here: Side, there: Side) -> list[tuple[str, str | None, str | None]]:
    """Each bound of the row as (its name, this machine's key, the other's)."""
    if pair.across_devices:
        return [(COMPUTE, compute_keys(pair.here, here, None),
                 compute_keys(pair.there, there, None))]
    if latency_bound(pair, here, there):
        order = ("sync", "launch") if pair.here.parsed.family == "transfer" else LATENCY
        return [(k, k, k) for k in order]
    out = []
    for key in bounds(pair.here):
        if key == COMPUTE:
            out.append((key, compute_keys(pair.here, here, there),
                        compute_keys(pair.there, there, here)))
        else:
            out.append((key, key, key))
    return out


def explain(pair: Pair, here: Side, there: Side) -> Explanation:
    """The first firm bound of the row that explains the difference fully, else the one that
    bounds most of it; else, to say why none does, one whose spread covers the difference, that
    differs the other way or not at all; with the recorded facts in which the slower machine
    differs, where they concern the row."""
    candidates, notes = [], []
    for name, mine_key, theirs_key in candidate_keys(pair, here, there):
        if not mine_key or not theirs_key:
            continue
        mine, theirs = here.ceilings.get(mine_key), there.ceilings.get(theirs_key)
        if not (mine and theirs and mine.value > 0 and theirs.value > 0):
            missing = [label for label, f in (("here", mine), ("there", theirs)) if not f]
            if missing and name in ("host_memcpy", "pcie"):
                notes.append(f"the {kind(mine_key).words} is unknown ("
                             f"{' and '.join(missing)} the run did not measure it)")
            continue
        if pair.here.name in (mine.source, theirs.source):
            continue  # the row is its own ceiling (the launch latency's row): that proves nothing
        if name == COMPUTE and (why := compute_bound(pair, mine, theirs)):
            notes.append(why)
            continue
        ratio = Explanation(mine_key, mine, theirs).ratio
        how = how_much(ratio, pair.speed)
        spread = max(mine.spread, theirs.spread)
        if how in ("fully", "partly", "beyond") and spread >= min(pair.cost, max(ratio,
                                                                                  1 / ratio)):
            how = "unsteady"  # the ceiling's own measurements differ as much as the work
        candidates.append(Explanation(mine_key, mine, theirs, share_of(ratio, pair.speed), how,
                                      (), theirs_key if theirs_key != mine_key else None))
    facts = () if pair.across_devices else tuple(facts_for(pair, here, there))
    order = ("fully", "partly", "beyond", "unsteady", "against", "no")
    ranked = sorted(candidates, key=lambda c: (order.index(c.how), -(c.share or 0)
                                               if c.how == "partly" else (c.share or 0)
                                               if c.how == "beyond" else 0))
    best = replace(ranked[0] if ranked else Explanation(), notes=tuple(notes))
    if best.ceiling == "cpus":
        facts = tuple(f for f in facts if f[1].key not in CPU_FACTS)
        best = replace(best, why=cpus_why(here, there))
    library, peaks = library_cause(pair, here, there)
    # A ceiling that differs the other way overrules the facts: the machine with the higher
    # ceiling is the slower one at this work, so what made its ceiling higher explains nothing.
    return replace(best, facts=() if best.how == "against" else facts,
                   library="" if best.explained else library,
                   peaks="" if best.explained else peaks)


def cpus_why(here: Side, there: Side, evidence: bool = True) -> str:
    """"a container quota here: cgroup v1 cpu.cfs_quota_us 100000 / ...": what holds the machine
    whose process may use fewer CPUs below its cores, with (`evidence`) the facts that say so;
    "" where both may use as many (a limit on both sides, or one that binds nothing, explains
    no difference)."""
    mine, theirs = (usable_cpus(s.run.context) for s in (here, there))
    if not mine or not theirs or mine.value == theirs.value:
        return ""
    side, where = (here, "here") if mine.value < theirs.value else (there, "there")
    words, shown = fewer_cpus_why(side.run.context)
    return f"{words} {where}" + (f": {shown}" if evidence and shown else "") if words else ""


def library_cause(pair: Pair, here: Side, there: Side) -> tuple[str, str]:
    """The library whose own kernels or threads a CPU difference comes down to, and both
    machines' physical FLOP peaks in words: where those are equal, its gap is no hardware's."""
    key = flops_key(pair.here.math)
    library = LIBRARY_OF.get(pair.here.parsed.variant, "")
    mine, theirs = here.ceilings.get(key), there.ceilings.get(key)
    if pair.across_devices or pair.here.parsed.device != "cpu" or not library \
            or not mine or not theirs \
            or abs(math.log(mine.value / theirs.value)) > math.log(1 + DIFFERS):
        return "", ""
    return library, f"{mine.shown(key)} against {theirs.shown(key)}"


def directed(d: Difference, slow: Facts, fast: Facts) -> bool:
    """Whether a fact's difference points at the slower machine: its value the worse one."""
    if d.key == "openblas.core":  # its own CPU's kernels are no cause where the other's forced
        return bool(slow.values.get("openblas.coretype")) or \
            not fast.values.get("openblas.coretype")
    if d.key not in DIRECTED:
        return True
    order, _ = DIRECTED[d.key]
    mine, theirs = slow.values.get(d.key, ""), fast.values.get(d.key, "")
    if order is None:
        a, b = metrics.number(mine), metrics.number(theirs)
        return a is not None and b is not None and a < b
    rank = {v: i for i, v in enumerate(order)}
    return mine in rank and theirs in rank and rank[mine] < rank[theirs]


def facts_for(pair: Pair, here: Side, there: Side) -> list[tuple[str, Difference]]:
    """The recorded facts in which the slower machine differs from the faster one
    (core.facts.differences), those that can explain it: about this row (its device's or
    both's; a library's own facts only for that library's rows; no GPU fact that two GPU
    models' makes decide), about the slower machine (a fact set there and unset on the faster
    one, such as a cap, or set on both; never one only the faster machine has set), and
    pointing its way (DIRECTED: never a newer instruction set or more threads)."""
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
                or not d.value or not directed(d, slow.facts, fast.facts)):
            continue
        if d.key in DIRECTED:
            d = replace(d, words=DIRECTED[d.key][1])
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
        return self.pair.cost


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

    @functools.cached_property
    def one_machine(self) -> bool:
        return same_machine(self.here, self.there)


def compare(here: Side, there: Side) -> Comparison:
    """Every pair judged; between two runs of one machine, a difference nothing recorded
    explains is put down to the machine itself, unsteady, with its evidence."""
    unsteady = unsteady_evidence(here, there) if same_machine(here, there) else ""
    works = []
    for p in pairs(here, there):
        e = explain(p, here, there) if not p.reasons and p.differs else Explanation()
        if unsteady and e.explained and moved(e):
            # One machine's measured ceiling that moved between its runs is its unsteadiness
            # showing, not a cause: the same hardware had the same limit.
            e = replace(e, how="no", unsteady=f"{unsteady}; its {kind(e.ceiling).words} "
                        f"itself moved: {e.here.shown(e.ceiling)} here, "
                        f"{e.there.shown(e.ceiling)} there")
        elif unsteady and p.differs and not p.reasons and not (e.explained or e.facts
                                                               or e.library):
            e = replace(e, unsteady=unsteady)
        if (unsteady and p.differs and not p.reasons and not e.explained
                and (found := shared_cpus(p, here, there))):
            # Other work or a capacity that moved is the cause: the same hardware had the same
            # ceilings and the same library, so neither is named. A recorded limit that binds
            # (fewer usable CPUs: taskset, a quota) stays the cause where it explains the work.
            e = Explanation(facts=e.facts, notes=e.notes, shared=found[1], shared_kind=found[0])
        works.append(Work(p, e))
    return Comparison(here, there, tuple(works), tuple(other_sizes(here, there)))


# ---- the CPUs shared between two runs of one machine ------------------------------------------

def side_capacity(side: Side, row: Benchmark) -> float | None:
    """The CPUs' parallel capacity the run of `row` read: its file's FMA probes (the mean of
    its start and end), else the run's peak/flops rows."""
    results = side.run.file_of(row)
    probes, _ = metrics.probe_capacity(results) if results else ({}, None)
    if probes:
        return sum(probes.values()) / len(probes)
    peak = metrics.peak_capacity(side.run.benchmarks)
    return peak[0] if peak else None


def shared_cpus(pair: Pair, here: Side, there: Side) -> tuple[str, str] | None:
    """Why a work differs between two runs of one machine where the CPUs were shared: ("other
    work", its words) where either side's file recorded other work (metrics.OtherWork.seen),
    else ("capacity", ...) where a CPU row's two runs read parallel capacities more than
    STABILITY_DRIFT apart; None where neither."""
    files = [side.run.file_of(row) for side, row in ((here, pair.here), (there, pair.there))]
    others = [metrics.OtherWork.of(r) if r else metrics.OtherWork(None, None) for r in files]
    if any(o.seen for o in others):
        return "other_work", (f"other work used these CPUs during the run ({here.other_work} "
                              f"here, {there.other_work} there)")
    if pair.here.parsed.device != "cpu":
        return None
    # A process held to fewer CPUs on one side reads its capacity on those: the usable CPUs,
    # a recorded fact, are what differs (the facts say it), not the CPUs themselves.
    usable = [usable_cpus(side.run.context) for side in (here, there)]
    if all(usable) and usable[0].value != usable[1].value:
        return None
    mine, theirs = side_capacity(here, pair.here), side_capacity(there, pair.there)
    if mine and theirs and max(mine, theirs) / min(mine, theirs) > 1 + metrics.STABILITY_DRIFT:
        return "capacity", (f"these CPUs' parallel capacity differed ({mine:.1f}x one CPU here, "
                            f"{theirs:.1f}x there)")
    return None


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


def ratio_range(works: Sequence[Work]) -> str:
    """"0.48-0.52x" over works' ratios, or the one ratio."""
    low, high = (fmt_ratio_short(f(w.pair.speed for w in works)) for f in (min, max))
    return low if low == high else f"{low[:-1]}–{high}"


def cpus_text(e: Explanation, here: Side, there: Side, evidence: bool = False) -> str:
    """The CPUs this process may use on each side, with what set them (a quota, an affinity),
    and with `evidence` what says so (the cgroup's values); README.md's excerpt quotes it."""
    a, b = e.here.value, e.there.value
    text = f"this process may use {a:g} CPU{'s' if a != 1 else ''} here and {b:g} there"
    why = cpus_why(here, there, evidence)
    return f"{text} ({why})" if why else text


def cpus_reading(w: Work) -> str:
    """The CPUs this process may use as a reading: both sides' figures and what set the fewer
    (README.md's excerpt quotes one); the why is in the sides' facts."""
    e = w.explanation
    return (f"{kind('cpus').words}, {e.here.shown('cpus')} against {e.there.shown('cpus')}"
            + (f" ({e.why})" if e.why else ""))


def ceiling_text(e: Explanation) -> str:
    """"GPU memory bandwidth (theoretical), 3.35 TB/s against 4.92 TB/s"; between devices,
    "CPU SGEMM here, float32 GPU GEMM peak there: 142 GFLOP/s against 51.3 TFLOP/s"."""
    words = kind(e.ceiling).words
    if e.there_ceiling:
        words = f"{words} here, {kind(e.there_ceiling).words} there:"
    else:
        words += ","
    return f"{words} {e.here.shown(e.ceiling)} against {e.there.shown(e.other_key)}"


def facts_text(facts: Sequence[tuple[str, Difference]], here: str, there: str) -> str:
    """"here, its oneDNN was capped to an older instruction set (onednn.isa_cap SSE41; not set
    on normal-1)"."""
    parts = []
    for machine, d in facts:
        where, other = ("here", there) if machine == here else (f"on {machine}", "here")
        parts.append(f"{where}, {d.words} ({d.key} {d.value}; {d.others or 'not set'} "
                     f"{'here' if other == 'here' else 'on ' + other})")
    return "; ".join(parts)


def library_text(e: Explanation) -> str:
    """"OpenBLAS's own kernels or threads, not the hardware (...)"; "" where it is no library's."""
    if not e.library:
        return ""
    return (f"{LIBRARY_NAMES.get(e.library, e.library)}'s own kernels or threads, not the "
            f"hardware (the CPUs' physical peaks are equal: {e.peaks})")


def reading(w: Work, here: str, there: str) -> str:
    """Why a work differs, in words: the ceiling that bounds it, fully or partly, and the
    recorded facts in which the slower machine differs; else a library's own cause, or the
    facts; else that nothing recorded explains it, with what was checked (a ceiling too noisy
    to tell, one that differs the other way or not at all, a bound unknown, a row not
    compute-bound); and what could not be checked (the code's identity)."""
    e = w.explanation
    facts = facts_text(e.facts, here, there)
    caveats = "".join(f"; {c}" for c in w.pair.caveats)
    if e.explained:
        bound = ceiling_text(e) if e.ceiling != "cpus" else cpus_reading(w)
        if e.how == "partly":
            bound = f"partly bound by the {bound}, which explains {e.share:.0%} of it"
        elif e.how == "beyond":
            bound = (f"partly bound by the {bound} ({fmt_ratio_short(e.ratio)}, more than the "
                     f"work's {fmt_ratio_short(w.pair.speed)}: something else bounds the rest)")
        return bound + (f"; {facts}" if facts else "") + caveats
    if e.shared:
        return e.shared + (f"; {facts}" if facts else "") + caveats
    text = "; ".join(p for p in (library_text(e), facts) if p) or (
        f"the machine itself was unsteady ({e.unsteady})" if e.unsteady
        else "unexplained by the recorded facts")
    checked = list(e.notes)
    if e.how == "unsteady":
        spread = max(e.here.spread, e.there.spread)
        checked.insert(0, f"the {kind(e.ceiling).words} varied by {spread - 1:.0%} within a "
                          f"run, which covers the difference: {e.here.shown(e.ceiling)} against "
                          f"{e.there.shown(e.other_key)}")
    elif e.how == "against":
        checked.insert(0, f"the {kind(e.ceiling).words} differs the other way: "
                          f"{e.here.shown(e.ceiling)} against {e.there.shown(e.other_key)}")
    elif e.ceiling and not e.facts and not e.library:
        little = f"by less than {DIFFERS:.0%}" if abs(math.log(e.ratio)) <= math.log(
            1 + DIFFERS) else "too little to explain it"
        checked.insert(0, f"the {kind(e.ceiling).words} differs {little}: "
                          f"{e.here.shown(e.ceiling)} against {e.there.shown(e.other_key)}")
    return text + (f" ({'; '.join(checked)})" if checked else "") + caveats


def item(w: Work, c: Comparison) -> str:
    """"device memory copies (256 MiB) (0.71x: GPU memory bandwidth ...)"."""
    return f"{w.pair.words} ({fmt_ratio_short(w.pair.speed)}: " \
           f"{reading(w, c.here.label, c.there.label)})"


# ---- the verdict ------------------------------------------------------------------------------

# The verdict before the details: at most this many lines and characters (a reader takes it in
# one breath), each cause with its share of the slowdown.
VERDICT_LINES = 3
VERDICT_CHARS = 300


def cause(w: Work, c: Comparison) -> tuple:
    """What a work's difference is put down to: the ceiling that bounds it (fully or partly), a
    library's own cause, the first fact cited, the machine itself (both runs of one machine),
    or nothing."""
    e = w.explanation
    if e.shared:
        return ("shared", e.shared_kind)
    if e.explained:
        return ("ceiling", e.ceiling, e.other_key)
    if e.library:
        return ("library", e.library)
    if e.facts:
        return ("facts", e.facts[0][1].key)
    return ("unsteady",) if e.unsteady else ("unexplained",)


def moved(e: Explanation) -> bool:
    """Whether the ceiling that explains a difference is a measurement (not a count or a
    theoretical figure, which the machine's setup sets) that differs between the two runs."""
    return bool(e.here and e.there and e.here.low is not None and e.there.low is not None
                and abs(math.log(e.here.value / e.there.value)) > math.log(1 + DIFFERS / 2))


def unsteady_evidence(here: Side, there: Side) -> str:
    """What shows that one machine was unsteady between two runs of it: the probe that moved the
    most within a run, the CPUs' parallel capacity where its probes moved, and both runs' load
    averages."""
    moves = []
    for side in (here, there):
        for probe, unit in (("read", "GB/s"), ("SGEMM", "GFLOP/s")):
            values = probed(side.run.library_files, probe)
            if len(values) > 1 and min(values) > 0:
                moves.append((max(values) / min(values), f"{probe} probes {min(values):g}–"
                                                         f"{max(values):g} {unit}"))
    parts = [max(moves)[1]] if moves else []
    # The CPUs' parallel capacity, which the host's placement of the vCPUs moves from minute to
    # minute: the threaded rows' mode follows it.
    capacities = [value for side in (here, there) for r in side.run.library_files
                  for value in metrics.probe_capacity(r)[0].values()]
    if capacities and max(capacities) > min(capacities) * (1 + metrics.STABILITY_DRIFT):
        parts.append(f"the CPUs' parallel capacity {min(capacities):.1f}–{max(capacities):.1f}x "
                     "one thread's")
    loads = [side.facts.load for side in (here, there)]
    if all(v is not None for v in loads):
        parts.append(f"{LOAD} {loads[0]:.2f} here, {loads[1]:.2f} there")
    return "; ".join(parts) or "nothing recorded shows it"


def cause_words(key: tuple, works: Sequence[Work], c: Comparison, detail: bool) -> str:
    e = works[0].explanation
    if key[0] == "ceiling":
        if e.ceiling == "cpus":
            text = cpus_text(e, c.here, c.there) if detail else \
                f"{e.here.value:g} against {e.there.value:g} usable CPUs"
        else:
            text = ceiling_text(e) if detail else kind(e.ceiling).words
        return text if any(w.explanation.how == "fully" for w in works) else f"partly {text}"
    if key[0] == "library":
        return (f"{LIBRARY_NAMES.get(key[1], key[1])}'s own kernels or threads"
                + (" (the CPUs' physical peaks are equal)" if detail else ""))
    if key[0] == "facts":
        d = e.facts[0][1]
        return d.words + (f" ({d.key} {d.value})" if detail else "")
    if key[0] == "unsteady":
        return "the machine itself was unsteady" + (f" ({e.unsteady})" if detail else "")
    if key[0] == "shared":
        return e.shared if detail else e.shared.split(" (")[0]
    return "unexplained by the recorded facts" if detail else "unexplained"


def grouped(works: Sequence[Work], c: Comparison) -> list[tuple[tuple, list[Work], float]]:
    """The works by cause with each cause's share of the slowdown, the largest first and
    nothing-explains last (docs/report.md#the-verdict-the-findings-the-charts)."""
    by_cause: dict[tuple, list[Work]] = {}
    for w in works:
        by_cause.setdefault(cause(w, c), []).append(w)
    total = sum(math.log(w.cost) for w in works) or 1.0
    found = [(k, g, sum(math.log(w.cost) for w in g) / total) for k, g in by_cause.items()]
    # The CPUs this process may use come first where they explain some works: the commonest
    # cause of "my container is slower than my laptop", and the others' (load, threads) follow.
    return sorted(found, key=lambda x: (x[0][0] == "unexplained",
                                        x[0][:2] != ("ceiling", "cpus"), -x[2]))


def direction_items(works: Sequence[Work], c: Comparison, detailed: int, limit: int,
                    seen: list) -> list[str]:
    """One direction's causes (at most `limit`, the rest counted together); the first
    `detailed` causes of the verdict are named with their figures, each once (`seen`: the
    causes named so far)."""
    items = []
    groups = grouped(works, c)
    for key, group, share in groups[:limit]:
        count = f"{len(group)} work{'s' if len(group) != 1 else ''}"
        detail = key not in seen and len(seen) < detailed
        items.append(f"{cause_words(key, group, c, detail)}: {share:.0%} "
                     f"({count}, {ratio_range(group)})")
        if key not in seen:
            seen.append(key)
    if rest := groups[limit:]:
        items.append(f"{len(rest)} more cause{'s' if len(rest) != 1 else ''}: "
                     f"{sum(s for _, _, s in rest):.0%}")
    return items


def not_comparable_lead(c: Comparison) -> str:
    count = len(c.not_comparable) + len(c.sizes)
    changed = sum(1 for w in c.not_comparable
                  if any(r.startswith(methods.CHANGED_WORDS) for r in w.pair.reasons))
    why = (f"{changed} another method, {count - changed} configured otherwise"
           if changed and changed < count else "another method" if changed
           else "configured otherwise")
    return f"{count} not comparable ({why}: see the list)."


def verdict_lines(c: Comparison, detailed: int = 2 * VERDICT_LINES, limit: int = 3
                  ) -> list[tuple[str, list[str]]]:
    """The verdict as (its lead, its items), at most VERDICT_LINES lines and VERDICT_CHARS
    characters: the works slower here by cause, each cause with its share of the slowdown, how
    many works and their ratios; the same for the works faster here; or that nothing differs;
    and how many rows were not comparable. Where it would run longer, the last causes lose their
    figures first, then the smallest are counted together."""
    comparable = len(c.differing) + len(c.alike)
    lines: list[tuple[str, list[str]]] = []
    seen: list = []
    there = shortened(c.there.label)
    if c.slower:
        lines.append((f"Slower here than on {there} in {len(c.slower)} of {comparable} "
                      "works:", direction_items(c.slower, c, detailed, limit, seen)))
    if c.faster:
        lines.append((f"Faster here in {len(c.faster)}:" if c.slower else
                      f"Faster here than on {there} in {len(c.faster)} of "
                      f"{comparable} works:", direction_items(c.faster, c, detailed, limit,
                                                              seen)))
    if not lines and not c.works:
        lines.append((f"This run and {there} share no work: no benchmark both ran.", []))
    elif not lines:
        lines.append((f"Nothing differs from {there} by more than {DIFFERS:.0%} in the "
                      f"{comparable} works both ran." if comparable else
                      f"This run and {there} share no comparable work: every work both "
                      "ran is listed as not comparable.", []))
    if c.not_comparable or c.sizes:
        lines.append((not_comparable_lead(c), []))
    if len(verdict(lines)) > VERDICT_CHARS and (detailed or limit > 1):
        detailed = min(detailed, len(seen))
        return verdict_lines(c, detailed - 1, limit) if detailed else \
            verdict_lines(c, 0, limit - 1)
    return bounded(lines)


def bounded(lines: list[tuple[str, list[str]]]) -> list[tuple[str, list[str]]]:
    """The verdict within VERDICT_CHARS where even its shortest form is not: a direction's
    causes give way to the list's, the last direction's first."""
    lines = list(lines)
    for i in reversed(range(len(lines))):
        lead, items = lines[i]
        if len(verdict(lines)) <= VERDICT_CHARS:
            break
        if items:
            lines[i] = (f"{lead.removesuffix(':')} (their causes: see the list).", [])
    return lines


def shortened(label: str, most: int = 48) -> str:
    """A machine's label as a verdict names it: a long file name cut in its middle."""
    if len(label) <= most:
        return label
    half = (most - 1) // 2
    return f"{label[:half]}…{label[-half:]}"


def verdict(c: Comparison | list[tuple[str, list[str]]]) -> str:
    """verdict_lines in one line."""
    lines = verdict_lines(c) if isinstance(c, Comparison) else c
    return " ".join(f"{lead} {'; '.join(items)}." if items else lead for lead, items in lines)


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
        return (f"Against {c.there.label}: the same ({fmt_ratio_short(w.pair.speed)} its speed "
                "there).")
    return (f"Against {c.there.label}: {fmt_ratio_short(w.pair.speed)} its speed there, "
            f"{reading(w, c.here.label, c.there.label)}.")


# ---- comparison.json ----------------------------------------------------------------------

SCHEMA = 2


def figure_json(key: str, f: Figure | None) -> dict | None:
    return None if f is None else {"value": f.value, "unit": kind(key).unit, "source": f.source,
                                   "low": f.low, "high": f.high}


def row_json(b: Benchmark) -> dict:
    return {"name": b.name, "seconds": b.median, "math": b.math, "label": b.label,
            "labels": sorted(set(labels_of(b))), "repetitions": len(b.samples)}


def work_json(w: Work, c: Comparison) -> dict:
    p, e = w.pair, w.explanation
    judged = p.differs and not p.reasons
    return {
        "work": p.words, "this": row_json(p.here), "baseline": row_json(p.there),
        "speed_ratio": p.speed, "differs": judged,
        "comparable": not p.reasons, "not_comparable_because": list(p.reasons),
        "caveats": list(p.caveats),
        "ceiling": None if e.ceiling is None else {
            "key": e.ceiling, "words": kind(e.ceiling).words,
            "baseline_key": e.other_key, "this": figure_json(e.ceiling, e.here),
            "baseline": figure_json(e.other_key, e.there),
            "ratio": e.ratio},
        "share_explained": e.share, "explained": e.how if judged else None,
        "cause": list(cause(w, c)) if judged else None,
        "library": e.library or None, "checked": list(e.notes),
        "facts": [{"machine": machine, "key": d.key, "words": d.words, "value": d.value,
                   "other": d.others} for machine, d in e.facts],
        "reading": reading(w, c.here.label, c.there.label) if judged else None,
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
        "schema": SCHEMA,
        "this": side_json(comparisons[0].here) if comparisons else None,
        "rules": "docs/report.md#against-another-machine",
        "comparisons": [{
            "baseline": side_json(c.there), "verdict": verdict(c),
            "same_machine": c.one_machine,
            "causes": [{"direction": direction, "cause": list(key), "words":
                        cause_words(key, group, c, True), "share_of_slowdown": share,
                        "works": len(group)}
                       for direction, works in (("slower", c.slower), ("faster", c.faster))
                       for key, group, share in grouped(works, c)],
            "works": [work_json(w, c)
                      for w in c.slower + c.faster + c.not_comparable + c.alike],
            "other_sizes": [{"variant": v, "this": here, "baseline": there}
                            for v, here, there in c.sizes],
        } for c in comparisons],
    }
