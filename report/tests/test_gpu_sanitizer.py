"""ci/gpu-check's sanitizer plan: which tests each tool covers, one process per suite, a test that
loses the context taking down no other, exact suppressions only for library code, and the time
limit (no GPU needed: a fake compute-sanitizer runs a fake test binary)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from gapbench_ci import gpu_sanitizer
from gapbench_ci.gpu_run import StepCut, StepFailed
from gapbench_ci.gpu_sanitizer import PLANS, TOOLS, coverage, parse_test_list, read_outcome
from gapbench_ci.runner import REPO_ROOT


# A GoogleTest binary: --gtest_list_tests, and --gtest_filter=Suite.*-A:B or one name. SPEC maps
# each test to ok, skip, fail, crash (an internal sanitizer error that loses the context: every
# later test of the process fails) or error (one sanitizer error record in a kernel named in
# "kernel"). Every process appends its filter to SPEC's "log".
FAKE_TESTS = r'''
import fnmatch, json, sys
spec = json.load(open(SPEC))
tests = spec["tests"]
args = sys.argv[1:]
if "--gtest_list_tests" in args:
    print("Running main() from gtest_main.cc")
    suites = {}
    for name in tests:
        suites.setdefault(name.split(".")[0], []).append(name.split(".")[1])
    for suite, names in suites.items():
        print(suite + ".")
        for n in names:
            print("  " + n)
    sys.exit(0)
flt = next(a.split("=", 1)[1] for a in args if a.startswith("--gtest_filter="))
with open(spec["log"], "a") as f:
    f.write(flt + "\n")
positive, _, negative = flt.partition("-")
chosen = [n for n in tests if any(fnmatch.fnmatchcase(n, p) for p in positive.split(":"))
          and not any(fnmatch.fnmatchcase(n, p) for p in negative.split(":") if p)]
lost, failed, errors = False, 0, 0
for name in chosen:
    print("[ RUN      ] " + name)
    what = "fail" if lost else tests[name]
    if what == "crash":
        print("========= Internal Sanitizer Error: The Sanitizer failed to handle a hardware "
              "exception.")
        lost, what = True, "fail"
    if what == "error":
        errors += 1
        print("========= Uninitialized __global__ memory read of size 4 bytes")
        print("=========     at %s+0x360 in k.cu:37" % spec["kernel"])
        print("=========     by thread (0,0,0) in block (0,0,0)")
        what = "ok"
    if what == "skip":
        print("t.cpp:80: Skipped")
        print("skipped: kernel launches block here (compute-sanitizer?), so no stream can be held")
    tag = {"ok": "       OK ", "skip": "  SKIPPED ", "skip_other": "  SKIPPED ",
           "fail": "  FAILED  "}[what]
    failed += what == "fail"
    print("[%s] %s (1 ms)" % (tag, name))
print("========= ERROR SUMMARY: %d errors" % errors)
sys.exit(1 if errors else (1 if failed else 0))
'''

# compute-sanitizer: --help (with --save-supp unless SPEC says "old"), else runs the binary
# after its options with the rest of the arguments, and writes --save-supp's file on errors.
FAKE_SANITIZER = r'''
import json, subprocess, sys, time
spec = json.load(open(SPEC))
args = sys.argv[1:]
if args == ["--help"]:
    print("  --tool  --kernel-name  --suppressions" + ("" if spec.get("old") else "  --save-supp"))
    sys.exit(0)
with open(spec["calls"], "a") as f:
    f.write(json.dumps(args) + "\n")
time.sleep(spec.get("sleep", 0))
binary = next(i for i, a in enumerate(args) if a.endswith("gapbench_gpu_tests"))
done = subprocess.run([sys.executable, *args[binary:]], capture_output=True, text=True)
sys.stdout.write(done.stdout)
if "--save-supp" in args and "ERROR SUMMARY: 0 errors" not in done.stdout:
    open(args[args.index("--save-supp") + 1], "w").write("<ComputeSanitizerOutput/>")
sys.exit(done.returncode)
'''

SUITES = {"ConvGpu.NaiveMatchesReference": "ok", "ConvGpu.CudnnMatchesReference": "ok",
          "GemmGpu.EachArithmeticMatchesTheReference": "ok",
          "GemmGpu.EndToEndMatchesTheReferenceInEachArithmetic": "ok",
          "GpuMemory.PinnedAndDeviceRoundTripIsExact": "ok",
          "GpuMemory.AllocationFailureThrowsCudaError": "ok",
          "GpuTimer.HostDelayBeforeTheWorkIsNotKernelTime": "skip",
          "GpuTimer.EndToEndOverheadShareCountsHostTime": "ok",
          "LstmGpu.CublasSequenceMatchesReference": "ok"}


def fakes(tmp_path: Path, tests: dict[str, str] = SUITES, **extra) -> tuple[Path, Path, dict]:
    spec = {"tests": tests, "log": str(tmp_path / "filters"), "calls": str(tmp_path / "calls"),
            "kernel": "cudnn::detail::some_kernel()", **extra}
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(json.dumps(spec))
    for name, body in (("gapbench_gpu_tests", FAKE_TESTS), ("compute-sanitizer", FAKE_SANITIZER)):
        path = tmp_path / name
        path.write_text(f"#!{sys.executable}\nSPEC = {str(spec_path)!r}\n{body}")
        path.chmod(0o755)
    return tmp_path / "compute-sanitizer", tmp_path / "gapbench_gpu_tests", spec


def run(tmp_path: Path, tool: str, limit: float = 60, suppressions: Path | None = None,
        **spec) -> str:
    sanitizer, tests, _ = fakes(tmp_path, **spec)
    gpu_sanitizer.saves_suppressions.cache_clear()
    return gpu_sanitizer.run_tool(tool, tests, tmp_path / "logs" / tool, (limit, "its limit"),
                                  sanitizer=sanitizer,
                                  suppressions_dir=suppressions or tmp_path / "no-supp")


def filters(tmp_path: Path) -> list[str]:
    return (tmp_path / "filters").read_text().splitlines()


def test_every_tool_blocks_launches_and_leaves_out_the_deliberate_oom():
    """--force-blocking-launches everywhere (the timer's probe then times unheld); the 2^60-byte
    allocation test left out of every tool (compute-sanitizer reports its failed cudaMalloc)."""
    for tool in TOOLS:
        command = gpu_sanitizer.command("cs", tool, "t/gapbench_gpu_tests", "S.*")
        assert command[:3] == ["cs", "--tool", tool]
        assert "--force-blocking-launches" in command and "--error-exitcode" in command
        assert command[-2:] == ["t/gapbench_gpu_tests", "--gtest_filter=S.*"]
        assert "GpuMemory.AllocationFailureThrowsCudaError" in dict(PLANS[tool].left_out)
    source = (REPO_ROOT / "tests" / "test_gpu_memory_gpu.cpp").read_text()
    assert "TEST(GpuMemory, AllocationFailureThrowsCudaError)" in source
    assert "std::size_t{1} << 60" in source


def test_which_kernels_and_tests_each_tool_covers():
    """memcheck and initcheck watch every kernel (initcheck must see cuBLAS's writes, or a
    gapbench kernel reading a GEMM's output looks uninitialized); racecheck and synccheck
    gapbench's own. racecheck leaves out the cuBLAS-only suite it cannot watch there."""
    kernels = {t: "--kernel-name" in gpu_sanitizer.command("cs", t, "b", "*") for t in TOOLS}
    assert kernels == {"memcheck": False, "racecheck": True, "synccheck": True,
                       "initcheck": False}
    assert "--leak-check" in gpu_sanitizer.command("cs", "memcheck", "b", "*")
    suites = parse_test_list("Running main()\nGemmGpu.\n  A\n  B\nConvGpu.\n  C  # GetParam() = 1\n"
                             "GpuMemory.\n  AllocationFailureThrowsCudaError\n  D\n")
    assert suites == {"GemmGpu": ["A", "B"], "ConvGpu": ["C"],
                      "GpuMemory": ["AllocationFailureThrowsCudaError", "D"]}
    kept, left_out = coverage("racecheck", suites)
    assert kept == {"ConvGpu": ["C"], "GpuMemory": ["D"]}
    assert set(left_out) == {"GemmGpu.A", "GemmGpu.B", "GpuMemory.AllocationFailureThrowsCudaError"}
    assert "cuBLAS" in left_out["GemmGpu.A"]
    kept, left_out = coverage("memcheck", suites)
    assert kept["GemmGpu"] == ["A", "B"] and list(left_out) == [
        "GpuMemory.AllocationFailureThrowsCudaError"]


def test_one_process_per_suite_and_a_pass(tmp_path):
    detail = run(tmp_path, "memcheck")
    # cuDNN's suites last: a tool cut off at its limit has checked the others.
    assert filters(tmp_path) == [
        "GemmGpu.*", "GpuMemory.*-GpuMemory.AllocationFailureThrowsCudaError", "GpuTimer.*",
        "LstmGpu.*", "ConvGpu.*"]
    assert detail.startswith("0 errors; 7 tests passed; 1 skipped where launches block "
                             "(GpuTimer.HostDelayBeforeTheWorkIsNotKernelTime); 0 failed; "
                             "in 5 processes")
    assert "left out: GpuMemory.AllocationFailureThrowsCudaError" in detail


def test_a_test_that_loses_the_context_takes_down_no_other(tmp_path):
    """As racecheck did on an H200: an internal error in one test, then every later test of the
    process failing on the lost context. The suite's unfinished tests run again one each: the
    culprit is named, the others pass, and the other suites were never touched."""
    tests = {**SUITES, "ConvGpu.NaiveMatchesReference": "crash"}
    with pytest.raises(StepFailed) as failed:
        run(tmp_path, "synccheck", tests=tests)
    detail = str(failed.value)
    assert "1 failed (ConvGpu.NaiveMatchesReference)" in detail
    assert "passed alone after another test of their suite failed: ConvGpu.CudnnMatchesReference" \
        in detail and "compute-sanitizer had an internal error" in detail
    assert filters(tmp_path)[-3:] == ["ConvGpu.*", "ConvGpu.NaiveMatchesReference",
                                      "ConvGpu.CudnnMatchesReference"]
    assert "6 tests passed" in detail  # GemmGpu, GpuMemory, GpuTimer, LstmGpu all ran


def test_a_skip_for_another_reason_fails_the_tool(tmp_path):
    """Only the stream hold's tests may skip under a sanitizer (launches block there); a test
    that skips for another reason (no cuDNN) ran no GPU code for the tool to check."""
    tests = {**SUITES, "LstmGpu.CublasSequenceMatchesReference": "skip_other"}
    with pytest.raises(StepFailed, match=r"1 failed \(LstmGpu.CublasSequenceMatchesReference\)"):
        run(tmp_path, "memcheck", tests=tests)


def test_racecheck_leaves_out_the_cublas_only_suite(tmp_path):
    tests = {**SUITES, "GemmGpu.EachArithmeticMatchesTheReference": "crash"}
    detail = run(tmp_path, "racecheck", tests=tests)  # the crash is never reached
    assert not any(f.startswith("GemmGpu") for f in filters(tmp_path))
    assert "left out: GemmGpu.EachArithmeticMatchesTheReference" in detail
    calls = [json.loads(line) for line in (tmp_path / "calls").read_text().splitlines()]
    assert all(c[c.index("--kernel-name") + 1] == "kns=gapbench" for c in calls)


def test_errors_fail_the_tool_and_name_their_kernels_and_saved_suppressions(tmp_path):
    tests = {**SUITES, "LstmGpu.CublasSequenceMatchesReference": "error"}
    with pytest.raises(StepFailed) as failed:
        run(tmp_path, "initcheck", tests=tests)
    detail = str(failed.value)
    assert detail.startswith("1 errors;")
    assert "errors in gapbench's code: none; in libraries: cudnn::detail::some_kernel()" in detail
    assert "exact suppressions of them: logs/initcheck/LstmGpu.supp" in detail
    assert (tmp_path / "logs" / "initcheck" / "LstmGpu.supp").exists()


def test_an_older_sanitizer_without_save_supp_is_not_given_it(tmp_path):
    run(tmp_path, "memcheck", old=True)
    calls = (tmp_path / "calls").read_text()
    assert "--save-supp" not in calls


def test_committed_suppressions_are_passed_and_never_for_gapbench_code(tmp_path):
    supp = tmp_path / "supp"
    supp.mkdir()
    (supp / "initcheck.supp").write_text("<record><kind>Initcheck</kind><frame>"
                                         "cudnn::detail::k</frame></record>")
    run(tmp_path, "initcheck", suppressions=supp)
    calls = [json.loads(line) for line in (tmp_path / "calls").read_text().splitlines()]
    assert all(c[c.index("--suppressions") + 1] == str(supp / "initcheck.supp") for c in calls)
    (supp / "initcheck.supp").write_text("<frame>gapbench::lstm::pointwise_kernel</frame>")
    with pytest.raises(StepFailed, match="suppresses a finding in gapbench's own code"):
        run(tmp_path, "initcheck", suppressions=supp)


def test_a_tool_cut_off_says_what_ran_and_what_did_not(tmp_path):
    start = time.monotonic()
    with pytest.raises(StepCut) as cut:
        run(tmp_path, "memcheck", limit=3, sleep=1.2)
    assert time.monotonic() - start < 20
    detail = str(cut.value)
    assert "still running after" in detail and "not run: " in detail
    assert "tests passed" in detail


def test_the_h200_logs_read_as_they_ran():
    """The four tools' output on an H200 (2026-11-26), cut down to what the reader needs."""
    racecheck = read_outcome(
        "[ RUN      ] GemmGpu.EachArithmeticMatchesTheReference\n"
        "========= Internal Sanitizer Error: The Sanitizer failed to handle a hardware exception.\n"
        "=========\n"
        "[  FAILED  ] GemmGpu.EachArithmeticMatchesTheReference (105 ms)\n"
        "[       OK ] ConvGpu.NaiveMatchesReference (816 ms)\n"
        "[  FAILED  ] 1 test, listed below:\n"
        "========= ERROR SUMMARY: 0 errors\n")
    assert racecheck.internal_error and racecheck.errors == 0
    assert racecheck.results == {"GemmGpu.EachArithmeticMatchesTheReference": "FAILED",
                                 "ConvGpu.NaiveMatchesReference": "OK"}
    initcheck = read_outcome(
        "========= Uninitialized __global__ memory read of size 4 bytes\n"
        "=========     at gapbench::lstm::<unnamed>::pointwise_kernel(unsigned int, const float *)"
        "+0x360 in lstm.cu:37\n"
        "=========     by thread (0,0,0) in block (0,0,0)\n"
        "========= ERROR SUMMARY: 117120 errors\n"
        "========= ERROR SUMMARY: 117080 errors were not printed.\n")
    assert initcheck.errors == 117120
    assert initcheck.where == [
        "gapbench::lstm::<unnamed>::pointwise_kernel(unsigned int, const float *)"]
    assert gpu_sanitizer.own(initcheck.where[0])
