"""compute-sanitizer over the GPU unit tests, as ci/gpu-check runs it: one process per test suite,
so that a test that loses the CUDA context (or the tool itself) takes down no other suite, and
the tests of a suite that did not pass are then run again one per process, so the one that
failed is named and the others still count. Each tool's plan says which kernels it watches and
which tests it leaves out, and why (docs/gpu-check.md has the table).
"""

from __future__ import annotations

import fnmatch
import functools
import re
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from gapbench_ci.gpu_run import StepCut, StepFailed, find_cuda_tool, run_logged_to
from gapbench_ci.runner import REPO_ROOT

TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
# Every gapbench kernel is in namespace gapbench; NVIDIA's libraries' are not. kns matches a
# substring of the kernel's name: "gapbench" is in the mangled name (_ZN8gapbench...) as in the
# demangled one (gapbench::...), whichever the tool compares.
OWN_KERNELS = "kns=gapbench"
# Exact suppressions of library findings, one file per tool (<tool>.supp, compute-sanitizer's
# XML as --save-supp writes it), committed only after reading each record.
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


PLANS = {
    # Every kernel: a wrong size handed to a library shows there, in the library's kernel.
    "memcheck": ToolPlan(("--leak-check", "full"), False, (_OOM,),
                         "out-of-bounds and misaligned accesses and leaks, in every kernel"),
    # Shared-memory races: only gapbench's kernels are gapbench's to fix, and NVIDIA's take long
    # instrumented. GemmGpu calls cuBLAS alone, so with its kernels filtered out racecheck has
    # nothing to watch there; on an H200 (CUDA 13.0) racecheck failed to handle a hardware
    # exception in that suite's tensor-core GEMMs, losing the context for the tests after it.
    "racecheck": ToolPlan((), True, (_OOM, (
        "GemmGpu.*", "runs cuBLAS's kernels only, which racecheck does not watch here (and on "
                     "an H200 it failed inside them: an internal sanitizer error)")),
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
    try:
        done = subprocess.run([str(gpu_tests), "--gtest_list_tests"], capture_output=True,
                              text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise StepFailed(f"cannot list the GPU tests: {e}") from None
    if done.returncode != 0:
        raise StepFailed(f"cannot list the GPU tests (exit status {done.returncode}): "
                         f"{(done.stderr.strip().splitlines() or [''])[-1]}")
    return parse_test_list(done.stdout)


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


@functools.cache
def saves_suppressions(sanitizer: str) -> bool:
    """Whether this compute-sanitizer has --save-supp (an older one refuses the option)."""
    try:
        done = subprocess.run([sanitizer, "--help"], capture_output=True, text=True, timeout=30,
                              check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "--save-supp" in done.stdout


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
            suppressions: Path | None = None, save_supp: Path | None = None) -> list[str]:
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
    if save_supp is not None:
        out += ["--save-supp", str(save_supp)]
    return [*out, str(gpu_tests), f"--gtest_filter={gtest_filter}"]


# ---- reading what one process printed ----------------------------------------------------------

_RESULT = re.compile(r"^\[\s+(OK|SKIPPED|FAILED)\s+\] (\S+)\.(\S+?)(?: \(\d+ ms\))?$")
# Under a sanitizer, launches block: the tests of the stream hold skip, saying so. Any other skip
# (a missing library, no GPU) means a path the tool never saw, and fails the step.
BLOCKING_SKIP = "launches block"
_ERRORS = re.compile(r"ERROR SUMMARY: (\d+) error")
_AT = re.compile(r"^=+\s+at (?:0x[0-9a-f]+ in )?(.+?)(?:\+0x[0-9a-f]+)?(?: in \S+:\d+)?$")


@dataclass
class Outcome:
    """What one process's output says: each test's result, the tool's error count, and the
    functions its error records point at."""

    # Suite.Test -> OK, SKIPPED (where launches block), SKIPPED OTHERWISE or FAILED
    results: dict[str, str] = field(default_factory=dict)
    errors: int = 0
    internal_error: bool = False
    where: list[str] = field(default_factory=list)


def read_outcome(text: str) -> Outcome:
    out = Outcome()
    record = False
    since_run: list[str] = []  # the current test's output, for a skip's reason
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("[ RUN      ]"):
            since_run = []
        since_run.append(line)
        if m := _RESULT.match(line):
            result = m[1]
            if result == "SKIPPED" and not any(BLOCKING_SKIP in seen for seen in since_run):
                result = "SKIPPED OTHERWISE"
            # The summary at the end repeats FAILED lines without a time: the first one stands.
            out.results.setdefault(f"{m[2]}.{m[3]}", result)
        elif m := _ERRORS.search(line):
            out.errors = max(out.errors, int(m[1]))
        elif "Internal Sanitizer Error" in line:
            out.internal_error = True
        elif line.startswith("=") and not line.strip("= "):
            record = False
        elif line.startswith("========= ") and not line.startswith("=========  "):
            record = not any(k in line for k in ("ERROR SUMMARY", "LEAK SUMMARY",
                                                  "COMPUTE-SANITIZER", "Target application"))
        elif record and (m := _AT.match(line)):
            out.where.append(m[1])
            record = False
    return out


def own(function: str) -> bool:
    return "gapbench" in function


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
    saved: list[Path] = field(default_factory=list)

    def left(self) -> float:
        return self.seconds - (time.monotonic() - self.start)

    def one(self, name: str, gtest_filter: str, suppressions: Path | None) -> Outcome:
        log = self.logs / f"{name}.log"
        supp = self.logs / f"{name}.supp" if saves_suppressions(str(self.sanitizer)) else None
        self.processes += 1
        run_logged_to(command(self.sanitizer, self.tool, self.gpu_tests, gtest_filter,
                              suppressions, supp), log, f"{self.tool} {name}",
                      (max(1.0, self.left()), self.why))
        got = read_outcome(log.read_text(encoding="utf-8", errors="replace"))
        if supp is not None and supp.exists() and got.errors:
            self.saved.append(supp)
        self.outcome.errors += got.errors
        self.outcome.internal_error |= got.internal_error
        self.outcome.where += got.where
        return got


def run_tool(tool: str, gpu_tests: Path, logs: Path, limit: tuple[float, str],
             sanitizer: Path | None = None,
             suppressions_dir: Path = SUPPRESSIONS_DIR,
             progress: Callable[[str], None] = lambda _: None) -> str:
    """Runs one tool over its tests, a process per suite, then the tests of a suite that did
    not pass one per process. Returns the detail for the summary; raises StepFailed (StepCut
    when time ran out) naming what failed or was left."""
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
    except StepCut as e:
        cut = [n for s, ts in suites.items() for n in (f"{s}.{t}" for t in ts)
               if n not in results]
        raise StepCut(f"{e}; {describe(tool, results, left_out, run, alone)}; "
                      f"not run: {len(cut)} tests ({_first(cut)})") from None
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
        library = sorted({w for w in run.outcome.where if not own(w)})
        mine = sorted({w for w in run.outcome.where if own(w)})
        parts.append(f"errors in gapbench's code: {_first(mine) or 'none'}; in libraries: "
                     f"{_first(library) or 'none'}")
    if run.saved:
        parts.append("exact suppressions of them: " + _first(
            [f"logs/{p.parent.name}/{p.name}" for p in run.saved]))
    if run.outcome.internal_error:
        parts.append("compute-sanitizer had an internal error")
    if alone:
        parts.append(f"passed alone after another test of their suite failed: {_first(alone)}")
    if left_out:
        parts.append(f"left out: {_first(sorted(left_out))}")
    return "; ".join(parts)


def _first(names: list[str], shown: int = 3) -> str:
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more
