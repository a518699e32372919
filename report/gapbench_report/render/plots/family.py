"""The per-family chart: every variant of a family side by side, per size, CPU and GPU in
different colours and markers, the median with the min-max spread over the repetitions."""

from __future__ import annotations

import math
from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib

from gapbench_report.core import metrics
from gapbench_report.core.labels import (
    axes_label,
    fmt_si,
    is_unheld,
    unnamed_math,
    variant_label,
    with_threads,
)
from gapbench_report.core.metrics import TIME, Metric
from gapbench_report.inputs.results import MATH_AXIS, Benchmark, Name
from gapbench_report.render.plots.common import (
    LOG_SPAN,
    PALETTE,
    RC,
    UNHELD_SUFFIX,
    Grid,
    is_number,
    legend_width,
    save,
    seconds_formatter,
    skip_note,
    value_axis,
    value_span,
)

# CPU circles, GPU squares (in PALETTE's cool and warm colours); end-to-end variants hollow.
MARKER = {"cpu": "o", "gpu": "s"}
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


def numeric_keys(benchmarks: Sequence[Benchmark]) -> set[str]:
    """Axis keys whose every value is a number: sizes, the swept kind of axis."""
    keys: dict[str, bool] = {}
    for b in benchmarks:
        for k, v in b.parsed.axes.items():
            keys[k] = keys.get(k, True) and is_number(v)
    return {k for k, numeric in keys.items() if numeric}


@dataclass
class Dots:
    """One variant on one device across a panel's groups (None where it has no number)."""

    variant: str
    device: str
    values: list[tuple[float, float, float] | None]
    bound: str = ""  # the axes this variant always runs with ("depth 2 · workers 2")
    family: str = ""
    unheld: bool = False  # its times in this panel include the host's launches

    @property
    def label(self) -> str:
        variant, _, math = self.variant.partition(" ")  # series_of's "cudnn_e2e fp32"
        text = f"{self.device.upper()} {variant_label(variant, self.family)} {math}".rstrip()
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
# bytes_per_second), its SGEMM and GEMM rows (each math mode of the GPU's) their FLOP rate, and
# the CPU's register-resident multiply-add rows (peak/flops) theirs, in a panel of their own.
PEAK_TRAFFIC = Metric("traffic_bytes_per_second", 1e-9, "memory traffic (GB/s read + written)",
                      fallback="bytes_per_second")
PEAK_FLOPS = Metric("flops", 1e-9, "GEMM (GFLOP/s)")
PEAK_FLOP_VARIANTS = ("sgemm", "gemm")
PEAK_CPU_FLOPS = Metric("flops", 1e-9, "the CPU's multiply-add peak (GFLOP/s)")


PIPELINE_RATE = Metric("items_per_second", 1.0, "batches/s")
# An LSTM step of blas and cublas leaves x_t's projection to the sequence's hoisted GEMM; a
# library's one-step sequence does it itself: the steps do different work, so they are compared
# by the rate of the work each does, not by time.
LSTM_STEP_RATE = Metric("flops", 1e-9, "LSTM step GFLOP/s (each step's own work)")


def family_metric(name: Name) -> Metric:
    if name.family == "peak":
        if name.variant == "flops":
            return PEAK_CPU_FLOPS
        return PEAK_FLOPS if name.variant in PEAK_FLOP_VARIANTS else PEAK_TRAFFIC
    if name.family == "pipeline":
        return PIPELINE_RATE
    if name.family == "lstm" and name.axis("scope") == "step":
        return LSTM_STEP_RATE
    return TIME


# The precision a variant computes in (math:bf16; absent is fp32) belongs to the series, not to
# the sizes: each op's math modes stand side by side in one panel.


def series_of(b: Benchmark) -> tuple[str, str]:
    """(device, variant), the variant with its math mode where it has one: "onednn bf16", and
    "cudnn tf32 (library default)" for a row whose name leaves it unsaid (labels.unnamed_math)."""
    name = b.parsed
    math = name.axes.get(MATH_AXIS) or unnamed_math(b)
    return name.device, f"{name.variant} {math}" if math else name.variant


def _sized_axes(name: Name) -> dict[str, str]:
    return {k: v for k, v in with_threads(name).items() if k != MATH_AXIS}


def _panel_key(name: Name, numeric: set[str]) -> tuple[tuple[str, str], ...]:
    return tuple((k, v) for k, v in name.axes_but_math().items() if k not in numeric)


def _group_key(axes: Mapping[str, str], keys: Container[str]) -> tuple[tuple[str, tuple], ...]:
    """The axes that pick an x group, sortable: numbers by value, then words."""
    return tuple((k, (0, metrics.number(v), "") if is_number(v) else (1, 0.0, v))
                 for k, v in axes.items() if k in keys)


def _panel(benchmarks: list[Benchmark], title_axes: Sequence[tuple[str, str]],
           group_keys: set[str], metric: Metric) -> FamilyPanel:
    """One panel of `metric`: an x group per size, a dot per variant and device."""
    group_keys = group_keys | {"threads"}
    axes_of = {b.name: _sized_axes(b.parsed) for b in benchmarks}
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
    series = sorted(dict.fromkeys(series_of(b) for b in benchmarks),
                    key=lambda s: s[0])
    cells: dict[tuple, tuple[float, float, float] | None] = {}
    for b in benchmarks:  # a skipped row never hides a timed one in the same cell
        key = (*series_of(b), _group_key(axes_of[b.name], group_keys))
        cells[key] = metric.spread(b) or cells.get(key)
    # In the names' order (a set's order changes from one process to the next).
    bound_text = {series_of(b):
                  axes_label(axes_of[b.name], [k for k in axes_of[b.name] if k in bound])
                  for b in sorted(benchmarks, key=lambda b: b.status == "ok")}  # ok rows last
    unheld = {series_of(b) for b in benchmarks if is_unheld(b)}
    dots = [Dots(variant, device, [cells.get((device, variant, g)) for g in groups],
                 bound_text[(device, variant)] if bound else "",
                 benchmarks[0].parsed.family, (device, variant) in unheld)
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
    note = skip_note(benchmarks)
    panel = FamilyPanel(title, labels, dots, note, metric=metric)
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
            per_series.setdefault(series_of(b), set()).add(
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
    fmt = seconds_formatter if metric.key == "time" else fmt_si  # three digits
    for j, d in enumerate(panel.dots):
        xs, ys, lo, hi = [], [], [], []
        for i, v in enumerate(d.values):
            if v:
                xs.append(i + (j - (n - 1) / 2) * width)
                ys.append(v[0])
                lo.append(v[0] - v[1])
                hi.append(v[2] - v[0])
        style = styles[(d.device, d.variant)]
        # An unheld time is said beside the dot it belongs to (as a legend entry of its own it
        # would stand for the series in every panel, as a panel note it went unread).
        label = d.label + (UNHELD_SUFFIX if d.unheld and count > 30 else "")
        ax.errorbar(xs, ys, yerr=[lo, hi], linestyle="none", markersize=6, capsize=2,
                    elinewidth=1, label=label, **style)
        if count <= 30:  # few enough dots to print each median beside it
            for x, y in zip(xs, ys):
                ax.annotate(fmt(y) + (UNHELD_SUFFIX if d.unheld else ""), (x, y),
                            xytext=(5, 0), textcoords="offset points", fontsize=7,
                            va="center", color=style["color"])
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
    value_axis(ax, "y", metric, panel.log_y, value_span(panel.values()),
                max(panel.values(), default=None))
    ax.set_title(panel.title, loc="left")
    if panel.note:
        ax.set_title(panel.note, loc="right", fontsize=7, color="#777777")
    if not panel.dots:
        ax.text(0.5, 0.5, "nothing ran", transform=ax.transAxes, ha="center", color="#777777")


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


def _labels(panels: Iterable[FamilyPanel]) -> list[str]:
    return list(dict.fromkeys(d.label for p in panels for d in p.dots))


def _legend_handle(axes, label: str):
    for ax in axes:
        handles, labels = ax.get_legend_handles_labels()
        if label in labels:
            return handles[labels.index(label)], label
    return None, label


def family_chart(benchmarks: Sequence[Benchmark], family: str, stem: Path) -> Path | None:
    chart = family_chart_data(benchmarks, family)
    return draw_family_chart(chart, stem) if chart else None
