"""Every kind of bad input the issue lists gets one clear line (ResultsError) or a defined
meaning, never a traceback."""

from __future__ import annotations

import html
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gapbench_report.check import command as check
from gapbench_report.compare import command as compare
from gapbench_report.diagnose import command as diagnose
from gapbench_report.diagnose.rules import diagnose as diagnose_files
from gapbench_report.inputs.results import (
    COUNTERS,
    ResultsError,
    load_results,
    load_side,
    results_runs,
)
from gapbench_report.render import command as render
from tests.synthetic import BASE_CONTEXT, document, runs, write

NAME = "preprocess/vectorized/cpu/op:sumsq/rows:1000/cols:100/real_time"


def error_of(path) -> str:
    with pytest.raises(ResultsError) as caught:
        load_results(path)
    message = str(caught.value)
    assert "\n" not in message and str(path) in message
    return message


@pytest.mark.parametrize("text, words", [
    ("", "empty file"),
    ("   \n", "empty file"),
    ('{"context": {"gapbench.schema": "1"', "not valid JSON"),
    ("this is not json", "not valid JSON"),
    ("[1, 2, 3]", "no 'context' object"),
    (json.dumps({"context": {}}), "no 'benchmarks' list"),
    (json.dumps({"context": {"date": "x"}, "benchmarks": []}), "context lacks gapbench.schema"),
    (json.dumps(document([]) | {"context": {**BASE_CONTEXT, "gapbench.schema": "3"}}),
     "unknown schema version '3' (this report reads 1 and 2)"),
    ("[" * 100000, "nested too deeply"),
])
def test_unusable_files(tmp_path, text, words):
    path = tmp_path / "r.json"
    path.write_text(text)
    assert words in error_of(path)


def test_where_the_json_breaks_is_said_once(tmp_path):
    path = tmp_path / "r.json"
    path.write_text('{"context": "unterminated')
    assert error_of(path).endswith("not valid JSON (truncated?): Unterminated string starting "
                                   "at: line 1 column 13")


def test_missing_file_and_directory(tmp_path):
    assert "no such file" in error_of(tmp_path / "absent.json")
    assert "is a directory" in error_of(tmp_path)


def test_names_off_the_scheme(tmp_path):
    for bad in ("BM_Sumsq/1000", "preprocess/vectorized/tpu/op:sumsq", "preprocess/x/cpu/a:1/a:2"):
        path = write(tmp_path / "r.json", runs(bad, [1.0]))
        assert "does not follow" in error_of(path) or "repeats the axis" in error_of(path)


@pytest.mark.parametrize("time", [0, -1.0, float("nan"), float("inf"), "12", None, True])
def test_times_that_are_not_positive_numbers(tmp_path, time):
    entries = runs(NAME, [1.0])
    entries[0]["real_time"] = time
    path = tmp_path / "r.json"
    path.write_text(json.dumps(document(entries)))  # json writes NaN/Infinity literals
    assert "not a positive number" in error_of(path)


def test_unknown_time_unit(tmp_path):
    entries = runs(NAME, [1.0])
    entries[0]["time_unit"] = "fortnights"
    assert "unknown time_unit 'fortnights'" in error_of(write(tmp_path / "r.json", entries))


def test_duplicate_entries(tmp_path):
    entries = runs(NAME, [1.0, 1.1]) + runs(NAME, [1.0])
    assert "appears twice (repetition 0)" in error_of(write(tmp_path / "r.json", entries))


def aggregate(name: str, kind: str, value: float, **fields) -> dict:
    """A Google Benchmark aggregate entry: its name is <run_name>_<aggregate_name>."""
    return {"name": f"{name}_{kind}", "run_name": name, "run_type": "aggregate",
            "aggregate_name": kind, "repetitions": 5, "threads": 1, "iterations": 5,
            "real_time": value, "cpu_time": value, "time_unit": "ns", **fields}


def test_a_copy_with_another_name_is_no_sixth_repetition(tmp_path):
    # The loader groups by run_name and finds duplicates by name: a copy of a repetition under
    # another name would be counted as a sixth sample of NAME.
    entries = runs(NAME, [1.0] * 5)
    entries.append(dict(entries[2], name="BM_SomethingElse/7"))
    message = error_of(write(tmp_path / "r.json", entries))
    assert "benchmark #5: name 'BM_SomethingElse/7' does not match its run_name" in message
    assert NAME in message


def test_an_aggregate_named_for_another_statistic(tmp_path):
    entries = runs(NAME, [1.0] * 5) + [aggregate(NAME, "median", 1.0) | {"name": NAME + "_mean"}]
    message = error_of(write(tmp_path / "r.json", entries))
    assert f"benchmark #5: name '{NAME}_mean' does not match its run_name" in message
    assert f"names this aggregate '{NAME}_median'" in message


def test_an_aggregate_without_its_statistic(tmp_path):
    entry = aggregate(NAME, "mean", 1.0)
    del entry["aggregate_name"]
    message = error_of(write(tmp_path / "r.json", runs(NAME, [1.0] * 5) + [entry]))
    assert f"benchmark #5: aggregate '{NAME}_mean' has no aggregate_name" in message


def test_google_benchmark_names_are_accepted(tmp_path):
    threads = "peak/read/cpu/mib:256/real_time/threads:2"
    entries = runs(NAME, [1.0] * 5) + [aggregate(NAME, kind, 1.0) for kind in
                                        ("mean", "median", "stddev", "cv", "max")]
    entries += runs(threads, [1.0] * 2) + [aggregate(threads, "median", 1.0)]
    no_run_name = runs(NAME.replace("1000", "2000"), [1.0])  # older files have no run_name
    del no_run_name[0]["run_name"]
    results = load_results(write(tmp_path / "r.json", entries + no_run_name))
    assert [len(b.samples) for b in results.benchmarks().values()] == [5, 2, 1]


@pytest.mark.parametrize("counter", COUNTERS + ("iterations",))
@pytest.mark.parametrize("value", ["lots", None, True, [1], float("nan"), float("inf")])
def test_counters_that_are_not_numbers(tmp_path, counter, value):
    entries = runs(NAME, [1.0] * 3)
    entries[1][counter] = value
    path = tmp_path / "r.json"
    path.write_text(json.dumps(document(entries)))
    message = error_of(path)
    assert f"{NAME}: {counter} is {value!r}, not a finite number" in message


def test_counters_may_be_zero_and_aggregates_may_hold_nan(tmp_path):
    # A share of 0 is a measurement; Google Benchmark writes NaN for the cv of a counter that
    # is 0 in every repetition, and the report never reads an aggregate's counters.
    entries = runs(NAME, [1.0] * 3, idle_fraction=[0.0] * 3)
    entries.append(aggregate(NAME, "cv", 0.01, idle_fraction=float("nan")))
    path = tmp_path / "r.json"
    path.write_text(json.dumps(document(entries)))
    assert load_results(path).benchmarks()[NAME].counter("idle_fraction") == 0.0


def renamed_copy(tmp_path):
    """The issue's file: a copy of a repetition whose name is another benchmark's."""
    entries = runs(NAME, [1.0] * 5, bytes_per_second=[4e8] * 5)
    entries.append(dict(entries[0], name="BM_SomethingElse/7"))
    return write(tmp_path / "renamed.json", entries), "'BM_SomethingElse/7' does not match"


def lots(tmp_path):
    """The issue's file: one repetition's bytes_per_second is "lots"."""
    entries = runs(NAME, [1.0] * 5, bytes_per_second=[4e8] * 5)
    entries[3]["bytes_per_second"] = "lots"
    return write(tmp_path / "lots.json", entries), "bytes_per_second is 'lots'"


COMMANDS = {
    "check": lambda path, tmp: check.main([str(path)]),
    "compare": lambda path, tmp: compare.main([str(path), str(path)]),
    "render": lambda path, tmp: render.main([str(path), "--out", str(tmp / "report")]),
    "diagnose": lambda path, tmp: diagnose.main([str(path)]),
}


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("bad_file", [renamed_copy, lots])
def test_every_command_names_the_file_and_the_entry(tmp_path, capsys, command, bad_file):
    path, words = bad_file(tmp_path)
    assert COMMANDS[command](path, tmp_path) == 2
    out = capsys.readouterr()
    lines = out.err.splitlines()
    assert len(lines) == 1, out.err
    assert str(path) in lines[0] and words in lines[0] and NAME in lines[0]
    assert "internal error" not in lines[0] and out.out == ""
    assert not (tmp_path / "report").exists()


def test_mixed_time_units_come_back_in_seconds(tmp_path):
    entries = runs(NAME, [0.002], unit="ns") + runs(NAME.replace("1000", "2000"), [0.002],
                                                     unit="ms")
    bench = load_results(write(tmp_path / "r.json", entries)).benchmarks()
    assert [b.median for b in bench.values()] == pytest.approx([0.002, 0.002])


def test_skipped_and_failed_entries_are_never_times(tmp_path):
    entries = runs(NAME, [1.0, 2.0, 3.0])
    entries[1].update(error_occurred=True, error_message="validation failed: off", real_time=0)
    (b,) = load_results(write(tmp_path / "r.json", entries)).benchmarks().values()
    assert b.status == "failed" and b.error == "validation failed: off"
    assert b.samples == pytest.approx((1.0, 3.0))


def test_only_aggregates_keep_google_benchmarks_median(tmp_path):
    aggregate = {"name": NAME + "_median", "run_name": NAME, "run_type": "aggregate",
                 "aggregate_name": "median", "repetitions": 3, "threads": 1, "iterations": 3,
                 "real_time": 5.0, "cpu_time": 5.0, "time_unit": "ms"}
    cv = dict(aggregate, name=NAME + "_cv", aggregate_name="cv", real_time=0.02)
    (b,) = load_results(write(tmp_path / "r.json", [aggregate, cv])).benchmarks().values()
    assert b.samples == () and b.median == pytest.approx(0.005)
    assert b.aggregates["cv"] == pytest.approx(0.02)


def test_a_zero_spread_is_valid_a_zero_median_is_not(tmp_path):
    base = {"name": NAME + "_stddev", "run_name": NAME, "run_type": "aggregate",
            "aggregate_name": "stddev", "repetitions": 3, "threads": 1, "iterations": 3,
            "real_time": 0.0, "cpu_time": 0.0, "time_unit": "ns"}
    entries = runs(NAME, [1.0] * 3) + [base]
    assert load_results(write(tmp_path / "r.json", entries)).benchmarks()[NAME].median == \
        pytest.approx(1.0)
    median = dict(base, name=NAME + "_median", aggregate_name="median")
    assert "not a positive number" in error_of(write(tmp_path / "r.json", entries + [median]))


def test_unequal_repetition_counts_are_fine(tmp_path):
    entries = runs(NAME, [1.0] * 5) + runs(NAME.replace("1000", "2000"), [1.0] * 3)
    counts = [len(b.samples) for b in load_results(write(tmp_path / "r.json", entries))
              .benchmarks().values()]
    assert counts == [5, 3]


def test_five_thousand_benchmarks(tmp_path):
    entries = []
    for i in range(5000):
        entries += runs(f"transfer/pinned/gpu/dir:h2d/mode:sync/bytes:{4096 + i}/manual_time",
                        [1e-3] * 2)
    results = load_results(write(tmp_path / "r.json", entries))
    assert len(results.benchmarks()) == 5000
    assert not math.isnan(next(iter(results.benchmarks().values())).median)


# ---- values no gapbench writes: each one line naming the file and the entry ---------------------

BIG = "1" + "0" * 400  # 10^400: a JSON integer beyond every float


def raw_file(tmp_path, key: str, literal: str, run_type: str = "iteration"):
    """A file whose first entry's `key` is written as the JSON text `literal`."""
    entries = runs(NAME, [1e-3] * 3) if run_type == "iteration" else \
        runs(NAME, [1e-3] * 3) + [aggregate(NAME, "median", 1e6)]
    index = 0 if run_type == "iteration" else 3
    entries[index][key] = "@@"
    path = tmp_path / "r.json"
    path.write_text(json.dumps(document(entries)).replace('"@@"', literal))
    return path


@pytest.mark.parametrize("key, literal, words", [
    ("iterations", BIG, f"iterations is {BIG[:40]}... (401 characters), not a finite number"),
    ("real_time", BIG, f"real_time is {BIG[:40]}... (401 characters), not a positive number"),
    ("bytes_per_second", BIG, "bytes_per_second is 1000"),
    ("repetition_index", "[0]", "repetition_index is [0], not a whole number >= 0"),
    ("repetition_index", "-1", "repetition_index is -1, not a whole number >= 0"),
    ("repetition_index", "true", "repetition_index is True, not a whole number >= 0"),
    ("error_occurred", '"false"', "error_occurred is 'false', not true or false"),
    ("error_occurred", "0", "error_occurred is 0, not true or false"),
    ("skipped", '"true"', "skipped is 'true', not true or false"),
    ("aggregate_name", "[1]", "aggregate_name is [1], not a string"),
    ("real_time", "1e308", "real_time is 1e+308 ns, outside 1e-12 to 1e+06 s"),
    ("real_time", "1e-10", "real_time is 1e-10 ns, outside 1e-12 to 1e+06 s"),
])
def test_values_no_gapbench_writes_are_refused_naming_file_and_entry(tmp_path, key, literal,
                                                                       words):
    message = error_of(raw_file(tmp_path, key, literal))
    assert f"{tmp_path / 'r.json'}: {NAME}: {words}" in message
    assert len(message) < 300  # a 400-digit number is not printed whole


def test_a_time_unit_in_seconds_is_bounded_in_seconds(tmp_path):
    entries = runs(NAME, [1e-3] * 3, unit="s")
    entries[0]["real_time"] = 1.7e308
    assert "real_time is 1.7e+308 s, outside" in error_of(write(tmp_path / "r.json", entries))
    entries[0]["real_time"] = 3600.0  # an hour per iteration: slow, but a time
    assert load_results(write(tmp_path / "r.json", entries)).benchmarks()[NAME].samples


def test_a_number_of_thousands_of_digits_is_one_line(tmp_path):
    path = raw_file(tmp_path, "iterations", "1" + "0" * 5000)  # Python reads at most 4300
    assert "holds a number of thousands of digits" in error_of(path)


def test_an_aggregates_list_valued_name_is_refused(tmp_path):
    path = raw_file(tmp_path, "aggregate_name", '["median"]', run_type="aggregate")
    assert "aggregate_name is ['median'], not a string" in error_of(path)


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("key, literal", [("iterations", BIG), ("repetition_index", "[0]"),
                                          ("error_occurred", '"false"'),
                                          ("real_time", "1e308")])
def test_no_command_gives_an_internal_error_for_them(tmp_path, capsys, command, key, literal):
    path = raw_file(tmp_path, key, literal)
    assert COMMANDS[command](path, tmp_path) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and NAME in lines[0]
    assert "internal error" not in lines[0]


def test_hidden_json_files_of_a_folder_are_no_results(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    write(folder / "preprocess.json", runs(NAME, [1e-3] * 3))
    (folder / ".cpu.run.json").write_text("not even JSON")  # ci/baseline's run, in the making
    assert results_runs([folder]) == [[folder / "preprocess.json"]]
    assert load_side([folder]).benchmarks()[NAME].samples


# ---- every input read within a limit and a time; never a device, never a hang ------------------

def render_with_baseline(tmp_path, baseline: str, shell: bool = False,
                         timeout: float = 60) -> subprocess.CompletedProcess:
    """`render RUN --baseline BASELINE` as a user runs it, in a process of its own with its
    memory capped (on today's code /dev/zero read until the OOM killer came)."""
    run = write(tmp_path / "run.json", runs(NAME, [1e-3] * 3))
    command = (f"ulimit -v 4000000; exec {sys.executable} -m gapbench_report render {run} "
               f"--baseline {baseline} --out {tmp_path / 'out'}")
    env = {**os.environ, "PYTHONPATH": str(Path(render.__file__).parents[1])}
    return subprocess.run(["bash", "-c", command], capture_output=True, text=True, env=env,
                          timeout=timeout, check=False)


@pytest.mark.parametrize("baseline, words", [
    ("/dev/zero", "/dev/zero: cannot be read: a device, not a regular file"),
    ("@F", "@F: cannot be read: a FIFO or pipe with no writer (nothing was written to it)"),
    ("@B", "@B: cannot be read: 300 MiB, over the limit of 128 MiB for a results file"),
])
def test_a_device_a_fifo_nobody_writes_or_a_huge_file_as_baseline_is_refused(tmp_path, baseline,
                                                                             words):
    fifo, big = tmp_path / "fifo.json", tmp_path / "big.json"
    os.mkfifo(fifo)
    with open(big, "wb") as f:
        f.truncate(300 * 2**20)
    baseline = baseline.replace("@F", str(fifo)).replace("@B", str(big))
    done = render_with_baseline(tmp_path, baseline, timeout=30)
    words = words.replace("@F", str(fifo)).replace("@B", str(big))
    assert (done.returncode, done.stderr) == (2, f"gapbench-report render: {words}\n")
    assert not (tmp_path / "out").exists()


def test_a_baseline_from_a_process_substitution_is_read(tmp_path):
    there = write(tmp_path / "there.json", runs(NAME, [2e-3] * 3), **{"machine.id": "there"})
    done = render_with_baseline(tmp_path, f"<(cat {there})")
    assert done.returncode == 0, done.stderr
    doc = json.loads((tmp_path / "out" / "comparison.json").read_text())
    assert doc["comparisons"][0]["works"][0]["speed_ratio"] == pytest.approx(2)


def test_a_pipe_past_the_limit_is_refused(tmp_path):
    done = render_with_baseline(tmp_path, "<(cat /dev/zero)")
    assert done.returncode == 2 and done.stderr.startswith("gapbench-report render: /dev/fd/")
    assert "cannot be read: at least 128 MiB, over the limit of 128 MiB" in done.stderr


# ---- a run's context figures: finite, positive and plausible, or ignored with a note ----------

GPU_COPY = "transfer/device/gpu/bytes:268435456/manual_time"
PINNED = "transfer/pinned/gpu/dir:h2d/bytes:268435456/manual_time"


@pytest.mark.parametrize("key, value", [
    ("pcie.bandwidth_max_gbps", "1e308"), ("pcie.bandwidth_max_gbps", "-64"),
    ("gpu.memory_bandwidth_theoretical_gbps", "1e-320"),
    ("gpu.memory_bandwidth_theoretical_gbps", "-4917"),
    ("gpu.memory_bandwidth_theoretical_gbps", "inf"), ("cpu.cores", "-16"),
    ("cpu.cores", "nan"), ("cpu.cores", "1e400"), ("gpu.clock_mem_max_mhz", "0"),
    ("gpu.memory_bus_width_bits", "1e308"), ("gpu.sm_count", "-1"),
    ("stability.sgemm_gflops_start", "1e308"), ("stability.read_gbps_end", "-1"),
    ("pcie.bandwidth_current_gbps", "0"), ("load_avg", [-1.0, 0.5, 0.5]),
    ("stability.other_cpus", "-0.5"), ("stability.steal", "1.5"),
    ("stability.own_cpus", "inf"), ("stability.window_s", "-3"),
    ("stability.fma_all_gflops_end", "1e308"), ("stability.fma_threads", "0"),
])
def test_an_implausible_figure_in_a_baseline_is_ignored_with_a_note(tmp_path, capsys, key,
                                                                    value):
    """Never a crash, never the comparison dropped, never a negative ceiling as a fact."""
    context = {"gpu.name": "NVIDIA H200", "gpu.clock_mem_max_mhz": "3201",
               "pcie.bandwidth_max_gbps": "63", "cpu.cores": "16",
               "stability.sgemm_gflops_start": "200", "stability.sgemm_gflops_end": "210",
               "stability.read_gbps_start": "9", "stability.read_gbps_end": "9"}
    here, there = tmp_path / "here.json", tmp_path / "there.json"
    for path, seconds, own in ((here, 1e-4, {"machine.id": "here", "pcie.bandwidth_max_gbps": "32",
                                             "gpu.memory_bandwidth_theoretical_gbps": "3352"}),
                               (there, 7e-5, {"machine.id": "there",
                                              "gpu.memory_bandwidth_theoretical_gbps": "4917",
                                              key: value})):
        entries = runs(GPU_COPY, [seconds] * 3) + runs(PINNED, [50 * seconds] * 3)
        path.write_text(json.dumps({"context": {**BASE_CONTEXT, **context, **own},
                                    "benchmarks": entries}))
    out = tmp_path / "out"
    (out).mkdir()
    (out / "comparison.json").write_text("{}")
    code = render.main([str(here), "--baseline", str(there), "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    doc = json.loads((out / "comparison.json").read_text())
    (against,) = doc["comparisons"]
    assert len(against["works"]) == 2
    ceilings = against["baseline"]["ceilings"]
    assert all(math.isfinite(c["value"]) and c["value"] > 0 for c in ceilings.values())
    note = f"Baseline there: {key} {value!r} ignored: no plausible figure"
    summary = (out / "summary.md").read_text()
    assert note in summary and html.escape(note) in (out / "index.html").read_text()
    facts = "\n".join(line for line in summary.splitlines() if not line.startswith("> "))
    assert "-16" not in facts and "-4.92" not in facts and "-64" not in facts


def test_compare_reads_a_folders_results_files_only(tmp_path):
    """A fleet node's folder, or one a render wrote into, as a side of compare."""
    folder = tmp_path / "node"
    folder.mkdir()
    write(folder / "preprocess.json", runs(NAME, [1e-3] * 3))
    (folder / "task.json").write_text('{"exit_status": 0}')
    (folder / "comparison.json").write_text('{"schema": 1, "comparisons": []}')
    side = load_side([folder])
    assert [e.run_name for e in side.entries] == [NAME] * 3
    assert results_runs([folder]) == [[folder / "preprocess.json"]]


def test_a_fleet_nodes_file_past_the_limit_is_its_problem_unread(tmp_path):
    from gapbench_report.inputs.fleet import read_node  # noqa: PLC0415
    node = tmp_path / "node-1"
    node.mkdir()
    with open(node / "conv.json", "wb") as f:
        f.truncate(200 * 2**20)
    assert read_node(node).problems[0] == ("conv.json: cannot be read: 200 MiB, over the limit "
                                           "of 128 MiB for a node's file")


def test_an_implausible_other_work_figure_names_no_other_work(tmp_path):
    """A steal of 150% is no measurement: ignored with its note, never "other work"."""
    path = tmp_path / "conv.json"
    path.write_text(json.dumps({"context": {**BASE_CONTEXT, "stability.steal": "1.5",
                                            "stability.other_cpus": "1e9"},
                                "benchmarks": runs("conv/onednn/cpu/n:1/real_time", [1e-3] * 3)}))
    results = load_results(path)
    assert any("stability.steal '1.5' ignored" in note for note in results.ignored)
    assert "other_work" not in {f.rule for f in diagnose_files([results])}
