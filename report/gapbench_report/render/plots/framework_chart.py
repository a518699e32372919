"""The user's framework beside the libraries: one bar per pair (framework.pairs), the framework's
time over the library's for the same work, on a log scale around 1x."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib
from matplotlib.ticker import FuncFormatter, NullLocator

from gapbench_report.core.formats import fmt_ratio
from gapbench_report.core.framework import Pair
from gapbench_report.core.labels import axes_label
from gapbench_report.render.plots.common import PALETTE, RC, Grid, save


@dataclass
class FrameworkChart:
    labels: list[str]  # "tensorflow 2.21.0 conv · CPU · n 2 · c 64 ... vs oneDNN"
    ratios: list[float]
    devices: list[str]


def pair_label(pair: Pair) -> str:
    axes = {k: v for k, v in pair.framework.parsed.axes.items() if k not in ("op", "mode")}
    note = f" ({pair.note})" if pair.note else ""
    return (f"{pair.name} {pair.op} · {pair.framework.parsed.device.upper()} · "
            f"{axes_label(axes)} vs {pair.library_name}{note}")


def framework_chart_data(pairs: Sequence[Pair]) -> FrameworkChart | None:
    if not pairs:
        return None
    return FrameworkChart([pair_label(p) for p in pairs], [p.ratio for p in pairs],
                          [p.framework.parsed.device for p in pairs])


def draw_framework_chart(chart: FrameworkChart, stem: Path) -> Path:
    rows = len(chart.labels)
    label_width = 0.3 + 0.058 * max(len(label) for label in chart.labels)
    grid = Grid(1, 1, (5.5, 0.22 * rows + 0.3), left=label_width, right=0.6, bottom=0.6)
    with matplotlib.rc_context(RC):
        fig, (ax,) = grid.figure()
        ys = list(range(rows))[::-1]
        colours = [PALETTE.get(d, PALETTE["gpu"])[0] for d in chart.devices]
        # From 1x either way: a bar to the right, the framework is slower; to the left, faster.
        ax.barh(ys, [r - 1 for r in chart.ratios], color=colours, height=0.7, left=1.0)
        ax.set_xscale("log")
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}x"))
        ax.axvline(1.0, color="#444444", linewidth=1)
        low, high = min(chart.ratios + [1.0]), max(chart.ratios + [1.0])
        ax.set_xlim(low / 1.5, high * 3)
        for y, ratio in zip(ys, chart.ratios):
            ax.text(max(ratio, 1.0), y, f" {fmt_ratio(ratio)}", va="center", fontsize=7)
        ax.set_yticks(ys)
        ax.set_yticklabels(chart.labels, fontsize=7)
        ax.set_xlabel("framework time / library time (same work, same shape)")
        ax.grid(True, axis="x", color="#dddddd", linewidth=0.6)
        grid.title(fig, "Your framework against the libraries (median time; right of 1x: the "
                        "framework is slower)")
        return save(fig, stem)


def framework_chart(pairs: Sequence[Pair], stem: Path) -> Path | None:
    chart = framework_chart_data(pairs)
    return draw_framework_chart(chart, stem) if chart else None
