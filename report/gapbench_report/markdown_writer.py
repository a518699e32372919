"""summary.md: the report as Markdown, for CI job summaries and pull requests (the write step of
render; its cells are made safe by labels.md_cell, as every Markdown the report writes)."""

from __future__ import annotations

from collections.abc import Sequence

from gapbench_report import framework
from gapbench_report.labels import md_cell, md_code
from gapbench_report.model import (
    FRAMEWORK_BLURB,
    FRAMEWORK_HEADERS,
    TABLE_ROWS_SHOWN,
    Report,
    ceilings_rows,
    framework_rows,
    grouped_findings,
    machine_line,
    ratio_rows,
    skipped_by_reason,
    split_findings,
    table_rows,
)
from gapbench_report.results import Benchmark, Results


def table_line(cells: Sequence[str]) -> str:
    """One row of a Markdown table, each cell made safe for it."""
    return "| " + " | ".join(md_cell(c) for c in cells) + " |"


def summary_markdown(report: Report) -> str:
    ctx = report.context
    files = f"{len(report.runs)} results file{'s' if len(report.runs) != 1 else ''}"
    lines = ["# gapbench report", "", f"{md_cell(machine_line(ctx))} · {files}", ""]
    lines += [f"> {md_cell(n)}" for n in report.notes] + ([""] if report.notes else [])
    lines += ["## Findings", ""]
    facts, lessons = split_findings(report.findings)
    if report.findings:
        lines += [f"**{md_cell(report.verdict)}**", ""]
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
        lines += [table_line(row) for row in ceilings]
        lines.append("")
    lines += _framework_markdown(report.pairs)
    for family, rows in report.families.items():
        lines += _family_markdown(family, rows)
    if report.portable:
        lines += ["## Against other machines (ratios, not a regression test)", ""]
        lines += _metrics_markdown(report.portable, report.runs)
    return "\n".join(lines) + "\n"


def _framework_markdown(pairs: Sequence[framework.Pair]) -> list[str]:
    if not pairs:
        return []
    lines = ["## Your framework against the libraries", "", FRAMEWORK_BLURB, ""]
    lines += [f"- **{md_cell(line)}**" for line in framework.headlines(pairs)]
    lines += ["", "| " + " | ".join(FRAMEWORK_HEADERS) + " |",
              "|---|---|---|---|---:|---|---:|---:|"]
    lines += [table_line(row) for row in framework_rows(pairs)]
    return lines + [""]


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


def _metrics_markdown(portable: list[tuple[str, dict[str, float]]],
                      runs: Sequence[Results] = ()) -> list[str]:
    lines = ["| ratio | " + " | ".join(md_cell(label) for label, _ in portable) + " |",
             "|---|" + "---:|" * len(portable)]
    # The values are numbers or a dash: only the ratio's name needs making safe.
    lines += [f"| {md_cell(name)} | " + " | ".join(values) + " |"
              for name, *values in ratio_rows(portable, runs)]
    return lines + [""]
