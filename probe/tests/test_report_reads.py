"""The probe's file as the report reads it: loaded, checked clean with --family framework. Needs
the report package (gapbench_report, in ci/setup's .venv); skips in a Python without it."""

from __future__ import annotations

import re

import pytest

from gapbench_probe.gapbench_list import listed
from gapbench_probe.gbjson import iteration_entries, write_atomic
from gapbench_probe.plan import Profile
from gapbench_probe.run import run_framework
from gapbench_probe.timing import Repetition
from tests.fake_framework import fake

report_results = pytest.importorskip("gapbench_report.inputs.results")
check = pytest.importorskip("gapbench_report.check.command")


@pytest.mark.parametrize("gpu", ["ok", "torch 2.9.0 is a CPU-only build (no CUDA)"])
def test_the_report_loads_and_checks_the_file(tmp_path, tiny, gpu):
    run = run_framework(fake("torch", gpu=gpu), ("cpu", "gpu"), tiny, 42,
                        ("m", "t"), say=lambda line: None)
    path = tmp_path / "framework-torch.json"
    write_atomic(path, run.document())
    results = report_results.load_results(path)
    assert check.problems(results, "framework") == []
    statuses = {b.status for b in results.benchmarks().values()}
    assert statuses == ({"ok"} if gpu == "ok" else {"ok", "skipped"})
    conv = results.benchmarks()[
        "framework/torch/cpu/op:conv/n:1/c:2/hw:5/k:2/r:3/stride:1/pad:1/real_time"]
    assert conv.parsed.family == "framework" and conv.parsed.variant == "torch"
    assert len(conv.samples) == 2 and set(conv.aggregates) == {"mean", "median", "stddev", "cv"}


def test_the_threads_twins_pair_with_the_rows_gapbench_lists(tmp_path):
    """Each lib_threads case of the probe's plan, as the report pairs it (core/framework.py's
    TWINS), with gapbench's threads row of the same op, shape and count, from gapbench's list."""
    twins = pytest.importorskip("gapbench_report.core.framework")
    run = run_framework(fake("torch"), ("cpu",), Profile("quick", 2, 0.001), 42, ("m", "t"),
                        re.compile("/lib_threads:"), say=lambda line: None)
    gapbench = ["/".join([b.family, b.variant, b.device, *(f"{k}:{v}" for k, v in b.axes),
                          "real_time"]) for b in listed("quick") if b.family == "threads"]
    reps = [Repetition(1, 1e-3, 1e-3)] * 2
    library = {"context": {"gapbench.schema": "1", "gapbench.version": "0", "machine.id": "m",
                           "gapbench.profile": "quick", "gapbench.seed": "42",
                           "gpu.status": "ok"},
               "benchmarks": [e for i, name in enumerate(gapbench)
                              for e in iteration_entries(name, i, reps, {})]}
    write_atomic(tmp_path / "threads.json", library)
    write_atomic(tmp_path / "framework-torch.json", run.document())
    benchmarks = [b for path in ("threads.json", "framework-torch.json")
                  for b in report_results.load_results(tmp_path / path).benchmarks().values()]
    found = {p.framework.name: p.library.name for p in twins.pairs(benchmarks)}
    assert run.timed == len(found) == len(gapbench) == 8
    for probe_name, gapbench_name in found.items():
        assert probe_name.split("/")[3:] == gapbench_name.split("/")[3:], probe_name
