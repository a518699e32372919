"""What every chart shares: the style (rc settings, colours, markers), the value axis and its
tick labels, the fixed-margin Grid, and save (PNG and SVG)."""

from __future__ import annotations

import io
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # headless; set before anything imports pyplot

from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator  # noqa: E402

from gapbench_report.core import metrics  # noqa: E402
from gapbench_report.core.labels import fmt_bytes, fmt_seconds, fmt_si, printable  # noqa: E402
from gapbench_report.core.metrics import Metric  # noqa: E402
from gapbench_report.inputs.files import write_atomic  # noqa: E402
from gapbench_report.inputs.results import Benchmark  # noqa: E402

# Text stays text in the SVG (smaller and faster than paths); no external fonts are needed.
RC = {"svg.fonttype": "none", "font.size": 9, "axes.titlesize": 10, "axes.spines.top": False,
      "axes.spines.right": False, "legend.fontsize": 8, "legend.frameon": False}
DPI = 100
# CPU in cool colours, GPU in warm colours.
PALETTE = {"cpu": ("#1f77b4", "#2ca02c", "#17becf", "#393b79", "#637939", "#6baed6"),
           "gpu": ("#d62728", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#bcbd22")}
SERIES_COLOURS = ("#d62728", "#2ca02c", "#9467bd", "#7f7f7f", "#1f77b4", "#ff7f0e", "#8c564b",
                  "#e377c2", "#17becf", "#bcbd22")
SERIES_MARKERS = ("o", "^", "v", "D", "s", "P", "X")
SERIES_LINES = ("-", "--", ":", "-.")
# Values spanning more than this factor get a log axis.
LOG_SPAN = 20.0


def seconds_formatter(value: float, _pos: object = None) -> str:
    return fmt_seconds(value) if value > 0 else "0"


def number_formatter(value: float, _pos: object = None) -> str:
    return f"{value:g}" if abs(value) < 10_000 else fmt_si(value)


def bytes_formatter(value: float, _pos: object = None) -> str:
    return fmt_bytes(value) if value > 0 else "0"


def is_number(value: str | None) -> bool:
    return value is not None and metrics.number(value) is not None


def skip_note(benchmarks: Iterable[Benchmark]) -> str:
    """One line for the variants that produced no number: "4 GPU variants skipped: <reason>".
    Each math mode of a variant is a series of its own in the charts, so it counts as one."""
    reasons: dict[tuple[str, str], set[tuple[str, str]]] = {}
    for b in benchmarks:
        if b.status != "ok":
            why = b.skip_reason if b.status == "skipped" else "failed"
            series = (b.parsed.variant, b.math)
            reasons.setdefault((b.parsed.device, why or "?"), set()).add(series)
    notes = []
    for (device, why), variants in reasons.items():
        word = "skipped" if why != "failed" else "failed"
        count = f"{len(variants)} {device.upper()} variant{'s' if len(variants) > 1 else ''}"
        notes.append(f"{count} {word}" + (f": {why}" if word == "skipped" else ""))
    note = printable("; ".join(notes))
    return note if len(note) <= 90 else note[:87] + "..."


# An unheld time (labels.is_unheld), said beside its dot or in its sweep line's legend entry,
# where the reader looks for what a value is: as a panel's note it sat in small grey type over
# the panel's title and went unread.
UNHELD_SUFFIX = " · unheld: includes launches"


# ---- axes and layout --------------------------------------------------------------------------

def value_span(values: Iterable[float]) -> float | None:
    """max / min of the positive values (how many-fold they spread), None without any."""
    positive = [v for v in values if v > 0]
    return max(positive) / min(positive) if positive else None


def value_axis(ax, which: str, metric: Metric, log: bool,
               span: float | None = None, top: float | None = None) -> None:
    """Log or linear from zero; `top` (the largest value drawn) leaves room for its label."""
    axis = ax.yaxis if which == "y" else ax.xaxis
    if log:
        (ax.set_yscale if which == "y" else ax.set_xscale)("log")
        axis.set_minor_locator(NullLocator())  # minor log ticks cost most of a panel's draw
        if span is not None and span < 300:  # under ~2 decades: label 1, 2, 5 per decade
            axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    elif which == "y":
        ax.set_ylim(bottom=0, top=top * 1.15 if top and top > 0 else None)
    axis.set_major_formatter(FuncFormatter(seconds_formatter if metric.key == "time"
                                           else number_formatter))
    (ax.set_ylabel if which == "y" else ax.set_xlabel)(metric.label)
    ax.grid(True, axis=which, color="#dddddd", linewidth=0.6)


@dataclass(frozen=True)
class Grid:
    """A grid of equal panels with margins in inches: a fixed layout costs nothing to compute,
    where matplotlib's layout engines measure every text of every panel, for every file."""

    rows: int
    columns: int
    panel: tuple[float, float]  # width, height in inches
    left: float = 0.95  # y tick labels and the y label
    right: float = 0.3  # the legend, where there is one
    top: float = 0.75  # the figure's title and the panels' titles
    bottom: float = 0.55  # x tick labels and the x label
    wgap: float = 1.0
    hgap: float = 0.95

    @property
    def size(self) -> tuple[float, float]:
        width, height = self.panel
        return (self.left + self.right + self.columns * width + (self.columns - 1) * self.wgap,
                self.top + self.bottom + self.rows * height + (self.rows - 1) * self.hgap)

    def figure(self) -> tuple[Figure, list]:
        (w, h), (pw, ph) = self.size, self.panel
        fig = Figure(figsize=(w, h), dpi=DPI)
        axes = fig.subplots(self.rows, self.columns, squeeze=False, gridspec_kw={
            "left": self.left / w, "right": 1 - self.right / w, "top": 1 - self.top / h,
            "bottom": self.bottom / h, "wspace": self.wgap / pw, "hspace": self.hgap / ph})
        return fig, list(axes.ravel())

    def title(self, fig: Figure, text: str) -> None:
        fig.suptitle(text, fontsize=11, y=1 - 0.12 / self.size[1], va="top")


def legend_width(labels: Iterable[str]) -> float:
    """Inches a legend of these labels needs beside the panels (8 pt text, a marker)."""
    longest = max((len(label) for label in labels), default=0)
    return 0.75 + 0.068 * longest


# ---- files ------------------------------------------------------------------------------------

def save(fig: Figure, stem: Path) -> Path:
    """PNG and SVG next to each other, each drawn into memory and then written whole
    (files.write_atomic), so a failure never leaves half a chart."""
    stem = Path(stem)
    for fmt in ("svg", "png"):
        image = io.BytesIO()
        fig.savefig(image, format=fmt, dpi=DPI, bbox_inches="tight")  # wrapped labels fit
        write_atomic(stem.with_name(f"{stem.name}.{fmt}"), image.getvalue())
    return stem.with_name(f"{stem.name}.png")
