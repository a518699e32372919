"""The fleet report's judging: which node of a fleet is slow for this work, and why.

DIR holds one folder per node (gapbench_report.inputs.fleet). The nodes are grouped by their
hardware (GPU name, count and memory, the link they can train at, CPU model, cores and
instruction set), so that an H100 is never an outlier for not being an H200. Within a group of
at least MIN_JUDGED runs, every benchmark is set against the group's median, robustly: a run is
slow on a benchmark when it is SLOW_Z robust deviations (1.4826 x the median absolute deviation,
at least SPREAD_FLOOR of the median) and SLOW_RATIO above the median. The runs with slow
benchmarks are ranked by their cost on this work (the geometric mean of time / group median
over the benchmarks a run shares with its group, a benchmark within the spread counted as 1),
and each is explained by the facts in which it differs from the rest of its group: doctor's
facts and the run context's load average (core.facts). The page: fleet.page; how to read it:
docs/fleet.md.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from gapbench_report.core.facts import Difference, Facts, Usual, differences
from gapbench_report.core.metrics import median_or_none, number
from gapbench_report.inputs.fleet import Node, printable
from gapbench_report.inputs.results import parse_name

MIN_JUDGED = 3  # runs a group needs before one of them can be told from the others
SLOW_Z = 3.5  # robust deviations above the group's median
SLOW_RATIO = 1.2  # and at least this many times the median
SPREAD_FLOOR = 0.05  # the spread is never taken below 5% of the median (runs that agree closely)
MAD_TO_SIGMA = 1.4826  # the MAD of a normal distribution times this is its standard deviation


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
    facts: Facts  # the run's explaining facts, for the page to set beside its group's


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
    facts = [Facts.of(n.fact, n.load) for n in group.nodes]
    usual = Usual.of(facts)
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
        diffs = differences(facts[row], usual.without(facts[row]), device=mostly)
        group.outliers.append(Outlier(node, group, float(costs[row]),
                                      int(np.sum(~np.isnan(ratio[row]))), found, diffs,
                                      facts[row]))
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
