"""Sweeps: one line per series against a swept axis, driven by SWEEPS (one row per sweep, so a
new family adds a row), with reference lines (the PCIe link), crossover marks and the ideal."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib
from matplotlib.ticker import FuncFormatter, NullLocator

from gapbench_report.core import metrics
from gapbench_report.core.labels import (
    axes_label,
    fmt_axis_value,
    is_unheld,
    variant_label,
    with_threads,
)
from gapbench_report.core.metrics import TIME, Metric
from gapbench_report.inputs.results import MATH_AXIS, Benchmark, Name
from gapbench_report.render.plots.common import (
    LOG_SPAN,
    PALETTE,
    RC,
    SERIES_COLOURS,
    SERIES_LINES,
    SERIES_MARKERS,
    UNHELD_SUFFIX,
    Grid,
    bytes_formatter,
    is_number,
    legend_width,
    number_formatter,
    save,
    skip_note,
    value_axis,
    value_span,
)


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


def _lstm_scope(scope: str) -> Callable[[Name], bool]:
    return lambda name: name.axis("scope") == scope


def _framework_op(op: str) -> Callable[[Name], bool]:
    return lambda name: name.axis("op") == op


GBPS = Metric("bytes_per_second", 1e-9, "GB/s copied")
SWEEPS: tuple[SweepSpec, ...] = (
    SweepSpec("transfer", "transfer", "Host-device copies: bandwidth against size", "bytes",
              GBPS, series=("variant", "dir", "mode"), link_lines=True,
              colours=(("pageable", "#d62728"), ("pinned", "#2ca02c"), ("device", "#9467bd"),
                       ("memcpy", "#7f7f7f"))),
    SweepSpec("matmul", "overhead", "Matrix multiply: time against size (CPU vs GPU)", "n",
              series=("variant", "device", MATH_AXIS), select=_matmul, crossover=True),
    SweepSpec("lstm", "lstm", "LSTM sequence: time against batch size", "batch",
              select=_lstm_scope("seq")),
    # The steps do different work (blas and cublas leave x_t's projection to the sequence; a
    # library's one-step sequence does it): compared by rate, as the family chart does.
    SweepSpec("lstm-step", "lstm",
              "LSTM step: GFLOP/s against batch size (each step's own work)", "batch",
              Metric("flops", 1e-9, "GFLOP/s"), select=_lstm_scope("step")),
    SweepSpec("batch", "overhead", "Dense network step: throughput against batch size", "batch",
              Metric("items_per_second", 1.0, "samples/s")),
    SweepSpec("fw-matmul", "framework", "Your framework's matmul: time against size",
              "n", series=("variant", "device", "mode"), select=_framework_op("matmul"),
              crossover=True),
    SweepSpec("fw-dense", "framework",
              "Your framework's dense training step: throughput against batch size", "batch",
              Metric("items_per_second", 1.0, "samples/s"), series=("variant", "device", "mode"),
              select=_framework_op("dense")),
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
    capped: list[Line] = field(default_factory=list)  # ideal points the cores cap, as marks


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
            parts.append(variant_label(v, spec.family))
        elif k == "device":
            parts.append(v.upper())
        else:
            parts.append(v if k in ("dir", "mode") else f"{k} {v}")
            if k == "mode" and v == "async" and "pageable" in key:
                # Staged by the driver through its own pinned buffer and timed on the host
                # clock: not copy-engine time like the pinned rows beside it.
                parts[-1] = "async (staged)"
    return " · ".join(parts)


def _unheld_suffixes(spec: SweepSpec, rows: Iterable[Benchmark]) -> dict[tuple, str]:
    """Series -> what its legend entry adds where some of its times, over the whole chart, are
    unheld (include the host's launches): one legend serves every panel, so it says "partly"
    where only some are."""
    timed: dict[tuple, list[bool]] = {}
    for b in rows:
        if b.status == "ok":
            timed.setdefault(tuple(series_value(b, k) for k in spec.series), []).append(
                is_unheld(b))
    return {key: UNHELD_SUFFIX if all(flags) else UNHELD_SUFFIX.replace("unheld", "partly "
                                                                         "unheld")
            for key, flags in timed.items() if any(flags)}


def _lines(spec: SweepSpec, rows: list[Benchmark],
           unheld: Mapping[tuple, str] | None = None) -> list[Line]:
    """`unheld`: _unheld_suffixes of the whole chart's rows."""
    unheld = unheld or {}
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
        label = _line_label(spec, key) + unheld.get(key, "")
        lines.append(Line(label, pts[0][2], key, [p[0] for p in pts],
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


def _ideals(spec: SweepSpec, rows: list[Benchmark], chart_rows: list[Benchmark]
            ) -> tuple[list[Line], list[Line]]:
    """The ideal counter against x, one line per device and number of producers (the
    pipeline's ideal is min(workers / produce, 1 / consume), capped by the cores where the
    producers and a CPU consumer are more busy threads than there are cores); and the points
    the cores cap (metrics.pipeline_ideal decides), as marks. A line's label is the same in
    every panel of the chart (`chart_rows`): the legend holds it once."""
    if not spec.ideal_counter:
        return [], []
    devices = {b.parsed.device for b in chart_rows}
    capped_keys = {(b.parsed.device, b.parsed.axes.get("workers", "1")) for b in chart_rows
                   if (i := metrics.pipeline_ideal(b)) and i.limit == "cores"}
    by_key: dict[tuple[str, str], dict[float, list[float]]] = {}
    capped: dict[int, tuple[list[float], list[float]]] = {}  # cores -> xs, ys
    for b in rows:
        value = b.counter(spec.ideal_counter)
        if value is None:
            continue
        x = metrics.number(b.parsed.axes[spec.x])
        key = (b.parsed.device, b.parsed.axes.get("workers", "1"))
        by_key.setdefault(key, {}).setdefault(x, []).append(value)
        if (i := metrics.pipeline_ideal(b)) and i.limit == "cores" and i.cores:
            xs, ys = capped.setdefault(i.cores, ([], []))
            xs.append(x)
            ys.append(value * spec.metric.scale)
    lines = []
    for (device, workers), by_x in sorted(by_key.items(),
                                          key=lambda kv: (kv[0][0], metrics.number(kv[0][1]) or 0)):
        xs = sorted(by_x)
        ys = [sorted(by_x[x])[len(by_x[x]) // 2] * spec.metric.scale for x in xs]
        who = f"{device.upper()} ideal" if len(devices) > 1 else "ideal"
        producers = "1 producer" if workers == "1" else f"{workers} producers"
        bounds = "workers / produce, 1 / consume"
        if (device, workers) in capped_keys:
            bounds += ", cores / " + ("(produce + consume)" if device == "cpu" else "produce")
        lines.append(Line(f"{who}, {producers}: min({bounds})", "", ("ideal", device, workers),
                          xs, ys, ys, ys))
    marks = [Line(f"ideal capped by the {cores} core{'s' if cores > 1 else ''}", "",
                  ("capped", str(cores)), xs, ys, ys, ys)
             for cores, (xs, ys) in sorted(capped.items())]
    return lines, marks


def sweep_chart_data(spec: SweepSpec, benchmarks: Sequence[Benchmark],
                     context: Mapping[str, object]) -> SweepChart | None:
    """The spec's lines, one panel per combination of the axes that are neither swept nor part of
    a series. None when the family, or its swept axis, is absent, or nothing was timed."""
    rows = selected(spec, benchmarks)
    unheld = _unheld_suffixes(spec, rows)
    by_panel: dict[tuple, list[Benchmark]] = {}
    for b in rows:
        by_panel.setdefault(_sweep_panel_key(spec, b), []).append(b)
    panels = []
    for rest, group in sorted(by_panel.items(), key=lambda kv: _sort_key(kv[0])):
        lines = _lines(spec, group, unheld)
        marks, notes = _crossovers(spec, lines) if spec.crossover else ([], [])
        note = "; ".join(filter(None, [skip_note(group)] + notes))
        ideals, capped = _ideals(spec, group, rows)
        panels.append(SweepPanel(axes_label(dict(rest)), lines, marks, ideals, note, capped))
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
    for mark in panel.capped:
        ax.plot(mark.xs, mark.ys, color="black", linestyle="none", marker="x", markersize=7,
                label=mark.label)
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
    ax.xaxis.set_major_formatter(FuncFormatter(bytes_formatter if spec.x == "bytes"
                                               else number_formatter))
    ax.set_xlabel(spec.x)
    values = [y for line in panel.lines for y in line.lows + line.highs]
    values += [ref.value for ref in chart.hlines] + [y for i in panel.ideals for y in i.ys]
    span = value_span(values)
    # Log only where the values span decades: on a narrow range it makes 7 ms against 8 ms look
    # like a gap of several times.
    value_axis(ax, "y", spec.metric, spec.log_y and (span or 1.0) > LOG_SPAN, span)
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
    labels += list(dict.fromkeys(i.label for p in panels for i in p.ideals + p.capped))
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


def sweep_chart(spec: SweepSpec, benchmarks: Sequence[Benchmark], context: Mapping[str, object],
                stem: Path) -> Path | None:
    chart = sweep_chart_data(spec, benchmarks, context)
    return draw_sweep_chart(chart, stem) if chart else None
