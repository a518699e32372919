"""Every outside command gapbench_ci runs: cmake, the gapbench executable and its GPU test binary,
compute-sanitizer, nvidia-smi, Slurm's sbatch, squeue, scontrol and sinfo, git, dpkg-deb and
apt-get. Each runs through run(): with a time limit, never outliving this process (what it
started stops with it, at its limit, on Ctrl-C or SIGTERM: processes.py), its output captured
(bounded), written to a log or shown on stderr, and a failure as one line, CommandFailed, that
names the command and carries its last line of output. What is asked of gapbench and CMake in
more than one place is here once: configuring and building, listing the benchmarks, doctor's
facts.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from gapbench_report.cli.kit import ToolError, UsageError

from gapbench_ci import processes

# Time limits in seconds of the commands whose callers give none: each is a guard against a
# hang, far above what the command takes.
CONFIGURE_S = 900  # CMake's configure, CUDA's detection included
BUILD_S = 4 * 3600  # gapbench with every default CUDA architecture, on 2 cores
RUN_S = 12 * 3600  # one gapbench run: a baseline's full profile of every family takes hours
QUERY_S = 120  # gapbench --benchmark_list_tests, doctor --json, --help
GIT_S = 300

INSTALL = "bash ci/setup installs it"
TIMEOUT_VARIABLE = "GAPBENCH_SLURM_TIMEOUT"
DEFAULT_SLURM_TIMEOUT = 60.0  # Slurm's commands retry an unreachable slurmctld about this long
LONGEST_SLURM_TIMEOUT = 3600.0
SLURM_MISSING = ("Slurm's commands are not installed here (Debian and Ubuntu: apt-get install "
                 "slurm-client)")
SLURM_STUCK = "is slurmctld up? (scontrol ping says)"
# Where MUNGE's and Slurm's daemons live: off a user's PATH.
SBIN = ("/usr/sbin", "/sbin", "/usr/local/sbin")
# The build's target line: the executable, and with the GPU tests for a GPU check or the kit.
GAPBENCH = ("gapbench",)
GAPBENCH_AND_GPU_TESTS = ("gapbench", "gapbench_gpu_tests")


class CommandFailed(ToolError):
    """A command that could not start, ended with a status its caller does not accept, or was
    stopped at its time limit: str() is one line naming it. `status` is its exit status (None
    when it did not end on its own), `last` its last line of output."""

    def __init__(self, message: str, command: Sequence[str], status: int | None = None,
                 last: str = ""):
        super().__init__(message)
        self.command = list(command)
        self.status = status
        self.last = last


class TimedOut(CommandFailed):
    """Stopped at its time limit, with everything it started."""


@dataclass(frozen=True)
class Done:
    command: list[str]
    status: int
    out: str  # stdout, where it was captured ("" where it went to a log or to stderr)
    err: str  # stderr, where it was captured
    last: str  # the last line of its error output (of its log; "" where it went to stderr)


def last_line(text: str, containing: str = "") -> str:
    """The last non-empty line of `text` (that holds `containing`), on one line."""
    return next((" ".join(x.split()) for x in reversed(text.splitlines())
                 if x.strip() and containing in x), "")


def last_log_line(log: Path, containing: str = "") -> str:
    """last_line of a log file: of its last 64 KiB (a build's log can be long)."""
    with contextlib.suppress(OSError), log.open("rb") as f:
        f.seek(max(0, f.seek(0, os.SEEK_END) - 65536))
        return last_line(f.read().decode(errors="replace"), containing)
    return ""


def shown(log: Path) -> str:
    """A log's path as a summary names it: from its logs/ folder on."""
    parts = log.parts
    return "/".join(parts[parts.index("logs"):]) if "logs" in parts else log.name


_STDOUT = {"capture": subprocess.PIPE, "discard": subprocess.DEVNULL, "show": 2}


def run(command: Sequence[object], what: str | None = None,
        limit: float | tuple[float, str] = QUERY_S, *, ok: Iterable[int] | None = (0,),
        log: Path | None = None, echo: bool = False, stdout: str = "capture",
        cwd: Path | None = None, env: Mapping[str, str] | None = None,
        input: str | None = None, missing: str = INSTALL, stuck: str | None = None) -> Done:
    """Runs `command` within `limit` seconds (or (seconds, what set them)) and returns what it
    did. Its output is captured, or written to `log` (stdout and stderr together, after a line
    naming the command), or, with `echo`, shown on stderr as the job's log after a "+ command"
    line (a failure then points at it); else its stdout can also be "discard"ed or "show"n on
    stderr, its stderr captured all the same. `env` is added to this process's environment.
    Captured stdout is kept up to processes.OUT_LIMIT (more is a runaway: stopped, a failure),
    captured stderr to its last processes.TAIL_BYTES. The command never outlives this process
    (processes.py says how), and what it leaves running when it ends is stopped and named.

    CommandFailed, one line in which `what` names the command (by default the command itself):
    when it cannot start (the program, its interpreter or the working folder is missing;
    `missing` says how to install a program not found); when its exit status is not in `ok`
    ("<what> exited with status N: <its last line>"; ok=None returns any status); or, as
    TimedOut, at its limit: then it is stopped with every process it started, and the line says
    "<what>: still running after N s (why), stopped", or, for a query that should answer at
    once, "<name> did not answer in N s; <stuck>"."""
    argv = [str(c) for c in command]
    what = what or shlex.join(argv)
    seconds, why = limit if isinstance(limit, tuple) else (float(limit), "its limit")
    if echo:
        print(f"+ {shlex.join(argv)}", file=sys.stderr, flush=True)
    sink = None
    if log is not None:
        log.parent.mkdir(parents=True, exist_ok=True)
        sink = log.open("w", encoding="utf-8")
        sink.write(f"$ {' '.join(argv)}\n")
        sink.flush()
    try:
        with processes.ending_signals_raise():
            try:
                # Shown output goes to this process's stderr (descriptor 2) as it comes.
                process, reader = processes.start(
                    argv, None if input is None else input.encode(),
                    stdin=subprocess.DEVNULL if input is None else subprocess.PIPE,
                    stdout=sink or (2 if echo else _STDOUT[stdout]),
                    stderr=subprocess.STDOUT if sink else 2 if echo else subprocess.PIPE,
                    cwd=cwd, env=None if env is None else {**os.environ, **env})
            except OSError as e:
                raise CommandFailed(not_started(argv, what, cwd, missing, e), argv) from None
            try:
                ended = processes.wait(process, reader, time.monotonic() + seconds)
            except processes.TooMuchOutput:
                processes.end_everything(process, reader)
                raise CommandFailed(f"{what} printed more than {processes.OUT_LIMIT >> 20} MiB, "
                                    "more than any answer it gives: stopped", argv) from None
            except BaseException:  # Ctrl-C, SIGTERM, SIGHUP, an error: the command goes too
                processes.end_everything(process, reader)
                raise
            if not ended:
                processes.end_everything(process, reader)
                if sink is not None:
                    sink.write(f"\ngapbench-ci: stopped after {seconds:.0f} s ({why})\n")
                if stuck is not None:
                    message = (f"{os.path.basename(argv[0])} did not answer in {seconds:g} s; "
                               f"{stuck}")
                else:
                    message = (f"{what}: still running after {seconds:.0f} s ({why}), stopped"
                               + (f" ({shown(log)})" if log is not None else ""))
                raise TimedOut(message, argv)
            processes.after_end(process, reader, what)
    finally:
        if sink is not None:
            sink.close()
    out, err = reader.text()
    last = last_log_line(log) if log is not None else last_line(err)
    done = Done(argv, process.returncode, out, err, last)
    if ok is not None and done.status not in tuple(ok):
        if echo:  # the job's log shows its output
            message = f"{what} failed (exit status {done.status}; its output is above)"
        else:
            message = (f"{what} exited with status {done.status}" + (f": {last}" if last else "")
                       + (f" ({shown(log)})" if log is not None else ""))
        raise CommandFailed(message, argv, done.status, last)
    return done


def not_started(argv: list[str], what: str, cwd: Path | None, missing: str,
                error: OSError) -> str:
    """Why the command could not start, naming what is missing: the working folder, the
    program (not on PATH, or no file at its path), or the interpreter of its #! line."""
    program = argv[0]
    if cwd is not None and not os.path.isdir(cwd):
        return f"{what}: cannot run in {cwd}: no such folder"
    if not isinstance(error, FileNotFoundError):
        return f"{what}: cannot run {program}: {error.strerror or error}"
    if os.sep not in program:
        found = shutil.which(program, path=os.environ.get("PATH", os.defpath))
        if found is None:
            return f"{program} not found: {missing}"
        program = found
    elif not os.path.lexists(program):
        return (f"{program} not found: no such file"
                + (f"; {missing}" if missing != INSTALL else ""))
    interpreter = script_interpreter(Path(program))
    if interpreter:
        return (f"{what}: cannot run {program}: its interpreter {interpreter} (its #! line) is "
                "not there")
    return (f"{what}: cannot run {program}: a file it needs to start (its dynamic loader or a "
            "broken link) is not there")


def script_interpreter(path: Path) -> str | None:
    """The program a script's #! line names, None for a file that has no such line."""
    with contextlib.suppress(OSError), path.open("rb") as f:
        head = f.read(256)
        if head.startswith(b"#!"):
            words = head[2:].split(b"\n", 1)[0].split()
            return os.fsdecode(words[0]) if words else None
    return None


# ---- CMake -------------------------------------------------------------------------------------

def configure(source: Path, build_dir: Path | None = None, *, preset: str | None = None,
              python: str | None = sys.executable, cuda_architectures: str | None = None,
              require_gpu_libraries: bool = False, extra: Sequence[str] = (),
              limit: float | tuple[float, str] = CONFIGURE_S, **how) -> Done:
    """CMake's configure of `source`: a preset (`cmake --preset NAME`, run in `source`), or
    into `build_dir`, Release with Ninja as the presets are. `python`: the Python CMake's tests
    and its search for cuDNN in a Python's nvidia.cudnn package use (None: CMake's own choice,
    this checkout's .venv first). `extra` goes last, so that it overrides. `how`: run()'s."""
    if preset is not None:
        command = ["cmake", "--preset", preset, *extra]
        how.setdefault("cwd", source)
    else:
        command = ["cmake", "-S", str(source), "-B", str(build_dir), "-G", "Ninja",
                   "-DCMAKE_BUILD_TYPE=Release"]
        if cuda_architectures:
            command.append(f"-DCMAKE_CUDA_ARCHITECTURES={cuda_architectures}")
        if python:
            command.append(f"-DPython3_EXECUTABLE={python}")
        if require_gpu_libraries:
            command.append("-DGAPBENCH_REQUIRE_GPU_LIBRARIES=ON")
        command += list(extra)
    return run(command, how.pop("what", f"configuring {source}"), limit, **how)


def build(build_dir: Path | None = None, targets: Sequence[str] = GAPBENCH, *,
          preset: str | None = None, jobs: int | None = None,
          limit: float | tuple[float, str] = BUILD_S, **how) -> Done:
    """`cmake --build` of `targets` in `build_dir` (or a preset's, run in `how`'s cwd)."""
    command = ["cmake", "--build", *(["--preset", preset] if preset else [str(build_dir)]),
               "--target", *targets]
    if jobs:
        command += ["--parallel", str(jobs)]
    return run(command, how.pop("what", f"building {build_dir or preset}"), limit, **how)


# ---- what is asked of gapbench -----------------------------------------------------------------

def list_benchmarks(binary: Path, profile: str, filter: str,
                    limit: float | tuple[float, str] = QUERY_S) -> list[str]:
    """The names `binary --profile=PROFILE --benchmark_filter=FILTER` would time, in
    registration order (--benchmark_list_tests needs no GPU). CommandFailed carries gapbench's
    exit status: 2 for a filter it refuses."""
    done = run([binary, f"--profile={profile}", f"--benchmark_filter={filter}",
                "--benchmark_list_tests=true"], limit=limit,
               stuck="is it the gapbench executable?")
    return [line.strip() for line in done.out.splitlines() if line.strip()]


def doctor(binary: Path, limit: float | tuple[float, str] = QUERY_S) -> tuple[int, dict]:
    """`binary doctor --json`: its exit status (3: it found something that invalidates GPU
    results; its facts are still the facts) and {"facts": {...}, "findings": [...]}.
    CommandFailed when it gives no such JSON."""
    done = run([binary, "doctor", "--json"], limit=limit, ok=None)
    try:
        data = json.loads(done.out)
    except json.JSONDecodeError:
        data = None
    if not isinstance(data, dict) or not isinstance(data.get("facts"), dict):
        raise CommandFailed(f"{binary} doctor --json failed (exit status {done.status})"
                            + (f": {done.last}" if done.last else ""),
                            done.command, done.status, done.last)
    return done.status, data


# ---- Slurm -------------------------------------------------------------------------------------

def program(name: str) -> str:
    """`name` as found on PATH or in the sbin folders; the bare name when it is nowhere."""
    return shutil.which(name, path=os.pathsep.join([os.environ.get("PATH", ""), *SBIN])) or name


def slurm_timeout() -> float:
    """GAPBENCH_SLURM_TIMEOUT's seconds; UsageError naming the variable for a bad value."""
    text = os.environ.get(TIMEOUT_VARIABLE, "").strip()
    if not text:
        return DEFAULT_SLURM_TIMEOUT
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not 0 < seconds <= LONGEST_SLURM_TIMEOUT:
        raise UsageError(f"environment variable {TIMEOUT_VARIABLE} needs a number of seconds "
                         f"above 0 and at most {LONGEST_SLURM_TIMEOUT:g}, got {text!r}")
    return seconds


def slurm(argv: Sequence[str], env: Mapping[str, str] | None = None, input: str | None = None,
          stuck: str = SLURM_STUCK) -> Done:
    """One of Slurm's commands (found where program() finds it), whatever its exit status,
    within GAPBENCH_SLURM_TIMEOUT seconds: a Slurm that does not answer is one line, never a
    hang."""
    return run([program(argv[0]), *argv[1:]], limit=slurm_timeout(), ok=None, env=env,
               input=input, missing=SLURM_MISSING,
               stuck=f"{stuck}; {TIMEOUT_VARIABLE} sets how long to wait")
