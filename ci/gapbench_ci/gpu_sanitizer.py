"""compute-sanitizer over the GPU unit tests, as ci/gpu-check runs it: one process per test suite,
so that a test that loses the CUDA context (or the tool itself) takes down no other suite, and
the tests of a suite that did not pass are then run again one per process, so the one that
failed is named and the others still count. Each tool's plan says which kernels it watches and
which tests it leaves out, and why (docs/gpu-check.md has the table).
"""

from __future__ import annotations

import fnmatch
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from gapbench_ci import tools
from gapbench_ci.gpu_run import StepFailed, find_cuda_tool
from gapbench_ci.runner import REPO_ROOT

TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
# Every gapbench kernel is in namespace gapbench; NVIDIA's libraries' are not. kns matches a
# substring of the kernel's name: "gapbench" is in the mangled name (_ZN8gapbench...) as in the
# demangled one (gapbench::...), whichever the tool compares.
OWN_KERNELS = "kns=gapbench"
# Exact suppressions of library findings, one file per tool (<tool>.supp, compute-sanitizer's
# --suppressions XML), committed only with the evidence that the memory is the library's own
# (docs/gpu-check.md). None is committed yet.
SUPPRESSIONS_DIR = REPO_ROOT / "ci" / "sanitizer"

# The suites that call cuDNN (its algorithm search launches many kernels, each instrumented at its
# first launch): last, so that a tool cut off at its limit has checked the others.
SLOW_SUITES = ("LstmGpu", "ConvGpu")

# compute-sanitizer reports a failed CUDA API call as an error. This test asks cudaMalloc for
# 2^60 bytes on purpose and checks the failure: left out of every tool (rather than
# --report-api-errors no, which would hide every other failed call as well).
_OOM = ("GpuMemory.AllocationFailureThrowsCudaError",
        "asks cudaMalloc for 2^60 bytes on purpose: the failed call is its point")


@dataclass(frozen=True)
class ToolPlan:
    """One tool's run: its options, whether only gapbench's kernels are instrumented, and the
    tests left out with the reason (gtest name patterns)."""

    options: tuple[str, ...]
    own_kernels_only: bool
    left_out: tuple[tuple[str, str], ...]
    watches: str  # what it checks, for the docs and the summary


# Tests that run no gapbench kernel, only a library's: racecheck, which watches gapbench's
# kernels alone (kns=gapbench), has nothing to check in them. Named one by one, so that a new
# test is covered until it is shown to be one of these (ci/tests/test_gpu_sanitizer.py reads
# each one's source for a gapbench kernel).
_CUBLAS_ONLY = ("runs cuBLAS's kernels only, which racecheck does not watch here (on an H200 it "
                "failed inside them: an internal sanitizer error)")
_CUDNN_ONLY = ("runs cuDNN's kernels only, which racecheck does not watch here (on an H100 it "
               "failed inside cudnnRNNForward: an internal sanitizer error, the context lost)")
LIBRARY_ONLY = (
    ("GemmGpu.EachArithmeticMatchesTheReference", _CUBLAS_ONLY),
    ("GemmGpu.HalfPrecisionRunsThroughCublasLtAndMatchesTheReference", _CUBLAS_ONLY),
    ("GemmGpu.EndToEndMatchesTheReferenceInEachArithmetic", _CUBLAS_ONLY),
    ("ConvGpu.CudnnMatchesReference", _CUDNN_ONLY),
    ("ConvGpu.CudnnEachArithmeticMatchesReference", _CUDNN_ONLY),
    ("ConvGpu.CudnnDescriptionNamesAlgorithmWorkspaceAndMath", _CUDNN_ONLY),
    ("ConvGpu.CudnnSearchKeepsTheFastestWarmAlgorithmWithItsWorkspace", _CUDNN_ONLY),
    ("LstmGpu.CudnnRunsTheFrameworksAlgorithmAndMatchesReference", _CUDNN_ONLY),
    ("LstmGpu.CudnnTf32StoresFloat32AndSaysItsMath", _CUDNN_ONLY),
    ("LstmGpu.CudnnSequenceMatchesReference", _CUDNN_ONLY),
    ("LstmGpu.CudnnOneStepMatchesReferenceFirstStep", _CUDNN_ONLY),
)

PLANS = {
    # Every kernel: a wrong size handed to a library shows there, in the library's kernel.
    "memcheck": ToolPlan(("--leak-check", "full"), False, (_OOM,),
                         "out-of-bounds and misaligned accesses and leaks, in every kernel"),
    # Shared-memory races: only gapbench's kernels are gapbench's to fix, and NVIDIA's take long
    # instrumented. Every test that runs a gapbench kernel, none that runs only a library's.
    "racecheck": ToolPlan((), True, (_OOM, *LIBRARY_ONLY),
                          "shared-memory races in gapbench's kernels"),
    "synccheck": ToolPlan((), True, (_OOM,),
                          "invalid barriers and warp synchronization in gapbench's kernels"),
    # Every kernel: a library's writes are invisible to initcheck where its kernels are not
    # instrumented, so a gapbench kernel reading a cuBLAS GEMM's output looked uninitialized.
    "initcheck": ToolPlan((), False, (_OOM,),
                          "reads of device memory nothing wrote, with every kernel's writes "
                          "tracked"),
}


def list_tests(gpu_tests: Path, timeout: float = 30) -> dict[str, list[str]]:
    """The GPU test binary's tests by suite, in its order (--gtest_list_tests needs no GPU)."""
    done = tools.run([gpu_tests, "--gtest_list_tests"], "listing the GPU tests", timeout)
    return parse_test_list(done.out)


def parse_test_list(text: str) -> dict[str, list[str]]:
    suites: dict[str, list[str]] = {}
    suite = None
    for line in text.splitlines():
        if not line.strip() or line.startswith("Running main()"):
            continue
        if not line.startswith(" "):
            suite = line.split("#")[0].strip().rstrip(".")
            suites.setdefault(suite, [])
        elif suite is not None:
            suites[suite].append(line.split("#")[0].strip())
    return {s: tests for s, tests in suites.items() if tests}


def coverage(tool: str, suites: dict[str, list[str]]
             ) -> tuple[dict[str, list[str]], dict[str, str]]:
    """The tests `tool` runs, by suite, and those it leaves out with the reason."""
    kept: dict[str, list[str]] = {}
    left_out: dict[str, str] = {}
    for suite, tests in suites.items():
        for test in tests:
            name = f"{suite}.{test}"
            why = next((w for pattern, w in PLANS[tool].left_out
                        if fnmatch.fnmatchcase(name, pattern)), None)
            if why:
                left_out[name] = why
            else:
                kept.setdefault(suite, []).append(test)
    return kept, left_out


def suppressions_for(tool: str, directory: Path = SUPPRESSIONS_DIR) -> Path | None:
    """The committed suppressions of `tool`, or None. One that names gapbench's own code is
    refused: a finding there is a bug to fix, never to hide."""
    path = directory / f"{tool}.supp"
    if not path.exists():
        return None
    if "gapbench" in path.read_text(encoding="utf-8", errors="replace"):
        raise StepFailed(f"{path} suppresses a finding in gapbench's own code: fix it instead")
    return path


def command(sanitizer: Path | str, tool: str, gpu_tests: Path | str, gtest_filter: str,
            suppressions: Path | None = None) -> list[str]:
    """compute-sanitizer's command for one tool over the tests `gtest_filter` selects. Launches
    forced blocking: without it the stream hold would run instrumented, and instrumenting a
    kernel at its first launch can outlast the hold's time-out; with it the timer's probe sees
    blocking launches and times unheld."""
    plan = PLANS[tool]
    out = [str(sanitizer), "--tool", tool, "--error-exitcode", "1", "--force-blocking-launches",
           *plan.options]
    if plan.own_kernels_only:
        out += ["--kernel-name", OWN_KERNELS]
    if suppressions is not None:
        out += ["--suppressions", str(suppressions)]
    return [*out, str(gpu_tests), f"--gtest_filter={gtest_filter}"]


# ---- reading what one process printed ----------------------------------------------------------

_RESULT = re.compile(r"^\[\s+(OK|SKIPPED|FAILED)\s+\] (\S+)\.(\S+?)(?: \(\d+ ms\))?$")
# Under a sanitizer, launches block: the tests of the stream hold skip, saying so. Any other skip
# (a missing library, no GPU) means a path the tool never saw, and fails the step.
BLOCKING_SKIP = "launches block"
_ERRORS = re.compile(r"ERROR SUMMARY: (\d+) error")
_AT = re.compile(r"^=+\s+at (?:0x[0-9a-f]+ in )?(.+?)(?:\+0x[0-9a-f]+)?(?: in \S+:\d+)?$")
_ADDRESS = re.compile(r"^=+\s+Address (0x[0-9a-f]+)")
# A test's line naming the device buffers gapbench handed a library, each poisoned before it was
# filled (tests/test_lstm_gpu.cpp's say_buffers): "gapbench buffers for cuDNN: x 0x7f..+4096 ...".
BUFFERS_LINE = "gapbench buffers for "
_BUFFER = re.compile(r"\b(\w+) 0x([0-9a-f]+)\+(\d+)\b")


@dataclass(frozen=True)
class Record:
    """One error record the tool printed: the test it came in, the kernel (function) it points
    at, and the device address it names, if any."""

    test: str
    kernel: str
    address: int | None = None


@dataclass
class Outcome:
    """What one process's output says: each test's result, the tool's error count, the error
    records it printed (the tool prints the first 100 or so; `errors` counts all), and the
    buffers each test said it handed a library."""

    # Suite.Test -> OK, SKIPPED (where launches block), SKIPPED OTHERWISE or FAILED
    results: dict[str, str] = field(default_factory=dict)
    errors: int = 0
    internal_error: bool = False
    records: list[Record] = field(default_factory=list)
    # Suite.Test -> [start, end) of each buffer it handed a library
    buffers: dict[str, list[tuple[int, int]]] = field(default_factory=dict)

    @property
    def where(self) -> list[str]:
        return [r.kernel for r in self.records]

    def add(self, other: Outcome) -> None:
        self.errors += other.errors
        self.internal_error |= other.internal_error
        self.records += other.records
        for test, ranges in other.buffers.items():
            self.buffers.setdefault(test, []).extend(ranges)


def read_outcome(text: str) -> Outcome:
    out = Outcome()
    record: dict | None = None  # the record being read: its kernel and address so far
    test = ""  # the test running, from its [ RUN ] line
    since_run: list[str] = []  # the current test's output, for a skip's reason

    def close() -> None:
        nonlocal record
        if record is not None and record.get("kernel"):
            out.records.append(Record(test, record["kernel"], record.get("address")))
        record = None

    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("[ RUN      ]"):
            since_run = []
            test = line.split("]", 1)[1].strip()
        since_run.append(line)
        if m := _RESULT.match(line):
            close()
            result = m[1]
            if result == "SKIPPED" and not any(BLOCKING_SKIP in seen for seen in since_run):
                result = "SKIPPED OTHERWISE"
            # The summary at the end repeats FAILED lines without a time: the first one stands.
            out.results.setdefault(f"{m[2]}.{m[3]}", result)
        elif line.startswith(BUFFERS_LINE):
            out.buffers.setdefault(test, []).extend(
                (int(b[2], 16), int(b[2], 16) + int(b[3])) for b in _BUFFER.finditer(line))
        elif m := _ERRORS.search(line):
            close()
            out.errors = max(out.errors, int(m[1]))
        elif "Internal Sanitizer Error" in line:
            out.internal_error = True
        elif line.startswith("=") and not line.strip("= "):
            close()
        elif line.startswith("========= ") and not line.startswith("=========  "):
            close()
            if not any(k in line for k in ("ERROR SUMMARY", "LEAK SUMMARY", "COMPUTE-SANITIZER",
                                           "Target application")):
                record = {}
        elif record is not None and "kernel" not in record and (m := _AT.match(line)):
            record["kernel"] = m[1]
        elif record is not None and (m := _ADDRESS.match(line)):
            record["address"] = int(m[1], 16)
    close()
    return out


def own(function: str) -> bool:
    return "gapbench" in function


@dataclass
class LibraryFindings:
    """The printed records in library kernels, placed by their address: on a buffer gapbench
    handed the library in that test (gapbench's memory: a bug of ours, for all the poison), on
    memory it did not hand over (the library's own), or unplaced (no address, or a test that
    named no buffers)."""

    kernels: list[str]
    ours: int = 0
    theirs: int = 0
    unplaced: int = 0


def place_library_records(outcome: Outcome) -> LibraryFindings:
    records = [r for r in outcome.records if not own(r.kernel)]
    found = LibraryFindings(sorted({r.kernel for r in records}))
    for r in records:
        ranges = outcome.buffers.get(r.test)
        if r.address is None or not ranges:
            found.unplaced += 1
        elif any(start <= r.address < end for start, end in ranges):
            found.ours += 1
        else:
            found.theirs += 1
    return found


# ---- one tool over the tests -------------------------------------------------------------------

@dataclass
class ToolRun:
    tool: str
    sanitizer: Path
    gpu_tests: Path
    logs: Path  # this tool's folder of logs
    seconds: float  # the step's time limit
    why: str  # what set it
    start: float = field(default_factory=time.monotonic)
    processes: int = 0
    outcome: Outcome = field(default_factory=Outcome)

    def left(self) -> float:
        return self.seconds - (time.monotonic() - self.start)

    def one(self, name: str, gtest_filter: str, suppressions: Path | None) -> Outcome:
        log = self.logs / f"{name}.log"
        self.processes += 1
        tools.run(command(self.sanitizer, self.tool, self.gpu_tests, gtest_filter, suppressions),
                  f"{self.tool} {name}", (max(1.0, self.left()), self.why), log=log, ok=None)
        got = read_outcome(log.read_text(encoding="utf-8", errors="replace"))
        self.outcome.add(got)
        return got


def run_tool(tool: str, gpu_tests: Path, logs: Path, limit: tuple[float, str],
             sanitizer: Path | None = None,
             suppressions_dir: Path = SUPPRESSIONS_DIR,
             progress: Callable[[str], None] = lambda _: None) -> str:
    """Runs one tool over its tests, a process per suite, then the tests of a suite that did
    not pass one per process. Returns the detail for the summary; raises StepFailed
    (tools.TimedOut when time ran out) naming what failed or was left."""
    sanitizer = sanitizer or find_cuda_tool("compute-sanitizer")
    if sanitizer is None:
        raise StepFailed("compute-sanitizer not found (it comes with the CUDA toolkit)")
    suites, left_out = coverage(tool, list_tests(gpu_tests))
    suites = dict(sorted(suites.items(), key=lambda item: (item[0] in SLOW_SUITES,
                                                           SLOW_SUITES.index(item[0])
                                                           if item[0] in SLOW_SUITES else 0)))
    if not suites:
        raise StepFailed(f"no GPU test for {tool} to run")
    suppressions = suppressions_for(tool, suppressions_dir)
    run = ToolRun(tool, sanitizer, gpu_tests, logs, *limit)
    results: dict[str, str] = {}
    alone: list[str] = []  # tests that passed only in a process of their own
    cut: list[str] = []
    try:
        for suite, tests in suites.items():
            progress(f"{tool} {suite}")
            excluded = [n for n in left_out if n.startswith(f"{suite}.")]
            got = run.one(suite, f"{suite}.*" + (f"-{':'.join(excluded)}" if excluded else ""),
                          suppressions)
            names = [f"{suite}.{t}" for t in tests]
            results.update({n: got.results.get(n, "NOT RUN") for n in names})
            unfinished = [n for n in names if results[n] not in ("OK", "SKIPPED")]
            if got.errors == 0 and not unfinished:
                continue
            # One test may have lost the context for the rest: each on its own.
            for name in unfinished if len(names) > 1 else ():
                single = run.one(name, name, suppressions).results.get(name, "NOT RUN")
                if single in ("OK", "SKIPPED") and results[name] != single:
                    alone.append(name)
                results[name] = single
    except tools.TimedOut as e:
        cut = [n for s, ts in suites.items() for n in (f"{s}.{t}" for t in ts)
               if n not in results]
        raise tools.TimedOut(f"{e}; {describe(tool, results, left_out, run, alone)}; "
                             f"not run: {len(cut)} tests ({_first(cut)})", e.command) from None
    detail = describe(tool, results, left_out, run, alone)
    failed = [n for n, r in results.items() if r not in ("OK", "SKIPPED")]
    if failed or run.outcome.errors:
        raise StepFailed(detail)
    return detail


def describe(tool: str, results: dict[str, str], left_out: dict[str, str], run: ToolRun,
             alone: list[str]) -> str:
    counts = {k: sum(r == k for r in results.values()) for k in ("OK", "SKIPPED")}
    failed = [n for n, r in results.items() if r not in ("OK", "SKIPPED")]
    skipped = [n for n, r in results.items() if r == "SKIPPED"]
    parts = [f"{run.outcome.errors} errors", f"{counts['OK']} tests passed",
             f"{len(skipped)} skipped where launches block"
             + (f" ({_first(skipped)})" if skipped else ""),
             f"{len(failed)} failed" + (f" ({_first(failed)})" if failed else ""),
             f"in {run.processes} processes"]
    if run.outcome.where:
        mine = sorted({w for w in run.outcome.where if own(w)})
        library = place_library_records(run.outcome)
        parts.append(f"errors in gapbench's code: {_first(mine) or 'none'}; in libraries: "
                     f"{_first(library.kernels) or 'none'}")
        if library.kernels:
            parts.append(library_verdict(library, mine, failed))
    if run.outcome.internal_error:
        parts.append("compute-sanitizer had an internal error")
    if alone:
        parts.append(f"passed alone after another test of their suite failed: {_first(alone)}")
    if left_out:
        parts.append(f"left out: {_first(sorted(left_out))}")
    return "; ".join(parts)


def library_verdict(found: LibraryFindings, mine: list[str], failed: list[str]) -> str:
    """What the library kernels' records say, apart from gapbench's: where their addresses lie,
    and, when every printed one lies outside what gapbench handed the library (each buffer of it
    poisoned before it was filled) with no error in gapbench's kernels and every test passed
    (validated), that they read the library's own memory: for an exact suppression."""
    placed = (f"library findings apart: of their printed records, {found.ours} on buffers "
              f"gapbench handed the library, {found.theirs} on memory it did not, "
              f"{found.unplaced} unplaced")
    if found.ours:
        return placed + ": a read of memory gapbench handed over, poisoned or not: fix it"
    if found.unplaced or mine or failed:
        return placed
    return (placed + ": the library's own memory (every buffer gapbench hands it is poisoned "
            "before use, and validation passed); suppress exactly those in "
            "ci/sanitizer/<tool>.supp (docs/gpu-check.md)")


def _first(names: list[str], shown: int = 3) -> str:
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more
