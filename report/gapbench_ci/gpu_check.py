"""Check every GPU path of gapbench on the GPU in hand, in steps that fit the calls of a lent GPU.

    ci/gpu-check [--steps LIST] [--budget SECONDS] [--profile quick|full] [--filter REGEX]
                 [--out DIR] [--build-dir DIR] [--archive FILE] [--redo] [-D NAME=VALUE ...]

Exit status: 0 only if every step asked for passed (now or earlier), 1 if one failed or did not
run, 2 without a GPU or on bad arguments. The steps, their limits and what it writes:
docs/gpu-check.md.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from gapbench_report import commandline
from gapbench_report.commandline import ToolError
from gapbench_report.files import write_atomic, write_json_atomic
from gapbench_report.results import Results, ResultsError, load_results

from gapbench_ci.runner import REPO_ROOT, exact_filter, tree_state

PROG = "ci/gpu-check"
STEPS = ("build", "doctor", "tests", "sanitizer", "bench", "probe", "report")
SANITIZER_TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
EXIT_NO_GPU = 2

# compute-sanitizer reports a failed CUDA API call as an error. This test asks cudaMalloc for
# 2^60 bytes on purpose and checks the failure: left out of the sanitizer runs (rather than
# --report-api-errors no, which would hide every other failed call as well).
SANITIZER_EXCLUDED_TESTS = ("GpuMemory.AllocationFailureThrowsCudaError",)
# Every gapbench kernel is in namespace gapbench; NVIDIA's libraries' are not (racecheck and
# synccheck take long over cuDNN's algorithm search, and initcheck flags library internals).
# kns matches a substring of the kernel's name: "gapbench" is in the mangled name
# (_ZN8gapbench...) as in the demangled one (gapbench::...), whichever the tool compares.
OWN_KERNELS = "kns=gapbench"

# Each step's own time limit in seconds: every one fits a 10-minute call beside the build
# folder's reuse, with ARCHIVE_RESERVE_S left to write the summary and the archive.
STEP_LIMIT_S = {"build": 480, "doctor": 60, "tests": 300, "memcheck": 300, "racecheck": 150,
                "synccheck": 120, "initcheck": 150, "list": 60, "bench": 420, "probe": 300,
                "report": 180}
# A family's full profile takes far longer (hours in all): never on a lent machine.
FULL_BENCH_LIMIT_S = 4 * 3600
ARCHIVE_RESERVE_S = 15
# Less than this left of the budget: a step is not started.
MIN_STEP_S = 10
# What a run of the same source has done is remembered here, in the build folder.
DONE_FILE = "gpu-check-done.json"
# The source files whose content says "the same source" (no git needed: a copy of the tree).
SOURCE_PARTS = ("CMakeLists.txt", "CMakePresets.json", "cmake", "bench", "fixtures", "kernels",
                "tests", "probe/gapbench_probe", "report/gapbench_report", "report/gapbench_ci")


class StepFailed(Exception):
    """A step ran and did not pass: str() is the one-line detail for the summary."""


# ---- finding the GPU and the tools -------------------------------------------------------------

def gpu_absent_reason(nvidia_smi: str | None = None) -> str | None:
    """Why this machine has no NVIDIA GPU to check, or None when nvidia-smi lists one."""
    smi = nvidia_smi or shutil.which("nvidia-smi")
    if not smi:
        return "no NVIDIA driver here (nvidia-smi not found)"
    try:
        done = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"nvidia-smi did not answer ({e})"
    gpus = [line for line in done.stdout.splitlines() if line.startswith("GPU ")]
    if done.returncode != 0 or not gpus:
        last = (done.stderr.strip() or done.stdout.strip()).splitlines()
        return f"nvidia-smi lists no GPU ({last[-1] if last else f'exit status {done.returncode}'})"
    return None


def cuda_bin_dirs() -> list[Path]:
    """Where the CUDA tools may be, in the order cmake/gapbench_cuda.cmake looks for nvcc."""
    dirs = []
    if os.environ.get("CUDACXX"):
        dirs.append(Path(os.environ["CUDACXX"]).parent)
    nvcc = shutil.which("nvcc")
    if nvcc:
        dirs.append(Path(nvcc).resolve().parent)
    dirs += [Path("/usr/local/cuda/bin"), REPO_ROOT / ".venv" / "cuda" / "bin"]
    return dirs


def find_cuda_tool(name: str) -> Path | None:
    on_path = shutil.which(name)
    if on_path:
        return Path(on_path)
    for d in cuda_bin_dirs():
        for candidate in (d / name, d.parent / name / name):  # compute-sanitizer/compute-sanitizer
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return candidate
    return None


def sanitizer_command(sanitizer: Path | str, tool: str, gpu_tests: Path | str) -> list[str]:
    """compute-sanitizer's command for one tool over the GPU test binary. Launches forced
    blocking: without it the stream hold would run instrumented, and instrumenting a kernel at
    its first launch can outlast the hold's time-out; with it the timer's probe sees blocking
    launches and times unheld."""
    command = [str(sanitizer), "--tool", tool, "--error-exitcode", "1",
               "--force-blocking-launches"]
    if tool == "memcheck":
        command += ["--leak-check", "full"]  # over everything: a wrong size handed to a library
    else:
        command += ["--kernel-name", OWN_KERNELS]
    return [*command, str(gpu_tests), "--gtest_filter=-" + ":".join(SANITIZER_EXCLUDED_TESTS)]


# ---- time: the budget and each step's limit ----------------------------------------------------

@dataclass
class Budget:
    """The whole command's time (None: unbounded), from its start."""

    seconds: float | None
    start: float = field(default_factory=time.monotonic)

    def left(self) -> float | None:
        return None if self.seconds is None else self.seconds - (time.monotonic() - self.start)

    def spent(self) -> bool:
        left = self.left()
        return left is not None and left - ARCHIVE_RESERVE_S < MIN_STEP_S

    def limit(self, own: float) -> tuple[float, str]:
        """A step's time limit: its own, or what is left of the budget if less; and which."""
        left = self.left()
        if left is not None and left - ARCHIVE_RESERVE_S < own:
            return max(1.0, left - ARCHIVE_RESERVE_S), "what was left of --budget"
        return own, "its limit"


# ---- what earlier runs did ---------------------------------------------------------------------

def source_fingerprint(root: Path = REPO_ROOT) -> str:
    """A hash of the source's files (their paths and contents): the same source, whether or not
    this is a git checkout."""
    digest = hashlib.sha256()
    for part in SOURCE_PARTS:
        top = root / part
        files = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file())
        for path in files:
            if "__pycache__" in path.parts or path.suffix == ".pyc":
                continue
            digest.update(str(path.relative_to(root)).encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


@dataclass
class Done:
    """The steps that passed for one source in one build folder (DONE_FILE there), by key (the
    step's name and the options it ran with)."""

    path: Path
    source: str
    steps: dict[str, dict] = field(default_factory=dict)

    @classmethod
    def load(cls, build_dir: Path, source: str) -> Done:
        path = build_dir / DONE_FILE
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return cls(path, source)
        if not isinstance(data, dict) or data.get("source") != source \
                or not isinstance(data.get("steps"), dict):
            return cls(path, source)  # another source: nothing of it counts
        return cls(path, source, data["steps"])

    def record(self, key: str, step: Step, written: Iterable[Path] = ()) -> None:
        self.steps[key] = {"detail": step.detail, "seconds": round(step.seconds, 1),
                           "at": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                           "written": [str(p) for p in written]}
        write_json_atomic(self.path, {"source": self.source, "steps": self.steps})

    def forget(self) -> None:
        self.steps = {}
        self.path.unlink(missing_ok=True)


# ---- the summary -------------------------------------------------------------------------------

@dataclass
class Step:
    name: str
    passed: bool
    seconds: float
    detail: str


@dataclass
class Summary:
    """The steps so far; summary.md is rewritten whole after each one."""

    path: Path
    header: list[str]
    steps: list[Step] = field(default_factory=list)
    budget: Budget = field(default_factory=lambda: Budget(None))
    done: Done | None = None

    @property
    def passed(self) -> bool:
        return bool(self.steps) and all(s.passed for s in self.steps)

    def run(self, name: str, body: Callable[[], str], key: str | None = None,
            written: Callable[[], Iterable[Path]] = tuple) -> bool:
        """Runs one step: body() returns its detail, or raises StepFailed or ToolError. With a
        `key`, a step the record says passed is not run again, and one that passes is recorded
        (with the files `written()` names)."""
        earlier = self.done.steps.get(key) if self.done is not None and key else None
        if earlier is not None:
            return self._add(Step(name, True, 0.0, f"done earlier ({earlier.get('at', '?')}): "
                                                   f"{earlier.get('detail', '')}"))
        if self.budget.spent():
            return self._add(Step(name, False, 0.0,
                                  f"not run: the budget of {self.budget.seconds:.0f} s is spent"))
        print(f"{PROG}: {name} ...", file=sys.stderr, flush=True)
        start = time.monotonic()
        try:
            passed, detail = True, body()
        except (StepFailed, ToolError, ResultsError) as e:
            passed, detail = False, " ".join(str(e).split())
        step = Step(name, passed, time.monotonic() - start, detail)
        if passed and self.done is not None and key:
            self.done.record(key, step, written())
        return self._add(step)

    def _add(self, step: Step) -> bool:
        self.steps.append(step)
        print(f"{PROG}: {step.name}: {'passed' if step.passed else 'FAILED'} "
              f"({step.seconds:.0f} s) {step.detail}", file=sys.stderr, flush=True)
        write_atomic(self.path, self.markdown())
        return step.passed

    def markdown(self) -> str:
        failed = sum(not s.passed for s in self.steps)
        verdict = "every step passed" if self.passed else f"{failed} of {len(self.steps)} failed"
        lines = ["# gapbench GPU check", "", *self.header, "", f"**Result: {verdict}.**", "",
                 "| step | result | time | detail |", "|---|---|---|---|"]
        for s in self.steps:
            detail = s.detail.replace("|", "\\|")
            lines.append(f"| {s.name} | {'passed' if s.passed else '**FAILED**'} | "
                         f"{_duration(s.seconds)} | {detail} |")
        return "\n".join(lines) + "\n"


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    return f"{int(seconds // 60)} min {seconds % 60:02.0f} s"


# ---- running a step's command ------------------------------------------------------------------

def run_logged_to(command: Sequence[str], log: Path, what: str, limit: tuple[float, str],
                  cwd: Path | None = None, env: dict[str, str] | None = None) -> int:
    """Runs `command` with its output in `log`; returns the exit status. Past `limit` (seconds,
    and what set them) the command and everything it started are stopped, and StepFailed says
    so."""
    seconds, why = limit
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w", encoding="utf-8") as out:
        out.write(f"$ {' '.join(command)}\n")
        out.flush()
        try:
            # Its own process group: a test binary under compute-sanitizer, ctest's tests, all
            # stop with it.
            process = subprocess.Popen(list(command), stdout=out, stderr=subprocess.STDOUT,
                                       cwd=cwd, env=None if env is None else {**os.environ, **env},
                                       start_new_session=True)
        except OSError as e:
            raise StepFailed(f"{what}: cannot run {command[0]}: {e}") from None
        try:
            return process.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            _stop(process)
            out.write(f"\n{PROG}: stopped after {seconds:.0f} s ({why})\n")
            raise StepFailed(f"{what}: still running after {seconds:.0f} s ({why}), stopped "
                             f"(logs/{log.name})") from None


def _stop(process: subprocess.Popen) -> None:
    """Ends `process` and its group: politely, then for good."""
    for sig, grace in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


def last_line(log: Path, containing: str = "") -> str:
    lines = [line.strip() for line in log.read_text(encoding="utf-8", errors="replace")
             .splitlines() if line.strip() and containing in line]
    return lines[-1] if lines else ""


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
    written: list[Path] = field(default_factory=list)  # results files of bench and probe
    families_found: dict[str, list[str]] = field(default_factory=dict)

    @property
    def logs(self) -> Path:
        return self.out / "logs"

    @property
    def results(self) -> Path:
        return self.out / "results"

    @property
    def binary(self) -> Path:
        return self.build_dir / "gapbench"

    @property
    def gpu_tests(self) -> Path:
        return self.build_dir / "tests" / "gapbench_gpu_tests"

    def limit(self, kind: str) -> tuple[float, str]:
        own = STEP_LIMIT_S[kind]
        if kind == "bench" and self.profile == "full":
            own = FULL_BENCH_LIMIT_S
        return self.budget.limit(own)

    def configure_command(self) -> list[str]:
        native = ["-DCMAKE_CUDA_ARCHITECTURES=native"] if self.native else []
        return ["cmake", "-S", str(REPO_ROOT), "-B", str(self.build_dir), "-G", "Ninja",
                "-DCMAKE_BUILD_TYPE=Release", *native,
                f"-DPython3_EXECUTABLE={sys.executable}", "-DGAPBENCH_REQUIRE_GPU_LIBRARIES=ON",
                *(f"-D{d}" for d in self.cmake_defines)]

    def build(self) -> str:
        log = self.logs / "build.log"
        if run_logged_to(self.configure_command(), log, "configure", self.limit("build")) != 0:
            missing = last_line(log, "GAPBENCH_REQUIRE_GPU_LIBRARIES")
            raise StepFailed(f"configuring failed: {missing or last_line(log)} (logs/build.log)")
        build_log = self.logs / "build-compile.log"
        if run_logged_to(["cmake", "--build", str(self.build_dir)], build_log, "build",
                         self.limit("build")) != 0:
            raise StepFailed(f"building failed: {last_line(build_log, 'error')} "
                             "(logs/build-compile.log)")
        if not self.gpu_tests.exists():
            raise StepFailed("built without CUDA: CMake found no usable nvcc (logs/build.log)")
        cudnn = last_line(log, "-- cuDNN: ").removeprefix("-- ")
        target = ("for this GPU" if self.native
                  else "without a GPU in hand (for CMake's default architectures, or -D's)")
        return f"built {target} in {self.build_dir}; {cudnn}"

    def doctor(self) -> str:
        seconds, why = self.limit("doctor")
        try:
            done = subprocess.run([str(self.binary), "doctor", "--json"], capture_output=True,
                                  text=True, timeout=seconds, check=False)
        except subprocess.TimeoutExpired:
            raise StepFailed(f"doctor still running after {seconds:.0f} s ({why})") from None
        except OSError as e:
            raise StepFailed(f"cannot run {self.binary}: {e}") from None
        try:
            data = json.loads(done.stdout)
            facts = data["facts"]
        except (json.JSONDecodeError, KeyError, TypeError):
            raise StepFailed(
                f"doctor --json gave no JSON (exit status {done.returncode})") from None
        write_json_atomic(self.out / "doctor.json", data)
        status = facts.get("gpu.status", "missing")
        if done.returncode != 0 or status != "ok":
            raise StepFailed(f"gpu.status: {status}")
        return (f"{facts.get('gpu.name', 'GPU')} (compute capability "
                f"{facts.get('gpu.compute_capability', '?')}); driver "
                f"{facts.get('cuda.driver_version')}, "
                f"runtime {facts.get('cuda.runtime_version')}, cuDNN "
                f"{facts.get('cudnn.version_loaded', 'none')}")

    def unit_tests(self) -> str:
        junit = self.logs / "gpu-tests.xml"
        junit.unlink(missing_ok=True)  # an earlier run's counts must not stand in for this one's
        status = run_logged_to(["ctest", "--test-dir", str(self.build_dir), "-L", "gpu",
                                "--output-on-failure", "--output-junit", str(junit.resolve())],
                               self.logs / "gpu-tests.log", "ctest", self.limit("tests"))
        counts = junit_counts(junit) if junit.exists() else None
        if counts is None:
            raise StepFailed(f"ctest wrote no results (exit status {status}; logs/gpu-tests.log)")
        text = f"{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped"
        if status != 0 or counts["failed"] or counts["skipped"] or not counts["passed"]:
            raise StepFailed(f"{text} (logs/gpu-tests.log)")
        return text

    def sanitizer(self, tool: str) -> str:
        sanitizer = find_cuda_tool("compute-sanitizer")
        if sanitizer is None:
            raise StepFailed("compute-sanitizer not found (it comes with the CUDA toolkit)")
        log = self.logs / f"sanitizer-{tool}.log"
        status = run_logged_to(sanitizer_command(sanitizer, tool, self.gpu_tests), log, tool,
                               self.limit(tool))
        verdict = last_line(log, "ERROR SUMMARY") or f"exit status {status}"
        if status != 0:
            raise StepFailed(f"{verdict} (logs/{log.name})")
        ran = last_line(log, "[  PASSED  ]")
        if not ran:  # exit 0 with no test run (a test binary that only printed its help) is no pass
            raise StepFailed(f"no test ran under {tool} (logs/{log.name})")
        return f"{verdict}; {ran}"

    def families(self) -> dict[str, list[str]]:
        """Each family's benchmarks that --filter selects, with peak's beside each (as
        `ctest -L bench` runs them: each file carries the machine's ceilings)."""
        seconds, _ = self.limit("list")
        try:
            done = subprocess.run([str(self.binary), f"--profile={self.profile}",
                                   f"--benchmark_filter={self.filter}",
                                   "--benchmark_list_tests=true"],
                                  capture_output=True, text=True, timeout=seconds, check=False)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise StepFailed(f"{self.binary} could not list its benchmarks: {e}") from None
        if done.returncode != 0:
            raise StepFailed(f"{self.binary} could not list its benchmarks: "
                             f"{done.stderr.strip()}")
        by_family: dict[str, list[str]] = {}
        for name in done.stdout.split():
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

    def bench(self, family: str, names: list[str]) -> str:
        out = self.results / f"{family}.json"
        self.results.mkdir(parents=True, exist_ok=True)
        before = _stamp(out)
        status = run_logged_to(
            [str(self.binary), f"--profile={self.profile}",
             f"--benchmark_filter={exact_filter(names)}", f"--benchmark_out={out}"],
            self.logs / f"bench-{family}.log", family, self.limit("bench"))
        if status not in (0, 1) or _stamp(out) == before:
            raise StepFailed(f"gapbench exited with status {status} and wrote no results "
                             f"(logs/bench-{family}.log); any earlier {out.name} is kept")
        self.written.append(out)
        return gpu_verdict(load_results(out), "variants")

    def probe(self) -> str:
        """PyTorch on this GPU through gapbench-probe, with the Python running this check."""
        out = self.results / "framework-torch.json"
        before = _stamp(out)
        path = os.pathsep.join(filter(None, [str(REPO_ROOT / "probe"),
                                             os.environ.get("PYTHONPATH")]))
        status = run_logged_to(
            [sys.executable, "-m", "gapbench_probe", "--framework", "torch", "--device", "gpu",
             "--profile", self.profile, "--out", str(self.results), "--gapbench",
             str(self.binary)],
            self.logs / "probe.log", "gapbench-probe", self.limit("probe"),
            env={"PYTHONPATH": path, "PYTHONUNBUFFERED": "1"})
        if status not in (0, 1) or _stamp(out) == before:
            raise StepFailed(f"gapbench-probe exited with status {status} and wrote no results "
                             f"(logs/probe.log): {last_line(self.logs / 'probe.log')}")
        self.written.append(out)
        return gpu_verdict(load_results(out), "benchmarks")

    def report(self) -> str:
        # This run's files only (or an earlier call's for the same source and options): a file
        # kept from another run (another --filter, a family that failed) is not this run's.
        files = list(dict.fromkeys(f for f in self.written if f.exists()))
        if not files:
            raise StepFailed("no results of this run to render")
        log = self.logs / "report.log"
        status = run_logged_to([sys.executable, "-m", "gapbench_report", "render",
                                *map(str, files), "--out", str(self.out / "report")], log,
                               "render", self.limit("report"))
        if status != 0:
            raise StepFailed(f"render failed: {last_line(log)} (logs/report.log)")
        return f"{self.out / 'report' / 'index.html'}"


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return st.st_ino, st.st_mtime_ns


def junit_counts(path: Path) -> dict[str, int] | None:
    """passed, failed and skipped test cases in ctest's JUnit file, or None if unreadable."""
    try:
        cases = ElementTree.parse(path).getroot().iter("testcase")
    except (ElementTree.ParseError, OSError):
        return None
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    for case in cases:
        if case.find("failure") is not None or case.find("error") is not None:
            counts["failed"] += 1
        elif case.find("skipped") is not None or case.get("status") in ("notrun", "disabled"):
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
    """--steps: names from STEPS, comma-separated, in STEPS' order."""
    asked = [s.strip() for s in text.split(",") if s.strip()]
    unknown = [s for s in asked if s not in STEPS]
    if unknown or not asked:
        raise argparse.ArgumentTypeError(f"{', '.join(unknown) or 'no step given'}: choose from "
                                         f"{','.join(STEPS)}")
    return [s for s in STEPS if s in asked]


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
                   help=f"the steps to run, comma-separated (default: all: {','.join(STEPS)})")
    p.add_argument("--budget", type=_budget, metavar="SECONDS",
                   help="the most this command may take; each step respects what is left")
    p.add_argument("--out", type=Path, default=REPO_ROOT / "results" / "gpu-check",
                   help="the folder for summary.md, doctor.json, results/, report/ and logs/")
    p.add_argument("--build-dir", type=Path, default=REPO_ROOT / "build" / "gpu-check",
                   help="the build folder (reused, with what was done in it, by the next run)")
    p.add_argument("--archive", type=Path, metavar="FILE",
                   help="write everything under --out into this .tar.gz at the end")
    p.add_argument("--profile", choices=("full", "quick"), default="quick",
                   help="the benchmark profile (default quick; full takes hours)")
    p.add_argument("--filter", default=".",
                   help="run only the benchmarks this regular expression matches, as gapbench's "
                        "--benchmark_filter (families are still run one file each)")
    p.add_argument("--redo", action="store_true",
                   help="run again the steps an earlier run did for this source")
    p.add_argument("-D", dest="defines", action="append", default=[], type=_define,
                   metavar="NAME=VALUE", help="a CMake cache entry for the build (repeatable)")
    p.add_argument("--nvidia-smi", help=argparse.SUPPRESS)  # for the tests
    return p


def _run(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    reason = gpu_absent_reason(args.nvidia_smi)
    # Without a GPU only the build can run, and only when asked for by name.
    if reason and "build" not in (args.steps or ()):
        print(f"{PROG}: no GPU to check: {reason}", file=sys.stderr)
        return EXIT_NO_GPU
    steps = ["build"] if reason else args.steps or list(STEPS)
    budget = Budget(args.budget)
    out, build_dir = args.out.resolve(), args.build_dir.resolve()
    # A build without a GPU is another build (CMake's default architectures): its own key.
    defines = tuple(args.defines) + (("(no GPU)",) if reason else ())
    check = Check(out, build_dir, args.profile, args.filter, tuple(args.defines), budget,
                  native=not reason)
    done = Done.load(build_dir, source_fingerprint())
    if args.redo or not (check.binary.exists() and check.gpu_tests.exists()):
        done.forget()  # asked to, or the build it remembers is gone
    summary = Summary(out / "summary.md", [
        f"- date: {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
        f"- gapbench: {tree_state(REPO_ROOT).label}",
        f"- steps: {','.join(steps)}"
        + (f"; budget {args.budget:.0f} s" if args.budget else ""),
        f"- profile: {args.profile}" + (f", filter `{args.filter}`" if args.filter != "." else ""),
        f"- build folder: {build_dir}"
        + (f", with -D{' -D'.join(args.defines)}" if args.defines else "")],
        budget=budget, done=done)
    try:
        run_steps(steps, check, summary, defines)
    finally:
        if args.archive:
            write_archive(out, args.archive.resolve())
    archived = f"; everything in {args.archive}" if args.archive else ""
    if reason:
        print(f"{PROG}: no GPU to check: {reason}; the build "
              f"{'passed' if summary.passed else 'FAILED'} ({summary.path}{archived})",
              file=sys.stderr)
        return EXIT_NO_GPU
    print(f"{PROG}: {'passed' if summary.passed else 'FAILED'}: {summary.path}{archived}",
          file=sys.stderr)
    return 0 if summary.passed else 1


def run_steps(steps: Sequence[str], check: Check, summary: Summary,
              defines: Sequence[str] = ()) -> None:
    """The steps asked for, the build first wherever another step needs it."""
    built = f"build {' '.join(defines)}".strip()  # each step's key starts with its build's
    results_key = f"{built} | {check.profile} | {check.filter}"
    if not summary.run("build", check.build, key=built):
        return
    if "doctor" in steps:
        summary.run("doctor", check.doctor, key=f"{built} | doctor")
    if "tests" in steps:
        summary.run("gpu tests", check.unit_tests, key=f"{built} | tests")
    if "sanitizer" in steps:
        for tool in SANITIZER_TOOLS:
            summary.run(f"sanitizer {tool}", lambda tool=tool: check.sanitizer(tool),
                        key=f"{built} | sanitizer {tool}")
    earlier = summary.done.steps if summary.done is not None else {}
    if "bench" in steps and summary.run("list benchmarks", check.list_benchmarks):
        for family, names in check.families_found.items():
            key = f"{results_key} | bench {family}"
            summary.run(f"bench {family}", lambda f=family, n=names: check.bench(f, n), key=key,
                        written=lambda f=family: [check.results / f"{f}.json"])
    if "probe" in steps:
        summary.run("probe torch", check.probe, key=f"{results_key} | probe",
                    written=lambda: [check.results / "framework-torch.json"])
    if "report" in steps:
        # What bench and probe wrote for this source and these options, now or in an earlier
        # call within the machine's warm window.
        for key, step in earlier.items():
            if key.startswith(f"{results_key} | bench ") or key == f"{results_key} | probe":
                check.written += [Path(p) for p in step.get("written", [])]
        summary.run("report", check.report)


def main(argv: list[str] | None = None) -> int:
    return commandline.run(PROG, _run, argv, command="gpu-check")


if __name__ == "__main__":
    sys.exit(main())
