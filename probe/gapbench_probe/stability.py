"""The run's CPU accounting, as gapbench writes it into its context (stability.window_s,
own_cpus, other_cpus, steal): what this process, other work and the hypervisor took of the CPUs
while the cases were timed. Each key's meaning: docs/probe.md."""

from __future__ import annotations

import os
import resource
import time
from dataclasses import dataclass
from pathlib import Path

PROC_STAT = Path("/proc/stat")
# The aggregate "cpu" line's fields, in /proc/stat's order. guest and guest_nice, which follow,
# are already inside user and nice: not counted twice.
FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
BUSY = ("user", "nice", "system", "irq", "softirq")


@dataclass(frozen=True)
class CpuTicks:
    """All CPUs' time since boot from /proc/stat, in USER_HZ ticks."""

    busy: int
    steal: int
    total: int


@dataclass(frozen=True)
class Snapshot:
    wall: float  # seconds, monotonic
    own: float  # CPU seconds of this process and its reaped children
    ticks: CpuTicks | None  # None: /proc/stat unreadable


def parse_proc_stat(text: str) -> CpuTicks | None:
    """The aggregate `cpu` line of /proc/stat's text; None where it has none or is malformed."""
    for line in text.splitlines():
        parts = line.split()
        if parts and parts[0] == "cpu":
            try:
                values = dict(zip(FIELDS, (int(v) for v in parts[1:1 + len(FIELDS)])))
            except ValueError:
                return None
            if len(values) < len(FIELDS):  # kernels before 2.6.11 had no steal
                return None
            return CpuTicks(sum(values[f] for f in BUSY), values["steal"], sum(values.values()))
    return None


def read_ticks(path: Path = PROC_STAT) -> CpuTicks | None:
    try:
        return parse_proc_stat(path.read_text(encoding="ascii", errors="replace"))
    except OSError:
        return None


def own_cpu_seconds() -> float:
    seconds = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        seconds += usage.ru_utime + usage.ru_stime
    return seconds


def snapshot(path: Path = PROC_STAT) -> Snapshot:
    return Snapshot(time.monotonic(), own_cpu_seconds(), read_ticks(path))


def accounting(before: Snapshot, after: Snapshot, ticks_per_second: float | None = None
               ) -> dict[str, str]:
    """The stability.* keys over the window between two snapshots, as strings; none where
    either snapshot lacks /proc/stat or the window is empty."""
    window = after.wall - before.wall
    if before.ticks is None or after.ticks is None or window <= 0:
        return {}
    hz = ticks_per_second or os.sysconf("SC_CLK_TCK")
    own = max(0.0, after.own - before.own)
    busy = (after.ticks.busy - before.ticks.busy) / hz
    total = after.ticks.total - before.ticks.total
    steal = (after.ticks.steal - before.ticks.steal) / total if total > 0 else 0.0
    return {"stability.window_s": f"{window:.6g}",
            "stability.own_cpus": f"{own / window:.4g}",
            "stability.other_cpus": f"{max(0.0, busy - own) / window:.4g}",
            "stability.steal": f"{max(0.0, steal):.4g}"}
