"""The outside commands of the fleet (sbatch, squeue, scontrol, sinfo, the gapbench executable),
each run with a time limit: a Slurm that does not answer is one line, never a hang.

The limit is GAPBENCH_SLURM_TIMEOUT seconds (default 60: Slurm's commands retry an unreachable
slurmctld for about that long before they give up on their own).
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import signal
import subprocess
from collections.abc import Mapping, Sequence

from gapbench_report.commandline import ToolError, UsageError

TIMEOUT_VARIABLE = "GAPBENCH_SLURM_TIMEOUT"
DEFAULT_TIMEOUT = 60.0
LONGEST_TIMEOUT = 3600.0
# Where MUNGE's and Slurm's daemons live: off a user's PATH.
SBIN = ("/usr/sbin", "/sbin", "/usr/local/sbin")
SLURM_STUCK = "is slurmctld up? (scontrol ping says)"


def program(name: str) -> str:
    """`name` as found on PATH or in the sbin folders; the bare name when it is nowhere."""
    return shutil.which(name, path=os.pathsep.join([os.environ.get("PATH", ""), *SBIN])) or name


def timeout() -> float:
    """GAPBENCH_SLURM_TIMEOUT's seconds; UsageError naming the variable for a bad value."""
    text = os.environ.get(TIMEOUT_VARIABLE, "").strip()
    if not text:
        return DEFAULT_TIMEOUT
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not 0 < seconds <= LONGEST_TIMEOUT:
        raise UsageError(f"environment variable {TIMEOUT_VARIABLE} needs a number of seconds "
                         f"above 0 and at most {LONGEST_TIMEOUT:g}, got {text!r}")
    return seconds


def run(argv: Sequence[str], env: Mapping[str, str] | None = None, input: str | None = None,
        stuck: str = SLURM_STUCK) -> subprocess.CompletedProcess:
    """argv's exit status and output (text). ToolError when it is not installed, or when it has
    not ended within timeout() seconds: then it is killed, with every process it started (its
    own session), and the line names it and asks `stuck`. Ctrl-C kills it the same way."""
    limit = timeout()
    try:
        process = subprocess.Popen(list(argv), stdin=subprocess.PIPE if input is not None
                                   else subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, errors="replace",
                                   env=None if env is None else dict(env),
                                   start_new_session=True)
    except FileNotFoundError:
        raise ToolError(f"{argv[0]} not found: Slurm's commands are not installed here "
                        "(Debian and Ubuntu: apt-get install slurm-client)") from None
    except OSError as e:
        raise ToolError(f"cannot run {argv[0]}: {e.strerror or e}") from None
    try:
        out, err = process.communicate(input, timeout=limit)
    except subprocess.TimeoutExpired:
        kill(process)
        name = os.path.basename(argv[0])
        raise ToolError(f"{name} did not answer in {limit:g} s; {stuck}; {TIMEOUT_VARIABLE} "
                        "sets how long to wait") from None
    except BaseException:  # Ctrl-C: the command goes too, it is in a session of its own
        kill(process)
        raise
    return subprocess.CompletedProcess(list(argv), process.returncode, out, err)


def kill(process: subprocess.Popen) -> None:
    """Ends the process and everything in its session (it is the session's leader). Its pipes
    are closed, not read to their end: a child that left the session may hold them open."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    for stream in (process.stdin, process.stdout, process.stderr):
        if stream:
            with contextlib.suppress(OSError):
                stream.close()
    process.wait()


def last_line(text: str) -> str:
    """A command's last non-empty line of output, on one line."""
    return next((" ".join(x.split()) for x in reversed(text.splitlines()) if x.strip()), "")
