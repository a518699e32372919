"""Every diagnosis rule: it fires on data that shows its cause, quoting the numbers, and stays
silent on data that does not."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from gapbench_report.core.metrics import crossover, pipeline_ideal, run_metrics
from gapbench_report.diagnose.rules import diagnose, verdict
from gapbench_report.inputs.results import load_results
from tests.synthetic import in_memory, runs, skipped

MiB = 2**20


def rules_fired(entries, **context) -> dict[str, str]:
    return {f.rule: f.text for f in diagnose([in_memory(entries, **context)])}


def sumsq(variant, device, seconds, **counters):
    timing = "manual_time" if device == "gpu" else "real_time"
    return runs(f"preprocess/{variant}/{device}/op:sumsq/rows:1000000/cols:100/{timing}",
                [seconds] * 3, **counters)


def copy(memory, direction, mode, size, gbps):
    name = f"transfer/{memory}/gpu/dir:{direction}/mode:{mode}/bytes:{size}/manual_time"
    return runs(name, [size / (gbps * 1e9)] * 3, bytes_per_second=[gbps * 1e9] * 3)


def test_quiet_machine_has_no_findings():
    assert rules_fired(sumsq("vectorized", "cpu", 0.03) + sumsq("elementwise", "cpu", 0.06)) == {}


def findings_context(**found: tuple[str, str]) -> dict[str, str]:
    """A context carrying doctor's findings, as gapbench writes them."""
    return {f"finding.{rule}": f"{severity}: {text}" for rule, (severity, text) in found.items()}


def test_machine_findings_are_quoted_from_the_context():
    context = findings_context(
        no_gpu=("info", "No usable GPU: no CUDA device (cudaErrorNoDevice)."),
        gpu_throttled=("warning", "The GPU reports its clocks held down by SwPowerCap."),
        something_new=("problem", "A rule this report does not know yet: quoted all the same."))
    found = {f.rule: f for f in diagnose([in_memory([], **context)])}
    assert found["no_gpu"].severity == "info" and "no CUDA device" in found["no_gpu"].text
    assert found["gpu_throttled"].title == "GPU clocks throttled"
    assert found["something_new"].severity == "problem"
    assert found["something_new"].title == "Something new"


def test_machine_facts_alone_are_not_judged_again():
    """The rules live in gapbench (doctor's); a file whose context has the facts but no
    findings (one written before findings were carried) gets none made up here."""
    assert rules_fired([], **{"gpu.status": "no CUDA device", "gpu.throttle_reasons": "SwPowerCap",
                              "cuda.driver_version": "12.4", "cuda.runtime_version": "13.0",
                              "cpu.governor": "powersave", "pcie.gen_current": "1",
                              "pcie.gen_max": "4"}) == {}


def test_a_malformed_finding_is_ignored():
    assert rules_fired([], **{"finding.odd": "no severity here",
                              "finding.unknown": "urgent: not a severity"}) == {}


def test_memory_skips_quote_the_need():
    fired = rules_fired(skipped("transfer/pinned/gpu/dir:h2d/mode:sync/bytes:268435456",
                                "needs 12.0 GiB, 3.1 GiB free"))
    assert "needs 12.0 GiB, 3.1 GiB free" in fired["memory_skips"]
    assert "memory_skips" not in rules_fired(
        skipped("transfer/pinned/gpu/dir:h2d/mode:sync/bytes:4096", "no CUDA device"))


def test_pageable_much_slower_than_pinned():
    entries = copy("pinned", "h2d", "sync", 64 * MiB, 24.0) + copy(
        "pageable", "h2d", "sync", 64 * MiB, 6.0)
    text = rules_fired(entries)["pageable_vs_pinned"]
    assert "64 MiB" in text and "24.0 GB/s" in text and "4.0x" in text
    close = copy("pinned", "h2d", "sync", 64 * MiB, 24.0) + copy(
        "pageable", "h2d", "sync", 64 * MiB, 20.0)
    assert "pageable_vs_pinned" not in rules_fired(close)


def test_link_downgraded_and_transfer_far_under_the_link():
    fired = rules_fired(copy("pinned", "h2d", "async", 64 * MiB, 5.0),
                        **{"pcie.gen_current": "3", "pcie.gen_max": "4", "pcie.width_current": "8",
                           "pcie.width_max": "16", "pcie.bandwidth_max_gbps": "31.5"})
    assert "5.0 GB/s" in fired["transfer_under_link"] and "16%" in fired["transfer_under_link"]
    fine = rules_fired(copy("pinned", "h2d", "async", 64 * MiB, 25.0),
                       **{"pcie.gen_current": "4", "pcie.gen_max": "4", "pcie.width_current": "16",
                          "pcie.width_max": "16", "pcie.bandwidth_max_gbps": "31.5"})
    assert fine == {}


def test_elementwise_far_behind_vectorized():
    fired = rules_fired(sumsq("elementwise", "cpu", 0.24) + sumsq("vectorized", "cpu", 0.03))
    assert "8.0x" in fired["elementwise_vs_vectorized"]


def test_naive_far_behind_the_library():
    shape = "n:32/c:64/hw:56/k:64/r:3"
    entries = runs(f"conv/naive/gpu/{shape}/manual_time", [0.2] * 3) + runs(
        f"conv/cudnn/gpu/{shape}/math:fp32/manual_time", [0.004] * 3)
    assert "50.0x the time of cudnn, both in float32" in rules_fired(entries)["naive_vs_library"]
    other = runs("conv/naive/gpu/n:8/c:64/hw:112/k:128/r:3/manual_time", [0.4] * 3) + runs(
        "conv/cudnn/gpu/n:8/c:64/hw:112/k:128/r:3/math:fp32/manual_time", [0.01] * 3)
    findings = [f for f in diagnose([in_memory(entries + other)]) if f.rule == "naive_vs_library"]
    assert len(findings) == 1 and "On 2 shape(s)" in findings[0].text
    close = runs(f"conv/naive/gpu/{shape}/manual_time", [0.02] * 3) + runs(
        f"conv/cudnn/gpu/{shape}/math:fp32/manual_time", [0.004] * 3)
    assert "naive_vs_library" not in rules_fired(close)


def test_naive_float32_is_never_set_against_a_library_row_that_may_use_tf32():
    """The H100's files: cuDNN's unmarked row (its default math, TF32 there) took 90 µs, its
    float32 row 152 µs, the naive float32 kernel 2.41 ms: 15.8x, not 26.7x. On a GPU before
    8.0 the unmarked row is float32 and stands for cuDNN."""
    shape = "n:32/c:64/hw:56/k:64/r:3/stride:1/pad:1"
    entries = (runs(f"conv/naive/gpu/{shape}/manual_time", [2.4066e-3] * 3)
               + runs(f"conv/cudnn/gpu/{shape}/manual_time", [90.2e-6] * 3)
               + runs(f"conv/cudnn/gpu/{shape}/math:tf32/manual_time", [89.6e-6] * 3)
               + runs(f"conv/cudnn/gpu/{shape}/math:fp32/manual_time", [152.5e-6] * 3))
    h100 = rules_fired(entries, **{"gpu.compute_capability": "9.0"})["naive_vs_library"]
    assert "takes 15.8x the time of cudnn, both in float32" in h100
    turing = rules_fired(entries, **{"gpu.compute_capability": "7.5"})["naive_vs_library"]
    assert "takes 26.7x the time of cudnn, both in float32" in turing


def test_naive_is_set_against_the_library_of_its_own_device_and_shape():
    shape = "n:32/c:64/hw:56/k:64/r:3"
    entries = (runs(f"conv/naive/gpu/{shape}/manual_time", [0.2] * 3)
               + runs(f"conv/onednn/cpu/{shape}/real_time", [0.001] * 3)  # another device
               + runs("conv/cudnn/gpu/n:1/c:64/hw:56/k:64/r:3/manual_time", [0.001] * 3)
               + runs(f"conv/cudnn/gpu/{shape}/manual_time", [0.05] * 3)
               + runs(f"conv/cublas/gpu/{shape}/manual_time", [0.01] * 3))  # the fastest
    assert "20.0x the time of cublas" in rules_fired(entries)["naive_vs_library"]


def test_gpu_losing_to_the_cpu_names_the_overhead():
    entries = sumsq("vectorized", "cpu", 0.03) + sumsq("vectorized_e2e", "gpu", 0.06,
                                                       overhead_share=[0.9] * 3)
    text = rules_fired(entries)["gpu_loses_to_cpu"]
    assert "2.0x" in text and "90%" in text


def test_crossover_from_a_size_sweep():
    entries = []
    for n, cpu, gpu in ((64, 1e-5, 5e-5), (256, 4e-4, 6e-4), (1024, 3e-2, 2e-3),
                        (4096, 2.0, 3e-2)):
        entries += runs(f"overhead/openblas/cpu/op:matmul/n:{n}/real_time", [cpu] * 3)
        entries += runs(f"overhead/cublas_e2e/gpu/op:matmul/n:{n}/manual_time", [gpu] * 3)
    text = rules_fired(entries)["gpu_crossover"]
    assert "from n 1024 up" in text and "the GPU's cublas end-to-end overhead" in text


def test_crossover_function():
    assert crossover([1, 2, 3], [1, 5, 9], [2, 4, 3]) == 2
    assert crossover([1, 2, 3], [1, 1, 1], [2, 2, 2]) is None
    assert crossover([1, 2, 3], [5, 5, 5], [1, 1, 1]) == 1
    assert crossover([1, 2, 3, 4], [1, 5, 1, 9], [2, 4, 3, 1]) == 4  # must stay ahead


def test_pipeline_idle_and_batch_too_small():
    entries = runs("pipeline/none/gpu/produce_ms:8/consume_ms:2/manual_time", [0.01] * 3,
                   idle_fraction=[0.75] * 3)
    assert "75%" in rules_fired(entries)["pipeline_idle"]
    batches = []
    for batch, rate in ((32, 1e4), (2048, 1e6)):
        batches += runs(f"overhead/cublas/gpu/op:dense/batch:{batch}/manual_time", [0.01] * 3,
                        items_per_second=[rate] * 3)
    assert "1%" in rules_fired(batches)["batch_too_small"]


PIPE = "pipeline/{v}/cpu/produce_ms:4/consume_ms:1/depth:{d}/workers:{w}/real_time"


def _pipeline(none_rate, prefetch_rate=None, parallel_rate=None, **counters):
    entries = runs(PIPE.format(v="none", d=0, w=1), [0.01] * 3, idle_fraction=[0.75] * 3,
                   items_per_second=[none_rate] * 3, **counters)
    if prefetch_rate:
        entries += runs(PIPE.format(v="prefetch", d=2, w=1), [0.01] * 3,
                        items_per_second=[prefetch_rate] * 3)
    if parallel_rate:
        entries += runs(PIPE.format(v="parallel", d=2, w=2), [0.01] * 3,
                        items_per_second=[parallel_rate] * 3)
    return entries


def test_pipeline_advice_follows_the_measured_rates():
    # Prefetch measured faster: advised, with its factor.
    text = rules_fired(_pipeline(189, prefetch_rate=240))["pipeline_idle"]
    assert "prefetch" in text and "1.27x" in text and "use it" in text
    # Parallel the fastest: parallel producers advised.
    text = rules_fired(_pipeline(189, prefetch_rate=200, parallel_rate=301))["pipeline_idle"]
    assert "several producers" in text and "1.59x" in text
    # The run: prefetch 167 against none's 189 batches/s: never advise prefetch.
    text = rules_fired(_pipeline(189, prefetch_rate=167))["pipeline_idle"]
    assert "use it" not in text and "neither prefetch" in text and "prefetch 167" in text
    # Nothing measured beside none: says so, advises nothing.
    text = rules_fired(_pipeline(189))["pipeline_idle"]
    assert "not measured" in text and "use it" not in text


def test_pipeline_stage_drift_fires_past_ten_percent_and_is_silent_within():
    drifted = _pipeline(189, produce_ms_measured=[6.1] * 3, consume_ms_measured=[1.0] * 3)
    text = rules_fired(drifted)["pipeline_stage_drift"]
    assert "produce 4 ms measured 6.1 ms beside none (CPU)" in text and "1 stage cost was" in text
    steady = _pipeline(189, produce_ms_measured=[4.3] * 3, consume_ms_measured=[0.95] * 3)
    assert "pipeline_stage_drift" not in rules_fired(steady)


# The run on 2 cores: parallel, 2 producers of 4 ms and a step of 1 ms, 3 busy threads.
# Stage costs as measured alone beside each repetition (produce moved 4.1 to 6.7 ms).
PRODUCE_MS, CONSUME_MS = [4.1, 4.2, 6.7], [1.0, 1.0, 1.1]


def _parallel(rate, cores, device="cpu", workers=2):
    """parallel's entries with the counters gapbench writes, its ideal counted on `cores`."""
    t_p, t_c = 4.2e-3, 1.0e-3  # the medians
    cpu = t_p + t_c if device == "cpu" else t_p
    ideal = min(workers / t_p, 1 / t_c, cores / cpu)
    timing = "real_time" if device == "cpu" else "manual_time"
    name = (f"pipeline/parallel/{device}/produce_ms:4/consume_ms:1/depth:2/workers:{workers}/"
            f"{timing}")
    return runs(name, [0.01] * 3, items_per_second=[rate] * 3, ideal_items_per_second=[ideal] * 3,
                cores=[cores] * 3, produce_ms_measured=PRODUCE_MS, consume_ms_measured=CONSUME_MS)


def test_cores_not_producers_named_the_limit_where_they_cap_the_ideal():
    entries = _pipeline(189) + _parallel(354, cores=2)
    fired = rules_fired(entries)
    text = fired["pipeline_cores"]
    # 2 cores over 4.2 + 1.0 ms: 385 batches/s, under the 476 of 2 producers of 4.2 ms.
    assert "On the 2 cores" in text and "385 batches/s" in text and "476" in text
    assert "92% of that ideal" in text and "More workers cannot help" in text
    # How far the stage costs moved, beside the ratio: a noisy machine, not a slow pipeline.
    assert "produce 4.1–6.7 ms, consume 1.0–1.1 ms, 63% apart" in text
    # The idle finding's advice stands (parallel measured faster) and says where it ends.
    assert "several producers" in fired["pipeline_idle"] and "use it." in fired["pipeline_idle"]
    assert "2 cores are the limit" in fired["pipeline_idle"]


def test_producers_limit_keeps_the_old_advice():
    """With a core per thread (4 cores for 3 threads) the producers limit: no finding on cores,
    and the idle finding's advice is the one given before cores were counted."""
    fired = rules_fired(_pipeline(189) + _parallel(354, cores=4))
    assert "pipeline_cores" not in fired
    before = rules_fired(_pipeline(189, parallel_rate=354))["pipeline_idle"]
    assert fired["pipeline_idle"] == before
    assert "several producers" in before and "cores" not in before


def test_steady_stage_costs_are_not_called_noise():
    entries = runs(PIPE.format(v="parallel", d=2, w=2), [0.01] * 3, items_per_second=[370] * 3,
                   ideal_items_per_second=[2 / 5.2e-3] * 3, cores=[2] * 3,
                   produce_ms_measured=[4.2] * 3, consume_ms_measured=[1.0, 1.0, 1.05])
    text = rules_fired(entries)["pipeline_cores"]
    assert "produce 4.2–4.2 ms, consume 1.0–1.1 ms." in text and "apart" not in text


def test_which_bound_limits_the_pipeline_ideal():
    def ideal(entries):
        (b,) = in_memory(entries).benchmarks().values()
        return pipeline_ideal(b)

    capped = ideal(_parallel(354, cores=2))
    assert capped.limit == "cores" and capped.cores == 2
    assert capped.bounds["cores"] == pytest.approx(2 / 5.2e-3)
    assert capped.stages_allow == pytest.approx(2 / 4.2e-3)
    assert capped.ratio == pytest.approx(354 / (2 / 5.2e-3))
    assert ideal(_parallel(354, cores=4)).limit == "producers"
    # The GPU's consumer thread sleeps: 2 producers on 2 cores are not capped, 4 are.
    assert ideal(_parallel(354, cores=2, device="gpu")).limit == "producers"
    four = ideal(_parallel(354, cores=2, device="gpu", workers=4))
    assert four.limit == "cores" and four.bounds["cores"] == pytest.approx(2 / 4.2e-3)
    # Near a tie (2 producers of 2 ms and a step of 1.98 ms on 2 cores: the cores allow 503
    # batches/s, the step 505) the stage is named, not the cores, so noise in the stage costs
    # does not flip the finding from run to run.
    tie = ideal(runs("pipeline/parallel/cpu/produce_ms:2/consume_ms:2/depth:2/workers:2/"
                     "real_time", [0.01] * 3, items_per_second=[450] * 3,
                     ideal_items_per_second=[503] * 3, cores=[2] * 3,
                     produce_ms_measured=[2.0] * 3, consume_ms_measured=[1.98] * 3))
    assert tie.limit == "consumer"
    # A file from before the cores were counted: the stages alone.
    old = ideal(runs(PIPE.format(v="parallel", d=2, w=2), [0.01] * 3, items_per_second=[354] * 3,
                     ideal_items_per_second=[476] * 3, produce_ms_measured=[4.2] * 3,
                     consume_ms_measured=[1.0] * 3))
    assert old.limit == "producers" and "cores" not in old.bounds and old.cores is None


LSTM_STEP = "scope:step/batch:64/input:50/hidden:64/steps:100/manual_time"


def _launch_floor(launch: float = 4e-6, launch_sync: float = 10e-6) -> list:
    return (runs("overhead/launch/gpu/what:launch/manual_time", [launch] * 3)
            + runs("overhead/launch/gpu/what:launch_sync/manual_time", [launch_sync] * 3))


def test_lstm_steps_near_the_launch_floor_are_launch_bound():
    """The step's wall time until complete against the host's launches and synchronize: 28 us
    against 10 + 4 us is 2.0x."""
    e2e = runs(f"lstm/cublas_e2e/gpu/{LSTM_STEP}", [28e-6] * 3)
    twins = (runs(f"lstm/cublas/gpu/{LSTM_STEP}", [6e-6] * 3)
             + runs(f"lstm/cublas_graph_e2e/gpu/{LSTM_STEP}", [15e-6] * 3))
    text = rules_fired(_launch_floor() + e2e + twins)["lstm_launch_bound"]
    assert "2.0x the 14 µs" in text and "28 µs from its first launch" in text
    assert "6 µs of device time" in text and "CUDA graph (cublas_graph_e2e) it takes 15 µs" in text
    # A step well above its launches' cost, or no launch floor in the run: silent.
    slow = runs(f"lstm/cublas_e2e/gpu/{LSTM_STEP}", [100e-6] * 3)
    assert "lstm_launch_bound" not in rules_fired(_launch_floor() + slow)
    assert "lstm_launch_bound" not in rules_fired(e2e)
    assert "lstm_launch_bound" not in rules_fired(
        runs("overhead/launch/gpu/what:launch/manual_time", [4e-6] * 3) + e2e)


def test_lstm_launch_bound_never_compares_held_device_time_with_the_launch_floor():
    """The kernel-timed step is device time, its launches held out: 12 us of it says nothing
    about launches, however close it is to their cost."""
    held = runs(f"lstm/cublas/gpu/{LSTM_STEP}", [12e-6] * 3)
    assert "lstm_launch_bound" not in rules_fired(_launch_floor() + held)


def test_findings_come_problems_first():
    findings = diagnose([in_memory(
        sumsq("elementwise", "cpu", 0.3) + sumsq("vectorized", "cpu", 0.03),
        **{"gpu.status": "no CUDA device", "cuda.driver_version": "12.0",
           "cuda.runtime_version": "13.0"})])
    facts = [f for f in findings if not f.lesson]
    assert [f.severity for f in facts] == sorted(
        (f.severity for f in facts), key=("problem", "warning", "info").index)
    # Lessons that hold on every machine come after every fact about this one.
    assert findings[-1].rule == "elementwise_vs_vectorized" and findings[-1].lesson


def test_run_metrics_judge_each_file_by_its_own_peak():
    peak = runs("peak/read/cpu/mib:256/real_time/threads:1", [0.02] * 3,
                bytes_per_second=[10e9] * 3)
    vec = sumsq("vectorized", "cpu", 0.03, bytes_per_second=[9e9] * 3)
    metrics = run_metrics([in_memory(peak + vec)])
    assert abs(metrics["preprocess sumsq: CPU vectorized share of peak/read"] - 0.9) < 1e-9


def test_share_of_peak_reads_the_peaks_traffic_counter():
    peak = runs("peak/read/cpu/mib:256/real_time/threads:1", [0.02] * 3,
                bytes_per_second=[5e9] * 3, traffic_bytes_per_second=[10e9] * 3)
    vec = sumsq("vectorized", "cpu", 0.03, bytes_per_second=[9e9] * 3)
    metrics = run_metrics([in_memory(peak + vec)])
    assert abs(metrics["preprocess sumsq: CPU vectorized share of peak/read"] - 0.9) < 1e-9


def _slow_machine() -> list[dict]:
    """Fixture data whose losses are known: pageable h2d 4x slower than pinned, the GPU 2.5x
    slower than the CPU on one preprocess shape and 1.5x on another, the pipeline idle 75%
    (a 4x loss), and the per-element loop 10x behind (a lesson)."""
    size = 64 * MiB
    entries = copy("pinned", "h2d", "sync", size, 24.0) + copy("pageable", "h2d", "sync", size, 6.0)
    entries += sumsq("vectorized", "cpu", 0.02) + sumsq("elementwise", "cpu", 0.2)
    entries += sumsq("vectorized_e2e", "gpu", 0.05, overhead_share=[0.9] * 3)
    entries += runs("preprocess/vectorized/cpu/op:sumsq/rows:10000/cols:100/real_time", [1e-4] * 3)
    entries += runs("preprocess/vectorized_e2e/gpu/op:sumsq/rows:10000/cols:100/manual_time",
                    [1.5e-4] * 3)
    entries += runs(PIPE.format(v="none", d=0, w=1), [0.01] * 3, idle_fraction=[0.75] * 3,
                    items_per_second=[100] * 3)
    return entries


def test_findings_are_ranked_by_measured_loss_one_per_cause_lessons_last():
    findings = diagnose([in_memory(_slow_machine())])
    facts = [f for f in findings if not f.lesson and f.impact]
    assert [f.rule for f in facts] == ["pageable_vs_pinned", "pipeline_idle", "gpu_loses_to_cpu"]
    assert [round(f.impact, 2) for f in facts] == [4.0, 4.0, 2.5]
    # The GPU losing on two preprocess shapes is one cause: one finding, its worst case.
    loses = next(f for f in facts if f.rule == "gpu_loses_to_cpu")
    assert "2.5x" in loses.text and "1 more preprocess cases" in loses.text
    assert [f.rule for f in findings if f.lesson] == ["elementwise_vs_vectorized"]


def test_findings_quote_benchmarks_in_words_not_names():
    for f in diagnose([in_memory(_slow_machine())]):
        assert not re.search(r"\w+/\w+/(cpu|gpu)/", f.text), f.text
    loses = rules_fired(_slow_machine())["gpu_loses_to_cpu"]
    # Its copies are from pageable memory, and the words say so.
    assert ("GPU vectorized end-to-end (pageable copies) preprocess "
            "(op sumsq · rows 1M · cols 100)") in loses


def test_verdict_names_the_biggest_losses_here_and_never_a_lesson():
    line = verdict(diagnose([in_memory(_slow_machine())]))
    assert line == ("Biggest measured losses on this machine: pageable h2d copies (4.0x); an "
                    "input pipeline that starves the training step (4.0x); the GPU losing to the "
                    "CPU on small preprocess work (2.5x).")
    assert "per-element" not in line
    quiet = diagnose([in_memory(sumsq("vectorized", "cpu", 0.02)
                                + sumsq("elementwise", "cpu", 0.2))])
    assert verdict(quiet).startswith("No measured loss on this machine")
    broken = diagnose([in_memory([], **findings_context(driver_older_than_runtime=(
        "problem", "The NVIDIA driver supports CUDA up to 12.4, older than 13.0.")))])
    assert verdict(broken).startswith("Fix first: NVIDIA driver older than the CUDA runtime")


def _family_file(family_rows, **probes):
    """One family's file: its rows and the peak rows every family runs beside itself, with the
    ceilings probed at the run's start and end."""
    peak = runs("peak/read/cpu/mib:256/real_time/threads:1", [0.01] * 3,
                bytes_per_second=[2e10] * 3, traffic_bytes_per_second=[2e10] * 3)
    peak += runs("peak/sgemm/cpu/n:2048/real_time", [0.1] * 3, flops=[1.8e11] * 3)
    return in_memory(peak + family_rows, **{k: str(v) for k, v in probes.items()})


STEADY = {"stability.sgemm_gflops_start": 190, "stability.sgemm_gflops_end": 185,
          "stability.read_gbps_start": 24, "stability.read_gbps_end": 23}


def test_a_run_whose_ceilings_moved_says_the_machine_changed():
    conv = _family_file(runs("conv/onednn/cpu/n:1/real_time", [1e-3] * 3),
                        **{**STEADY, "stability.sgemm_gflops_end": 104})
    preprocess = _family_file(sumsq("vectorized", "cpu", 0.02), **STEADY)
    findings = {f.rule: f for f in diagnose([conv, preprocess])}
    text = findings["machine_changed"].text
    assert "conv: SGEMM 190 → 104 GFLOP/s (-45%)" in text and "preprocess" not in text
    assert "machine_changed" not in {f.rule for f in diagnose([preprocess])}
    # The read probe is shown, not judged (fresh pages read slower at a run's start).
    fresh = _family_file(sumsq("vectorized", "cpu", 0.02),
                         **{**STEADY, "stability.read_gbps_end": 31})
    assert "machine_changed" not in {f.rule for f in diagnose([fresh])}
    # Files without probes (older files, runs without peak/) say nothing.
    assert "machine_changed" not in rules_fired(sumsq("vectorized", "cpu", 0.02))


def test_an_idle_link_and_small_batches_never_make_the_verdict():
    """The link is read at start-up, when an idle GPU may have lowered it; every GPU is slow at
    a small enough batch: neither is a measured loss of this machine."""
    entries = []
    for batch, rate in ((32, 1e4), (2048, 1e6)):
        entries += runs(f"overhead/cublas/gpu/op:dense/batch:{batch}/manual_time", [0.01] * 3,
                        items_per_second=[rate] * 3)
    findings = diagnose([in_memory(entries, **findings_context(pcie_link_downgraded=(
        "warning", "The GPU's PCIe link runs at gen 1 x16 but can run at gen 4 x16.")))])
    assert {f.rule for f in findings} >= {"pcie_link_downgraded", "batch_too_small"}
    assert verdict(findings).startswith("No measured loss on this machine")
    assert next(f for f in findings if f.rule == "batch_too_small").lesson


def test_mixed_precision_gain_fires_per_device_and_quotes_the_fastest_mode():
    entries = []
    for math, seconds in (("fp32", 4e-3), ("tf32", 1e-3), ("fp16", 5e-4), ("bf16", 6e-4)):
        entries += runs(f"peak/gemm/gpu/n:4096/math:{math}/manual_time", [seconds] * 3)
    size = "n:2/c:64/hw:56/k:64/r:3/stride:1/pad:1"
    entries += runs(f"conv/onednn/cpu/{size}/real_time", [2.1e-3] * 3)
    entries += runs(f"conv/onednn/cpu/{size}/math:bf16/real_time", [1.1e-3] * 3)
    found = [f for f in diagnose([in_memory(entries)]) if f.rule == "mixed_precision"]
    by_device = {f.title.split()[-1]: f for f in found}
    assert set(by_device) == {"GPU", "CPU"}
    assert by_device["GPU"].title.startswith("fp16 is 8.0x") and by_device["GPU"].impact == 8.0
    assert by_device["CPU"].title.startswith("bf16 is 1.9x")
    assert "torch.autocast" in by_device["CPU"].text


def test_mixed_precision_is_silent_without_a_real_gain_or_a_float32_twin():
    close = runs("peak/gemm/gpu/n:4096/math:fp32/manual_time", [1e-3] * 3) + runs(
        "peak/gemm/gpu/n:4096/math:fp16/manual_time", [0.8e-3] * 3)
    assert "mixed_precision" not in rules_fired(close)
    alone = runs("peak/gemm/gpu/n:4096/math:fp16/manual_time", [1e-4] * 3) + runs(
        "peak/gemm/gpu/n:2048/math:fp32/manual_time", [1e-3] * 3)  # another size: no twin
    assert "mixed_precision" not in rules_fired(alone)



# ---- the user's framework (the probe's files beside gapbench's) -------------------------------

def library_run(entries=None, **context):
    """A gapbench file: its context has doctor's GPU facts."""
    return in_memory(entries or sumsq("vectorized", "cpu", 0.03), **context)


def probe_run(entries=None, **context):
    """A framework file, as gapbench-probe writes it."""
    return in_memory(entries or runs("framework/torch/cpu/op:matmul/n:16/real_time", [4e-6] * 3),
                     **{"framework.name": "torch", "framework.version": "2.9.0",
                        "framework.status": "ok", "framework.cuda_built": "12.4",
                        "cuda.driver_version": "12.4", "gpu.status": "ok", **context})


def fired_on(*files) -> dict:
    return {f.rule: f for f in diagnose(list(files))}


SEES_T4 = {"gpu.status": "ok", "gpu.name": "NVIDIA T4"}


def test_the_framework_that_does_not_see_the_gpu_doctor_sees():
    cpu_build = {"gpu.status": "torch 2.9.0+cpu is a CPU-only build (no CUDA)",
                 "framework.cuda_built": "none (CPU-only build)"}
    found = fired_on(library_run(**SEES_T4), probe_run(**cpu_build))["framework_misses_gpu"]
    assert found.severity == "problem" and found.title == "torch 2.9.0 does not see the GPU"
    assert "gapbench uses the NVIDIA T4 here" in found.text
    assert "CPU-only build (no CUDA)" in found.text and "install torch's CUDA build" in found.text
    # The order of the files does not matter.
    assert "framework_misses_gpu" in fired_on(probe_run(**cpu_build), library_run(**SEES_T4))
    # Silent: the framework sees it; no GPU for gapbench either; the framework not installed.
    assert "framework_misses_gpu" not in fired_on(library_run(**SEES_T4), probe_run())
    assert "framework_misses_gpu" not in fired_on(
        library_run(**{"gpu.status": "no CUDA device"}), probe_run(**cpu_build))
    assert "framework_misses_gpu" not in fired_on(
        library_run(**SEES_T4), probe_run(**{**cpu_build, "framework.status": "torch is not "
                                             "installed in this Python (/usr/bin/python3)"}))


def test_the_framework_missing_the_gpu_is_judged_on_its_own_machine_by_what_it_ran():
    cpu_build = {"gpu.status": "torch 2.9.0+cpu is a CPU-only build (no CUDA)",
                 "framework.cuda_built": "none (CPU-only build)"}
    # --device cpu: no GPU benchmark in the file, none said to be skipped.
    cpu_only = fired_on(library_run(**SEES_T4), probe_run(**cpu_build))["framework_misses_gpu"]
    assert "Your model runs on the CPU. It is a CPU-only build" in cpu_only.text
    both = probe_run(runs("framework/torch/cpu/op:matmul/n:16/real_time", [4e-6] * 3)
                     + skipped("framework/torch/gpu/op:matmul/n:16/real_time", "CPU-only")
                     + skipped("framework/torch/gpu/op:matmul/n:64/real_time", "CPU-only"),
                     **cpu_build)
    assert "Your model runs on the CPU, and the probe skipped its 2 GPU benchmarks." in fired_on(
        library_run(**SEES_T4), both)["framework_misses_gpu"].text
    # Silent: the probe ran on another machine than gapbench's.
    assert "framework_misses_gpu" not in fired_on(
        library_run(**SEES_T4), probe_run(**cpu_build, **{"machine.id": "other-machine"}))


def test_a_framework_whose_cuda_build_is_unknown_is_not_called_cpu_only():
    unknown = probe_run(**{"gpu.status": "torch 2.9.0 sees a GPU but cannot use it: RuntimeError",
                           "framework.cuda_built": "unknown: RuntimeError: CUDA driver failed"})
    absent = probe_run(**{"gpu.status": "torch 2.9.0 sees no GPU"})
    del absent.context["framework.cuda_built"]
    for probe in (unknown, absent):
        text = fired_on(library_run(**SEES_T4), probe)["framework_misses_gpu"].text
        assert "CPU-only" not in text and "built for the CUDA your driver supports" in text


def test_the_framework_built_for_a_newer_cuda_than_the_driver():
    found = fired_on(probe_run(**{"framework.cuda_built": "13.0", "gpu.status": "x"}))
    newer = found["framework_cuda_newer"]
    assert newer.severity == "problem"
    assert ("torch 2.9.0 is built for CUDA 13.0; the NVIDIA driver supports CUDA up to 12.4: a "
            "newer major version, so torch cannot use the GPU") in newer.text
    minor = fired_on(probe_run(**{"framework.cuda_built": "12.6"}))["framework_cuda_newer"]
    assert minor.severity == "warning" and "minor-version compatibility" in minor.text
    # The driver's version from gapbench's files where the probe's file lacks it.
    assert "framework_cuda_newer" in fired_on(
        library_run(**{"cuda.driver_version": "12.2"}),
        probe_run(**{"framework.cuda_built": "12.4", "cuda.driver_version": "none"}))
    # Silent: the same version, an older one, a CPU-only build, no driver at all.
    for built, driver in (("12.4", "12.4"), ("11.8", "12.4"), ("none (CPU-only build)", "12.4"),
                          ("12.4", "none")):
        assert "framework_cuda_newer" not in fired_on(probe_run(**{
            "framework.cuda_built": built, "cuda.driver_version": driver})), (built, driver)


def test_framework_overhead_per_op_against_the_library():
    library = library_run(runs("overhead/openblas/cpu/op:matmul/n:16/real_time", [1e-6] * 3)
                          + runs("overhead/openblas/cpu/op:matmul/n:1024/real_time", [1e-2] * 3))
    slow = probe_run(runs("framework/torch/cpu/op:matmul/n:16/real_time", [35e-6] * 3)
                     + runs("framework/torch/cpu/op:matmul/n:1024/real_time", [1e-2] * 3))
    found = fired_on(library, slow)["framework_overhead"]
    assert found.severity == "warning" and found.title == "torch 2.9.0 pays 34 µs per op on the CPU"
    assert "A 16x16 matmul through torch 2.9.0 takes 35 µs on the CPU, 35x the 1 µs of OpenBLAS"\
        in found.text
    # Silent: within FRAMEWORK_OVERHEAD of the library; no library twin measured.
    close = probe_run(runs("framework/torch/cpu/op:matmul/n:16/real_time", [2e-6] * 3))
    assert "framework_overhead" not in fired_on(library, close)
    assert "framework_overhead" not in fired_on(library_run(), slow)


def test_framework_overhead_on_the_gpu_is_beyond_the_launch_and_sync_floor():
    library = library_run(runs("overhead/cublas/gpu/op:matmul/n:16/manual_time", [3e-6] * 3)
                          + runs("overhead/launch/gpu/what:launch_sync/manual_time", [8e-6] * 3))

    def torch_gpu(seconds):
        return probe_run(runs("framework/torch/gpu/op:matmul/n:16/real_time", [seconds] * 3))
    found = fired_on(library, torch_gpu(60e-6))["framework_overhead"]
    assert found.title == "torch 2.9.0 pays 49 µs per op on the GPU"
    assert ("takes 60 µs on the GPU, 5.45x the 11 µs of cuBLAS's kernel (3 µs) and a bare kernel "
            "launch and sync (8 µs) for the same work: about 49 µs of every call is the "
            "framework's own") in found.text
    # Silent: the kernel and a launch and sync is all it costs (10x cuBLAS's kernel time alone).
    assert "framework_overhead" not in fired_on(library, torch_gpu(11e-6))
    assert "framework_overhead" not in fired_on(library, torch_gpu(30e-6))
    # Silent without the floor: the launch would count as the framework's own.
    kernel_only = library_run(runs("overhead/cublas/gpu/op:matmul/n:16/manual_time", [3e-6] * 3))
    assert "framework_overhead" not in fired_on(kernel_only, torch_gpu(60e-6))


# ---- the committed H200 run: real GPU data -------------------------------------------------------

H200 = Path(__file__).resolve().parents[2] / "results" / "baselines"


def h200_findings():
    return diagnose([load_results(H200 / "h200-ubuntu24.json"),
                     load_results(H200 / "h200-ubuntu24.framework-torch.json")])


def test_the_h200_verdict_leads_with_losses_that_machine_has():
    """bf16 13.4x faster than float32 is what every recent GPU's tensor cores do: info, never
    the machine's biggest loss. Its pageable copies are."""
    findings = h200_findings()
    line = verdict(findings)
    assert line.startswith("Biggest measured losses on this machine: pageable h2d copies (7.2x); "
                           "pageable d2h copies (3.7x);"), line
    assert "float32" not in line and "bf16" not in line
    mixed = next(f for f in findings if f.rule == "mixed_precision")
    assert mixed.severity == "info" and not mixed.cause and mixed.title.startswith("bf16 is 13.4x")
    ranked = [f.rule for f in findings]
    assert ranked.index("pageable_vs_pinned") < ranked.index("mixed_precision")


def test_a_framework_faster_than_gapbench_library_row_is_a_gapbench_defect_on_the_h200():
    """torch's small LSTM sequence (180 µs) against gapbench's cuDNN row (1.68 ms): gapbench's
    cuDNN configuration is not the best one. Said, as gapbench's, never as the machine's."""
    findings = h200_findings()
    defects = [f for f in findings if f.rule == "library_not_best"]
    assert len(defects) == 1 and defects[0].defect and not defects[0].lesson
    f = defects[0]
    assert f.title == "gapbench's cuDNN lstm is slower than torch 2.11.0+cu130's"
    assert "180 µs, 0.107x the 1.68 ms of gapbench's own cuDNN row" in f.text
    assert "scope seq · batch 64 · input 50 · hidden 64 · steps 100" in f.text
    assert "unheld (404 launches" in f.text and "gapbench's issue tracker" in f.text
    assert not f.impact and not f.cause  # never one of this machine's losses
    line = verdict(findings)
    assert line.endswith("gapbench's own check: 1 of its library rows slower than your framework "
                         "on the same work (a defect in gapbench, not in this machine; see "
                         "\"gapbench's cuDNN lstm is slower than torch 2.11.0+cu130's\").")
    # The pairs at 0.9x and above (the large LSTM at 0.998x, conv at 1.04x) are no defect.
    assert "hidden 512" not in f.text


def test_library_not_best_fires_below_its_threshold_only():
    lstm = "scope:seq/batch:64/input:50/hidden:64/steps:100"
    torch = {"framework.name": "torch", "framework.version": "2.0", "machine.id": "test-machine"}

    def fired(framework_seconds):
        library = in_memory(runs(f"lstm/cudnn/gpu/{lstm}/manual_time", [1e-3] * 3))
        probe = in_memory(runs(f"framework/torch/gpu/op:lstm/{lstm}/manual_time",
                               [framework_seconds] * 3), **torch)
        return [f for f in diagnose([library, probe]) if f.rule == "library_not_best"]
    assert fired(0.95e-3) == []  # within the noise of two ways of timing
    found = fired(0.5e-3)
    assert len(found) == 1 and found[0].defect and "0.5x the 1 ms" in found[0].text


# ---- the self-check against the hardware: no row above the ceiling that bounds it ------------

BIG_CONV = "n:32/c:64/hw:56/k:64/r:3/stride:1/pad:1"
H100_SGEMM = 52.0e12  # FLOP/s, the H100's peak/sgemm/gpu at n 4096
FLOPS_4096 = 2 * 4096**3


def gemm_peak(rate, math=None):
    name = (f"peak/gemm/gpu/n:4096/math:{math}/manual_time" if math
            else "peak/sgemm/gpu/n:4096/manual_time")
    return runs(name, [FLOPS_4096 / rate] * 3, flops=[rate] * 3)


def cudnn_conv(rate, algorithm, axes="/math:fp32"):
    entries = runs(f"conv/cudnn/gpu/{BIG_CONV}{axes}/manual_time", [1e-4] * 3, flops=[rate] * 3)
    for e in entries:
        e["label"] = f"algo:{algorithm} workspace_bytes:0 math:fma"
    return entries


def above_ceiling(entries, **context):
    return [f for f in diagnose([in_memory(entries, **context)]) if f.rule == "above_ceiling"]


def test_a_gemm_based_row_above_its_maths_gemm_peak_is_a_gapbench_defect_past_the_margin():
    """A measured peak is one size's cuBLAS, not the hardware's bound: 1.25x of it is allowed.
    Just below, silent; just above, a defect naming the row and the ceiling."""
    assert above_ceiling(gemm_peak(H100_SGEMM) + cudnn_conv(1.24 * H100_SGEMM, "IMPLICIT_GEMM")) \
        == []
    found = above_ceiling(gemm_peak(H100_SGEMM)
                          + cudnn_conv(1.26 * H100_SGEMM, "IMPLICIT_PRECOMP_GEMM"))
    assert len(found) == 1 and found[0].defect and not found[0].impact
    f = found[0]
    assert f.title == "gapbench's conv row is faster than the GPU's float32 GEMM peak allows"
    assert f.text.startswith(f"conv/cudnn/gpu/{BIG_CONV}/math:fp32/manual_time (cuDNN's "
                             "IMPLICIT_PRECOMP_GEMM, read as float32) reaches 65.5 TFLOP/s, 1.26x "
                             "the float32 GEMM peak measured beside it "
                             "(peak/sgemm/gpu/n:4096/manual_time: 52 TFLOP/s at its best "
                             "repetition)")
    assert "by more than 1.25x" in f.text and "gapbench's issue tracker" in f.text
    assert "no math axis" not in f.text  # its name says float32
    assert verdict(found).endswith("gapbench's own check: 1 of its rows timed above the ceiling "
                                   "that bounds them (a defect in gapbench, not in this machine; "
                                   "see \"gapbench's conv row is faster than the GPU's float32 "
                                   "GEMM peak allows\").")


def test_each_file_is_judged_against_its_own_peak_unless_its_machine_changed_speed():
    """Every family's run measures its peak beside itself: a row is judged against its own
    file's. A file whose SGEMM moved more than 25% during its run has no ceiling to judge by."""
    fast_conv = cudnn_conv(1.5 * H100_SGEMM, "IMPLICIT_GEMM")
    conv = in_memory(gemm_peak(2 * H100_SGEMM) + fast_conv)
    other = in_memory(gemm_peak(H100_SGEMM))  # another family's file, a slower peak
    assert [f for f in diagnose([other, conv]) if f.rule == "above_ceiling"] == []
    changed = {"stability.sgemm_gflops_start": "100", "stability.sgemm_gflops_end": "200"}
    assert above_ceiling(gemm_peak(H100_SGEMM) + fast_conv, **changed) == []
    assert len(above_ceiling(gemm_peak(H100_SGEMM) + fast_conv)) == 1


def test_winograd_and_fft_do_fewer_multiplications_and_are_not_judged():
    """The H200's float32 FFT_TILING conv is at 1.06 of SGEMM; these may pass it by far."""
    for algorithm in ("WINOGRAD", "WINOGRAD_NONFUSED", "FFT", "FFT_TILING"):
        assert above_ceiling(gemm_peak(H100_SGEMM) + cudnn_conv(2 * H100_SGEMM, algorithm)) == []
    # gapbench's own direct kernels, and a conv whose algorithm the label does not name, alike:
    # the first judged, the second not.
    naive = runs(f"conv/naive/gpu/{BIG_CONV}/manual_time", [1e-4] * 3, flops=[2 * H100_SGEMM] * 3)
    assert len(above_ceiling(gemm_peak(H100_SGEMM) + naive)) == 1
    unnamed = runs(f"conv/cudnn/gpu/{BIG_CONV}/math:fp32/manual_time", [1e-4] * 3,
                   flops=[2 * H100_SGEMM] * 3)
    assert above_ceiling(gemm_peak(H100_SGEMM) + unnamed) == []


def test_each_math_is_judged_against_its_own_gemm_peak():
    """TF32 against the TF32 GEMM, fp16 against fp16: a TF32 row far above SGEMM is fine; the
    unmarked cuDNN row on an 8.0+ GPU is TF32, and judged so; with no peak of its math, none."""
    tf32_peak = gemm_peak(364e12, "tf32")
    tf32 = cudnn_conv(82e12, "IMPLICIT_PRECOMP_GEMM", "/math:tf32")
    assert above_ceiling(gemm_peak(H100_SGEMM) + tf32_peak + tf32) == []
    assert len(above_ceiling(gemm_peak(H100_SGEMM) + tf32_peak
                             + cudnn_conv(1.3 * 364e12, "IMPLICIT_GEMM", "/math:tf32"))) == 1
    unmarked = cudnn_conv(82e12, "IMPLICIT_PRECOMP_GEMM", "")
    assert above_ceiling(gemm_peak(H100_SGEMM) + tf32_peak + unmarked,
                         **{"gpu.compute_capability": "9.0"}) == []
    assert above_ceiling(gemm_peak(H100_SGEMM) + unmarked,
                         **{"gpu.compute_capability": "9.0"}) == []  # no TF32 peak measured
    fp16 = cudnn_conv(700e12, "IMPLICIT_PRECOMP_GEMM", "/math:fp16")
    assert len(above_ceiling(gemm_peak(H100_SGEMM) + gemm_peak(500e12, "fp16") + fp16)) == 1
    assert above_ceiling(gemm_peak(H100_SGEMM) + gemm_peak(600e12, "fp16") + fp16) == []


def test_an_unmarked_row_read_as_float32_above_sgemm_says_its_name_has_no_math_axis():
    """Before 8.0 the unmarked cuDNN row is float32: above SGEMM, it is flagged, and the
    finding says the report read it so for want of a math axis."""
    unmarked = cudnn_conv(82e12, "IMPLICIT_PRECOMP_GEMM", "")
    found = above_ceiling(gemm_peak(H100_SGEMM) + unmarked, **{"gpu.compute_capability": "7.5"})
    assert len(found) == 1
    assert "Its name has no math axis, so the report reads it as float32" in found[0].text


def test_a_copy_above_the_pcie_links_theoretical_rate_is_a_gapbench_defect():
    link = {"pcie.bandwidth_max_gbps": "63.02", "pcie.gen_max": "5", "pcie.width_max": "16"}
    size = 256 * MiB
    assert above_ceiling(copy("pinned", "h2d", "async", size, 0.99 * 63.02), **link) == []
    found = above_ceiling(copy("pinned", "d2h", "sync", size, 1.01 * 63.02)
                          + copy("device", "d2d", "async", size, 1500.0), **link)
    assert len(found) == 1 and found[0].defect
    assert found[0].title == "gapbench's d2h copy is faster than the PCIe link allows"
    assert found[0].text.startswith(
        f"transfer/pinned/gpu/dir:d2h/mode:sync/bytes:{size}/manual_time moves 63.7 GB/s, 1.01x "
        "the PCIe link's theoretical 63.02 GB/s per direction (pcie.bandwidth_max_gbps, from the "
        "link's generation 5 and width x16)")
    assert above_ceiling(copy("pinned", "d2h", "sync", size, 1.01 * 63.02)) == []  # no link known


BASELINES = Path(__file__).resolve().parents[2] / "results" / "baselines"


def h100_files(**context):
    """The committed H100 run (and its torch probe), its context changed where asked."""
    library = load_results(BASELINES / "h100-ubuntu24.json")
    if context:
        library = replace(library, context={**library.context, **context})
    return [library, load_results(BASELINES / "h100-ubuntu24.framework-torch.json")]


def h200_files():
    return [load_results(BASELINES / "h200-ubuntu24.json"),
            load_results(BASELINES / "h200-ubuntu24.framework-torch.json")]


def test_the_committed_gpu_runs_have_no_row_above_its_ceiling():
    """Read right, no false defect: the H100's unmarked cuDNN rows (IMPLICIT_PRECOMP_GEMM at
    82 TFLOP/s, 1.59x SGEMM) are TF32 and far under the TF32 GEMM peak; the H200's float32
    FFT_TILING row (1.06x SGEMM) does fewer multiplications; the copies reach 87% of the link.
    The CPU baseline's im2col convolutions stay under OpenBLAS's SGEMM."""
    for run in (h100_files(), h200_files(), [load_results(BASELINES / "ci-cpu-2core.json")]):
        assert [f.text for f in diagnose(run) if f.rule == "above_ceiling"] == []


def test_the_h100_read_as_float32_would_be_caught_by_the_self_check():
    """The synthetic twin: the same H100 files with a context naming a GPU before 8.0, where the
    unmarked cuDNN row is float32. Its 82 TFLOP/s from IMPLICIT_PRECOMP_GEMM is then 1.58x the
    float32 GEMM peak of its file (51.8 TFLOP/s at n 4096, its best repetition): flagged, naming
    the row and the ceiling."""
    findings = diagnose(h100_files(**{"gpu.compute_capability": "7.5"}))
    found = [f for f in findings if f.rule == "above_ceiling"]
    assert len(found) == 1
    text = found[0].text
    assert text.startswith(f"conv/cudnn/gpu/{BIG_CONV}/manual_time (cuDNN's IMPLICIT_PRECOMP_GEMM,"
                           " read as float32) reaches 82 TFLOP/s, 1.58x the float32 GEMM peak "
                           "measured beside it (peak/sgemm/gpu/n:4096/manual_time: 51.8 "
                           "TFLOP/s at its best repetition)"), text
    assert "no math axis" in text
    assert "1 of its rows timed above the ceiling that bounds them" in verdict(findings)


def test_a_file_with_explicit_math_only_is_read_in_each_math():
    """New files name every row's math: the naive float32 conv pairs with cuDNN's math:fp32,
    the share of peak and the same work on another machine take float32 rows only."""
    from gapbench_report.versus import comparison as versus  # noqa: PLC0415
    shape = f"conv/{{}}/gpu/{BIG_CONV}{{}}/manual_time"
    entries = (runs(shape.format("naive", ""), [2.4e-3] * 3, flops=[3e12] * 3)
               + runs(shape.format("tiled", ""), [4.9e-4] * 3, flops=[15e12] * 3)
               + runs(shape.format("cudnn", "/math:fp32"), [1.5e-4] * 3, flops=[48e12] * 3)
               + runs(shape.format("cudnn", "/math:tf32"), [9e-5] * 3, flops=[82e12] * 3)
               + runs(shape.format("cudnn", "/math:fp16"), [2.7e-5] * 3, flops=[277e12] * 3)
               + gemm_peak(H100_SGEMM))
    run = in_memory(entries, **{"gpu.compute_capability": "9.0"})
    lesson = rules_fired(entries, **{"gpu.compute_capability": "9.0"})["naive_vs_library"]
    assert "takes 16.0x the time of cudnn, both in float32" in lesson
    (share,) = (v for k, v in run_metrics([run]).items() if "SGEMM peak" in k)
    assert share == 48e12 / H100_SGEMM
    # Against a machine that ran the float32 row alone: that row's pair, nothing set against
    # this file's TF32 or fp16 rows.
    other = in_memory(runs(shape.format("cudnn", "/math:fp32"), [1.2e-4] * 3))
    (pair,) = versus.pairs(versus.Side.of("here", [run]), versus.Side.of("there", [other]))
    assert pair.here.math == pair.there.math == "fp32" and pair.speed == 1.2e-4 / 1.5e-4


# ---- the CPUs shared: other work, their parallel capacity, threads that fight ------------------

def fma_peak(threads: int, gflops: float) -> list[dict]:
    """A peak/flops row whose best repetition is `gflops` (the others read less)."""
    return runs(f"peak/flops/cpu/isa:avx2/math:fp32/real_time/threads:{threads}", [0.01] * 3,
                flops=[gflops * 1e9, 0.9 * gflops * 1e9, 0.95 * gflops * 1e9])


def thread_twin(work: str, one: float, every: float, flops: float = 4.2e6) -> list[dict]:
    """A threads-family op on one library thread and on every CPU (2 here)."""
    return [e for threads, seconds in (("1", one), ("all", every)) for e in runs(
        f"threads/{work}/lib_threads:{threads}/real_time", [seconds] * 3,
        flops=[flops / seconds] * 3, lib_threads=[1 if threads == "1" else 2] * 3)]


LSTM_TWIN = "onednn/cpu/op:lstm_step/batch:64/input:50/hidden:64"
SMALL_MATMUL = "openblas/cpu/op:matmul/n:128"
BIG_MATMUL = "openblas/cpu/op:matmul/n:1024"


def probes(other_cpus="0.03", steal="0.000", one=(94, 93), every=(180, 185)) -> dict:
    """The stability figures of a family's run: other work, steal, the FMA probes."""
    return {"stability.window_s": "12.5", "stability.own_cpus": "1.4",
            "stability.other_cpus": other_cpus, "stability.steal": steal,
            "stability.fma_one_gflops_start": str(one[0]),
            "stability.fma_one_gflops_end": str(one[1]),
            "stability.fma_all_gflops_start": str(every[0]),
            "stability.fma_all_gflops_end": str(every[1]), "stability.fma_threads": "2",
            "host.hypervisor": "KVMKVMKVM"}


def shared_findings(entries, **context):
    found = diagnose([in_memory(entries, **context)])
    return {f.rule: f for f in found}, verdict(found)


def test_other_work_beside_the_run_is_named_with_its_figures_and_heads_the_verdict():
    rows = fma_peak(1, 94) + fma_peak(2, 183) + thread_twin(BIG_MATMUL, 0.02, 0.011, 2.1e9)
    found, said = shared_findings(rows, **probes(other_cpus="0.91"))
    text = found["other_work"].text
    assert text.startswith("Other work used these CPUs during the run: 0.9 of a CPU during "
                           "threads (steal 0%); its rows are slower than this machine can do.")
    assert "OMP_NUM_THREADS=1" in text and "torch.set_num_threads(1)" in text
    assert "set_intra_op_parallelism_threads(1)" in text and "OMP_WAIT_POLICY=PASSIVE" in text
    assert said.startswith("Other work used these CPUs during the run: 0.9 of a CPU")
    # Steal alone is other work too; below both limits, none.
    assert "other_work" in shared_findings(rows, **probes(steal="0.060"))[0]
    # A quiet 2-vCPU VM's families read up to 0.17 of a CPU and 2.9% steal.
    quiet, said = shared_findings(rows, **probes(other_cpus="0.24", steal="0.049"))
    assert "other_work" not in quiet and not said.startswith("Other work")


def test_other_work_puts_each_family_with_its_own_figure():
    conv = in_memory(runs("conv/onednn/cpu/n:1/real_time", [1e-3] * 3),
                     **probes(other_cpus="0.72"))
    lstm = in_memory(runs("lstm/onednn/cpu/op:step/real_time", [1e-3] * 3),
                     **probes(other_cpus="0.74"))
    pipeline = in_memory(runs("pipeline/none/cpu/real_time", [1e-3] * 3),
                         **probes(other_cpus="1.6", steal="0.05"))
    text = {f.rule: f.text for f in diagnose([conv, lstm, pipeline])}["other_work"]
    assert ("0.7 of a CPU during conv and lstm (steal 0%), 1.6 CPUs during pipeline "
            "(steal 5%)") in text


def test_cpus_that_deliver_one_cpu_at_best_are_a_warning_with_their_readings():
    rows = fma_peak(1, 94) + fma_peak(2, 95)
    found, _ = shared_findings(rows, **probes(every=(95, 96)))
    f = found["parallel_capacity"]
    assert (f.title, f.severity) == ("These 2 vCPUs deliver 1.0x one", "warning")
    assert f.text.startswith("These 2 vCPUs deliver 1.0x one: they are two hyperthreads of one "
                             "core (as on Colab), or another tenant shares it (steal 0%).")
    assert ("best 1.0x (at the peak run's end), lowest 1.0x (in peak/flops (best "
            "repetitions)), over 3 readings") in f.text
    assert f.impact == pytest.approx(2 / (96 / 93))  # the best: the end probe, 96 over 93
    # Two whole cores: no finding; 0.75 of the count is the limit.
    whole = fma_peak(1, 94) + fma_peak(2, 183)
    assert "parallel_capacity" not in shared_findings(whole, **probes())[0]
    assert "parallel_capacity" not in shared_findings(fma_peak(1, 100) + fma_peak(2, 151))[0]
    assert "parallel_capacity" in shared_findings(fma_peak(1, 100) + fma_peak(2, 149))[0]


def test_a_capacity_that_fell_short_only_at_times_is_context_not_a_loss():
    # A quiet VM: 2.0x at best, 1.0x while the host had the vCPUs on one core.
    found, _ = shared_findings(fma_peak(1, 94) + fma_peak(2, 95), **probes(every=(95, 180)))
    f = found["parallel_capacity"]
    assert (f.title, f.severity) == ("These 2 vCPUs' parallel capacity moved", "info")
    assert f.text.startswith("These 2 vCPUs delivered 1.9x one at best but 1.0x at times during "
                             "the run (best 1.9x (at the peak run's end)")
    assert f.impact is None or f.impact <= 1


def test_threads_that_fight_are_named_per_library_with_the_other_work_that_explains_them():
    rows = (fma_peak(1, 94) + fma_peak(2, 183) + thread_twin(LSTM_TWIN, 23e-6, 2.1e-3)
            + thread_twin(SMALL_MATMUL, 250e-6, 500e-6) + thread_twin(BIG_MATMUL, 0.02, 0.011))
    found = diagnose([in_memory(rows, **probes(other_cpus="0.72"))])
    fights = [f for f in found if f.rule == "threads_fight"]
    assert [f.title for f in fights] == ["oneDNN's threads fight over these CPUs",
                                         "OpenBLAS's threads fight over these CPUs"]
    assert fights[0].text.startswith(
        "oneDNN's LSTM step (batch 64 · input 50 · hidden 64) takes 91.3x as long with 2 "
        "threads as with 1 here (2.1 ms against 23 µs): other work took 0.7 of a CPU during the "
        "run (steal 0%), and threads that wait for each other stall for a whole scheduler "
        "slice.")
    assert "OMP_WAIT_POLICY=PASSIVE" in fights[0].text
    assert "n 1024" not in fights[1].text  # where all threads help, nothing is said
    said = verdict(found)
    assert said.startswith("Other work used these CPUs during the run: 0.7 of a CPU during "
                           "threads (steal 0%); oneDNN's LSTM step")
    assert "(OpenBLAS's threads fight too)" in said


def test_threads_that_fight_without_other_work_cite_the_cpus_capacity():
    rows = fma_peak(1, 94) + fma_peak(2, 95) + thread_twin(SMALL_MATMUL, 250e-6, 310e-6)
    found, said = shared_findings(rows, **probes(every=(96, 97)))
    text = found["threads_fight"].text
    assert ("takes 1.24x as long with 2 threads as with 1 here (310 µs against 250 µs): these "
            "vCPUs hand work between each other slowly here (all 2 threads deliver 1.0x one "
            "thread's FMA rate); no other work was recorded (0.0 of a CPU, steal 0%)") in text
    assert said.startswith("OpenBLAS's matmul (n 128) takes 1.24x as long with 2 threads")
    # Just under the limit: no fight.
    calm = fma_peak(1, 94) + fma_peak(2, 95) + thread_twin(SMALL_MATMUL, 250e-6, 295e-6)
    assert "threads_fight" not in shared_findings(calm, **probes())[0]


def test_framework_rows_with_the_threads_axis_pair_too():
    torch = [e for threads, seconds in (("1", 1e-4), ("all", 3e-4)) for e in runs(
        f"framework/torch/cpu/op:matmul/n:128/lib_threads:{threads}/real_time", [seconds] * 3)]
    probe = in_memory(torch, **{"framework.name": "torch", "framework.version": "2.9.0",
                                "framework.status": "ok", "framework.cuda_built": "none"})
    fights = [f for f in diagnose([library_run(), probe]) if f.rule == "threads_fight"]
    assert len(fights) == 1 and fights[0].text.startswith(
        "PyTorch's matmul (n 128) takes 3x as long with")


def test_no_row_of_a_run_beside_other_work_is_a_gapbench_defect():
    """Other work lowers a peak measured beside it: a row timed in a quieter moment passes it
    honestly, and a library row slower than the framework is the noise's, not gapbench's."""
    fast_conv = cudnn_conv(1.5 * H100_SGEMM, "IMPLICIT_GEMM")
    assert len(above_ceiling(gemm_peak(H100_SGEMM) + fast_conv)) == 1
    assert above_ceiling(gemm_peak(H100_SGEMM) + fast_conv, **probes(other_cpus="0.9")) == []
    lstm = "scope:seq/batch:64/input:50/hidden:64/steps:100"
    torch = {"framework.name": "torch", "framework.version": "2.0"}

    def defects(**context):
        library = in_memory(runs(f"lstm/cudnn/gpu/{lstm}/manual_time", [1e-3] * 3), **context)
        probe = in_memory(runs(f"framework/torch/gpu/op:lstm/{lstm}/manual_time", [0.5e-3] * 3),
                          **torch)
        return [f for f in diagnose([library, probe]) if f.rule == "library_not_best"]
    assert len(defects()) == 1
    assert defects(**probes(other_cpus="0.9")) == []
