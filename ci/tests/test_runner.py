"""Tests of runner: filters, pooling, one run of an executable, git facts."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from gapbench_report.inputs.files import write_json_atomic
from gapbench_report.inputs.results import load_results

from gapbench_ci import runner
from tests.fakes import BENCHMARKS, COPY, SUMSQ, invocations, make_fake


def test_exact_filter_matches_only_the_names():
    names = [SUMSQ, "peak/read/cpu/mib:256/real_time/threads:2", "x/y/cpu/f:0.5/real_time"]
    pattern = re.compile(runner.exact_filter(names))
    for n in names:
        assert pattern.search(n)
    assert not pattern.search(SUMSQ + "/x")
    assert not pattern.search("x/y/cpu/f:0x5/real_time")  # the dot is literal
    assert not pattern.search("peak/read/cpu/mib:256/real_time/threads:22")
    with pytest.raises(ValueError):
        runner.exact_filter([])


def test_ere_escape():
    assert runner.ere_escape("a.b(c)[d]{e}*+?^$|\\") == \
        "a\\.b\\(c\\)\\[d\\]\\{e\\}\\*\\+\\?\\^\\$\\|\\\\"
    assert runner.ere_escape("conv/cudnn/gpu/n:32") == "conv/cudnn/gpu/n:32"


def test_run_spec_args(tmp_path):
    spec = runner.RunSpec("^peak/", "full", 3, 0.01)
    assert spec.args(tmp_path / "o.json") == [
        "--profile=full", "--benchmark_filter=^peak/", "--benchmark_repetitions=3",
        "--benchmark_min_time=0.01", "--benchmark_enable_random_interleaving=true",
        f"--benchmark_out={tmp_path / 'o.json'}"]
    assert runner.RunSpec().args() == ["--profile=quick", "--benchmark_filter=.",
                                       "--benchmark_enable_random_interleaving=true"]


def _doc(times: dict[str, list[float]], machine="m") -> dict:
    rows = []
    for name, ts in times.items():
        rows += [{"name": name, "run_name": name, "run_type": "iteration", "repetitions": len(ts),
                  "repetition_index": i, "real_time": t, "time_unit": "ns", "iterations": 1}
                 for i, t in enumerate(ts)]
        rows.append({"name": name + "_median", "run_name": name, "run_type": "aggregate",
                     "aggregate_name": "median", "real_time": sorted(ts)[len(ts) // 2],
                     "time_unit": "ns"})
    return {"context": {"gapbench.schema": "1", "gapbench.version": "0.1.0",
                        "gapbench.profile": "quick", "gapbench.seed": "42",
                        "machine.id": machine, "gpu.status": "ok"}, "benchmarks": rows}


def test_pool_renumbers_and_drops_aggregates(tmp_path):
    pooled = runner.pool([_doc({SUMSQ: [1, 2, 3], COPY: [5]}), _doc({SUMSQ: [4, 5]})])
    rows = pooled["benchmarks"]
    assert all(r["run_type"] == "iteration" for r in rows)
    sumsq = [r for r in rows if r["run_name"] == SUMSQ]
    assert [r["repetition_index"] for r in sumsq] == [0, 1, 2, 3, 4]
    assert [r["real_time"] for r in sumsq] == [1, 2, 3, 4, 5]
    assert {r["repetitions"] for r in sumsq} == {5}
    assert pooled["context"]["gapbench.pooled_runs"] == "2"
    path = tmp_path / "pooled.json"
    write_json_atomic(path, pooled)
    loaded = load_results(path)  # the pooled file is a valid results file
    assert loaded.benchmarks()[SUMSQ].samples == pytest.approx((1e-9, 2e-9, 3e-9, 4e-9, 5e-9))
    assert loaded.benchmarks()[COPY].samples == pytest.approx((5e-9,))
    with pytest.raises(ValueError):
        runner.pool([])


def test_run_gapbench_and_errors(tmp_path):
    log = tmp_path / "log.jsonl"
    exe = make_fake(tmp_path, "gb", log=str(log), fail=["memcpy"])
    out = tmp_path / "o.json"
    spec = runner.RunSpec("^preprocess/", "quick", 3, 0.01)
    assert runner.run_gapbench(exe, spec, out) == 0
    assert set(load_results(out).benchmarks()) == {n for n in BENCHMARKS if "preprocess" in n}
    assert invocations(log)[-1]["args"] == spec.args(out)
    # A failed benchmark: status 1, the file written with the error in it.
    assert runner.run_gapbench(exe, runner.RunSpec("memcpy"), out) == 1
    assert load_results(out).benchmarks()[COPY].status == "failed"
    # A filter that matches nothing: gapbench's exit 2 is a tool error, with its message.
    with pytest.raises(runner.ToolError, match="matches no benchmark"):
        runner.run_gapbench(exe, runner.RunSpec("^nothing"), out)
    assert not out.exists()  # the stale file of the run before is gone
    with pytest.raises(runner.ToolError, match="cannot run"):
        runner.run_gapbench(tmp_path / "missing", spec, out)


def test_doctor_facts(tmp_path):
    exe = make_fake(tmp_path, "gb", facts={"gpu.name": "Fake GPU"})
    facts = runner.doctor_facts(exe)["facts"]
    assert facts["gpu.name"] == "Fake GPU" and facts["machine.id"] == "fake-machine"


@pytest.fixture
def repo(tmp_path):
    """A git repository with two commits."""
    root = tmp_path / "repo"
    root.mkdir()

    def git(*args):
        subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)
    git("init", "-q")
    git("config", "user.email", "t@example.invalid")
    git("config", "user.name", "t")
    for i in (1, 2):
        (root / "CMakeLists.txt").write_text(f"# version {i}\n")
        git("add", "CMakeLists.txt")
        git("commit", "-q", "-m", f"commit {i}")
    return root


def test_git_facts_and_export(repo, tmp_path, monkeypatch):
    head = runner.resolve_commit(repo, "HEAD")
    parent = runner.resolve_commit(repo, "HEAD~1")
    assert head != parent and len(head) == 40
    state = runner.tree_state(repo)
    assert state == runner.TreeState(head, False) and state.label == head[:12]
    (repo / "new.cpp").write_text("")  # untracked sources count: CMake globs them in
    assert runner.tree_state(repo).dirty
    assert runner.tree_state(repo).label.endswith("-dirty")
    with pytest.raises(runner.ToolError, match="not a commit"):
        runner.resolve_commit(repo, "no-such-ref")
    dest = tmp_path / "export"
    runner.export_commit(repo, parent, dest)
    assert (dest / "CMakeLists.txt").read_text() == "# version 1\n"
    assert not (dest / ".git").exists()
    with pytest.raises(runner.ToolError, match="cannot export"):
        runner.export_commit(repo, "0" * 40, tmp_path / "bad")
    # Not a checkout: the commit a tarball came from, when the environment says it.
    plain = tmp_path / "plain"
    plain.mkdir()
    monkeypatch.delenv(runner.SOURCE_COMMIT_VARIABLE, raising=False)
    assert runner.tree_state(plain) == runner.TreeState(None, False)
    monkeypatch.setenv(runner.SOURCE_COMMIT_VARIABLE, "abc123")
    assert runner.tree_state(plain).commit == "abc123"


def test_build_gapbench_reports_a_failed_configure(tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    (source / "CMakeLists.txt").write_text("message(FATAL_ERROR \"broken on purpose\")\n")
    with pytest.raises(runner.ToolError, match="configuring .* failed"):
        runner.build_gapbench(source, tmp_path / "build")
    assert Path(tmp_path / "build").exists()
