"""The report of one run: charts, one self-contained index.html and a summary.md for CI.

    gapbench-report render results/local/*.json [--baseline results/baselines/t4.json] --out DIR

A run is one results file per family, from one machine; baselines are files from other machines,
compared only through ratios each machine measures against itself (never called a regression).
Everything is written under DIR, each file under a temporary name then renamed, index.html last:
a render that fails leaves the previous report as it was. The inputs are only read.
"""

from __future__ import annotations

import base64
import html
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from pathlib import Path

from gapbench_report import commandline, diagnose, framework, metrics, plots
from gapbench_report.files import write_atomic
from gapbench_report.labels import (
    axes_label,
    fmt_bytes,
    fmt_seconds,
    fmt_throughput,
    md_cell,
    md_code,
    variant_label,
    with_threads,
)
from gapbench_report.results import (
    Benchmark,
    Results,
    ResultsError,
    load_results,
    merged_benchmarks,
)

PROG = "gapbench-report render"
# Families in the order a reader meets the causes; unknown ones follow alphabetically.
FAMILY_ORDER = ("preprocess", "conv", "lstm", "transfer", "pipeline", "overhead", "framework",
                "peak")
FAMILY_BLURB = {
    "preprocess": "Element-wise loops vs vectorized operations, on the CPU and the GPU "
                  "(kernel only and end-to-end with the copies).",
    "conv": "Hand-written convolutions vs cuDNN, oneDNN and im2col + BLAS.",
    "lstm": "One LSTM step and a whole sequence: CPU vs GPU, custom vs cuDNN.",
    "transfer": "Host-device copies: pageable vs pinned memory, sync vs async, 4 KiB to 256 MiB.",
    "pipeline": "An input pipeline with and without prefetch.",
    "overhead": "Launch, sync, transfer and start-up costs against the size of the work.",
    "framework": "The same work through your own PyTorch or TensorFlow (gapbench-probe): eager "
                 "and compiled, host wall time per call, each call synchronized.",
    "peak": "The machine's own ceilings: CPU memory bandwidth (memcpy, triad, streaming read).",
}
SEVERITY_ORDER = ("problem", "warning", "info")
FINDINGS_SHOWN = 8  # per severity; more are folded away in the page (all are in summary.md)
TABLE_ROWS_SHOWN = 60  # longer family tables start folded


# ---- what the report says (no files, no drawing) ---------------------------------------------

@dataclass
class Report:
    runs: list[Results]
    baselines: list[Results]
    context: dict
    families: dict[str, list[Benchmark]]
    findings: list = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what could not be worked out, and why
    machines: list[tuple[str, dict]] = field(default_factory=list)  # (label, context)
    portable: list[tuple[str, dict[str, float]]] = field(default_factory=list)
    pairs: list[framework.Pair] = field(default_factory=list)  # framework beside library

    @property
    def benchmarks(self) -> list[Benchmark]:
        return [b for rows in self.families.values() for b in rows]


def by_family(benchmarks: Iterable[Benchmark]) -> dict[str, list[Benchmark]]:
    groups: dict[str, list[Benchmark]] = {}
    for b in benchmarks:
        groups.setdefault(b.parsed.family, []).append(b)
    rank = {f: i for i, f in enumerate(FAMILY_ORDER)}
    return dict(sorted(groups.items(), key=lambda kv: (rank.get(kv[0], len(rank)), kv[0])))


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
    context = merged_context(framework.library_first(runs))  # the machine's, not a framework's
    benchmarks = merged_benchmarks(runs)
    report = Report(runs, baselines, context, by_family(benchmarks),
                    pairs=framework.pairs(benchmarks, framework.framework_contexts(runs)))
    ids = {str(r.context.get("machine.id")) for r in runs}
    if len(ids) > 1:
        report.notes.append(f"The run's files come from {len(ids)} machines "
                            f"({', '.join(sorted(ids))}); the first file's context is shown.")
    labels = baseline_labels(baselines)
    report.machines = [("this run", context)] + [(label, b.context)
                                                 for label, b in zip(labels, baselines)]
    # A broken rule or metric must not cost the reader the charts: say so in the report instead.
    try:
        report.findings = list(diagnose.diagnose(runs, baselines, labels))
    except Exception as e:  # noqa: BLE001
        report.notes.append(f"The diagnosis could not be made: {type(e).__name__}: {e}")
    if baselines:
        try:
            report.portable = [("this run", metrics.run_metrics(runs))] + [
                (label, metrics.portable_metrics(b)) for label, b in zip(labels, baselines)]
        except Exception as e:  # noqa: BLE001
            report.notes.append(f"The cross-machine ratios could not be computed: "
                                f"{type(e).__name__}: {e}")
    return report


def split_findings(findings: Iterable) -> tuple[list, list]:
    """Facts about this machine, and lessons that hold on every machine."""
    findings = list(findings)
    return ([f for f in findings if not getattr(f, "lesson", False)],
            [f for f in findings if getattr(f, "lesson", False)])


def grouped_findings(findings: Iterable) -> list[tuple[str, list]]:
    groups: dict[str, list] = {}
    for f in findings:
        groups.setdefault(str(getattr(f, "severity", "info")), []).append(f)
    order = list(SEVERITY_ORDER) + sorted(set(groups) - set(SEVERITY_ORDER))
    return [(s, groups[s]) for s in order if s in groups]


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


def throughput_cell(b: Benchmark) -> str:
    """The throughput counters; for the pipeline also its share of its ideal, the bound that
    limits that ideal, and how far the stage costs moved over the repetitions (a noisy machine
    against a slow pipeline)."""
    text = fmt_throughput(b)
    if (ideal := metrics.pipeline_ideal(b)) is not None:
        text += (f" · {ideal.ratio:.0%} of its {ideal.limit}-bound ideal · "
                 f"{ideal.stage_ranges}")
    return text


def table_rows(benchmarks: Iterable[Benchmark]) -> list[Row]:
    rows = []
    for b in benchmarks:
        axes = axes_label(with_threads(b.parsed))
        spread = plots.TIME.spread(b)
        rows.append(Row(
            variant_label(b.parsed.variant), b.parsed.device.upper(), axes, b.status,
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
            label = f"{b.parsed.device.upper()} {variant_label(b.parsed.variant)}"
            variants = out.setdefault(b.skip_reason or "", [])
            if label not in variants:
                variants.append(label)
    return list(out.items())


# ---- charts ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ChartFile:
    png: Path
    caption: str


def safe_stem(text: str) -> str:
    return re.sub(r"[^a-z0-9_.-]+", "-", text.lower()).strip("-") or "chart"


def draw_charts(report: Report, out_dir: Path) -> dict[str, list[ChartFile]]:
    """Family -> its charts (sweeps first); "" -> the cross-machine chart; FRAMEWORK_SECTION ->
    the framework beside the libraries."""
    charts: dict[str, list[ChartFile]] = {}
    benchmarks = report.benchmarks
    for spec in plots.SWEEPS:
        png = plots.sweep_chart(spec, benchmarks, report.context,
                                out_dir / f"{safe_stem(spec.family)}-{safe_stem(spec.name)}")
        if png:
            charts.setdefault(spec.family, []).append(ChartFile(png, spec.title))
    swept = plots.swept_names(benchmarks)
    for family, rows in report.families.items():
        rest = [b for b in rows if b.name not in swept]  # what no sweep already drew
        png = plots.family_chart(rest, family, out_dir / safe_stem(family))
        if png:
            charts.setdefault(family, []).append(ChartFile(png, f"{family}: every variant"))
    if report.portable:
        png = plots.metrics_chart(report.portable, out_dir / "machines")
        if png:
            charts[""] = [ChartFile(png, "portable ratios by machine")]
    png = plots.framework_chart(report.pairs, out_dir / "framework-vs-libraries")
    if png:
        charts[FRAMEWORK_SECTION] = [ChartFile(png, "your framework against the libraries")]
    return charts


# ---- summary.md ----------------------------------------------------------------------------------

def summary_markdown(report: Report) -> str:
    ctx = report.context
    files = f"{len(report.runs)} results file{'s' if len(report.runs) != 1 else ''}"
    lines = ["# gapbench report", "", f"{md_cell(machine_line(ctx))} · {files}", ""]
    lines += [f"> {md_cell(n)}" for n in report.notes] + ([""] if report.notes else [])
    lines += ["## Findings", ""]
    facts, lessons = split_findings(report.findings)
    if report.findings:
        lines += [f"**{md_cell(diagnose.verdict(report.findings))}**", ""]
    else:
        lines.append("No findings: nothing the rules look for was seen.")
    for severity, findings in grouped_findings(facts):
        for f in findings:
            lines.append(f"- **{severity}** — **{md_cell(f.title)}**: {md_cell(f.text)}")
    if lessons:
        lines += ["", "Lessons that hold on every machine:", ""]
        lines += [f"- **{md_cell(f.title)}**: {md_cell(f.text)}" for f in lessons]
    lines.append("")
    ceilings = ceilings_rows(report.runs)
    if ceilings:
        lines += ["### Each file's ceilings", "",
                  "| file (family) | SGEMM GFLOP/s | read GB/s (1 thread) | start → end probes | "
                  "ceilings |", "|---|---:|---:|---|---|"]
        lines += ["| " + " | ".join(md_cell(c) for c in row) + " |" for row in ceilings]
        lines.append("")
    lines += _framework_markdown(report.pairs)
    for family, rows in report.families.items():
        lines += _family_markdown(family, rows)
    if report.portable:
        lines += ["## Against other machines (ratios, not a regression test)", ""]
        lines += _metrics_markdown(report.portable, report.runs)
    return "\n".join(lines) + "\n"


# ---- the framework beside the libraries ----------------------------------------------------------

FRAMEWORK_SECTION = "framework-vs-libraries"
FRAMEWORK_BLURB = ("The same work on the same shape through your framework (gapbench-probe) "
                   "and through the library underneath it (gapbench): the ratio is what the "
                   "framework adds, on this machine. Framework times are host wall time per "
                   "synchronized call; the GPU libraries' are kernel time, so a GPU ratio "
                   "includes the framework's launch and sync. A framework computing in TF32 on "
                   "the GPU is set against the library's TF32 where gapbench has one, else "
                   f"marked \"{framework.MIXED_MATH}\".")
FRAMEWORK_HEADERS = ("framework", "op", "device", "size", "framework time", "library",
                     "library time", "framework / library")


def framework_rows(pairs: Iterable[framework.Pair]) -> list[list[str]]:
    rows = []
    for p in pairs:
        axes = {k: v for k, v in p.framework.parsed.axes.items() if k not in ("op", "mode")}
        rows.append([p.name, p.op, p.framework.parsed.device.upper(), axes_label(axes),
                     fmt_seconds(p.framework.median),
                     f"{p.library_name} ({p.library.parsed.family}/{p.library.parsed.variant})",
                     fmt_seconds(p.library.median),
                     framework.fmt_ratio(p.ratio) + (f" ({p.note})" if p.note else "")])
    return rows


def _framework_markdown(pairs: Sequence[framework.Pair]) -> list[str]:
    if not pairs:
        return []
    lines = ["## Your framework against the libraries", "", FRAMEWORK_BLURB, ""]
    lines += [f"- **{md_cell(line)}**" for line in framework.headlines(pairs)]
    lines += ["", "| " + " | ".join(FRAMEWORK_HEADERS) + " |",
             "|---|---|---|---|---:|---|---:|---:|"]
    lines += ["| " + " | ".join(md_cell(c) for c in row) + " |" for row in framework_rows(pairs)]
    return lines + [""]


def machine_line(ctx: dict) -> str:
    """"AMD EPYC · no usable GPU (no NVIDIA driver) · profile quick · seed 42 · <date>"."""
    gpu = ctx.get("gpu.name") or f"no usable GPU ({ctx.get('gpu.status', '?')})"
    parts = [str(ctx.get("cpu.model", "unknown CPU")), str(gpu),
             f"profile {ctx.get('gapbench.profile', '?')}", f"seed {ctx.get('gapbench.seed', '?')}",
             str(ctx.get("date", ""))]
    return " · ".join(p for p in parts if p)


def _family_markdown(family: str, benchmarks: list[Benchmark]) -> list[str]:
    lines = [f"## {family}", ""]
    ran = [r for r in table_rows(benchmarks) if r.status == "ok"]
    if not ran:
        lines.append("Nothing in this family ran.")
    folded = len(ran) > TABLE_ROWS_SHOWN  # GitHub renders <details>; a blank line must follow
    if folded:
        lines += [f"<details><summary>{len(ran)} benchmarks</summary>", ""]
    if ran:
        lines += ["| variant | device | size | median | min – max | throughput |",
                  "|---|---|---|---:|---:|---|"]
        lines += [f"| {md_cell(r.variant)} | {r.device} | {md_cell(r.axes)} | {r.median} | "
                  f"{r.spread} | {md_cell(r.throughput)} |" for r in ran]
    if folded:
        lines += ["", "</details>"]
    lines.append("")
    skipped = skipped_by_reason(benchmarks)
    if skipped:
        lines.append("Skipped:")
        lines += [f"- {md_cell(', '.join(v))}: {md_cell(reason)}" for reason, v in skipped]
        lines.append("")
    failed = [b for b in benchmarks if b.status == "failed"]
    if failed:
        lines.append("Failed:")
        lines += [f"- {md_code(b.name)}: {md_cell(b.error or '')}" for b in failed]
        lines.append("")
    return lines


def changed_families(runs: Sequence[Results]) -> set[str]:
    """The families whose file in this run saw the machine change speed."""
    return {f for r in runs if metrics.ceiling_drifts(r) for f in metrics.file_families(r)}


def ratio_label(name: str, changed: set[str]) -> str:
    """A portable ratio's name, marked where this run's file for its family changed speed."""
    return f"{name} (machine changed during this run)" if name.split()[0] in changed else name


def _metrics_markdown(portable: list[tuple[str, dict[str, float]]],
                      runs: Sequence[Results] = ()) -> list[str]:
    names = list(dict.fromkeys(k for _, m in portable for k in m))
    changed = changed_families(runs)
    lines = ["| ratio | " + " | ".join(md_cell(label) for label, _ in portable) + " |",
             "|---|" + "---:|" * len(portable)]
    for name in names:
        lines.append(f"| {md_cell(ratio_label(name, changed))} | "
                     + " | ".join(_ratio_text(m.get(name)) for _, m in portable) + " |")
    return lines + [""]


def _ratio_text(value: float | None) -> str:
    return "—" if value is None else f"{value:.3g}"


# ---- index.html ---------------------------------------------------------------------------------

CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif;
       margin: 0 auto; max-width: 1240px; padding: 16px 24px; color: #222; background: #fff; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; } h2 { margin-top: 1.6em; border-bottom: 1px solid
#ddd; padding-bottom: 4px; } h3 { margin-bottom: 0.3em; }
.meta, .blurb, figcaption, .note { color: #555; } .note { font-style: italic; }
table { border-collapse: collapse; margin: 8px 0 16px; font-size: 0.88em; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f4f4f4; } tr:nth-child(even) td { background: #fafafa; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.skipped td { color: #777; } tr.failed td { color: #a00; }
figure { margin: 8px 0 16px; } img { max-width: 100%; height: auto; border: 1px solid #eee; }
.finding { border-left: 5px solid #999; padding: 6px 12px; margin: 6px 0; background: #fafafa; }
.finding.problem { border-color: #c62828; } .finding.warning { border-color: #ef8f00; }
.finding.info { border-color: #1f77b4; }
.verdict { font-size: 1.1em; font-weight: bold; }
.badge { font-size: 0.75em; text-transform: uppercase; letter-spacing: 0.05em; color: #fff;
         padding: 1px 6px; border-radius: 3px; background: #999; margin-right: 6px; }
.badge.problem { background: #c62828; } .badge.warning { background: #ef8f00; }
.badge.info { background: #1f77b4; }
nav a { margin-right: 12px; } details summary { cursor: pointer; color: #555; margin: 6px 0; }
"""


def esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def data_uri(png: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(png.read_bytes()).decode("ascii")


def _figure(chart: ChartFile) -> str:
    svg = chart.png.with_suffix(".svg").name
    return (f'<figure><img src="{data_uri(chart.png)}" alt="{esc(chart.caption)}">'
            f'<figcaption>{esc(chart.caption)} · <a href="{esc(svg)}">SVG</a></figcaption>'
            "</figure>")


def _table(headers: Sequence[str], rows: Iterable[Sequence[str]], numeric: set[int] = frozenset(),
           classes: Iterable[str] | None = None) -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = []
    for row, cls in zip(rows, classes or repeat("")):
        cells = "".join(f'<td class="num">{esc(c)}</td>' if i in numeric else f"<td>{esc(c)}</td>"
                        for i, c in enumerate(row))
        body.append(f'<tr class="{esc(cls)}">{cells}</tr>' if cls else f"<tr>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _diagnosis_html(report: Report) -> str:
    parts = ['<h2 id="diagnosis">Diagnosis</h2>']
    facts, lessons = split_findings(report.findings)
    if report.findings:
        parts.append(f'<p class="verdict">{esc(diagnose.verdict(report.findings))}</p>')
    else:
        parts.append("<p>No findings: nothing the rules look for was seen in this run.</p>")
    for severity, findings in grouped_findings(facts):
        parts.append(f"<h3>{esc(severity.capitalize())} ({len(findings)})</h3>")
        cards = [f'<div class="finding {esc(severity)}"><span class="badge {esc(severity)}">'
                 f"{esc(severity)}</span><strong>{esc(f.title)}</strong><br>{esc(f.text)}</div>"
                 for f in findings]
        parts += cards[:FINDINGS_SHOWN]
        if len(cards) > FINDINGS_SHOWN:  # the rest folded: no script, the browser's own widget
            parts.append(f"<details><summary>{len(cards) - FINDINGS_SHOWN} more "
                         f"{esc(severity)} findings</summary>{''.join(cards[FINDINGS_SHOWN:])}"
                         "</details>")
    if lessons:
        parts.append("<h3>Lessons that hold on every machine</h3><ul>" + "".join(
            f"<li><strong>{esc(f.title)}</strong>: {esc(f.text)}</li>" for f in lessons)
            + "</ul>")
    return "\n".join(parts)


def context_value(key: str, value: object) -> str:
    """A context value for the table: byte counts also in GiB, absent ones as a dash."""
    if value is None or value == "":
        return "—"
    number = metrics.number(value)
    if key.endswith("_bytes") and number:
        return f"{fmt_bytes(number)} ({value})"
    return str(value)


def _fingerprint_html(report: Report) -> str:
    keys = list(metrics.FINGERPRINT_KEYS)
    rows = [[k] + [context_value(k, ctx.get(k)) for _, ctx in report.machines] for k in keys]
    rows.append(["results files"] + [", ".join(r.path.name for r in report.runs)]
                + [b.path.name for b in report.baselines])
    return ('<h2 id="machine">Machine</h2>'
            + _table(["context"] + [label for label, _ in report.machines], rows)
            + _ceilings_html(report))


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
                    + [f"{v[0]:.3g} (±{v[1] / 2:.0%})" if v else "—" for v in peaks.values()]
                    + [probes or "—", verdict])
    return rows


def _ceilings_html(report: Report) -> str:
    rows = ceilings_rows(report.runs)
    if not rows:
        return ""
    return ("<h3>Each file's ceilings</h3><p class=\"blurb\">Every family's run measures the "
            "machine's ceilings beside itself, and probes SGEMM and read bandwidth at its start "
            f"and end: a change of more than {metrics.STABILITY_DRIFT:.0%} means the machine "
            "changed speed during that run. Each file's \"% of peak\" is judged against its own "
            "row.</p>"
            + _table(["file (family)", "SGEMM GFLOP/s", "read GB/s (1 thread)",
                      "start → end probes", "ceilings"], rows, {1, 2}))


def _machines_html(report: Report, charts: list[ChartFile]) -> str:
    if not report.portable:
        return ""
    names = list(dict.fromkeys(k for _, m in report.portable for k in m))
    changed = changed_families(report.runs)
    rows = [[ratio_label(n, changed)] + [_ratio_text(m.get(n)) for _, m in report.portable]
            for n in names]
    return ('<h2 id="machines">Against other machines</h2><p class="blurb">Raw times differ '
            "between machines for reasons nobody can fix; these ratios are each machine measured "
            "against itself, so they compare across hardware. A difference here is not a "
            "regression.</p>" + "".join(_figure(c) for c in charts)
            + _table(["ratio"] + [label for label, _ in report.portable], rows,
                     set(range(1, len(report.portable) + 1))))


def _framework_html(pairs: Sequence[framework.Pair], charts: list[ChartFile]) -> str:
    if not pairs:
        return ""
    return (f'<h2 id="{FRAMEWORK_SECTION}">Your framework against the libraries</h2>'
            f'<p class="blurb">{esc(FRAMEWORK_BLURB)}</p>'
            + "".join(f'<p class="verdict">{esc(line)}</p>' for line in framework.headlines(pairs))
            + "".join(_figure(c) for c in charts)
            + _table(FRAMEWORK_HEADERS, framework_rows(pairs), {4, 6, 7}))


def _family_html(family: str, benchmarks: list[Benchmark], charts: list[ChartFile]) -> str:
    parts = [f'<h2 id="family-{esc(family)}">{esc(family)}</h2>']
    if family in FAMILY_BLURB:
        parts.append(f'<p class="blurb">{esc(FAMILY_BLURB[family])}</p>')
    parts += [_figure(c) for c in charts]
    if not charts:
        parts.append('<p class="note">No chart: nothing in this family was timed.</p>')
    skipped = skipped_by_reason(benchmarks)
    if skipped:
        parts.append("<p>Skipped:</p><ul>" + "".join(
            f"<li>{esc(', '.join(v))}: {esc(reason)}</li>" for reason, v in skipped) + "</ul>")
    # Skips are listed once, above, by reason; the table holds what ran or failed.
    rows = [r for r in table_rows(benchmarks) if r.status != "skipped"]
    cells = [[r.variant, r.device, r.axes, r.status, r.median, r.spread, r.reps,
              r.throughput or r.reason] for r in rows]
    table = _table(["variant", "device", "size", "status", "median", "min – max", "reps",
                    "throughput / reason"], cells, {4, 5, 6},
                   [r.status if r.status != "ok" else "" for r in rows])
    if len(rows) > TABLE_ROWS_SHOWN:  # a long table folded, so the next chart is near
        table = f"<details><summary>table of {len(rows)} benchmarks</summary>{table}</details>"
    if rows:
        parts.append(table)
    return "\n".join(parts)


def html_page(report: Report, charts: dict[str, list[ChartFile]]) -> str:
    ctx = report.context
    nav = ['<a href="#diagnosis">diagnosis</a>', '<a href="#machine">machine</a>']
    if report.pairs:
        nav.append(f'<a href="#{FRAMEWORK_SECTION}">framework vs libraries</a>')
    if report.portable:
        nav.append('<a href="#machines">other machines</a>')
    nav += [f'<a href="#family-{esc(f)}">{esc(f)}</a>' for f in report.families]
    body = [
        "<h1>gapbench report</h1>",
        f'<p class="meta">{esc(machine_line(ctx))}</p>',
        f"<nav>{''.join(nav)}</nav>",
        *[f'<p class="note">{esc(n)}</p>' for n in report.notes],
        _diagnosis_html(report),
        _fingerprint_html(report),
        _framework_html(report.pairs, charts.get(FRAMEWORK_SECTION, [])),
        _machines_html(report, charts.get("", [])),
        *[_family_html(f, rows, charts.get(f, [])) for f, rows in report.families.items()],
    ]
    return ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>gapbench report</title><style>{CSS}</style></head><body>\n"
            + "\n".join(p for p in body if p) + "\n</body></html>\n")


# ---- files -------------------------------------------------------------------------------------

def render(runs: list[Results], baselines: list[Results], out_dir: Path) -> Path:
    """Writes the charts, summary.md and index.html (last) into out_dir; returns index.html."""
    if not runs:
        raise ResultsError("no results files to render")
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise ResultsError(f"{out_dir}: exists and is not a directory")
    out_dir.mkdir(parents=True, exist_ok=True)
    report = build_report(runs, baselines)
    charts = draw_charts(report, out_dir)
    write_atomic(out_dir / "summary.md", summary_markdown(report))
    index = out_dir / "index.html"
    write_atomic(index, html_page(report, charts))
    return index


# ---- command line -------------------------------------------------------------------------------

def _parser() -> commandline.Parser:
    p = commandline.parser(PROG, "Charts, index.html and summary.md for one run.", epilog="")
    p.add_argument("results", nargs="+", help="the run's results files (one per family)")
    p.add_argument("--baseline", action="extend", nargs="+", default=[], metavar="FILE",
                   help="a results file from another machine (repeatable)")
    p.add_argument("--out", required=True, type=Path, help="the folder to write into")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """0 written; 2 unusable input or unwritable output (one line on stderr, no traceback)."""
    def body(args: list[str]) -> int:
        a = _parser().parse_args(args)
        runs = [load_results(p) for p in a.results]
        baselines = [load_results(p) for p in a.baseline]
        print(render(runs, baselines, a.out))
        return 0

    return commandline.run(PROG, body, argv, command="render")


if __name__ == "__main__":
    sys.exit(main())
