"""The diagnosis: rules that turn measured figures into the classic causes of a slow GPU, and
what to do. The rules and how findings rank: docs/report.md#diagnosis."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Hashable
from dataclasses import replace

from gapbench_report.core import framework
from gapbench_report.core.catalogue import SEVERITIES
from gapbench_report.core.causes import DOCTOR_TITLES, OTHER_WORK, fewer_cpus_why, usable_cpus
from gapbench_report.core.findings import Finding, costliest_first, fix_first
from gapbench_report.core.formats import fmt_ratio
from gapbench_report.core.labels import (
    axes_label,
    describe,
    fmt_seconds,
    fmt_si,
    is_unheld,
    math_words,
    mib,
    pct,
    variant_label,
)
from gapbench_report.core.metrics import (
    CPU_FLOPS_VARIANT,
    CPU_LIBRARY_OF,
    STABILITY_DRIFT,
    OtherWork,
    best,
    capacity_short,
    ceiling_drifts,
    cpu_flop_bound,
    cpu_flop_cap,
    cpu_flop_peak,
    cpu_library_shares,
    cpu_peak_words,
    cpus_worth,
    crossover,
    file_family,
    find,
    gemm_peaks,
    largest,
    named_peak_file,
    number,
    own_peak_rows,
    peak_capacity,
    peak_rows,
    pipeline_ideal,
    preprocess_metrics,
    probe_capacity,
    transfer_pair,
    unsteady,
)
from gapbench_report.core.run_model import Run
from gapbench_report.core.same_work import THREADS_AXIS, fastest_by, thread_twins, work
from gapbench_report.inputs.results import (
    FP32,
    MATH_AXIS,
    Benchmark,
    Results,
)

PROG = "gapbench-report diagnose"


# ---- benchmarks that failed -----------------------------------------------------------------

FAILED_RULE = "benchmarks_failed"


def rule_failed(run: Run) -> list[Finding]:
    """Benchmarks that ended in an error, not a skip (Benchmark.status, as each family's Failed
    list reads it): their figures, and whatever rule would have judged them, are missing. It
    leads the findings and the verdict (rank(), verdict()), so that a partial run is never read
    as a whole one."""
    failed = [b for b in run.benchmarks if b.status == "failed"]
    if not failed:
        return []
    families = Counter(b.parsed.family for b in failed)  # in the order they first failed
    where = ", ".join(family if len(families) == 1 else f"{n} in {family}"
                      for family, n in families.items())
    first, many = failed[0], len(failed) > 1
    title = f"{len(failed)} benchmark{'s' if many else ''} failed ({where})"
    error = " ".join((first.error or "no message").split()).rstrip(".")  # one line
    return [Finding(
        FAILED_RULE, "problem", title,
        f"{'The first to fail, ' if many else ''}{first.name}: {error}. What failed is missing "
        "from this report and from the findings below: see the Failed list in the section of "
        f"{' and '.join(families)}, fix the cause and run again.",
        cause=f"{title}, {'the first ' if many else ''}{first.name}: {error}")]


# ---- the GPU itself -----------------------------------------------------------------------

# The machine's own findings (no GPU, an old driver, a library mismatch, throttling, a lowered
# PCIe link, CPU frequency scaling, build types, a shared GPU) are judged once, in C++, by
# `gapbench doctor`'s rules (fixtures/doctor_rules.cpp); every results file carries them in its
# context as "finding.<id>": "<severity>: <text>", and this quotes them. A file from before
# they were carried has none, and says nothing about them.
FINDING_PREFIX = "finding."
MACHINE_TITLES = DOCTOR_TITLES


def machine_findings(context: dict) -> list[Finding]:
    """The machine findings a results file's context carries, in its order."""
    found = []
    for key, value in context.items():
        severity, _, text = str(value).partition(": ")
        if key.startswith(FINDING_PREFIX) and severity in SEVERITIES and text:
            rule = key[len(FINDING_PREFIX):]
            found.append(Finding(rule, severity,
                                 MACHINE_TITLES.get(rule, rule.replace("_", " ").capitalize()),
                                 text))
    return found


def rule_machine(run: Run) -> list[Finding]:
    return machine_findings(run.context)


def rule_machine_changed(run: Run) -> list[Finding]:
    """A file whose ceilings, measured at the start and the end of its run, moved more than
    STABILITY_DRIFT: the machine changed speed during that run (warning: its "% of peak" ratios
    and its times describe no one state of the machine)."""
    changed = [(file_family(r), drifts) for r in run.files if (drifts := ceiling_drifts(r))]
    if not changed:
        return []
    where = "; ".join(f"{family}: {', '.join(drifts)}" for family, drifts in changed)
    return [Finding(
        "machine_changed", "warning", "The machine changed speed during a run",
        f"Measured at the start and the end of each family's run, its ceilings moved more than "
        f"{pct(STABILITY_DRIFT)} in {len(changed)} run(s) ({where}). Those families' times and "
        "their ratios to the peak describe no one state of the machine (a busy shared VM, "
        "thermal limits): rerun them on a quiet machine before reading them.")]


# ---- the CPUs shared: other work beside the run, their parallel capacity, threads that fight ----

# What gives a job its CPUs back, in the user's own terms (other work, two hyperthreads of one
# core and threads that wait for each other all slow a threaded job the same way).
SHARED_CPUS_FIX = (
    "Give the job whole cores (stop the other work, or use a VM or container with dedicated "
    "vCPUs), or run fewer threads than CPUs (OMP_NUM_THREADS=1, torch.set_num_threads(1), "
    "tf.config.threading.set_intra_op_parallelism_threads(1)), and set OMP_WAIT_POLICY=PASSIVE "
    "so that waiting threads sleep instead of spinning.")
# The findings that say a run's CPU rows are slower than the machine can do: they head the
# verdict, before its losses (verdict()).
SHARED_CPUS_RULES = ("other_work", "threads_fight")


def cpus_noun(context: dict) -> str:
    """"vCPUs" on a virtual machine (host.hypervisor names one), else "CPUs"."""
    hypervisor = str(context.get("host.hypervisor", "")).strip()
    virtual = hypervisor not in ("", "none") and not hypervisor.startswith("unavailable")
    return "vCPUs" if virtual else "CPUs"


def _joined(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def other_work_where(files: list[Results], nested: bool = False) -> str:
    """"0.9 of a CPU during conv and lstm (steal 0%)" (`nested`, inside brackets: "..., steal
    0%"): each file's other work (metrics.OtherWork) that passed its limits, the families of
    equal figures together; where more than two figures differ, their range over the family
    runs: "0.8–1.1 CPUs during each of its 8 family runs (steal 0–2%)"."""
    seen = [(r, o) for r in files if (o := OtherWork.of(r)).seen]
    by_figures: dict[tuple[str, str], list[str]] = {}
    for r, other in seen:
        by_figures.setdefault((other.cpus_words, other.steal_words), []).append(file_family(r))
    if len(by_figures) > 2:
        cpus = [o.other_cpus for _, o in seen if o.other_cpus is not None]
        steals = [o.steal for _, o in seen if o.steal is not None]
        families = (f"each of its {len(seen)} family runs" if len(seen) == len(files) else
                    f"{len(seen)} of its {len(files)} family runs "
                    f"({_joined([file_family(r) for r, _ in seen])})")
        steal = ""
        if steals:
            lo, hi = f"{min(steals):.0%}", f"{max(steals):.0%}"
            steal = f"steal {lo}" if lo == hi else f"steal {lo}–{hi}"
        by_figures = {(cpus_worth(max(cpus), min(cpus)) if cpus else "", steal): [families]}
        return _during(by_figures, nested, joined=False)
    return _during(by_figures, nested)


def _during(by_figures: dict[tuple[str, str], list[str]], nested: bool,
            joined: bool = True) -> str:
    parts = []
    for (cpus, steal), families in by_figures.items():
        where = _joined(families) if joined else families[0]
        text = " ".join(p for p in (cpus, f"during {where}") if p)
        parts.append(text + ((f", {steal}" if nested else f" ({steal})") if steal else ""))
    return ", ".join(parts)


def rule_other_work(run: Run) -> list[Finding]:
    """A file whose run recorded other processes' CPU time (stability.other_cpus) of at least
    metrics.OTHER_WORK_CPUS, or steal of at least OTHER_WORK_STEAL: its rows are slower than the
    machine can do. It heads the verdict (SHARED_CPUS_RULES), and no defect is found in its
    rows for it (rule_above_ceiling, rule_library_not_best)."""
    where = other_work_where(list(run.files))
    if not where:
        return []
    return [Finding(
        "other_work", "warning", OTHER_WORK.title,
        f"Other work used these CPUs during the run: {where}; its rows are slower than this "
        f"machine can do. {SHARED_CPUS_FIX}",
        cause=f"Other work used these CPUs during the run: {where}")]


def capacity_readings(run: Run) -> tuple[list[tuple[str, float]], int | None]:
    """The CPUs' parallel capacity wherever the run measured it, as (where, all threads'
    FLOP rate over one thread's): the peak/ rows at their best repetitions, then each family
    file's FMA probes at its start and end; and the thread count they ran."""
    readings, threads = [], None
    if peak := peak_capacity(run.benchmarks):
        readings.append(("in peak/flops (best repetitions)", peak[0]))
        threads = peak[1]
    for r in run.library_files:
        probes, probe_threads = probe_capacity(r)
        threads = threads or probe_threads
        readings += [(f"at the {file_family(r)} run's {when}", value)
                     for when, value in probes.items()]
    return readings, threads


def steal_words(files) -> str:
    steals = [s for r in files if (s := OtherWork.of(r).steal) is not None]
    return f" (steal {max(steals):.0%})" if steals else ""


def rule_parallel_capacity(run: Run) -> list[Finding]:
    """The CPUs' real parallel capacity (capacity_readings). Read as a ceiling, at its best
    reading (other work only lowers it): far below their count (metrics.capacity_short), they
    are two hyperthreads of one core, or another tenant shares it, a warning. Where only some
    readings fell short, the capacity moved during the run (the host moved its vCPUs, or other
    work came and went): context, since threaded rows of two runs disagree for it."""
    readings, threads = capacity_readings(run)
    # A process held to fewer CPUs (taskset, a quota) reads that many at most: doctor's
    # fewer_usable_cpus says it, not a finding about the CPUs themselves.
    if not threads or not readings or fewer_cpus_than(run.context, threads):
        return []
    high_where, high = max(readings, key=lambda r: r[1])
    low_where, low = min(readings, key=lambda r: r[1])
    noun = cpus_noun(run.context)
    shown = (f"best {high:.1f}x ({high_where}), lowest {low:.1f}x ({low_where}), over "
             f"{len(readings)} readings")
    if capacity_short(high, threads):
        other = other_work_where(list(run.files), nested=True)
        why = (f"other work used them during the run ({other}), or they are two hyperthreads "
               "of one core (as on Colab)" if other else "they are two hyperthreads of one "
               f"core (as on Colab), or another tenant shares it{steal_words(run.files)}")
        return [Finding(
            "parallel_capacity", "warning", f"These {threads} {noun} deliver {high:.1f}x one",
            f"These {threads} {noun} deliver {high:.1f}x one: {why}. The register FMA loop on "
            f"all {threads} threads against one: {shown}. A threaded job gains at most "
            f"{high:.1f}x from them here. {SHARED_CPUS_FIX}",
            impact=threads / high, cause=f"{threads} {noun} that deliver {high:.1f}x one")]
    if not capacity_short(low, threads):
        return []
    return [Finding(
        "parallel_capacity", "info", f"These {threads} {noun}' parallel capacity moved",
        f"These {threads} {noun} delivered {high:.1f}x one at best but {low:.1f}x at times "
        f"during the run ({shown}): the host put them on one core's hyperthreads for a while, "
        "or other work came and went. Threaded rows of two runs, or of two families, can "
        "disagree for it; a row's own spread and its file's readings say whether it was hit.",
        cause=f"{threads} {noun} whose parallel capacity moved ({low:.1f}x to {high:.1f}x one)")]


# Library threads on every CPU this much slower than on one, or more: they fight.
THREADS_FIGHT = 1.2
THREADS_FIGHT_TITLE = "'s threads fight over these CPUs"
OP_WORDS = {"lstm_step": "LSTM step", "lstm": "LSTM", "conv": "conv", "matmul": "matmul",
            "dense": "dense step"}
FRAMEWORK_WORDS = {"torch": "PyTorch", "tensorflow": "TensorFlow"}


def library_words(b: Benchmark) -> str:
    variant = b.parsed.variant
    return CPU_LIBRARY_OF.get(variant) or FRAMEWORK_WORDS.get(variant) or variant_label(variant)


def op_words(b: Benchmark) -> str:
    """"LSTM step (batch 64 · input 50 · hidden 64)"."""
    axes = {k: v for k, v in b.parsed.axes.items() if k not in ("op", THREADS_AXIS)}
    op = b.parsed.axes.get("op", b.parsed.family)
    words = OP_WORDS.get(op, op.replace("_", " "))
    return f"{words} ({axes_label(axes)})" if axes else words


def twin_threads(b: Benchmark, results: Results | None, context: dict) -> int | None:
    """The threads a lib_threads:all row ran: its own counter, else its file's FMA probe's
    thread count (every CPU online), else the cores."""
    for value in (b.counter(THREADS_AXIS),
                  results.context.get("stability.fma_threads") if results else None,
                  context.get("cpu.cores")):
        if (n := number(value)) and n >= 1:
            return round(n)
    return number(b.parsed.axes.get(THREADS_AXIS)) and int(b.parsed.axes[THREADS_AXIS])


def fewer_cpus_than(context: dict, threads: int | None) -> str:
    """"1 of the 2 CPUs (its CPU affinity)" where this process may use fewer CPUs than
    `threads` (an affinity, a quota: core/causes.py), else ""."""
    usable = usable_cpus(context)
    if not threads or not usable or usable[0] > threads - 0.5:
        return ""
    why, _ = fewer_cpus_why(context)
    return f"{usable[0]:g} of the {threads} CPUs" + (f" ({why})" if why else "")


def fight_evidence(run: Run, results: Results | None, threads: int | None = None) -> str:
    """Why threads fight here, from the twin's file: fewer usable CPUs than threads, the other
    work it recorded, else the CPUs' capacity."""
    if few := fewer_cpus_than(run.context, threads):
        on = "it" if few.startswith("1 of") else "them"
        return (f"this job may use {few}, and its {threads} threads take turns on {on}, each "
                "waiting a whole scheduler slice for the other at every barrier")
    other = OtherWork.of(results) if results else None
    if other and other.seen:
        steal = f" ({other.steal_words})" if other.steal_words else ""
        return (f"other work took {other.cpus_words or 'CPU time'} during the run{steal}, and "
                "threads that wait for each other stall for a whole scheduler slice")
    readings, threads = capacity_readings(run)
    mine = [value for where, value in readings if results and file_family(results) in where]
    shown = mine or [value for _, value in readings]
    capacity = (f" (all {threads} threads deliver {min(shown):.1f}x one thread's FMA rate)"
                if shown and threads else "")
    quiet = f"; no other work was recorded ({other.words()})" if other and other.recorded else ""
    return (f"these {cpus_noun(run.context)} hand work between each other slowly here"
            f"{capacity}{quiet}")


def rule_threads_fight(run: Run) -> list[Finding]:
    """A library op whose lib_threads:all twin (same_work.thread_twins) takes THREADS_FIGHT
    times its one-thread twin's time or more: its threads fight over the CPUs. One finding per
    library, quoting its worst op, with the evidence from its file."""
    worst: dict[str, list[tuple[float, Benchmark, Benchmark]]] = {}
    for one, every in thread_twins(run.benchmarks):
        ratio = every.median / one.median
        if ratio >= THREADS_FIGHT:
            worst.setdefault(library_words(every), []).append((ratio, one, every))
    found = []
    for library, fights in worst.items():
        ratio, one, every = max(fights, key=lambda f: f[0])
        threads = twin_threads(every, run.file_of(every), run.context)
        many = f"{threads} threads" if threads else "every CPU's thread"
        others = "; ".join(f"its {op_words(b)} {fmt_ratio(r)}" for r, _, b in
                           sorted(fights, key=lambda f: -f[0])[1:])
        also = f" Also with {many} against 1: {others}." if others else ""
        head = (f"{library}'s {op_words(every)} takes {fmt_ratio(ratio)} as long with {many} "
                "as with 1 here")
        found.append(Finding(
            "threads_fight", "warning", f"{library}{THREADS_FIGHT_TITLE}",
            f"{head} ({fmt_seconds(every.median)} against {fmt_seconds(one.median)}): "
            f"{fight_evidence(run, run.file_of(every), threads)}.{also} {SHARED_CPUS_FIX}",
            impact=ratio, cause=head.removesuffix(" here"), subject=every.name))
    return found


def unsteady_ceilings(results: Results, files) -> list[str]:
    """What makes a file's ceilings no ceiling (metrics.unsteady): its own run's, and that of
    the peak file it is judged against."""
    found = unsteady(results)
    if not own_peak_rows(results):
        peak_file, why = named_peak_file(results, files)
        if peak_file is not None and not why:
            found += unsteady(peak_file)
    return found


# ---- memory -----------------------------------------------------------------------------

def rule_memory_skips(run: Run) -> list[Finding]:
    """GPU variants skipped because the size did not fit in free GPU memory (problem: the
    classic "insufficient GPU memory")."""
    skipped = [b for b in run.benchmarks
               if b.skip_reason and b.skip_reason.startswith("needs ")]
    if not skipped:
        return []
    example = skipped[0]
    return [Finding("memory_skips", "problem", "Sizes skipped for lack of GPU memory",
                    f"{len(skipped)} GPU benchmark(s) did not fit, e.g. the "
                    f"{describe(example.parsed)}: {example.skip_reason}. Free the GPU (other "
                    "processes, notebooks) or use smaller batches.")]


# ---- transfer -----------------------------------------------------------------------------

# Pinned at least this many times faster than pageable: pageable staging is costing you.
PAGEABLE_SLOWDOWN = 1.5
# Pinned copies below this share of the link's theoretical bandwidth: the link is the problem.
LINK_SHARE = 0.5


def rule_pageable_vs_pinned(run: Run) -> list[Finding]:
    found = []
    for direction in ("h2d", "d2h"):
        pair = transfer_pair(run.benchmarks, direction, "sync")
        if not pair:
            continue
        size, pinned, pageable = pair
        p, q = pinned.counter("bytes_per_second"), pageable.counter("bytes_per_second")
        if p and q and p >= PAGEABLE_SLOWDOWN * q:
            found.append(Finding(
                "pageable_vs_pinned", "warning", f"Pageable {direction} copies are slow",
                f"At {mib(size)}, pinned {direction} moves {p / 1e9:.1f} GB/s, pageable "
                f"{q / 1e9:.1f} GB/s ({p / q:.1f}x). Use pinned host memory "
                "(pin_memory=True in a DataLoader, cudaHostAlloc).",
                impact=p / q, cause=f"pageable {direction} copies", subject=pageable.name))
    return found


def rule_pcie_link(run: Run) -> list[Finding]:
    """Pinned copies far under the link's theoretical bandwidth (the classic "slow PCIe
    connection"; a link below its generation or width is a machine finding)."""
    found = []
    link = number(run.context.get("pcie.bandwidth_max_gbps"))
    for direction in ("h2d", "d2h"):
        best = largest(find(run.benchmarks, "transfer", "pinned", "gpu", dir=direction,
                            mode="async"), "bytes")
        rate = best.counter("bytes_per_second") if best else None
        if link and rate and rate < LINK_SHARE * link * 1e9:
            found.append(Finding(
                "transfer_under_link", "warning", f"{direction} far under the PCIe link",
                f"Pinned {direction} copies reach {rate / 1e9:.1f} GB/s, {pct(rate / (link * 1e9))}"
                f" of the link's theoretical {link:.1f} GB/s.",
                impact=link * 1e9 / rate, cause=f"{direction} copies far under the PCIe link",
                subject=best.name))
    return found


# ---- kernels and code -----------------------------------------------------------------------

# Element-wise at least this many times slower than vectorized: worth rewriting the loop.
ELEMENTWISE_SLOWDOWN = 5.0


def rule_elementwise(run: Run) -> list[Finding]:
    found = []
    for key, ratio in preprocess_metrics(run.benchmarks).items():
        if "element-wise / vectorized" in key and ratio and ratio >= ELEMENTWISE_SLOWDOWN:
            op, device = key.split()[1].rstrip(":"), key.split()[2]
            found.append(Finding(
                "elementwise_vs_vectorized", "warning",
                f"Per-element {op} on the {device} is {ratio:.0f}x slower",
                f"Processing one element (or one row/image) at a time takes {ratio:.1f}x the "
                f"time of one vectorized pass over the batch ({op}, {device}). Use whole-array "
                "operations (NumPy, tf/torch ops on the batch), not Python loops.",
                impact=ratio, cause=f"per-element loops ({op}, {device})", lesson=True))
    return found


# A hand-written variant this many times slower than the library on the same shape.
NAIVE_SLOWDOWN = 10.0
LIBRARIES = ("cudnn", "cublas", "onednn", "openblas", "im2col_blas", "blas")


def rule_naive_vs_library(run: Run) -> list[Finding]:
    """One finding per family and device: on how many shapes the naive variant is far behind
    the fastest library variant, quoting the worst."""
    worst: dict[tuple[str, str], list[tuple[float, Benchmark, Benchmark]]] = {}
    libraries = fastest_by((b for b in run.benchmarks if b.parsed.variant in LIBRARIES),
                           key=lambda b: (work(b), b.parsed.device))
    for naive in (b for b in run.benchmarks if b.parsed.variant == "naive" and b.median):
        best = libraries.get((work(naive), naive.parsed.device))
        if best and naive.median >= NAIVE_SLOWDOWN * best.median:
            key = (naive.parsed.family, naive.parsed.device)
            worst.setdefault(key, []).append((naive.median / best.median, naive, best))
    found = []
    for (family, device), rows in worst.items():
        ratio, naive, best = max(rows, key=lambda r: r[0])
        found.append(Finding(
            "naive_vs_library", "warning",
            f"Hand-written {family} on the {device.upper()} is up to {ratio:.0f}x slower",
            f"On {len(rows)} shape(s) the naive {family} is at least {NAIVE_SLOWDOWN:g}x slower "
            f"than the library; worst, the {describe(naive.parsed)} takes {ratio:.1f}x the time "
            f"of {variant_label(best.parsed.variant)}, both in {math_words(best.math)}."
            " Use the library op.",
            impact=ratio, cause=f"hand-written {family} ({device})", lesson=True))
    return found


# OpenBLAS's best float32 row below this share of the CPU's physical float32 peak: a slow BLAS
# (numpy's wheels ship OpenBLAS, and its kernels for an older core run at half the peak on a
# newer CPU: 47% with its Haswell kernels on an AVX-512 Zen, 83-89% with its own).
SLOW_BLAS_SHARE = 0.6
BLAS = "OpenBLAS"


def blas_kernels(context: dict) -> str:
    """"its Haswell kernels, forced by OPENBLAS_CORETYPE=Haswell", from the context's
    openblas.core and what doctor recorded of the environment (openblas.coretype)."""
    core = context.get("openblas.core")
    kernels = f"its {core} kernels" if core else "the kernels it chose"
    forced = context.get("openblas.coretype")
    return (f"{kernels}, forced by OPENBLAS_CORETYPE={forced}" if forced
            else f"{kernels}, chosen for this CPU" if core else kernels)


def rule_slow_blas(run: Run) -> list[Finding]:
    """OpenBLAS's best float32 row (its SGEMM, peak/sgemm/cpu, among them) under SLOW_BLAS_SHARE
    of the CPU's physical float32 peak (metrics.cpu_library_shares): a BLAS far below the
    machine's limit. Priced where another library reached more of the same peak: OpenBLAS's
    work at that share would take share/best of its time."""
    shares = cpu_library_shares(run.benchmarks)
    if BLAS not in shares or shares[BLAS][0] >= SLOW_BLAS_SHARE:
        return []
    share, row = shares[BLAS]
    peak = cpu_flop_peak(run.benchmarks, FP32)
    kernels = blas_kernels(run.context)
    others = {lib: s for lib, (s, _) in shares.items() if lib != BLAS}
    best = max(others, key=others.get) if others else None
    said = "; ".join(f"{lib} reaches {pct(s)}" for lib, s in others.items())
    text = (f"{BLAS} reaches {pct(share)} of {cpu_peak_words(peak, cpu_flop_cap(run.benchmarks))}"
            f" ({kernels})"
            f"{'; ' + said if said else ''}. Its best row, {row.name}, computes "
            f"{fmt_si(row.counter('flops'), 'FLOP/s')} against the hardware's "
            f"{fmt_si(peak.counter('flops'), 'FLOP/s')}.")
    impact = None
    if best and others[best] > share:
        impact = others[best] / share
        text += (f" At {best}'s share, {BLAS}'s work would take {share / others[best]:.2f} of "
                 f"its time ({impact:.1f}x faster).")
    else:
        text += " No other library measured here reaches more, so its cost is not priced."
    if run.context.get("openblas.coretype"):
        text += (" Unset OPENBLAS_CORETYPE so that OpenBLAS runs this CPU's own kernels.")
    else:
        text += (" An OpenBLAS older than this CPU runs an older core's kernels: a newer "
                 "OpenBLAS (numpy and SciPy wheels ship their own), or a BLAS built for this "
                 "CPU (oneDNN's matmul, MKL on Intel, AOCL on AMD), does more of the peak.")
    return [Finding("slow_blas", "warning", f"{BLAS} reaches {pct(share)} of this CPU's "
                    "float32 peak", text, impact=impact, subject=row.name,
                    cause=f"a slow BLAS ({BLAS} at {pct(share)} of the CPU's peak, {kernels})")]


# ---- GPU against CPU ------------------------------------------------------------------------

def rule_gpu_loses(run: Run) -> list[Finding]:
    """A GPU end-to-end variant slower than the best CPU variant of the same shape, and why:
    its overhead_share (transfer, launch and sync). Where a family sweeps a size axis (`n`, or
    `rows` in preprocess), the crossover size above which the GPU wins."""
    found = []
    e2e = [b for b in run.benchmarks
           if b.parsed.device == "gpu" and b.parsed.variant.endswith("_e2e") and b.median]
    cpu = fastest_by((b for b in run.benchmarks if b.parsed.device == "cpu"), key=work)
    losing: dict[str, list[tuple[float, Benchmark, Benchmark]]] = {}
    for g in e2e:
        best = cpu.get(work(g))
        if best and g.median > best.median:
            losing.setdefault(g.parsed.family, []).append((g.median / best.median, g, best))
    for family, rows in losing.items():  # one finding per family: one cause, its worst case
        ratio, g, best = max(rows, key=lambda r: r[0])
        share = g.counter("overhead_share")
        why = (f"; {pct(share)} of its time is transfer, launch and sync, not compute"
               if share is not None else "")
        others = f" (and {len(rows) - 1} more {family} cases)" if len(rows) > 1 else ""
        found.append(Finding(
            "gpu_loses_to_cpu", "warning", f"GPU slower than CPU: {family}",
            f"The {describe(g.parsed)} takes {ratio:.1f}x the time of the CPU's "
            f"{variant_label(best.parsed.variant)}{why}{others}. Small work, or work dominated "
            "by copies, belongs on the CPU or in bigger batches.",
            impact=ratio, cause=f"the GPU losing to the CPU on small {family} work",
            subject=g.name))
    found += _crossovers(e2e, cpu)
    return found


SWEEP_AXES = ("n", "rows")


def _crossovers(e2e: list[Benchmark], cpu: dict[Hashable, Benchmark]) -> list[Finding]:
    """`cpu`: the fastest CPU variant of each shape."""
    found = []
    for axis in SWEEP_AXES:
        series: dict[tuple, list[tuple[float, float, float]]] = {}
        for g in e2e:
            size = number(g.parsed.axes.get(axis))
            best = cpu.get(work(g))
            if size is None or not best:
                continue
            rest = tuple(sorted((k, v) for k, v in g.parsed.axes.items() if k != axis))
            series.setdefault((g.parsed.family, g.parsed.variant, rest), []).append(
                (size, best.median, g.median))
        for (family, variant, rest), points in series.items():
            if len(points) < 2:
                continue
            points.sort()
            xs, cpu_t, gpu_t = zip(*points)
            at = crossover(list(xs), list(cpu_t), list(gpu_t))
            what = f"the GPU's {variant_label(variant)} {family} ({axes_label(dict(rest))})"
            if at is None:
                text = f"In {what}, the GPU never beats the CPU up to {axis} {xs[-1]:g}."
            elif at == xs[0]:
                continue  # wins everywhere measured: nothing to say
            else:
                text = (f"In {what}, the GPU beats the CPU from {axis} {at:g} up; below that "
                        "its fixed costs dominate.")
            found.append(Finding("gpu_crossover", "info", f"GPU/CPU crossover in {family}", text))
    return found


# ---- input pipeline and batch size -----------------------------------------------------------

# The consumer waiting this share of its time for input: a CPU-bound pipeline.
IDLE_SHARE = 0.3
# Smallest batch below this share of the largest batch's samples/s: batch too small.
BATCH_FILL = 0.25


# A pipeline variant must beat `none` by this factor in batches/s for its advice to be given.
PIPELINE_GAIN = 1.05
# A stage's measured cost this far from its nominal cost (either way): the calibration drifted.
STAGE_DRIFT = 0.10


def _pipeline_case(b: Benchmark) -> tuple:
    """What makes pipeline variants comparable: the device and the two stage costs."""
    axes = b.parsed.axes
    return b.parsed.device, axes.get("produce_ms"), axes.get("consume_ms")


def _pipeline_fastest(run: Run) -> dict[tuple, dict[str, Benchmark]]:
    """The fastest benchmark (batches/s) of each pipeline variant, per case."""
    fastest: dict[tuple, dict[str, Benchmark]] = {}
    for b in run.benchmarks:
        if b.parsed.family == "pipeline" and (rate := b.counter("items_per_second")):
            case = fastest.setdefault(_pipeline_case(b), {})
            best = case.get(b.parsed.variant)
            if best is None or rate > best.counter("items_per_second"):
                case[b.parsed.variant] = b
    return fastest


def rule_pipeline_idle(run: Run) -> list[Finding]:
    """`none` waiting for input, with the advice its siblings' measured rates support: prefetch
    or parallel producers only where they were measured faster than `none`, and where the cores
    limit the faster one, that more workers cannot help."""
    fastest = _pipeline_fastest(run)
    found = []
    for b in run.benchmarks:
        idle = b.counter("idle_fraction")
        if b.parsed.family != "pipeline" or b.parsed.variant != "none" or idle is None \
                or idle < IDLE_SHARE:
            continue
        device, produce, consume = case = _pipeline_case(b)
        text = (f"Without prefetch ({device.upper()}, producer {produce} ms and step {consume} ms "
                f"per batch) the training step waits {pct(idle)} of the time for the next batch.")
        measured = {v: f.counter("items_per_second") for v, f in fastest.get(case, {}).items()}
        none_rate = measured.get("none")
        helpers = {v: r for v, r in measured.items() if v in ("prefetch", "parallel")}
        impact = 1 / (1 - idle) if idle < 1 else None  # were the step never kept waiting
        if not none_rate or not helpers:
            text += " Prefetch was not measured beside it."
        elif (gain := max(helpers.values()) / none_rate) >= PIPELINE_GAIN:
            best = max(helpers, key=helpers.get)
            how = ("prefetch (tf.data prefetch, a DataLoader worker)" if best == "prefetch"
                   else "several producers (tf.data num_parallel_calls, DataLoader workers)")
            text += f" Measured here, {how} gave {gain:.2f}x the batches/s: use it."
            ideal = pipeline_ideal(fastest[case][best])
            if ideal and ideal.limit == "cores":
                text += (f" Beyond that, this machine's {ideal.cores} cores are the limit, not "
                         "the producers: more workers cannot help (see \"The cores limit the input "
                         "pipeline\").")
            impact = gain  # what was measured to be lost, not the bound
        else:
            others = ", ".join(f"{v} {r:.0f}" for v, r in sorted(helpers.items()))
            text += (f" But neither prefetch nor parallel producers measured faster here ({others}"
                     f" against none's {none_rate:.0f} batches/s): the stages compete for this "
                     "machine's cores, so overlap cannot help until the producer costs less "
                     "(cache decoded data, vectorize the preprocessing).")
        found.append(Finding("pipeline_idle", "warning", "The consumer waits for input", text,
                             impact=impact, subject=b.name,
                             cause="an input pipeline that starves the training step"))
    # One finding for the cause: the case that loses most (the others are named by count).
    if len(found) > 1:
        worst = max(found, key=lambda f: f.impact or math.inf)
        more = len(found) - 1
        found = [replace(worst, text=f"{worst.text} ({more} more case{'s' if more > 1 else ''} "
                                     f"wait{'' if more > 1 else 's'} {pct(IDLE_SHARE)} or more.)")]
    return found


def rule_pipeline_cores(run: Run) -> list[Finding]:
    """Pipeline variants whose ideal the cores cap (fewer cores than busy threads: producers
    plus a CPU consumer), where more workers cannot help. Quotes the one the cores cut most: its
    measured share of that ideal, and how far its stage costs moved over the repetitions, so a
    noisy machine is told from a slow pipeline."""
    capped = [(b, i) for b in run.benchmarks
              if b.parsed.family == "pipeline" and (i := pipeline_ideal(b)) and i.limit == "cores"]
    if not capped:
        return []
    b, ideal = max(capped, key=lambda c: c[1].stages_allow / c[1].bounds["cores"])
    workers = b.parsed.axes.get("workers", "1")
    producers = "1 producer" if workers == "1" else f"{workers} producers"
    cpu = ("producing and consuming one batch take" if b.parsed.device == "cpu"
           else "producing one batch takes (the GPU step's thread sleeps)")
    cpu_ms = ideal.cores / ideal.bounds["cores"] * 1e3
    text = (f"On the {ideal.cores} cores this process may use, {variant_label(b.parsed.variant)} "
            f"with {producers} ({b.parsed.device.upper()}, producer "
            f"{b.parsed.axes.get('produce_ms')} ms and step {b.parsed.axes.get('consume_ms')} ms "
            f"per batch) is limited by the cores, not its producers: {cpu} {cpu_ms:.1f} ms of CPU "
            f"time, so its ideal is {ideal.bounds['cores']:.0f} batches/s, under the "
            f"{ideal.stages_allow:.0f} its stages would allow with a core per thread. It "
            f"measured {ideal.rate:.0f}, {pct(ideal.ratio)} of that ideal. More workers cannot "
            "help here; less CPU time per batch can: a cheaper producer (cache decoded data, "
            "vectorize the preprocessing), a step off these cores (on the GPU, with waits that "
            f"sleep), or more cores. Its stage costs, each measured alone beside its "
            f"{len(b.samples)} repetitions, ran {ideal.stage_ranges}")
    if ideal.stage_spread > STAGE_DRIFT:
        text += (f", {pct(ideal.stage_spread)} apart: the machine's speed moved under the run "
                 "(other jobs, a VM's steal time), and the ratio with it")
    text += "."
    if len(capped) > 1:
        text += f" ({len(capped) - 1} more pipeline variant(s) limited by the cores.)"
    return [Finding("pipeline_cores", "info", "The cores limit the input pipeline", text,
                    subject=b.name)]


def rule_pipeline_stage_drift(run: Run) -> list[Finding]:
    """Stage costs measured beside a run that moved from their nominal (calibrated) cost: the
    pipeline's rates then describe other stage costs than its name says."""
    drifted = []
    for b in run.benchmarks:
        if b.parsed.family != "pipeline":
            continue
        for stage in ("produce", "consume"):
            nominal = number(b.parsed.axes.get(f"{stage}_ms"))
            measured = b.counter(f"{stage}_ms_measured")
            if nominal and measured and abs(measured / nominal - 1) > STAGE_DRIFT:
                drifted.append((abs(measured / nominal - 1), stage, nominal, measured, b))
    if not drifted:
        return []
    drifted.sort(key=lambda d: -d[0])
    worst = "; ".join(f"{stage} {nominal:g} ms measured {measured:.1f} ms beside "
                      f"{b.parsed.variant} ({b.parsed.device.upper()})"
                      for _, stage, nominal, measured, b in drifted[:3])
    return [Finding(
        "pipeline_stage_drift", "info", "Pipeline stage costs moved from their calibration",
        f"{len(drifted)} stage cost{'s were' if len(drifted) > 1 else ' was'} more than "
        f"{pct(STAGE_DRIFT)} off {'their' if len(drifted) > 1 else 'its'} nominal value "
        f"during the run ({worst}). The machine's speed changed between calibration and run, or "
        "the stages slowed each other: judge those variants against their ideal, not by name.")]


def rule_batch_too_small(run: Run) -> list[Finding]:
    found = []
    groups: dict[tuple, list[Benchmark]] = {}
    for b in run.benchmarks:
        if b.parsed.family == "overhead" and b.parsed.device == "gpu" and "batch" in b.parsed.axes \
                and b.counter("items_per_second"):
            rest = tuple(sorted((k, v) for k, v in b.parsed.axes.items() if k != "batch"))
            groups.setdefault((b.parsed.variant, rest), []).append(b)
    for (variant, _), rows in groups.items():
        rows.sort(key=lambda b: number(b.parsed.axes["batch"]) or 0)
        small, big = rows[0], rows[-1]
        ratio = small.counter("items_per_second") / big.counter("items_per_second")
        if len(rows) > 1 and ratio < BATCH_FILL:
            found.append(Finding(
                "batch_too_small", "warning", "Batch too small to fill the GPU",
                f"The GPU's {variant_label(variant)} dense step at batch "
                f"{small.parsed.axes['batch']} processes {pct(ratio)} of the samples/s it "
                f"reaches at batch {big.parsed.axes['batch']}.",
                # True of every GPU at a small enough batch: a lesson, ranked by its size.
                impact=1 / ratio, lesson=True))
    return [max(found, key=lambda f: f.impact or 0.0)] if found else []


# ---- LSTM steps against the launch floor ---------------------------------------------------

# Kernel launches one cuBLAS LSTM step makes (the gates' SGEMM, the fused pointwise kernel).
LSTM_STEP_LAUNCHES = 2
# A step whose wall time is within this factor of what the host alone needs for its launches and
# a synchronize is launch-bound: the GPU waits for the host, whatever its speed.
LAUNCH_BOUND = 3.0


def _launch_figure(run: Run, what: str) -> float | None:
    return next((b.median for b in run.benchmarks if b.parsed.family == "overhead"
                 and b.parsed.variant == "launch" and b.parsed.axis("what") == what
                 and b.median), None)


def rule_lstm_launch_bound(run: Run) -> list[Finding]:
    """GPU LSTM steps that cost little more than their kernel launches (small-batch LSTMs are
    launch- and latency-bound, so a faster GPU does not help). Like with like: the step's host
    wall time until it is complete (cublas_e2e) against the host's own floor for it, one launch
    and a synchronize (overhead/launch what:launch_sync) and one more launch (what:launch). The
    kernel-timed step is device time with the launches held out, so it is never compared."""
    launch, launch_sync = _launch_figure(run, "launch"), _launch_figure(run, "launch_sync")
    if launch is None or launch_sync is None:
        return []
    floor = launch_sync + (LSTM_STEP_LAUNCHES - 1) * launch
    bound = [b for b in run.benchmarks
             if b.parsed.family == "lstm" and b.parsed.variant == "cublas_e2e" and b.median
             and b.parsed.device == "gpu" and b.parsed.axis("scope") == "step"
             and b.median <= LAUNCH_BOUND * floor]
    if not bound:
        return []
    b = min(bound, key=lambda x: x.median)  # the most launch-bound: one finding
    twins = {x.parsed.variant: x.median for x in run.benchmarks
             if x.parsed.family == "lstm" and x.parsed.device == "gpu" and x.median
             and x.parsed.axes == b.parsed.axes}
    device = (f" Its kernels take {fmt_seconds(twins['cublas'])} of device time."
              if "cublas" in twins else "")
    graph = (f" Replayed as a CUDA graph (cublas_graph_e2e) it takes "
             f"{fmt_seconds(twins['cublas_graph_e2e'])}." if "cublas_graph_e2e" in twins else "")
    others = f" ({len(bound) - 1} more shapes too)" if len(bound) > 1 else ""
    return [Finding(
        "lstm_launch_bound", "warning", "LSTM steps are launch-bound",
        f"The {describe(b.parsed)} takes {fmt_seconds(b.median)} from its first launch until "
        f"it is complete, {b.median / floor:.1f}x the {fmt_seconds(floor)} the host needs for its "
        f"{LSTM_STEP_LAUNCHES} launches and a synchronize alone: the GPU waits for the "
        f"host{others}.{device}{graph} Replay the steps as a CUDA graph, run the whole sequence "
        "in cuDNN, or use bigger batches.",
        cause="LSTM steps bound by kernel launches", subject=b.name)]


# ---- precision ------------------------------------------------------------------------------

# A math mode (tf32, fp16, bf16) at least this many times faster than float32 on the same op and
# size: mixed precision is worth turning on here.
MIXED_PRECISION_GAIN = 1.5


def rule_mixed_precision(run: Run) -> list[Finding]:
    """Per device, the largest speed-up a math mode measured over float32 on the same op and
    size (the same benchmark with math:fp32, or without the math axis). A fact about the
    hardware (tensor cores, AVX-512 BF16), not a loss this machine has: the same 10x and more on
    every recent GPU, a loss only where a model computes in float32. So it is info, ranks after
    every measured loss and never heads the verdict (no cause); its factor still ranks it."""
    by_op: dict[tuple, dict[str, Benchmark]] = {}
    for b in run.benchmarks:
        if b.median:
            axes = frozenset(b.parsed.axes_but_math().items())
            key = (b.parsed.family, b.parsed.variant, b.parsed.device, axes)
            by_op.setdefault(key, {})[b.math] = b
    best: dict[str, tuple[float, Benchmark, Benchmark]] = {}
    for modes in by_op.values():
        base = modes.get(FP32)
        if base is None:
            continue
        for fast in (b for mode, b in modes.items() if mode != FP32):
            gain = base.median / fast.median
            device = fast.parsed.device
            if gain >= MIXED_PRECISION_GAIN and gain > best.get(device, (0.0,))[0]:
                best[device] = (gain, fast, base)
    found = []
    for device, (gain, fast, base) in best.items():
        mode = fast.math
        hardware = "its tensor cores" if device == "gpu" else "its vector units"
        found.append(Finding(
            "mixed_precision", "info",
            f"{mode} is {gain:.1f}x faster than float32 on the {device.upper()}",
            f"The {describe(fast.parsed)} takes {fast.median / base.median:.2f} of the float32 "
            f"time ({fmt_seconds(fast.median)} against {fmt_seconds(base.median)}): what "
            f"{hardware} offer, not a loss this machine has; it costs only a model that computes "
            "in float32. Where its accuracy allows, compute in the faster mode: torch.autocast, "
            "Keras' mixed_float16 or mixed_bfloat16 policy, or TF32 for float32 matmuls "
            "(torch.backends.cuda.matmul.allow_tf32).",
            impact=gain, subject=base.name))
    return found


# ---- the user's framework (the probe's files) ------------------------------------------------

def framework_who(context: dict) -> str:
    name, version = context.get("framework.name", "the framework"), context.get(
        "framework.version", "")
    return f"{name} {version}".strip()


def rule_framework_misses_gpu(run: Run) -> list[Finding]:
    """gapbench (doctor's facts, in its files' context) uses a GPU that the framework does not
    see on the same machine: the user's model silently runs on the CPU."""
    seen = {r.context.get("machine.id"): r.context for r in run.library_files
            if r.context.get("gpu.status") == "ok"}
    found = []
    for r in run.framework_files:
        ctx = r.context
        if ctx.get("framework.status") != "ok" or ctx.get("gpu.status") == "ok":
            continue  # not installed (nothing ran), or it sees the GPU
        library = seen.get(ctx.get("machine.id")) if ctx.get("machine.id") else None
        if library is None:
            continue  # no GPU for gapbench on the machine the probe ran on (or not known which)
        gpu = library.get("gpu.name") or "a GPU"
        who, name = framework_who(ctx), ctx.get("framework.name", "the framework")
        gpu_skips = sum(b.parsed.device == "gpu" and b.status == "skipped"
                        for b in r.benchmarks().values())
        skips = (f", and the probe skipped its {gpu_skips} GPU benchmark"
                 f"{'s' if gpu_skips > 1 else ''}" if gpu_skips else "")
        cuda_built = str(ctx.get("framework.cuda_built", ""))
        if cuda_built.startswith("none"):  # the probe's "none (CPU-only build)"
            advice = (f"It is a CPU-only build: install {name}'s CUDA build (for torch, the wheel "
                      "for your CUDA from pytorch.org; for TensorFlow, tensorflow[and-cuda]).")
        else:  # a CUDA build, or one the probe could not tell ("unknown: ...", absent)
            advice = (f"Install a {name} built for the CUDA your driver supports, or update the "
                      "NVIDIA driver; check CUDA_VISIBLE_DEVICES.")
        found.append(Finding(
            "framework_misses_gpu", "problem", f"{who} does not see the GPU",
            f"gapbench uses the {gpu} here, but {who} does not see it: {ctx.get('gpu.status')}. "
            f"Your model runs on the CPU{skips}. {advice}",
            cause=f"{name} not using the GPU"))
    return found


def rule_framework_cuda_newer(run: Run) -> list[Finding]:
    """The framework built for a CUDA newer than the driver supports: a newer major version
    cannot use the GPU at all (problem); a newer minor one runs through CUDA's minor-version
    compatibility, except kernels the framework ships only as PTX (warning)."""
    library_driver = next((r.context.get("cuda.driver_version") for r in run.library_files
                           if framework.cuda_version(r.context.get("cuda.driver_version"))), None)
    found = []
    for r in run.framework_files:
        ctx = r.context
        built = framework.cuda_version(ctx.get("framework.cuda_built"))
        driver = framework.cuda_version(ctx.get("cuda.driver_version")) or \
            framework.cuda_version(library_driver)
        if not (built and driver and built > driver):
            continue
        who, name = framework_who(ctx), ctx.get("framework.name", "the framework")
        versions = (f"{who} is built for CUDA {built[0]}.{built[1]}; the NVIDIA driver supports "
                    f"CUDA up to {driver[0]}.{driver[1]}")
        if built[0] > driver[0]:
            found.append(Finding(
                "framework_cuda_newer", "problem", f"{who}'s CUDA is newer than the driver",
                f"{versions}: a newer major version, so {name} cannot use the GPU. Update the "
                f"NVIDIA driver, or install a {name} built for CUDA {driver[0]}.",
                cause=f"{name}'s CUDA newer than the driver"))
        else:
            found.append(Finding(
                "framework_cuda_newer", "warning", f"{who}'s CUDA is newer than the driver",
                f"{versions}. It runs through CUDA's minor-version compatibility, but kernels "
                f"{name} ships only as PTX fail to load, and some features need the newer "
                "driver. Update the NVIDIA driver."))
    return found


# A framework op taking this many times the library's time for the same smallest work: the
# framework's per-op overhead (dispatch, Python, checks) dominates.
FRAMEWORK_OVERHEAD = 3.0


def rule_framework_overhead(run: Run) -> list[Finding]:
    """Per framework and device, the smallest matmul both measured: the framework's time over
    the library's, and the difference, its overhead per op. On the GPU the library's figure is
    kernel time only, while the framework's call also launches and waits: gapbench's own launch
    and sync floor is added to the library's side, and without it the GPU stays unjudged."""
    smallest: dict[tuple[str, str], framework.Pair] = {}
    for pair in run.pairs:
        if pair.op != "matmul" or pair.compiled:
            continue
        name = pair.framework.parsed
        key = (name.variant, name.device)
        if key not in smallest or int(name.axis("n") or 0) < int(
                smallest[key].framework.parsed.axis("n") or 0):
            smallest[key] = pair
    floor = next((b.median for b in run.benchmarks if b.parsed.family == "overhead"
                  and b.parsed.variant == "launch" and b.parsed.axis("what") == "launch_sync"
                  and b.median), None)
    found = []
    for (_, device), pair in smallest.items():
        kernel = pair.library.median
        if device == "gpu":
            if floor is None:
                continue
            library = kernel + floor
            what = (f"{fmt_seconds(library)} of {pair.library_name}'s kernel "
                    f"({fmt_seconds(kernel)}) and a bare kernel launch and sync "
                    f"({fmt_seconds(floor)})")
        else:
            library, what = kernel, f"{fmt_seconds(kernel)} of {pair.library_name}"
        ratio = pair.framework.median / library
        if ratio < FRAMEWORK_OVERHEAD:
            continue
        n = pair.framework.parsed.axis("n")
        extra = pair.framework.median - library
        found.append(Finding(
            "framework_overhead", "warning",
            f"{pair.name} pays {fmt_seconds(extra)} per op on the {device.upper()}",
            f"A {n}x{n} matmul through {pair.name} takes {fmt_seconds(pair.framework.median)} on "
            f"the {device.upper()}, {fmt_ratio(ratio)} the {what} for the same work: "
            f"about {fmt_seconds(extra)} of every call is the framework's own. A model of many "
            "small ops pays it on each: use bigger batches or fused ops, or the framework's "
            "compiled mode (tf.function, torch.compile).",
            subject=pair.framework.name))
    return found


# gapbench's self-check: a framework running the same work in under this share of gapbench's
# library row means gapbench did not configure that library as well as the framework does.
LIBRARY_NOT_BEST = 0.9


def rule_library_not_best(run: Run) -> list[Finding]:
    """Where the user's framework does a library's work faster than gapbench's own row for that
    library (framework/library < LIBRARY_NOT_BEST; a framework's time even includes its Python,
    launches and sync), gapbench's configuration of the library is not the best one: its row
    understates the library, and every ratio against it (the framework's, the GPU's against the
    CPU's) is off by as much. A defect for gapbench's tracker, not a finding about this machine;
    one per op and device, quoting the widest gap."""
    worst: dict[tuple[str, str], list[framework.Pair]] = {}
    for pair in run.pairs:
        # Beside other work a library row is slower than it can be: no defect of gapbench's.
        noisy = any(f and unsteady(f) for f in map(run.file_of, (pair.library, pair.framework)))
        if pair.ratio < LIBRARY_NOT_BEST and not noisy:
            worst.setdefault((pair.op, pair.framework.parsed.device), []).append(pair)
    found = []
    for (op, device), rows in worst.items():
        pair = min(rows, key=lambda p: p.ratio)
        library = pair.library
        unheld = (f" gapbench's row is unheld ({library.label.removeprefix('unheld: ')}): "
                  "one place to look." if is_unheld(library) else "")
        math = f"; {pair.note}" if pair.note else ""
        others = f" ({len(rows) - 1} more {op} shapes too)" if len(rows) > 1 else ""
        shape = {k: v for k, v in pair.framework.parsed.axes.items() if k != "op"}
        text = (f"{pair.name} does the {op} ({axes_label(shape)}) on the {device.upper()} in "
                f"{fmt_seconds(pair.framework.median)}, {fmt_ratio(pair.ratio)} the "
                f"{fmt_seconds(library.median)} of gapbench's own {pair.library_name} row "
                f"for the same work ({library.parsed.family}/{library.parsed.variant}{math})"
                f"{others}, although the framework's time "
                "also holds its Python, launches and synchronize. gapbench's configuration of "
                f"{pair.library_name} is not the best one: its row understates the library, and "
                f"the ratios set against it are off by as much.{unheld} {DEFECT_TAIL}")
        found.append(Finding(
            "library_not_best", "warning",
            f"gapbench's {pair.library_name} {op} is slower than {pair.name}'s", text,
            defect=True, subject=library.name))
    return found


DEFECT_TAIL = ("This is a defect in gapbench, not a finding about this machine: report it on "
               "gapbench's issue tracker with this results file.")

# gapbench's self-check against the hardware. A GEMM-based row may pass the GEMM peak of its
# math measured beside it by this factor (a measured peak is one size's cuBLAS, not the
# hardware's bound) before it is called impossible: docs/report.md#gapbenchs-own-defects says
# why 1.25.
GEMM_MARGIN = 1.25
# A copy may not pass the PCIe link's theoretical rate at all: that rate is the hardware's
# bound, not a measurement (packet headers keep every real copy below it).
LINK_MARGIN = 1.0
# cuDNN's algorithms that do the multiplications their FLOP rate counts (the direct count), as a
# GEMM or directly. WINOGRAD, WINOGRAD_NONFUSED, FFT and FFT_TILING do fewer, so their rate,
# counted as direct, can honestly pass the peak: they are not judged.
DIRECT_COUNT_ALGORITHMS = ("IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT")
ALGORITHM_LABEL = re.compile(r"\balgo:(\S+)")


def gemm_work(b: Benchmark) -> str | None:
    """How `b` does its multiplications, where the GEMM peak of its math measured beside it
    bounds its FLOP rate; None where it is not judged. On the GPU: cuBLAS's matmuls, gapbench's
    direct kernels and cuDNN's direct-count algorithms. On the CPU, only in files without the
    CPU's physical peak (cpu_work judges them where it is): im2col with OpenBLAS, against
    OpenBLAS's SGEMM (docs/report.md#gapbenchs-own-defects)."""
    name = b.parsed
    if name.family == "overhead" and name.axis("op") == "matmul" and \
            name.variant in ("cublas", "cublas_e2e"):
        return "cuBLAS's GEMM"
    if name.family != "conv":
        return None
    if name.variant in ("naive", "tiled") and name.device == "gpu":
        return "gapbench's direct convolution"
    if name.variant == "im2col_blas":
        return "im2col and OpenBLAS's SGEMM"
    algorithm = ALGORITHM_LABEL.search(b.label) if name.variant in ("cudnn", "cudnn_e2e") else None
    if algorithm and algorithm[1] in DIRECT_COUNT_ALGORITHMS:
        return f"cuDNN's {algorithm[1]}"
    return None


# A CPU row may pass the CPU's physical peak of its math (peak/flops, metrics.cpu_flop_peak) by
# this factor before it is called impossible. That peak is the hardware's bound, not a library's:
# register-resident multiply-adds at the full width the CPU has, which nothing computes faster.
# Only the noise between the peak's measurement and the row's can pass it: on the shared 2-core
# CI VM, repeated peaks agree within a few percent, and 10% holds them.
PHYSICAL_MARGIN = 1.10
# An algorithm that does fewer multiplications than the direct count its FLOP rate is credited
# with (oneDNN's Winograd convolutions, jit_wino_*; an FFT), named in the row's label: its rate
# can honestly pass the physical peak.
FEWER_MULTIPLICATIONS = re.compile(r"wino|fft", re.IGNORECASE)
CPU_WORK = {"onednn": "oneDNN's kernels", "im2col_blas": "im2col and OpenBLAS's SGEMM",
            "sgemm": "OpenBLAS's SGEMM", "openblas": "OpenBLAS's SGEMM",
            "blas": "OpenBLAS's SGEMM", "naive": "gapbench's direct loops"}


def cpu_work(b: Benchmark) -> str | None:
    """How a CPU row does the FLOPs it is credited with, where the CPU's physical peak bounds
    its rate: every CPU row with a FLOP rate, oneDNN's and OpenBLAS's SGEMM (peak/sgemm) alike,
    but the physical peak's own rows and a row whose label names an algorithm that does fewer
    multiplications (FEWER_MULTIPLICATIONS)."""
    name = b.parsed
    if name.device != "cpu" or not b.counter("flops") or FEWER_MULTIPLICATIONS.search(b.label) \
            or (name.family == "peak" and name.variant == CPU_FLOPS_VARIANT):
        return None
    return CPU_WORK.get(name.variant, f"{name.family}/{name.variant}")


def _math_unsaid(b: Benchmark) -> str:
    """What a row's math axis leaves to the report, said where the row is read wrong."""
    if MATH_AXIS in b.parsed.axes:
        return ""
    return (f" Its name has no math axis, so the report reads it as {math_words(b.math)}; its "
            "library may have computed in another math (TF32 on tensor cores).")


def rule_above_ceiling(run: Run) -> list[Finding]:
    """A row timed faster than the hardware allows, by its own FLOP or byte count: a CPU row
    (cpu_work) above PHYSICAL_MARGIN times the CPU's physical peak of its math; where a file
    has no physical peak, and on the GPU, a GEMM-based row (gemm_work) above GEMM_MARGIN times
    the GEMM peak of its math (metrics.gemm_peaks: float32 against SGEMM, TF32 against the TF32
    GEMM, and so on); a GPU copy above the PCIe link's theoretical rate. The ceilings are those
    the file is judged against (metrics.peak_rows: its own peak/ rows, or its peak file's). Its
    time, its count or its math is wrong, and so is every ratio set against it: a defect for
    gapbench's tracker, one finding per row, naming the row and the ceiling. A file whose
    machine changed speed during its run, or ran beside other work, or whose peak file did
    (unsteady_ceilings), is not judged: its peak is no ceiling."""
    found: list[Finding] = []
    judged: set[str] = set()  # a row in several files is judged once, in the first
    for results in run.library_files:
        rows = [b for b in results.benchmarks().values() if b.name not in judged]
        judged.update(b.name for b in rows)
        if not unsteady_ceilings(results, run.files):
            ceilings = peak_rows(results, run.files) or []
            # A peak GAPBENCH_MAX_CPU_ISA capped binds no library the cap does not (OpenBLAS on
            # its own kernels passes it honestly): the GEMM rule judges instead.
            physical = [] if cpu_flop_cap(ceilings) else ceilings
            found += _above_physical_peak(rows, physical)
            found += _above_gemm_peak(rows, gemm_peaks(ceilings), physical)
            found += _above_link(rows, results.context)
    return found


def _above_physical_peak(rows: list[Benchmark], ceilings: list[Benchmark]) -> list[Finding]:
    found = []
    for b in rows:
        how, rate = cpu_work(b), b.counter("flops")
        peak = cpu_flop_peak(ceilings, b.math) if how else None
        ceiling, read = cpu_flop_bound(ceilings, peak) if peak else (None, "")
        if not (how and rate and ceiling and rate > PHYSICAL_MARGIN * ceiling):
            continue
        math = math_words(b.math)
        found.append(Finding(
            "above_ceiling", "warning",
            f"gapbench's {b.parsed.family} row is faster than the CPU's {math} peak allows",
            f"{b.name} ({how}, read as {math}) reaches {fmt_si(rate, 'FLOP/s')}, "
            f"{rate / ceiling:.2f}x {cpu_peak_words(peak)} ({peak.name}: "
            f"{fmt_si(ceiling, 'FLOP/s')}, {read}), the hardware's own limit; nothing that does "
            f"the multiplications it is credited with passes it by more than "
            f"{pct(PHYSICAL_MARGIN - 1)}. Its time, its FLOP count or its math is wrong, or its "
            "algorithm does fewer multiplications (Winograd, FFT) and its label does not say so; "
            f"every ratio set against it is off. {DEFECT_TAIL}",
            defect=True, subject=b.name))
    return found


def _above_gemm_peak(rows: list[Benchmark], peaks: dict[tuple[str, str], Benchmark],
                     ceilings: list[Benchmark]) -> list[Finding]:
    found = []
    for b in rows:
        how, rate = gemm_work(b), b.counter("flops")
        if b.parsed.device == "cpu" and cpu_flop_peak(ceilings, b.math):
            continue  # judged against the physical peak instead
        peak = peaks.get((b.parsed.device, b.math))
        ceiling = best(peak) if peak else None  # noise only ever lowers a peak
        if not (how and rate and ceiling and rate > GEMM_MARGIN * ceiling):
            continue
        math = math_words(b.math)
        found.append(Finding(
            "above_ceiling", "warning",
            f"gapbench's {b.parsed.family} row is faster than the {b.parsed.device.upper()}'s "
            f"{math} GEMM peak allows",
            f"{b.name} ({how}, read as {math}) reaches {fmt_si(rate, 'FLOP/s')}, "
            f"{rate / ceiling:.2f}x the {math} GEMM peak measured beside it ({peak.name}: "
            f"{fmt_si(ceiling, 'FLOP/s')} at its best repetition); a row that does the "
            f"multiplications it counts cannot "
            f"pass that peak by more than {GEMM_MARGIN:g}x. Its time, its FLOP count or its math "
            f"is wrong, and every ratio set against it is off.{_math_unsaid(b)} {DEFECT_TAIL}",
            defect=True, subject=b.name))
    return found


def _above_link(rows: list[Benchmark], context: dict) -> list[Finding]:
    found = []
    link = number(context.get("pcie.bandwidth_max_gbps"))
    for b in rows:
        rate = b.counter("bytes_per_second")
        if not (link and rate and b.parsed.family == "transfer" and b.parsed.device == "gpu"
                and b.parsed.variant in ("pinned", "pageable")
                and b.parsed.axis("dir") in ("h2d", "d2h") and rate > LINK_MARGIN * link * 1e9):
            continue
        found.append(Finding(
            "above_ceiling", "warning",
            f"gapbench's {b.parsed.axis('dir')} copy is faster than the PCIe link allows",
            f"{b.name} moves {rate / 1e9:.1f} GB/s, {rate / (link * 1e9):.2f}x the PCIe link's "
            f"theoretical {link:.2f} GB/s per direction (pcie.bandwidth_max_gbps, from the "
            f"link's generation {context.get('pcie.gen_max', '?')} and width "
            f"x{context.get('pcie.width_max', '?')}). Its time or its byte count is wrong, "
            f"or the copy did not cross that link. {DEFECT_TAIL}",
            defect=True, subject=b.name))
    return found


RULES: tuple[Callable[[Run], list[Finding]], ...] = (
    rule_failed,
    rule_machine, rule_memory_skips, rule_machine_changed, rule_other_work,
    rule_parallel_capacity, rule_threads_fight, rule_pcie_link, rule_pageable_vs_pinned,
    rule_gpu_loses, rule_slow_blas, rule_elementwise, rule_naive_vs_library, rule_pipeline_idle,
    rule_pipeline_cores, rule_pipeline_stage_drift, rule_batch_too_small, rule_lstm_launch_bound,
    rule_mixed_precision, rule_framework_misses_gpu, rule_framework_cuda_newer,
    rule_framework_overhead, rule_library_not_best, rule_above_ceiling,
)


def rank(f: Finding) -> tuple:
    """Failed benchmarks first, then the CPUs shared (SHARED_CPUS_RULES); facts about this
    machine, then gapbench's own defects, then lessons; problems, warnings, info; the largest
    measured loss first."""
    shared = (SHARED_CPUS_RULES.index(f.rule) if f.rule in SHARED_CPUS_RULES
              else len(SHARED_CPUS_RULES))  # the other work first: the threads' fight is its effect
    return (f.rule != FAILED_RULE, shared, f.lesson, f.defect, SEVERITIES.index(f.severity),
            costliest_first(f))


def diagnose(runs: list[Results]) -> list[Finding]:
    """diagnose_run over the run these files make."""
    return diagnose_run(Run.of(runs))


def diagnose_run(run: Run) -> list[Finding]:
    """Every rule over one run, ranked (see rank()): findings about this machine only (what
    another machine's run says of the same benchmarks is versus/comparison.py's, in render's
    model)."""
    return sorted((f for rule in RULES for f in rule(run)), key=rank)


# How the verdict counts each rule's defects.
DEFECT_WORDS = {"library_not_best": "of its library rows slower than your framework on the same "
                                    "work",
                "above_ceiling": "of its rows timed above the ceiling that bounds them"}


def verdict(findings: list[Finding], limit: int = 3) -> str:
    """One line: benchmarks that failed, if any (how many, where, the first error); then what
    invalidates the run, else the biggest measured losses on this machine, each with its factor
    and cause in words. A run whose CPUs other work shared, or whose threads fought, says so
    before all of it (SHARED_CPUS_RULES): every figure after it is slower than the machine can
    do."""
    shared = [f for f in findings if f.rule in SHARED_CPUS_RULES]
    if shared:
        fights = [f for f in shared if f.rule == "threads_fight"]
        named = [f for f in shared if f.rule != "threads_fight"] + fights[:1]
        others = [f.title.split(THREADS_FIGHT_TITLE)[0] + "'s" for f in fights[1:]]
        more = f" ({_joined(others)} threads fight too)" if others else ""
        lead = "; ".join(f.cause for f in named) + more
        rest = verdict([f for f in findings if f.rule not in SHARED_CPUS_RULES], limit)
        return f"{lead}. {rest}"
    failed = next((f for f in findings if f.rule == FAILED_RULE), None)
    if failed:
        rest = verdict([f for f in findings if f is not failed], limit)
        return f"{failed.cause}. {rest}"
    defects = [f for f in findings if f.defect]
    kinds = Counter(f.rule for f in defects)
    own = (" gapbench's own check: " + "; ".join(
        f"{n} {DEFECT_WORDS.get(rule, 'defects of ' + rule)}" for rule, n in kinds.items())
        + f" (a defect in gapbench, not in this machine; see \"{defects[0].title}\")."
        if defects else "")
    problems = [f for f in findings if f.severity == "problem" and not f.lesson and not f.defect]
    if problems:
        return fix_first([f.title for f in problems[:limit]]) + own
    losses = sorted((f for f in findings if not f.lesson and not f.defect and f.impact
                     and f.cause), key=costliest_first)[:limit]
    if not losses:
        return ("No measured loss on this machine beyond what holds everywhere (see the "
                "lessons).") + own
    return "Biggest measured losses on this machine: " + "; ".join(
        f"{f.cause} ({f.impact:.1f}x)" for f in losses) + "." + own
