"""Charts of gapbench results: pure data preparation first, then drawing (Agg, PNG and SVG).

Three kinds of chart, each a `*_data()` function that returns plain dataclasses (testable without
drawing) and a `draw_*()` function that writes `<stem>.png` and `<stem>.svg` and returns the PNG:

- family_chart (family.py): every variant of a family side by side, per size, CPU and GPU in
  different colours and markers, the median with the min-max spread over the repetitions;
- sweep_chart (sweeps.py): one line per series against a swept axis, driven by SWEEPS (one row
  per sweep, so a new family adds a row), with reference lines (the PCIe link), crossover marks
  and the ideal;
- metrics_chart and versus_chart (machines.py): each machine's ceilings side by side, and each
  work's ratio against another machine beside its ceiling's;
- framework_chart (framework_chart.py): the user's framework's time over the library's, per pair.

common.py holds what they share (style, value axis, Grid, save); trend/command.py draws with it too.
"""

from gapbench_report.core.metrics import TIME, Metric
from gapbench_report.render.plots.common import (
    DPI,
    RC,
    SERIES_COLOURS,
    SERIES_LINES,
    SERIES_MARKERS,
    Grid,
    legend_width,
    save,
    value_span,
)
from gapbench_report.render.plots.family import (
    PEAK_FLOPS,
    PEAK_TRAFFIC,
    PIPELINE_RATE,
    FamilyChart,
    draw_family_chart,
    family_chart,
    family_chart_data,
    family_metric,
)
from gapbench_report.render.plots.framework_chart import (
    FrameworkChart,
    draw_framework_chart,
    framework_chart,
    framework_chart_data,
)
from gapbench_report.render.plots.machines import (
    MetricsChart,
    VersusChart,
    draw_metrics_chart,
    draw_versus_chart,
    metrics_chart,
    metrics_chart_data,
    versus_chart,
    versus_chart_data,
)
from gapbench_report.render.plots.sweeps import (
    SWEEPS,
    SweepChart,
    SweepSpec,
    crossover,
    draw_sweep_chart,
    pcie_lines,
    sweep_chart,
    sweep_chart_data,
    swept_names,
)

__all__ = [
    "DPI", "PEAK_FLOPS", "PEAK_TRAFFIC", "PIPELINE_RATE", "RC", "SERIES_COLOURS", "SERIES_LINES",
    "SERIES_MARKERS", "SWEEPS", "TIME", "FamilyChart", "FrameworkChart", "Grid", "Metric",
    "MetricsChart", "SweepChart", "SweepSpec", "VersusChart", "crossover", "draw_family_chart",
    "draw_framework_chart", "draw_metrics_chart", "draw_sweep_chart", "draw_versus_chart",
    "family_chart", "family_chart_data", "family_metric", "framework_chart",
    "framework_chart_data", "legend_width",
    "metrics_chart", "metrics_chart_data", "pcie_lines", "save", "sweep_chart", "sweep_chart_data",
    "swept_names", "value_span", "versus_chart", "versus_chart_data"]
