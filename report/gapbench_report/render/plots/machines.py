"""Against other machines: each machine's ceilings side by side (one small panel per ceiling, a
bar per machine), and against one machine each differing work's ratio beside the ratio of the
ceiling that bounds it (versus/comparison.py judges; render.model.VersusSection holds the bars)."""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib
from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

from gapbench_report.render.plots.common import RC, SERIES_COLOURS, Grid, save

# The works drawn against one machine, the costliest first: the table below the chart has all.
VERSUS_BARS = 24


@dataclass
class MetricsChart:
    machines: list[str]  # this machine first
    names: list[str]  # the figures at least two machines have
    values: list[list[float | None]]  # [figure][machine]
    title: str = ""


def metrics_chart_data(columns: Sequence[tuple[str, Mapping[str, float]]],
                       title: str = "") -> MetricsChart | None:
    """Figures by machine; None unless at least two machines share one."""
    names = list(dict.fromkeys(k for _, m in columns for k in m))
    values = [[m.get(k) for _, m in columns] for k in names]
    # A figure only one machine has compares nothing: the table lists it, the chart does not.
    keep = [i for i, row in enumerate(values) if sum(v is not None for v in row) >= 2]
    if len(columns) < 2 or not keep:
        return None
    return MetricsChart([label for label, _ in columns], [names[i] for i in keep],
                        [values[i] for i in keep], title)


def draw_metrics_chart(chart: MetricsChart, stem: Path) -> Path:
    """Small multiples: one panel per figure, one bar per machine, each panel its own scale."""
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
        grid.title(fig, chart.title)
        return save(fig, stem)


def figure_text(value: float) -> str:
    """51320.4 -> "51,320", 3.35 -> "3.35": a panel's figure, never in an exponent."""
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def _draw_metric_panel(ax, name: str, row: Sequence[float | None], machines: Sequence[str],
                       colours: Sequence[str]) -> None:
    ys = list(range(len(machines)))[::-1]
    widths = [v if v is not None else 0.0 for v in row]
    ax.barh(ys, widths, color=colours, height=0.7)
    top = max(widths) if any(widths) else 1.0
    for y, v in zip(ys, row):
        ax.text(v if v else 0, y, f" {figure_text(v)}" if v is not None else " n/a",
                va="center", fontsize=8)
    ax.set_xlim(0, top * 1.3)
    ax.set_yticks(ys)
    ax.set_yticklabels(machines, fontsize=7)
    ax.set_xticks([])
    ax.spines["bottom"].set_visible(False)
    lines = textwrap.wrap(name, 46)
    title = "\n".join(lines[:2]) + ("..." if len(lines) > 2 else "")
    ax.set_title(title, loc="left", fontsize=8)


def metrics_chart(columns: Sequence[tuple[str, Mapping[str, float]]], stem: Path,
                  title: str = "") -> Path | None:
    chart = metrics_chart_data(columns, title)
    return draw_metrics_chart(chart, stem) if chart else None


# ---- one machine against another: each work beside its ceiling ------------------------------

@dataclass
class VersusChart:
    other: str  # the other machine
    labels: list[str]  # each work in words, with its ceiling's
    speeds: list[float]  # how many times faster here
    ceilings: list[float | None]  # the ratio of the ceiling that bounds it, here over there


def versus_chart_data(bars: Sequence[tuple[str, float, float | None, str]],
                      other: str) -> VersusChart | None:
    """The costliest VERSUS_BARS differing works; None where none differs."""
    shown = list(bars)[:VERSUS_BARS]
    if not shown:
        return None
    labels = [textwrap.shorten(work, 70, placeholder="...") + (f"\n  ceiling: {ceiling}"
                                                                if ceiling else "")
              for work, _, _, ceiling in shown]
    return VersusChart(other, labels, [s for _, s, _, _ in shown], [c for _, _, c, _ in shown])


def draw_versus_chart(chart: VersusChart, stem: Path) -> Path:
    """Per work two bars from 1x on a log scale: the work's speed ratio, and its ceiling's
    ratio beneath it (where the work has one). Bars of one length: the ceiling explains it."""
    rows = len(chart.labels)
    label_width = 0.3 + 0.056 * max(len(line) for label in chart.labels
                                    for line in label.splitlines())
    grid = Grid(1, 1, (5.0, 0.42 * rows + 0.3), left=label_width, right=0.4, bottom=0.6)
    with matplotlib.rc_context(RC):
        fig, (ax,) = grid.figure()
        ys = [2 * (rows - 1 - i) for i in range(rows)]
        ax.barh([y + 0.4 for y in ys], [s - 1 for s in chart.speeds], left=1.0, height=0.7,
                color=["#d62728" if s < 1 else "#2ca02c" for s in chart.speeds],
                label="the work: its time there / here")
        ceilings = [(y, c) for y, c in zip(ys, chart.ceilings) if c]
        ax.barh([y - 0.4 for y, _ in ceilings], [c - 1 for _, c in ceilings], left=1.0,
                height=0.7, color="#9e9e9e", label="its ceiling: here / there")
        for y, s in zip(ys, chart.speeds):
            ax.text(max(s, 1.0), y + 0.4, f" {s:.3g}x", va="center", fontsize=7)
        for y, c in ceilings:
            ax.text(max(c, 1.0), y - 0.4, f" {c:.3g}x", va="center", fontsize=7,
                    color="#555555")
        values = chart.speeds + [c for _, c in ceilings] + [1.0]
        ax.set_xscale("log")
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}x"))
        ax.set_xlim(min(values) / 1.5, max(values) * 3)
        ax.axvline(1.0, color="#444444", linewidth=1)
        ax.set_yticks(ys)
        ax.set_yticklabels(chart.labels, fontsize=7)
        ax.set_xlabel(f"here against {chart.other} (right of 1x: faster here)")
        ax.grid(True, axis="x", color="#dddddd", linewidth=0.6)
        ax.legend(loc="best", fontsize=7)
        grid.title(fig, f"Each work that differs from {chart.other}, beside the ceiling that "
                        "bounds it")
        return save(fig, stem)


def versus_chart(bars: Sequence[tuple[str, float, float | None, str]], other: str,
                 stem: Path) -> Path | None:
    chart = versus_chart_data(bars, other)
    return draw_versus_chart(chart, stem) if chart else None
