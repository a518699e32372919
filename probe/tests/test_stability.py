"""The run's CPU accounting (stability.*) from two snapshots of /proc/stat and of this process's
CPU time, as gapbench computes it."""

from __future__ import annotations

import pytest

from gapbench_probe import stability
from gapbench_probe.stability import CpuTicks, Snapshot

# /proc/stat's aggregate line: user nice system idle iowait irq softirq steal guest guest_nice
BEFORE = "cpu  1000 10 300 5000 40 5 5 20 0 0\ncpu0 500 5 150 2500 20 2 3 10 0 0\nintr 1 2\n"
AFTER = "cpu  1400 10 380 5100 40 10 5 60 30 0\ncpu0 700 5 190 2550 20 5 3 30 15 0\nintr 3 4\n"


def test_the_keys_from_two_snapshots():
    # Over 2 s at 100 ticks a second: busy 400 + 0 + 80 + 5 + 0 = 485 ticks = 4.85 CPU s, of
    # which the process's own 1.5 s; steal 40 of 625 ticks in all (guest is inside user).
    before = Snapshot(10.0, 3.0, stability.parse_proc_stat(BEFORE))
    after = Snapshot(12.0, 4.5, stability.parse_proc_stat(AFTER))
    keys = stability.accounting(before, after, ticks_per_second=100)
    assert keys == {"stability.window_s": "2", "stability.own_cpus": "0.75",
                    "stability.other_cpus": "1.675", "stability.steal": "0.064"}


def test_other_work_is_never_below_zero():
    # Rounding to whole ticks can leave the CPUs' busy time under the process's own.
    before = Snapshot(0.0, 0.0, CpuTicks(busy=0, steal=0, total=0))
    after = Snapshot(1.0, 1.05, CpuTicks(busy=100, steal=0, total=200))
    keys = stability.accounting(before, after, ticks_per_second=100)
    assert keys["stability.other_cpus"] == "0" and keys["stability.own_cpus"] == "1.05"


@pytest.mark.parametrize("text", ["", "intr 1 2\n", "cpu  1 2 x 4 5 6 7 8\n", "cpu  1 2 3 4\n"])
def test_a_proc_stat_without_a_readable_cpu_line_gives_no_keys(text):
    assert stability.parse_proc_stat(text) is None
    before = Snapshot(0.0, 0.0, stability.parse_proc_stat(text))
    after = Snapshot(1.0, 0.5, CpuTicks(100, 0, 200))
    assert stability.accounting(before, after, ticks_per_second=100) == {}


def test_an_unreadable_proc_stat_gives_no_keys(tmp_path):
    missing = tmp_path / "stat"
    assert stability.snapshot(missing).ticks is None
    assert stability.accounting(stability.snapshot(missing), stability.snapshot(missing)) == {}


def test_own_cpu_time_counts_this_process_busy():
    before = stability.own_cpu_seconds()
    total = 0
    for i in range(2_000_000):
        total += i
    assert stability.own_cpu_seconds() > before
