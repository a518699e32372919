"""`gapbench-report render`: charts, one self-contained index.html and a summary.md for one run.
How to read them: docs/report.md#the-page-top-to-bottom."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from gapbench_report import commandline, plots, versus, versus_framework
from gapbench_report.files import json_text, write_atomic_together
from gapbench_report.html_writer import ChartFile, html_page
from gapbench_report.labels import safe_stem
from gapbench_report.markdown_writer import summary_markdown
from gapbench_report.model import (
    FRAMEWORK_SECTION,
    VERSUS_CHART,
    Baseline,
    Report,
    build_report,
)
from gapbench_report.results import Results, ResultsError, json_files, load_results

PROG = "gapbench-report render"


def draw_charts(report: Report, out_dir: Path) -> dict[str, list[ChartFile]]:
    """Family -> its charts (sweeps first); "" -> each machine's ceilings; VERSUS_CHART + a
    baseline's label -> each work's ratio against it beside its ceiling's; FRAMEWORK_SECTION ->
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
    png = plots.metrics_chart(report.ceiling_columns, out_dir / "machines",
                              "Each machine's ceilings, as its run recorded them")
    if png:
        charts[""] = [ChartFile(png, "each machine's ceilings side by side")]
    for section in report.versus:
        png = plots.versus_chart(section.bars, section.label,
                                 out_dir / f"versus-{safe_stem(section.label)}")
        if png:
            charts[VERSUS_CHART + section.label] = [ChartFile(
                png, f"each work's ratio against {section.label} beside its ceiling's")]
    png = plots.framework_chart(report.pairs, out_dir / FRAMEWORK_SECTION)
    if png:
        charts[FRAMEWORK_SECTION] = [ChartFile(png, "your framework against the libraries")]
    return charts


COMPARISON = "comparison.json"


def render(runs: list[Results], baselines: list, out_dir: Path) -> Path:
    """Writes the charts, summary.md and index.html (last, each file whole) into out_dir, with
    comparison.json where there are baselines (model.build_report: each a results file, or a
    Baseline of several): a render that fails leaves the previous report as it was. Returns
    index.html."""
    if not runs:
        raise ResultsError("no results files to render")
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise ResultsError(f"{out_dir}: exists and is not a directory")
    out_dir.mkdir(parents=True, exist_ok=True)
    report = build_report(runs, baselines)  # derive, and diagnose
    charts = draw_charts(report, out_dir)
    index = out_dir / "index.html"
    pages = {out_dir / "summary.md": summary_markdown(report), index: html_page(report, charts)}
    if report.comparisons:
        pages[out_dir / COMPARISON] = json_text(versus_framework.with_framework(
            versus.document(report.comparisons), report.framework_comparisons))
    write_atomic_together(pages)
    if not report.comparisons:  # an earlier render's, which this page no longer shows
        (out_dir / COMPARISON).unlink(missing_ok=True)
    return index


def machine_run(path: Path) -> Baseline | Results:
    """A results file (with its probe files beside it, NAME.framework-*.json), or a folder
    holding one machine's run: its results files (*.json), but its doctor.json, which holds
    doctor's facts (every results file's context holds them too)."""
    if not path.is_dir():
        probes = versus_framework.probe_files_beside(path)
        if not probes:
            return load_results(path)
        return Baseline(path.stem, tuple(load_results(f) for f in [path, *probes]))
    files = [f for f in json_files(path) if f.name != "doctor.json"]
    if not files:
        raise ResultsError(f"{path}: a folder with no results files (*.json) in it")
    return Baseline(path.name, tuple(load_results(f) for f in files))


def loaded_runs(paths: list[Path]) -> list[Results]:
    """The run's files: each a results file or a folder of them (machine_run)."""
    runs: dict[Path, Results] = {}  # a probe file found beside its results file and named too
    for p in paths:
        found = machine_run(p)
        for r in found.files if isinstance(found, Baseline) else [found]:
            runs.setdefault(r.path.resolve(), r)
    return list(runs.values())


def _parser() -> commandline.Parser:
    p = commandline.parser(PROG, "Charts, index.html and summary.md for one run.", epilog="")
    p.add_argument("results", nargs="+", type=Path,
                   help="the run's results files (one per family), or a folder of them")
    p.add_argument("--baseline", action="extend", nargs="+", default=[], type=Path,
                   metavar="PATH", help="another machine's run to compare with: a results file, "
                                        "or a folder of one run's files (repeatable)")
    p.add_argument("--out", required=True, type=Path, help="the folder to write into")
    return p


def _run(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    runs = loaded_runs(args.results)
    baselines = [machine_run(p) for p in args.baseline]
    print(render(runs, baselines, args.out))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """0 written; 2 unusable input or unwritable output (one line on stderr, no traceback)."""
    return commandline.run(PROG, _run, argv, command="render")


if __name__ == "__main__":
    sys.exit(main())
