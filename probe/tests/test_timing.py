"""Timing and Google Benchmark's JSON: repetitions, aggregates, errors, the atomic write."""

from __future__ import annotations

import json
import time

import pytest

from gapbench_probe import gbjson, timing
from gapbench_probe.plan import Profile


def test_iterations_grow_until_the_minimum_time(monkeypatch):
    """1 ms a call: 1, then 10 (at most 10x a round), then 28 (40% over the 20 ms asked)."""
    rounds = []

    def timed(call, n):
        rounds.append(n)
        return n * 1e-3, 0.0
    monkeypatch.setattr(timing, "_timed", timed)
    assert timing.iterations_for(lambda: None, 0.02) == 28
    assert rounds == [1, 10, 28]


def test_the_real_clock_times_the_calls():
    wall, cpu = timing._timed(lambda: time.sleep(0.002), 3)
    assert wall >= 0.006 and 0 <= cpu < wall


def test_measure_makes_the_profile_repetitions_with_runner_counters():
    resets = []
    reps = timing.measure(lambda: None, Profile("quick", 3, 0.001),
                          lambda: {"idle_fraction": 0.25}, lambda: resets.append(1))
    assert len(reps) == 3 and len(resets) == 3
    assert all(r.iterations >= 1 and r.real > 0 and r.counters == {"idle_fraction": 0.25}
               for r in reps)


def test_entries_and_aggregates_are_google_benchmarks():
    reps = [timing.Repetition(10, 2e-3, 1e-3), timing.Repetition(10, 4e-3, 1e-3)]
    it = gbjson.iteration_entries("framework/torch/cpu/op:matmul/n:4/real_time", 7, reps,
                                  {"flops": 128.0})
    assert [e["repetition_index"] for e in it] == [0, 1]
    assert it[0]["real_time"] == pytest.approx(2e6) and it[0]["time_unit"] == "ns"
    assert it[0]["flops"] == pytest.approx(128 / 2e-3)
    assert it[0]["run_name"] == it[0]["name"] and it[0]["family_index"] == 7
    agg = gbjson.aggregate_entries(it)
    assert [a["aggregate_name"] for a in agg] == ["mean", "median", "stddev", "cv"]
    assert agg[0]["name"] == it[0]["name"] + "_mean" and agg[0]["run_type"] == "aggregate"
    assert agg[1]["real_time"] == pytest.approx(3e6)
    assert agg[3]["aggregate_unit"] == "percentage"
    assert agg[3]["real_time"] == pytest.approx((2**0.5 * 1e6) / 3e6)
    assert gbjson.aggregate_entries(it[:1]) == []  # one repetition: none, as Google Benchmark


def test_error_entries_are_the_skip_form_gapbench_writes():
    entries = gbjson.error_entries("framework/torch/gpu/op:matmul/n:4/real_time", 0, 2,
                                   "skipped: no GPU")
    assert len(entries) == 2
    assert entries[0]["error_occurred"] is True and entries[0]["error_message"] == "skipped: no GPU"
    assert entries[0]["iterations"] == 0 and entries[0]["real_time"] == 0.0


def test_write_atomic_keeps_the_old_file_when_writing_fails(tmp_path, monkeypatch):
    path = tmp_path / "framework-torch.json"
    gbjson.write_atomic(path, {"old": True})

    def broken(*args, **kwargs):
        raise OSError("disk full")
    monkeypatch.setattr(gbjson.os, "replace", broken)
    with pytest.raises(OSError):
        gbjson.write_atomic(path, {"new": True})
    assert json.loads(path.read_text()) == {"old": True}
    assert [p.name for p in tmp_path.iterdir()] == ["framework-torch.json"]  # no temp left
