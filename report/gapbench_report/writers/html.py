"""The HTML writer kit: one self-contained page (style, escaping, inlined charts, tables), shared
by every command that writes index.html (render, trend, explain, fleet)."""

from __future__ import annotations

import base64
import html
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import repeat
from pathlib import Path

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
.finding.slower { border-color: #c62828; } .finding.faster { border-color: #2e7d32; }
.verdict { font-size: 1.1em; font-weight: bold; }
.badge { font-size: 0.75em; text-transform: uppercase; letter-spacing: 0.05em; color: #fff;
         padding: 1px 6px; border-radius: 3px; background: #999; margin-right: 6px; }
.badge.problem { background: #c62828; } .badge.warning { background: #ef8f00; }
.badge.info { background: #1f77b4; }
.badge.slower { background: #c62828; } .badge.faster { background: #2e7d32; }
nav a { margin-right: 12px; } details summary { cursor: pointer; color: #555; margin: 6px 0; }
"""


@dataclass(frozen=True)
class ChartFile:
    """A drawn chart the page inlines: its PNG (the SVG beside it is linked) and caption."""

    png: Path
    caption: str


def esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def data_uri(png: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(png.read_bytes()).decode("ascii")


def figure(chart: ChartFile) -> str:
    svg = chart.png.with_suffix(".svg").name
    return (f'<figure><img src="{data_uri(chart.png)}" alt="{esc(chart.caption)}">'
            f'<figcaption>{esc(chart.caption)} · <a href="{esc(svg)}">SVG</a></figcaption>'
            "</figure>")


def page(title: str, body: Iterable[str]) -> str:
    """A whole page in the report's style; empty parts of `body` are left out."""
    return ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{esc(title)}</title><style>{CSS}</style></head><body>\n"
            + "\n".join(p for p in body if p) + "\n</body></html>\n")


def table(headers: Sequence[str], rows: Iterable[Sequence[str]], numeric: set[int] = frozenset(),
          classes: Iterable[str] | None = None) -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = []
    for row, cls in zip(rows, classes or repeat("")):
        cells = "".join(f'<td class="num">{esc(c)}</td>' if i in numeric else f"<td>{esc(c)}</td>"
                        for i, c in enumerate(row))
        body.append(f'<tr class="{esc(cls)}">{cells}</tr>' if cls else f"<tr>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
