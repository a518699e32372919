"""Against baselines from other machines: the portable ratios of this machine beside each
baseline's, one small panel per ratio."""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib

from gapbench_report.plots.common import RC, SERIES_COLOURS, Grid, save


@dataclass
class MetricsChart:
    machines: list[str]  # this machine first
    names: list[str]  # the metrics any machine has
    values: list[list[float | None]]  # [metric][machine]


def metrics_chart_data(columns: Sequence[tuple[str, Mapping[str, float]]]) -> MetricsChart | None:
    """Portable ratios by machine; None unless at least two machines share one."""
    names = list(dict.fromkeys(k for _, m in columns for k in m))
    values = [[m.get(k) for _, m in columns] for k in names]
    # A ratio only one machine has compares nothing: the table lists it, the chart does not.
    keep = [i for i, row in enumerate(values) if sum(v is not None for v in row) >= 2]
    if len(columns) < 2 or not keep:
        return None
    return MetricsChart([label for label, _ in columns], [names[i] for i in keep],
                        [values[i] for i in keep])


def draw_metrics_chart(chart: MetricsChart, stem: Path) -> Path:
    """Small multiples: one panel per ratio, one bar per machine, each panel its own scale."""
    columns = min(3, len(chart.names))
    colours = ["#1f77b4"] + [SERIES_COLOURS[(i + 1) % len(SERIES_COLOURS)]
                             for i in range(len(chart.machines) - 1)]
    label = 0.3 + 0.06 * max(len(m) for m in chart.machines)
    grid = Grid(math.ceil(len(chart.names) / columns), columns,
                (2.6, 0.25 + 0.3 * len(chart.machines)), left=label, wgap=label + 0.3,
                top=0.95, bottom=0.2, hgap=0.7)
    with matplotlib.rc_context(RC):
        fig, axes = grid.figure()
        for ax, name, row in zip(axes, chart.names, chart.values):
            _draw_metric_panel(ax, name, row, chart.machines, colours)
        for ax in axes[len(chart.names):]:
            ax.set_visible(False)
        grid.title(fig, "Each machine against itself: ratios comparable across hardware "
                        "(not a regression test)")
        return save(fig, stem)


def _draw_metric_panel(ax, name: str, row: Sequence[float | None], machines: Sequence[str],
                       colours: Sequence[str]) -> None:
    ys = list(range(len(machines)))[::-1]
    widths = [v if v is not None else 0.0 for v in row]
    ax.barh(ys, widths, color=colours, height=0.7)
    top = max(widths) if any(widths) else 1.0
    for y, v in zip(ys, row):
        ax.text(v if v else 0, y, f" {v:.3g}" if v is not None else " n/a", va="center",
                fontsize=8)
    ax.set_xlim(0, top * 1.3)
    ax.set_yticks(ys)
    ax.set_yticklabels(machines, fontsize=7)
    ax.set_xticks([])
    ax.spines["bottom"].set_visible(False)
    lines = textwrap.wrap(name, 46)
    title = "\n".join(lines[:2]) + ("..." if len(lines) > 2 else "")
    ax.set_title(title, loc="left", fontsize=8)


def metrics_chart(columns: Sequence[tuple[str, Mapping[str, float]]], stem: Path) -> Path | None:
    chart = metrics_chart_data(columns)
    return draw_metrics_chart(chart, stem) if chart else None
