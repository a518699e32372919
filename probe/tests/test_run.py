"""A whole framework run with the fake framework: names, timing entries, skips with their
reasons, and failures that stay in their own benchmark."""

from __future__ import annotations

import re

import pytest

from gapbench_probe.machine import source_state
from gapbench_probe.run import run_framework
from tests.fake_framework import fake

MACHINE = ("abc123", "gapbench doctor")


def probe(adapter, tiny, devices=("cpu", "gpu"), pattern=None):
    return run_framework(adapter, devices, tiny, 42, MACHINE, pattern, say=lambda line: None)


def runs_of(run) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for e in run.entries:
        if e["run_type"] == "iteration":
            out.setdefault(e["name"], []).append(e)
    return out


def test_every_case_runs_on_each_device_under_gapbench_names(tiny):
    run = probe(fake("tensorflow"), tiny)
    names = list(runs_of(run))
    assert "framework/tensorflow/cpu/op:conv/n:1/c:2/hw:5/k:2/r:3/stride:1/pad:1/real_time" in names
    assert "framework/tensorflow/gpu/op:copy/dir:h2d/memory:pinned/bytes:64/real_time" in names
    assert not [n for n in names if "/cpu/op:copy/" in n]
    assert run.timed == len(names) and not run.failed and not run.skipped
    for name, reps in runs_of(run).items():
        assert [e["repetition_index"] for e in reps] == [0, 1], name
        assert all(e["real_time"] > 0 and e["iterations"] >= 1 for e in reps), name
    aggregates = [e["aggregate_name"] for e in run.entries if e["run_type"] == "aggregate"]
    assert aggregates[:4] == ["mean", "median", "stddev", "cv"]


def test_counters_are_rates_as_gapbench_writes_them(tiny):
    reps = runs_of(probe(fake(), tiny, devices=("cpu",)))
    conv = reps["framework/torch/cpu/op:conv/n:1/c:2/hw:5/k:2/r:3/stride:1/pad:1/real_time"][0]
    flops = 2.0 * 1 * 2 * 2 * 3 * 3 * 5 * 5  # 2·n·k·c·r·s·p·q
    assert conv["flops"] == pytest.approx(flops / (conv["real_time"] * 1e-9))
    pipe = reps["framework/torch/cpu/op:pipeline/produce_ms:0/consume_ms:0/depth:0/workers:1/"
                "real_time"][0]
    assert 0 <= pipe["idle_fraction"] <= 1 and pipe["images_per_batch"] >= 1
    assert pipe["items_per_second"] > 0


def test_context_records_the_framework_and_the_machine(tiny):
    context = probe(fake(), tiny, devices=("cpu",)).context
    assert context["gapbench.schema"] == "1" and context["gapbench.profile"] == "quick"
    assert context["machine.id"] == "abc123"
    assert context["framework.name"] == "torch" and context["framework.status"] == "ok"
    assert context["framework.version"] == "1.2.3" and context["gpu.status"] == "ok"
    assert "cuda.driver_version" in context and "gapbench.seed" in context
    # The probe's source, as gapbench's own context records it.
    assert (context["gapbench.commit"], context["gapbench.tree"]) == source_state()


def test_no_framework_every_entry_is_a_skip_with_the_reason(tiny, monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "gapbench_probe_fake_framework", None)
    run = probe(fake("torch"), tiny)
    messages = {e["error_message"] for e in run.entries}
    assert len(messages) == 1
    message = messages.pop()
    assert re.fullmatch(r"skipped: torch is not installed in this Python \(.+\)", message)
    assert run.timed == 0 and not run.failed
    assert run.context["framework.status"].startswith("torch is not installed")
    assert run.context["gpu.status"] == run.context["framework.status"]


def test_no_gpu_skips_the_gpu_variants_with_the_reason(tiny):
    reason = "torch 2.9.0 built for CUDA 13.0; the driver supports 12.4"
    run = probe(fake("torch", gpu=reason), tiny)
    gpu = [e for e in run.entries if "/gpu/" in e["name"]]
    assert gpu and {e["error_message"] for e in gpu} == {f"skipped: {reason}"}
    assert not [e for e in run.entries if "/cpu/" in e["name"] and e.get("error_occurred")]
    assert run.skipped == {reason: len(runs_of(run)) // 2 + 1}  # + the GPU-only copy


def test_a_wrong_result_is_a_failure_never_a_figure(tiny):
    run = probe(fake(conv="wrong"), tiny, devices=("cpu",))
    conv = [e for e in run.entries if "op:conv" in e["name"]]
    assert conv and all(e.get("error_occurred") for e in conv)
    assert conv[0]["error_message"].startswith("validation failed: conv output[")
    assert not [e for e in conv if e["run_type"] == "aggregate"]
    assert len(run.failed) == 1 and run.timed > 0


def test_wrong_results_of_every_op_are_caught(tiny):
    for op in ("sumsq", "image", "lstm", "matmul", "dense", "copy"):
        run = probe(fake(**{op: "wrong"}), tiny, devices=("cpu", "gpu"))
        assert run.failed and all(f"op:{op}/" in f for f in run.failed), (op, run.failed)


def test_a_framework_that_raises_mid_run_fails_that_benchmark_only(tiny):
    run = probe(fake(dense="raise"), tiny, devices=("cpu",))
    dense = [e for e in run.entries if "op:dense" in e["name"]]
    assert {e["error_message"] for e in dense} == {
        "RuntimeError: dense kernel crashed second line of the error"}
    assert run.timed == len(runs_of(run)) - 1  # the others ran


def test_an_unavailable_feature_is_a_skip(tiny):
    run = probe(fake(lstm="unavailable"), tiny, devices=("cpu",))
    lstm = [e for e in run.entries if "op:lstm" in e["name"]]
    assert {e["error_message"] for e in lstm} == {
        "skipped: fake.compile does not work here: no compiler"}
    assert not run.failed


def test_filter_picks_benchmarks_by_name(tiny):
    run = probe(fake(), tiny, pattern=re.compile(r"/gpu/op:(matmul|copy)/"))
    assert sorted(runs_of(run)) == [
        "framework/torch/gpu/op:copy/dir:h2d/memory:pinned/bytes:64/real_time",
        "framework/torch/gpu/op:matmul/n:4/real_time"]


def test_a_framework_whose_facts_or_gpu_check_raise_still_runs_on_the_cpu(tiny):
    def broken(self):
        raise RuntimeError("CUDA driver initialization failed")
    adapter = type("Broken", (fake("torch"),), {"facts": broken, "gpu_status": broken})
    run = probe(adapter, tiny)
    assert run.context["framework.facts_error"] == (
        "RuntimeError: CUDA driver initialization failed")
    assert run.context["gpu.status"] == (
        "torch's GPU check failed: RuntimeError: CUDA driver initialization failed")
    assert run.timed == len([n for n in runs_of(run) if "/cpu/" in n]) and not run.failed


def test_a_gpu_result_computed_elsewhere_is_a_failure_never_a_figure(tiny):
    def misplaced(self, device, result):
        return "computed it on the CPU, not on the GPU" if device == "gpu" else None
    adapter = type("SoftPlaced", (fake("tensorflow"),), {"misplaced": misplaced})
    run = probe(adapter, tiny)
    gpu = [e for e in run.entries if "/gpu/" in e["name"]]
    assert gpu and {e.get("error_message") for e in gpu} == {
        "computed it on the CPU, not on the GPU"}
    assert run.timed == len([n for n in runs_of(run) if "/cpu/" in n])
