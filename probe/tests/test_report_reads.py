"""The probe's file as the report reads it: loaded, checked clean with --family framework. Needs
the report package (gapbench_report, in ci/setup's .venv); skips in a Python without it."""

from __future__ import annotations

import pytest

from gapbench_probe.gbjson import write_atomic
from gapbench_probe.run import run_framework
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
