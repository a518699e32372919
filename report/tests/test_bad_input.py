"""Every kind of bad input the issue lists gets one clear line (ResultsError) or a defined
meaning, never a traceback."""

from __future__ import annotations

import json
import math

import pytest

from gapbench_report import check, compare, diagnose, render
from gapbench_report.results import COUNTERS, ResultsError, load_results
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
    (json.dumps(document([]) | {"context": {**BASE_CONTEXT, "gapbench.schema": "2"}}),
     "unknown schema version '2' (this report reads 1)"),
    ("[" * 100000, "nested too deeply"),
])
def test_unusable_files(tmp_path, text, words):
    path = tmp_path / "r.json"
    path.write_text(text)
    assert words in error_of(path)


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
