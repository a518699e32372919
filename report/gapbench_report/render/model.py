"""The report of one run as data, the derive step of render: what it says, in the rows, groups and
headlines both writers print, each derived once here (no files, no drawing; the writers compute
nothing)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from gapbench_report.core import framework, metrics
from gapbench_report.core.catalogue import SEVERITIES, family_rank
from gapbench_report.core.formats import fmt_ratio, fmt_ratio_short
from gapbench_report.core.labels import (
    MATH_WORDS,
    axes_label,
    fmt_bytes,
    fmt_seconds,
    fmt_si,
    fmt_throughput,
    is_unheld,
    variant_label,
    with_threads,
    with_unnamed_math,
)
from gapbench_report.core.run_model import Run
from gapbench_report.diagnose import rules as diagnose
from gapbench_report.inputs.machines import Baseline, baselines_of, merged_context
from gapbench_report.inputs.results import Benchmark, Results
from gapbench_report.versus import comparison as versus
from gapbench_report.versus import framework as versus_framework


@dataclass(frozen=True)
class Row:
    """One benchmark as the tables show it."""

    variant: str
    device: str
    axes: str
    status: str
    median: str
    spread: str
    reps: str
    throughput: str
    reason: str  # skip reason or error, empty when it ran


@dataclass(frozen=True)
class FamilySection:
    """A family as the writers print it."""

    family: str
    rows: list[Row]
    skipped: list[tuple[str, list[str]]]  # (reason, the variants it skipped)
    failed: list[tuple[str, str]]  # (benchmark name, error)


@dataclass(frozen=True)
class VersusSection:
    """This machine against one other, as the writers print it (versus.Comparison in rows)."""

    label: str  # the other machine
    verdict: list[tuple[str, list[str]]]  # versus.verdict_lines: (lead, items)
    slower: list[tuple[str, str]]  # (title, text) per work slower here, the costliest first
    faster: list[tuple[str, str]]  # the same, faster here
    alike: str  # how many works agree, in words
    not_comparable: list[list[str]]  # NOT_COMPARABLE_HEADERS
    ceilings: list[list[str]]  # VERSUS_CEILING_HEADERS
    # For the chart: (the work in words, its speed ratio, its ceiling's ratio or None, the
    # ceiling's words), the costliest first.
    bars: list[tuple[str, float, float | None, str]] = field(default_factory=list)


@dataclass
class Report:
    runs: list[Results]
    baselines: list[Baseline]
    context: dict
    families: dict[str, list[Benchmark]]
    findings: list = field(default_factory=list)
    verdict: str = ""  # the findings in one line (diagnose.verdict), empty without findings
    notes: list[str] = field(default_factory=list)  # what could not be worked out, and why
    machines: list[tuple[str, dict]] = field(default_factory=list)  # (label, context)
    comparisons: list[versus.Comparison] = field(default_factory=list)  # one per baseline
    portable: list[tuple[str, dict[str, float]]] = field(default_factory=list)
    pairs: list[framework.Pair] = field(default_factory=list)  # framework beside library
    # What the writers print, derived once by build_report from the data above.
    machine_line: str = ""
    facts: list[tuple[str, list]] = field(default_factory=list)  # (severity, its findings)
    lessons: list = field(default_factory=list)  # findings that hold on every machine
    defects: list = field(default_factory=list)  # gapbench's own, for its tracker
    defects_heading: str = ("gapbench's own defects (for gapbench's issue tracker, not about "
                            "this machine)")
    fingerprint: list[list[str]] = field(default_factory=list)  # context key, value per machine
    ceilings: list[list[str]] = field(default_factory=list)  # per file, CEILINGS_HEADERS
    compute_peaks: list[list[str]] = field(default_factory=list)  # COMPUTE_PEAKS_HEADERS
    compute_peaks_line: str = ""  # what the CPU libraries' shares mean, in one sentence
    framework_headlines: list[str] = field(default_factory=list)
    framework_rows: list[list[str]] = field(default_factory=list)  # FRAMEWORK_HEADERS
    ratio_rows: list[list[str]] = field(default_factory=list)  # name, value per machine
    versus: list[VersusSection] = field(default_factory=list)  # one per baseline
    # The user's framework on both machines, per baseline (versus.framework): the data, and its
    # sections per framework as the writers print them, by the baseline's label.
    framework_comparisons: list[versus_framework.Comparison] = field(default_factory=list)
    framework_versus: dict[str, list[versus_framework.Section]] = field(default_factory=dict)
    # comparison.json's document (where there are baselines): the comparisons and the
    # framework's, as scripts read them.
    comparison_document: dict = field(default_factory=dict)
    # Each machine's ceilings for the chart: (machine, {ceiling in words with its unit: value}).
    ceiling_columns: list[tuple[str, dict[str, float]]] = field(default_factory=list)
    sections: list[FamilySection] = field(default_factory=list)  # per family, in family order

    @property
    def benchmarks(self) -> list[Benchmark]:
        return [b for rows in self.families.values() for b in rows]


def by_family(benchmarks: Iterable[Benchmark]) -> dict[str, list[Benchmark]]:
    groups: dict[str, list[Benchmark]] = {}
    for b in benchmarks:
        groups.setdefault(b.parsed.family, []).append(b)
    return dict(sorted(groups.items(), key=lambda kv: family_rank(kv[0])))


NO_COMPARISON = "The comparison with other machines could not be made"


def build_report(runs: list[Results],
                 baselines: Sequence[Baseline | Results | Sequence[Results]],
                 notes: Sequence[str] = ()) -> Report:
    """`baselines`: other machines, each a results file, the files of one run or a Baseline
    (baselines_of). `notes`: what reading the files had to say."""
    run = Run.of(runs)  # built once: the rules, the ratios and the rows below all read it
    context = merged_context(run.files)  # gapbench's files first: the machine's, not a framework's
    others = baselines_of(baselines)
    report = Report(runs, others, context, by_family(run.benchmarks), pairs=list(run.pairs),
                    notes=list(notes))
    report.notes += [f"{'This run' if i == 0 else 'Baseline ' + label}: {note}"
                     for i, (label, files) in enumerate([("", runs)]
                                                        + [(b.label, b.files) for b in others])
                     for note in ignored_notes(files)]
    ids = {str(r.context.get("machine.id")) for r in runs}
    if len(ids) > 1:
        report.notes.append(f"The run's files come from {len(ids)} machines "
                            f"({', '.join(sorted(ids))}); the first file's context is shown.")
    report.notes += [line for r in run.files if (line := metrics.ceilings_missing(r, run.files))]
    report.machines = [("this run", context)] + [(f"baseline {b.label}", b.context)
                                                 for b in others]
    # A broken rule or metric must not cost the reader the charts: say so in the report instead.
    try:
        findings = list(diagnose.diagnose_run(run))
        report.verdict = diagnose.verdict(findings) if findings else ""
        report.findings = findings
    except Exception as e:  # noqa: BLE001
        report.notes.append(f"The diagnosis could not be made: {type(e).__name__}: {e}")
    if others:
        try:
            here = versus.Side(THIS_RUN, run, versus.commit_of(run.library_files or run.files))
            report.comparisons = [versus.compare(here, versus.Side.of(b.label, b.files))
                                  for b in others]
            report.findings = [with_comparisons(f, report.comparisons) for f in report.findings]
            report.framework_comparisons = [versus_framework.compare(c.here, c.there, c)
                                            for c in report.comparisons]
            report.portable = [("this run", metrics.run_metrics(run.files))] + [
                (f"baseline {b.label}", metrics.run_metrics(list(b.files))) for b in others]
        except Exception as e:  # noqa: BLE001
            report.comparisons = []
            report.notes.append(f"{NO_COMPARISON}: {type(e).__name__}: {e}")
    report.machine_line = machine_line(context)
    facts, report.defects, report.lessons = split_findings(report.findings)
    report.facts = grouped_findings(facts)
    report.fingerprint = fingerprint_rows(report.machines, runs, others)
    report.ceilings = ceilings_rows(run.files)
    report.compute_peaks = compute_peaks_rows(run.benchmarks, context)
    report.compute_peaks_line = cpu_shares_line(run.benchmarks, context)
    report.framework_headlines = framework.headlines(report.pairs)
    report.framework_rows = framework_rows(report.pairs)
    report.ratio_rows = ratio_rows(report.portable, run.files)
    report.versus = [versus_section(c) for c in report.comparisons]
    report.framework_versus = dict(versus_framework.sections(report.framework_comparisons))
    report.ceiling_columns = ceiling_columns(report.comparisons)
    if report.comparisons:
        report.comparison_document = versus_framework.with_framework(
            versus.document(report.comparisons), report.framework_comparisons)
    report.sections = [family_section(family, rows) for family, rows in report.families.items()]
    return report


def ignored_notes(files: Iterable[Results]) -> list[str]:
    """What the files' contexts held that was ignored (results.Results.ignored), once each."""
    return list(dict.fromkeys(note for r in files for note in r.ignored))


# ---- findings ----------------------------------------------------------------------------------

def split_findings(findings: Iterable) -> tuple[list, list, list]:
    """Facts about this machine, gapbench's own defects (for its tracker), and lessons that hold
    on every machine."""
    findings = list(findings)
    lesson = [getattr(f, "lesson", False) for f in findings]
    defect = [getattr(f, "defect", False) and not is_lesson
              for f, is_lesson in zip(findings, lesson)]
    return ([f for f, is_lesson, d in zip(findings, lesson, defect) if not is_lesson and not d],
            [f for f, d in zip(findings, defect) if d],
            [f for f, is_lesson in zip(findings, lesson) if is_lesson])


def grouped_findings(findings: Iterable) -> list[tuple[str, list]]:
    groups: dict[str, list] = {}
    for f in findings:
        groups.setdefault(str(getattr(f, "severity", "info")), []).append(f)
    order = list(SEVERITIES) + sorted(set(groups) - set(SEVERITIES))
    return [(s, groups[s]) for s in order if s in groups]


# ---- the rows of the tables --------------------------------------------------------------------


# A pipeline measured this far above its ideal: the stage costs measured alone (on which the ideal
# rests) overstate them inside the pipeline, beyond the noise of the two measurements.
ABOVE_IDEAL = 1.10


def throughput_cell(b: Benchmark) -> str:
    """The throughput counters; for the pipeline also its share of its ideal, the bound that
    limits that ideal, and how far the stage costs moved over the repetitions (a noisy machine
    against a slow pipeline)."""
    text = fmt_throughput(b)
    if is_unheld(b):  # the time beside it is not the device's alone: say so where it is read
        text += f" · {b.label}"
    if (ideal := metrics.pipeline_ideal(b)) is not None:
        text += (f" · {ideal.ratio:.0%} of its {ideal.limit}-bound ideal · "
                 f"{ideal.stage_ranges}")
        if ideal.ratio > ABOVE_IDEAL:  # the H200's two producers: 127%
            text += (" · above its ideal: its stages cost less inside the pipeline than "
                     "measured alone, so that ideal understates what the machine reaches")
    return text


def table_rows(benchmarks: Iterable[Benchmark]) -> list[Row]:
    rows = []
    for b in benchmarks:
        spread = metrics.TIME.spread(b)
        rows.append(Row(
            variant_label(b.parsed.variant, b.parsed.family), b.parsed.device.upper(),
            with_unnamed_math(axes_label(with_threads(b.parsed)), b),
            b.status,
            fmt_seconds(spread[0]) if spread else "",
            f"{fmt_seconds(spread[1])} – {fmt_seconds(spread[2])}" if spread else "",
            str(len(b.samples)) if b.samples else "",
            throughput_cell(b) if b.status == "ok" else "",
            b.skip_reason or b.error or ""))
    return rows


def skipped_by_reason(benchmarks: Iterable[Benchmark]) -> list[tuple[str, list[str]]]:
    """Reason -> the variants it skipped ("GPU vectorized end-to-end"), in order of appearance."""
    out: dict[str, list[str]] = {}
    for b in benchmarks:
        if b.status == "skipped":
            label = f"{b.parsed.device.upper()} {variant_label(b.parsed.variant, b.parsed.family)}"
            variants = out.setdefault(b.skip_reason or "", [])
            if label not in variants:
                variants.append(label)
    return list(out.items())


def family_section(family: str, benchmarks: list[Benchmark]) -> FamilySection:
    return FamilySection(family, table_rows(benchmarks), skipped_by_reason(benchmarks),
                         [(b.name, b.error or "") for b in benchmarks if b.status == "failed"])


def machine_line(ctx: dict) -> str:
    """"AMD EPYC · no usable GPU (no NVIDIA driver) · profile quick · seed 42 · <date>"."""
    gpu = ctx.get("gpu.name") or f"no usable GPU ({ctx.get('gpu.status', '?')})"
    parts = [str(ctx.get("cpu.model", "unknown CPU")), str(gpu),
             f"profile {ctx.get('gapbench.profile', '?')}", f"seed {ctx.get('gapbench.seed', '?')}",
             str(ctx.get("date", ""))]
    return " · ".join(p for p in parts if p)


def context_value(key: str, value: object) -> str:
    """A context value for the table: byte counts also in GiB, absent ones as a dash."""
    if value is None or value == "":
        return "—"
    number = metrics.number(value)
    if key.endswith("_bytes") and number:
        return f"{fmt_bytes(number)} ({value})"
    return str(value)


def fingerprint_rows(machines: Sequence[tuple[str, dict]], runs: Sequence[Results],
                     baselines: Sequence[Baseline]) -> list[list[str]]:
    """Per fingerprint key its value on each machine; last, each machine's results files."""
    rows = [[k] + [context_value(k, ctx.get(k)) for _, ctx in machines]
            for k in metrics.FINGERPRINT_KEYS]
    rows.append(["results files"] + [", ".join(r.path.name for r in runs)]
                + [", ".join(r.path.name for r in b.files) for b in baselines])
    return rows


def ceiling_cell(value: tuple[float, float] | None) -> str:
    """"180 (±0%)"; a GPU's tens of thousands of GFLOP/s as "51,300", never an exponent."""
    if not value:
        return "—"
    middle, spread = value
    return f"{middle:.3g} (±{spread / 2:.0%})" if middle < 1000 else \
        f"{middle:,.0f} (±{spread / 2:.0%})"


def ceilings_rows(runs: Sequence[Results]) -> list[list[str]]:
    """Per results file: its family, the ceilings it is judged against (its own peak/ rows, or
    its peak file's: metrics.peak_rows), OpenBLAS's SGEMM with its share of the CPU's physical
    peak, the ceilings probed at the start and the end of its run, and whether they held; a file
    read without its ceilings says so."""
    rows = []
    for r in runs:
        if framework.is_framework_file(r):
            continue  # the probe measures no ceilings: they are gapbench's, per family run
        peaks = metrics.file_peaks(r, runs)
        cells = [ceiling_cell(v) for v in peaks.values()]
        physical, sgemm = peaks["CPU float32 peak GFLOP/s"], peaks["SGEMM GFLOP/s"]
        if physical and sgemm:
            cells[1] += f" · {sgemm[0] / physical[0]:.0%} of peak"
        held = metrics.ceilings_held(r)
        probes = "; ".join([f"{label} {start:g} → {end:g}" for label, (start, end) in held.items()]
                           + shared_cpus_probes(r))
        drifts = metrics.ceiling_drifts(r)
        judged = [label for label in held if label in metrics.JUDGED_CEILINGS]
        verdict = ("changed during the run" if drifts else "held" if judged
                   # peak/ alone: no probes (docs/reading-results.md#the-peak-family)
                   else "its own rows (their spread shown)"
                   if metrics.file_families(r) == ["peak"] and not any(
                       k.startswith("stability.") for k in r.context)
                   else "not measured")
        if metrics.ceilings_missing(r, runs):
            verdict = "unknown: read without its ceilings (see the note above)"
        elif not metrics.own_peak_rows(r) and metrics.peak_rows(r, runs):
            verdict += f"; ceilings from {r.context.get(metrics.PEAK_FILE_KEY)}"
        if metrics.OtherWork.of(r).seen:
            verdict += "; other work shared the CPUs"
        if rerun := metrics.rerun(r):
            verdict += f"; {rerun}"
        rows.append([metrics.file_family(r)] + cells + [probes or "—", verdict])
    return rows


def shared_cpus_probes(r: Results) -> list[str]:
    """The run's other work and its CPUs' parallel capacity at its start and end, as the
    ceilings table shows them beside the SGEMM probes: "other work 0.9 of a CPU, steal 0%",
    "FMA 2 threads / 1: 1.0x → 1.9x"."""
    shown = []
    if (other := metrics.OtherWork.of(r)).recorded:
        shown.append(f"other work {other.words()}")
    capacity, threads = metrics.probe_capacity(r)
    if capacity:
        shown.append(f"FMA {threads or 'all'} threads / 1: "
                     + " → ".join(f"{v:.1f}x" for v in capacity.values()))
    return shown


# ---- each library against the hardware's limit -------------------------------------------------

GPU_MATHS = ("fp32", "tf32", "fp16", "bf16")


def cpu_shares_line(benchmarks: Sequence[Benchmark], context: dict) -> str:
    """Each CPU library's best float32 share of the physical peak in one sentence, OpenBLAS's
    first with its kernels (diagnose.blas_kernels); "" without the physical peak."""
    shares = metrics.cpu_library_shares(benchmarks)
    if not shares:
        return ""
    peak = metrics.cpu_flop_peak(benchmarks, "fp32")
    said = []
    for library, (share, _) in sorted(shares.items(), key=lambda kv: kv[0] != diagnose.BLAS):
        kernels = f" ({diagnose.blas_kernels(context)})" if library == diagnose.BLAS else ""
        whose = (f" of {metrics.cpu_peak_words(peak, metrics.cpu_flop_cap(benchmarks))}"
                 if not said else "")
        said.append(f"{library} reaches {share:.0%}{whose}{kernels}")
    return "; ".join(said) + "."


def compute_peaks_rows(benchmarks: Sequence[Benchmark], context: dict) -> list[list[str]]:
    """Each CPU library's best float32 share of the CPU's physical peak, and cuBLAS's GEMM of
    each math against the GPU's theoretical peak; "unknown" with the missing facts where a
    limit cannot be had (a file from before peak/flops, a context without the GPU's SMs or
    clock)."""
    rows = []
    physical = metrics.cpu_flop_peak(benchmarks, "fp32")
    shares = metrics.cpu_library_shares(benchmarks)
    cap = metrics.cpu_flop_cap(benchmarks)
    for library, (share, row) in shares.items():
        rows.append(["CPU, float32", fmt_si(physical.counter("flops"), "FLOP/s"), library,
                     f"{fmt_si(row.counter('flops'), 'FLOP/s')} ({row.name})", f"{share:.0%}",
                     f"measured: {metrics.cpu_peak_words(physical, cap)} ({physical.name})"])
    sgemm = metrics.gemm_peaks(benchmarks).get(("cpu", "fp32"))
    if not physical and sgemm:
        rows.append(["CPU, float32", "unknown", "OpenBLAS",
                     f"{fmt_si(sgemm.counter('flops'), 'FLOP/s')} ({sgemm.name})", "unknown",
                     "no peak/flops row in these files (made before gapbench measured the "
                     "CPU's own limit)"])
    gemms = metrics.gemm_peaks(benchmarks)
    clock = metrics.gpu_clock(context)
    missing = metrics.gpu_theoretical_missing(context)
    cc = str(context.get("gpu.compute_capability", "")).strip()
    for math_ in GPU_MATHS:
        gemm = gemms.get(("gpu", math_))
        if not gemm:
            continue
        theory = metrics.gpu_theoretical_flops(context, math_)
        measured = gemm.counter("flops")
        if theory:
            per_clock = metrics.GPU_FLOP_PER_SM_CLOCK[cc][math_]
            source = (f"theoretical: {context.get('gpu.sm_count')} SMs × {clock.mhz:g} MHz "
                      f"({clock.source}) × {per_clock} FLOP per SM per clock (compute "
                      f"capability {cc})")
        else:
            source = ("unknown: " + ", ".join(missing) + " missing from the context" if missing
                      else f"unknown: compute capability {cc} has no tensor-core "
                           f"{MATH_WORDS[math_]}")
        rows.append([f"GPU, {MATH_WORDS[math_]}", fmt_si(theory, "FLOP/s") if theory
                     else "unknown", "cuBLAS", f"{fmt_si(measured, 'FLOP/s')} ({gemm.name})",
                     f"{measured / theory:.0%}" if theory else "unknown", source])
    return rows


# ---- the framework beside the libraries --------------------------------------------------------


def framework_rows(pairs: Iterable[framework.Pair]) -> list[list[str]]:
    rows = []
    for p in pairs:
        axes = {k: v for k, v in p.framework.parsed.axes.items() if k not in ("op", "mode")}
        rows.append([p.name, p.op, p.framework.parsed.device.upper(),
                     with_unnamed_math(axes_label(axes), p.framework),
                     fmt_seconds(p.framework.median),
                     f"{p.library_name} ({p.library.parsed.family}/{p.library.parsed.variant})",
                     fmt_seconds(p.library.median),
                     fmt_ratio(p.ratio), p.notes])
    return rows


# ---- against other machines ------------------------------------------------------------------

THIS_RUN = "this run"


def with_comparisons(f, comparisons: Sequence[versus.Comparison]):
    """A finding about this machine with what each comparison says of the benchmark it quotes
    (versus.clause); a lesson's or a defect's text stays as it is."""
    if not f.subject or f.lesson or f.defect:
        return f
    clauses = [text for c in comparisons if (text := versus.clause(c, f.subject))]
    return replace(f, text=" ".join([f.text, *clauses])) if clauses else f


def versus_card(w: versus.Work, c: versus.Comparison) -> tuple[str, str]:
    """A differing work as a finding: its ratio in the title, both times and why in the text."""
    p = w.pair
    title = f"{p.words}: {fmt_ratio_short(p.speed)} the speed it has on {c.there.label}"
    text = (f"{fmt_seconds(p.here.median)} here, {fmt_seconds(p.there.median)} on "
            f"{c.there.label}: {versus.reading(w, c.here.label, c.there.label)}.")
    return title, text


def ceiling_words(e: versus.Explanation) -> str:
    """The ceiling a work was set against, both machines' where they differ (between devices)."""
    if not e.ceiling:
        return ""
    there = f" / {versus.kind(e.there_ceiling).words}" if e.there_ceiling else ""
    return versus.kind(e.ceiling).words + there


def versus_section(c: versus.Comparison) -> VersusSection:
    not_comparable = [[w.pair.words, fmt_seconds(w.pair.here.median),
                       fmt_seconds(w.pair.there.median), "; ".join(w.pair.reasons)]
                      for w in c.not_comparable]
    not_comparable += [[variant, "; ".join(here), "; ".join(there),
                        "no size in common: each machine ran its profile's sizes"]
                       for variant, here, there in c.sizes]
    keys = list(dict.fromkeys([*c.here.ceilings, *c.there.ceilings]))
    ceilings = []
    for key in keys:
        mine, theirs = c.here.ceilings.get(key), c.there.ceilings.get(key)
        ratio = versus.Explanation(key, mine, theirs).ratio
        ceilings.append([versus.kind(key).words, mine.shown(key) if mine else "—",
                         theirs.shown(key) if theirs else "—",
                         fmt_ratio_short(ratio) if ratio else "—",
                         f"{mine.source if mine else '—'}; {theirs.source if theirs else '—'}"])
    bars = [(w.pair.words, w.pair.speed, w.explanation.ratio, ceiling_words(w.explanation))
            for w in sorted(c.differing, key=lambda w: -w.cost)]
    return VersusSection(
        c.there.label, versus.verdict_lines(c), [versus_card(w, c) for w in c.slower],
        [versus_card(w, c) for w in c.faster],
        f"{len(c.alike)} {'work agrees' if len(c.alike) == 1 else 'works agree'} within "
        f"{versus.DIFFERS:.0%} (or within the spread of their repetitions); "
        f"{len(not_comparable)} not comparable.",
        not_comparable, ceilings, bars)


# The units a ceiling may be drawn in, by its Figure's unit: the largest that its largest figure
# reaches (a GPU's GEMM in TFLOP/s, a CPU's in GFLOP/s), and its scale from the Figure's.
CHART_UNITS = {"FLOP/s": (("TFLOP/s", 1e12), ("GFLOP/s", 1e9)), "B/s": (("GB/s", 1e9),),
               "s": (("µs", 1e-6),), "cores": (("", 1.0),)}


def chart_unit(unit: str, largest: float) -> tuple[str, float]:
    units = CHART_UNITS[unit]
    return next(((u, scale) for u, scale in units if largest >= scale), units[-1])


def ceiling_columns(comparisons: Sequence[versus.Comparison]) -> list[tuple[str, dict]]:
    """Each machine's ceilings for the chart, this run first: the ceiling in words with the unit
    it is drawn in -> its figure in that unit."""
    if not comparisons:
        return []
    sides = [comparisons[0].here] + [c.there for c in comparisons]
    keys = list(dict.fromkeys(k for side in sides for k in side.ceilings))
    names = {}
    for key in keys:
        largest = max(side.ceilings[key].value for side in sides if key in side.ceilings)
        unit, scale = chart_unit(versus.kind(key).unit, largest)
        names[key] = (versus.kind(key).words + (f", {unit}" if unit else ""), scale)
    return [(side.label if side.label == THIS_RUN else f"baseline {side.label}",
             {names[k][0]: f.value / names[k][1] for k, f in side.ceilings.items()})
            for side in sides]


def changed_families(runs: Sequence[Results]) -> set[str]:
    """The families whose file in this run saw the machine change speed."""
    return {f for r in runs if metrics.ceiling_drifts(r) for f in metrics.file_families(r)}


def ratio_label(name: str, changed: set[str]) -> str:
    """A portable ratio's name, marked where this run's file for its family changed speed."""
    return f"{name} (machine changed during this run)" if name.split()[0] in changed else name


def ratio_rows(portable: Sequence[tuple[str, dict[str, float]]],
               runs: Sequence[Results] = ()) -> list[list[str]]:
    """Per portable ratio: its name, then its value on each machine ("—" where not measured)."""
    names = list(dict.fromkeys(k for _, m in portable for k in m))
    changed = changed_families(runs)
    return [[ratio_label(name, changed)] + [ratio_cell(m.get(name)) for _, m in portable]
            for name in names]


def ratio_cell(value: float | None) -> str:
    return "—" if value is None else f"{value:.3g}"
