"""The same work: what makes two benchmark rows comparable, and the fastest row of each. The one
place both are decided (diagnose's rules, the framework's pairs and the cross-machine ratios all
ask here); what a row computed in is its Benchmark's `math` (results.row_math)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping

from gapbench_report.inputs.results import Benchmark


def work_key(family: str, axes: Mapping[str, str], math: str) -> tuple:
    """The family, the axes other than the math (in any order) and the arithmetic."""
    return family, frozenset(axes.items()), math


def work(b: Benchmark) -> tuple:
    """What makes two variants comparable: work_key of the row. A row that may have used TF32 is
    never one of float32's."""
    return work_key(b.parsed.family, b.parsed.axes_but_math(), b.math)


def fastest_by(benchmarks: Iterable[Benchmark],
               key: Callable[[Benchmark], Hashable] = work) -> dict[Hashable, Benchmark]:
    """The fastest timed benchmark per key (the first one on a tie, as min() picks), in one pass:
    scanning every benchmark for each one that needs its rival took seconds at 5,000."""
    fastest: dict[Hashable, Benchmark] = {}
    for b in benchmarks:
        if b.median:
            k = key(b)
            if k not in fastest or b.median < fastest[k].median:
                fastest[k] = b
    return fastest


# The axis of a row a library ran on one thread ("1") and on more ("all": every CPU online, as a
# library that ignores affinity and quota starts them): the threads family's, and the framework
# probe's rows that carry it.
THREADS_AXIS = "lib_threads"
ONE_THREAD = "1"


def thread_twins(benchmarks: Iterable[Benchmark]) -> list[tuple[Benchmark, Benchmark]]:
    """(the one-thread row, its twin on more threads) for each pair of timed rows whose names
    differ only in THREADS_AXIS."""
    by_work: dict[tuple, dict[str, Benchmark]] = {}
    for b in benchmarks:
        value = b.parsed.axes.get(THREADS_AXIS)
        if value is None or b.status != "ok" or not b.median:
            continue
        rest = frozenset((k, v) for k, v in b.parsed.axes.items() if k != THREADS_AXIS)
        key = (b.parsed.family, b.parsed.variant, b.parsed.device, rest, b.parsed.timing,
               b.parsed.threads)
        by_work.setdefault(key, {})[value] = b
    return [(rows[ONE_THREAD], b) for rows in by_work.values() if ONE_THREAD in rows
            for value, b in rows.items() if value != ONE_THREAD]
