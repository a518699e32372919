"""gapbench-report explain TRACE --against OTHER_TRACE (issue 61, docs/explain.md#two-traces): the
real pairs to the verdicts they gave, the rules on profiles made here, and bad pairs refused in
one line.

The pairs (tests/data/traces/torch_cpu_pair_* and tf_cpu_pair_*) are real traces made on the
2-core machine, under other engineers' load, by tests/traces/make_torch_traces.py --pairs and
make_tf_traces.py --pairs; tests/traces/AGAINST.md has the verdict each was expected to give,
written before any was made, and the verdict found.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gapbench_report.explain import against
from gapbench_report.explain.prices import load_prices
from gapbench_report.inputs.traces import Copies, Profile
from gapbench_report.versus.ceilings import ceilings
from tests.test_explain import DATA, need, run

DOCS = Path(__file__).resolve().parents[2] / "docs" / "explain.md"
UNPINNED = DATA / "gapbench_results_unpinned.json"
PINNED = DATA / "gapbench_results_pinned.json"


@pytest.fixture(autouse=True)
def extra():
    need("hta", "ijson", "pandas", "xprof")


def torch_pair(name: str) -> tuple[Path, Path]:
    return (DATA / f"torch_cpu_pair_{name}_here.pt.trace.json.gz",
            DATA / f"torch_cpu_pair_{name}_there.pt.trace.json.gz")


def compared(capsys, here: Path, there: Path, *args) -> dict:
    status, out, err = run(capsys, here, "--against", there, "--json", *args)
    assert status == 0, err
    return json.loads(out)


def differing(doc: dict) -> dict[str, dict]:
    return {p["part"]: p for p in doc["parts"] if p["differs"]}


# ---- the real pairs, each to the verdict it gave as made (tests/traces/AGAINST.md) -------------

def test_fewer_dataloader_workers_is_put_down_to_the_pipeline(capsys):
    doc = compared(capsys, *torch_pair("workers"))
    parts = differing(doc)
    assert list(parts) == ["input"]
    cause = parts["input"]["put_down_to"]
    assert cause["kind"] == "stack"
    assert "no DataLoader workers" in cause["text"].split(" here,")[0]
    assert "_MultiProcessingDataLoaderIter" in cause["text"].split(" here,")[1]
    assert doc["step_ratio"] > 1.2
    assert doc["verdict"].startswith("Your step takes 1.")
    assert "input waits" in doc["verdict"]


def test_one_thread_against_two_is_unexplained_by_the_same_machines_ceilings(capsys):
    # The same results on both sides: no ceiling differs, the trace does not record torch's
    # threads, the ops are the same: what is left is unexplained, never a made-up cause.
    doc = compared(capsys, *torch_pair("threads"), "--results", UNPINNED,
                   "--against-results", UNPINNED)
    parts = differing(doc)
    assert "gemm" in parts
    assert {p["put_down_to"]["kind"] for p in parts.values()} == {"unexplained"}
    assert doc["here"]["results"] and doc["there"]["results"]


def test_a_ceiling_that_points_the_other_way_explains_nothing(capsys):
    # Pinned to one CPU here (cpu.affinity_cpus 1 against 2): the ceiling says slower here, the
    # trace was faster here (two threads on the loaded machine's two cores wait for each other).
    doc = compared(capsys, *torch_pair("pinned"), "--results", PINNED,
                   "--against-results", UNPINNED)
    parts = differing(doc)
    assert parts and all(p["ratio"] < 1 for p in parts.values())
    assert all(p["put_down_to"]["kind"] != "ceiling" for p in parts.values())


def test_the_cpus_ceiling_explains_a_step_slower_where_fewer_may_run_it():
    here, there = ceilings(load_prices([str(PINNED)]).run), ceilings(load_prices(
        [str(UNPINNED)]).run)
    assert here["cpus"].value == 1 and there["cpus"].value == 2
    found = against.ceiling_why("cpus", here, there, 1.8)
    assert found and found.kind == "ceiling" and found.explains == 2
    assert against.ceiling_why("cpus", here, there, 0.5) is None


def test_two_profiles_of_one_run_differ_by_nothing_beyond_their_spread(capsys):
    doc = compared(capsys, *torch_pair("same"))
    assert not differing(doc)
    assert doc["verdict"].startswith("No difference beyond the spread of the steps")
    # the same ops, by name and count, on both sides
    assert not doc["here_only"] and not doc["there_only"]
    assert all(o["calls_here"] == o["calls_there"] for o in doc["ops"])


def test_tensorflow_without_onednn_opts_shows_no_op_library_of_its_own(capsys):
    doc = compared(capsys, DATA / "tf_cpu_pair_onednn_here.xplane.pb",
                   DATA / "tf_cpu_pair_onednn_there.xplane.pb")
    assert doc["framework"] == "TensorFlow"
    assert doc["here"]["stack"] == doc["there"]["stack"] == {"oneDNN's ops (_Mkl*)": "none"}
    assert not doc["here_only"] and not doc["there_only"]
    assert "oneDNN" not in doc["verdict"]
    assert any(o["kind"] == "gemm" and o["name"] == "MatMul" for o in doc["ops"])


def test_the_parts_add_up_to_a_cpu_step():
    from gapbench_report.inputs.traces import read_profile

    for side in torch_pair("workers"):
        profile = read_profile(side)
        parts = against.split(profile)
        assert sum(parts.values()) == pytest.approx(profile.step_seconds, rel=0.01)
        assert len(profile.step_inputs) == len(profile.step_ops) == profile.steps


def test_a_device_trace_splits_into_kernels_copies_and_launches(capsys):
    doc = compared(capsys, DATA / "synthesised_gpu_pageable.pt.trace.json.gz",
                   DATA / "synthesised_gpu_clean.pt.trace.json.gz")
    parts = {p["part"]: p for p in doc["parts"]}
    assert {"gemm", "copies", "launches"} <= set(parts)
    assert parts["gemm"]["differs"] is False  # the same GEMM kernel, 4 a step, on both
    copies = parts["copies"]
    assert copies["differs"] and copies["put_down_to"]["kind"] == "stack"
    assert re.search(r"pageable here, pinned there", copies["put_down_to"]["text"])


# ---- the rules on profiles made here: the work that differs -----------------------------------

def profile(ops: dict[str, float], counts: dict[str, float], **fields) -> Profile:
    steps = [sum(ops.values())] * 3
    return Profile("p.json", "PyTorch", steps=3, step_seconds=steps[0], step_lengths=steps,
                   op_seconds=ops, op_counts=counts, busy_op_seconds=steps[0],
                   step_inputs=[0.0] * 3, step_gaps=[0.0] * 3, step_ops=[ops] * 3, **fields)


def test_an_op_on_one_side_only_is_the_work_differing():
    here = profile({"aten::addmm": 0.02, "aten::relu": 0.001}, {"aten::addmm": 2, "aten::relu": 1})
    there = profile({"aten::mm": 0.01, "aten::relu": 0.001}, {"aten::mm": 2, "aten::relu": 1})
    c = against.compare(here, there)
    gemm = next(p for p in c.parts if p.key == "gemm")
    assert gemm.differs and gemm.why.kind == "work"
    assert "aten::addmm" in gemm.why.text and "aten::mm" in gemm.why.text
    assert [o.name for o in c.added] == ["aten::addmm"]
    assert [o.name for o in c.removed] == ["aten::mm"]


def test_more_calls_of_the_same_ops_is_the_work_differing_and_a_batch_before_it():
    here = profile({"aten::addmm": 0.02}, {"aten::addmm": 4})
    there = profile({"aten::addmm": 0.01}, {"aten::addmm": 2})
    gemm = next(p for p in against.compare(here, there).parts if p.key == "gemm")
    assert gemm.why.kind == "work" and "4 ops a step here, 2 there" in gemm.why.text
    here.batch, there.batch = 64, 32
    gemm = next(p for p in against.compare(here, there).parts if p.key == "gemm")
    assert gemm.why.text == "batch 64 here, 32 there"


def test_pinned_against_pageable_copies_is_a_stack_fact():
    here = profile({"aten::copy_": 0.02}, {"aten::copy_": 1},
                   copies=[Copies("h2d", "pageable", 1, 1e8, 0.02)])
    there = profile({"aten::copy_": 0.002}, {"aten::copy_": 1},
                    copies=[Copies("h2d", "pinned", 1, 1e8, 0.002)])
    copies = next(p for p in against.compare(here, there).parts if p.key == "copies")
    assert copies.why.kind == "stack"
    assert copies.why.text == "the copies' host memory differs, pageable here, pinned there"


def test_steps_that_overlap_are_no_difference():
    here, there = profile({"aten::addmm": 0.02}, {"aten::addmm": 2}), \
        profile({"aten::addmm": 0.021}, {"aten::addmm": 2})
    here.step_lengths, there.step_lengths = [0.018, 0.02, 0.022], [0.019, 0.021, 0.023]
    here.step_ops = [{"aten::addmm": x} for x in here.step_lengths]
    there.step_ops = [{"aten::addmm": x} for x in there.step_lengths]
    c = against.compare(here, there)
    assert not any(p.differs for p in c.parts)
    assert c.verdict.startswith("No difference beyond the spread of the steps")


@pytest.mark.parametrize("name, kind", [
    ("aten::addmm", "gemm"), ("autograd::engine::evaluate_function: AddmmBackward0", "gemm"),
    ("aten::lstm", "rnn"), ("_FusedMatMul", "gemm"), ("Conv2DBackpropFilter", "gemm"),
    ("aten::copy_", "copies"), ("Memcpy HtoD (Pinned -> Device)", "copies"),
    ("aten::relu", "elementwise"), ("BiasAddGrad", "elementwise"),
    ("aten::cross_entropy_loss", "other_ops"), ("ReadVariableOp", "other_ops")])
def test_op_kinds_by_name(name, kind):
    assert against.kind_of(name) == kind


# ---- bad input: one line, exit 2 ----------------------------------------------------------------

def test_a_pytorch_trace_against_a_tensorflow_one_is_refused(capsys):
    status, out, err = run(capsys, torch_pair("same")[0], "--against",
                           DATA / "tf_cpu_pair_onednn_here.xplane.pb")
    assert status == 2 and not out
    assert "a PyTorch trace" in err and "a TensorFlow one" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize("args, said", [
    (["--against-results", str(UNPINNED)], "--against-results needs --against"),
    (["--against", str(DATA)], "--against takes one trace"),
])
def test_bad_options_are_refused_in_one_line(capsys, args, said):
    status, out, err = run(capsys, torch_pair("same")[0], *args)
    assert status == 2 and not out and said in err
    assert len(err.strip().splitlines()) == 1


def test_two_traces_with_against_are_refused(capsys):
    here, there = torch_pair("same")
    status, _, err = run(capsys, here, there, "--against", there)
    assert status == 2 and "TRACE with --against takes one trace, not 2" in err


def test_out_writes_the_page_and_markdown(capsys, tmp_path):
    here, there = torch_pair("workers")
    status, out, _ = run(capsys, here, "--against", there, "--out", tmp_path)
    assert status == 0
    assert (tmp_path / "explain.md").read_text(encoding="utf-8") == out
    page = (tmp_path / "explain.html").read_text(encoding="utf-8")
    assert "explain --against" in page and "input waits" in page


# ---- docs/explain.md's excerpt is this command's output -----------------------------------------

def test_the_docs_excerpt_is_the_commands_output(capsys):
    text = DOCS.read_text(encoding="utf-8")
    section = text[text.index("## Two traces"):]
    excerpt = section[section.index("```markdown\n") + 12:]
    excerpt = excerpt[:excerpt.index("```")]
    here, there = torch_pair("workers")
    status, out, _ = run(capsys, here, "--against", there)
    assert status == 0
    for line in excerpt.strip().splitlines():
        # the excerpt names the files by their committed path, the output by the path given
        assert line in out, line


# ---- the machines' ceilings and the probes' stack facts, from committed baselines --------------

BASELINES = Path(__file__).resolve().parents[2] / "results" / "baselines"


def device_profile(kernels: dict[str, float]) -> Profile:
    steps = [0.02] * 3
    return Profile("gpu.json", "PyTorch", has_device=True, steps=3, step_seconds=0.02,
                   step_lengths=steps, kernel_seconds=kernels,
                   kernel_counts=dict.fromkeys(kernels, 4.0))


def test_the_gpus_memory_bandwidth_explains_element_wise_kernels_but_not_gemms():
    # The committed H100's and H200's results: the same float32 GEMM peak (51.7 and 51.3
    # TFLOP/s), their memory 3.35 and 4.92 TB/s.
    h100 = against.load_side([str(BASELINES / "h100-ubuntu24.json")])
    h200 = against.load_side([str(BASELINES / "h200-ubuntu24.json")])
    here = device_profile({"elementwise_kernel_add": 0.0075, "ampere_sgemm_128x64_nn": 0.009})
    there = device_profile({"elementwise_kernel_add": 0.005, "ampere_sgemm_128x64_nn": 0.006})
    c = against.compare(here, there, h100, h200)
    parts = {p.key: p for p in c.parts}
    memory = parts["elementwise"].why
    assert memory.kind == "ceiling" and "GPU memory" in memory.text
    assert memory.explains == pytest.approx(4916.736 / 3352.32, rel=1e-3)
    assert parts["gemm"].why.kind == "unexplained"  # the peaks agree within their spread
    assert ("element-wise ops 1.50x, 7.5 ms here, 5 ms there: the machines' GPU memory "
            "bandwidth (theoretical) explains 1.47x, 3.35 TB/s here, 4.92 TB/s there") in c.verdict


def test_a_probe_fact_that_differs_is_the_stack(tmp_path):
    # A copy of the committed H100's results and probe, its probe's threads set to 1: the same
    # ceilings on both sides, so the threads are what is left.
    for name in ("h100-ubuntu24.json", "h100-ubuntu24.framework-torch.json"):
        (tmp_path / name).write_bytes((BASELINES / name).read_bytes())
    probe = tmp_path / "h100-ubuntu24.framework-torch.json"
    doc = json.loads(probe.read_text())
    doc["context"]["framework.threads_intra_op"] = "1"
    probe.write_text(json.dumps(doc))
    here = profile({"aten::addmm": 0.03}, {"aten::addmm": 2})
    there = profile({"aten::addmm": 0.01}, {"aten::addmm": 2})
    c = against.compare(here, there, against.load_side([str(tmp_path / "h100-ubuntu24.json")]),
                        against.load_side([str(BASELINES / "h100-ubuntu24.json")]))
    gemm = next(p for p in c.parts if p.key == "gemm")
    assert gemm.why.kind == "stack"
    assert gemm.why.text == ("another number of threads per op, 1 here, 16 there "
                             "(gapbench-probe)")


# ---- ops whose names differ, matched by the trace's structure -----------------------------------

def test_ops_renamed_at_the_same_positions_are_the_same_work():
    here = profile({"aten::linear": 0.03, "aten::relu": 0.001},
                   {"aten::linear": 1, "aten::relu": 1}, op_order=["aten::linear", "aten::relu"])
    there = profile({"aten::addmm": 0.01, "aten::relu": 0.001},
                    {"aten::addmm": 1, "aten::relu": 1}, op_order=["aten::addmm", "aten::relu"])
    c = against.compare(here, there)
    gemm = next(p for p in c.parts if p.key == "gemm")
    assert gemm.why.kind == "unexplained"
    assert "by the trace's position: aten::linear here, aten::addmm there" in gemm.why.text
    assert not c.added and not c.removed
    pair = next(o for o in c.ops if o.name == "aten::linear")
    assert (pair.there_name, pair.there, pair.matched_by) == ("aten::addmm", 0.01, "position")


def test_positions_that_do_not_line_up_match_nothing():
    here = profile({"aten::linear": 0.03, "aten::relu": 0.001},
                   {"aten::linear": 1, "aten::relu": 1}, op_order=["aten::linear", "aten::relu"])
    there = profile({"aten::addmm": 0.01, "aten::relu": 0.001},
                    {"aten::addmm": 1, "aten::relu": 1},
                    op_order=["aten::relu", "aten::addmm", "aten::relu"])
    c = against.compare(here, there)
    assert [o.name for o in c.added] == ["aten::linear"]
    assert next(p for p in c.parts if p.key == "gemm").why.kind == "work"


def test_tensorflow_ops_renamed_in_the_same_layers_are_the_same_work():
    layers = ["sequential/dense"]
    here = profile({"_FusedMatMul": 0.03}, {"_FusedMatMul": 1},
                   op_paths={"_FusedMatMul": layers})
    there = profile({"MatMul": 0.01}, {"MatMul": 1}, op_paths={"MatMul": layers})
    here.framework = there.framework = "TensorFlow"
    c = against.compare(here, there)
    assert [(o.name, o.there_name, o.matched_by) for o in c.ops] == [
        ("_FusedMatMul", "MatMul", "layers")]
    assert not c.added and not c.removed
