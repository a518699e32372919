"""summary.md of render: the report as Markdown, for CI job summaries and pull requests (the write
step of render), made with the writer kit (writers.markdown)."""

from __future__ import annotations

from gapbench_report.core.labels import md_cell, md_code
from gapbench_report.render import headings
from gapbench_report.render.model import FamilySection, Report, VersusSection
from gapbench_report.versus import framework as versus_framework
from gapbench_report.writers.markdown import markdown_table


def summary_markdown(report: Report) -> str:
    files = f"{len(report.runs)} results file{'s' if len(report.runs) != 1 else ''}"
    lines = ["# gapbench report", "", f"{md_cell(report.machine_line)} · {files}", ""]
    lines += [f"> {md_cell(n)}" for n in report.notes] + ([""] if report.notes else [])
    lines += ["## Findings", ""]
    if report.findings:
        lines += [f"**{md_cell(report.verdict)}**", ""]
    else:
        lines.append("No findings: nothing the rules look for was seen.")
    for severity, findings in report.facts:
        for f in findings:
            lines.append(f"- **{severity}** — **{md_cell(f.title)}**: {md_cell(f.text)}")
    if report.defects:
        lines += ["", f"{report.defects_heading}:", ""]
        lines += [f"- **{md_cell(f.title)}**: {md_cell(f.text)}" for f in report.defects]
    if report.lessons:
        lines += ["", "Lessons that hold on every machine:", ""]
        lines += [f"- **{md_cell(f.title)}**: {md_cell(f.text)}" for f in report.lessons]
    lines.append("")
    lines += _machines_markdown(report)
    if report.ceilings:
        lines += ["### Each file's ceilings", ""]
        lines += markdown_table(headings.CEILINGS_HEADERS, report.ceilings,
                                headings.CEILINGS_NUMERIC)
        lines.append("")
    if report.compute_peaks:
        lines += ["### Each library against the hardware's limit", "",
                  md_cell(headings.COMPUTE_PEAKS_BLURB), ""]
        if report.compute_peaks_line:
            lines += [md_cell(report.compute_peaks_line), ""]
        lines += markdown_table(headings.COMPUTE_PEAKS_HEADERS, report.compute_peaks, {1, 3, 4})
        lines.append("")
    lines += _framework_markdown(report)
    for section in report.sections:
        lines += _family_markdown(section)
    return "\n".join(lines) + "\n"


def _machines_markdown(report: Report) -> list[str]:
    if not report.versus and not report.ratio_rows:
        return []
    lines = ["## Against other machines", "", md_cell(headings.VERSUS_BLURB), ""]
    for section in report.versus:
        lines += _versus_markdown(section)
        for framework_section in report.framework_versus.get(section.label, []):
            lines += _framework_versus_markdown(framework_section, section.label)
    if report.ratio_rows:
        lines += ["### Each machine against its own ceilings", "",
                  md_cell(headings.OWN_CEILINGS_BLURB), ""]
        lines += markdown_table(["ratio"] + [label for label, _ in report.portable],
                                report.ratio_rows, set(range(1, len(report.portable) + 1)))
        lines.append("")
    return lines


def _versus_markdown(section: VersusSection) -> list[str]:
    lines = [f"### Against {md_cell(section.label)}", ""]
    for lead, items in section.verdict:
        lines += [f"**{md_cell(lead)}**", ""]
        lines += [f"- {md_cell(i)}" for i in items] + ([""] if items else [])
    for kind, found in (("slower", section.slower), ("faster", section.faster)):
        lines += [f"- **{kind} here** — **{md_cell(title)}**: {md_cell(text)}"
                  for title, text in found]
    lines += ["", md_cell(section.alike), ""]
    if section.not_comparable:
        lines += [f"<details><summary>{len(section.not_comparable)} not comparable, and why"
                  "</summary>", ""]
        lines += markdown_table(headings.with_there(headings.NOT_COMPARABLE_HEADERS, section.label),
                                section.not_comparable, {1, 2})
        lines += ["", "</details>", ""]
    lines += markdown_table(headings.with_there(headings.VERSUS_CEILING_HEADERS, section.label),
                            section.ceilings, {1, 2, 3})
    return lines + [""]


def _framework_versus_markdown(section: versus_framework.Section, there: str) -> list[str]:
    """The user's framework on both machines: its verdict, a finding per differing work, the
    works side by side with their two parts, the rows not comparable and the framework's
    facts side by side."""
    lines = [f"#### {md_cell(section.title)}", ""]
    for lead, items in section.verdict:
        lines += [f"**{md_cell(lead)}**", ""]
        lines += [f"- {md_cell(i)}" for i in items] + ([""] if items else [])
    lines += [f"- **{md_cell(title)}**: {md_cell(text)}" for title, text in section.findings]
    if section.summary:
        lines += ["", md_cell(section.summary), ""]
    if section.works:
        headers = list(versus_framework.WORK_HEADERS)
        headers[2] = there
        lines += markdown_table(headers, section.works, {1, 2, 3, 4, 5}) + [""]
    if section.not_comparable:
        lines += [f"<details><summary>{len(section.not_comparable)} not comparable, and why"
                  "</summary>", ""]
        lines += markdown_table(headings.with_there(headings.NOT_COMPARABLE_HEADERS, there),
                                section.not_comparable, {1, 2})
        lines += ["", "</details>", ""]
    if section.facts:
        headers = list(versus_framework.FACT_HEADERS)
        headers[2] = there
        lines += markdown_table(headers, section.facts) + [""]
    return lines


def _framework_markdown(report: Report) -> list[str]:
    if not report.framework_rows:
        return []
    lines = ["## Your framework against the libraries", "", headings.FRAMEWORK_BLURB, ""]
    lines += [f"- **{md_cell(line)}**" for line in report.framework_headlines]
    lines.append("")
    lines += markdown_table(headings.FRAMEWORK_HEADERS, report.framework_rows, {4, 6, 7})
    return lines + [""]


def _family_markdown(section: FamilySection) -> list[str]:
    lines = [f"## {section.family}", ""]
    ran = [r for r in section.rows if r.status == "ok"]
    if not ran:
        lines.append("Nothing in this family ran.")
    # GitHub renders <details>; a blank line must follow
    folded = len(ran) > headings.TABLE_ROWS_SHOWN
    if folded:
        lines += [f"<details><summary>{len(ran)} benchmarks</summary>", ""]
    if ran:
        lines += markdown_table(["variant", "device", "size", "median", "min – max", "throughput"],
                                [[r.variant, r.device, r.axes, r.median, r.spread, r.throughput]
                                 for r in ran], {3, 4})
    if folded:
        lines += ["", "</details>"]
    lines.append("")
    if section.skipped:
        lines.append("Skipped:")
        lines += [f"- {md_cell(', '.join(v))}: {md_cell(reason)}" for reason, v in section.skipped]
        lines.append("")
    if section.failed:
        lines.append("Failed:")
        lines += [f"- {md_code(name)}: {md_cell(error)}" for name, error in section.failed]
        lines.append("")
    return lines
