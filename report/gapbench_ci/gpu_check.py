"""Check every GPU path of gapbench on the GPU in hand, in one command.

    ci/gpu-check [--out DIR] [--build-dir DIR] [--profile full|quick] [--filter REGEX]

For a Linux machine with an NVIDIA GPU, its driver and the CUDA toolkit (the system's, or the one
`bash ci/setup --cuda` puts in .venv). Steps, each timed, each with its log under DIR/logs:

  build          configures and builds everything for this GPU (CMAKE_CUDA_ARCHITECTURES=native)
                 in its own build folder (default build/gpu-check)
  doctor         `gapbench doctor --json` into DIR/doctor.json; fails unless the GPU is usable
  gpu tests      the GPU unit tests (ctest -L gpu); a skipped GPU test is a failure here
  sanitizer X    compute-sanitizer's memcheck, racecheck, synccheck and initcheck over the GPU
                 test binary; any report, or no test run, is a failure
  list           the benchmarks --filter selects, by family
  bench F        each family's GPU and CPU variants (with peak/), --profile (default full), into
                 DIR/results/F.json, then checked; a failed or skipped GPU variant is a failure
  report         the report of those results, in DIR/report

DIR (default results/gpu-check) gets summary.md: every step with passed/failed, its time and a
one-line detail, rewritten whole after each step. Exit status 0 only if every step passed, 1 if
one failed, 2 without a GPU (one line saying so, nothing built or written) or on bad arguments.
Safe to run twice: the build folder is reused, every file is replaced whole, and a failing
benchmark run leaves the previous results file in place.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from gapbench_report import commandline
from gapbench_report.commandline import ToolError
from gapbench_report.files import write_atomic, write_json_atomic
from gapbench_report.results import ResultsError, load_results

from gapbench_ci.runner import REPO_ROOT, exact_filter, tree_state

PROG = "ci/gpu-check"
SANITIZER_TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
EXIT_NO_GPU = 2


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
    """Where the CUDA tools may be, in the order CMakeLists.txt looks for nvcc."""
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

    @property
    def passed(self) -> bool:
        return bool(self.steps) and all(s.passed for s in self.steps)

    def run(self, name: str, body: Callable[[], str]) -> bool:
        """Runs one step: body() returns its detail, or raises StepFailed or ToolError."""
        print(f"{PROG}: {name} ...", file=sys.stderr, flush=True)
        start = time.monotonic()
        try:
            passed, detail = True, body()
        except (StepFailed, ToolError, ResultsError) as e:
            passed, detail = False, " ".join(str(e).split())
        step = Step(name, passed, time.monotonic() - start, detail)
        self.steps.append(step)
        print(f"{PROG}: {name}: {'passed' if passed else 'FAILED'} ({step.seconds:.0f} s) {detail}",
              file=sys.stderr, flush=True)
        write_atomic(self.path, self.markdown())
        return passed

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


# ---- the steps ---------------------------------------------------------------------------------

# The longest any one step may take: a sanitizer over every GPU test can be slow (racecheck
# most), but a step that hangs must still end with a line in the summary.
STEP_TIMEOUT_S = 3 * 3600


def run_logged_to(command: Sequence[str], log: Path, what: str, cwd: Path | None = None,
                  env: dict[str, str] | None = None) -> int:
    """Runs `command` with its output in `log`; returns the exit status."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w", encoding="utf-8") as out:
        out.write(f"$ {' '.join(command)}\n")
        out.flush()
        try:
            return subprocess.run(list(command), stdout=out, stderr=subprocess.STDOUT, cwd=cwd,
                                  env=None if env is None else {**os.environ, **env},
                                  timeout=STEP_TIMEOUT_S, check=False).returncode
        except OSError as e:
            raise StepFailed(f"{what}: cannot run {command[0]}: {e}") from None
        except subprocess.TimeoutExpired:
            raise StepFailed(f"{what}: still running after {STEP_TIMEOUT_S // 3600} h, "
                             f"stopped (logs/{log.name})") from None


def last_line(log: Path, containing: str = "") -> str:
    lines = [line.strip() for line in log.read_text(encoding="utf-8", errors="replace")
             .splitlines() if line.strip() and containing in line]
    return lines[-1] if lines else ""


@dataclass
class Check:
    out: Path
    build_dir: Path
    profile: str
    filter: str
    written: list[Path] = field(default_factory=list)  # results files this run wrote
    families_found: dict[str, list[str]] = field(default_factory=dict)

    @property
    def logs(self) -> Path:
        return self.out / "logs"

    @property
    def binary(self) -> Path:
        return self.build_dir / "gapbench"

    @property
    def gpu_tests(self) -> Path:
        return self.build_dir / "tests" / "gapbench_gpu_tests"

    def build(self) -> str:
        log = self.logs / "build.log"
        configure = ["cmake", "-S", str(REPO_ROOT), "-B", str(self.build_dir), "-G", "Ninja",
                     "-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_CUDA_ARCHITECTURES=native",
                     f"-DPython3_EXECUTABLE={sys.executable}"]
        if run_logged_to(configure, log, "configure") != 0:
            raise StepFailed(f"configuring failed: {last_line(log)} (logs/build.log)")
        build_log = self.logs / "build-compile.log"
        if run_logged_to(["cmake", "--build", str(self.build_dir)], build_log, "build") != 0:
            raise StepFailed(f"building failed: {last_line(build_log, 'error')} "
                             "(logs/build-compile.log)")
        if not self.gpu_tests.exists():
            raise StepFailed("built without CUDA: CMake found no usable nvcc (logs/build.log)")
        return f"built for this GPU in {self.build_dir}"

    def doctor(self) -> str:
        done = subprocess.run([str(self.binary), "doctor", "--json"], capture_output=True,
                              text=True, check=False)
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
                               self.logs / "gpu-tests.log", "ctest")
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
        command = [str(sanitizer), "--tool", tool, "--error-exitcode", "1"]
        if tool == "memcheck":
            command += ["--leak-check", "full"]
        status = run_logged_to([*command, str(self.gpu_tests)], log, tool)
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
        done = subprocess.run([str(self.binary), f"--profile={self.profile}",
                               f"--benchmark_filter={self.filter}", "--benchmark_list_tests=true"],
                              capture_output=True, text=True, check=False)
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
            self.logs / f"bench-{family}.log", family)
        if status not in (0, 1) or _stamp(out) == before:
            raise StepFailed(f"gapbench exited with status {status} and wrote no results "
                             f"(logs/bench-{family}.log); any earlier {out.name} is kept")
        results = load_results(out)
        self.written.append(out)
        failed = [b.name for b in results.benchmarks().values() if b.status == "failed"]
        gpu_skips = [b for b in results.benchmarks().values()
                     if b.status == "skipped" and b.parsed.device == "gpu"]
        timed = sum(b.status == "ok" for b in results.benchmarks().values())
        problems = []
        if failed:
            problems.append(f"{len(failed)} failed (first: {failed[0]})")
        if gpu_skips:
            problems.append(f"{len(gpu_skips)} GPU variants skipped (first: {gpu_skips[0].name}: "
                            f"{gpu_skips[0].skip_reason})")
        if problems or not timed:
            raise StepFailed("; ".join(problems) or "nothing was timed")
        return f"{timed} benchmarks timed and validated"

    @property
    def results(self) -> Path:
        return self.out / "results"

    def report(self) -> str:
        # This run's files only: a file kept from an earlier run (another --filter, a family
        # that failed this time) is not this run's result.
        files = [f for f in self.written if f.exists()]
        if not files:
            raise StepFailed("no results of this run to render")
        log = self.logs / "report.log"
        status = run_logged_to([sys.executable, "-m", "gapbench_report", "render",
                                *map(str, files), "--out", str(self.out / "report")], log, "render")
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


# ---- the command -------------------------------------------------------------------------------

def _parser() -> commandline.Parser:
    p = commandline.parser(PROG, __doc__)
    p.add_argument("--out", type=Path, default=REPO_ROOT / "results" / "gpu-check",
                   help="the folder for summary.md, doctor.json, results/, report/ and logs/")
    p.add_argument("--build-dir", type=Path, default=REPO_ROOT / "build" / "gpu-check",
                   help="the build folder (reused by the next run)")
    p.add_argument("--profile", choices=("full", "quick"), default="full",
                   help="the benchmark profile (quick: a first look in minutes)")
    p.add_argument("--filter", default=".",
                   help="run only the benchmarks this regular expression matches, as gapbench's "
                        "--benchmark_filter (families are still run one file each)")
    p.add_argument("--nvidia-smi", help=argparse.SUPPRESS)  # for the tests
    return p


def _run(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    reason = gpu_absent_reason(args.nvidia_smi)
    if reason:
        print(f"{PROG}: no GPU to check: {reason}", file=sys.stderr)
        return EXIT_NO_GPU
    out, build_dir = args.out.resolve(), args.build_dir.resolve()
    check = Check(out, build_dir, args.profile, args.filter)
    state = tree_state(REPO_ROOT)
    summary = Summary(out / "summary.md", [
        f"- date: {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
        f"- gapbench: {state.label()}",
        f"- profile: {args.profile}" + (f", filter `{args.filter}`" if args.filter != "." else ""),
        f"- build folder: {build_dir}"])
    if not summary.run("build", check.build):
        return 1
    summary.run("doctor", check.doctor)
    summary.run("gpu tests", check.unit_tests)
    for tool in SANITIZER_TOOLS:
        summary.run(f"sanitizer {tool}", lambda tool=tool: check.sanitizer(tool))
    summary.run("list benchmarks", check.list_benchmarks)
    for family, names in check.families_found.items():
        summary.run(f"bench {family}", lambda f=family, n=names: check.bench(f, n))
    summary.run("report", check.report)
    print(f"{PROG}: {'passed' if summary.passed else 'FAILED'}: {summary.path}", file=sys.stderr)
    return 0 if summary.passed else 1


def main(argv: list[str] | None = None) -> int:
    return commandline.run(PROG, _run, argv, command="gpu-check")


if __name__ == "__main__":
    sys.exit(main())
