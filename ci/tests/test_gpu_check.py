"""ci/gpu-check: its no-GPU exit, its summary, the steps' verdicts, their time limits, what it
remembers between calls, and its archive (no GPU needed: fake tools stand in)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import tarfile
import time
from pathlib import Path

import pytest

from gapbench_ci import gpu_check, tools
from gapbench_ci.gpu_check import Budget, Check, StepFailed, junit_counts
from gapbench_ci.gpu_summary import Done, Step, Summary
from gapbench_ci.runner import REPO_ROOT
from tests.checks import process_gone
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
    assert "**Result: 2 passed, 1 failed** (" in text
    assert "| build | passed |" in text and "| gpu tests | **FAILED** |" in text
    assert "2 failed" in text and " s |" in text
    assert [p.name for p in tmp_path.iterdir()] == ["summary.md"]  # no temporary file left


def test_summary_is_rewritten_whole_on_a_second_run(tmp_path):
    for detail in ("first", "second"):
        summary = Summary(tmp_path / "summary.md", [])
        summary.run("build", lambda d=detail: d)
    text = (tmp_path / "summary.md").read_text()
    assert "second" in text and "first" not in text and "**Result: every step passed** (" in text


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
    return (f'for a in "$@"; do case "$a" in --benchmark_out=*) cp "{src}" '
            '"${a#--benchmark_out=}";; esac; done\n')


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


def test_the_report_renders_only_this_runs_files(tmp_path):
    check = _check_with(tmp_path, _binary_writing(tmp_path, runs(CPU_NAME, [2e-3] * 3)))
    check.results.mkdir(parents=True)
    (check.results / "stale.json").write_text(json.dumps(document(runs(GPU_NAME, [1e-3] * 3))))
    with pytest.raises(StepFailed, match="no results of this run"):
        check.report()
    check.bench("conv", [CPU_NAME])
    assert check.written == [check.results / "conv.json"]


# ---- time limits and the budget ----------------------------------------------------------------

def test_a_step_past_its_limit_is_stopped_with_everything_it_started(tmp_path):
    child = tmp_path / "child.pid"
    slow = script(tmp_path / "slow", f"sleep 60 & echo $! > {child}; wait\n")
    start = time.monotonic()
    with pytest.raises(tools.TimedOut, match=r"still running after 1 s \(its limit\), stopped "
                                             r"\(logs/slow.log\)"):
        tools.run([slow], "slow", (1.0, "its limit"), log=tmp_path / "logs" / "slow.log", ok=None)
    assert time.monotonic() - start < 20
    pid = int(child.read_text())
    process_gone(pid, "the stopped step")  # the sleeping child went with its group
    assert "stopped after 1 s (its limit)" in (tmp_path / "logs" / "slow.log").read_text()


def test_each_step_gets_what_is_left_of_the_budget_then_nothing():
    assert Budget(None).limit(300) == (300, "its limit")
    seconds, why = Budget(100).limit(300)
    assert why == "what was left of --budget" and 80 < seconds <= 100 - gpu_check.ARCHIVE_RESERVE_S
    assert Budget(600).limit(300) == (300, "its limit")
    assert not Budget(600).spent()
    assert Budget(40, start=time.monotonic() - 30).spent()
    # Every step's own limit fits one 10-minute call of a lent GPU, with room for the archive.
    assert max(gpu_check.STEP_LIMIT_S.values()) + gpu_check.ARCHIVE_RESERVE_S < 600


def test_a_step_left_when_the_budget_is_spent_is_listed_as_not_run(tmp_path):
    summary = Summary(tmp_path / "summary.md", [], budget=Budget(40, start=time.monotonic() - 30))
    ran = []
    assert not summary.run("bench conv", lambda: ran.append(1) or "timed")
    assert not ran and not summary.passed
    assert "| bench conv | **NOT RUN** | 0.0 s |  | not run: the budget of 40 s is spent |" in \
        (tmp_path / "summary.md").read_text()


# ---- what was done for this source is not done again -------------------------------------------

def test_a_step_done_for_this_source_is_not_run_again(tmp_path):
    ran = []
    body = lambda: ran.append(1) or "3 passed"  # noqa: E731
    first = Summary(tmp_path / "a.md", [], done=Done.load(tmp_path, "source-1"))
    assert first.run("gpu tests", body, key="build | tests")
    assert not first.run("doctor", lambda: (_ for _ in ()).throw(StepFailed("no GPU")),
                         key="build | doctor")
    again = Summary(tmp_path / "b.md", [], done=Done.load(tmp_path, "source-1"))
    assert again.run("gpu tests", body, key="build | tests")
    assert ran == [1]  # not run the second time: its result stands
    detail = again.steps[0].detail
    assert detail.startswith("done earlier (") and "3 passed" in detail
    again.run("doctor", lambda: ran.append(2) or "ok", key="build | doctor")  # failed: run again
    assert ran == [1, 2]
    # Another source, or other options: nothing of it counts.
    other = Summary(tmp_path / "c.md", [], done=Done.load(tmp_path, "source-2"))
    other.run("gpu tests", body, key="build | tests")
    assert ran == [1, 2, 1]
    options = Summary(tmp_path / "d.md", [], done=Done.load(tmp_path, "source-2"))
    options.run("gpu tests", body, key="build X=1 | tests")
    assert ran == [1, 2, 1, 1]


def test_the_source_fingerprint_follows_the_files(tmp_path):
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "a.cu").write_text("one")
    first = gpu_check.source_fingerprint(tmp_path)
    assert gpu_check.source_fingerprint(tmp_path) == first
    (tmp_path / "kernels" / "a.cu").write_text("two")
    assert gpu_check.source_fingerprint(tmp_path) != first
    assert gpu_check.source_fingerprint(REPO_ROOT)  # the real tree hashes without git


# ---- the command end to end, with fake tools --------------------------------------------------

FAKE_CMAKE = """
if [ "$1" = "--build" ]; then
  mkdir -p "$2/tests"
  cat > "$2/gapbench" <<'EOS'
#!/bin/sh
echo '{"facts": {"gpu.status": "ok", "gpu.name": "Fake GPU"}}'
EOS
  cp "$2/gapbench" "$2/tests/gapbench_gpu_tests"
  chmod +x "$2/gapbench" "$2/tests/gapbench_gpu_tests"
  echo built >> "$LOG"
  exit 0
fi
echo "configure $*" >> "$LOG"
echo "-- cuDNN: /site/nvidia/cudnn/lib/libcudnn.so.9, from python3's nvidia.cudnn package"
"""


def _gpu_check(tmp_path: Path, *args: str, cmake: str = FAKE_CMAKE,
               smi: str = "echo 'GPU 0: Fake GPU (UUID: GPU-1)'\n",
               extra_env: dict[str, str] | None = None):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    script(bin_dir / "cmake", cmake)
    smi = script(tmp_path / "nvidia-smi", smi)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "LOG": str(tmp_path / "log"),
           **(extra_env or {})}
    return subprocess.run(
        [str(REPO_ROOT / "ci" / "gpu-check"), "--nvidia-smi", str(smi), "--out",
         str(tmp_path / "out"), "--build-dir", str(tmp_path / "build"), *args],
        capture_output=True, text=True, env=env, check=False)


def test_two_calls_build_once_and_each_returns_one_archive(tmp_path):
    archive = tmp_path / "back" / "gpu-check.tgz"
    done = _gpu_check(tmp_path, "--steps", "doctor", "--budget", "300", "--archive", str(archive),
                      "-DGAPBENCH_CUDNN_ROOT=/opt/cudnn")
    assert done.returncode == 0, done.stderr
    log = (tmp_path / "log").read_text()
    assert log.count("configure") == 1 and log.count("built") == 1
    configure = log.splitlines()[0]
    assert "-DGAPBENCH_REQUIRE_GPU_LIBRARIES=ON" in configure
    assert configure.endswith("-DGAPBENCH_CUDNN_ROOT=/opt/cudnn")  # passed through, last
    with tarfile.open(archive) as tar:
        names = set(tar.getnames())
    assert {"out/summary.md", "out/doctor.json", "out/logs/build.log"} <= names
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "| build | passed |" in summary and "libcudnn.so.9, from python3" in summary
    assert "| doctor | passed |" in summary and "steps: doctor; budget 300 s" in summary
    # The next call, same source and options: the build and doctor are not run again.
    again = _gpu_check(tmp_path, "--steps", "build,doctor", "--archive", str(archive),
                       "-DGAPBENCH_CUDNN_ROOT=/opt/cudnn")
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "log").read_text() == log
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "| build | passed | 0.0 s | 180 s | done earlier (" in summary
    # Other CMake options are another build.
    other = _gpu_check(tmp_path, "--steps", "build")
    assert other.returncode == 0, other.stderr
    assert (tmp_path / "log").read_text().count("configure") == 2


def test_a_build_without_cudnn_or_cublas_fails_its_step(tmp_path):
    refuse = ('echo "CMake Error at CMakeLists.txt:120 (message):"\n'
              'echo "  GAPBENCH_REQUIRE_GPU_LIBRARIES: not found: cuDNN. A GPU check needs"\n'
              "exit 1\n")
    done = _gpu_check(tmp_path, "--steps", "tests", "--archive", str(tmp_path / "a.tgz"),
                      cmake=refuse)
    assert done.returncode == 1
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "| build | **FAILED** |" in summary and "not found: cuDNN" in summary
    assert "gpu tests" not in summary  # nothing runs without the build
    assert (tmp_path / "a.tgz").exists()  # the archive all the same


# ---- a Python without orjson (the GPU machine's) ---------------------------------------------

def without_orjson(tmp_path: Path) -> dict[str, str]:
    """An environment whose Python cannot import orjson, as the GPU machine's python3: a package
    of that name first on the path, which raises ImportError."""
    stub = tmp_path / "no-orjson" / "orjson"
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text("raise ImportError('no orjson on this machine')\n")
    return {"PYTHONPATH": str(stub.parent)}


def test_gpu_check_starts_and_reads_results_without_orjson(tmp_path):
    env = without_orjson(tmp_path)
    done = subprocess.run([str(REPO_ROOT / "ci" / "gpu-check"), "--help"], capture_output=True,
                          text=True, env={**os.environ, **env}, check=False)
    assert done.returncode == 0 and "--kit" in done.stdout, done.stderr
    # The start of a check: the build (a fake cmake) and doctor (its fake gapbench).
    done = _gpu_check(tmp_path, "--steps", "doctor", extra_env=env)
    assert done.returncode == 0, done.stderr
    assert "| doctor | passed |" in (tmp_path / "out" / "summary.md").read_text()
    # The results loader falls back to the stdlib: the same reading, the same error wording.
    probe = ("import sys\nfrom gapbench_report.inputs import results\n"
             "assert results.orjson is None\n"
             "print(len(results.load_results(sys.argv[1]).benchmarks()))\n"
             "try:\n    results.load_results(sys.argv[2])\n"
             "except results.ResultsError as e:\n    print(e)\n")
    data = REPO_ROOT / "report" / "tests" / "data"
    done = subprocess.run([str(REPO_ROOT / "ci" / "report-python"), "-c", probe,
                           str(data / "good.json"), str(data / "truncated.json")],
                          capture_output=True, text=True, env={**os.environ, **env}, check=False)
    assert done.returncode == 0, done.stderr
    from gapbench_report.inputs.results import ResultsError, load_results
    count, error = done.stdout.splitlines()
    assert int(count) == len(load_results(data / "good.json").benchmarks()) > 0
    with pytest.raises(ResultsError) as with_orjson:
        load_results(data / "truncated.json")
    assert error == str(with_orjson.value) and "not valid JSON (truncated?)" in error


@pytest.mark.parametrize("args, message", [
    (["--steps", "build,lint"], "lint: choose from build,doctor,tests,memcheck,racecheck,"),
    (["--budget", "20"], "leaves no time for a step"),
    (["-DNOVALUE"], "give NAME=VALUE"),
])
def test_bad_arguments_are_one_line_and_exit_2(tmp_path, args, message):
    done = _gpu_check(tmp_path, *args)
    assert done.returncode == 2
    assert len(done.stderr.splitlines()) == 1 and message in done.stderr, done.stderr
    assert not (tmp_path / "out").exists()


def test_steps_run_in_their_order_whatever_order_is_asked():
    assert gpu_check.parse_steps("report,bench, tests") == ["tests", "bench", "report"]


def test_the_report_renders_what_bench_wrote_in_an_earlier_call(tmp_path):
    check = _check_with(tmp_path, _binary_writing(tmp_path, runs(CPU_NAME, [2e-3] * 3)))
    check.results.mkdir(parents=True)
    done = Done.load(tmp_path / "build", "s")
    done.record("build", Step("build", "passed", 1.0, "built"))
    key = "build | quick | . | bench conv"
    summary = Summary(tmp_path / "summary.md", [], done=done)
    summary.run("bench conv", lambda: check.bench("conv", [CPU_NAME]), key=key,
                written=lambda: [check.results / "conv.json"])
    # A later call: a fresh Check that wrote nothing, the same record.
    later = Check(check.out, check.build_dir, "quick", ".")
    rendered = []
    later.report = lambda: rendered.append(list(later.written)) or "index.html"
    gpu_check.run_steps(["report"], later, Summary(tmp_path / "s2.md", [],
                                                   done=Done.load(tmp_path / "build", "s")))
    assert rendered == [[check.results / "conv.json"]]


def test_a_step_summary_keeps_the_steps_done_earlier(tmp_path):
    step = Step("build", "passed", 12.0, "built")
    done = Done.load(tmp_path, "s")
    done.record("build", step)
    assert Done.load(tmp_path, "s").steps["build"]["detail"] == "built"
    assert Done.load(tmp_path, "other").steps == {}


def test_without_a_gpu_a_build_asked_for_runs_then_the_no_gpu_exit(tmp_path):
    """An offline machine without a GPU proves the build (carried packages, cuDNN from a Python
    package) with --steps naming build; the steps that need a GPU do not run."""
    done = _gpu_check(tmp_path, "--steps", "build,doctor,tests", "--archive",
                      str(tmp_path / "a.tgz"), smi="echo 'No devices were found'; exit 6\n")
    assert done.returncode == 2, done.stderr
    last = done.stderr.splitlines()[-1]
    assert last.startswith("ci/gpu-check: no GPU to check: nvidia-smi lists no GPU") \
        and "the build passed" in last, last
    configure = (tmp_path / "log").read_text().splitlines()[0]
    assert "CMAKE_CUDA_ARCHITECTURES=native" not in configure  # CMake's native needs a GPU
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "| build | passed |" in summary and "without a GPU in hand" in summary
    assert "doctor" not in summary.split("**Result")[1] and (tmp_path / "a.tgz").exists()


# ---- one command: budgets, a step cut off, the archive after every step, the kit ---------------

def make_deb(folder: Path, name: str) -> Path:
    """A minimal Debian package holding usr/lib/x86_64-linux-gnu/lib<name>.so.1."""
    root = folder / f"{name}-pkg"
    (root / "DEBIAN").mkdir(parents=True)
    (root / "DEBIAN" / "control").write_text(
        f"Package: {name}\nVersion: 1\nArchitecture: all\nMaintainer: t <t@t>\n"
        "Description: test\n")
    lib = root / "usr" / "lib" / "x86_64-linux-gnu"
    lib.mkdir(parents=True)
    (lib / f"lib{name}.so.1").write_text("not a library")
    folder.mkdir(parents=True, exist_ok=True)
    deb = folder / f"{name}_1_all.deb"
    subprocess.run(["dpkg-deb", "--build", "--root-owner-group", str(root), str(deb)],
                   check=True, capture_output=True)
    return deb


def make_kit(tmp_path: Path, **spec) -> Path:
    """A kit as ci/gpu-kit makes it: a package, the two binaries (fakes), kit.json."""
    from gapbench_ci.gpu_kit import build_source_hash
    from tests.fakes import make_fake
    kit = tmp_path / "kit"
    make_deb(kit / "debs", "fakeblas")
    facts = {"gpu.status": "ok", "gpu.name": "Fake H200", **spec.pop("facts", {})}
    make_fake(kit / "bin", "gapbench", facts=facts, **spec)
    script(kit / "bin" / "gapbench_gpu_tests", "exit 0\n")
    (kit / "kit.json").write_text(json.dumps({"source": build_source_hash(), "arch": "90",
                                              "commit": "abc", "date": "today"}))
    return kit


BENCHES = {"conv/cudnn/gpu/n:1/manual_time": 1e-3, "lstm/cudnn/gpu/n:1/manual_time": 2e-3,
           "peak/sgemm/gpu/n:4096/manual_time": 3e-3}


def in_process(tmp_path: Path, monkeypatch, *args: str) -> tuple[int, str]:
    smi = script(tmp_path / "nvidia-smi", "echo 'GPU 0: Fake GPU (UUID: GPU-1)'\n")
    monkeypatch.setattr(gpu_check.os, "environ", dict(os.environ))  # the kit's, undone after
    # A kit that is not used would build: a cmake that says so rather than build for real.
    (tmp_path / "bin").mkdir(exist_ok=True)
    script(tmp_path / "bin" / "cmake", "echo 'no build in this test'; exit 1\n")
    gpu_check.os.environ["PATH"] = f"{tmp_path / 'bin'}:{os.environ['PATH']}"
    status = gpu_check.main(["--nvidia-smi", str(smi), "--out", str(tmp_path / "out"),
                             "--build-dir", str(tmp_path / "build"), *args])
    return status, (tmp_path / "out" / "summary.md").read_text()


def test_the_kit_s_binaries_are_used_when_they_match_and_load(tmp_path, monkeypatch):
    kit = make_kit(tmp_path, benchmarks=BENCHES)
    status, summary = in_process(tmp_path, monkeypatch, "--kit", str(kit),
                                 "--steps", "doctor")
    assert status == 0, summary
    assert "| build | passed |" in summary and "not built: the kit's binaries (built today " \
        "for sm_90, abc) load here" in summary
    assert "| doctor | passed |" in summary and "Fake H200" in summary
    # The package went into a prefix in the build folder (the kit travels packed), and its
    # libraries onto the loader's path.
    lib = tmp_path / "build" / "kit-root" / "usr" / "lib" / "x86_64-linux-gnu"
    assert (lib / "libfakeblas.so.1").exists()
    assert str(lib) in gpu_check.os.environ["LD_LIBRARY_PATH"].split(os.pathsep)
    assert gpu_check.os.environ["BLA_VENDOR"] == "OpenBLAS"


def test_a_kit_from_other_sources_is_built_from_instead(tmp_path, monkeypatch):
    from gapbench_ci.gpu_kit import Kit, build_source_hash
    kit = make_kit(tmp_path, benchmarks=BENCHES)
    (kit / "kit.json").write_text(json.dumps({"source": "other"}))
    assert Kit(kit).usable_binaries({}) == (False, "the kit's binaries were built from other "
                                                   "sources")
    script(kit / "bin" / "gapbench_gpu_tests", "echo 'libdnnl.so.2: not found' >&2; exit 127\n")
    (kit / "kit.json").write_text(json.dumps({"source": build_source_hash()}))
    assert Kit(kit).usable_binaries({}) == (
        False, "gapbench_gpu_tests does not load here: libdnnl.so.2: not found")


def test_a_kit_without_packages_is_one_line_and_exit_2(tmp_path, monkeypatch):
    (tmp_path / "kit").mkdir()
    smi = script(tmp_path / "nvidia-smi", "echo 'GPU 0: Fake GPU (UUID: GPU-1)'\n")
    done = subprocess.run([str(REPO_ROOT / "ci" / "gpu-check"), "--nvidia-smi", str(smi),
                           "--kit", str(tmp_path / "kit"), "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
    assert "holds no debs/*.deb: make it with ci/gpu-kit" in done.stderr


def archives_written(monkeypatch) -> list[set[str]]:
    """The names in each archive the check writes, in order, as it writes them."""
    packed: list[set[str]] = []
    real = gpu_check.write_archive

    def write_and_look(out, path):
        real(out, path)
        with tarfile.open(path) as tar:
            packed.append(set(tar.getnames()))
    monkeypatch.setattr(gpu_check, "write_archive", write_and_look)
    return packed


def test_a_step_past_its_limit_is_cut_the_rest_runs_and_each_step_is_packed(tmp_path, monkeypatch):
    """conv's benchmark never ends: its step is cut at its limit, lstm's still runs, and the
    archive written after each step holds what had finished by then."""
    kit = make_kit(tmp_path, benchmarks=BENCHES, hang="^conv/")
    monkeypatch.setitem(gpu_check.FAMILY_LIMIT_S, "conv", 2)
    archive = tmp_path / "back" / "gpu-check.tgz"
    packed = archives_written(monkeypatch)
    status, summary = in_process(tmp_path, monkeypatch, "--kit", str(kit), "--steps",
                                 "doctor,bench", "--archive", str(archive))
    assert status == 1
    assert "**Result: 4 passed, 1 cut** (" in summary and "budget 540 s" in summary
    assert "| bench conv | **CUT** |" in summary and "| 2 s | conv: still running after 2 s " \
        "(its limit), stopped (logs/bench-conv.log)" in summary
    assert "| bench lstm | passed |" in summary
    # One archive after each of the five steps (build, doctor, list, conv, lstm): the last one
    # is everything, so it is not packed again at the end.
    assert len(packed) == 5
    assert "out/doctor.json" in packed[1] and "out/results/lstm.json" not in packed[3]
    assert "out/results/lstm.json" in packed[4] and "out/results/conv.json" not in packed[4]
    assert "out/logs/bench-conv.log" in packed[3]


def test_a_check_stopped_inside_a_step_packs_what_it_left_once_more(tmp_path, monkeypatch):
    """Ctrl-C in the GPU tests: the steps before were packed after each; what the interrupted
    step wrote goes into one more archive at the end."""
    kit = make_kit(tmp_path, benchmarks=BENCHES)
    archive = tmp_path / "back" / "gpu-check.tgz"
    packed = archives_written(monkeypatch)

    def interrupted(check):
        check.logs.mkdir(parents=True, exist_ok=True)
        (check.logs / "gpu-tests.log").write_text("half a log\n")
        raise KeyboardInterrupt
    monkeypatch.setattr(gpu_check.Check, "unit_tests", interrupted)
    status, _ = in_process(tmp_path, monkeypatch, "--kit", str(kit), "--steps", "doctor,tests",
                           "--archive", str(archive))
    assert status == 130  # interrupted
    assert len(packed) == 3  # build, doctor, and at the end
    assert "out/logs/gpu-tests.log" in packed[2] and "out/logs/gpu-tests.log" not in packed[1]


def test_a_spent_budget_leaves_the_rest_not_run_and_exit_1(tmp_path, monkeypatch):
    kit = make_kit(tmp_path, benchmarks=BENCHES, hang="^conv/")
    status, summary = in_process(tmp_path, monkeypatch, "--kit", str(kit), "--steps",
                                 "doctor,bench,report", "--budget", "40")
    assert status == 1
    # conv runs until the budget's end (less the archive's reserve); what follows is not run.
    assert "| bench conv | **CUT** |" in summary and "what was left of --budget" in summary
    assert "| bench lstm | **NOT RUN** |" in summary and "| report | **NOT RUN** |" in summary


GPU_CHECK_DOC = REPO_ROOT / "docs" / "gpu-check.md"


def docs_step_table(text: str) -> list[tuple[str, int, int]]:
    """(step, limit, expected seconds) of each row of gpu-check.md's table of the steps."""
    header = "| step | what it does | limit | expected |"
    rows = text[text.index(header):].split("\n\n")[0].splitlines()[2:]
    found = []
    for row in rows:
        step, _, limit, expected = [c.strip() for c in row.strip("|").split(" | ")][:4]
        found.append((step.strip("`"), int(re.match(r"\d+", limit)[0]),
                      int(re.match(r"(\d+) s$", expected)[1])))
    return found


def code_step_table() -> list[tuple[str, float, float]]:
    return [(s.name, s.limit_s, s.expected_s) for s in gpu_check.STEP_TABLE]


def test_the_docs_table_of_the_steps_is_the_step_table():
    """A step is one entry of STEP_TABLE; docs/gpu-check.md shows each, in order, with its limit
    and its expected time."""
    assert docs_step_table(GPU_CHECK_DOC.read_text(encoding="utf-8")) == code_step_table()


def test_the_docs_table_check_sees_a_changed_limit_and_a_missing_step():
    text = GPU_CHECK_DOC.read_text(encoding="utf-8")
    assert "| `key` |" in text and "| 105 s | 68 s |" in text
    assert docs_step_table(text.replace("| 105 s | 68 s |", "| 100 s | 68 s |")) != \
        code_step_table()
    without_key = "\n".join(x for x in text.splitlines() if not x.startswith("| `key` |"))
    assert [s for s, _, _ in docs_step_table(without_key)] == [
        s for s in gpu_check.STEPS if s != "key"]


def test_the_plan_fits_nine_minutes_with_each_step_under_its_limit():
    """What each step took on an H200 (or, for the quick families, their estimate) fits the
    default budget with the archive's reserve, and each step's limit leaves it room."""
    expected = gpu_check.EXPECTED_S
    assert set(expected) == set(gpu_check.STEPS)
    assert sum(expected.values()) + gpu_check.ARCHIVE_RESERVE_S <= gpu_check.DEFAULT_BUDGET_S
    for step, seconds in expected.items():
        if step != "bench":
            assert gpu_check.STEP_LIMIT_S[step] >= 1.5 * seconds, step
    assert gpu_check.STEP_LIMIT_S["bench"] >= 1.2 * expected["bench"]
    assert gpu_check.DEFAULT_BUDGET_S <= 540
