"""gapbench-ci fleet submit: run gapbench on every node of a Slurm allocation, one task per node.

    gapbench-ci fleet submit --out DIR [--nodes N | --nodelist LIST] [--partition P]
                             [--gpus-per-node G] [--time MINUTES] [--families LIST | --filter RE]
                             [--profile quick|full] [--tasks-per-node T] [--gapbench PATH]
                             [--dry-run]

Builds one sbatch script and submits it with `sbatch --parsable`. Each task writes DIR/<host>/
(DIR/<host>.<task id>/ where several tasks share a host): one results file per family
(<family>.json, each beside peak/, as `ctest -L bench` runs them) or results.json for --filter,
doctor.json, gapbench.log, and last task.json with its exit status. DIR must be on a file
system every node sees, and so must the gapbench executable (by default this checkout's
build/default/gapbench): build it once with every GPU architecture of the fleet
(-DCMAKE_CUDA_ARCHITECTURES="80;90"), as docs/fleet.md says. DIR also gets fleet.json (the job)
and fleet.sbatch (the script). `gapbench-ci fleet status DIR` follows the job;
`gapbench-report fleet DIR --out REPORT` reports on it.

--dry-run prints the script and submits nothing. Exit status: 0 submitted (the job id is
printed), 2 bad arguments, a DIR that already holds something (a second fleet never mixes into
a first one), or sbatch missing or refusing the job (Slurm's message; nothing is left in DIR).
"""

from __future__ import annotations

import base64
import datetime
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from gapbench_report import commandline
from gapbench_report.catalogue import FAMILY_ORDER
from gapbench_report.commandline import ToolError, UsageError
from gapbench_report.files import write_json_atomic

from gapbench_ci.runner import REPO_ROOT

PROG = "gapbench-ci fleet submit"
RECORD = "fleet.json"
SCRIPT = "fleet.sbatch"
# Minutes of --time by profile: the quick profile of every family takes about 15 minutes on 2
# cores; the full one hours.
DEFAULT_MINUTES = {"quick": 30, "full": 240}
# The families a fleet runs by default: every family of the executable but the framework probe's
# (its own tool) and peak (run beside each family).
RUN_FAMILIES = tuple(f for f in FAMILY_ORDER if f not in ("framework", "peak"))

# One task: its folder, doctor, one gapbench run per family, and task.json last. Every file is
# written under a hidden name and renamed, so a reader never sees half of one.
TASK = r"""set -u
host=$(hostname -s)
name=$host
[ "$GAPBENCH_FLEET_SHARED" = 1 ] && name=$host.$SLURM_PROCID
out=$GAPBENCH_FLEET_DIR/$name
mkdir -p "$out" || exit 1
log=$out/gapbench.log
started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
echo "gapbench fleet: job $SLURM_JOB_ID task $SLURM_PROCID on $host" >"$log"
"$GAPBENCH_BIN" doctor --json >"$out/.doctor.json.tmp" 2>>"$log" &&
  mv "$out/.doctor.json.tmp" "$out/doctor.json"
status=0
for run in $GAPBENCH_FLEET_RUNS; do
  file=${run%%=*}
  filter=$(printf '%s' "${run#*=}" | base64 -d)
  echo "gapbench fleet: $file: --benchmark_filter=$filter" >>"$log"
  "$GAPBENCH_BIN" --profile="$GAPBENCH_FLEET_PROFILE" --benchmark_filter="$filter" \
    --benchmark_out="$out/$file.json" >>"$log" 2>&1
  code=$?
  if [ "$code" -ne 0 ]; then
    echo "gapbench fleet: $file: exit status $code" >>"$log"
    [ "$status" -eq 0 ] && status=$code
  fi
done
printf '{"host": "%s", "task": %s, "job": "%s", "exit_status": %s, ' "$host" "$SLURM_PROCID" \
  "$SLURM_JOB_ID" "$status" >"$out/.task.json.tmp"
printf '"started": "%s", "ended": "%s"}\n' "$started" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
  >>"$out/.task.json.tmp" && mv "$out/.task.json.tmp" "$out/task.json"
# The report's reading of this folder, made here while the other nodes do theirs (best effort:
# the submitting checkout's Python may not run on this node; the report then reads the files).
PYTHONPATH=$GAPBENCH_FLEET_REPORT "$GAPBENCH_FLEET_PYTHON" -m gapbench_report.fleet_files \
  "$out" >/dev/null 2>&1
exit "$status"
"""


def runs(families: list[str] | None, filter_: str | None) -> list[tuple[str, str]]:
    """(results file stem, --benchmark_filter) per gapbench run of a task."""
    if filter_:
        return [("results", filter_)]
    return [(f, f"^(peak|{f})/") for f in (families or RUN_FAMILIES)]


def sbatch_script(args) -> str:
    out = args.out.resolve()
    shared = args.tasks_per_node > 1
    directives = [f"--job-name={args.job_name}", f"--ntasks-per-node={args.tasks_per_node}",
                  f"--time={args.time}", f"--output={out}/slurm-%j.out",
                  # Benchmarks want the node to themselves.
                  "--exclusive"]
    if args.nodelist:
        directives.insert(1, f"--nodelist={args.nodelist}")
    directives.insert(1, f"--nodes={args.nodes}")
    if args.partition:
        directives.append(f"--partition={args.partition}")
    if args.gpus_per_node:
        directives.append(f"--gpus-per-node={args.gpus_per_node}")
    encoded = " ".join(f"{stem}={base64.b64encode(f.encode()).decode()}"
                       for stem, f in runs(args.families, args.filter))
    lines = ["#!/bin/bash", *[f"#SBATCH {d}" for d in directives],
             "# A gapbench fleet run, made by gapbench-ci fleet submit (docs/fleet.md).",
             f"export GAPBENCH_FLEET_DIR={shlex.quote(str(out))}",
             f"export GAPBENCH_BIN={shlex.quote(str(args.gapbench))}",
             f"export GAPBENCH_FLEET_PROFILE={args.profile}",
             f"export GAPBENCH_FLEET_SHARED={int(shared)}",
             f"export GAPBENCH_FLEET_PYTHON={shlex.quote(sys.executable)}",
             f"export GAPBENCH_FLEET_REPORT={shlex.quote(str(REPO_ROOT / 'report'))}",
             "# Each run as FILE=FILTER, the filter in base64 (a regular expression has spaces",
             "# and quotes of its own).",
             f"export GAPBENCH_FLEET_RUNS={shlex.quote(encoded)}",
             "task=$(cat <<'TASK'", TASK.rstrip("\n"), "TASK", ")",
             "# One task per node (or --ntasks-per-node of them); a failed task never ends the",
             "# others.",
             'srun --kill-on-bad-exit=0 bash -c "$task"', ""]
    return "\n".join(lines)


def expand_hosts(nodelist: str) -> list[str]:
    """A Slurm host list's names, as `scontrol show hostnames` gives them (node[1-3,5])."""
    try:
        done = subprocess.run(["scontrol", "show", "hostnames", nodelist], capture_output=True,
                              text=True, check=False)
        if done.returncode == 0 and done.stdout.split():
            return done.stdout.split()
    except FileNotFoundError:
        pass
    return [h for h in nodelist.split(",") if h]


def _parser() -> commandline.Parser:
    p = commandline.parser(PROG, __doc__)
    p.add_argument("--out", required=True, type=Path,
                   help="the fleet folder, on a file system every node sees")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--nodes", type=int, default=None, help="how many nodes (default 1)")
    where.add_argument("--nodelist", help="which nodes, as Slurm names them (node[1-4])")
    p.add_argument("--partition", help="the Slurm partition")
    p.add_argument("--gpus-per-node", help="GPUs to allocate per node (Slurm's --gpus-per-node)")
    p.add_argument("--time", help="Slurm's time limit (minutes, or D-HH:MM:SS); default 30 "
                                  "minutes for the quick profile, 240 for full")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--families", help="comma-separated families, one results file each "
                                         f"(default: {','.join(RUN_FAMILIES)})")
    what.add_argument("--filter", help="one run with this --benchmark_filter (results.json)")
    p.add_argument("--profile", choices=("quick", "full"), default="quick")
    p.add_argument("--tasks-per-node", type=int, default=1,
                   help="tasks per node (default 1); more than one writes DIR/<host>.<task id>/")
    p.add_argument("--gapbench", type=Path, default=REPO_ROOT / "build" / "default" / "gapbench",
                   help="the gapbench executable every node runs (default: this checkout's "
                        "build/default/gapbench)")
    p.add_argument("--job-name", default="gapbench-fleet")
    p.add_argument("--dry-run", action="store_true", help="print the script, submit nothing")
    return p


def check(args) -> None:
    if args.nodes is not None and args.nodes < 1:
        raise UsageError("--nodes must be 1 or more")
    # A node list's count asked of Slurm once, for the script and the job's record alike.
    args.nodes = len(expand_hosts(args.nodelist)) if args.nodelist else args.nodes or 1
    if args.tasks_per_node < 1:
        raise UsageError("--tasks-per-node must be 1 or more")
    if args.families is not None:
        args.families = [f.strip() for f in args.families.split(",") if f.strip()]
        unknown = [f for f in args.families if not re.fullmatch(r"[a-z][a-z0-9_]*", f)]
        if not args.families or unknown:
            raise UsageError(f"--families: give family names separated by commas "
                             f"(e.g. {','.join(RUN_FAMILIES[:2])})")
    if args.time is None:
        args.time = str(DEFAULT_MINUTES[args.profile])
    if not re.fullmatch(r"[0-9:-]+", args.time):
        raise UsageError(f"--time {args.time!r}: minutes, or Slurm's D-HH:MM:SS")
    args.gapbench = args.gapbench.resolve()
    if not args.dry_run and not os.access(args.gapbench, os.X_OK):
        raise ToolError(f"{args.gapbench}: no gapbench executable there (build it: cmake "
                        "--build --preset default --target gapbench; or give --gapbench PATH)")


def submit(args) -> str:
    """Submits; returns the job id. Leaves DIR as it found it when sbatch fails."""
    out = args.out
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ToolError(f"{out}: already exists and is not an empty folder; a fleet gets a "
                        "folder of its own (choose another --out)")
    made = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    script = out / SCRIPT
    script.write_text(sbatch_script(args), encoding="utf-8")
    try:
        done = subprocess.run(["sbatch", "--parsable", str(script)], capture_output=True,
                              text=True, check=False)
    except FileNotFoundError:
        done = None
    if done is None or done.returncode != 0:
        script.unlink(missing_ok=True)
        if made:
            out.rmdir()
        if done is None:
            raise ToolError("sbatch not found: Slurm's commands are not installed here "
                            "(Debian and Ubuntu: apt-get install slurm-client)")
        message = " ".join((done.stderr or done.stdout).split()) or f"exit {done.returncode}"
        raise ToolError(f"sbatch refused the job: {message}")
    job = done.stdout.strip().split(";")[0]  # --parsable: "id" or "id;cluster"
    write_json_atomic(out / RECORD, {
        "job": job, "nodes": args.nodes, "nodelist": args.nodelist,
        "tasks_per_node": args.tasks_per_node,
        "tasks": args.nodes * args.tasks_per_node,
        "profile": args.profile, "runs": [stem for stem, _ in runs(args.families, args.filter)],
        "gapbench": str(args.gapbench), "time": args.time,
        "submitted": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    })
    return job


def _run(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    check(args)
    if args.dry_run:
        print(sbatch_script(args), end="")
        return 0
    job = submit(args)
    print(f"submitted job {job}: {args.out}/ (follow it: gapbench-ci fleet status {args.out})")
    return 0


def main(argv: list[str] | None = None) -> int:
    return commandline.run(PROG, _run, argv)
