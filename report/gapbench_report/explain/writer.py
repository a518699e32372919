"""explain's writers: its answers as Markdown (explain.md, and what the command prints), as a
page (explain.html) and as JSON (--json). They print the answers and compute nothing."""

from __future__ import annotations

from pathlib import Path

from gapbench_report.core.labels import md_cell as md_text
from gapbench_report.core.labels import printable
from gapbench_report.explain.prices import Prices, ms
from gapbench_report.explain.rules import Answer, Explained
from gapbench_report.writers.html import esc as html_esc
from gapbench_report.writers.html import page

# A trace's names (ops, kernels, its file's) reach every output: their control characters (ESC,
# BEL: a terminal acts on them) escaped as \x1b, as the fleet's pages escape them.


def md_cell(text: object) -> str:
    return md_text(printable(str(text)))


def esc(text: object) -> str:
    return html_esc(printable(str(text)))


def _seconds(x: float | None) -> float | None:
    return None if x is None else round(x, 9)


def as_json(answers: list[Answer], prices: Prices | None) -> dict:
    return {
        "results": None if prices is None else {
            "machine.id": prices.machine, "host_name": prices.host, "files": prices.label},
        "traces": [{
            "path": a.profile.path, "framework": a.profile.framework,
            "host_name": a.profile.host_name, "gpus": a.profile.gpus,
            "has_device": a.profile.has_device, "steps": a.profile.steps,
            "step_marked": a.profile.step_marked, "judged": a.judged,
            "step_seconds": _seconds(a.profile.step_seconds), "verdict": a.verdict,
            "notes": a.notes,
            "findings": [{
                "rule": f.rule, "severity": f.severity, "title": f.title, "text": f.text,
                "lost_seconds_per_step": _seconds(f.lost),
                "saving_seconds_per_step": _seconds(f.saving), "basis": f.basis,
                "family": f.family, "evidence": _plain(f.evidence)} for f in a.findings]}
            for a in answers]}


def _plain(value):
    """Evidence as JSON: numbers rounded, what JSON lacks as text."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, float):
        return round(value, 9)
    if value is None or isinstance(value, (int, str, bool)):
        return value
    return str(value)


def _saving_cell(f: Explained) -> str:
    return f"{ms(f.saving)}" if f.saving is not None else "not priced"


def steps_line(p) -> str:
    """The trace's steps in words: how many were judged, and how long each took."""
    if not p.steps or not p.step_seconds > 0:
        return f"{p.framework}: no step judged."
    if not p.step_marked:
        return (f"{p.framework}, no step markers: the whole trace, {ms(p.step_seconds)}, read as "
                "one step.")
    return (f"{p.framework}, {p.steps} step{'s' if p.steps != 1 else ''} of "
            f"{ms(p.step_seconds)} on average.")


def markdown(answers: list[Answer], prices: Prices | None) -> str:
    lines = ["# gapbench-report explain", ""]
    for a in answers:
        p = a.profile
        lines += [f"## {md_cell(Path(p.path).name)}", "",
                  md_cell(steps_line(p)), "", f"**{md_cell(a.verdict)}**", ""]
        lines += [f"- {md_cell(n)}" for n in a.notes] + [""]
        if a.findings:
            lines += ["| # | finding | the trace shows, per step | expected saving per step | "
                      "priced by |", "|---|---|---|---|---|"]
            lines += [f"| {i} | {md_cell(f.title)} | {ms(f.lost)} | {_saving_cell(f)} | "
                      f"{md_cell(f.basis)} |" for i, f in enumerate(a.findings, 1)]
            lines.append("")
        for i, f in enumerate(a.findings, 1):
            lines += [f"### {i}. {md_cell(f.title)}", "", f"[{f.severity}] {md_cell(f.text)}", "",
                      f"*Priced by:* {md_cell(f.basis)} (gapbench family: `{f.family}`).", ""]
    return "\n".join(lines).rstrip() + "\n"


def html_page(answers: list[Answer], prices: Prices | None) -> str:
    body = ["<h1>gapbench-report explain</h1>"]
    for a in answers:
        p = a.profile
        body += [f"<h2>{esc(Path(p.path).name)}</h2>",
                 f'<p class="meta">{esc(steps_line(p))}</p>',
                 f'<p class="verdict">{esc(a.verdict)}</p>',
                 *[f'<p class="note">{esc(n)}</p>' for n in a.notes]]
        if a.findings:
            rows = "".join(f"<tr><td>{i}</td><td>{esc(f.title)}</td><td class=\"num\">"
                           f"{esc(ms(f.lost))}</td><td class=\"num\">{esc(_saving_cell(f))}</td>"
                           f"<td>{esc(f.basis)}</td></tr>" for i, f in enumerate(a.findings, 1))
            body.append("<table><thead><tr><th>#</th><th>finding</th><th>the trace shows, per "
                        "step</th><th>expected saving per step</th><th>priced by</th></tr>"
                        f"</thead><tbody>{rows}</tbody></table>")
        body += [f'<div class="finding {esc(f.severity)}"><span class="badge {esc(f.severity)}">'
                 f"{esc(f.severity)}</span><strong>{esc(f.title)}</strong><br>{esc(f.text)}"
                 f"<br><em>Priced by:</em> {esc(f.basis)} (gapbench family "
                 f"<code>{esc(f.family)}</code>)</div>" for f in a.findings]
    return page("gapbench explain", body)
