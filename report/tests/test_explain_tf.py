"""gapbench-report explain on TensorFlow and Keras traces (issue 59): the steps found however the
user marked them (Keras 3's fit with its TensorBoard callback, Trace with and without _r=1, none),
a step holding a tf.while_loop (an LSTM on a CPU) not taken apart, tf.data's map read as serial or
parallel by its own parameters, the findings in TensorFlow's words, and never an all-clear on a
trace whose steps were not judged.

The traces (tests/data/traces/tf_cpu_<job>.xplane.pb) are real TensorFlow 2.21 / Keras 3.15 CPU
traces made on the 2-core machine by tests/traces/make_tf_traces.py (its JOBS); the hold-out of
issue 59 (tf_cpu_h59_*, tests/traces/HOLDOUT.md) is marked HOLDOUT_59.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gapbench_report.explain import rules as explain_rules
from gapbench_report.explain.writer import as_json, markdown
from gapbench_report.inputs import tf_steps, traces
from tests.test_explain import DATA, answer, need, rules, run

# Each trace: the findings it must fire (all of them and nothing else), the one that leads the
# verdict (None: nothing leads), its steps, and whether they are marked.
TF_JOBS = {
    # Keras 3's fit, profiled by its TensorBoard callback (profile_batch=(3, 6)): "Profiled batch"
    # markers without _r=1, which xprof's step analysis does not take
    "tf_cpu_fit_map": ({"input_no_prefetch"}, "input_no_prefetch", 4, True),
    "tf_cpu_fit_clean": (set(), None, 4, True),
    "tf_cpu_fit_batch2": ({"small_batch"}, "small_batch", 4, True),  # batch_size from tf.data
    # an LSTM (a tf.while_loop on a CPU) in the guide's Trace("train", step_num=i, _r=1)
    "tf_cpu_lstm_map": ({"input_no_prefetch"}, "input_no_prefetch", 4, True),
    # its parallel, prefetched twin waits 5% for input: of note, never leading
    "tf_cpu_lstm_clean": ({"input_bound"}, None, 4, True),
    # Trace("train", step_num=i) without _r=1; a per-row NumPy loop on the batch in the step
    "tf_cpu_numpy_rows": ({"host_gap"}, "host_gap", 4, True),
    # tf.py_function of the same NumPy loop inside the compiled step
    "tf_cpu_py_function": ({"python_op"}, "python_op", 4, True),
    # TF1: a Session.run per sample, 64 a step
    "tf_cpu_session_per_sample": ({"session_runs"}, "session_runs", 4, True),
    # no marker at all: the whole trace as one step, said so
    "tf_cpu_unmarked_map": ({"input_no_prefetch"}, "input_no_prefetch", 1, False),
}
# Issue 59's hold-out, written before its rules (HOLDOUT.md), scored once at the end; held here to
# what that run found, its miss included, so that a change to the rules shows against it.
HOLDOUT_59 = {
    "tf_cpu_h59_fit_lstm_map": ({"input_no_prefetch"}, "input_no_prefetch", 4, True),
    "tf_cpu_h59_fit_lstm_clean": (set(), None, 4, True),
    "tf_cpu_h59_gru_trace_map": ({"input_no_prefetch"}, "input_no_prefetch", 4, True),
    # as written ("no input finding leads"), not the ideal: a 9% wait, of note
    "tf_cpu_h59_gru_trace_clean": ({"input_bound"}, None, 4, True),
    "tf_cpu_h59_keras2_numpy_rows": ({"host_gap"}, "host_gap", 4, True),
    # the MISS: the vectorised NumPy still takes 34% of a 4.2 ms step outside TensorFlow
    "tf_cpu_h59_keras2_numpy_vectorized": ({"host_gap", "input_bound"}, "host_gap", 4, True),
}
# Words of PyTorch's that no finding on a TensorFlow trace may say.
PYTORCH_WORDS = ("DataLoader", "keepdim=True", "record_shapes", "torch.", "nn.LSTM")


@pytest.fixture(autouse=True)
def tensorflow():
    need("xprof")


@pytest.mark.parametrize("name", [*TF_JOBS, *(pytest.param(n, id=n + "-HOLDOUT")
                                              for n in HOLDOUT_59)])
def test_each_tensorflow_trace_is_judged_by_its_steps_and_leads_with_its_cause(name):
    expected, lead, steps, marked = {**TF_JOBS, **HOLDOUT_59}[name]
    profile = traces.read_profile(DATA / f"{name}.xplane.pb")
    assert (profile.steps, profile.step_marked) == (steps, marked)
    found = explain_rules.explain(profile, None)
    assert {f.rule for f in found} == expected, [(f.rule, f.text) for f in found]
    verdict = explain_rules.verdict(profile, found)
    if lead:
        assert found[0].rule == lead and verdict.startswith(f"Fix first: {found[0].cause} (")
    else:
        assert verdict.startswith("Nothing in this trace points to a known cause")
    for f in found:
        assert not any(w in f.text for w in PYTORCH_WORDS), (f.rule, f.text)
    if not marked:
        assert "the whole trace read as one step" in verdict
        assert any(n.startswith("No step markers: the whole trace") for n in profile.notes)


def test_keras_fit_and_an_lstm_step_say_where_their_steps_came_from(capsys):
    fit = answer(capsys, DATA / "tf_cpu_fit_map.xplane.pb")
    assert any('4 "Profiled batch" markers' in n and "found none" in n and "_r=1" in n
               for n in fit["notes"])
    lstm = answer(capsys, DATA / "tf_cpu_lstm_map.xplane.pb")
    assert any('4 "train" markers' in n and "tf.while_loop" in n for n in lstm["notes"])


def test_a_serial_map_is_told_by_its_parameters_and_fixed_in_tf_data_words(capsys):
    doc = answer(capsys, DATA / "tf_cpu_fit_map.xplane.pb")
    text = doc["findings"][0]["text"]
    assert "tf.data's map() one element at a time (fused(MapDataset" in text
    assert "num_parallel_calls=tf.data.AUTOTUNE" in text and ".prefetch(tf.data.AUTOTUNE)" in text
    assert doc["findings"][0]["evidence"]["parallel"] is False
    clean = answer(capsys, DATA / "tf_cpu_lstm_clean.xplane.pb")
    assert clean["findings"][0]["evidence"]["parallel"] is True
    assert clean["findings"][0]["severity"] == "info"


def stage(kind: str, **args) -> dict:
    return {"ph": "X", "name": kind, "ts": 0.0, "dur": 1.0, "pid": 1, "tid": 2, "args": args}


@pytest.mark.parametrize("stages, parallel, prefetch", [
    # map().batch() fused by tf.data: one element at a time, whatever the fused op's name
    ([stage("Iterator::MapAndBatch", name="fused(MapDataset:2,BatchDatasetV2:3)",
            parallelism="1", batch_size="32")], False, False),
    ([stage("Iterator::MapAndBatch", name="fused(ParallelMapDatasetV2:2,BatchDatasetV2:3)",
            parallelism="2", batch_size="32"),
      stage("Iterator::Prefetch", name="PrefetchDataset:4")], True, True),
    # AUTOTUNE not yet tuned (-1) runs in parallel; tf.data's own injected prefetch is no user's
    ([stage("Iterator::ParallelMapV2", name="ParallelMapDatasetV2:1", parallelism="-1"),
      stage("Iterator::Prefetch", name="inject/prefetch_MapDataset/_3")], True, False),
    # a plain sequential map, and one parallel: the pipeline is as slow as its serial one
    ([stage("Iterator::Map", name="MapDataset:1"),
      stage("Iterator::ParallelMapV2", name="ParallelMapDatasetV2:2", parallelism="2")],
     False, False),
    ([stage("Iterator::Generator", name="GeneratorDataset:3")], False, False),
    ([stage("Iterator::Range", name="RangeDataset:0")], None, False),
])
def test_the_pipelines_parallelism_is_read_from_its_parameters(stages, parallel, prefetch):
    pipeline = tf_steps.pipeline_of(stages)
    assert (pipeline.parallel, pipeline.prefetch) == (parallel, prefetch)


def span(name: str, ts: float, dur: float, tid: int = 1, **args) -> dict:
    return {"ph": "X", "name": name, "ts": ts, "dur": dur, "pid": 1, "tid": tid, "args": args}


def test_steps_are_the_outermost_step_num_spans_of_one_thread_or_the_whole_trace():
    events = [span("Profiled batch", 0, 100, step_num="3"),  # Keras 3: no _r
              span("inner", 10, 20, step_num="0"),  # a marker inside a step is no step
              span("Profiled batch", 100, 50, step_num="4"),
              span("train", 0, 5, tid=9, step_num="7"),  # another thread's, fewer
              span("TensorListPushBack", 20, 1, tid=3, iter_num="5")]  # a while loop's
    steps = tf_steps.find_steps(events)
    assert steps.spans == [(0, 100), (100, 150)] and steps.marker == "Profiled batch"
    assert steps.thread == (1, 1) and steps.marked
    whole = tf_steps.find_steps([span("MatMul", 5, 10), span("Relu", 40, 20, tid=4)])
    assert whole.spans == [(5, 60)] and not whole.marked
    assert tf_steps.find_steps([]) is None


def test_input_waits_and_host_gaps_of_a_step():
    steps = tf_steps.find_steps([span("train", 0, 1000, step_num="0")])
    events = [span("train", 0, 1000, step_num="0"),
              span(tf_steps.GET_NEXT, 10, 90), span(tf_steps.GET_NEXT, 50, 100, tid=5),
              span("TFE_Py_FastPathExecute_C", 150, 50), span("tf.constant", 800, 150)]
    assert tf_steps.input_waits(events, steps) == [140]
    (gaps,) = tf_steps.host_gaps(events, steps, 100)
    # 200-800 (NumPy, say) and nothing under 100 us (950-1000 is 50)
    assert (gaps.seconds_us, gaps.longest_us) == (600, 600)
    assert gaps.between == ("TFE_Py_FastPathExecute_C", "tf.constant")


@pytest.mark.parametrize("framework, fix", [
    ("TensorFlow", "tf.profiler.experimental.Trace(\"train\", step_num=step)"),
    ("PyTorch", "prof.step()")])
def test_a_trace_with_no_step_judged_is_never_an_all_clear(framework, fix):
    profile = traces.Profile("empty.xplane.pb", framework)  # 0 steps, no length
    answer_ = explain_rules.Answer(profile, explain_rules.explain(profile, None),
                                   explain_rules.notes(profile, None))
    assert answer_.verdict.startswith("Not judged: it holds no step at all") and fix in \
        answer_.verdict and "Nothing in this trace" not in answer_.verdict
    assert as_json([answer_], None)["traces"][0]["judged"] is False
    assert f"{framework}: no step judged." in markdown([answer_], None)


def test_the_trace_is_read_however_its_path_is_written(capsys, tmp_path, monkeypatch):
    shutil.copy(DATA / "tf_cpu_fit_batch2.xplane.pb", tmp_path / "vm.xplane.pb")
    monkeypatch.chdir(tmp_path)
    for written in ("vm.xplane.pb", "./vm.xplane.pb", ".", str(tmp_path / "vm.xplane.pb")):
        status, out, err = run(capsys, written, "--json")
        assert status == 0 and "small_batch" in out, (written, err)


def test_the_holdout_is_the_one_written_down():
    written = (Path(__file__).parent / "traces" / "HOLDOUT.md").read_text(encoding="utf-8")
    table = written.split("# The hold-out of issue 59")[1]
    assert {"tf_cpu_h59_" + line.split("|")[1].strip().strip("`")
            for line in table.splitlines() if line.startswith("| `")} == set(HOLDOUT_59)


def test_the_numpy_loop_is_host_time_in_tensorflows_words(capsys):
    (finding,) = answer(capsys, DATA / "tf_cpu_numpy_rows.xplane.pb")["findings"]
    assert finding["rule"] == "host_gap" and "tf.constant" in finding["text"]
    assert "num_parallel_calls=tf.data.AUTOTUNE" in finding["text"]
    assert rules(answer(capsys, DATA / "tf_cpu_clean_many_layers.xplane.pb")) == []
