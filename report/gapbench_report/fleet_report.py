"""`gapbench-report fleet DIR --out OUT`: which node of a fleet is slow for this work, and why.

DIR holds one folder per node (gapbench_report.fleet_files). The nodes are grouped by their
hardware (GPU name, count and memory, the link they can train at, CPU model, cores and
instruction set), so that an H100 is never an outlier for not being an H200. Within a group of
at least MIN_JUDGED runs, every benchmark is set against the group's median, robustly: a run is
slow on a benchmark when it is SLOW_Z robust deviations (1.4826 x the median absolute deviation,
at least SPREAD_FLOOR of the median) and SLOW_RATIO above the median. The runs with slow
benchmarks are ranked by their cost on this work (the geometric mean of time / group median
over the benchmarks a run shares with its group, a benchmark within the spread counted as 1),
and each is explained by the
facts in which it differs from the rest of its group: doctor's facts and the run context's load
average. How to read the page: docs/fleet.md.
"""

from __future__ import annotations

import re
import statistics
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from gapbench_report import commandline
from gapbench_report.files import write_atomic_together
from gapbench_report.fleet_files import Node, node_folders, printable, read_fleet
from gapbench_report.html_writer import esc, page, table
from gapbench_report.labels import describe, fmt_seconds, fmt_si, md_cell
from gapbench_report.markdown_writer import markdown_table
from gapbench_report.metrics import number
from gapbench_report.results import ResultsError, parse_name

PROG = "gapbench-report fleet"
MIN_JUDGED = 3  # runs a group needs before one of them can be told from the others
SLOW_Z = 3.5  # robust deviations above the group's median
SLOW_RATIO = 1.2  # and at least this many times the median
SPREAD_FLOOR = 0.05  # the spread is never taken below 5% of the median (runs that agree closely)
MAD_TO_SIGMA = 1.4826  # the MAD of a normal distribution times this is its standard deviation
ROWS_SHOWN = 60  # rows of a long table before the rest is folded away

# The facts that explain a slower run, in the order they are cited: (key, the device whose
# benchmarks it explains ("" both), how it differs ("value", or "lower"/"higher" for a number
# that is worse that way), the words for it).
EXPLAINING = (
    ("onednn.isa_cap", "cpu", "value", "its oneDNN was capped to an older instruction set"),
    ("openblas.coretype", "cpu", "value", "its OpenBLAS was forced to another CPU's kernels"),
    ("openblas.core", "cpu", "value", "its OpenBLAS ran another CPU's kernels"),
    ("pcie.gen_current", "gpu", "lower", "its link trained at a lower PCIe generation"),
    ("pcie.width_current", "gpu", "lower", "its link trained narrower"),
    ("gpu.throttle_reasons", "gpu", "value", "its GPU was throttled"),
    ("gpu.clock_sm_mhz", "gpu", "lower", "its GPU ran at a lower clock"),
    ("gpu.clock_mem_mhz", "gpu", "lower", "its GPU memory ran at a lower clock"),
    ("load_avg", "", "higher", "other work loaded its cores"),
    ("cpu.governor", "cpu", "value", "another CPU frequency governor"),
    ("cpu.frequency_scaling", "cpu", "value", "other CPU frequency scaling"),
    ("openblas.threads", "cpu", "value", "OpenBLAS used another number of threads"),
    ("nvidia.driver_release", "gpu", "value", "another NVIDIA driver"),
    ("cuda.driver_version", "gpu", "value", "another CUDA driver version"),
    ("cuda.runtime_version", "gpu", "value", "another CUDA runtime"),
    ("cudnn.version_loaded", "gpu", "value", "another cuDNN"),
    ("cublas.version_loaded", "gpu", "value", "another cuBLAS"),
    ("gpu.memory_free_bytes", "gpu", "lower", "less free GPU memory"),
    ("gpu.ecc", "gpu", "value", "ECC set otherwise"),
    ("gpu.compute_processes", "gpu", "higher", "other processes on its GPU"),
    ("gpu.persistence_mode", "gpu", "value", "persistence mode set otherwise"),
    ("onednn.isa", "cpu", "value", "oneDNN chose another instruction set"),
)
# A number counts as different beyond this share of the group's median; the load average
# beyond half a core's worth (and at least 1).
NUMBER_DIFFERS = 0.1
LOAD_PER_CORE = 0.5


@dataclass
class Difference:
    """A fact in which a run differs from the rest of its group."""

    key: str
    words: str
    value: str
    others: str
    device: str

    @property
    def cited(self) -> str:
        source = "the run context's 1-minute load average" if self.key == "load_avg" else "doctor"
        return (f"{self.words} ({source}: `{self.key}` {self.value or 'not set'}; the others: "
                f"{self.others or 'not set'})")


@dataclass
class Slow:
    name: str
    ratio: float
    seconds: float
    median: float
    rate: float | None  # bytes per second, where counted
    rate_median: float | None


@dataclass
class Outlier:
    node: Node
    group: Group
    cost: float  # geometric mean of time / the group's median over the shared benchmarks
    compared: int
    slow: list[Slow]
    differences: list[Difference]

    def headline(self) -> str:
        worst = self.slow[0]
        if worst.rate and worst.rate_median:
            figure = (f"{fmt_si(worst.rate, 'B/s')} against the group's "
                      f"{fmt_si(worst.rate_median, 'B/s')}")
        else:
            figure = f"{fmt_seconds(worst.seconds)} against the group's {fmt_seconds(worst.median)}"
        why = (self.differences[0].cited if self.differences
               else "no fact doctor records differs from the rest of its group")
        if len(self.differences) > 1:
            why += (f"; {len(self.differences) - 1} more differ: "
                    + ", ".join(d.key for d in self.differences[1:]))
        return (f"{self.node.label}: {describe(parse_name(worst.name))} {figure} "
                f"({worst.ratio:.1f}×); {len(self.slow)} of {self.compared} benchmarks slower, "
                f"{self.cost:.2f}× on this work: {why}")


@dataclass
class Group:
    label: str
    nodes: list[Node]
    medians: dict[str, float] = field(default_factory=dict)
    outliers: list[Outlier] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def machines(self) -> int:
        return len({n.machine or n.label for n in self.nodes})


@dataclass
class Fleet:
    root: Path
    nodes: list[Node]
    groups: list[Group]
    outliers: list[Outlier]
    notes: list[str]

    @property
    def problems(self) -> list[Node]:
        return [n for n in self.nodes if n.problems]

    @property
    def machines(self) -> int:
        return len({n.machine or n.label for n in self.nodes})


# ---- grouping -------------------------------------------------------------------------------

def hardware(node: Node) -> str:
    """The group a node belongs in: what it is built of, not how it is set up."""
    parts = []
    if node.fact("gpu.status") == "ok" and node.fact("gpu.name"):
        count = node.fact("gpu.count")
        memory = number(node.fact("gpu.memory_total_bytes"))
        parts.append(("" if count in ("", "1") else f"{count}× ") + node.fact("gpu.name")
                     + (f" {memory / 2**30:.0f} GiB" if memory else ""))
        if node.fact("pcie.gen_max"):
            parts.append(f"PCIe Gen{node.fact('pcie.gen_max')} ×{node.fact('pcie.width_max')}")
    else:
        parts.append("no GPU")
    parts.append(f"{node.fact('cpu.model') or 'CPU unknown'}, {node.fact('cpu.cores') or '?'} "
                 "cores")
    isa = node.fact("cpu.isa").split()
    parts.append(f"up to {isa[-1]}" if isa and isa != ["unknown"] else "instruction set unknown")
    return " · ".join(parts)


def median_or_none(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def numeric_fact(node: Node, key: str) -> float | None:
    """A fact as a number: the load average from the run context, the rest from doctor."""
    return node.load if key == "load_avg" else number(node.fact(key))


def differences(node: Node, counts: dict[str, Counter],
                numbers: dict[str, float | None]) -> list[Difference]:
    """The EXPLAINING facts in which `node` differs from the rest of its group."""
    found = []
    cores = number(node.fact("cpu.cores")) or 1
    for key, device, how, words in EXPLAINING:
        if how == "value":
            value = node.fact(key)
            others = counts[key].copy()
            others[value] -= 1
            common = [v for v, c in others.most_common() if c > 0]
            if common and value != common[0]:
                found.append(Difference(key, words, value, common[0], device))
            continue
        value = numeric_fact(node, key)
        typical = numbers[key]
        if value is None or typical is None:
            continue
        margin = (max(1.0, LOAD_PER_CORE * cores) if key == "load_avg"
                  else NUMBER_DIFFERS * abs(typical))
        if (value < typical - margin) if how == "lower" else (value > typical + margin):
            shown = f"{value:.2f}" if key == "load_avg" else f"{value:g}"
            typical_text = f"{typical:.2f}" if key == "load_avg" else f"{typical:g}"
            found.append(Difference(key, words, shown, f"{typical_text} (median)", device))
    return found


def judge(group: Group, keep: re.Pattern | None) -> None:
    """Sets the group's medians and outliers (MIN_JUDGED runs or more)."""
    names = sorted({name for n in group.nodes for name in n.medians
                    if keep is None or keep.search(name)})
    index = {name: i for i, name in enumerate(names)}
    times = np.full((len(group.nodes), len(names)), np.nan)
    for row, node in enumerate(group.nodes):
        for name, seconds in node.medians.items():
            if name in index:
                times[row, index[name]] = seconds
    counted = np.sum(~np.isnan(times), axis=0)
    if not names:
        return
    with np.errstate(all="ignore"):
        medians = np.nanmedian(times, axis=0)
    group.medians = {name: float(m) for name, m in zip(names, medians) if not np.isnan(m)}
    if len(group.nodes) < MIN_JUDGED:
        return
    usable = counted >= MIN_JUDGED
    times, medians = times[:, usable], medians[usable]
    names = [n for n, u in zip(names, usable) if u]
    if not names:
        return
    with np.errstate(all="ignore"):
        mad = np.nanmedian(np.abs(times - medians), axis=0)
        spread = np.maximum(MAD_TO_SIGMA * mad, SPREAD_FLOOR * medians)
        ratio = times / medians
        slow = ((times - medians) / spread >= SLOW_Z) & (ratio >= SLOW_RATIO)
        # Within the spread a difference is noise: only the slower benchmarks count, the
        # others as 1x, so that a run's lucky benchmarks never hide its slow ones.
        shared = np.sum(~np.isnan(ratio), axis=1)
        costs = np.exp(np.sum(np.where(slow, np.log(ratio), 0.0), axis=1) / np.maximum(shared, 1))
    counts = {key: Counter(n.fact(key) for n in group.nodes)
              for key, _, how, _ in EXPLAINING if how == "value"}
    numbers = {key: median_or_none([v for v in (numeric_fact(n, key) for n in group.nodes)
                                    if v is not None])
               for key, _, how, _ in EXPLAINING if how != "value"}
    rates: dict[str, float | None] = {}  # the group's median bytes per second, as asked

    def rate(name: str) -> float | None:
        if name not in rates:
            rates[name] = median_or_none([n.bytes_per_second[name] for n in group.nodes
                                          if name in n.bytes_per_second])
        return rates[name]

    for row in np.flatnonzero(slow.any(axis=1)):
        node = group.nodes[row]
        found = sorted((Slow(names[c], float(ratio[row, c]), float(times[row, c]),
                             float(medians[c]), node.bytes_per_second.get(names[c]),
                             rate(names[c]) if names[c] in node.bytes_per_second else None)
                        for c in np.flatnonzero(slow[row])), key=lambda s: -s.ratio)
        devices = Counter(parse_name(s.name).device for s in found)
        mostly = devices.most_common(1)[0][0]
        diffs = differences(node, counts, numbers)
        diffs.sort(key=lambda d: d.device not in ("", mostly))  # stable: EXPLAINING's order
        group.outliers.append(Outlier(node, group, float(costs[row]),
                                      int(np.sum(~np.isnan(ratio[row]))), found, diffs))
    group.outliers.sort(key=lambda o: -o.cost)


def build_fleet(root: Path, nodes: list[Node], keep: re.Pattern | None = None) -> Fleet:
    by_hardware: dict[str, list[Node]] = {}
    for node in nodes:
        if node.medians:
            by_hardware.setdefault(hardware(node), []).append(node)
    groups = [Group(label, members) for label, members in
              sorted(by_hardware.items(), key=lambda kv: (-len(kv[1]), kv[0]))]
    notes = []
    for group in groups:
        judge(group, keep)
        runs_of = Counter(n.machine or n.label for n in group.nodes)
        repeated = [m for m, c in runs_of.items() if c > 1]
        if len(group.nodes) == 1:
            group.notes.append("a group of one: it has no median, so it is shown beside the "
                               "others and not judged")
        elif len(group.nodes) < MIN_JUDGED:
            group.notes.append(f"{len(group.nodes)} runs: too few to tell which one is off "
                               f"(it takes {MIN_JUDGED})")
        if repeated:
            group.notes.append(f"{len(repeated)} machine(s) ran more than once (the same "
                               f"machine.id in {sum(runs_of[m] for m in repeated)} folders): "
                               "each run is judged on its own")
        kinds = Counter(f"gapbench {n.fact('gapbench.version')}, {n.fact('gapbench.profile')} "
                        "profile" for n in group.nodes)
        if len(kinds) > 1:
            group.notes.append("different gapbench versions or profiles ("
                               + ", ".join(f"{k}: {c}" for k, c in kinds.most_common())
                               + "): compared only on the benchmark names they share")
    outliers = sorted((o for g in groups for o in g.outliers), key=lambda o: -o.cost)
    if keep is not None:
        notes.append(f"only the benchmarks matching {printable(repr(keep.pattern))} are compared")
    return Fleet(root, nodes, groups, outliers, notes)


# ---- the words ------------------------------------------------------------------------------

def verdict(fleet: Fleet) -> str:
    judged = [g for g in fleet.groups if len(g.nodes) >= MIN_JUDGED]
    if fleet.outliers:
        first = fleet.outliers[0]
        more = len(fleet.outliers) - 1
        return (f"Slowest for this work: {first.headline()}."
                + (f" {more} more run{'s' if more != 1 else ''} stand{'' if more != 1 else 's'}"
                   " out (ranked below)." if more else ""))
    if judged:
        return "No run stands out from its hardware group."
    if fleet.groups:
        return (f"Nothing to judge: no hardware group has {MIN_JUDGED} runs; the groups are "
                "shown side by side.")
    if not fleet.nodes:
        return ("No node has written its folder yet: the job may still be queued "
                "(gapbench-ci fleet status DIR says).")
    return "No node left a usable results file."


def intro(fleet: Fleet) -> str:
    runs = len(fleet.nodes)
    groups = len(fleet.groups)
    return (f"{printable(str(fleet.root))} · {runs} node folder{'s' if runs != 1 else ''} · "
            f"{fleet.machines} machine{'s' if fleet.machines != 1 else ''} · {groups} hardware "
            f"group{'s' if groups != 1 else ''}"
            + (f" · {len(fleet.problems)} with problems" if fleet.problems else ""))


OUTLIER_HEADERS = ["rank", "run", "cost on this work", "slower benchmarks", "worst", "why"]
GROUP_HEADERS = ["hardware group", "runs", "machines", "judged", "note"]
FINDING_HEADERS = ["severity", "finding", "nodes", "text"]
RUN_HEADERS = ["run", "machine.id", "cost", "slower", "load average", "gapbench", "profile"]


def outlier_rows(fleet: Fleet) -> list[list[str]]:
    return [[str(i), o.node.label, f"{o.cost:.2f}×", f"{len(o.slow)} of {o.compared}",
             f"{describe(parse_name(o.slow[0].name))} ({o.slow[0].ratio:.1f}×)",
             o.differences[0].cited if o.differences else "no recorded fact differs"]
            for i, o in enumerate(fleet.outliers, 1)]


def group_rows(fleet: Fleet) -> list[list[str]]:
    return [[g.label, str(len(g.nodes)), str(g.machines),
             (f"yes: {len(g.outliers)} slower" if g.outliers else "yes: none slower")
             if len(g.nodes) >= MIN_JUDGED else "no", "; ".join(g.notes)]
            for g in fleet.groups]


def run_rows(group: Group) -> list[list[str]]:
    by_node = {id(o.node): o for o in group.outliers}
    rows = []
    for n in group.nodes:
        o = by_node.get(id(n))
        rows.append([n.label, n.machine, f"{o.cost:.2f}×" if o else "", str(len(o.slow)) if o
                     else "", f"{n.load:.2f}" if n.load is not None else "",
                     n.fact("gapbench.version"), n.fact("gapbench.profile")])
    return rows


def fact_rows(outlier: Outlier) -> list[list[str]]:
    """Every explaining fact of the run beside the rest of its group's."""
    cited = {d.key: d for d in outlier.differences}
    rows = []
    for key, _, _, _ in EXPLAINING:
        value = (f"{outlier.node.load:.2f}" if key == "load_avg" and outlier.node.load is not None
                 else outlier.node.fact(key))
        if key in cited:
            rows.append([key, cited[key].value or "not set", cited[key].others or "not set",
                         "differs"])
        elif value:
            rows.append([key, value, "the same", ""])
    return rows


def problem_rows(fleet: Fleet) -> list[list[str]]:
    return [[n.label, p] for n in fleet.problems for p in n.problems]


def finding_rows(fleet: Fleet) -> tuple[list[str], list[list[str]]]:
    """(the findings every node has, by id; a row per other finding: severity, id, the nodes
    that have it, its text as the first of them says it)."""
    with_findings = [n for n in fleet.nodes if n.findings]
    nodes: dict[tuple[str, str], list[str]] = {}
    texts: dict[tuple[str, str], str] = {}
    for n in with_findings:
        for severity, ident, text in n.findings:
            nodes.setdefault((severity, ident), []).append(n.label)
            texts.setdefault((severity, ident), text)
    everywhere = sorted(i for (_, i), labels in nodes.items()
                        if len(with_findings) > 1 and len(labels) == len(with_findings))
    rows = [[severity, ident, shortened(labels), texts[(severity, ident)]]
            for (severity, ident), labels in nodes.items() if ident not in everywhere]
    return everywhere, rows


def shortened(labels: list[str], shown: int = 8) -> str:
    more = len(labels) - shown
    return ", ".join(labels[:shown]) + (f" and {more} more" if more > 0 else "")


def with_code(text: str) -> str:
    """Escaped text, its `spans` (a fact's key, as doctor names it) as <code>."""
    return re.sub(r"`([^`]*)`", r"<code>\1</code>", esc(text))


def folded(html_table: str, rows: int, what: str) -> str:
    if rows <= ROWS_SHOWN:
        return html_table
    return f"<details><summary>{rows} {esc(what)}</summary>{html_table}</details>"


def html_report(fleet: Fleet) -> str:
    parts = ["<h1>gapbench fleet report</h1>", f'<p class="meta">{esc(intro(fleet))}</p>',
             '<h2 id="verdict">Verdict</h2>', f'<p class="verdict">{with_code(verdict(fleet))}</p>']
    parts += [f'<p class="note">{esc(n)}</p>' for n in fleet.notes]
    if fleet.problems:
        rows = problem_rows(fleet)
        parts += ['<h2 id="problems">Nodes with problems</h2><p class="blurb">Listed, never '
                  "dropped: what these nodes did write is used below.</p>",
                  folded(table(["node", "problem"], rows, classes=["failed"] * len(rows)),
                         len(rows), "problems")]
    if fleet.outliers:
        rows = outlier_rows(fleet)
        parts += ['<h2 id="outliers">Slower runs, by their cost on this work</h2>'
                  f'<p class="blurb">A benchmark is slower when it is {SLOW_Z:g} robust '
                  f"deviations (median absolute deviation) and {SLOW_RATIO:g}× above its "
                  "group's median; a run's cost is the geometric mean of its time over the "
                  "group's median on the benchmarks it shares with the group, each one within "
                  "the spread counted as 1×.</p>",
                  folded(table(OUTLIER_HEADERS, rows, {0, 2}), len(rows), "slower runs")]
        for i, o in enumerate(fleet.outliers[:ROWS_SHOWN], 1):
            parts.append(f'<h3>{i}. {esc(o.node.label)}</h3><p>{with_code(o.headline())}</p>')
            facts = fact_rows(o)
            parts.append(table(["fact", o.node.label, "the rest of its group", ""], facts,
                               classes=["failed" if r[3] else "" for r in facts]))
            slow = [[describe(parse_name(s.name)), s.name, f"{s.ratio:.2f}×",
                     fmt_seconds(s.seconds), fmt_seconds(s.median)] for s in o.slow]
            parts.append(f"<details><summary>its {len(slow)} slower benchmarks</summary>"
                         + table(["benchmark", "name", "× median", "this run", "group median"],
                                 slow, {2, 3, 4}) + "</details>")
    parts.append('<h2 id="groups">Hardware groups, side by side</h2><p class="blurb">A run is '
                 "compared only with runs of the same hardware; a group of one or two is shown "
                 "and not judged.</p>")
    parts.append(table(GROUP_HEADERS, group_rows(fleet), {1, 2}))
    for g in fleet.groups:
        rows = run_rows(g)
        parts.append(f"<h3>{esc(g.label)}</h3>"
                     + "".join(f'<p class="note">{esc(n)}</p>' for n in g.notes)
                     + folded(table(RUN_HEADERS, rows, {2, 3, 4}), len(rows), "runs"))
    everywhere, rows = finding_rows(fleet)
    parts.append('<h2 id="doctor">doctor\'s findings per node</h2>')
    if everywhere:
        parts.append(f"<p>On every node: {esc(', '.join(everywhere))}.</p>")
    parts.append(folded(table(FINDING_HEADERS, rows), len(rows), "findings") if rows
                 else "<p>No other findings.</p>")
    return page("gapbench fleet report", parts)


def markdown_report(fleet: Fleet) -> str:
    lines = ["# gapbench fleet report", "", md_cell(intro(fleet)), "",
             f"**{md_cell(verdict(fleet))}**", ""]
    lines += [f"> {md_cell(n)}" for n in fleet.notes] + ([""] if fleet.notes else [])
    if fleet.problems:
        lines += ["## Nodes with problems", ""]
        lines += markdown_table(["node", "problem"], problem_rows(fleet)) + [""]
    if fleet.outliers:
        lines += ["## Slower runs, by their cost on this work", ""]
        lines += markdown_table(OUTLIER_HEADERS, outlier_rows(fleet), {0, 2}) + [""]
    lines += ["## Hardware groups", ""]
    lines += markdown_table(GROUP_HEADERS, group_rows(fleet), {1, 2}) + [""]
    everywhere, rows = finding_rows(fleet)
    lines += ["## doctor's findings per node", ""]
    if everywhere:
        lines += [f"On every node: {md_cell(', '.join(everywhere))}.", ""]
    lines += markdown_table(FINDING_HEADERS, rows) if rows else ["No other findings."]
    return "\n".join(lines) + "\n"


def render_fleet(root: Path, out: Path, keep: re.Pattern | None = None) -> Path:
    """Reads DIR, writes summary.md and index.html into `out` together (both from this run, or
    neither written); returns index.html."""
    if out.exists() and not out.is_dir():
        raise ResultsError(f"{out}: exists and is not a directory")
    nodes = read_fleet(node_folders(root, skip=[out]))
    fleet = build_fleet(root, nodes, keep)
    index = out / "index.html"
    # Text from a node passed printable() on its way in; a surrogate left anywhere else (a
    # path given on the command line) is escaped here rather than refused by the encoder.
    write_atomic_together({out / "summary.md": encoded(markdown_report(fleet)),
                           index: encoded(html_report(fleet))})
    return index


def encoded(text: str) -> bytes:
    return text.encode("utf-8", "backslashreplace")


def _parser() -> commandline.Parser:
    p = commandline.parser(PROG, "One page on a fleet: which node is slow for this work, and "
                                 "why (docs/fleet.md).", epilog="")
    p.add_argument("fleet", type=Path, help="the fleet folder: DIR/<host>/ per node")
    p.add_argument("--out", required=True, type=Path, help="the folder to write into")
    p.add_argument("--filter", metavar="REGEX",
                   help="compare only the benchmarks matching REGEX (your kind of work)")
    return p


def _run(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    try:
        keep = re.compile(args.filter) if args.filter else None
    except re.error as e:
        raise commandline.UsageError(f"--filter {args.filter!r}: {e}") from None
    print(printable(str(render_fleet(args.fleet, args.out, keep))))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return commandline.run(PROG, _run, argv, "fleet")


if __name__ == "__main__":
    sys.exit(main())
