"""index.html of render: the report as one self-contained page, charts inlined (the write step
of render), made with the writer kit (writers.html)."""

from __future__ import annotations

from gapbench_report.core.catalogue import FAMILY_BLURB
from gapbench_report.core.metrics import STABILITY_DRIFT
from gapbench_report.render import headings
from gapbench_report.render.model import FamilySection, Report, VersusSection
from gapbench_report.versus import framework as versus_framework
from gapbench_report.writers.html import ChartFile, esc, figure, page, table

FINDINGS_SHOWN = 8  # per severity; more are folded away in the page (all are in summary.md)


def html_page(report: Report, charts: dict[str, list[ChartFile]]) -> str:
    """index.html. `charts`: family -> its charts; "" -> each machine's ceilings; VERSUS_CHART + a
    baseline's label -> the works against it; FRAMEWORK_SECTION -> the framework beside the
    libraries (render.headings)."""
    nav = ['<a href="#diagnosis">diagnosis</a>']
    if report.versus or report.ratio_rows:
        nav.append(f'<a href="#{headings.VERSUS_SECTION}">against other machines</a>')
    nav.append('<a href="#machine">machine</a>')
    if report.framework_rows:
        nav.append(f'<a href="#{headings.FRAMEWORK_SECTION}">framework vs libraries</a>')
    nav += [f'<a href="#family-{esc(s.family)}">{esc(s.family)}</a>' for s in report.sections]
    return page("gapbench report", [
        "<h1>gapbench report</h1>",
        f'<p class="meta">{esc(report.machine_line)}</p>',
        f"<nav>{''.join(nav)}</nav>",
        *[f'<p class="note">{esc(n)}</p>' for n in report.notes],
        _diagnosis_html(report),
        _machines_html(report, charts),
        _fingerprint_html(report),
        _framework_html(report, charts.get(headings.FRAMEWORK_SECTION, [])),
        *[_family_html(s, charts.get(s.family, [])) for s in report.sections],
    ])


def _diagnosis_html(report: Report) -> str:
    parts = ['<h2 id="diagnosis">Diagnosis</h2>']
    if report.findings:
        parts.append(f'<p class="verdict">{esc(report.verdict)}</p>')
    else:
        parts.append("<p>No findings: nothing the rules look for was seen in this run.</p>")
    for severity, findings in report.facts:
        parts.append(f"<h3>{esc(severity.capitalize())} ({len(findings)})</h3>")
        cards = [f'<div class="finding {esc(severity)}"><span class="badge {esc(severity)}">'
                 f"{esc(severity)}</span><strong>{esc(f.title)}</strong><br>{esc(f.text)}</div>"
                 for f in findings]
        parts += cards[:FINDINGS_SHOWN]
        if len(cards) > FINDINGS_SHOWN:  # the rest folded: no script, the browser's own widget
            parts.append(f"<details><summary>{len(cards) - FINDINGS_SHOWN} more "
                         f"{esc(severity)} findings</summary>{''.join(cards[FINDINGS_SHOWN:])}"
                         "</details>")
    if report.defects:  # never silent, never mistaken for this machine's
        parts.append(f"<h3>{esc(report.defects_heading)} ({len(report.defects)})</h3>")
        parts += [f'<div class="finding warning"><span class="badge warning">gapbench</span>'
                  f"<strong>{esc(f.title)}</strong><br>{esc(f.text)}</div>"
                  for f in report.defects]
    if report.lessons:
        parts.append("<h3>Lessons that hold on every machine</h3><ul>" + "".join(
            f"<li><strong>{esc(f.title)}</strong>: {esc(f.text)}</li>" for f in report.lessons)
            + "</ul>")
    return "\n".join(parts)


def _fingerprint_html(report: Report) -> str:
    return ('<h2 id="machine">Machine</h2>'
            + table(["context"] + [label for label, _ in report.machines], report.fingerprint)
            + _ceilings_html(report))


def _ceilings_html(report: Report) -> str:
    if not report.ceilings:
        return ""
    return ("<h3>Each file's ceilings</h3><p class=\"blurb\">Every family's run measures the "
            "machine's ceilings beside itself, and probes SGEMM, read bandwidth and the "
            "register FMA loop (on every CPU over one thread: the CPUs' parallel capacity) at "
            f"its start and end: an SGEMM change of more than {STABILITY_DRIFT:.0%} means the "
            "machine changed speed during that run. Other work is other processes' CPU time "
            "and the hypervisor's steal over the run; a family the bench workflow ran again "
            "says which run it kept. Each file's \"% of peak\" is judged against the "
            "ceilings in this row: its own peak/ rows, or those of the peak file it names.</p>"
            + table(headings.CEILINGS_HEADERS, report.ceilings, headings.CEILINGS_NUMERIC)
            + (f"<h3>Each library against the hardware's limit</h3>"
               f"<p class=\"blurb\">{esc(headings.COMPUTE_PEAKS_BLURB)}</p>"
               + (f"<p>{esc(report.compute_peaks_line)}</p>" if report.compute_peaks_line
                  else "")
               + table(headings.COMPUTE_PEAKS_HEADERS, report.compute_peaks, {1, 3, 4})
               if report.compute_peaks else ""))


def _machines_html(report: Report, charts: dict[str, list[ChartFile]]) -> str:
    if not report.versus and not report.ratio_rows:
        return ""
    parts = [f'<h2 id="{headings.VERSUS_SECTION}">Against other machines</h2>',
             f'<p class="blurb">{esc(headings.VERSUS_BLURB)}</p>']
    for section in report.versus:
        parts.append(_versus_html(section, charts.get(headings.VERSUS_CHART + section.label, [])))
        parts += [_framework_versus_html(f, section.label)
                  for f in report.framework_versus.get(section.label, [])]
    if charts.get(""):
        parts.append("<h3>Each machine's ceilings</h3>")
        parts += [figure(c) for c in charts[""]]
    if report.ratio_rows:
        parts.append(f"<h3>Each machine against its own ceilings</h3><p class=\"blurb\">"
                     f"{esc(headings.OWN_CEILINGS_BLURB)}</p>"
                     + table(["ratio"] + [label for label, _ in report.portable],
                             report.ratio_rows, set(range(1, len(report.portable) + 1))))
    return "\n".join(parts)


def _versus_html(section: VersusSection, charts: list[ChartFile]) -> str:
    parts = [f"<h3>Against {esc(section.label)}</h3>"]
    for lead, items in section.verdict:
        parts.append(f'<p class="verdict">{esc(lead)}</p>')
        if items:
            parts.append("<ul>" + "".join(f"<li>{esc(i)}</li>" for i in items) + "</ul>")
    parts += [figure(c) for c in charts]
    cards = [f'<div class="finding {kind}"><span class="badge {kind}">{kind} here</span>'
             f"<strong>{esc(title)}</strong><br>{esc(text)}</div>"
             for kind, found in (("slower", section.slower), ("faster", section.faster))
             for title, text in found]
    parts += cards[:FINDINGS_SHOWN]
    if len(cards) > FINDINGS_SHOWN:
        parts.append(f"<details><summary>{len(cards) - FINDINGS_SHOWN} more works that differ"
                     f"</summary>{''.join(cards[FINDINGS_SHOWN:])}</details>")
    parts.append(f"<p>{esc(section.alike)}</p>")
    if section.not_comparable:
        headers = headings.with_there(headings.NOT_COMPARABLE_HEADERS, section.label)
        parts.append(f"<details><summary>{len(section.not_comparable)} not comparable, and why"
                     f"</summary>{table(headers, section.not_comparable, {1, 2})}</details>")
    headers = headings.with_there(headings.VERSUS_CEILING_HEADERS, section.label)
    parts.append(table(headers, section.ceilings, {1, 2, 3}))
    return "\n".join(parts)


def _framework_versus_html(section: versus_framework.Section, there: str) -> str:
    """As summary.md's (render.summary._framework_versus_markdown)."""
    parts = [f"<h4>{esc(section.title)}</h4>"]
    for lead, items in section.verdict:
        parts.append(f'<p class="verdict">{esc(lead)}</p>')
        if items:
            parts.append("<ul>" + "".join(f"<li>{esc(i)}</li>" for i in items) + "</ul>")
    parts += [f'<div class="finding"><strong>{esc(title)}</strong><br>{esc(text)}</div>'
              for title, text in section.findings]
    if section.summary:
        parts.append(f"<p>{esc(section.summary)}</p>")
    if section.works:
        headers = list(versus_framework.WORK_HEADERS)
        headers[2] = there
        parts.append(table(headers, section.works, {1, 2, 3, 4, 5}))
    if section.not_comparable:
        headers = headings.with_there(headings.NOT_COMPARABLE_HEADERS, there)
        parts.append(f"<details><summary>{len(section.not_comparable)} not comparable, and why"
                     f"</summary>{table(headers, section.not_comparable, {1, 2})}</details>")
    if section.facts:
        headers = list(versus_framework.FACT_HEADERS)
        headers[2] = there
        parts.append(table(headers, section.facts))
    return "\n".join(parts)


def _framework_html(report: Report, charts: list[ChartFile]) -> str:
    if not report.framework_rows:
        return ""
    return (f'<h2 id="{headings.FRAMEWORK_SECTION}">Your framework against the libraries</h2>'
            f'<p class="blurb">{esc(headings.FRAMEWORK_BLURB)}</p>'
            + "".join(f'<p class="verdict">{esc(line)}</p>' for line in report.framework_headlines)
            + "".join(figure(c) for c in charts)
            + table(headings.FRAMEWORK_HEADERS, report.framework_rows, {4, 6, 7}))


def _family_html(section: FamilySection, charts: list[ChartFile]) -> str:
    family = section.family
    parts = [f'<h2 id="family-{esc(family)}">{esc(family)}</h2>']
    if family in FAMILY_BLURB:
        parts.append(f'<p class="blurb">{esc(FAMILY_BLURB[family])}</p>')
    parts += [figure(c) for c in charts]
    if not charts:
        parts.append('<p class="note">No chart: nothing in this family was timed.</p>')
    if section.skipped:
        parts.append("<p>Skipped:</p><ul>" + "".join(
            f"<li>{esc(', '.join(v))}: {esc(reason)}</li>" for reason, v in section.skipped)
            + "</ul>")
    # Skips are listed once, above, by reason; the table holds what ran or failed.
    rows = [r for r in section.rows if r.status != "skipped"]
    cells = [[r.variant, r.device, r.axes, r.status, r.median, r.spread, r.reps,
              r.throughput or r.reason] for r in rows]
    html_table = table(["variant", "device", "size", "status", "median", "min – max", "reps",
                        "throughput / reason"], cells, {4, 5, 6},
                       [r.status if r.status != "ok" else "" for r in rows])
    if len(rows) > headings.TABLE_ROWS_SHOWN:  # a long table folded, so the next chart is near
        html_table = (f"<details><summary>table of {len(rows)} benchmarks</summary>{html_table}"
                      "</details>")
    if rows:
        parts.append(html_table)
    return "\n".join(parts)
