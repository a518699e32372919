"""A whole framework run with the fake framework: names, timing entries, skips with their
reasons, and failures that stay in their own benchmark."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from gapbench_probe import problems, stability, threads_child
from gapbench_probe import run as run_module
from gapbench_probe.frameworks import ADAPTERS
from gapbench_probe.machine import source_state
from gapbench_probe.plan import ADAPTER_OPS
from gapbench_probe.run import run_framework
from tests.fake_framework import USER_THREADS, case, fake

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
    assert run.skipped == {reason: len({e["name"] for e in gpu})}


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
        # The fake's faults are its adapter's ops: op:lstm_step is lstm's too.
        ops = {ADAPTER_OPS.get(name_op, name_op)
               for name_op in re.findall(r"/op:([a-z_]+)/", " ".join(run.failed))}
        assert run.failed and ops == {op}, (op, run.failed)


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
        "framework/torch/gpu/op:matmul/n:4/real_time",
        "framework/torch/gpu/op:matmul/n:48/math:bf16/real_time"]


MATHS = [case("matmul", ("n", 48)),
         *(case("matmul", ("n", 48), ("math", m), devices=("gpu",))
           for m in ("tf32", "fp16", "bf16")),
         case("lstm", ("scope", "seq"), ("batch", 4), ("input", 8), ("hidden", 16), ("steps", 20)),
         *(case("lstm", ("scope", "seq"), ("batch", 4), ("input", 8), ("hidden", 16),
                ("steps", 20), ("math", m), devices=("gpu",)) for m in ("tf32", "fp16")),
         case("conv", ("n", 2), ("c", 16), ("hw", 9), ("k", 4), ("r", 3), ("stride", 1),
              ("pad", 1)),
         *(case("conv", ("n", 2), ("c", 16), ("hw", 9), ("k", 4), ("r", 3), ("stride", 1),
                ("pad", 1), ("math", m), devices=("gpu",)) for m in ("tf32", "fp16"))]


def test_each_math_runs_in_its_arithmetic_and_is_checked_in_it(tiny, monkeypatch):
    """A framework whose TF32 is on by default (TensorFlow's is): the probe switches it off for
    the float32 GPU cases and on for math:tf32 only, and every case passes its own check."""
    monkeypatch.setattr(run_module, "cases", lambda profile: MATHS)
    made = []
    adapter = type("Recording", (fake("tensorflow"),), {
        "open": classmethod(lambda cls: made.append(cls(None)) or made[-1])})
    run = probe(adapter, tiny)
    assert run.timed == 3 * 2 + 7 and not run.failed, run.failed
    # per GPU case (the CPU's computes float32 as it is): matmul's four, lstm's three, conv's
    assert made[0].tf32_calls == [False, True, False, False, False, True, False,
                                  False, True, False]
    assert made[0].tf32_on  # the framework's own setting, back


def test_a_framework_left_in_tf32_fails_its_float32_gpu_cases(tiny, monkeypatch):
    """Were the probe's switch ignored, TF32 figures would be labelled float32: the check
    catches it, and the TF32 and half cases still pass."""
    monkeypatch.setattr(run_module, "cases", lambda profile: MATHS)
    run = probe(fake("tensorflow", switchable=False), tiny)
    failed = {f.split(": ", 1)[0]: f.split(": ", 1)[1] for f in run.failed}
    assert sorted(failed) == sorted(c.name("tensorflow", "gpu") for c in MATHS
                                    if c.math == "fp32"), run.failed
    assert all(message.startswith("validation failed: ") for message in failed.values())


def test_a_math_the_gpu_lacks_is_a_skip_in_gapbench_words(tiny, monkeypatch):
    monkeypatch.setattr(run_module, "cases", lambda profile: MATHS)
    run = probe(fake(capability=(7, 5)), tiny)  # a T4: float16 tensor cores, no TF32 nor bf16
    assert run.skipped == {"TF32 tensor cores need compute capability 8.0, this GPU is 7.5": 3,
                           "bf16 tensor cores need compute capability 8.0, this GPU is 7.5": 1}
    assert not run.failed and run.timed == 3 * 2 + 3


def test_the_maths_of_a_shape_share_its_data(tiny, monkeypatch):
    monkeypatch.setattr(run_module, "cases", lambda profile: MATHS)
    built = []
    for op in ("matmul", "lstm", "conv"):
        monkeypatch.setitem(problems.BUILDERS, op, lambda c, seed, build=problems.BUILDERS[op]:
                            built.append(c.name("x", "gpu")) or build(c, seed))
    probe(fake(), tiny)
    assert len(built) == 3 and not [n for n in built if "math:" in n]


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


THREADS_STEP = "framework/torch/cpu/op:lstm_step/batch:2/input:3/hidden:4/lib_threads:{}/real_time"


def test_the_threads_twins_run_on_one_thread_and_every_cpu_then_the_users_setting(tiny,
                                                                                  monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 6)  # lib_threads:all, every CPU online
    adapter = fake()
    reps = runs_of(probe(adapter, tiny, devices=("cpu",)))
    assert {e["lib_threads"] for e in reps[THREADS_STEP.format(1)]} == {1}
    assert {e["lib_threads"] for e in reps[THREADS_STEP.format("all")]} == {6}
    assert adapter.opened.threads_seen == [1, 6]
    assert adapter.opened.threads == USER_THREADS
    # Rows without lib_threads keep the user's setting and carry no such counter.
    assert not [n for n, r in reps.items() if "lib_threads" in r[0] and "lib_threads:" not in n]


def test_a_threads_twin_that_fails_still_puts_the_users_setting_back(tiny):
    adapter = fake(lstm="raise")
    run = probe(adapter, tiny, devices=("cpu",))
    assert [f for f in run.failed if "/op:lstm_step/" in f]
    assert adapter.opened.threads_seen == [1, os.cpu_count()]
    assert adapter.opened.threads == USER_THREADS


def test_the_context_has_the_runs_cpu_accounting(tiny):
    context = probe(fake(), tiny, devices=("cpu",)).context
    if not stability.read_ticks():
        pytest.skip("no /proc/stat here")
    keys = ("stability.window_s", "stability.own_cpus", "stability.other_cpus",
            "stability.steal")
    assert all(isinstance(context[k], str) and float(context[k]) >= 0 for k in keys)
    assert float(context["stability.window_s"]) > 0


def test_a_run_that_timed_nothing_has_no_cpu_accounting(tiny, monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "gapbench_probe_fake_framework", None)
    context = probe(fake(), tiny, devices=("cpu",)).context
    assert not [k for k in context if k.startswith("stability.")]


def in_a_child(monkeypatch, adapter) -> list[dict]:
    """The child processes answered here: the fake registered under its name, as the child
    finds the real adapters; returns the requests they were sent."""
    monkeypatch.setitem(ADAPTERS, adapter.name, adapter)
    requests = []

    def spawn(request):
        requests.append(request)
        return json.dumps(threads_child.answer(json.loads(json.dumps(request))))
    monkeypatch.setattr(threads_child, "spawn", spawn)
    return requests


def test_a_framework_with_fixed_threads_runs_its_twins_in_a_child_per_count(tiny, monkeypatch):
    adapter = fake("tensorflow", threads_in_process=False)
    requests = in_a_child(monkeypatch, adapter)
    run = probe(adapter, tiny, devices=("cpu",))
    reps = runs_of(run)
    step = THREADS_STEP.replace("torch", "tensorflow")
    one, every = reps[step.format(1)], reps[step.format("all")]
    assert [(r["lib_threads"], [c[0] for c in r["cases"]]) for r in requests] == [
        (1, [one[0]["family_index"]]), (os.cpu_count(), [every[0]["family_index"]])]
    assert {e["lib_threads"] for e in one} == {1}
    assert {e["lib_threads"] for e in every} == {os.cpu_count()}
    assert list(reps)[-2:] == [step.format(1), step.format("all")]  # in the run's order
    assert not run.failed and run.timed == len(reps)
    parent, *children = adapter.instances
    assert parent.threads_seen == []  # the parent's framework never changed its threads
    # Each child's set before its first op (and kept by its case).
    assert [child.threads_seen[0] for child in children] == [1, os.cpu_count()]


@pytest.mark.parametrize("fault, message", [
    (subprocess.SubprocessError("ImportError: no module named tensorflow"),
     "ImportError: no module named tensorflow"),
    (subprocess.TimeoutExpired("python", 600), "it ran past 600 s"),
    (None, "its reply has no entries for it")])
def test_a_child_that_fails_fails_its_cases_only(tiny, monkeypatch, fault, message):
    adapter = fake("tensorflow", threads_in_process=False)

    def spawn(request):
        if fault:
            raise fault
        return json.dumps({"entries": {}})
    monkeypatch.setattr(threads_child, "spawn", spawn)
    run = probe(adapter, tiny, devices=("cpu",))
    assert run.failed == [f"{THREADS_STEP.replace('torch', 'tensorflow').format(count)}: the "
                          f"child process on lib_threads:{n} failed: {message}"
                          for count, n in (("1", 1), ("all", os.cpu_count()))]
    assert run.timed == len(runs_of(run)) - 2


def test_a_real_child_process_answers(tmp_path):
    """The request and the reply through a real child process (the fake framework registered
    there by a stand-in for `python -m gapbench_probe.threads_child`)."""
    script = ("import sys; from tests import fake_framework as f; f.install_module(); "
              "from gapbench_probe.frameworks import ADAPTERS; "
              "ADAPTERS['tensorflow'] = f.fake('tensorflow', threads_in_process=False); "
              "from gapbench_probe import threads_child; answer = threads_child.answer; "
              "threads_child.answer = lambda r: (print('the framework chatters'), answer(r))[1]; "
              "sys.exit(threads_child.main())")
    step = case("lstm_step", ("batch", 2), ("input", 3), ("hidden", 4), ("lib_threads", 1),
                devices=("cpu",))
    request = threads_child.request_of("tensorflow", 1, run_module.Profile("quick", 2, 0.001), 42,
                                       [(7, step)])
    old = threads_child.COMMAND
    threads_child.COMMAND = [sys.executable, "-c", script]
    try:
        reply = json.loads(threads_child.spawn(request))["entries"]
    finally:
        threads_child.COMMAND = old
    (entries,) = reply.values()
    assert [e["lib_threads"] for e in entries if e["run_type"] == "iteration"] == [1, 1]
    assert entries[0]["family_index"] == 7
