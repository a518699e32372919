"""`gapbench-report render`: charts, one self-contained index.html and a summary.md for one run.
How to read them: docs/report.md#the-page-top-to-bottom."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from gapbench_report.cli import kit as commandline
from gapbench_report.core.labels import printable_text, safe_stem
from gapbench_report.inputs.files import FolderBusy, OutputSet, json_text
from gapbench_report.inputs.machines import read_inputs
from gapbench_report.inputs.results import (
    Results,
    ResultsError,
)
from gapbench_report.render import plots
from gapbench_report.render.headings import FRAMEWORK_SECTION, VERSUS_CHART
from gapbench_report.render.model import (
    NO_COMPARISON,
    Report,
    build_report,
)
from gapbench_report.render.page import html_page
from gapbench_report.render.summary import summary_markdown
from gapbench_report.writers.html import ChartFile

PROG = "gapbench-report render"


def draw_charts(report: Report, out_dir: Path) -> dict[str, list[ChartFile]]:
    """Family -> its charts (sweeps first); "" -> each machine's ceilings; VERSUS_CHART + a
    baseline's label -> each work's ratio against it beside its ceiling's; FRAMEWORK_SECTION ->
    the framework beside the libraries. Each chart's file name is its own within the render
    (two titles that make one name, "lab 1" and "lab-1", are numbered)."""
    charts: dict[str, list[ChartFile]] = {}
    taken: set[str] = set()

    def stem(title: str) -> Path:
        name, n = safe_stem(title), 1
        while name in taken:
            n += 1
            name = f"{safe_stem(title)}-{n}"
        taken.add(name)
        return out_dir / name

    benchmarks = report.benchmarks
    for spec in plots.SWEEPS:
        png = plots.sweep_chart(spec, benchmarks, report.context,
                                stem(f"{safe_stem(spec.family)}-{safe_stem(spec.name)}"))
        if png:
            charts.setdefault(spec.family, []).append(ChartFile(png, spec.title))
    swept = plots.swept_names(benchmarks)
    for family, rows in report.families.items():
        rest = [b for b in rows if b.name not in swept]  # what no sweep already drew
        png = plots.family_chart(rest, family, stem(family))
        if png:
            charts.setdefault(family, []).append(ChartFile(png, f"{family}: every variant"))
    png = plots.metrics_chart(report.ceiling_columns, stem("machines"),
                              "Each machine's ceilings, as its run recorded them")
    if png:
        charts[""] = [ChartFile(png, "each machine's ceilings side by side")]
    for section in report.versus:
        png = plots.versus_chart(section.bars, section.label, stem(f"versus-{section.label}"))
        if png:
            charts[VERSUS_CHART + section.label] = [ChartFile(
                png, f"each work's ratio against {section.label} beside its ceiling's")]
    png = plots.framework_chart(report.pairs, stem(FRAMEWORK_SECTION))
    if png:
        charts[FRAMEWORK_SECTION] = [ChartFile(png, "your framework against the libraries")]
    return charts


COMPARISON = "comparison.json"
# What an earlier version of render may have left that no set of this one records.
STALE = ("versus-*.png", "versus-*.svg", COMPARISON)


class ComparisonFailed(ResultsError):
    """The comparison asked for (--baseline) could not be made: the report says why."""


def render(runs: list[Results], baselines: list, out_dir: Path,
           notes: Sequence[str] = ()) -> Path:
    """Writes the charts, summary.md, index.html and, where there are baselines, comparison.json
    into out_dir as one set (files.OutputSet: drawn aside, then all renamed into place, and what
    the earlier set had beyond them removed), the folder locked meanwhile: a render that fails
    leaves the previous report as it was, and two renders into one folder never mix. Baselines:
    model.build_report's (each a results file, or a Baseline of several). `notes`: what the
    reading of the inputs has to say. Returns index.html; ComparisonFailed (after writing)
    where baselines were given and the comparison could not be made."""
    if not runs:
        raise ResultsError("no results files to render")
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise ResultsError(f"{out_dir}: exists and is not a directory")
    report = build_report(runs, baselines, notes)  # derive, and diagnose
    try:
        with OutputSet(out_dir, PROG, STALE) as outputs:
            charts = draw_charts(report, outputs.staging)
            pages = {"summary.md": printable_text(summary_markdown(report)),
                     "index.html": printable_text(html_page(report, charts))}
            if report.comparisons:
                pages[COMPARISON] = json_text(report.comparison_document)
            outputs.replace(pages)
    except FolderBusy as e:
        raise ResultsError(str(e)) from None
    if baselines and not report.comparisons:
        raise ComparisonFailed(next((n for n in report.notes if n.startswith(NO_COMPARISON)),
                                    NO_COMPARISON) + f" (the report without it: {out_dir})")
    return out_dir / "index.html"


def _parser() -> commandline.Parser:
    p = commandline.parser(PROG, "Charts, index.html and summary.md for one run.", epilog="")
    p.add_argument("results", nargs="+", type=Path,
                   help="the run's results files (one per family), or a folder of them")
    p.add_argument("--baseline", action="extend", nargs="+", default=[], type=Path,
                   metavar="PATH", help="another machine's run to compare with: a results file, "
                                        "or a folder of one run's files; a folder of several "
                                        "machines' files (results/baselines) gives one baseline "
                                        "per machine (repeatable)")
    p.add_argument("--out", required=True, type=Path, help="the folder to write into")
    return p


def _run(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    runs, baselines, notes = read_inputs(args.results, args.baseline)
    print(render(runs, baselines, args.out, notes))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """0 written; 2 unusable input or unwritable output (one line on stderr, no traceback)."""
    return commandline.run(PROG, _run, argv, command="render")


if __name__ == "__main__":
    sys.exit(main())
