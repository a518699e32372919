"""gapbench-ci steady-run: a family's run whose probes moved is run once more, the steadier kept."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from gapbench_ci import steady_run

# A stand-in for gapbench: each call writes --benchmark_out with the next (start, end) SGEMM
# probes of PROBES (a JSON list; "fail" exits 1 and writes nothing), counting calls in CALLS.
FAKE = r'''
import json, os, sys
calls = int(open(os.environ["CALLS"]).read() or 0) if os.path.exists(os.environ["CALLS"]) else 0
open(os.environ["CALLS"], "w").write(str(calls + 1))
probe = json.loads(os.environ["PROBES"])[calls]
if probe == "fail":
    sys.exit(1)
out = next(a.split("=", 1)[1] for a in sys.argv if a.startswith("--benchmark_out="))
context = {"stability.sgemm_gflops_start": str(probe[0]),
           "stability.sgemm_gflops_end": str(probe[1]), "run": str(calls + 1)}
json.dump({"context": context, "benchmarks": []}, open(out, "w"))
'''


def run(tmp_path: Path, monkeypatch, probes: list) -> tuple[int, Path, int]:
    fake = tmp_path / "fake_gapbench.py"
    fake.write_text(FAKE)
    monkeypatch.setenv("CALLS", str(tmp_path / "calls"))
    monkeypatch.setenv("PROBES", json.dumps(probes))
    results = tmp_path / "conv.json"
    status = steady_run.main([str(results), "--", sys.executable, str(fake),
                              f"--benchmark_out={results}"])
    calls = int((tmp_path / "calls").read_text())
    return status, results, calls


def context(path: Path) -> dict:
    return json.loads(path.read_text())["context"]


def test_a_steady_run_runs_once_and_is_left_as_gapbench_wrote_it(tmp_path, monkeypatch):
    status, results, calls = run(tmp_path, monkeypatch, [[200, 190]])
    assert (status, calls) == (0, 1)
    assert "gapbench.rerun" not in context(results)
    assert not (tmp_path / "reruns").exists()


def test_a_run_whose_probes_moved_runs_again_and_the_steadier_second_is_kept(tmp_path,
                                                                            monkeypatch):
    status, results, calls = run(tmp_path, monkeypatch, [[115, 220], [180, 185]])
    assert (status, calls) == (0, 2)
    kept = context(results)
    assert kept["run"] == "2"
    assert kept["gapbench.rerun"] == ("run 2 of 2 kept: run 1's SGEMM probe 115 → 220 GFLOP/s "
                                      "(+91%), this run's SGEMM probe 180 → 185 GFLOP/s (+3%)")
    assert context(tmp_path / "reruns" / "conv.json")["run"] == "1"


def test_when_the_first_run_was_steadier_it_comes_back(tmp_path, monkeypatch):
    status, results, calls = run(tmp_path, monkeypatch, [[200, 140], [200, 60]])
    assert (status, calls) == (0, 2)
    kept = context(results)
    assert kept["run"] == "1"
    assert kept["gapbench.rerun"].startswith("run 1 of 2 kept: this run's SGEMM probe 200 → 140")
    assert context(tmp_path / "reruns" / "conv.json")["run"] == "2"
    assert sorted(p.name for p in (tmp_path / "reruns").iterdir()) == ["conv.json"]


def test_a_failed_rerun_keeps_the_first_run_and_says_so(tmp_path, monkeypatch):
    status, results, calls = run(tmp_path, monkeypatch, [[100, 200], "fail"])
    assert (status, calls) == (0, 2)
    kept = context(results)
    assert kept["run"] == "1"
    assert kept["gapbench.rerun"].startswith("run 1 of 2 kept: run 2 failed (exit status 1)")


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
