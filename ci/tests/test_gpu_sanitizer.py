"""ci/gpu-check's sanitizer plan: which tests each tool covers, one process per suite, a test that
loses the context taking down no other, exact suppressions only for library code, and the time
limit (no GPU needed: a fake compute-sanitizer runs a fake test binary)."""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

import pytest

from gapbench_ci import gpu_sanitizer
from gapbench_ci.gpu_run import StepFailed
from gapbench_ci.gpu_sanitizer import PLANS, TOOLS, coverage, parse_test_list, read_outcome
from gapbench_ci.runner import REPO_ROOT

# A GoogleTest binary: --gtest_list_tests, and --gtest_filter=Suite.*-A:B or one name. SPEC maps
# each test to ok, skip, fail, crash (an internal sanitizer error that loses the context: every
# later test of the process fails) or error (one sanitizer error record in a kernel named in
# "kernel", at "address"); a test named in "buffers" prints that line first. Every process
# appends its filter to SPEC's "log".
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
    if name in spec.get("buffers", {}):
        print(spec["buffers"][name])
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
        print("=========     Address %s" % spec.get("address", "0x7f0000001a00"))
        print("=========     Saved host backtrace up to driver entry point at kernel launch time")
        print("=========         Host Frame: gapbench::lstm::CudnnLstm::enqueue() [0xd7766]")
        print("========= ")
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

# compute-sanitizer 2025.3.1 as far as the plan uses it: --suppressions but no --save-supp (it
# refuses an option it does not know); runs the binary after its options with the rest of the
# arguments.
FAKE_SANITIZER = r'''
import json, subprocess, sys, time
spec = json.load(open(SPEC))
args = sys.argv[1:]
if "--save-supp" in args:
    print("unrecognised option '--save-supp'", file=sys.stderr)
    sys.exit(2)
with open(spec["calls"], "a") as f:
    f.write(json.dumps(args) + "\n")
time.sleep(spec.get("sleep", 0))
binary = next(i for i, a in enumerate(args) if a.endswith("gapbench_gpu_tests"))
done = subprocess.run([sys.executable, *args[binary:]], capture_output=True, text=True)
sys.stdout.write(done.stdout)
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
        check: bool = True, **spec) -> str:
    """The tool's step over the fakes; with check=False a failed step returns its detail."""
    sanitizer, tests, _ = fakes(tmp_path, **spec)
    try:
        return gpu_sanitizer.run_tool(tool, tests, tmp_path / "logs" / tool, (limit, "its limit"),
                                      sanitizer=sanitizer,
                                      suppressions_dir=suppressions or tmp_path / "no-supp")
    except StepFailed as e:
        if check:
            raise
        return str(e)


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
    gapbench's own. racecheck leaves out, by name, the tests that run a library's kernels only."""
    kernels = {t: "--kernel-name" in gpu_sanitizer.command("cs", t, "b", "*") for t in TOOLS}
    assert kernels == {"memcheck": False, "racecheck": True, "synccheck": True,
                       "initcheck": False}
    assert "--leak-check" in gpu_sanitizer.command("cs", "memcheck", "b", "*")
    suites = parse_test_list("Running main()\nGemmGpu.\n  EachArithmeticMatchesTheReference\n"
                             "  ANewTest\nConvGpu.\n  C  # GetParam() = 1\n"
                             "GpuMemory.\n  AllocationFailureThrowsCudaError\n  D\n")
    assert suites == {"GemmGpu": ["EachArithmeticMatchesTheReference", "ANewTest"],
                      "ConvGpu": ["C"], "GpuMemory": ["AllocationFailureThrowsCudaError", "D"]}
    kept, left_out = coverage("racecheck", suites)
    # A test not named as library-only is covered, in a suite of library-only tests too.
    assert kept == {"GemmGpu": ["ANewTest"], "ConvGpu": ["C"], "GpuMemory": ["D"]}
    assert set(left_out) == {"GemmGpu.EachArithmeticMatchesTheReference",
                             "GpuMemory.AllocationFailureThrowsCudaError"}
    assert "cuBLAS" in left_out["GemmGpu.EachArithmeticMatchesTheReference"]
    assert all("*" not in name for name, _ in gpu_sanitizer.LIBRARY_ONLY)
    kept, left_out = coverage("memcheck", suites)
    assert kept["GemmGpu"] == ["EachArithmeticMatchesTheReference", "ANewTest"]
    assert list(left_out) == ["GpuMemory.AllocationFailureThrowsCudaError"]


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


def test_racecheck_leaves_out_the_library_only_tests(tmp_path):
    tests = {**SUITES, "GemmGpu.EachArithmeticMatchesTheReference": "crash",
             "ConvGpu.CudnnMatchesReference": "crash"}
    detail = run(tmp_path, "racecheck", tests=tests)  # the crashes are never reached
    assert not any(f.startswith("GemmGpu") for f in filters(tmp_path))  # nothing left to run
    assert "ConvGpu.*-ConvGpu.CudnnMatchesReference" in filters(tmp_path)
    assert "left out: ConvGpu.CudnnMatchesReference, GemmGpu.EachArithmeticMatchesTheReference" \
        in detail
    calls = [json.loads(line) for line in (tmp_path / "calls").read_text().splitlines()]
    assert all(c[c.index("--kernel-name") + 1] == "kns=gapbench" for c in calls)


CUDNN_TEST = "LstmGpu.CublasSequenceMatchesReference"  # the fakes' test that reports
BUFFERS = "gapbench buffers for cuDNN: x 0x7f0000000000+4096 workspace 0x7f0000010000+65536"


def test_library_errors_on_the_library_s_own_memory_are_said_apart_and_still_fail(tmp_path):
    """initcheck in a cuDNN kernel, on an address outside every buffer the test handed cuDNN
    (all poisoned), every test passed: the step says it is the library's own memory and how to
    suppress it, and fails until an exact suppression is committed."""
    tests = {**SUITES, CUDNN_TEST: "error"}
    with pytest.raises(StepFailed) as failed:
        run(tmp_path, "initcheck", tests=tests, buffers={CUDNN_TEST: BUFFERS},
            address="0x7f1885001a00")
    detail = str(failed.value)
    assert detail.startswith("1 errors;")
    assert "errors in gapbench's code: none; in libraries: cudnn::detail::some_kernel()" in detail
    assert "of their printed records, 0 on buffers gapbench handed the library, 1 on memory it " \
           "did not, 0 unplaced: the library's own memory" in detail
    assert "ci/sanitizer/<tool>.supp" in detail


@pytest.mark.parametrize("address, buffers, says", [
    ("0x7f0000010040", BUFFERS, "1 on buffers gapbench handed the library, 0 on memory it did "
                                "not, 0 unplaced: a read of memory gapbench handed over"),
    ("0x7f1885001a00", None, "0 on buffers gapbench handed the library, 0 on memory it did not, "
                             "1 unplaced"),
])
def test_a_library_error_on_our_buffer_or_unplaced_is_never_called_the_library_s(
        tmp_path, address, buffers, says):
    tests = {**SUITES, CUDNN_TEST: "error"}
    with pytest.raises(StepFailed) as failed:
        run(tmp_path, "initcheck", tests=tests, address=address,
            buffers={CUDNN_TEST: buffers} if buffers else {})
    detail = str(failed.value)
    assert says in detail and "the library's own memory" not in detail


def test_compute_sanitizer_is_never_asked_to_save_suppressions(tmp_path):
    """compute-sanitizer 2025.3.1 has --suppressions but no --save-supp (the fake refuses it, as
    the real one refuses an option it does not know)."""
    run(tmp_path, "initcheck", tests={**SUITES, CUDNN_TEST: "error"}, check=False)
    calls = (tmp_path / "calls").read_text()
    assert calls and "--save-supp" not in calls
    assert not list((tmp_path / "logs").rglob("*.supp"))


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
    with pytest.raises(gpu_sanitizer.tools.TimedOut) as cut:
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


def test_the_h100_logs_read_as_they_ran():
    """initcheck's records on an H100 (2026-11-27), cut down: the kernel, the test and the
    address of each, and a test's line of the buffers it handed cuDNN."""
    initcheck = read_outcome(
        "[ RUN      ] LstmGpu.CudnnRunsTheFrameworksAlgorithmAndMatchesReference\n"
        "gapbench buffers for cuDNN: x 0x7f1884000000+1920 workspace 0x7f1885000000+4096 "
        "seq_lengths 0x7f1886000000+8\n"
        "========= Uninitialized __global__ memory read of size 4 bytes\n"
        "=========     at void elemWiseRNNcell<float, float, float, (cudnnRNNMode_t)2, "
        "(cudnnRNNBiasMode_t)2>(int, int, int, int, int, bool, const T1 *, const T1 *, "
        "const T2 *, const T1 *, const T1 *, const T1 *, const T1 *, T2 *, T1 *, T1 *, T1 *, "
        "T1 *, cudnnRNNClipMode_t, cudnnNanPropagation_t, float, float)+0x3a0\n"
        "=========     by thread (64,0,0) in block (0,0,0)\n"
        "=========     Address 0x7f1885001a00\n"
        "=========     Saved host backtrace up to driver entry point at kernel launch time\n"
        "=========         Host Frame: cuLaunchKernel [0x39fb94] in libcuda.so.1\n"
        "=========         Host Frame: gapbench::lstm::CudnnLstm::enqueue() [0xd7766] in "
        "gapbench_gpu_tests\n"
        "========= \n"
        "[       OK ] LstmGpu.CudnnRunsTheFrameworksAlgorithmAndMatchesReference (23318 ms)\n"
        "========= ERROR SUMMARY: 110076 errors\n")
    assert initcheck.errors == 110076
    [record] = initcheck.records
    assert record.kernel.startswith("void elemWiseRNNcell<float, float, float, ")
    assert record.test == "LstmGpu.CudnnRunsTheFrameworksAlgorithmAndMatchesReference"
    assert record.address == 0x7f1885001a00 and not gpu_sanitizer.own(record.kernel)
    # Its address lies outside those three buffers: 0x7f1885001a00 is past the workspace's 4096.
    placed = gpu_sanitizer.place_library_records(initcheck)
    assert (placed.ours, placed.theirs, placed.unplaced) == (0, 1, 0)
    inside = read_outcome(initcheck_text := (
        "[ RUN      ] S.T\ngapbench buffers for cuDNN: workspace 0x7f1885000000+8192\n"
        "========= Uninitialized __global__ memory read of size 4 bytes\n"
        "=========     at cudnn_kernel()+0x10\n=========     Address 0x7f1885001a00\n"
        "========= \n[       OK ] S.T (1 ms)\n"))
    assert "cudnn_kernel()" in initcheck_text
    assert gpu_sanitizer.place_library_records(inside).ours == 1


# ---- which tests racecheck leaves out, and what the plan costs ---------------------------------

TESTS_DIR = REPO_ROOT / "tests"
KERNEL_SOURCES = [*(REPO_ROOT / "kernels").glob("*.cu"), *(REPO_ROOT / "fixtures").glob("*.cu")]
_TEST = re.compile(r"^TEST\((\w+), (\w+)\) \{", re.M)
_DEFINITION = re.compile(r"^(?!TEST\b)[A-Za-z][\w:<>,*& ]*?\b(\w+)\([^;{]*\)\s*(?:const\s*)?\{",
                         re.M)


def code(path: Path) -> str:
    """A C++ file's text without its comments (a name in a comment runs nothing)."""
    text = re.sub(r"/\*.*?\*/", "", path.read_text(encoding="utf-8"), flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def _block(text: str, open_brace: int) -> str:
    """The text from a '{' to its matching '}'."""
    depth = 0
    for i in range(open_brace, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return text[open_brace:i + 1]
    return text[open_brace:]


def gpu_test_bodies() -> dict[str, str]:
    """Each GPU test's body with the bodies of its file's helper functions it calls, at any
    depth (Suite.Test -> text)."""
    bodies = {}
    for path in sorted(TESTS_DIR.glob("test_*_gpu.cpp")):
        text = code(path)
        helpers = {m[1]: _block(text, m.end() - 1) for m in _DEFINITION.finditer(text)}
        for m in _TEST.finditer(text):
            body, seen = _block(text, m.end() - 1), set()
            grown = True
            while grown:
                called = {h for h in helpers if h not in seen and re.search(rf"\b{h}\b", body)}
                seen |= called
                body += "".join(helpers[h] for h in sorted(called))
                grown = bool(called)
            bodies[f"{m[1]}.{m[2]}"] = body
    return bodies


def gapbench_kernel_names() -> set[str]:
    """What runs a gapbench kernel: the host functions and classes defined in kernels/*.cu and
    fixtures/*.cu, then every class declared in a kernels/ or fixtures/ header whose own code
    (the header, or its .cpp) uses one of those, until nothing new is found. A file beside a .cu
    only declares its launchers, and its other types (shapes, problems) run nothing."""
    names = set()
    for path in KERNEL_SOURCES:
        for m in re.finditer(r"^(?:[\w:<>*&]+\s+)*?((?:\w+::)?\w+)\(", code(path), re.M):
            if not m[0].startswith(("__global__", "static_assert", "template")):
                names.add(m[1].split("::")[0])
    launching = {p.with_suffix("") for p in KERNEL_SOURCES}
    units: dict[Path, list[Path]] = {}
    for folder in ("kernels", "kernels/base", "fixtures"):
        for path in (REPO_ROOT / folder).iterdir():
            if path.suffix in (".h", ".cpp") and path.with_suffix("") not in launching:
                units.setdefault(path.with_suffix(""), []).append(path)
    grown = True
    while grown:
        grown = False
        for paths in units.values():
            texts = [code(p) for p in paths]
            if not any(re.search(rf"\b{n}\b", t) for n in names for t in texts):
                continue
            declared = {c for p in paths if p.suffix == ".h"
                        for c in re.findall(r"^(?:class|struct) (\w+)", code(p), re.M)}
            grown |= not declared <= names
            names |= declared
    return names


def runs_a_gapbench_kernel(body: str, kernels: set[str]) -> list[str]:
    return sorted(n for n in kernels if re.search(rf"\b{n}\b", body))


def library_only_but_running_ours(bodies: dict[str, str], kernels: set[str]) -> list[str]:
    """The tests racecheck leaves out as library-only that run a gapbench kernel after all."""
    wrong = []
    for name, why in gpu_sanitizer.LIBRARY_ONLY:
        found = runs_a_gapbench_kernel(bodies.get(name, ""), kernels)
        if found:
            wrong.append(f"{name} runs gapbench's {found}: racecheck must cover it ({why})")
    return wrong


def test_racecheck_leaves_out_only_tests_that_run_no_gapbench_kernel():
    bodies = gpu_test_bodies()
    kernels = gapbench_kernel_names()
    # The detector sees the kernels the suites are about (so an empty answer means something),
    # and not the library wrappers.
    for name in ("ConvGpu.NaiveMatchesReference", "LstmGpu.CublasSequenceMatchesReference",
                 "LstmGpu.PointwiseKernelMatchesCpuPointwise", "GpuTimer.ALaunchStormIsTimedUnheld",
                 "DenseGpu.BiasReluMatchesReference", "LaunchGpu.EveryLaunchRunsOnceInOrder",
                 "PreprocessGpu.ImageElementwiseMatchesReference",
                 "GpuTimer.KernelSecondsArePositiveAndGrowWithWork"):
        assert runs_a_gapbench_kernel(bodies[name], kernels), name
    assert {"CublasLstm", "TimedStream", "naive_gpu"} <= kernels
    assert not {"CudnnLstm", "CudnnConvolution", "CublasGemm", "Shape", "Problem"} & kernels
    suites: dict[str, list[str]] = {}
    for name in bodies:
        suites.setdefault(name.split(".")[0], []).append(name.split(".")[1])
    _, left_out = coverage("racecheck", suites)
    assert all(name in bodies for name, _ in gpu_sanitizer.LIBRARY_ONLY), "a test renamed?"
    assert library_only_but_running_ours(bodies, kernels) == []
    # Nothing else is left out but the deliberate 2^60-byte allocation.
    assert set(left_out) == {n for n, _ in gpu_sanitizer.LIBRARY_ONLY} | {
        "GpuMemory.AllocationFailureThrowsCudaError"}


def test_a_test_that_runs_a_gapbench_kernel_cannot_be_left_out(monkeypatch):
    monkeypatch.setattr(gpu_sanitizer, "LIBRARY_ONLY", (
        *gpu_sanitizer.LIBRARY_ONLY, ("LstmGpu.CublasSequenceMatchesReference", "wrong"),
        ("GpuTimer.ALaunchStormIsTimedUnheld", "wrong")))
    wrong = library_only_but_running_ours(gpu_test_bodies(), gapbench_kernel_names())
    assert [w.split(" ")[0] for w in wrong] == ["LstmGpu.CublasSequenceMatchesReference",
                                                "GpuTimer.ALaunchStormIsTimedUnheld"]


# Each GPU test's time under each tool on an H100 (2026-11-27): the file says where each number
# comes from.
H100_TIMES = json.loads((REPO_ROOT / "ci" / "tests" / "data" / "h100-sanitizer-times.json")
                        .read_text(encoding="utf-8"))


def plan_seconds(tool: str) -> tuple[float, list[str]]:
    """What the plan of `tool` takes on an H100: a process per suite with a test kept, each test
    at its time under that tool there, else its longest under another tool (an estimate), else
    1 s; and the tests no tool timed."""
    suites: dict[str, list[str]] = {}
    for name in gpu_test_bodies():
        suites.setdefault(name.split(".")[0], []).append(name.split(".")[1])
    kept, _ = coverage(tool, suites)
    times = H100_TIMES["tests_ms"]
    seconds, unmeasured = 0.0, []
    for suite, tests in kept.items():
        seconds += H100_TIMES["process_s"]
        for test in tests:
            name = f"{suite}.{test}"
            ms = times[tool].get(name)
            if ms is None:
                others = [t[name] for t in times.values() if name in t]
                ms = max(others) if others else 1000
                if not others:
                    unmeasured.append(name)
            seconds += ms / 1000
    return seconds, unmeasured


def test_each_tool_s_plan_fits_its_expected_time_on_an_h100():
    """The four plans, costed from the H100's logs, within what ci/gpu-check expects of each
    step (which a test in test_gpu_check.py holds within the budget and the step's limit)."""
    from gapbench_ci.gpu_check import EXPECTED_S, STEP_LIMIT_S
    for tool in TOOLS:
        seconds, unmeasured = plan_seconds(tool)
        assert seconds <= EXPECTED_S[tool] <= STEP_LIMIT_S[tool] / 1.5, (tool, seconds)
        assert len(unmeasured) <= 6, (tool, unmeasured)  # the tests added since that run
    # The storm's estimate holds only while the test launches that many where launches block.
    source = (TESTS_DIR / "test_gpu_timer_gpu.cpp").read_text()
    assert "return streams_hold ? 20000 : kMaxHeldLaunches + 1;" in source
    assert H100_TIMES["tests_ms"]["racecheck"]["GpuTimer.ALaunchStormIsTimedUnheld"] == \
        round(257 * 16000 / 2601)


def test_racecheck_over_the_cudnn_tests_would_not_fit(monkeypatch):
    """The plan's times answer to its coverage: racecheck over every test (cuDNN's LSTM tests
    at their initcheck times) runs past what the step expects."""
    from gapbench_ci.gpu_check import EXPECTED_S
    monkeypatch.setitem(PLANS, "racecheck", gpu_sanitizer.ToolPlan((), True, (), "all"))
    assert plan_seconds("racecheck")[0] > EXPECTED_S["racecheck"]
