"""ci/gpu-check: its no-GPU exit, its summary, and the steps' verdicts (no GPU needed)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from gapbench_ci import gpu_check
from gapbench_ci.gpu_check import Check, StepFailed, Summary, junit_counts
from gapbench_ci.runner import REPO_ROOT
from tests.synthetic import document, runs, skipped

GPU_NAME = "conv/cudnn/gpu/n:1/manual_time"
CPU_NAME = "conv/onednn/cpu/n:1/real_time"


def script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


@pytest.mark.parametrize("smi", [None, "exit 9", "echo 'No devices were found'"])
def test_without_a_gpu_it_says_so_in_one_line_and_exits_2(tmp_path, smi):
    args = [str(REPO_ROOT / "ci" / "gpu-check"), "--out", str(tmp_path / "out"),
            "--build-dir", str(tmp_path / "build")]
    env = None
    if smi is None:  # no nvidia-smi anywhere on PATH
        env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
        if Path("/usr/bin/nvidia-smi").exists():
            pytest.skip("this machine has nvidia-smi in /usr/bin")
    else:
        args += ["--nvidia-smi", str(script(tmp_path / "nvidia-smi", smi + "\n"))]
    done = subprocess.run(args, capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("ci/gpu-check: no GPU to check: "), lines
    assert not (tmp_path / "out").exists() and not (tmp_path / "build").exists()


def test_a_listed_gpu_is_found(tmp_path):
    smi = script(tmp_path / "nvidia-smi", "echo 'GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1)'\n")
    assert gpu_check.gpu_absent_reason(str(smi)) is None


def test_summary_lists_every_step_and_passes_only_if_all_did(tmp_path):
    summary = Summary(tmp_path / "summary.md", ["- profile: quick"])
    assert summary.run("build", lambda: "built")
    assert summary.passed
    assert not summary.run("gpu tests", lambda: (_ for _ in ()).throw(StepFailed("2 failed")))
    assert summary.run("report", lambda: "index.html")
    assert not summary.passed
    text = (tmp_path / "summary.md").read_text()
    assert "**Result: 1 of 3 failed.**" in text
    assert "| build | passed |" in text and "| gpu tests | **FAILED** |" in text
    assert "2 failed" in text and " s |" in text
    assert [p.name for p in tmp_path.iterdir()] == ["summary.md"]  # no temporary file left


def test_summary_is_rewritten_whole_on_a_second_run(tmp_path):
    for detail in ("first", "second"):
        summary = Summary(tmp_path / "summary.md", [])
        summary.run("build", lambda d=detail: d)
    text = (tmp_path / "summary.md").read_text()
    assert "second" in text and "first" not in text and "**Result: every step passed.**" in text


def test_junit_counts_passed_failed_and_skipped(tmp_path):
    junit = tmp_path / "t.xml"
    junit.write_text("""<testsuite>
      <testcase name="a" status="run"/>
      <testcase name="b" status="fail"><failure message="x"/></testcase>
      <testcase name="c" status="notrun"><skipped message="no GPU"/></testcase>
      <testcase name="d" status="run"/>
    </testsuite>""")
    assert junit_counts(junit) == {"passed": 2, "failed": 1, "skipped": 1}
    junit.write_text("<testsuite")
    assert junit_counts(junit) is None


def _check_with(tmp_path: Path, binary_body: str) -> Check:
    build = tmp_path / "build"
    build.mkdir()
    script(build / "gapbench", binary_body)
    return Check(tmp_path / "out", build, "quick", ".")


def _binary_writing(tmp_path: Path, entries: list[dict]) -> str:
    src = tmp_path / "made.json"
    src.write_text(json.dumps(document(entries)))
    return ('for a in "$@"; do case "$a" in --benchmark_out=*) cp "%s" "${a#--benchmark_out=}";;'
            ' esac; done\n' % src)


def test_bench_passes_when_every_variant_ran(tmp_path):
    check = _check_with(tmp_path, _binary_writing(
        tmp_path, runs(GPU_NAME, [1e-3] * 3) + runs(CPU_NAME, [2e-3] * 3)))
    check.results.mkdir(parents=True)
    assert check.bench("conv", [GPU_NAME, CPU_NAME]) == "2 benchmarks timed and validated"


def test_bench_fails_on_a_skipped_gpu_variant_with_its_reason(tmp_path):
    check = _check_with(tmp_path, _binary_writing(
        tmp_path, skipped(GPU_NAME, "cuDNN not loadable") + runs(CPU_NAME, [2e-3] * 3)))
    check.results.mkdir(parents=True)
    with pytest.raises(StepFailed, match="1 GPU variants skipped .*cuDNN not loadable"):
        check.bench("conv", [GPU_NAME, CPU_NAME])


def test_a_crashed_run_keeps_the_earlier_results_file(tmp_path):
    check = _check_with(tmp_path, "exit 3\n")
    check.results.mkdir(parents=True)
    earlier = check.results / "conv.json"
    earlier.write_text("earlier results")
    with pytest.raises(StepFailed,
                       match="status 3 and wrote no results.*earlier conv.json is kept"):
        check.bench("conv", [GPU_NAME])
    assert earlier.read_text() == "earlier results"


def test_a_sanitizer_that_ran_no_test_is_no_pass(tmp_path, monkeypatch):
    """An old GoogleTest prints its help for a flag it does not know and exits 0: the sanitizer
    then reports no error because nothing ran."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script(bin_dir / "compute-sanitizer", "echo '========= ERROR SUMMARY: 0 errors'\n")
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    check = Check(tmp_path / "out", tmp_path / "build", "quick", ".")
    with pytest.raises(StepFailed, match="no test ran under memcheck"):
        check.sanitizer("memcheck")
    script(bin_dir / "compute-sanitizer",
           "echo '[  PASSED  ] 49 tests.'; echo '========= ERROR SUMMARY: 0 errors'\n")
    assert check.sanitizer("memcheck") == ("========= ERROR SUMMARY: 0 errors; "
                                           "[  PASSED  ] 49 tests.")


def test_the_report_renders_only_this_runs_files(tmp_path):
    check = _check_with(tmp_path, _binary_writing(tmp_path, runs(CPU_NAME, [2e-3] * 3)))
    check.results.mkdir(parents=True)
    (check.results / "stale.json").write_text(json.dumps(document(runs(GPU_NAME, [1e-3] * 3))))
    with pytest.raises(StepFailed, match="no results of this run"):
        check.report()
    check.bench("conv", [CPU_NAME])
    assert check.written == [check.results / "conv.json"]
