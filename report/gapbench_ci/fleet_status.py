"""gapbench-ci fleet status: where a fleet run stands, from Slurm and from its folder.

    gapbench-ci fleet status DIR

Asks Slurm about the job of DIR/fleet.json (squeue while it is queued or runs, then
scontrol: sacct would need accounting storage) and reads every task folder. Each task is one
of: passed; failed, with its exit status and its log's last line; running; never started, with
Slurm's reason (a drained or down node, a cancelled job). A failed node is listed, never
dropped. A partial fleet can be rendered at any time: gapbench-report fleet DIR --out R.

Exit status: 0 every task done and passed, 1 one failed or never started, 3 while the job is
queued or runs, 2 DIR is no fleet folder or Slurm cannot be asked.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

from gapbench_report import commandline
from gapbench_report.commandline import ToolError
from gapbench_report.fleet_files import (
    LOG,
    NOT_RESULTS,
    TASK,
    exit_text,
    last_log_line,
    read_node,
)
from gapbench_report.results import json_files

from gapbench_ci.fleet_submit import RECORD

PROG = "gapbench-ci fleet status"
RUNNING, FAILED, DONE = 3, 1, 0
ACTIVE = {"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED",
          "RESIZING", "STAGE_OUT", "SIGNALING"}
# Reasons a pending job gives when it cannot start on the nodes asked for: it never starts
# unless someone acts, so the fleet has failed rather than is waiting.
STUCK = ("ReqNodeNotAvail", "NodeDown", "PartitionDown", "PartitionInactive", "BadConstraints",
         "InvalidAccount", "InvalidQOS", "PartitionNodeLimit", "PartitionConfig")


@dataclass
class Job:
    state: str  # Slurm's JobState, or "unknown" when Slurm no longer knows the job
    reason: str
    exit_code: str
    nodes: str


def slurm(args: list[str]) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(args, capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise ToolError(f"{args[0]} not found: Slurm's commands are not installed here") from None


def job_state(job: str) -> Job:
    """The job as squeue sees it, else as scontrol still remembers it (MinJobAge)."""
    done = slurm(["squeue", "-h", "-j", job, "-o", "%T|%r|%N"])
    line = done.stdout.strip().splitlines()[0] if done.returncode == 0 and done.stdout.strip() \
        else ""
    if line:
        state, reason, nodes = (line.split("|") + ["", ""])[:3]
        return Job(state, reason, "", nodes)
    shown = slurm(["scontrol", "show", "job", "-o", job])
    if shown.returncode != 0:
        message = " ".join(shown.stderr.split())
        if "Invalid job id" in message:
            return Job("unknown", "Slurm no longer knows this job", "", "")
        raise ToolError(f"scontrol show job {job}: {message or f'exit {shown.returncode}'}")
    fields = dict(part.split("=", 1) for part in shown.stdout.split() if "=" in part)
    return Job(fields.get("JobState", "unknown"), fields.get("Reason", ""),
               fields.get("ExitCode", ""), fields.get("NodeList", ""))


def task_line(folder: Path, running: bool) -> tuple[str, int]:
    """A task folder in words, and its status: DONE, FAILED or RUNNING."""
    try:
        status = json.loads((folder / TASK).read_text(encoding="utf-8"))["exit_status"]
    except FileNotFoundError:
        if running:
            return "running", RUNNING
        line = last_log_line(folder)
        return ("failed: ended without task.json (killed: the time limit, or the node went "
                "away)" + (f"; its log ends: {line}" if line else "")), FAILED
    except (OSError, ValueError, KeyError, TypeError):
        return f"failed: {TASK} unreadable", FAILED
    read_node(folder)  # its digest, made now, saves the report of a large fleet the reading
    results = [p for p in json_files(folder) if p.name not in NOT_RESULTS]
    if status == 0:
        return f"done, passed ({len(results)} results file(s))", DONE
    line = last_log_line(folder)
    return (f"failed: gapbench {exit_text(status)}" + (f"; {LOG} ends: {line}" if line else "")
            + f" ({len(results)} results file(s))"), FAILED


def status(root: Path) -> int:
    try:
        record = json.loads((root / RECORD).read_text(encoding="utf-8"))
        job_id, expected = str(record["job"]), int(record["tasks"])
    except FileNotFoundError:
        raise ToolError(f"{root}: not a fleet folder (no {RECORD}; make one with gapbench-ci "
                        "fleet submit --out DIR)") from None
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ToolError(f"{root / RECORD}: unreadable ({type(e).__name__}: {e})") from None
    job = job_state(job_id)
    active = job.state in ACTIVE
    stuck = job.state == "PENDING" and any(r in job.reason for r in STUCK)
    print(f"job {job_id}: {job.state}" + (f" ({job.reason})" if job.reason not in ("", "None")
                                           else "")
          + (f", exit code {job.exit_code}" if job.exit_code else "")
          + (f", nodes {job.nodes}" if job.nodes else ""))
    codes = set()
    folders = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    for folder in folders:
        words, code = task_line(folder, active)
        print(f"  {folder.name}: {words}")
        codes.add(code)
    missing = expected - len(folders)
    reason = job.reason if job.reason not in ("", "None") else ""
    if missing > 0 and active and not stuck:
        print(f"  {missing} of {expected} task(s) not started yet" + (f" ({reason})" if reason
                                                                    else ""))
    elif missing > 0:
        print(f"  {missing} of {expected} task(s) never started: {reason or job.state}")
        codes.add(FAILED)
    if stuck or FAILED in codes:
        return FAILED
    return RUNNING if active or RUNNING in codes else DONE


def _parser() -> commandline.Parser:
    p = commandline.parser(PROG, __doc__)
    p.add_argument("fleet", type=Path, help="the fleet folder (gapbench-ci fleet submit --out)")
    return p


def _run(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    return status(args.fleet)


def main(argv: list[str] | None = None) -> int:
    return commandline.run(PROG, _run, argv)
