"""The fleet report's page: summary.md and index.html of a judged fleet (fleet.judge.Fleet):
the verdict, the slower runs each beside the facts that explain it, the hardware groups and
doctor's findings per node. How to read it: docs/fleet.md."""

from __future__ import annotations

import re

from gapbench_report.core.facts import EXPLAINING
from gapbench_report.core.labels import describe, fmt_seconds, fmt_si, md_cell
from gapbench_report.fleet.judge import MIN_JUDGED, SLOW_RATIO, SLOW_Z, Fleet, Group, Outlier
from gapbench_report.inputs.fleet import printable
from gapbench_report.inputs.results import parse_name
from gapbench_report.writers.html import esc, page, table
from gapbench_report.writers.markdown import markdown_table

ROWS_SHOWN = 60  # rows of a long table before the rest is folded away


def headline(outlier: Outlier) -> str:
    """The run, its worst benchmark against its group, its cost, and the first fact that explains
    it."""
    worst = outlier.slow[0]
    if worst.rate and worst.rate_median:
        figure = (f"{fmt_si(worst.rate, 'B/s')} against the group's "
                  f"{fmt_si(worst.rate_median, 'B/s')}")
    else:
        figure = f"{fmt_seconds(worst.seconds)} against the group's {fmt_seconds(worst.median)}"
    why = (outlier.differences[0].cited if outlier.differences
           else "no fact doctor records differs from the rest of its group")
    if len(outlier.differences) > 1:
        why += (f"; {len(outlier.differences) - 1} more differ: "
                + ", ".join(d.key for d in outlier.differences[1:]))
    return (f"{outlier.node.label}: {describe(parse_name(worst.name))} {figure} "
            f"({worst.ratio:.1f}×); {len(outlier.slow)} of {outlier.compared} benchmarks slower, "
            f"{outlier.cost:.2f}× on this work: {why}")


def verdict(fleet: Fleet) -> str:
    judged = [g for g in fleet.groups if len(g.nodes) >= MIN_JUDGED]
    if fleet.outliers:
        first = fleet.outliers[0]
        more = len(fleet.outliers) - 1
        return (f"Slowest for this work: {headline(first)}."
                + (f" {more} more run{'s' if more != 1 else ''} stand{'' if more != 1 else 's'}"
                   " out (ranked below)." if more else ""))
    if judged:
        return "No run stands out from its hardware group."
    if fleet.groups:
        return (f"Nothing to judge: no hardware group has {MIN_JUDGED} runs; the groups are "
                "shown side by side.")
    if not fleet.nodes:
        return ("No node has written its folder yet: the job may still be queued "
                "(gapbench-ci fleet status DIR says).")
    return "No node left a usable results file."


def intro(fleet: Fleet) -> str:
    runs = len(fleet.nodes)
    groups = len(fleet.groups)
    return (f"{printable(str(fleet.root))} · {runs} node folder{'s' if runs != 1 else ''} · "
            f"{fleet.machines} machine{'s' if fleet.machines != 1 else ''} · {groups} hardware "
            f"group{'s' if groups != 1 else ''}"
            + (f" · {len(fleet.problems)} with problems" if fleet.problems else ""))


OUTLIER_HEADERS = ["rank", "run", "cost on this work", "slower benchmarks", "worst", "why"]
GROUP_HEADERS = ["hardware group", "runs", "machines", "judged", "note"]
FINDING_HEADERS = ["severity", "finding", "nodes", "text"]
RUN_HEADERS = ["run", "machine.id", "cost", "slower", "load average", "gapbench", "profile"]


def outlier_rows(fleet: Fleet) -> list[list[str]]:
    return [[str(i), o.node.label, f"{o.cost:.2f}×", f"{len(o.slow)} of {o.compared}",
             f"{describe(parse_name(o.slow[0].name))} ({o.slow[0].ratio:.1f}×)",
             o.differences[0].cited if o.differences else "no recorded fact differs"]
            for i, o in enumerate(fleet.outliers, 1)]


def group_rows(fleet: Fleet) -> list[list[str]]:
    return [[g.label, str(len(g.nodes)), str(g.machines),
             (f"yes: {len(g.outliers)} slower" if g.outliers else "yes: none slower")
             if len(g.nodes) >= MIN_JUDGED else "no", "; ".join(g.notes)]
            for g in fleet.groups]


def run_rows(group: Group) -> list[list[str]]:
    by_node = {id(o.node): o for o in group.outliers}
    rows = []
    for n in group.nodes:
        o = by_node.get(id(n))
        rows.append([n.label, n.machine, f"{o.cost:.2f}×" if o else "", str(len(o.slow)) if o
                     else "", f"{n.load:.2f}" if n.load is not None else "",
                     n.fact("gapbench.version"), n.fact("gapbench.profile")])
    return rows


def fact_rows(outlier: Outlier) -> list[list[str]]:
    """Every explaining fact of the run beside the rest of its group's."""
    cited = {d.key: d for d in outlier.differences}
    rows = []
    for key, _, _, _ in EXPLAINING:
        value = outlier.facts.shown(key)
        if key in cited:
            rows.append([key, cited[key].value or "not set", cited[key].others or "not set",
                         "differs"])
        elif value:
            rows.append([key, value, "the same", ""])
    return rows


def problem_rows(fleet: Fleet) -> list[list[str]]:
    return [[n.label, p] for n in fleet.problems for p in n.problems]


def finding_rows(fleet: Fleet) -> tuple[list[str], list[list[str]]]:
    """(the findings every node has, by id; a row per other finding: severity, id, the nodes
    that have it, its text as the first of them says it)."""
    with_findings = [n for n in fleet.nodes if n.findings]
    nodes: dict[tuple[str, str], list[str]] = {}
    texts: dict[tuple[str, str], str] = {}
    for n in with_findings:
        for severity, ident, text in n.findings:
            nodes.setdefault((severity, ident), []).append(n.label)
            texts.setdefault((severity, ident), text)
    everywhere = sorted(i for (_, i), labels in nodes.items()
                        if len(with_findings) > 1 and len(labels) == len(with_findings))
    rows = [[severity, ident, shortened(labels), texts[(severity, ident)]]
            for (severity, ident), labels in nodes.items() if ident not in everywhere]
    return everywhere, rows


def shortened(labels: list[str], shown: int = 8) -> str:
    more = len(labels) - shown
    return ", ".join(labels[:shown]) + (f" and {more} more" if more > 0 else "")


def with_code(text: str) -> str:
    """Escaped text, its `spans` (a fact's key, as doctor names it) as <code>."""
    return re.sub(r"`([^`]*)`", r"<code>\1</code>", esc(text))


def folded(html_table: str, rows: int, what: str) -> str:
    if rows <= ROWS_SHOWN:
        return html_table
    return f"<details><summary>{rows} {esc(what)}</summary>{html_table}</details>"


def html_report(fleet: Fleet) -> str:
    parts = ["<h1>gapbench fleet report</h1>", f'<p class="meta">{esc(intro(fleet))}</p>',
             '<h2 id="verdict">Verdict</h2>', f'<p class="verdict">{with_code(verdict(fleet))}</p>']
    parts += [f'<p class="note">{esc(n)}</p>' for n in fleet.notes]
    if fleet.problems:
        rows = problem_rows(fleet)
        parts += ['<h2 id="problems">Nodes with problems</h2><p class="blurb">Listed, never '
                  "dropped: what these nodes did write is used below.</p>",
                  folded(table(["node", "problem"], rows, classes=["failed"] * len(rows)),
                         len(rows), "problems")]
    if fleet.outliers:
        rows = outlier_rows(fleet)
        parts += ['<h2 id="outliers">Slower runs, by their cost on this work</h2>'
                  f'<p class="blurb">A benchmark is slower when it is {SLOW_Z:g} robust '
                  f"deviations (median absolute deviation) and {SLOW_RATIO:g}× above its "
                  "group's median; a run's cost is the geometric mean of its time over the "
                  "group's median on the benchmarks it shares with the group, each one within "
                  "the spread counted as 1×.</p>",
                  folded(table(OUTLIER_HEADERS, rows, {0, 2}), len(rows), "slower runs")]
        for i, o in enumerate(fleet.outliers[:ROWS_SHOWN], 1):
            parts.append(f'<h3>{i}. {esc(o.node.label)}</h3><p>{with_code(headline(o))}</p>')
            facts = fact_rows(o)
            parts.append(table(["fact", o.node.label, "the rest of its group", ""], facts,
                               classes=["failed" if r[3] else "" for r in facts]))
            slow = [[describe(parse_name(s.name)), s.name, f"{s.ratio:.2f}×",
                     fmt_seconds(s.seconds), fmt_seconds(s.median)] for s in o.slow]
            parts.append(f"<details><summary>its {len(slow)} slower benchmarks</summary>"
                         + table(["benchmark", "name", "× median", "this run", "group median"],
                                 slow, {2, 3, 4}) + "</details>")
    parts.append('<h2 id="groups">Hardware groups, side by side</h2><p class="blurb">A run is '
                 "compared only with runs of the same hardware; a group of one or two is shown "
                 "and not judged.</p>")
    parts.append(table(GROUP_HEADERS, group_rows(fleet), {1, 2}))
    for g in fleet.groups:
        rows = run_rows(g)
        parts.append(f"<h3>{esc(g.label)}</h3>"
                     + "".join(f'<p class="note">{esc(n)}</p>' for n in g.notes)
                     + folded(table(RUN_HEADERS, rows, {2, 3, 4}), len(rows), "runs"))
    everywhere, rows = finding_rows(fleet)
    parts.append('<h2 id="doctor">doctor\'s findings per node</h2>')
    if everywhere:
        parts.append(f"<p>On every node: {esc(', '.join(everywhere))}.</p>")
    parts.append(folded(table(FINDING_HEADERS, rows), len(rows), "findings") if rows
                 else "<p>No other findings.</p>")
    return page("gapbench fleet report", parts)


def markdown_report(fleet: Fleet) -> str:
    lines = ["# gapbench fleet report", "", md_cell(intro(fleet)), "",
             f"**{md_cell(verdict(fleet))}**", ""]
    lines += [f"> {md_cell(n)}" for n in fleet.notes] + ([""] if fleet.notes else [])
    if fleet.problems:
        lines += ["## Nodes with problems", ""]
        lines += markdown_table(["node", "problem"], problem_rows(fleet)) + [""]
    if fleet.outliers:
        lines += ["## Slower runs, by their cost on this work", ""]
        lines += markdown_table(OUTLIER_HEADERS, outlier_rows(fleet), {0, 2}) + [""]
    lines += ["## Hardware groups", ""]
    lines += markdown_table(GROUP_HEADERS, group_rows(fleet), {1, 2}) + [""]
    everywhere, rows = finding_rows(fleet)
    lines += ["## doctor's findings per node", ""]
    if everywhere:
        lines += [f"On every node: {md_cell(', '.join(everywhere))}.", ""]
    lines += markdown_table(FINDING_HEADERS, rows) if rows else ["No other findings."]
    return "\n".join(lines) + "\n"
