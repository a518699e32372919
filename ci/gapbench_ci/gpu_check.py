"""Check every GPU path of gapbench on the GPU in hand, in one command within a time budget.

    ci/gpu-check [--steps LIST] [--budget SECONDS] [--kit DIR] [--profile quick|full]
                 [--filter REGEX] [--out DIR] [--build-dir DIR] [--archive FILE] [--redo]
                 [-D NAME=VALUE ...]

Every step runs under its own time limit, and the whole within --budget (540 s by default in
the quick profile: a lent GPU's 10-minute call, with its start); after each step summary.md is
rewritten and, with --archive, everything so far is packed, so a run cut off keeps what
finished. Exit status: 0 only if every step asked for passed (now or earlier), 1 if one failed,
was cut off or did not run, 2 without a GPU or on bad arguments. The steps, their limits and
what it writes: docs/gpu-check.md.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import sys
import tarfile
import time
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from gapbench_report.cli import kit as commandline
from gapbench_report.inputs.files import write_atomic, write_json_atomic
from gapbench_report.inputs.results import Results, load_results

from gapbench_ci import gpu_sanitizer, tools
from gapbench_ci.gpu_kit import BUILD_SOURCES, Kit
from gapbench_ci.gpu_run import ARCHIVE_RESERVE_S, PROG, Budget, StepFailed, hash_files
from gapbench_ci.gpu_summary import Done, Summary
from gapbench_ci.runner import REPO_ROOT, exact_filter, tree_state

# A name --steps takes for several steps.
GROUPS = {"sanitizer": gpu_sanitizer.TOOLS}
EXIT_NO_GPU = 2

# The whole command, by default in the quick profile: a lent GPU's call is 10 minutes at most,
# and its machine's start comes out of the same 15.
DEFAULT_BUDGET_S = 540
# Listing the benchmarks, before bench: its own limit.
LIST_LIMIT_S = 30
# Each family's quick GPU run, about twice its estimate (ci/gpu-quick-estimate, from the H200's
# files); a family not listed gets DEFAULT_FAMILY_LIMIT_S.
FAMILY_LIMIT_S = {"transfer": 45, "conv": 70, "lstm": 50, "overhead": 70, "pipeline": 30,
                  "preprocess": 40, "peak": 20}
DEFAULT_FAMILY_LIMIT_S = 45
# A family's full profile takes far longer (hours in all): never on a lent machine.
FULL_BENCH_LIMIT_S = 4 * 3600
# The quick run's default: every GPU variant (peak's GPU ceilings go beside each family).
DEFAULT_FILTER = "/gpu/"
# Full-profile sizes of the rows compared with PyTorch (gapbench-probe): the batch-32 conv
# layer, the LSTM at hidden 512 (batch 64, 25 steps), cuBLAS's matmul at 2048 and 4096, the
# 256 MiB copies and the GPU ceilings (GEMM at 2048, 4096, 8192), with fewer repetitions.
KEY_FILTER = ("^conv/[^/]+/gpu/n:32/c:64/hw:56/k:64/r:3/"
              "|^lstm/[^/]+/gpu/.*batch:64/input:512/hidden:512/steps:25/"
              "|^overhead/cublas[^/]*/gpu/op:matmul/n:(4096|2048)/"
              "|^transfer/[^/]+/gpu/.*bytes:268435456/|^peak/[^/]+/gpu/")
KEY_FLAGS = ("--profile=full", "--benchmark_repetitions=3", "--benchmark_min_time=0.1")
# The source files whose content says "the same source" (no git needed: a copy of the tree): the
# binaries' and the Python's that runs the steps.
SOURCE_PARTS = (*BUILD_SOURCES, "probe/gapbench_probe", "report/gapbench_report", "ci/gapbench_ci")


# ---- finding the GPU ---------------------------------------------------------------------------

def gpu_absent_reason(nvidia_smi: str | None = None) -> str | None:
    """Why this machine has no NVIDIA GPU to check, or None when nvidia-smi lists one."""
    smi = nvidia_smi or shutil.which("nvidia-smi")
    if not smi:
        return "no NVIDIA driver here (nvidia-smi not found)"
    try:
        done = tools.run([smi, "-L"], limit=60, ok=None)
    except tools.CommandFailed as e:
        return f"nvidia-smi did not answer ({e})"
    gpus = [line for line in done.out.splitlines() if line.startswith("GPU ")]
    if done.status != 0 or not gpus:
        last = tools.last_line(done.err) or tools.last_line(done.out)
        return f"nvidia-smi lists no GPU ({last or f'exit status {done.status}'})"
    return None


# ---- what earlier runs did -------------------------------------------------------------------

def source_fingerprint(root: Path = REPO_ROOT) -> str:
    """The source's files, hashed: what "the same source" means for a step done earlier."""
    return hash_files(root, SOURCE_PARTS)


def gpu_verdict(results: Results, what: str) -> str:
    """A results file's verdict: failures, or GPU benchmarks skipped, raise StepFailed."""
    benchmarks = list(results.benchmarks().values())
    failed = [b.name for b in benchmarks if b.status == "failed"]
    gpu_skips = [b for b in benchmarks if b.status == "skipped" and b.parsed.device == "gpu"]
    timed = sum(b.status == "ok" for b in benchmarks)
    problems = []
    if failed:
        problems.append(f"{len(failed)} failed (first: {failed[0]})")
    if gpu_skips:
        problems.append(f"{len(gpu_skips)} GPU {what} skipped (first: {gpu_skips[0].name}: "
                        f"{gpu_skips[0].skip_reason})")
    if problems or not timed:
        raise StepFailed("; ".join(problems) or "nothing was timed")
    return f"{timed} benchmarks timed and validated"


# ---- the steps ---------------------------------------------------------------------------------

@dataclass
class Check:
    out: Path
    build_dir: Path
    profile: str
    filter: str
    cmake_defines: tuple[str, ...] = ()
    budget: Budget = field(default_factory=lambda: Budget(None))
    native: bool = True  # build for the GPU in hand (CMake's "native" needs one)
    kit: Kit | None = None  # prebuilt binaries and packages (ci/gpu-kit)
    written: list[Path] = field(default_factory=list)  # results files of bench, key and probe
    families_found: dict[str, list[str]] = field(default_factory=dict)
    binaries: Path | None = None  # where gapbench and gapbench_gpu_tests are, once known
    bench_start: float | None = None

    @property
    def logs(self) -> Path:
        return self.out / "logs"

    @property
    def results(self) -> Path:
        return self.out / "results"

    @property
    def binary(self) -> Path:
        return (self.binaries or self.build_dir) / "gapbench"

    @property
    def gpu_tests(self) -> Path:
        if self.binaries is not None:
            return self.binaries / "gapbench_gpu_tests"
        return self.build_dir / "tests" / "gapbench_gpu_tests"

    def own_limit(self, kind: str) -> float:
        if kind == "bench" and self.profile == "full":
            return FULL_BENCH_LIMIT_S
        return LIST_LIMIT_S if kind == "list" else STEP_LIMIT_S[kind]

    def limit(self, kind: str) -> tuple[float, str]:
        return self.budget.limit(self.own_limit(kind))

    def family_limit(self, family: str) -> tuple[float, str]:
        """A family's limit: its own, within what is left of bench's and of the budget."""
        if self.profile == "full":
            return self.budget.limit(FULL_BENCH_LIMIT_S)
        if self.bench_start is None:
            self.bench_start = time.monotonic()
        own = FAMILY_LIMIT_S.get(family, DEFAULT_FAMILY_LIMIT_S)
        window = STEP_LIMIT_S["bench"] - (time.monotonic() - self.bench_start)
        if window < own:
            seconds, why = self.budget.limit(max(1.0, window))
            return seconds, why if why != "its limit" else "what was left of bench's limit"
        return self.budget.limit(own)

    def build(self) -> str:
        if self.kit is not None:
            usable, why = self.kit.usable_binaries({})
            if usable:
                self.binaries = self.kit.binary("gapbench").parent
                return f"not built: {why} load here"
            print(f"{PROG}: building: {why}", file=sys.stderr, flush=True)
        log = self.logs / "build.log"
        # The Python running the check: CMake finds cuDNN in its nvidia.cudnn package.
        done = tools.configure(REPO_ROOT, self.build_dir, python=sys.executable,
                               cuda_architectures="native" if self.native else None,
                               require_gpu_libraries=True,
                               extra=[f"-D{d}" for d in self.cmake_defines], what="configure",
                               limit=self.limit("build"), log=log, ok=None)
        if done.status != 0:
            missing = tools.last_log_line(log, "GAPBENCH_REQUIRE_GPU_LIBRARIES")
            raise StepFailed(f"configuring failed: {missing or done.last} (logs/build.log)")
        build_log = self.logs / "build-compile.log"
        # The two binaries only: the check needs no CPU unit test, and a lent machine's time is
        # short.
        done = tools.build(self.build_dir, tools.GAPBENCH_AND_GPU_TESTS, what="build",
                           limit=self.limit("build"), log=build_log, ok=None)
        if done.status != 0:
            raise StepFailed(f"building failed: {tools.last_log_line(build_log, 'error')} "
                             "(logs/build-compile.log)")
        if not self.gpu_tests.exists():
            raise StepFailed("built without CUDA: CMake found no usable nvcc (logs/build.log)")
        cudnn = tools.last_log_line(log, "-- cuDNN: ").removeprefix("-- ")
        target = ("for this GPU" if self.native
                  else "without a GPU in hand (for CMake's default architectures, or -D's)")
        return f"built {target} in {self.build_dir}; {cudnn}"

    def doctor(self) -> str:
        exit_status, data = tools.doctor(self.binary, self.limit("doctor"))
        write_json_atomic(self.out / "doctor.json", data)
        facts = data["facts"]
        status = facts.get("gpu.status", "missing")
        if exit_status != 0 or status != "ok":
            raise StepFailed(f"gpu.status: {status}")
        return (f"{facts.get('gpu.name', 'GPU')} (compute capability "
                f"{facts.get('gpu.compute_capability', '?')}); driver "
                f"{facts.get('cuda.driver_version')}, "
                f"runtime {facts.get('cuda.runtime_version')}, cuDNN "
                f"{facts.get('cudnn.version_loaded', 'none')}")

    def unit_tests(self) -> str:
        """The GPU test binary itself (no ctest: the kit's binaries have no build folder)."""
        junit = self.logs / "gpu-tests.xml"
        junit.unlink(missing_ok=True)  # an earlier run's counts must not stand in for this one's
        status = tools.run([self.gpu_tests, f"--gtest_output=xml:{junit.resolve()}"],
                           "the GPU tests", self.limit("tests"), log=self.logs / "gpu-tests.log",
                           ok=None).status
        counts = junit_counts(junit) if junit.exists() else None
        if counts is None:
            raise StepFailed(f"the GPU tests wrote no results (exit status {status}; "
                             "logs/gpu-tests.log)")
        text = f"{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped"
        if status != 0 or counts["failed"] or counts["skipped"] or not counts["passed"]:
            raise StepFailed(f"{text} (logs/gpu-tests.log)")
        return text

    def sanitizer(self, tool: str) -> str:
        return gpu_sanitizer.run_tool(
            tool, self.gpu_tests, self.logs / f"sanitizer-{tool}", self.limit(tool),
            progress=lambda what: print(f"{PROG}:   {what}", file=sys.stderr, flush=True))

    def families(self) -> dict[str, list[str]]:
        """Each family's benchmarks that --filter selects, with peak's beside each (as
        `ctest -L bench` runs them: each file carries the machine's ceilings)."""
        by_family: dict[str, list[str]] = {}
        for name in tools.list_benchmarks(self.binary, self.profile, self.filter,
                                          self.limit("list")):
            by_family.setdefault(name.split("/", 1)[0], []).append(name)
        if not by_family:
            raise StepFailed(f"--filter {self.filter!r} selects no benchmark")
        peak = by_family.pop("peak", [])
        self.families_found = ({f: peak + names for f, names in by_family.items()}
                               or {"peak": peak})
        return self.families_found

    def list_benchmarks(self) -> str:
        found = self.families()
        return f"{sum(len(n) for n in found.values())} benchmarks in {len(found)} files: " \
               f"{', '.join(found)}"

    def _benchmark_file(self, name: str, flags: Sequence[str], limit: tuple[float, str],
                        what: str) -> str:
        out = self.results / f"{name}.json"
        self.results.mkdir(parents=True, exist_ok=True)
        before = _stamp(out)
        status = tools.run([self.binary, *flags, f"--benchmark_out={out}"], name, limit,
                           log=self.logs / f"bench-{name}.log", ok=None).status
        if status not in (0, 1) or _stamp(out) == before:
            raise StepFailed(f"gapbench exited with status {status} and wrote no results "
                             f"(logs/bench-{name}.log); any earlier {out.name} is kept")
        self.written.append(out)
        return gpu_verdict(load_results(out), what)

    def bench(self, family: str, names: list[str]) -> str:
        return self._benchmark_file(
            family, [f"--profile={self.profile}", f"--benchmark_filter={exact_filter(names)}"],
            self.family_limit(family), "variants")

    def key(self) -> str:
        return self._benchmark_file("key-full", [*KEY_FLAGS, f"--benchmark_filter={KEY_FILTER}"],
                                    self.limit("key"), "variants")

    def probe(self) -> str:
        """PyTorch on this GPU through gapbench-probe, with the Python running this check."""
        out = self.results / "framework-torch.json"
        before = _stamp(out)
        path = os.pathsep.join(filter(None, [str(REPO_ROOT / "probe"),
                                             os.environ.get("PYTHONPATH")]))
        done = tools.run(
            [sys.executable, "-m", "gapbench_probe", "--framework", "torch", "--device", "gpu",
             "--profile", self.profile, "--out", self.results, "--gapbench", self.binary],
            "gapbench-probe", self.limit("probe"), log=self.logs / "probe.log", ok=None,
            env={"PYTHONPATH": path, "PYTHONUNBUFFERED": "1"})
        if done.status not in (0, 1) or _stamp(out) == before:
            raise StepFailed(f"gapbench-probe exited with status {done.status} and wrote no "
                             f"results (logs/probe.log): {done.last}")
        self.written.append(out)
        return gpu_verdict(load_results(out), "benchmarks")

    def report(self) -> str:
        # This run's files only (or an earlier call's for the same source and options): a file
        # kept from another run (another --filter, a family that failed) is not this run's.
        files = list(dict.fromkeys(f for f in self.written if f.exists()))
        if not files:
            raise StepFailed("no results of this run to render")
        done = tools.run([sys.executable, "-m", "gapbench_report", "render", *files, "--out",
                          self.out / "report"], "render", self.limit("report"),
                         log=self.logs / "report.log", ok=None)
        if done.status != 0:
            raise StepFailed(f"render failed: {done.last} (logs/report.log)")
        return f"{self.out / 'report' / 'index.html'}"


# ---- the steps, in one table -------------------------------------------------------------------

@dataclass
class Running:
    """One call's steps: the check, its summary, and the keys its record of what was done
    files each step under (a step's key starts with its build's; bench's and probe's also name
    the profile and the filter)."""

    check: Check
    summary: Summary
    built: str
    results_key: str

    def one(self, label: str, body: Callable[[], str], kind: str, key: str | None = None,
            written: Callable[[], list[Path]] = list) -> bool:
        """One row of the summary: `body` under step `kind`'s own limit."""
        return self.summary.run(label, body, key=key, written=written,
                                limit=self.check.own_limit(kind))


def _build(r: Running, name: str) -> bool:
    return r.one("build", r.check.build, name, key=r.built)


def _doctor(r: Running, name: str) -> bool:
    return r.one("doctor", r.check.doctor, name, key=f"{r.built} | doctor")


def _tests(r: Running, name: str) -> bool:
    return r.one("gpu tests", r.check.unit_tests, name, key=f"{r.built} | tests")


def _sanitizer(r: Running, name: str) -> bool:
    return r.one(f"sanitizer {name}", lambda: r.check.sanitizer(name), name,
                 key=f"{r.built} | sanitizer {name}")


def _probe(r: Running, name: str) -> bool:
    return r.one("probe torch", r.check.probe, name, key=f"{r.results_key} | probe",
                 written=lambda: [r.check.results / "framework-torch.json"])


def _bench(r: Running, name: str) -> bool:
    """The benchmarks listed, then one file per family, each under its own limit."""
    check = r.check
    if not r.summary.run("list benchmarks", check.list_benchmarks):
        return False
    for family, names in check.families_found.items():
        r.summary.run(f"bench {family}", lambda f=family, n=names: check.bench(f, n),
                      key=f"{r.results_key} | bench {family}",
                      written=lambda f=family: [check.results / f"{f}.json"],
                      limit=FAMILY_LIMIT_S.get(family, DEFAULT_FAMILY_LIMIT_S)
                      if check.profile == "quick" else FULL_BENCH_LIMIT_S)
    return True


def _key(r: Running, name: str) -> bool:
    return r.one("key full rows", r.check.key, name, key=f"{r.built} | key",
                 written=lambda: [r.check.results / "key-full.json"])


def _report(r: Running, name: str) -> bool:
    # What bench, key and probe wrote for this source and these options, now or in an earlier
    # call within the machine's warm window.
    earlier = r.summary.done.steps if r.summary.done is not None else {}
    for key, done in earlier.items():
        if key.startswith(f"{r.results_key} | bench ") or key in (
                f"{r.results_key} | probe", f"{r.built} | key"):
            r.check.written += [Path(p) for p in done.get("written", [])]
    return r.one("report", r.check.report, name)


@dataclass(frozen=True)
class StepEntry:
    """A step of ci/gpu-check: its name (as --steps takes it), its own time limit, what it is
    expected to take on an H100 or H200, and what runs it: run(running, name), True when it
    passed. docs/gpu-check.md's table of the steps is this one's, which a test holds it to."""

    name: str
    limit_s: float
    expected_s: float
    run: Callable[[Running, str], bool]


# In their order; build always runs first. initcheck, instrumenting every kernel (cuDNN's
# algorithm search included), has the least known time: last, in what is left.
# Each limit is at least one and a half times what the step is expected to take, and about twice
# what it took on an H200 (2026-11-26) or an H100 (2026-11-27); bench's bounds all the families
# together, each family's own being FAMILY_LIMIT_S. The expected times come from the H100's run
# (ci/gpu-check --kit, 2026-11-27): doctor 0.6 s, the GPU tests 5.2, the probe 50.6, the key rows
# 70 (less the two plain cuDNN conv rows since dropped), the report 6.8; a build on the machine,
# 70 s on 2 cores (the kit's binaries take none). The four sanitizer plans costed test by test
# from that run's logs (ci/tests/test_gpu_sanitizer.py: memcheck 27, racecheck 50, synccheck 20,
# initcheck 51); bench is ci/gpu-quick-estimate's sum for the quick GPU families on the H100's
# files (153 s), with the listing and the 6% the model undercounted there. A test holds their sum
# within DEFAULT_BUDGET_S.
STEP_TABLE = (
    StepEntry("build", 180, 70, _build),
    StepEntry("doctor", 20, 1, _doctor),
    StepEntry("tests", 45, 6, _tests),
    StepEntry("memcheck", 60, 27, _sanitizer),
    StepEntry("racecheck", 80, 50, _sanitizer),
    StepEntry("synccheck", 45, 20, _sanitizer),
    StepEntry("probe", 80, 51, _probe),
    StepEntry("bench", 210, 165, _bench),
    StepEntry("key", 105, 68, _key),
    StepEntry("report", 30, 7, _report),
    StepEntry("initcheck", 150, 51, _sanitizer),
)
# The table's columns, by step name.
STEPS = tuple(step.name for step in STEP_TABLE)
STEP_LIMIT_S = {step.name: step.limit_s for step in STEP_TABLE}
EXPECTED_S = {step.name: step.expected_s for step in STEP_TABLE}


def run_steps(steps: Sequence[str], check: Check, summary: Summary,
              defines: Sequence[str] = ()) -> None:
    """The steps asked for, in STEPS' order, the build first wherever another step needs it."""
    built = f"build {' '.join(defines)}".strip()
    running = Running(check, summary, built, f"{built} | {check.profile} | {check.filter}")
    by_name = {step.name: step for step in STEP_TABLE}
    if not by_name["build"].run(running, "build"):
        return
    for name in steps:
        if name != "build":
            by_name[name].run(running, name)


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return st.st_ino, st.st_mtime_ns


def junit_counts(path: Path) -> dict[str, int] | None:
    """passed, failed and skipped test cases in a JUnit file (GoogleTest's or ctest's), or None
    if unreadable."""
    try:
        cases = ElementTree.parse(path).getroot().iter("testcase")
    except (ElementTree.ParseError, OSError):
        return None
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    for case in cases:
        if case.find("failure") is not None or case.find("error") is not None:
            counts["failed"] += 1
        elif case.find("skipped") is not None or case.get("status") in ("notrun", "disabled") \
                or case.get("result") == "skipped":
            counts["skipped"] += 1
        else:
            counts["passed"] += 1
    return counts


def write_archive(out: Path, archive: Path) -> None:
    """Everything under `out` in one .tar.gz at `archive`, written whole (never half a file)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for path in sorted(out.rglob("*")):
            if path.is_file() and path.resolve() != archive.resolve() \
                    and not path.name.endswith(".tmp"):
                tar.add(path, arcname=str(Path(out.name) / path.relative_to(out)))
    write_atomic(archive, buffer.getvalue())


# ---- the command -------------------------------------------------------------------------------

def parse_steps(text: str) -> list[str]:
    """--steps: names from STEPS (or GROUPS), comma-separated, run in STEPS' order."""
    asked = [s.strip() for s in text.split(",") if s.strip()]
    unknown = [s for s in asked if s not in STEPS and s not in GROUPS]
    if unknown or not asked:
        raise argparse.ArgumentTypeError(f"{', '.join(unknown) or 'no step given'}: choose from "
                                         f"{','.join(STEPS)} (or {','.join(GROUPS)})")
    expanded = {t for s in asked for t in GROUPS.get(s, (s,))}
    return [s for s in STEPS if s in expanded]


def _budget(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not seconds > 2 * ARCHIVE_RESERVE_S:
        raise argparse.ArgumentTypeError(f"{text} s leaves no time for a step (at least "
                                         f"{2 * ARCHIVE_RESERVE_S + 1} s)")
    return seconds


def _define(text: str) -> str:
    if "=" not in text or text.startswith("="):
        raise argparse.ArgumentTypeError(f"-D{text}: give NAME=VALUE, as to cmake")
    return text


def _parser() -> commandline.Parser:
    p = commandline.parser(PROG, __doc__)
    p.add_argument("--steps", type=parse_steps,
                   help=f"the steps to run, comma-separated (default: all: {','.join(STEPS)}; "
                        f"sanitizer names the four tools)")
    p.add_argument("--budget", type=_budget, metavar="SECONDS",
                   help=f"the most this command may take (default {DEFAULT_BUDGET_S} in the quick "
                        "profile, none in the full); each step gets what is left at most")
    p.add_argument("--kit", type=Path, metavar="DIR",
                   help="a kit from ci/gpu-kit: its packages and, where they load and match this "
                        "source, its binaries (then nothing is built)")
    p.add_argument("--out", type=Path, default=REPO_ROOT / "results" / "gpu-check",
                   help="the folder for summary.md, doctor.json, results/, report/ and logs/")
    p.add_argument("--build-dir", type=Path, default=REPO_ROOT / "build" / "gpu-check",
                   help="the build folder (reused, with what was done in it, by the next run)")
    p.add_argument("--archive", type=Path, metavar="FILE",
                   help="pack everything under --out into this .tar.gz after every step")
    p.add_argument("--profile", choices=("full", "quick"), default="quick",
                   help="the benchmark profile (default quick; full takes hours)")
    p.add_argument("--filter", default=DEFAULT_FILTER,
                   help="run only the benchmarks this regular expression matches, as gapbench's "
                        f"--benchmark_filter (default {DEFAULT_FILTER}: every GPU variant; "
                        "families are still run one file each)")
    p.add_argument("--redo", action="store_true",
                   help="run again the steps an earlier run did for this source")
    p.add_argument("-D", dest="defines", action="append", default=[], type=_define,
                   metavar="NAME=VALUE", help="a CMake cache entry for the build (repeatable)")
    p.add_argument("--nvidia-smi", help=argparse.SUPPRESS)  # for the tests
    return p


def _use_kit(path: Path, build_dir: Path) -> Kit:
    """Unpacks the kit's packages (into the build folder) and puts them, and the Python wheels'
    cuDNN and cuBLAS, into this process's environment, which every step's command inherits."""
    kit = Kit(path.resolve(), build_dir / "kit-root")
    kit.check()
    kit.unpack()
    os.environ.update(kit.environment())
    return kit


def _run(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    reason = gpu_absent_reason(args.nvidia_smi)
    # Without a GPU only the build can run, and only when asked for by name.
    if reason and "build" not in (args.steps or ()):
        print(f"{PROG}: no GPU to check: {reason}", file=sys.stderr)
        return EXIT_NO_GPU
    steps = ["build"] if reason else args.steps or list(STEPS)
    seconds = args.budget or (DEFAULT_BUDGET_S if args.profile == "quick" else None)
    budget = Budget(seconds)
    out, build_dir = args.out.resolve(), args.build_dir.resolve()
    kit = _use_kit(args.kit, build_dir) if args.kit else None
    # A build without a GPU is another build (CMake's default architectures): its own key.
    defines = tuple(args.defines) + (("(no GPU)",) if reason else ())
    check = Check(out, build_dir, args.profile, args.filter, tuple(args.defines), budget,
                  native=not reason, kit=kit)
    done = Done.load(build_dir, source_fingerprint())
    if args.redo or not (check.binary.exists() and check.gpu_tests.exists()) or kit:
        done.forget()  # asked to, the build it remembers is gone, or the kit decides
    archive = args.archive.resolve() if args.archive else None
    summary = Summary(out / "summary.md", [
        f"- date: {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
        f"- gapbench: {tree_state(REPO_ROOT).label}",
        f"- steps: {','.join(steps)}" + (f"; budget {seconds:.0f} s" if seconds else ""),
        f"- profile: {args.profile}" + (f", filter `{args.filter}`" if args.filter != "." else ""),
        f"- build folder: {build_dir}"
        + (f", with -D{' -D'.join(args.defines)}" if args.defines else "")
        + (f"; kit {kit.path}" if kit else "")],
        budget=budget, done=done,
        after_step=(lambda: write_archive(out, archive)) if archive else (lambda: None))
    try:
        run_steps(steps, check, summary, defines)
    except BaseException:
        # Cut off inside a step (Ctrl-C, an error of this program): what it left too. Otherwise
        # the archive written after the last step is already everything.
        if archive:
            write_archive(out, archive)
        raise
    archived = f"; everything in {args.archive}" if args.archive else ""
    if reason:
        print(f"{PROG}: no GPU to check: {reason}; the build "
              f"{'passed' if summary.passed else 'FAILED'} ({summary.path}{archived})",
              file=sys.stderr)
        return EXIT_NO_GPU
    print(f"{PROG}: {'passed' if summary.passed else 'FAILED'}: {summary.path}{archived}",
          file=sys.stderr)
    return 0 if summary.passed else 1


def main(argv: list[str] | None = None) -> int:
    return commandline.run(PROG, _run, argv, command="gpu-check")


if __name__ == "__main__":
    sys.exit(main())
