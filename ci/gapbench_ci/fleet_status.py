"""gapbench-ci fleet status: where a fleet run stands, from Slurm and from its folder.

    gapbench-ci fleet status DIR

Asks Slurm about the job of DIR/fleet.json (squeue while it is queued or runs, then
scontrol: sacct would need accounting storage) and reads every task folder. Each task is one
of: passed; failed, with its exit status and its log's last line; running; never started, with
Slurm's reason (a drained or down node, a cancelled job). A failed node is listed, never
dropped. A partial fleet can be rendered at any time: gapbench-report fleet DIR --out R.

Every Slurm command gets GAPBENCH_SLURM_TIMEOUT seconds (default 60) to answer. A task folder
that cannot be read, or whose files are not what a task writes, is listed with the reason.

Exit status: 0 every task done and passed, 1 one failed, never started or left a folder with
problems, 3 while the job is queued or runs, 2 DIR is no fleet folder or Slurm cannot be asked.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from gapbench_report.cli import kit as commandline
from gapbench_report.cli.kit import ToolError
from gapbench_report.inputs.fleet import (
    LOG,
    RECORD,
    exit_text,
    last_log_line,
    node_folders,
    printable,
    read_json,
    read_node,
    task_status,
    why_unreadable,
)
from gapbench_report.inputs.results import ResultsError, shown

from gapbench_ci import tools

PROG = "gapbench-ci fleet status"
RUNNING, FAILED, DONE = 3, 1, 0
ACTIVE = {"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED",
          "RESIZING", "STAGE_OUT", "SIGNALING"}
# Reasons a pending job gives when it cannot start on the nodes asked for: it never starts
# unless someone acts, so the fleet has failed rather than is waiting.
STUCK = ("ReqNodeNotAvail", "NodeDown", "PartitionDown", "PartitionInactive", "BadConstraints",
         "InvalidAccount", "InvalidQOS", "PartitionNodeLimit", "PartitionConfig")
STATE = re.compile(r"[A-Z_]+")  # how Slurm spells a job state


@dataclass
class Job:
    state: str  # Slurm's JobState, or "unknown" when Slurm no longer knows the job
    reason: str
    exit_code: str
    nodes: str


def job_state(job: str) -> Job:
    """The job as squeue sees it, else as scontrol still remembers it (MinJobAge)."""
    done = tools.slurm(["squeue", "-h", "-j", job, "-o", "%T|%r|%N"])
    line = done.out.strip().splitlines()[0] if done.status == 0 and done.out.strip() else ""
    if line:
        state, reason, nodes = (line.split("|") + ["", ""])[:3]
        if not STATE.fullmatch(state):
            raise ToolError(f"squeue answered no job state for job {job}: "
                            f"{printable(repr(line[:200]))}")
        return Job(state, printable(reason), "", printable(nodes))
    shown_job = tools.slurm(["scontrol", "show", "job", "-o", job])
    if shown_job.status != 0:
        message = shown_job.last
        if "Invalid job id" in message:
            return Job("unknown", "Slurm no longer knows this job", "", "")
        raise ToolError(f"scontrol show job {job}: {message or f'exit {shown_job.status}'}")
    fields = dict(part.split("=", 1) for part in shown_job.out.split() if "=" in part)
    state = fields.get("JobState", "unknown")
    return Job(state if STATE.fullmatch(state) else "unknown", printable(fields.get("Reason", "")),
               printable(fields.get("ExitCode", "")), printable(fields.get("NodeList", "")))


def task_line(folder: Path, running: bool) -> tuple[str, int]:
    """A task folder in words, and its status: DONE, FAILED or RUNNING."""
    try:
        os.scandir(folder).close()
    except OSError as e:
        return f"failed: cannot be read: {why_unreadable(e, folder)}", FAILED
    status, why = task_status(folder)
    if why:
        return f"failed: {why}", FAILED
    if status is None:
        if running:
            return "running", RUNNING
        line = last_log_line(folder)
        return ("failed: ended without task.json (killed: the time limit, or the node went "
                "away)" + (f"; its log ends: {line}" if line else "")), FAILED
    node = read_node(folder)  # its digest, made now, saves the report of a large fleet the reading
    files = f"{node.files} results file(s)"
    if status != 0:
        line = last_log_line(folder)
        return (f"failed: gapbench {exit_text(status)}" + (f"; {LOG} ends: {line}" if line
                                                           else "") + f" ({files})"), FAILED
    if node.problems:
        return f"done, passed ({files}), but: {'; '.join(node.problems)}", FAILED
    return f"done, passed ({files})", DONE


def read_record(root: Path) -> tuple[str, int]:
    """The job id and the number of tasks of DIR/fleet.json; ToolError when it is no record."""
    if not (root / RECORD).exists() and not (root / RECORD).is_symlink():
        raise ToolError(f"{printable(str(root))}: not a fleet folder (no {RECORD}; make one "
                        "with gapbench-ci fleet submit --out DIR)")
    try:
        record = read_json(root / RECORD)
    except ResultsError as e:
        raise ToolError(f"{printable(str(root))}/{e}") from None
    job = record.get("job") if isinstance(record, dict) else None
    tasks = record.get("tasks") if isinstance(record, dict) else None
    if not isinstance(job, str) or not re.fullmatch(r"[0-9]+", job):
        raise ToolError(f"{printable(str(root / RECORD))}: job is {shown(job)}, not a Slurm job "
                        "id")
    if isinstance(tasks, bool) or not isinstance(tasks, int) or tasks < 1:
        raise ToolError(f"{printable(str(root / RECORD))}: tasks is {shown(tasks)}, not a "
                        "number of tasks")
    return job, tasks


def status(root: Path) -> int:
    if not root.is_dir():
        raise ToolError(f"{printable(str(root))}: not a fleet folder ("
                        + ("not a folder)" if root.exists() else "no such folder)"))
    job_id, expected = read_record(root)
    job = job_state(job_id)
    active = job.state in ACTIVE
    stuck = job.state == "PENDING" and any(r in job.reason for r in STUCK)
    print(f"job {job_id}: {job.state}" + (f" ({job.reason})" if job.reason not in ("", "None")
                                           else "")
          + (f", exit code {job.exit_code}" if job.exit_code else "")
          + (f", nodes {job.nodes}" if job.nodes else ""))
    codes = set()
    folders = node_folders(root)
    for folder in folders:
        words, code = task_line(folder, active)
        print(f"  {printable(folder.name)}: {words}")
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
