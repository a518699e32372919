"""The report of one run as data, the derive step of render: what it says, in the rows, groups and
headlines both writers print, each derived once here (no files, no drawing; the writers compute
nothing)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from gapbench_report import diagnose, framework, metrics
from gapbench_report.catalogue import SEVERITIES, family_rank
from gapbench_report.labels import (
    axes_label,
    fmt_bytes,
    fmt_seconds,
    fmt_throughput,
    is_unheld,
    variant_label,
    with_threads,
    with_unnamed_math,
)
from gapbench_report.results import Benchmark, Results
from gapbench_report.run_model import Run


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


@dataclass
class Report:
    runs: list[Results]
    baselines: list[Results]
    context: dict
    families: dict[str, list[Benchmark]]
    findings: list = field(default_factory=list)
    verdict: str = ""  # the findings in one line (diagnose.verdict), empty without findings
    notes: list[str] = field(default_factory=list)  # what could not be worked out, and why
    machines: list[tuple[str, dict]] = field(default_factory=list)  # (label, context)
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
    framework_headlines: list[str] = field(default_factory=list)
    framework_rows: list[list[str]] = field(default_factory=list)  # FRAMEWORK_HEADERS
    ratio_rows: list[list[str]] = field(default_factory=list)  # name, value per machine
    sections: list[FamilySection] = field(default_factory=list)  # per family, in family order

    @property
    def benchmarks(self) -> list[Benchmark]:
        return [b for rows in self.families.values() for b in rows]


def by_family(benchmarks: Iterable[Benchmark]) -> dict[str, list[Benchmark]]:
    groups: dict[str, list[Benchmark]] = {}
    for b in benchmarks:
        groups.setdefault(b.parsed.family, []).append(b)
    return dict(sorted(groups.items(), key=lambda kv: family_rank(kv[0])))


def merged_context(runs: Iterable[Results]) -> dict:
    out: dict = {}
    for results in runs:
        for k, v in results.context.items():
            out.setdefault(k, v)
    return out


def baseline_labels(baselines: Sequence[Results]) -> list[str]:
    """"baseline t4" from t4.json; the folder too where two files share a name."""
    stems = [b.path.stem for b in baselines]
    return [f"baseline {b.path.parent.name + '/' if stems.count(b.path.stem) > 1 else ''}"
            f"{b.path.stem}" for b in baselines]


def build_report(runs: list[Results], baselines: list[Results]) -> Report:
    run = Run.of(runs)  # built once: the rules, the ratios and the rows below all read it
    context = merged_context(run.files)  # gapbench's files first: the machine's, not a framework's
    report = Report(runs, baselines, context, by_family(run.benchmarks), pairs=list(run.pairs))
    ids = {str(r.context.get("machine.id")) for r in runs}
    if len(ids) > 1:
        report.notes.append(f"The run's files come from {len(ids)} machines "
                            f"({', '.join(sorted(ids))}); the first file's context is shown.")
    labels = baseline_labels(baselines)
    report.machines = [("this run", context)] + [(label, b.context)
                                                 for label, b in zip(labels, baselines)]
    # A broken rule or metric must not cost the reader the charts: say so in the report instead.
    try:
        findings = list(diagnose.diagnose_run(run, baselines, labels))
        report.verdict = diagnose.verdict(findings) if findings else ""
        report.findings = findings
    except Exception as e:  # noqa: BLE001
        report.notes.append(f"The diagnosis could not be made: {type(e).__name__}: {e}")
    if baselines:
        try:
            report.portable = [("this run", metrics.run_metrics(run.files))] + [
                (label, metrics.portable_metrics(b)) for label, b in zip(labels, baselines)]
            # The same work on each machine, whatever device ran it (GPU against CPU).
            shared = metrics.shared_work(run.benchmarks,
                                         [b.benchmarks().values() for b in baselines])
            for (_, values), work in zip(report.portable, shared):
                values.update(work)
        except Exception as e:  # noqa: BLE001
            report.notes.append(f"The cross-machine ratios could not be computed: "
                                f"{type(e).__name__}: {e}")
    report.machine_line = machine_line(context)
    facts, report.defects, report.lessons = split_findings(report.findings)
    report.facts = grouped_findings(facts)
    report.fingerprint = fingerprint_rows(report.machines, runs, baselines)
    report.ceilings = ceilings_rows(run.files)
    report.framework_headlines = framework.headlines(report.pairs)
    report.framework_rows = framework_rows(report.pairs)
    report.ratio_rows = ratio_rows(report.portable, run.files)
    report.sections = [family_section(family, rows) for family, rows in report.families.items()]
    return report


# ---- findings ----------------------------------------------------------------------------------

def split_findings(findings: Iterable) -> tuple[list, list, list]:
    """Facts about this machine, gapbench's own defects (for its tracker), and lessons that hold
    on every machine."""
    findings = list(findings)
    lesson = [getattr(f, "lesson", False) for f in findings]
    defect = [getattr(f, "defect", False) and not l for f, l in zip(findings, lesson)]
    return ([f for f, l, d in zip(findings, lesson, defect) if not l and not d],
            [f for f, d in zip(findings, defect) if d],
            [f for f, l in zip(findings, lesson) if l])


def grouped_findings(findings: Iterable) -> list[tuple[str, list]]:
    groups: dict[str, list] = {}
    for f in findings:
        groups.setdefault(str(getattr(f, "severity", "info")), []).append(f)
    order = list(SEVERITIES) + sorted(set(groups) - set(SEVERITIES))
    return [(s, groups[s]) for s in order if s in groups]


# ---- the rows of the tables --------------------------------------------------------------------

TABLE_ROWS_SHOWN = 60  # longer family tables start folded, in summary.md and index.html


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
                     baselines: Sequence[Results]) -> list[list[str]]:
    """Per fingerprint key its value on each machine; last, each machine's results files."""
    rows = [[k] + [context_value(k, ctx.get(k)) for _, ctx in machines]
            for k in metrics.FINGERPRINT_KEYS]
    rows.append(["results files"] + [", ".join(r.path.name for r in runs)]
                + [b.path.name for b in baselines])
    return rows


CEILINGS_HEADERS = ("file (family)", "CPU SGEMM GFLOP/s", "CPU read GB/s (1 thread)",
                    "GPU SGEMM GFLOP/s", "start → end probes (CPU)", "ceilings")


def ceiling_cell(value: tuple[float, float] | None) -> str:
    """"180 (±0%)"; a GPU's tens of thousands of GFLOP/s as "51,300", never an exponent."""
    if not value:
        return "—"
    middle, spread = value
    return f"{middle:.3g} (±{spread / 2:.0%})" if middle < 1000 else \
        f"{middle:,.0f} (±{spread / 2:.0%})"


def ceilings_rows(runs: Sequence[Results]) -> list[list[str]]:
    """Per results file: its family, its own peak/ ceilings (what its "% of peak" ratios are
    judged against), the ceilings probed at the start and the end of its run, and whether they
    held."""
    rows = []
    for r in runs:
        if framework.is_framework_file(r):
            continue  # the probe measures no ceilings: they are gapbench's, per family run
        peaks = metrics.file_peaks(r)
        held = metrics.ceilings_held(r)
        probes = "; ".join(f"{label} {start:g} → {end:g}" for label, (start, end) in held.items())
        drifts = metrics.ceiling_drifts(r)
        judged = [label for label in held if label in metrics.JUDGED_CEILINGS]
        verdict = ("changed during the run" if drifts
                   else "held" if judged else "not measured")
        rows.append([metrics.file_family(r)]
                    + [ceiling_cell(v) for v in peaks.values()]
                    + [probes or "—", verdict])
    return rows


# ---- the framework beside the libraries --------------------------------------------------------

FRAMEWORK_SECTION = "framework-vs-libraries"
FRAMEWORK_BLURB = ("The same work on the same shape through your framework (gapbench-probe) "
                   "and through the library underneath it (gapbench): the ratio is what the "
                   "framework adds, on this machine. Framework times are host wall time per "
                   "synchronized call; the GPU libraries' are kernel time, so a GPU ratio "
                   "includes the framework's launch and sync. A framework computing in TF32 on "
                   "the GPU is set against the library's TF32 where gapbench has one, else "
                   f"marked \"{framework.MIXED_MATH}\".")
FRAMEWORK_HEADERS = ("framework", "op", "device", "size", "framework time", "library",
                     "library time", "framework / library", "note")


def framework_rows(pairs: Iterable[framework.Pair]) -> list[list[str]]:
    rows = []
    for p in pairs:
        axes = {k: v for k, v in p.framework.parsed.axes.items() if k not in ("op", "mode")}
        rows.append([p.name, p.op, p.framework.parsed.device.upper(),
                     with_unnamed_math(axes_label(axes), p.framework),
                     fmt_seconds(p.framework.median),
                     f"{p.library_name} ({p.library.parsed.family}/{p.library.parsed.variant})",
                     fmt_seconds(p.library.median),
                     framework.fmt_ratio(p.ratio), p.notes])
    return rows


# ---- against other machines ------------------------------------------------------------------

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
    return [[ratio_label(name, changed)] + [ratio_text(m.get(name)) for _, m in portable]
            for name in names]


def ratio_text(value: float | None) -> str:
    return "—" if value is None else f"{value:.3g}"
