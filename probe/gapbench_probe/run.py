"""One framework's run: every case of the profile on each device asked for, each checked against
its float64 reference and then timed, or skipped with the reason, or failed with the error;
then the results document, with the framework's facts in its context.

A framework that raises in one benchmark makes that benchmark an error entry; the others still
run. What was measured is written whole or not at all (gbjson.write_atomic)."""

from __future__ import annotations

import datetime
import os
import platform
import re
import statistics
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np

from gapbench_probe import __version__, problems, stability, threads_child
from gapbench_probe.frameworks.base import Adapter, Unavailable, one_line
from gapbench_probe.gbjson import (
    SKIP_PREFIX,
    aggregate_entries,
    error_entries,
    iteration_entries,
)
from gapbench_probe.machine import cpu_model, driver_cuda_version, source_state
from gapbench_probe.plan import GPU_MATHS, LIB_THREADS, Case, Profile, cases
from gapbench_probe.problems import Problem
from gapbench_probe.timing import measure

SCHEMA = "1"  # gapbench's results schema, which the report reads


@dataclass
class Run:
    """What one framework's run made: the document's context and entries, and a tally."""

    framework: str
    context: dict
    entries: list[dict] = field(default_factory=list)
    timed: int = 0
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> benchmarks
    failed: list[str] = field(default_factory=list)  # "name: message"

    def document(self) -> dict:
        return {"context": self.context, "benchmarks": self.entries}


def selected(adapter: type[Adapter], profile: Profile, devices: Iterable[str],
             pattern: re.Pattern | None) -> list[tuple[Case, str]]:
    """The (case, device) pairs to run, in the families' order, CPU before GPU."""
    devices = tuple(devices)
    return [(c, d) for c in cases(profile) if adapter.supports(c) for d in c.devices
            if d in devices and (pattern is None or pattern.search(c.name(adapter.name, d)))]


def context_of(adapter: type[Adapter], opened: Adapter | None, status: str, gpu_status: str,
               profile: Profile, seed: int, machine: tuple[str, str]) -> dict:
    mid, source = machine
    driver, why = driver_cuda_version()
    commit, tree = source_state()
    try:
        load = list(os.getloadavg())
    except OSError:
        load = []
    context = {
        # Google Benchmark's own keys, as far as they mean something here.
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "host_name": platform.node(), "executable": sys.executable,
        "num_cpus": os.cpu_count() or 0, "load_avg": load,
        # gapbench's, which the report requires.
        "gapbench.schema": SCHEMA, "gapbench.version": __version__,
        "gapbench.profile": profile.name, "gapbench.seed": str(seed),
        "gapbench.probe": f"gapbench-probe {__version__}",
        "gapbench.commit": commit, "gapbench.tree": tree,  # the probe's source, as gapbench's
        "machine.id": mid, "machine.id_source": source,
        "gpu.status": gpu_status,  # the framework's view of the GPU
        "cpu.model": cpu_model(), "cpu.cores": str(os.cpu_count() or 0),
        "cuda.driver_version": driver or "none",  # as gapbench writes it
        "cuda.driver_status": "ok" if driver else why,
        "python.version": platform.python_version(), "numpy.version": np.__version__,
        "framework.name": adapter.name, "framework.status": status,
    }
    if opened is not None:
        try:
            context.update(opened.facts())
        except Exception as e:  # noqa: BLE001 - a fact it cannot give must not cost the run
            context["framework.facts_error"] = one_line(e)
    return context


def pipeline_problem(adapter: Adapter, case: Case, device: str, seed: int) -> Problem:
    """The stage costs calibrated on this machine, as gapbench's pipeline family does: images per
    batch so that the numpy producer takes produce_ms, consumer repeats of the framework's layer
    so that it takes consume_ms."""
    def median_time(fn: Callable[[], object], runs: int) -> float:
        fn()
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        return statistics.median(times)

    one = problems.Producer(seed, 1)
    images = max(1, round(case.number("produce_ms") / 1e3 / median_time(lambda: one(0), 20)))
    producer = problems.Producer(seed, images)
    w = problems.consumer_weights(seed)
    layer = adapter.matmul(device, producer(0).reshape(images, -1), w)
    try:
        repeats = max(1, round(case.number("consume_ms") / 1e3 / median_time(layer.call, 10)))
    finally:
        layer.close()
    return Problem({"producer": producer, "w": w, "repeats": repeats,
                    "depth": case.number("depth"), "workers": case.number("workers")},
                   problems.pipeline_check(producer, w), {"items_per_second": 1},
                   {"images_per_batch": images, "consumer_repeats": repeats})


def problem_of(adapter: Adapter, case: Case, device: str, seed: int) -> Problem:
    if case.op == "pipeline":
        return pipeline_problem(adapter, case, device, seed)
    return problems.BUILDERS[case.op](case, seed)


def time_case(adapter: Adapter, case: Case, device: str, problem: Problem, profile: Profile,
              name: str, index: int) -> list[dict]:
    """Validated, then timed, in the case's arithmetic: the entries of one benchmark (error
    entries where it failed)."""
    op = case.adapter_op
    inputs = {**problem.inputs, "math": case.math} if op in GPU_MATHS else problem.inputs
    with adapter.arithmetic(device, case.math) as arithmetic, \
            adapter.lib_threads(case.lib_threads) as threads:
        runner = getattr(adapter, op)(device, **inputs)
        try:
            result = runner.call()
            wrong = adapter.misplaced(device, result) or problem.check(runner.fetch(result),
                                                                       arithmetic)
            if wrong:
                return error_entries(name, index, profile.repetitions, wrong)
            reps = measure(runner.call, profile, runner.counters, runner.reset)
        finally:
            runner.close()
    constants = problem.constants if threads is None else {**problem.constants,
                                                           LIB_THREADS: threads}
    for rep in reps:
        rep.counters.update(constants)
    entries = iteration_entries(name, index, reps, problem.work)
    return entries + aggregate_entries(entries)


class CaseRunner:
    """Runs one opened framework's cases in turn: each checked and timed, or skipped with the
    reason, or failed with the error; one problem (data and reference) for the cases of a shape
    in a row: both devices, every math and thread count (pipelines calibrate per device)."""

    def __init__(self, opened: Adapter, profile: Profile, seed: int):
        self.opened, self.profile, self.seed = opened, profile, seed
        self.problem: Problem | None = None
        self.problem_key: object = None

    def entries(self, case: Case, device: str, name: str, index: int) -> list[dict]:
        try:
            key = (case, device) if case.op == "pipeline" else case.shape
            if key != self.problem_key:
                self.problem, self.problem_key = None, None  # the last one let go first
                self.problem = problem_of(self.opened, case, device, self.seed)
                self.problem_key = key
            return time_case(self.opened, case, device, self.problem, self.profile, name, index)
        except Unavailable as e:
            return error_entries(name, index, self.profile.repetitions, SKIP_PREFIX + str(e))
        except Exception as e:  # noqa: BLE001 - the framework failed: this benchmark only
            return error_entries(name, index, self.profile.repetitions, one_line(e))


def run_framework(adapter: type[Adapter], devices: Iterable[str], profile: Profile, seed: int,
                  machine: tuple[str, str], pattern: re.Pattern | None = None,
                  say: Callable[[str], None] = print) -> Run:
    todo = selected(adapter, profile, devices, pattern)
    try:
        opened: Adapter | None = adapter.open()
        status = "ok"
    except Unavailable as e:
        opened, status, gpu = None, str(e), str(e)
    else:
        try:
            gpu = opened.gpu_status()
        except Exception as e:  # noqa: BLE001 - its GPU unusable, its CPU still measured
            gpu = f"{adapter.name}'s GPU check failed: {one_line(e)}"
    run = Run(adapter.name, context_of(adapter, opened, status, gpu, profile, seed, machine))
    cases_here = CaseRunner(opened, profile, seed) if opened is not None else None
    # A framework whose threads are fixed once it has started runs its lib_threads cases in a
    # child process per count (threads_child.py), each started on that count.
    children = threads_child.Children(adapter.name, profile, seed, [
        (index, case) for index, (case, _) in enumerate(todo) if case.lib_threads is not None])
    start = stability.snapshot()
    for index, (case, device) in enumerate(todo):
        name = case.name(adapter.name, device)
        skip = status if opened is None else gpu if device == "gpu" and gpu != "ok" else None
        if skip is not None:
            entries = error_entries(name, index, profile.repetitions, SKIP_PREFIX + skip)
        elif case.lib_threads is not None and not opened.threads_in_process:
            entries = children.entries(case, name, index)
        else:
            entries = cases_here.entries(case, device, name, index)
        record(run, name, entries, say)
    if run.timed:  # the CPUs' accounting over the cases, as gapbench's context has it
        run.context.update(stability.accounting(start, stability.snapshot()))
    return run


def record(run: Run, name: str, entries: list[dict], say: Callable[[str], None]) -> None:
    run.entries += entries
    message = entries[0].get("error_message")
    if message is None:
        run.timed += 1
        median = statistics.median(e["real_time"] for e in entries
                                   if e["run_type"] == "iteration")
        say(f"{name}  {median / 1e6:.4g} ms")
    elif message.startswith(SKIP_PREFIX):
        reason = message[len(SKIP_PREFIX):]
        run.skipped[reason] = run.skipped.get(reason, 0) + 1
    else:
        run.failed.append(f"{name}: {message}")
        say(f"{name}  FAILED: {message}")
