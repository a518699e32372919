"""The Markdown writer kit: tables whose cells are made safe by labels.md_cell, as every Markdown
the report writes (render's summary.md, trend's, explain's, the fleet's)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from gapbench_report.core.labels import md_cell, md_code


def table_line(cells: Sequence[str]) -> str:
    """One row of a Markdown table, each cell made safe for it."""
    return "| " + " | ".join(md_cell(c) for c in cells) + " |"


def markdown_table(headers: Sequence[str], rows: Iterable[Sequence[object]],
                   numeric: set[int] = frozenset(), code: set[int] = frozenset()) -> list[str]:
    """A Markdown table's lines: `numeric` columns right-aligned, `code` columns as code spans
    (a benchmark's name, shown as written), every other cell made safe by md_cell."""
    lines = [table_line(headers),
             "|" + "".join("---:|" if i in numeric else "---|" for i in range(len(headers)))]
    for row in rows:
        cells = [md_code(c, table=True) if i in code else md_cell(c) for i, c in enumerate(row)]
        lines.append("| " + " | ".join(cells) + " |")
    return lines
