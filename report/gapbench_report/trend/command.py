"""`gapbench-report trend`: the nightly medians night by night, charted and tabled.
How to read it: docs/regressions.md#trend."""

from __future__ import annotations

import json
import re
import statistics
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import matplotlib as mpl
from matplotlib.ticker import FuncFormatter

from gapbench_report.cli import kit as commandline
from gapbench_report.cli.kit import UsageError
from gapbench_report.core.catalogue import family_rank
from gapbench_report.core.labels import fmt_seconds, printable_text, safe_stem
from gapbench_report.inputs.files import FolderBusy, OutputSet
from gapbench_report.inputs.results import (
    LONGEST_TIME,
    SHORTEST_TIME,
    ResultsError,
    is_time,
    json_files,
    parse_name,
    read_text,
    shown,
)
from gapbench_report.render import plots
from gapbench_report.writers.html import ChartFile, figure, page, table
from gapbench_report.writers.markdown import markdown_table

PROG = "gapbench-report trend"
HISTORY_SCHEMA = "gapbench-nightly-history/1"  # nightly.HISTORY_SCHEMA (no import: no cycle)
LINES_PER_PANEL = 8  # more lines than this are unreadable; a family gets more panels
TICKS = 12  # night labels on the x axis at most
HISTORY_LIMIT_BYTES = 16 * 2**20  # a night's medians: about 100 KiB for every benchmark


@dataclass(frozen=True)
class Night:
    path: Path
    date: datetime
    commit: str
    dirty: bool
    machine: str
    cpu: str
    regression: bool
    medians: dict[str, float]

    @property
    def label(self) -> str:
        return f"{self.date:%m-%d}\n{self.commit[:7]}{'*' if self.dirty else ''}"


def _night(path: Path) -> Night:
    text = read_text(path, "history file", HISTORY_LIMIT_BYTES)
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise ResultsError(f"{path}: not a readable history file: {e}") from None
    if not isinstance(data, dict) or data.get("schema") != HISTORY_SCHEMA:
        raise ResultsError(f"{path}: not a nightly history file (schema {HISTORY_SCHEMA})")
    medians = data.get("medians")
    if not isinstance(medians, dict):
        raise ResultsError(f"{path}: 'medians' must map names to positive seconds")
    for name, seconds in medians.items():
        if not is_time(seconds):
            raise ResultsError(f"{path}: medians: {name}: {shown(seconds)} is no time per "
                               f"iteration ('medians' must map names to positive seconds, "
                               f"{SHORTEST_TIME:g} to {LONGEST_TIME:g})")
        try:
            parse_name(name)  # names off the scheme are refused, as everywhere in the report
        except ResultsError as e:
            raise ResultsError(f"{path}: medians: {e}") from None
    try:
        date = datetime.fromisoformat(str(data["date"]))
    except (KeyError, ValueError):
        raise ResultsError(f"{path}: no valid 'date'") from None
    if date.tzinfo is None:  # nights are ordered by date: a naive one has no place among them
        raise ResultsError(f"{path}: date {shown(data['date'])} has no time zone (ci/nightly "
                           "writes UTC, as 2026-01-01T02:17:00+00:00)")
    return Night(path, date, str(data.get("commit") or "unknown"), bool(data.get("dirty")),
                 str(data.get("machine", "")), str(data.get("cpu") or ""),
                 bool(data.get("regression")), {k: float(v) for k, v in medians.items()})


def load_history(paths: Iterable[Path]) -> list[Night]:
    """Every night in the given files and folders (their *.json), oldest first."""
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            files += json_files(p)
        elif p.exists():
            files.append(p)
        else:
            raise ResultsError(f"{p}: no such file or folder")
    if not files:
        raise ResultsError("no history files (ci/nightly writes them into "
                           "results/nightly/history/)")
    return sorted((_night(f) for f in files), key=lambda n: (n.date, n.path.name))


# ---- data -------------------------------------------------------------------------------------

@dataclass
class Series:
    name: str
    machine: str
    points: list[tuple[int, float]] = field(default_factory=list)  # (night index, seconds)

    @property
    def typical(self) -> float:
        return statistics.median(s for _, s in self.points)


def series(nights: Sequence[Night], pattern: str | None = None) -> list[Series]:
    """A series per (machine, benchmark), x being the night's index within its machine."""
    regex = re.compile(pattern) if pattern else None
    found: dict[tuple[str, str], Series] = {}
    for machine, its_nights in by_machine(nights).items():
        for x, night in enumerate(its_nights):
            for name, seconds in night.medians.items():
                if regex and not regex.search(name):
                    continue
                found.setdefault((machine, name), Series(name, machine)).points.append(
                    (x, seconds))
    return list(found.values())


def by_machine(nights: Sequence[Night]) -> dict[str, list[Night]]:
    out: dict[str, list[Night]] = {}
    for n in nights:
        out.setdefault(n.machine, []).append(n)
    return out


@dataclass(frozen=True)
class TrendRow:
    name: str
    machine: str
    nights: int
    latest: float
    before: float | None  # median of the earlier nights
    low: float
    high: float

    @property
    def change(self) -> float | None:
        return None if self.before is None else self.latest / self.before - 1


def trend_rows(all_series: Iterable[Series]) -> list[TrendRow]:
    rows = []
    for s in all_series:
        values = [v for _, v in s.points]
        before = statistics.median(values[:-1]) if len(values) > 1 else None
        rows.append(TrendRow(s.name, s.machine, len(values), values[-1], before, min(values),
                             max(values)))
    return rows


# ---- charts ------------------------------------------------------------------------------------

@dataclass
class TrendChart:
    title: str
    nights: list[Night]
    panels: list[list[Series]]


def charts(nights: Sequence[Night], all_series: Sequence[Series]) -> list[TrendChart]:
    """A chart per (machine, family), LINES_PER_PANEL benchmarks per panel."""
    machines = by_machine(nights)
    several = len(machines) > 1
    groups: dict[tuple[str, str], list[Series]] = {}
    for s in all_series:
        groups.setdefault((s.machine, parse_name(s.name).family), []).append(s)
    out = []
    for (machine, family), rows in sorted(groups.items(), key=lambda kv: (
            kv[0][0], family_rank(kv[0][1]))):
        its = machines[machine]
        where = f" on {its[-1].cpu or 'machine'} ({machine})" if several else ""
        panels = [rows[i:i + LINES_PER_PANEL] for i in range(0, len(rows), LINES_PER_PANEL)]
        out.append(TrendChart(f"{family}{where}: median per night, relative to each "
                              "benchmark's own median", its, panels))
    return out


def short_label(name: str, family: str) -> str:
    """The name without its family and Google Benchmark's timing suffix (legend space)."""
    text = name[len(family) + 1:] if name.startswith(family + "/") else name
    return re.sub(r"/(real_time|manual_time)(?=/|$)", "", text)


def draw_chart(chart: TrendChart, stem: Path) -> Path:
    family = parse_name(chart.panels[0][0].name).family
    labels = [short_label(s.name, family) for p in chart.panels for s in p]
    grid = plots.Grid(len(chart.panels), 1, (max(6.0, 0.45 * len(chart.nights) + 2), 2.6),
                      right=plots.legend_width(labels), bottom=0.8, hgap=0.7)
    with mpl.rc_context(plots.RC):
        fig, axes = grid.figure()
        grid.title(fig, chart.title)
        xs = list(range(len(chart.nights)))
        step = max(1, -(-len(xs) // TICKS))
        for ax, panel in zip(axes, chart.panels):
            for x, night in enumerate(chart.nights):
                if night.regression:  # a night that called a regression
                    ax.axvspan(x - 0.4, x + 0.4, color="#c62828", alpha=0.12, lw=0)
            ax.axhline(1.0, color="#999", lw=0.8, ls=":")
            for i, s in enumerate(panel):
                typical = s.typical
                ax.plot([x for x, _ in s.points], [v / typical for _, v in s.points],
                        color=plots.SERIES_COLOURS[i % len(plots.SERIES_COLOURS)],
                        marker=plots.SERIES_MARKERS[i % len(plots.SERIES_MARKERS)], ms=4,
                        lw=1.2, label=short_label(s.name, family))
            ax.set_xlim(-0.5, len(xs) - 0.5)
            ax.set_xticks(xs[::step], [chart.nights[x].label for x in xs[::step]], fontsize=7)
            ax.set_ylabel("median / usual")
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:.2f}"))
            ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
        return plots.save(fig, stem)


# ---- files --------------------------------------------------------------------------------------

def _pct(change: float | None) -> str:
    return "—" if change is None else f"{change:+.1%}"


TABLE_HEADERS = ("benchmark", "machine", "nights", "latest", "median before", "latest vs before",
                 "min – max")
NUMERIC = {2, 3, 4, 5, 6}


def table_cells(rows: Sequence[TrendRow]) -> list[list[object]]:
    return [[r.name, r.machine, r.nights, fmt_seconds(r.latest),
             fmt_seconds(r.before) if r.before else "—", _pct(r.change),
             f"{fmt_seconds(r.low)} – {fmt_seconds(r.high)}"] for r in rows]


def trend_markdown(nights: Sequence[Night], rows: Sequence[TrendRow]) -> str:
    machines = by_machine(nights)
    lines = ["# gapbench nightly trend", "",
             f"{len(nights)} night{'s' if len(nights) != 1 else ''} on {len(machines)} machine"
             f"{'s' if len(machines) != 1 else ''}, {nights[0].date:%Y-%m-%d} to "
             f"{nights[-1].date:%Y-%m-%d}; {sum(n.regression for n in nights)} called a "
             "regression.", ""]
    lines += markdown_table(TABLE_HEADERS, table_cells(rows), NUMERIC, code={0})
    return "\n".join(lines) + "\n"


def trend_html(nights: Sequence[Night], rows: Sequence[TrendRow],
               figures: Sequence[ChartFile]) -> str:
    parts = ["<h1>gapbench nightly trend</h1>",
             f'<p class="meta">{len(nights)} nights, {nights[0].date:%Y-%m-%d} to '
             f"{nights[-1].date:%Y-%m-%d}; shaded nights called a regression; commits marked * "
             "were built from a tree with uncommitted changes.</p>"]
    parts += [figure(f) for f in figures]
    parts.append(table(TABLE_HEADERS, table_cells(rows), NUMERIC))
    return page("gapbench nightly trend", parts)


def write_trend(nights: Sequence[Night], out: Path, pattern: str | None = None,
                last: int | None = None) -> Path:
    """Charts, trend.md and index.html (last) under `out`; returns index.html."""
    if last is not None:
        keep = {id(n) for its in by_machine(nights).values() for n in its[-last:]}
        nights = [n for n in nights if id(n) in keep]
    found = series(nights, pattern)
    if not found:
        raise ResultsError(f"no benchmark in the history matches {pattern!r}" if pattern
                           else "the history holds no medians")
    rows = trend_rows(found)
    try:
        with OutputSet(out, PROG) as outputs:  # charts, trend.md and index.html as one set
            figures, taken = [], set()
            for chart in charts(nights, found):
                name, n = safe_stem(chart.title.split(":")[0]), 1
                while f"{name}{'-' + str(n) if n > 1 else ''}" in taken:
                    n += 1
                name += f"-{n}" if n > 1 else ""
                taken.add(name)
                figures.append(ChartFile(draw_chart(chart, outputs.staging / name), chart.title))
            outputs.replace({"trend.md": printable_text(trend_markdown(nights, rows)),
                             "index.html": printable_text(trend_html(nights, rows, figures))})
    except FolderBusy as e:
        raise ResultsError(str(e)) from None
    return out / "index.html"


def _parser() -> commandline.Parser:
    p = commandline.parser(PROG, "The trend of the nightly medians: per family a chart with a "
                                 "line per benchmark, and a table.", epilog="")
    p.add_argument("history", nargs="+", type=Path, help="history folders or files")
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--filter", help="only benchmarks whose name matches this regex")
    p.add_argument("--last", type=int, help="only the last N nights of each machine")
    return p


def _run(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    if args.filter:
        try:
            re.compile(args.filter)
        except re.error as e:
            raise UsageError(f"--filter is not a valid regex: {e}") from None
    if args.last is not None and args.last < 1:
        raise UsageError("--last must be at least 1")
    print(write_trend(load_history(args.history), args.out, args.filter, args.last))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """0 written; 2 unusable input (one line on stderr)."""
    return commandline.run(PROG, _run, argv, command="trend")


if __name__ == "__main__":
    sys.exit(main())
