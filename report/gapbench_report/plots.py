"""Charts of gapbench results: pure data preparation first, then drawing (Agg, PNG and SVG).

Three kinds of chart, each a `*_data()` function that returns plain dataclasses (testable without
drawing) and a `draw_*()` function that writes `<stem>.png` and `<stem>.svg` and returns the PNG:

- family_chart: every variant of a family side by side, per size, CPU and GPU in different colours
  and markers, the median with the min-max spread over the repetitions;
- sweep_chart: one line per series against a swept axis, driven by SWEEPS (one row per sweep, so a
  new family adds a row), with reference lines (the PCIe link), crossover marks and the ideal;
- metrics_chart: the portable ratios of this machine beside each baseline's.
"""

from __future__ import annotations

import math
import os
import textwrap
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # headless; set before anything imports pyplot

from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator  # noqa: E402

from gapbench_report import metrics  # noqa: E402
from gapbench_report.labels import (  # noqa: E402,F401 -- the formatting helpers, as plots.X too
    BYTE_AXES, axes_label, fmt_axis_value, fmt_bytes, fmt_seconds, fmt_si, fmt_throughput,
    variant_label, with_threads)
from gapbench_report.results import Benchmark, Name  # noqa: E402

# Text stays text in the SVG (smaller and faster than paths); no external fonts are needed.
RC = {"svg.fonttype": "none", "font.size": 9, "axes.titlesize": 10, "axes.spines.top": False,
      "axes.spines.right": False, "legend.fontsize": 8, "legend.frameon": False}
DPI = 100
# CPU in cool colours and circles, GPU in warm colours and squares; end-to-end variants hollow.
PALETTE = {"cpu": ("#1f77b4", "#2ca02c", "#17becf", "#393b79", "#637939", "#6baed6"),
           "gpu": ("#d62728", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#bcbd22")}
MARKER = {"cpu": "o", "gpu": "s"}
SERIES_COLOURS = ("#d62728", "#2ca02c", "#9467bd", "#7f7f7f", "#1f77b4", "#ff7f0e", "#8c564b",
                  "#e377c2", "#17becf", "#bcbd22")
SERIES_MARKERS = ("o", "^", "v", "D", "s", "P", "X")
SERIES_LINES = ("-", "--", ":", "-.")
# Values spanning more than this factor get a log axis.
LOG_SPAN = 20.0
# A panel with more size groups labels only every k-th and drops the banding: thousands of tick
# labels took most of a minute to lay out, and no reader could tell them apart.
MAX_GROUP_LABELS = 24


def _wrap_axes(label: str, width: int = 24) -> str:
    """"n 2 · c 64 · hw 56 · k 64" as lines of whole axes, each at most `width` characters
    where an axis fits."""
    lines: list[str] = []
    for part in label.split(" · "):
        if lines and len(lines[-1]) + 3 + len(part) <= width:
            lines[-1] += " · " + part
        else:
            lines.append(part)
    return "\n".join(lines)


def _seconds_formatter(value: float, _pos: object = None) -> str:
    return fmt_seconds(value) if value > 0 else "0"


def _number_formatter(value: float, _pos: object = None) -> str:
    return f"{value:g}" if abs(value) < 10_000 else fmt_si(value)


def _bytes_formatter(value: float, _pos: object = None) -> str:
    return fmt_bytes(value) if value > 0 else "0"


# ---- common data ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Metric:
    """What a chart plots for one benchmark: its time, or a counter scaled to a unit."""

    key: str = "time"  # "time" or a counter name (results.COUNTERS)
    scale: float = 1.0
    label: str = "time per iteration"
    fallback: str | None = None  # the counter to read where a benchmark lacks `key`

    def spread(self, b: Benchmark, iqr: bool = False) -> tuple[float, float, float] | None:
        """(median, low, high) over the repetitions, scaled: low and high are the min and max,
        or with `iqr` the quartiles (robust to the odd slow repetition). None when nothing was
        timed."""
        key = self.key if b.counters.get(self.key) or not self.fallback else self.fallback
        values = sorted(b.samples if key == "time" else b.counters.get(key, ()))
        middle = b.median if key == "time" else b.counter(key)
        if middle is None or b.status != "ok":
            return None
        if not values:
            low = high = middle
        elif iqr:
            low, high = quantile(values, 0.25), quantile(values, 0.75)
        else:
            low, high = values[0], values[-1]
        return middle * self.scale, low * self.scale, high * self.scale


def quantile(ordered: Sequence[float], q: float) -> float:
    """Linear interpolation between the closest ranks (numpy's default), of sorted values."""
    position = q * (len(ordered) - 1)
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)


TIME = Metric()


def is_number(value: str | None) -> bool:
    return value is not None and metrics.number(value) is not None


def numeric_keys(benchmarks: Sequence[Benchmark]) -> set[str]:
    """Axis keys whose every value is a number: sizes, the swept kind of axis."""
    keys: dict[str, bool] = {}
    for b in benchmarks:
        for k, v in b.parsed.axes.items():
            keys[k] = keys.get(k, True) and is_number(v)
    return {k for k, numeric in keys.items() if numeric}


def skip_note(benchmarks: Iterable[Benchmark]) -> str:
    """One line for the variants that produced no number: "4 GPU variants skipped: <reason>"."""
    reasons: dict[tuple[str, str], set[str]] = {}
    for b in benchmarks:
        if b.status != "ok":
            why = b.skip_reason if b.status == "skipped" else "failed"
            reasons.setdefault((b.parsed.device, why or "?"), set()).add(b.parsed.variant)
    notes = []
    for (device, why), variants in reasons.items():
        word = "skipped" if why != "failed" else "failed"
        count = f"{len(variants)} {device.upper()} variant{'s' if len(variants) > 1 else ''}"
        notes.append(f"{count} {word}" + (f": {why}" if word == "skipped" else ""))
    note = "; ".join(notes)
    return note if len(note) <= 90 else note[:87] + "..."


# ---- the per-family chart -----------------------------------------------------------------------

@dataclass
class Dots:
    """One variant on one device across a panel's groups (None where it has no number)."""

    variant: str
    device: str
    values: list[tuple[float, float, float] | None]
    bound: str = ""  # the axes this variant always runs with ("depth 2 · workers 2")

    @property
    def label(self) -> str:
        text = f"{self.device.upper()} {variant_label(self.variant)}"
        return f"{text} ({self.bound})" if self.bound else text


@dataclass
class FamilyPanel:
    title: str
    groups: list[str]  # x categories: the sizes that vary within the panel
    dots: list[Dots]
    note: str = ""  # what did not run
    log_y: bool = False
    metric: Metric = field(default_factory=lambda: TIME)

    def values(self) -> list[float]:
        return [x for d in self.dots for v in d.values if v for x in v]


@dataclass
class FamilyChart:
    family: str
    panels: list[FamilyPanel]

    @property
    def metrics(self) -> list[Metric]:
        return list(dict.fromkeys(p.metric for p in self.panels))


# The generic chart plots time, except where a family's point is a rate: peak's memory rows
# draw their traffic (reads plus writes; files from before that counter counted traffic in
# bytes_per_second), its SGEMM rows their FLOP rate.
PEAK_TRAFFIC = Metric("traffic_bytes_per_second", 1e-9, "memory traffic (GB/s read + written)",
                      fallback="bytes_per_second")
PEAK_FLOPS = Metric("flops", 1e-9, "SGEMM (GFLOP/s)")


PIPELINE_RATE = Metric("items_per_second", 1.0, "batches/s")


def family_metric(name: Name) -> Metric:
    if name.family == "peak":
        return PEAK_FLOPS if name.variant == "sgemm" else PEAK_TRAFFIC
    if name.family == "pipeline":
        return PIPELINE_RATE
    return TIME


def _panel_key(name: Name, numeric: set[str]) -> tuple[tuple[str, str], ...]:
    return tuple((k, v) for k, v in name.axes.items() if k not in numeric)


def _group_key(axes: Mapping[str, str], keys: Container[str]) -> tuple[tuple[str, tuple], ...]:
    """The axes that pick an x group, sortable: numbers by value, then words."""
    return tuple((k, (0, metrics.number(v), "") if is_number(v) else (1, 0.0, v))
                 for k, v in axes.items() if k in keys)


def _panel(benchmarks: list[Benchmark], title_axes: Sequence[tuple[str, str]],
           group_keys: set[str], metric: Metric) -> FamilyPanel:
    """One panel of `metric`: an x group per size, a dot per variant and device."""
    group_keys = group_keys | {"threads"}
    axes_of = {b.name: with_threads(b.parsed) for b in benchmarks}
    # Axes a variant always runs with one value of (pipeline's depth and workers) belong to the
    # variant, not to the x groups: grouping by them would give each variant groups of its own.
    bound = variant_bound_axes(benchmarks, axes_of, group_keys)
    group_keys = group_keys - bound
    spelled: dict[tuple, dict[str, str]] = {}  # group -> the axes as the names spell them
    for b in benchmarks:
        spelled.setdefault(_group_key(axes_of[b.name], group_keys), axes_of[b.name])
    groups = sorted(spelled, key=lambda g: tuple(v for _, v in g))
    varying = [k for k in dict.fromkeys(k for g in groups for k, _ in g)
               if len({dict(g).get(k) for g in groups}) > 1]
    constant = {k: v for b in benchmarks for k, v in axes_of[b.name].items()
                if k in group_keys and k not in varying}
    # CPU first, then GPU; variants in the order the family registered them.
    series = sorted(dict.fromkeys((b.parsed.device, b.parsed.variant) for b in benchmarks),
                    key=lambda s: s[0])
    cells: dict[tuple, tuple[float, float, float] | None] = {}
    for b in benchmarks:  # a skipped row never hides a timed one in the same cell
        key = (b.parsed.device, b.parsed.variant, _group_key(axes_of[b.name], group_keys))
        cells[key] = metric.spread(b) or cells.get(key)
    # In the names' order (a set's order changes from one process to the next).
    bound_text = {(b.parsed.device, b.parsed.variant):
                  axes_label(axes_of[b.name], [k for k in axes_of[b.name] if k in bound])
                  for b in sorted(benchmarks, key=lambda b: b.status == "ok")}  # ok rows last
    dots = [Dots(variant, device, [cells.get((device, variant, g)) for g in groups],
                 bound_text[(device, variant)] if bound else "")
            for device, variant in series]
    dots = [d for d in dots if any(d.values)]
    # Sizes where nothing was timed (only skipped variants ran there) draw no empty slot: the
    # panel's note says what was skipped.
    timed = [i for i in range(len(groups)) if any(d.values[i] for d in dots)]
    if dots and len(timed) < len(groups):
        groups = [groups[i] for i in timed]
        for d in dots:
            d.values = [d.values[i] for i in timed]
    # A single group needs no label: the panel's title names its size.
    labels = [axes_label(spelled[g], varying) for g in groups]
    title = " · ".join([f"{k} {v}" for k, v in title_axes] + [axes_label(constant)]).strip(" ·")
    panel = FamilyPanel(title, labels, dots, skip_note(benchmarks), metric=metric)
    panel.log_y = (value_span(panel.values()) or 1.0) > LOG_SPAN
    return panel


def variant_bound_axes(benchmarks: Sequence[Benchmark], axes_of: Mapping[str, Mapping[str, str]],
                       keys: Iterable[str]) -> set[str]:
    """The axes among `keys` that take one value per (device, variant) but differ between
    variants, among the benchmarks that ran (a skipped GPU size is not a variant's setting)."""
    bound = set()
    for k in keys:
        per_series: dict[tuple[str, str], set[str | None]] = {}
        for b in benchmarks:
            if b.status != "ok":
                continue
            per_series.setdefault((b.parsed.device, b.parsed.variant), set()).add(
                axes_of[b.name].get(k))
        values = set().union(*per_series.values()) if per_series else set()
        if None not in values and len(values) > 1 and all(len(v) == 1 for v in per_series.values()):
            bound.add(k)
    return bound


def family_chart_data(benchmarks: Sequence[Benchmark], family: str,
                      metric: Metric | None = None) -> FamilyChart | None:
    """Panels per combination of the non-numeric axes (preprocess op:sumsq vs op:image); in each,
    one x group per size and one dot per variant and device. Combinations with one benchmark
    each (overhead's what:context, what:cublas_handle, ...) share one panel instead, as groups.
    None when nothing was timed."""
    rows = [b for b in benchmarks if b.parsed.family == family]
    by_metric: dict[Metric, list[Benchmark]] = {}
    for b in rows:  # a panel never mixes metrics (peak: bandwidth and SGEMM apart)
        by_metric.setdefault(metric or family_metric(b.parsed), []).append(b)
    panels = []
    for panel_metric, metric_rows in by_metric.items():
        numeric = numeric_keys(metric_rows)
        by_panel: dict[tuple, list[Benchmark]] = {}
        for b in metric_rows:
            by_panel.setdefault(_panel_key(b.parsed, numeric), []).append(b)
        singles = [b for group in by_panel.values() if len(group) == 1 for b in group]
        panels += [_panel(group, key, numeric, panel_metric) for key, group in by_panel.items()
                   if len(group) > 1 or len(singles) == 1]
        if len(singles) > 1:
            every_axis = {k for b in singles for k in b.parsed.axes}
            panels.append(_panel(singles, (), every_axis, panel_metric))
    if not any(p.dots for p in panels):
        return None
    return FamilyChart(family, panels)


def dot_style(device: str, index: int, variant: str) -> dict:
    colour = PALETTE.get(device, PALETTE["gpu"])[index % 6]
    hollow = variant.endswith("_e2e")
    return {"color": colour, "marker": MARKER.get(device, "D"),
            "markerfacecolor": "white" if hollow else colour, "markeredgecolor": colour}


def _styles(dots: Iterable[Dots]) -> dict[tuple[str, str], dict]:
    """One style per (device, variant), the same in every panel of a figure; an end-to-end
    variant takes its kernel variant's colour, hollow."""
    seen: dict[str, list[str]] = {}
    out = {}
    for d in dots:
        base = d.variant[:-4] if d.variant.endswith("_e2e") else d.variant
        bases = seen.setdefault(d.device, [])
        if base not in bases:
            bases.append(base)
        out[(d.device, d.variant)] = dot_style(d.device, bases.index(base), d.variant)
    return out


def _draw_family_panel(ax, panel: FamilyPanel, styles: dict, metric: Metric) -> None:
    n = max(len(panel.dots), 1)
    width = 0.8 / n
    count = sum(1 for d in panel.dots for v in d.values if v)
    fmt = _seconds_formatter if metric.key == "time" else fmt_si  # three digits
    for j, d in enumerate(panel.dots):
        xs, ys, lo, hi = [], [], [], []
        for i, v in enumerate(d.values):
            if v:
                xs.append(i + (j - (n - 1) / 2) * width)
                ys.append(v[0])
                lo.append(v[0] - v[1])
                hi.append(v[2] - v[0])
        style = styles[(d.device, d.variant)]
        ax.errorbar(xs, ys, yerr=[lo, hi], linestyle="none", markersize=6, capsize=2,
                    elinewidth=1, label=d.label, **style)
        if count <= 30:  # few enough dots to print each median beside it
            for x, y in zip(xs, ys):
                ax.annotate(fmt(y), (x, y), xytext=(5, 0), textcoords="offset points",
                            fontsize=7, va="center", color=style["color"])
    few = len(panel.groups) <= MAX_GROUP_LABELS
    for i in range(0, len(panel.groups) if few else 0, 2):  # banding tells the groups apart
        ax.axvspan(i - 0.5, i + 0.5, color="#f4f4f4", zorder=0, linewidth=0)
    ax.set_xlim(-0.5, len(panel.groups) - 0.5)
    labelled = range(0, len(panel.groups), math.ceil(len(panel.groups) / MAX_GROUP_LABELS) or 1)
    ax.set_xticks(labelled)
    tilt = len(panel.groups) >= 6
    # Long labels (conv's seven axes) one axis a line, so neighbouring groups do not overlap.
    labels = [g if tilt or len(g) <= 24 else _wrap_axes(g)
              for g in (panel.groups[i] for i in labelled)]
    ax.set_xticklabels(labels, rotation=20 if tilt else 0, ha="right" if tilt else "center")
    _value_axis(ax, "y", metric, panel.log_y, value_span(panel.values()),
                max(panel.values(), default=None))
    ax.set_title(panel.title, loc="left")
    if panel.note:
        ax.set_title(panel.note, loc="right", fontsize=7, color="#777777")
    if not panel.dots:
        ax.text(0.5, 0.5, "nothing ran", transform=ax.transAxes, ha="center", color="#777777")


def value_span(values: Iterable[float]) -> float | None:
    """max / min of the positive values (how many-fold they spread), None without any."""
    positive = [v for v in values if v > 0]
    return max(positive) / min(positive) if positive else None


def _value_axis(ax, which: str, metric: Metric, log: bool,
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
    axis.set_major_formatter(FuncFormatter(_seconds_formatter if metric.key == "time"
                                           else _number_formatter))
    (ax.set_ylabel if which == "y" else ax.set_xlabel)(metric.label)
    ax.grid(True, axis=which, color="#dddddd", linewidth=0.6)


def draw_family_chart(chart: FamilyChart, stem: Path) -> Path:
    panels = chart.panels
    widest = max(len(p.groups) * max(len(p.dots), 1) for p in panels)
    labels = _labels(panels)
    tilted = any(len(p.groups) >= 6 for p in panels)
    grid = Grid(len(panels), 1, (min(11.0, max(5.5, 1.0 + 0.3 * widest)), 2.4),
                right=legend_width(labels), hgap=1.3 if tilted else 0.95,
                bottom=1.0 if tilted else 0.55)
    with matplotlib.rc_context(RC):
        fig, axes = grid.figure()
        styles = _styles(d for p in panels for d in p.dots)
        for ax, panel in zip(axes, panels):
            _draw_family_panel(ax, panel, styles, panel.metric)
        # One legend for the figure, beside the first panel (every panel uses the same styles).
        handles = [_legend_handle(axes, label) for label in labels]
        axes[0].legend([h for h, _ in handles if h], [lab for h, lab in handles if h],
                       loc="upper left", bbox_to_anchor=(1.01, 1.0))
        what = " and ".join(m.label for m in chart.metrics)
        grid.title(fig, f"{chart.family}: {what} (median; bars: min-max over the "
                        "repetitions)")
        return save(fig, stem)


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


def _labels(panels: Iterable[FamilyPanel]) -> list[str]:
    return list(dict.fromkeys(d.label for p in panels for d in p.dots))


def _legend_handle(axes, label: str):
    for ax in axes:
        handles, labels = ax.get_legend_handles_labels()
        if label in labels:
            return handles[labels.index(label)], label
    return None, label


# ---- sweeps -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class SweepSpec:
    """One swept chart. A family absent from the run draws nothing; a new sweep adds a row."""

    name: str  # the chart's file name and id
    family: str
    title: str
    x: str  # the swept axis
    metric: Metric = TIME
    series: tuple[str, ...] = ("variant", "device")  # keys that tell the lines apart
    select: Callable[[Name], bool] | None = None  # which of the family's benchmarks belong
    log_x: bool = True
    log_y: bool = True
    link_lines: bool = False  # the PCIe link's theoretical bandwidth, from the context
    crossover: bool = False  # mark where each GPU series starts to beat the fastest CPU one
    ideal_counter: str | None = None  # a counter holding the ideal rate at each point
    colours: tuple[tuple[str, str], ...] = ()  # fixed colours for values of the first series key


def _matmul(name: Name) -> bool:
    return name.device == "cpu" or name.variant in ("cublas", "cublas_e2e")


GBPS = Metric("bytes_per_second", 1e-9, "GB/s copied")
SWEEPS: tuple[SweepSpec, ...] = (
    SweepSpec("transfer", "transfer", "Host-device copies: bandwidth against size", "bytes",
              GBPS, series=("variant", "dir", "mode"), link_lines=True,
              colours=(("pageable", "#d62728"), ("pinned", "#2ca02c"), ("device", "#9467bd"),
                       ("memcpy", "#7f7f7f"))),
    SweepSpec("matmul", "overhead", "Matrix multiply: time against size (CPU vs GPU)", "n",
              series=("variant", "device"), select=_matmul, crossover=True),
    SweepSpec("lstm", "lstm", "LSTM: time against batch size", "batch"),
    SweepSpec("batch", "overhead", "Dense network step: throughput against batch size", "batch",
              Metric("items_per_second", 1.0, "samples/s")),
    SweepSpec("pipeline", "pipeline", "Input pipeline: throughput against producer cost",
              "produce_ms", Metric("items_per_second", 1.0, "batches/s"),
              series=("variant", "device", "depth", "workers"),
              ideal_counter="ideal_items_per_second"),
)


@dataclass
class Line:
    label: str
    device: str
    key: tuple[str | None, ...]  # the series key's values, for the style
    xs: list[float]
    ys: list[float]
    lows: list[float]
    highs: list[float]


@dataclass(frozen=True)
class RefLine:
    label: str
    value: float
    style: str = "--"


@dataclass
class SweepPanel:
    title: str
    lines: list[Line]
    vlines: list[RefLine] = field(default_factory=list)  # crossover sizes
    ideals: list[Line] = field(default_factory=list)
    note: str = ""


@dataclass
class SweepChart:
    spec: SweepSpec
    panels: list[SweepPanel]
    hlines: list[RefLine]  # the same in every panel


def crossover(xs: Sequence[float], cpu_times: Sequence[float | None],
              gpu_times: Sequence[float | None]) -> float | None:
    """The first size from which on the GPU stays faster than the CPU at every larger measured
    size; None when it never does. Sizes where either time is missing are left out; any order.
    The decision itself is metrics.crossover, so the chart marks what the diagnosis says."""
    points = sorted((x, c, g) for x, c, g in zip(xs, cpu_times, gpu_times)
                    if c is not None and g is not None and math.isfinite(c) and math.isfinite(g))
    if not points:
        return None
    return metrics.crossover([p[0] for p in points], [p[1] for p in points],
                             [p[2] for p in points])


def pcie_lines(context: Mapping[str, object]) -> list[RefLine]:
    """The link's theoretical GB/s per direction: at its maximum, and as it runs now if lower."""
    peak = metrics.number(context.get("pcie.bandwidth_max_gbps"))
    now = metrics.number(context.get("pcie.bandwidth_current_gbps"))
    lines = []
    if peak and peak > 0:
        lines.append(RefLine(f"PCIe max {_link_text(context, 'max')}: {peak:g} GB/s", peak, "--"))
    if now and now > 0 and (not peak or now < peak * 0.999):
        lines.append(RefLine(f"PCIe now {_link_text(context, 'current')}: {now:g} GB/s", now, ":"))
    return lines


def _link_text(context: Mapping[str, object], which: str) -> str:
    gen, width = context.get(f"pcie.gen_{which}"), context.get(f"pcie.width_{which}")
    return f"(gen {gen} x{width})" if gen and width else ""


def series_value(b: Benchmark, key: str) -> str | None:
    if key == "variant":
        return b.parsed.variant
    if key == "device":
        return b.parsed.device
    return with_threads(b.parsed).get(key)


def _line_label(spec: SweepSpec, key: tuple[str | None, ...]) -> str:
    parts = []
    for k, v in zip(spec.series, key):
        if v is None:
            continue
        if k == "variant":
            parts.append(variant_label(v))
        elif k == "device":
            parts.append(v.upper())
        else:
            parts.append(v if k in ("dir", "mode") else f"{k} {v}")
            if k == "mode" and v == "async" and "pageable" in key:
                # Staged by the driver through its own pinned buffer and timed on the host
                # clock: not copy-engine time like the pinned rows beside it.
                parts[-1] = "async (staged)"
    return " · ".join(parts)


def _lines(spec: SweepSpec, rows: list[Benchmark]) -> list[Line]:
    points: dict[tuple, list[tuple[float, tuple[float, float, float], str]]] = {}
    for b in rows:
        value = spec.metric.spread(b, iqr=True)  # min-max bands of many lines hide the lines
        key = tuple(series_value(b, k) for k in spec.series)
        if value is not None:
            x = metrics.number(b.parsed.axes[spec.x])
            points.setdefault(key, []).append((x, value, b.parsed.device))
    lines = []
    for key, pts in points.items():
        pts.sort(key=lambda p: p[0])
        lines.append(Line(_line_label(spec, key), pts[0][2], key, [p[0] for p in pts],
                          [p[1][0] for p in pts], [p[1][1] for p in pts], [p[1][2] for p in pts]))
    return lines


def _crossovers(spec: SweepSpec, lines: list[Line]) -> tuple[list[RefLine], list[str]]:
    """Against the fastest CPU line at each size: where each GPU line starts to win."""
    cpu: dict[float, float] = {}
    for line in lines:
        if line.device == "cpu":
            for x, y in zip(line.xs, line.ys):
                cpu[x] = min(y, cpu.get(x, math.inf))
    marks, notes = [], []
    for line in lines:
        if line.device != "gpu" or not cpu:
            continue
        at = crossover(line.xs, [cpu.get(x) for x in line.xs], line.ys)
        if at is None:
            notes.append(f"{line.label} never faster than the CPU")
        else:
            marks.append(RefLine(f"{line.label} faster from {spec.x} = "
                                 f"{fmt_axis_value(spec.x, f'{at:g}')}", at))
    return marks, notes


def _ideals(spec: SweepSpec, rows: list[Benchmark]) -> list[Line]:
    """The ideal counter against x, one line per number of producers (the pipeline's ideal is
    min(workers / produce, 1 / consume))."""
    by_workers: dict[str, dict[float, list[float]]] = {}
    for b in rows:
        value = b.counter(spec.ideal_counter) if spec.ideal_counter else None
        if value is not None:
            by_x = by_workers.setdefault(b.parsed.axes.get("workers", "1"), {})
            by_x.setdefault(metrics.number(b.parsed.axes[spec.x]), []).append(value)
    lines = []
    for workers, by_x in sorted(by_workers.items(), key=lambda kv: metrics.number(kv[0]) or 0):
        xs = sorted(by_x)
        ys = [sorted(by_x[x])[len(by_x[x]) // 2] * spec.metric.scale for x in xs]
        producers = "1 producer" if workers == "1" else f"{workers} producers"
        lines.append(Line(f"ideal, {producers}: min(workers / produce, 1 / consume)", "",
                          ("ideal", workers), xs, ys, ys, ys))
    return lines


def sweep_chart_data(spec: SweepSpec, benchmarks: Sequence[Benchmark],
                     context: Mapping[str, object]) -> SweepChart | None:
    """The spec's lines, one panel per combination of the axes that are neither swept nor part of
    a series. None when the family, or its swept axis, is absent, or nothing was timed."""
    rows = selected(spec, benchmarks)
    by_panel: dict[tuple, list[Benchmark]] = {}
    for b in rows:
        by_panel.setdefault(_sweep_panel_key(spec, b), []).append(b)
    panels = []
    for rest, group in sorted(by_panel.items(), key=lambda kv: _sort_key(kv[0])):
        lines = _lines(spec, group)
        marks, notes = _crossovers(spec, lines) if spec.crossover else ([], [])
        note = "; ".join(filter(None, [skip_note(group)] + notes))
        panels.append(SweepPanel(axes_label(dict(rest)), lines, marks, _ideals(spec, group), note))
    if not any(p.lines for p in panels):
        return None
    return SweepChart(spec, panels, pcie_lines(context) if spec.link_lines else [])


def _sort_key(rest: tuple[tuple[str, str], ...]) -> tuple:
    return tuple((k, metrics.number(v) if is_number(v) else math.inf, v) for k, v in rest)


def selected(spec: SweepSpec, benchmarks: Iterable[Benchmark]) -> list[Benchmark]:
    """The benchmarks a sweep draws: its family's, with a number on the swept axis, in panels
    where that axis takes at least two values (the quick profile runs one size of some sweeps: a
    line of one point says less than the family's own chart, which shows them instead)."""
    by_panel: dict[tuple, list[Benchmark]] = {}
    for b in benchmarks:
        if b.parsed.family == spec.family and is_number(b.parsed.axes.get(spec.x)) \
                and (spec.select is None or spec.select(b.parsed)):
            by_panel.setdefault(_sweep_panel_key(spec, b), []).append(b)
    return [b for rows in by_panel.values() if len({r.parsed.axes[spec.x] for r in rows}) > 1
            for b in rows]


def _sweep_panel_key(spec: SweepSpec, b: Benchmark) -> tuple[tuple[str, str], ...]:
    """The axes that are neither swept nor part of a series: one panel per value."""
    return tuple((k, v) for k, v in with_threads(b.parsed).items()
                 if k != spec.x and k not in spec.series)


def swept_names(benchmarks: Sequence[Benchmark]) -> set[str]:
    """Names some sweep draws, so the per-family chart can leave them out."""
    return {b.name for spec in SWEEPS for b in selected(spec, benchmarks)}


def _line_styles(spec: SweepSpec, lines: Iterable[Line]) -> dict[tuple, dict]:
    """First series key -> colour (the spec's, else CPU cool and GPU warm), second -> marker,
    third -> line style; the same for a line in every panel of a figure."""
    fixed = dict(spec.colours)
    levels: list[list[str | None]] = [[] for _ in spec.series]
    by_device: dict[str, list[str | None]] = {}
    styles = {}
    for line in lines:
        index = []
        for level, value in zip(levels, line.key):
            if value not in level:
                level.append(value)
            index.append(level.index(value))
        index += [0, 0, 0]
        first = line.key[0] if line.key else None
        seen = by_device.setdefault(line.device, [])
        if first not in seen:
            seen.append(first)
        palette = PALETTE.get(line.device, SERIES_COLOURS)
        colour = fixed.get(first or "", palette[seen.index(first) % len(palette)])
        styles[line.key] = {"color": colour,
                            "marker": SERIES_MARKERS[index[1] % len(SERIES_MARKERS)],
                            "linestyle": SERIES_LINES[index[2] % len(SERIES_LINES)]}
    return styles


def _draw_sweep_panel(ax, chart: SweepChart, panel: SweepPanel, styles: dict) -> None:
    spec = chart.spec
    for line in panel.lines:
        style = styles[line.key]
        ax.plot(line.xs, line.ys, label=line.label, markersize=4, linewidth=1.3, **style)
        if line.lows != line.highs:
            ax.fill_between(line.xs, line.lows, line.highs, color=style["color"], alpha=0.15,
                            linewidth=0)
    for k, ideal in enumerate(panel.ideals):
        # A dash marker too: with one producer cost per panel there is no line to draw.
        ax.plot(ideal.xs, ideal.ys, color="black" if k == 0 else "#777777", linestyle="--",
                linewidth=1.2, marker="_", markersize=16, label=ideal.label)
    for ref in chart.hlines:
        ax.axhline(ref.value, color="black", linestyle=ref.style, linewidth=1)
        ax.annotate(ref.label, (0.01, ref.value), xycoords=("axes fraction", "data"),
                    xytext=(0, 3), textcoords="offset points", fontsize=7)
    colours = {line.label: styles[line.key]["color"] for line in panel.lines}
    for k, ref in enumerate(panel.vlines):
        colour = next((c for label, c in colours.items() if ref.label.startswith(label)), "k")
        ax.axvline(ref.value, color=colour, linestyle="--", linewidth=1)
        ax.annotate(ref.label, (ref.value, 0.97 - 0.07 * k), xycoords=("data", "axes fraction"),
                    xytext=(3, 0), textcoords="offset points", fontsize=7, color=colour, va="top")
    if spec.log_x:
        ax.set_xscale("log", base=2 if spec.x == "bytes" else 10)
        ax.xaxis.set_minor_locator(NullLocator())
    xs = sorted({x for line in panel.lines for x in line.xs})
    if len(xs) <= 12:  # few sizes: tick exactly the measured ones
        ax.set_xticks(xs)
    ax.xaxis.set_major_formatter(FuncFormatter(_bytes_formatter if spec.x == "bytes"
                                               else _number_formatter))
    ax.set_xlabel(spec.x)
    values = [y for line in panel.lines for y in line.lows + line.highs]
    values += [ref.value for ref in chart.hlines] + [y for i in panel.ideals for y in i.ys]
    span = value_span(values)
    # Log only where the values span decades: on a narrow range it makes 7 ms against 8 ms look
    # like a gap of several times.
    _value_axis(ax, "y", spec.metric, spec.log_y and (span or 1.0) > LOG_SPAN, span)
    ax.grid(True, axis="x", color="#eeeeee", linewidth=0.6)
    if panel.title:
        ax.set_title(panel.title, loc="left")
    if panel.note:
        ax.set_title(panel.note if len(panel.note) < 90 else panel.note[:87] + "...",
                     loc="right", fontsize=7, color="#777777")


def draw_sweep_chart(chart: SweepChart, stem: Path) -> Path:
    panels = chart.panels
    columns = 2 if len(panels) > 1 else 1
    labels = list(dict.fromkeys(line.label for p in panels for line in p.lines))
    labels += list(dict.fromkeys(i.label for p in panels for i in p.ideals))
    grid = Grid(math.ceil(len(panels) / columns), columns, (6.4 if columns > 1 else 8.0, 3.0),
                right=legend_width(labels))
    with matplotlib.rc_context(RC):
        fig, axes = grid.figure()
        styles = _line_styles(chart.spec, (line for p in panels for line in p.lines))
        for ax, panel in zip(axes, panels):
            _draw_sweep_panel(ax, chart, panel, styles)
        for ax in axes[len(panels):]:
            ax.set_visible(False)
        # One legend: a line has the same style in every panel.
        handles = {}
        for ax in axes[:len(panels)]:
            for handle, label in zip(*ax.get_legend_handles_labels()):
                handles.setdefault(label, handle)
        axes[columns - 1].legend(list(handles.values()), list(handles), loc="upper left",
                                 bbox_to_anchor=(1.01, 1.0))
        grid.title(fig, chart.spec.title + " (median; bands: middle half of the repetitions)")
        return save(fig, stem)


# ---- against baselines from other machines -------------------------------------------------------

@dataclass
class MetricsChart:
    machines: list[str]  # this machine first
    names: list[str]  # the metrics any machine has
    values: list[list[float | None]]  # [metric][machine]


def metrics_chart_data(columns: Sequence[tuple[str, Mapping[str, float]]]) -> MetricsChart | None:
    """Portable ratios by machine; None unless at least two machines share one."""
    names = list(dict.fromkeys(k for _, m in columns for k in m))
    values = [[m.get(k) for _, m in columns] for k in names]
    keep = [i for i, row in enumerate(values) if sum(v is not None for v in row) >= 1]
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


# ---- files ------------------------------------------------------------------------------------

def save(fig: Figure, stem: Path) -> Path:
    """PNG and SVG next to each other, each written under a temporary name and then renamed, so
    a failure never leaves half a chart."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    for fmt in ("svg", "png"):
        final = stem.with_name(f"{stem.name}.{fmt}")
        tmp = stem.with_name(f".{stem.name}.{fmt}.{os.getpid()}.tmp")
        try:
            fig.savefig(tmp, format=fmt, dpi=DPI, bbox_inches="tight")  # wrapped labels fit
            os.replace(tmp, final)
        finally:
            tmp.unlink(missing_ok=True)
    return stem.with_name(f"{stem.name}.png")


def family_chart(benchmarks: Sequence[Benchmark], family: str, stem: Path) -> Path | None:
    chart = family_chart_data(benchmarks, family)
    return draw_family_chart(chart, stem) if chart else None


def sweep_chart(spec: SweepSpec, benchmarks: Sequence[Benchmark], context: Mapping[str, object],
                stem: Path) -> Path | None:
    chart = sweep_chart_data(spec, benchmarks, context)
    return draw_sweep_chart(chart, stem) if chart else None


def metrics_chart(columns: Sequence[tuple[str, Mapping[str, float]]], stem: Path) -> Path | None:
    chart = metrics_chart_data(columns)
    return draw_metrics_chart(chart, stem) if chart else None
