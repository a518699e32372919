"""Timing as Google Benchmark does it for gapbench's CPU variants: real (wall) time, each
repetition a loop of as many calls as fill the profile's minimum time, the count found first by
growing it (which is the warm-up too); then the repetitions, each its own sample."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from gapbench_probe.plan import Profile

MAX_ITERATIONS = 1_000_000_000


@dataclass
class Repetition:
    iterations: int
    real: float  # seconds per call, wall clock
    cpu: float  # seconds per call, this thread's CPU time
    counters: dict[str, float] = field(default_factory=dict)  # measured by the runner


def _timed(call: Callable[[], object], n: int) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.thread_time()
    for _ in range(n):
        call()
    return time.perf_counter() - wall, time.thread_time() - cpu


def iterations_for(call: Callable[[], object], min_time: float) -> int:
    """The calls one repetition makes: grown (at most 10x a round, aiming 40% over, as Google
    Benchmark does) until they take min_time."""
    n = 1
    while True:
        elapsed, _ = _timed(call, n)
        if elapsed >= min_time or n >= MAX_ITERATIONS:
            return n
        grow = min(10.0, 1.4 * min_time / max(elapsed, 1e-9))
        n = min(MAX_ITERATIONS, max(n + 1, math.ceil(n * grow)))


def measure(call: Callable[[], object], profile: Profile,
            runner_counters: Callable[[], dict[str, float]] | None = None,
            reset: Callable[[], None] | None = None) -> list[Repetition]:
    """The profile's repetitions of `call` (already validated and so warmed by one call).
    runner_counters, where given, reads what the runner measured during each repetition
    (after reset())."""
    n = iterations_for(call, profile.min_time)
    reps = []
    for _ in range(profile.repetitions):
        if reset:
            reset()
        wall, cpu = _timed(call, n)
        reps.append(Repetition(n, wall / n, cpu / n, runner_counters() if runner_counters else {}))
    return reps
