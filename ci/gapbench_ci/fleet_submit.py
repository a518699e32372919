"""gapbench-ci fleet submit: run gapbench on every node of a Slurm allocation, one task per node.

    gapbench-ci fleet submit --out DIR [--nodes N | --nodelist LIST] [--partition P]
                             [--gpus-per-node G] [--time MINUTES] [--families LIST | --filter RE]
                             [--profile quick|full] [--tasks-per-node T] [--gapbench PATH]
                             [--dry-run]

Builds one sbatch script and submits it with `sbatch --parsable`. Each task writes DIR/<host>/
(DIR/<host>.<task id>/ where several tasks share a host): peak.json first, then one results
file per family (<family>.json, judged against that peak.json, as `ctest -L bench` runs them),
or results.json for --filter,
doctor.json, gapbench.log, and last task.json with its exit status. DIR must be on a file
system every node sees, and so must the gapbench executable (by default this checkout's
build/default/gapbench): build it once with every GPU architecture of the fleet
(-DCMAKE_CUDA_ARCHITECTURES="80;90"), as docs/fleet.md says. DIR also gets fleet.json (the job)
and fleet.sbatch (the script). `gapbench-ci fleet status DIR` follows the job;
`gapbench-report fleet DIR --out REPORT` reports on it.

Every argument is checked before anything is submitted: the families against the known ones,
the filter by the gapbench executable itself (its regular expressions are Google Benchmark's,
and a filter that matches nothing is refused too), the names and paths written into the script
(no control characters; each quoted), the time in Slurm's format. --dry-run prints the script
and submits nothing. Exit status: 0 submitted (the job id is printed), 2 bad arguments, a DIR
that already holds something (a second fleet never mixes into a first one), or sbatch missing,
refusing the job (Slurm's message), not answering (GAPBENCH_SLURM_TIMEOUT seconds, default 60)
or answering with no job id. The script and fleet.json are written only once sbatch has
answered with a job id; the folders made for DIR are removed again while they are empty.
"""

from __future__ import annotations

import base64
import datetime
import difflib
import os
import re
import shlex
import sys
from pathlib import Path

from gapbench_report.cli import kit as commandline
from gapbench_report.cli.kit import ToolError, UsageError
from gapbench_report.core.catalogue import FAMILY_ORDER
from gapbench_report.inputs.files import json_text, write_atomic_together
from gapbench_report.inputs.fleet import RECORD, SCRIPT, printable

from gapbench_ci import tools
from gapbench_ci.runner import REPO_ROOT

PROG = "gapbench-ci fleet submit"
# Minutes of --time by profile: the quick profile of every family takes about 15 minutes on 2
# cores; the full one hours.
DEFAULT_MINUTES = {"quick": 30, "full": 240}
LONGEST_TIME = 365 * 86400  # seconds: past a year, --time is a typo (Slurm overflows later)
MOST_NODES = 100_000  # more than any cluster has: a typo, refused before Slurm sees it
MOST_TASKS_PER_NODE = 1024
# The families a fleet runs by default: every family of the executable but the framework probe's
# (its own tool) and peak (run once, first, into peak.json).
RUN_FAMILIES = tuple(f for f in FAMILY_ORDER if f not in ("framework", "peak"))
KNOWN_FAMILIES = (*RUN_FAMILIES, "peak")
# Slurm's forms of --time (sbatch(1)): minutes, minutes:seconds, hours:minutes:seconds,
# days-hours, days-hours:minutes, days-hours:minutes:seconds.
# (ASCII throughout: Python's \d and \w would take other scripts' digits and letters.)
TIME_FORMS = re.compile(r"(?P<d>\d+)-(?P<dh>\d+)(?::(?P<dm>\d+)(?::(?P<ds>\d+))?)?"
                        r"|(?P<h>\d+):(?P<hm>\d+):(?P<hs>\d+)|(?P<m>\d+)(?::(?P<ms>\d+))?",
                        re.ASCII)
# A Slurm partition list, GPU request and host list, as Slurm spells them.
PARTITIONS = re.compile(r"[\w.-]+(,[\w.-]+)*", re.ASCII)
GPUS = re.compile(r"([\w.-]+:)?[1-9][0-9]{0,3}", re.ASCII)
HOSTLIST = re.compile(r"[\w.-]+(\[[0-9,-]+\][\w.-]*)*(,[\w.-]+(\[[0-9,-]+\][\w.-]*)*)*",
                      re.ASCII)
# An #SBATCH value that needs no quotes.
BARE = re.compile(r"[\w.,:%/@+=\[\]-]+", re.ASCII)
# sbatch's job id with --parsable: "id", or "id;cluster".
JOB_ID = re.compile(r"(?P<job>[0-9]+)(;[\w.-]+)?", re.ASCII)

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
  # A family is judged against the peak/ run before it (a failed one: its file says so).
  peak=
  [ "$file" != peak ] && [ -f "$out/peak.json" ] && peak=--peak=peak.json
  echo "gapbench fleet: $file: --benchmark_filter=$filter $peak" >>"$log"
  "$GAPBENCH_BIN" --profile="$GAPBENCH_FLEET_PROFILE" --benchmark_filter="$filter" \
    ${peak:+"$peak"} \
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
PYTHONPATH=$GAPBENCH_FLEET_REPORT "$GAPBENCH_FLEET_PYTHON" -m gapbench_report.inputs.fleet \
  "$out" >/dev/null 2>&1
exit "$status"
"""


def runs(families: list[str] | None, filter_: str | None) -> list[tuple[str, str]]:
    """(results file stem, --benchmark_filter) per gapbench run of a task, in order: peak/
    once, then each family (the task names peak.json to each: --peak)."""
    if filter_:
        return [("results", filter_)]
    return [("peak", "^peak/")] + [(f, f"^{f}/") for f in (families or RUN_FAMILIES)
                                   if f != "peak"]


def directive(option: str, value: object) -> str:
    """An #SBATCH line, its value quoted as sbatch reads these lines where it needs to be: in
    double quotes, with a backslash before a backslash or a double quote (a space would end the
    value, a # start a comment)."""
    text = str(value)
    if not BARE.fullmatch(text):
        text = '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return f"#SBATCH --{option}={text}"


def sbatch_script(args) -> str:
    out = args.out.resolve()
    shared = args.tasks_per_node > 1
    directives = [("job-name", args.job_name)]
    if args.nodes is not None:  # unknown for a --nodelist in a dry run: Slurm counts it
        directives.append(("nodes", args.nodes))
    if args.nodelist:
        directives.append(("nodelist", args.nodelist))
    directives += [("ntasks-per-node", args.tasks_per_node), ("time", args.time),
                   ("output", f"{out}/slurm-%j.out")]
    if args.partition:
        directives.append(("partition", args.partition))
    if args.gpus_per_node:
        directives.append(("gpus-per-node", args.gpus_per_node))
    encoded = " ".join(f"{stem}={base64.b64encode(f.encode()).decode()}"
                       for stem, f in runs(args.families, args.filter))
    lines = ["#!/bin/bash", *[directive(o, v) for o, v in directives],
             "#SBATCH --exclusive",  # benchmarks want the node to themselves
             "# A gapbench fleet run, made by gapbench-ci fleet submit (docs/fleet.md).",
             f"export GAPBENCH_FLEET_DIR={shlex.quote(str(out))}",
             f"export GAPBENCH_BIN={shlex.quote(str(args.gapbench))}",
             f"export GAPBENCH_FLEET_PROFILE={shlex.quote(args.profile)}",
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


def count_hosts(nodelist: str) -> int:
    """How many hosts a Slurm host list names (node[1-3,5] is 4), as `scontrol show hostnames`
    expands it; ToolError with Slurm's message when it cannot."""
    done = tools.slurm(["scontrol", "show", "hostnames", nodelist])
    hosts = done.out.split()
    if done.status != 0 or not hosts:
        raise ToolError(f"scontrol show hostnames {nodelist}: "
                        f"{done.last or f'exit {done.status}'}")
    return len(set(hosts))  # Slurm reads a host named twice as one


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


def check_text(flag: str, value: str) -> None:
    """A value written into the script: one line of printable text (a newline would be a line
    of the script of its own, run on every node)."""
    if printable(value) != value:
        raise UsageError(f"{flag} {printable(repr(value))}: holds a control character or bytes "
                         "that are not UTF-8; give printable text")


def seconds_of(time: str) -> int | None:
    """Slurm's --time in seconds; None when it is none of Slurm's forms."""
    form = TIME_FORMS.fullmatch(time)
    if form is None:
        return None
    f = {k: int(v) for k, v in form.groupdict().items() if v is not None}
    return (f.get("d", 0) * 86400 + (f.get("dh", 0) + f.get("h", 0)) * 3600
            + (f.get("dm", 0) + f.get("hm", 0) + f.get("m", 0)) * 60
            + f.get("ds", 0) + f.get("hs", 0) + f.get("ms", 0))


def check(args) -> None:
    """Every argument, before anything is made or submitted; UsageError for a bad one."""
    tools.slurm_timeout()  # GAPBENCH_SLURM_TIMEOUT, refused now rather than half-way
    for flag, value in (("--out", str(args.out)), ("--gapbench", str(args.gapbench)),
                        ("--job-name", args.job_name), ("--partition", args.partition),
                        ("--nodelist", args.nodelist), ("--gpus-per-node", args.gpus_per_node),
                        ("--time", args.time), ("--filter", args.filter)):
        if value is not None:
            check_text(flag, value)
    if not args.job_name.strip():
        raise UsageError("--job-name: give a name")
    if args.nodes is not None and not 1 <= args.nodes <= MOST_NODES:
        raise UsageError(f"--nodes {args.nodes}: from 1 to {MOST_NODES}")
    if not 1 <= args.tasks_per_node <= MOST_TASKS_PER_NODE:
        raise UsageError(f"--tasks-per-node {args.tasks_per_node}: from 1 to "
                         f"{MOST_TASKS_PER_NODE}")
    for flag, value, form, example in (
            ("--partition", args.partition, PARTITIONS, "gpu, or gpu,debug"),
            ("--gpus-per-node", args.gpus_per_node, GPUS, "1, or a100:4"),
            ("--nodelist", args.nodelist, HOSTLIST, "node[1-4,7],gpu12")):
        if value is not None and not form.fullmatch(value):
            raise UsageError(f"{flag} {value!r}: not as Slurm writes it (e.g. {example})")
    if args.time is None:
        args.time = str(DEFAULT_MINUTES[args.profile])
    seconds = seconds_of(args.time)
    if seconds is None or not 0 < seconds <= LONGEST_TIME:
        raise UsageError(f"--time {args.time!r}: " + (
            "give minutes, or Slurm's D-HH:MM:SS (also MM:SS, HH:MM:SS, D-HH, D-HH:MM)"
            if seconds is None else "no time at all" if seconds == 0 else "more than a year"))
    if args.families is not None:
        args.families = [f.strip() for f in args.families.split(",") if f.strip()]
        if not args.families:
            raise UsageError(f"--families: give family names separated by commas (e.g. "
                             f"{','.join(RUN_FAMILIES[:2])})")
        for family in args.families:
            if family not in KNOWN_FAMILIES:
                near = difflib.get_close_matches(family, KNOWN_FAMILIES, n=1)
                raise UsageError(f"--families: unknown family {family!r}"
                                 + (f" (did you mean {near[0]}?)" if near else "")
                                 + f"; the families: {', '.join(KNOWN_FAMILIES)}")
            if args.families.count(family) > 1:
                raise UsageError(f"--families names {family} twice")
    if args.filter is not None and not args.filter:
        raise UsageError("--filter '': give a regular expression, or leave --filter out to run "
                         "every family")
    args.gapbench = args.gapbench.resolve()
    if not args.dry_run and not os.access(args.gapbench, os.X_OK):
        raise ToolError(f"{args.gapbench}: no gapbench executable there (build it: cmake "
                        "--build --preset default --target gapbench; or give --gapbench PATH)")
    check_filters(args)
    # A node list's count asked of Slurm once, for the script and the job's record alike (a
    # dry run leaves it to Slurm: scontrol may have no cluster to ask here).
    if args.nodelist:
        args.nodes = None if args.dry_run else count_hosts(args.nodelist)
    elif args.nodes is None:
        args.nodes = 1


def check_filters(args) -> None:
    """The runs' filters as every node's gapbench will read them, asked of the executable here:
    its regular expressions are Google Benchmark's (std::regex, POSIX extended), and it refuses
    a filter it cannot read or one that matches no benchmark in one line (exit status 2)."""
    families = [] if args.filter else args.families or list(RUN_FAMILIES)
    together = args.filter or f"^(peak|{'|'.join(families)})/"
    if not os.access(args.gapbench, os.X_OK):  # a dry run without a build: nothing to ask
        return
    try:
        names = tools.list_benchmarks(args.gapbench, args.profile, together,
                                      tools.slurm_timeout())
    except tools.CommandFailed as e:
        if e.status != 2:
            raise
        line = e.last.removeprefix("gapbench: ").removesuffix(" (try --help)")
        raise UsageError(f"{args.gapbench} refuses the run: {line}") from None
    listed = {name.split("/", 1)[0] for name in names}
    missing = [f for f in families if f not in listed]
    if missing:
        raise UsageError(f"--families: {args.gapbench} has no {', '.join(missing)} benchmarks "
                         f"(it has {', '.join(sorted(listed))}); an older build?")


def submit(args) -> str:
    """Submits; returns the job id. sbatch reads the script from stdin, so that nothing is in
    DIR before a job id came back: on any failure (Ctrl-C included) the folders made here are
    removed while still empty, and the retry finds them as they were."""
    out = args.out
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ToolError(f"{out}: already exists and is not an empty folder; a fleet gets a "
                        "folder of its own (choose another --out)")
    made = [p for p in (out, *out.parents) if not p.exists()]  # deepest first
    out.mkdir(parents=True, exist_ok=True)  # before the job: Slurm writes slurm-<job>.out in it
    script = sbatch_script(args)
    name = shlex.quote(args.job_name)
    try:
        done = tools.slurm(["sbatch", "--parsable"], input=script,
                           stuck=f"{tools.SLURM_STUCK}; it may have queued the job all the same: "
                                 f"squeue --me --name={name}")
        if done.status != 0:
            message = tools.last_line(done.err or done.out)
            raise ToolError(f"sbatch refused the job: {message or f'exit {done.status}'}")
        answer = done.out.strip()
        parsed = JOB_ID.fullmatch(answer)
        if parsed is None:
            raise ToolError(f"sbatch exited 0 but answered no job id ({printable(repr(answer))}"
                            f"); check squeue --me --name={name} for a job it may have "
                            "queued")
    except BaseException:
        for folder in made:
            try:
                folder.rmdir()  # only while empty: a job that did start has written into it
            except OSError:
                break
        raise
    job = parsed["job"]
    try:
        write_atomic_together({out / SCRIPT: script, out / RECORD: json_text({
            "job": job, "nodes": args.nodes, "nodelist": args.nodelist,
            "tasks_per_node": args.tasks_per_node,
            "tasks": args.nodes * args.tasks_per_node,
            "profile": args.profile, "runs": [stem for stem, _ in runs(args.families,
                                                                       args.filter)],
            "gapbench": str(args.gapbench), "time": args.time,
            "submitted": datetime.datetime.now(datetime.timezone.utc).isoformat(
                timespec="seconds")})})
    except OSError as e:
        raise ToolError(f"job {job} was submitted, but {out / RECORD} could not be written "
                        f"({e}); scancel {job}, or follow it with squeue -j {job}") from None
    return job


def _run(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    check(args)
    if args.dry_run:
        print(sbatch_script(args), end="")
        return 0
    job = submit(args)
    out = printable(str(args.out))
    print(f"submitted job {job}: {out}/ (follow it: gapbench-ci fleet status {out})")
    return 0


def main(argv: list[str] | None = None) -> int:
    return commandline.run(PROG, _run, argv)
