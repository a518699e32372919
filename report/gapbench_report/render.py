"""`gapbench-report render`: charts, one self-contained index.html and a summary.md for one run.
How to read them: docs/report.md#the-page-top-to-bottom."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from gapbench_report import commandline, plots
from gapbench_report.files import write_atomic_together
from gapbench_report.html_writer import ChartFile, html_page
from gapbench_report.labels import safe_stem
from gapbench_report.markdown_writer import summary_markdown
from gapbench_report.model import FRAMEWORK_SECTION, Report, build_report
from gapbench_report.results import Results, ResultsError, load_results

PROG = "gapbench-report render"


def draw_charts(report: Report, out_dir: Path) -> dict[str, list[ChartFile]]:
    """Family -> its charts (sweeps first); "" -> the cross-machine chart; FRAMEWORK_SECTION ->
    the framework beside the libraries."""
    charts: dict[str, list[ChartFile]] = {}
    benchmarks = report.benchmarks
    for spec in plots.SWEEPS:
        png = plots.sweep_chart(spec, benchmarks, report.context,
                                out_dir / f"{safe_stem(spec.family)}-{safe_stem(spec.name)}")
        if png:
            charts.setdefault(spec.family, []).append(ChartFile(png, spec.title))
    swept = plots.swept_names(benchmarks)
    for family, rows in report.families.items():
        rest = [b for b in rows if b.name not in swept]  # what no sweep already drew
        png = plots.family_chart(rest, family, out_dir / safe_stem(family))
        if png:
            charts.setdefault(family, []).append(ChartFile(png, f"{family}: every variant"))
    if report.portable:
        png = plots.metrics_chart(report.portable, out_dir / "machines")
        if png:
            charts[""] = [ChartFile(png, "portable ratios by machine")]
    png = plots.framework_chart(report.pairs, out_dir / FRAMEWORK_SECTION)
    if png:
        charts[FRAMEWORK_SECTION] = [ChartFile(png, "your framework against the libraries")]
    return charts


def render(runs: list[Results], baselines: list[Results], out_dir: Path) -> Path:
    """Writes the charts, summary.md and index.html (last, each file whole) into out_dir: a render
    that fails leaves the previous report as it was. Returns index.html."""
    if not runs:
        raise ResultsError("no results files to render")
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise ResultsError(f"{out_dir}: exists and is not a directory")
    out_dir.mkdir(parents=True, exist_ok=True)
    report = build_report(runs, baselines)  # derive, and diagnose
    charts = draw_charts(report, out_dir)
    index = out_dir / "index.html"
    write_atomic_together({out_dir / "summary.md": summary_markdown(report),
                           index: html_page(report, charts)})
    return index


def _parser() -> commandline.Parser:
    p = commandline.parser(PROG, "Charts, index.html and summary.md for one run.", epilog="")
    p.add_argument("results", nargs="+", help="the run's results files (one per family)")
    p.add_argument("--baseline", action="extend", nargs="+", default=[], metavar="FILE",
                   help="a results file from another machine (repeatable)")
    p.add_argument("--out", required=True, type=Path, help="the folder to write into")
    return p


def _run(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    runs = [load_results(p) for p in args.results]
    baselines = [load_results(p) for p in args.baseline]
    print(render(runs, baselines, args.out))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """0 written; 2 unusable input or unwritable output (one line on stderr, no traceback)."""
    return commandline.run(PROG, _run, argv, command="render")


if __name__ == "__main__":
    sys.exit(main())
