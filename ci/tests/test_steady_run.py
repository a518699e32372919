"""gapbench-ci steady-run: a family's file is two runs of gapbench pooled; a run whose probes
moved is replaced by one more."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from gapbench_ci import steady_run

# A stand-in for gapbench: each call writes --benchmark_out with the next (start, end) SGEMM
# probes of PROBES (a JSON list; "fail" exits 1 and writes nothing), one timed row and the CPU
# accounting of WINDOWS (seconds, other CPUs), counting calls in CALLS.
FAKE = r"""
import json, os, sys
calls = int(open(os.environ["CALLS"]).read() or 0) if os.path.exists(os.environ["CALLS"]) else 0
open(os.environ["CALLS"], "w").write(str(calls + 1))
probe = json.loads(os.environ["PROBES"])[calls]
if probe == "fail":
    sys.exit(1)
window, other = json.loads(os.environ.get("WINDOWS", "[]") or "[]")[calls] if os.environ.get(
    "WINDOWS") else (10, 0.1)
out = next(a.split("=", 1)[1] for a in sys.argv if a.startswith("--benchmark_out="))
context = {"stability.sgemm_gflops_start": str(probe[0]),
           "stability.sgemm_gflops_end": str(probe[1]), "run": str(calls + 1),
           "stability.window_s": str(window), "stability.own_cpus": "1.00",
           "stability.other_cpus": str(other), "stability.steal": "0.010"}
row = {"name": "conv/naive/cpu/n:1/real_time", "run_name": "conv/naive/cpu/n:1/real_time",
       "run_type": "iteration", "real_time": 1.0 + calls, "time_unit": "ms"}
json.dump({"context": context, "benchmarks": [row, {**row, "run_type": "aggregate"}]},
          open(out, "w"))
"""


def run(tmp_path: Path, monkeypatch, probes: list, windows: list | None = None
        ) -> tuple[int, Path, int]:
    fake = tmp_path / "fake_gapbench.py"
    fake.write_text(FAKE)
    monkeypatch.setenv("CALLS", str(tmp_path / "calls"))
    monkeypatch.setenv("PROBES", json.dumps(probes))
    monkeypatch.setenv("WINDOWS", json.dumps(windows) if windows else "")
    results = tmp_path / "conv.json"
    status = steady_run.main([str(results), "--", sys.executable, str(fake),
                              f"--benchmark_out={results}"])
    calls = int((tmp_path / "calls").read_text())
    return status, results, calls


def document(path: Path) -> dict:
    return json.loads(path.read_text())


def test_two_steady_runs_are_pooled_into_the_familys_file(tmp_path, monkeypatch):
    status, results, calls = run(tmp_path, monkeypatch, [[200, 190], [195, 205]],
                                 windows=[[10, 1.0], [30, 0.2]])
    assert (status, calls) == (0, 2)
    data = document(results)
    context = data["context"]
    assert context["gapbench.pooled_runs"] == "2" and "gapbench.rerun" not in context
    # Both processes' repetitions, tagged; Google Benchmark's aggregates dropped.
    assert [(r["real_time"], r["gapbench_process"]) for r in data["benchmarks"]] == [(1.0, 0),
                                                                                     (2.0, 1)]
    # The probes at the start of the first run and the end of the last; the accounting over both.
    assert context["stability.sgemm_gflops_start"] == "200"
    assert context["stability.sgemm_gflops_end"] == "205"
    assert context["stability.window_s"] == "40.00"
    assert context["stability.other_cpus"] == "0.40"  # (10 x 1.0 + 30 x 0.2) / 40
    assert not (tmp_path / "reruns").exists()


def test_a_run_whose_probes_moved_is_replaced_by_a_third(tmp_path, monkeypatch):
    status, results, calls = run(tmp_path, monkeypatch, [[115, 220], [180, 185], [190, 186]])
    assert (status, calls) == (0, 3)
    context = document(results)["context"]
    assert context["run"] == "2"  # the first kept run's context
    assert context["gapbench.rerun"] == (
        "runs 2 and 3 of 3 pooled: run 1's SGEMM probe 115 → 220 GFLOP/s (+91%); the pooled "
        "runs' SGEMM probe 180 → 185 GFLOP/s (+3%), SGEMM probe 190 → 186 GFLOP/s (-2%)")
    assert document(tmp_path / "reruns" / "conv.json")["context"]["run"] == "1"


def test_the_two_steadiest_of_three_are_kept(tmp_path, monkeypatch):
    status, results, calls = run(tmp_path, monkeypatch, [[200, 140], [200, 198], [200, 60]])
    assert (status, calls) == (0, 3)
    assert document(results)["context"]["gapbench.rerun"].startswith(
        "runs 1 and 2 of 3 pooled: run 3's SGEMM probe 200 → 60 GFLOP/s (-70%)")
    assert document(tmp_path / "reruns" / "conv.json")["context"]["run"] == "3"


def test_a_failed_second_run_is_the_status_and_the_first_is_kept_aside(tmp_path, monkeypatch):
    status, results, calls = run(tmp_path, monkeypatch, [[100, 101], "fail"])
    assert (status, calls) == (1, 2)
    assert document(tmp_path / "reruns" / "conv.json")["context"]["run"] == "1"


def test_a_failed_first_run_is_not_run_again_and_its_status_stands(tmp_path, monkeypatch):
    status, results, calls = run(tmp_path, monkeypatch, ["fail"])
    assert (status, calls) == (1, 1)
    assert not results.exists()


@pytest.mark.parametrize("argv, said", [
    (["x.json"], "give the results file, then -- and the gapbench command"),
    (["x.json", "--"], "no gapbench command after --"),
    (["x.json", "--", "gapbench", "--benchmark_out=y.json"], "the command must write x.json"),
])
def test_bad_arguments_are_one_line_and_status_2(argv, said, capsys):
    assert steady_run.main(argv) == 2
    err = capsys.readouterr().err
    assert said in err and err.count("\n") == 1


def test_a_file_that_is_no_results_file_is_one_line_and_status_2(tmp_path, capsys):
    results = tmp_path / "conv.json"
    writer = "import sys; open(sys.argv[1].split('=', 1)[1], 'w').write('[1, 2]')"
    status = steady_run.main([str(results), "--", sys.executable, "-c", writer,
                              f"--benchmark_out={results}"])
    assert status == 2
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == f"gapbench-ci steady-run: {results}: not a gapbench results file (no context)"
