"""The cases and their names: gapbench's scheme and axes, per profile, from gapbench's list."""

from __future__ import annotations

import os
import re

import pytest

from gapbench_probe import gapbench_list
from gapbench_probe.frameworks import ADAPTERS
from gapbench_probe.plan import PROFILES, cases


def names(profile: str, framework: str = "torch") -> list[str]:
    return [c.name(framework, d) for c in cases(PROFILES[profile]) for d in c.devices]


def test_names_follow_gapbench_scheme():
    """The probe writes nothing the report would refuse: each name matches the report's one
    expression for names (gapbench_report.inputs.results.NAME_PATTERN), read from there."""
    pattern = pytest.importorskip("gapbench_report.inputs.results").NAME_PATTERN
    for profile in PROFILES:
        for name in names(profile, "tensorflow"):
            match = pattern.match(name)
            assert match, name
            assert match["family"] == "framework" and match["variant"] == "tensorflow"
            assert match["timing"] == "real_time"
            keys = [part.split(":")[0] for part in match["axes"].split("/")[1:]]
            assert keys[0] == "op" and len(keys) == len(set(keys)), name


def test_shapes_use_gapbench_axes():
    quick = names("quick")
    assert "framework/torch/cpu/op:conv/n:2/c:64/hw:56/k:64/r:3/stride:1/pad:1/real_time" in quick
    assert "framework/torch/gpu/op:conv/n:1/c:1/hw:28/k:1/r:3/stride:1/pad:0/real_time" in quick
    assert ("framework/torch/cpu/op:lstm/scope:seq/batch:64/input:50/hidden:64/steps:100/"
            "real_time") in quick
    assert ("framework/torch/cpu/op:lstm/scope:step/batch:64/input:512/hidden:512/steps:25/"
            "real_time") in quick
    assert "framework/torch/gpu/op:copy/dir:h2d/memory:pinned/bytes:67108864/real_time" in quick
    assert "framework/torch/cpu/op:sumsq/style:vectorized/rows:1000000/cols:100/real_time" in quick
    assert ("framework/torch/cpu/op:pipeline/produce_ms:2/consume_ms:2/depth:2/workers:2/"
            "real_time") in quick
    # copies only on the GPU
    assert not [n for n in quick if "/cpu/op:copy/" in n]


def test_full_profile_has_every_size_and_batch_32():
    full = names("full")
    assert "framework/torch/cpu/op:conv/n:32/c:64/hw:56/k:64/r:3/stride:1/pad:1/real_time" in full
    sizes = {int(m[1]) for n in full if (m := re.search(r"/cpu/op:matmul/n:(\d+)/", n))}
    assert sizes == {16, 32, 64, 128, 256, 512, 1024, 2048, 4096}
    assert PROFILES["full"].repetitions == 10 and PROFILES["full"].min_time == 0.5
    assert PROFILES["quick"].repetitions == 5 and PROFILES["quick"].min_time == 0.05


def test_quick_compiles_only_where_overhead_is_the_point():
    compiled = [n for n in names("quick") if "/mode:compiled/" in n and "/cpu/" in n]
    assert compiled == [
        "framework/torch/cpu/op:lstm/scope:step/batch:64/input:50/hidden:64/steps:100/"
        "mode:compiled/real_time",
        "framework/torch/cpu/op:dense/batch:32/mode:compiled/real_time"]
    full = names("full")
    assert sum("/cpu/op:dense/" in n and "mode:compiled" in n for n in full) == 4


def test_the_python_loop_never_runs_a_million_rows():
    for profile in PROFILES:
        loops = [n for n in names(profile) if "style:elementwise" in n and "op:sumsq" in n]
        assert loops and not [n for n in loops if "rows:1000000" in n]


def test_tensorflow_has_no_pinned_copy():
    tf = ADAPTERS["tensorflow"]
    quick = [c for c in cases(PROFILES["quick"]) if c.op == "copy"]
    assert [c.axis("memory") for c in quick if tf.supports(c)] == ["pageable"]
    assert all(ADAPTERS["torch"].supports(c) for c in quick)


def test_the_shapes_follow_gapbench_list(tmp_path, monkeypatch):
    """Every size comes from gapbench's list: change it there, and the probe's cases change."""
    changed = tmp_path / "gapbench_benchmarks.txt"
    changed.write_text(gapbench_list.COMMITTED.read_text().replace("hidden:64/", "hidden:65/")
                       .replace("n:2/c:64/hw:56/", "n:3/c:64/hw:56/"))
    monkeypatch.setattr(gapbench_list, "COMMITTED", changed)
    gapbench_list.listed.cache_clear()
    try:
        quick = names("quick")
    finally:
        gapbench_list.listed.cache_clear()
    assert ("framework/torch/cpu/op:lstm/scope:step/batch:64/input:50/hidden:65/steps:100/"
            "mode:compiled/real_time") in quick
    assert "framework/torch/cpu/op:conv/n:3/c:64/hw:56/k:64/r:3/stride:1/pad:1/real_time" in quick
    assert not [n for n in quick if "hidden:64/" in n or "/n:2/c:64/" in n]


GPU_TARGETS = [  # what judges gapbench's GPU libraries, in both profiles, on the GPU only
    *(f"framework/torch/gpu/op:matmul/n:{n}{math}/real_time" for n in (2048, 4096, 8192)
      for math in ("", "/math:tf32", "/math:fp16", "/math:bf16")),
    *(f"framework/torch/gpu/op:conv/n:32/c:64/hw:56/k:64/r:3/stride:1/pad:1{math}/real_time"
      for math in ("", "/math:tf32", "/math:fp16")),
    *(f"framework/torch/gpu/op:lstm/scope:{scope}/batch:64/{shape}{math}/real_time"
      for scope in ("step", "seq")
      for shape in ("input:50/hidden:64/steps:100", "input:512/hidden:512/steps:25")
      for math in ("", "/math:tf32", "/math:fp16"))]


@pytest.mark.parametrize("profile", list(PROFILES))
def test_the_gpu_runs_the_targets_in_each_math_and_the_cpu_none_of_them(profile):
    gpu = [c.name("torch", "gpu") for c in cases(PROFILES[profile]) if "gpu" in c.devices]
    cpu = [c.name("torch", "cpu") for c in cases(PROFILES[profile]) if "cpu" in c.devices]
    assert set(GPU_TARGETS) <= set(gpu) and len(gpu) == len(set(gpu))
    assert not [n for n in cpu if "/math:" in n or "/n:8192/" in n]
    # The CPU's cases are as they were before the GPU's targets (24 in quick, 47 in full), and
    # the threads family's 8 twins.
    assert len(cpu) == {"quick": 24 + 8, "full": 47 + 8}[profile]
    if profile == "quick":
        assert not [n for n in cpu if "/op:conv/n:32/" in n or "/op:matmul/n:2048/" in n]


def test_a_shapes_maths_follow_its_float32_case():
    """So that they share its data: one problem per shape, built once (in each family: the
    threads family's twins, last, have shapes of the conv and matmul cases)."""
    order = [(c.shape, c.lib_threads is not None) for c in cases(PROFILES["full"])]
    for shape in set(order):
        first = order.index(shape)
        assert order[first:first + order.count(shape)] == [shape] * order.count(shape), shape


def test_gapbench_names_the_same_work_in_its_math():
    """Each probe name's twin is in gapbench's list under the same axes and math, or, for the
    GEMM peak, as its peak/gemm/gpu (the LSTM's TF32 twin is cuDNN's, once gapbench has it)."""
    full = {(b.family, b.variant, b.device, b.axes) for b in gapbench_list.listed("full")}
    assert ("peak", "gemm", "gpu", (("n", "8192"), ("math", "fp16"))) in full
    assert ("conv", "cudnn", "gpu", (("n", "32"), ("c", "64"), ("hw", "56"), ("k", "64"),
                                     ("r", "3"), ("stride", "1"), ("pad", "1"),
                                     ("math", "fp16"))) in full
    assert ("lstm", "cudnn", "gpu", (("scope", "seq"), ("batch", "64"), ("input", "512"),
                                     ("hidden", "512"), ("steps", "25"), ("math", "fp16"))) in full


THREADS_TWINS = [
    "op:conv/n:1/c:1/hw:28/k:1/r:3/stride:1/pad:0/lib_threads:1",
    "op:conv/n:1/c:1/hw:28/k:1/r:3/stride:1/pad:0/lib_threads:all",
    "op:lstm_step/batch:64/input:50/hidden:64/lib_threads:1",
    "op:lstm_step/batch:64/input:50/hidden:64/lib_threads:all",
    "op:matmul/n:128/lib_threads:1", "op:matmul/n:128/lib_threads:all",
    "op:matmul/n:1024/lib_threads:1", "op:matmul/n:1024/lib_threads:all"]


@pytest.mark.parametrize("profile", list(PROFILES))
def test_the_threads_twins_are_gapbenchs_on_the_cpu_under_its_axes(profile):
    threads = [n for n in names(profile) if "/lib_threads:" in n]
    assert threads == [f"framework/torch/cpu/{twin}/real_time" for twin in THREADS_TWINS]
    listed = [b for b in gapbench_list.listed(profile) if b.family == "threads"]
    assert ["/".join(f"{k}:{v}" for k, v in b.axes) for b in listed] == THREADS_TWINS


def test_a_threads_twins_counts_share_one_problem():
    twins = [c for c in cases(PROFILES["quick"]) if c.lib_threads is not None]
    one, every = twins[0], twins[1]
    assert one.shape == every.shape and (one.lib_threads, every.lib_threads) == (1, os.cpu_count())
    assert twins[2].adapter_op == "lstm" and twins[0].adapter_op == "conv"
