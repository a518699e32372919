"""explain's round 4 (issue 51): host time with no op running, a model's loop over time steps told
from a loop over elements, a loss per sample, one ranking whether or not the fixes are priced,
findings that share time saying so, the loaded machine named, and what would price a finding
that has no price. The hold-out of issue 51 (tests/traces/HOLDOUT.md; made by
tests/traces/make_torch_holdout.py) is held to the answers written before it was made."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gapbench_report.cli import main as commandline
from gapbench_report.explain import rules as explain_rules
from gapbench_report.explain.rules import Answer, explain, explained, notes
from gapbench_report.inputs import traces

DATA = Path(__file__).parent / "data" / "traces"
RESULTS_VM = DATA / "gapbench_results_vm.json"
LOOP, SYNC, SERIAL, BATCH, BURST, GAP, STEPS = (
    "per_element_loop", "sync_calls", "input_no_prefetch", "small_batch", "op_burst", "host_gap",
    "timestep_loop")


@pytest.fixture
def pytorch():
    for module in ("hta", "ijson", "pandas"):
        pytest.importorskip(module)


# ---- the hold-out of issue 51, as written before it was made ---------------------------------
# trace -> (the findings, the first leading; "loaded": the load note; "small": the note that
# names a small batch and record_shapes). A loop is per_element_loop (the loss per sample).
HOLDOUT_51 = {
    "loss_per_sample.defaults": ([LOOP], ()),
    "loss_per_sample": ([LOOP], ()),
    "nested_list_batch.defaults": ([GAP], ()),
    "nested_list_batch": ([GAP], ()),
    "tiny_layers_batch1.defaults": ([], ("small",)),
    "tiny_layers_batch1": ([BATCH], ()),
    "rnn_cell_loop.defaults": ([STEPS], ()),
    "rnn_cell_loop": ([STEPS], ()),
    "lstm_cell_loop.defaults": ([STEPS], ()),
    "item_accuracy.defaults": ([LOOP, SYNC], ()),
    "row_minmax_index.defaults": ([LOOP], ()),
    "dataloader_lists.defaults": ([SERIAL], ()),
    "numpy_augment_in_step.defaults": ([GAP], ()),
    "clean_cnn.defaults": ([], ()),
    "clean_mlp_adamw.defaults": ([], ()),
    "clean_nn_lstm.defaults": ([], ()),
    "clean_embedding_bag.defaults": ([], ()),
    "clean_conv_bn_dropout.defaults": ([], ()),
    "clean_autocast_bf16.defaults": ([], ()),
    "loaded_clean_mlp.defaults": ([], ("loaded",)),
    "loaded_row_minmax.defaults": ([LOOP], ("loaded",)),
}


def said(answer_notes: list[str], what: str) -> bool:
    if what == "loaded":
        return any(n.startswith("The machine was loaded while it was traced") for n in
                   answer_notes)
    return any("a small batch" in n and "record_shapes=True" in n for n in answer_notes)


@pytest.mark.parametrize("name", HOLDOUT_51)
def test_issue_51s_hold_out_as_written_before_it_was_made(pytorch, name):
    profile = traces.read_profile(DATA / f"torch_cpu_h51_{name}.pt.trace.json.gz")
    assert profile.shapes != name.endswith(".defaults")
    expected, noted = HOLDOUT_51[name]
    found = explain(profile, None)
    assert [f.rule for f in found] == expected, [(f.rule, f.text) for f in found]
    answer = Answer(profile, found, notes(profile, None))
    for what in noted:
        assert said(answer.notes, what), answer.notes


def test_the_hold_out_is_the_one_written_down():
    written = (Path(__file__).parent / "traces" / "HOLDOUT.md").read_text(encoding="utf-8")
    table = written.split("# The hold-out of issue 51")[1].split("## The first run")[0]
    rows = {(line.split("|")[1].strip().strip("`"), line.split("|")[2].strip())
            for line in table.splitlines() if line.startswith("| `")}
    assert rows == {(n.removesuffix(".defaults"), "defaults" if n.endswith(".defaults")
                     else "shapes") for n in HOLDOUT_51}
    assert len(rows) >= 20 and all((DATA / f"torch_cpu_h51_{n}.pt.trace.json.gz").exists()
                                   for n in HOLDOUT_51)


# ---- the rules, each on its own ---------------------------------------------------------------

def profile(step: float = 0.01, **fields) -> traces.Profile:
    p = traces.Profile("made.pt.trace.json.gz", "PyTorch", steps=1, step_seconds=step)
    for k, v in fields.items():
        setattr(p, k, v)
    return p


def test_host_time_with_no_op_is_a_finding_with_its_share_from_its_threshold():
    share = explain_rules.HOST_GAP_SHARE
    assert explain(profile(host_gap_seconds=0.01 * share * 0.99), None) == []
    (f,) = explain(profile(host_gap_seconds=0.01 * share, host_gap_largest=0.002,
                           host_gap_between=("aten::empty", "aten::to"),
                           host_gap_from_python=0.01 * share), None)
    assert f.rule == GAP and f.lost == pytest.approx(0.01 * share)
    assert "for 3 ms of each 10 ms step (30%; the longest gap 2 ms)" in f.text
    assert "inside torch.tensor(), between its aten::empty and its aten::to" in f.text
    assert "torch.from_numpy" in f.text
    (other,) = explain(profile(host_gap_seconds=0.005, host_gap_between=("aten::mul", "")),
                       None)
    assert "mostly between aten::mul and (an op with no name): Python's own work" in other.text


def runs(pattern: list[str], times: int) -> traces.Runs:
    names = pattern * times
    n = len(names)
    return traces.find_runs([10.0 * i for i in range(n)], [5.0] * n, names)


def test_a_loop_over_time_steps_is_told_from_a_loop_over_elements():
    """The hand-written RNN was read as a per-element loop (its x[:, t] is a select per step),
    with a row normalisation's vectorised formula as its fix."""
    rnn = runs(["aten::select", "aten::linear", "aten::linear", "aten::add", "aten::tanh"], 20)
    assert len(rnn.timesteps) == 1 and not rnn.loops and not rnn.bursts
    elements = runs(["aten::select", "aten::mul", "aten::add", "aten::clamp"], 20)
    assert len(elements.loops) == 1 and not elements.timesteps
    # a library cell stepped in Python, however long each call
    cells = traces.find_runs([1000.0 * i for i in range(32)], [500.0] * 32,
                             ["aten::select", "aten::lstm_cell"] * 16)
    assert len(cells.timesteps) == 1 and cells.timesteps[0].ops == 31
    p = profile(timesteps=[rnn.timesteps[0].per_step(1e-6, 1.0)])
    (f,) = explain(p, None)
    assert f.rule == STEPS and f.family == "lstm"
    assert "nn.LSTM, nn.GRU, nn.RNN over the whole sequence" in f.text
    assert "x.std(1" not in f.text and "mostly aten::linear" not in f.text


def test_a_loss_per_sample_is_a_loop_over_samples():
    """F.cross_entropy(logits[i:i+1], y[i:i+1]) per sample: slices and a loss each, which read
    as a model's layers before."""
    found = runs(["aten::slice", "aten::slice", "aten::cross_entropy_loss", "aten::mul",
                  "aten::add"], 16)
    (loop,) = found.loops
    assert loop.what == "samples" and not found.bursts
    (f,) = explain(profile(loops=[loop.per_step(1e-6, 1.0)]), None)
    assert "a loop over the batch's samples, a loss computed for each" in f.text
    assert "reduction='none'" in f.text


def test_one_order_whether_or_not_the_fixes_are_priced():
    """By the time each costs in the trace: a priced saving is shown beside it, never used to
    reorder (the reads' 0.9 ms priced at 5 ms no longer lead the loop's 1 ms)."""
    def f(rule, lost, saving):
        return explained(rule, "warning", rule, "", lost, saving, "", "", rule)
    ranked = sorted([f("a", 5e-3, None), f("b", 9e-3, 1e-3), f("c", 1e-3, 7e-3)],
                    key=explain_rules.rank)
    assert [x.rule for x in ranked] == ["b", "a", "c"]
    p = profile(step=0.02)
    verdict = explain_rules.verdict(p, ranked)
    assert verdict.startswith("Fix first: b (costs 9 ms of 20 ms a step; saves about 1 ms, "
                              "measured here); then a (costs 5 ms of 20 ms a step); c (")


def test_the_order_is_the_same_with_and_without_results(pytorch, capsys):
    trace = DATA / "torch_cpu_loop_in_dataset.pt.trace.json.gz"
    orders = []
    for extra in ([], ["--results", str(RESULTS_VM)]):
        assert commandline.main(["explain", str(trace), "--json", *extra]) == 0
        doc = json.loads(capsys.readouterr().out)["traces"][0]
        orders.append([(f["rule"], f["lost_seconds_per_step"]) for f in doc["findings"]])
        assert len(doc["findings"]) == 2
    assert orders[0] == orders[1]


def test_findings_that_share_time_say_so_and_their_shares_do_not_add_silently(pytorch):
    """A CPU trace's sync reads are its loop's: both said, and the note counts them once."""
    p = traces.read_profile(DATA / "torch_cpu_h51_item_accuracy.defaults.pt.trace.json.gz")
    found = explain(p, None)
    assert {f.rule for f in found} == {LOOP, SYNC}
    for f in found:
        assert "Counted twice: " in f.text and "the two do not add" in f.text
    answer = Answer(p, found, notes(p, None))
    (note,) = [n for n in answer.notes if n.startswith("The findings' times add to")]
    assert "is counted in two of them: together they take" in note
    # shares past 100% with nothing shared are said too
    p = profile(step=0.01, host_gap_seconds=0.008, timesteps=[traces.Loop(500, 0.006, "x")])
    answer = Answer(p, explain(p, None), [])
    assert any("past the 10 ms step (140%)" in n for n in answer.notes), answer.notes


def test_a_loaded_machine_is_named_with_what_it_means():
    quiet = profile(stalls=0.0)
    assert explain_rules.load_note(quiet) is None
    below = profile(stalls=1.0, stall_seconds=0.01 * explain_rules.LOADED_SHARE * 0.9)
    assert explain_rules.load_note(below) is None
    loaded = profile(stalls=2.0, stall_seconds=0.004,
                     stall_examples=[("aten::add_", 0.0082, 5e-6)])
    note = explain_rules.load_note(loaded)
    assert note.startswith("The machine was loaded while it was traced: 2 tiny ops a step took "
                           "10x their kind's median time or more, and 1 ms or more (aten::add_ "
                           "8.2 ms (its median 5 µs))")
    assert "The stalls add 4 ms a step (40%): every figure here includes them" in note


def test_stalls_are_counted_from_the_ops_of_their_kind(pytorch):
    """The loaded traces show them; a trace made on an idle core shows none."""
    loaded = traces.read_profile(DATA / "torch_cpu_h51_loaded_row_minmax.defaults.pt.trace.json.gz")
    assert loaded.stalls > 0 and loaded.stall_examples
    for _name, seconds, median in loaded.stall_examples:
        assert seconds >= max(10 * median, 1e-3)
    calm = traces.read_profile(DATA / "torch_cpu_h51_nested_list_batch.defaults.pt.trace.json.gz")
    assert calm.stalls == 0


def test_a_finding_without_a_price_here_says_what_would_price_it(pytorch, capsys):
    """sync_calls on a CPU: the results have no synchronisation's cost (a GPU's)."""
    trace = DATA / "torch_cpu_h51_item_accuracy.defaults.pt.trace.json.gz"
    assert commandline.main(["explain", str(trace), "--json", "--results",
                             str(RESULTS_VM)]) == 0
    doc = json.loads(capsys.readouterr().out)["traces"][0]
    (sync,) = [f for f in doc["findings"] if f["rule"] == SYNC]
    assert sync["saving_seconds_per_step"] is None
    assert "not priced: these results have no synchronisation's cost (overhead/launch/gpu/" \
           "what:sync, measured only on a machine with a GPU)" in sync["basis"]


def test_quick_layers_without_shapes_are_noted():
    p = profile(layer_ops=18.0, layer_op_seconds=16e-6)
    note = explain_rules.small_layers_note(p)
    assert "take 16 µs each on the host (the median of 18 matmuls" in note
    assert "record_shapes=True" in note
    assert explain_rules.small_layers_note(profile(layer_ops=18.0, layer_op_seconds=80e-6)) \
        is None
    assert explain_rules.small_layers_note(profile(layer_ops=18.0, layer_op_seconds=16e-6,
                                                   shapes=True)) is None


def test_any_finding_the_results_do_not_price_names_the_rows_that_would():
    burst = profile(bursts=[traces.Loop(300, 0.005, "aten::mul", names={"aten::mul": 300})])

    class NoRows:  # results without preprocess/ rows: no price for writing the loop vectorized
        def vectorized(self, device, seconds):
            return None

    (f,) = explain(burst, NoRows())
    assert f.saving is None and f.basis.endswith(
        "; not priced: these results have no preprocess/ rows that price it: gapbench's "
        "preprocess family, run on this machine, would")
    (unasked,) = explain(burst, None)
    assert "not priced" not in unasked.basis
