"""A real fleet run through a real Slurm (ctest's smoke.fleet_slurm): a one-node cluster on this
machine (gapbench_ci.fleet_cluster: munged with its own key, slurmctld -D and slurmd -D on
private ports), `gapbench-ci fleet submit` of a small filter with two tasks on the one node (as
two nodes would run one each), `fleet status` until it is done, both tasks' results and doctor
files checked, a drained node's job seen as never started, then `gapbench-report fleet` on the
folder. The daemons it started, and only those, are stopped at the end. The cluster's folder
is deeper than a Unix socket's path may be, as a deep checkout's is.

    python smoke_fleet.py GAPBENCH WORK_DIR

Where Slurm is not installed (or this is not root), it skips (exit 77) saying why; under
CI=true (.ci/run installs Slurm with ci/setup --fleet) that is a failure instead.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "ci"), str(ROOT / "report")]

from gapbench_report.cli.kit import ToolError  # noqa: E402
from gapbench_report.inputs.fleet import DIGEST, sources  # noqa: E402

from gapbench_ci import fleet_cluster  # noqa: E402

FILTER = "^transfer/memcpy/cpu/bytes:(4096|65536)/"
WAIT = 150  # seconds for the job: the whole test must stay within 3 minutes
COMMAND_WAIT = 60  # seconds for any one command
# The cluster's folder is deeper than a Unix socket's path may be (107 bytes), wherever the
# checkout is: its sockets must live elsewhere (fleet_cluster.sockets_folder).
DEEP = "deep" + "-deep" * 22


def skip(reason: str) -> int:
    if os.environ.get("CI") == "true":
        print(f"CI=true: {reason}", file=sys.stderr)
        return 1
    print(f"skipped: {reason}")
    return 77


def ci(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "gapbench_ci", "fleet", *args]
    print("+", " ".join(command), flush=True)
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False,
                          timeout=COMMAND_WAIT)
    print(done.stdout + done.stderr, end="", flush=True)
    return done


def check_fleet(gapbench: str, work: Path, env: dict[str, str]) -> None:
    fleet = work / "fleet"
    done = ci(env, "submit", "--out", str(fleet), "--tasks-per-node", "2", "--filter", FILTER,
              "--time", "5", "--gapbench", gapbench)
    assert done.returncode == 0, f"submit exited {done.returncode}"
    again = ci(env, "submit", "--out", str(fleet), "--filter", FILTER, "--gapbench", gapbench)
    assert again.returncode == 2 and "already exists" in again.stderr, "a second submit mixed in"
    deadline = time.monotonic() + WAIT
    while (done := ci(env, "status", str(fleet))).returncode == 3:
        assert time.monotonic() < deadline, f"the job did not finish within {WAIT} s"
        time.sleep(2)
    assert done.returncode == 0, f"status exited {done.returncode}: a task failed"
    assert done.stdout.count("done, passed (1 results file(s))") == 2, done.stdout
    host = socket.gethostname().split(".")[0]
    for task in (f"{host}.0", f"{host}.1"):
        folder = fleet / task
        doctor = json.loads((folder / "doctor.json").read_text())
        assert doctor["facts"]["machine.id"], task
        results = json.loads((folder / "results.json").read_text())
        names = {b["run_name"] for b in results["benchmarks"]}
        assert names and all(n.startswith("transfer/memcpy/cpu/") for n in names), names
        assert json.loads((folder / "task.json").read_text())["exit_status"] == 0
        # The task digested its own folder for the report, and nothing changed after.
        digest = json.loads((folder / DIGEST).read_text())
        assert digest["sources"] == sources(folder) and digest["node"]["medians"], task
    report = work / "report"
    command = [sys.executable, "-m", "gapbench_report", "fleet", str(fleet), "--out", str(report)]
    print("+", " ".join(command), flush=True)
    subprocess.run(command, env=env, check=True, timeout=COMMAND_WAIT)
    summary = (report / "summary.md").read_text()
    assert "2 node folders · 1 machine" in summary, summary
    assert (report / "index.html").stat().st_size > 0


def check_drained(gapbench: str, work: Path, env: dict[str, str]) -> None:
    """A job for a drained node never starts: status says so, and exits 1."""
    host = socket.gethostname().split(".")[0]
    scontrol = fleet_cluster.program("scontrol")
    subprocess.run([scontrol, "update", f"nodename={host}", "state=drain", "reason=smoke"],
                   env=env, check=True, timeout=COMMAND_WAIT)
    try:
        fleet = work / "drained"
        assert ci(env, "submit", "--out", str(fleet), "--nodelist", host, "--filter", FILTER,
                  "--gapbench", gapbench).returncode == 0
        done = ci(env, "status", str(fleet))
        assert done.returncode == 1 and "never started" in done.stdout, done.stdout
        job = json.loads((fleet / "fleet.json").read_text())["job"]
        subprocess.run([fleet_cluster.program("scancel"), job], env=env, check=True,
                       timeout=COMMAND_WAIT)
    finally:
        subprocess.run([scontrol, "update", f"nodename={host}", "state=resume"], env=env,
                       check=False, timeout=COMMAND_WAIT)


def main(argv: list[str]) -> int:
    gapbench, work = argv[1], Path(argv[2]).resolve()
    missing = fleet_cluster.missing_programs()
    if missing:
        return skip(f"Slurm is not installed (no {', '.join(missing)}): bash ci/setup --fleet")
    if os.geteuid() != 0:
        return skip("a one-node Slurm cluster needs root (slurmd starts jobs as their user)")
    start = time.monotonic()
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    cluster = work / DEEP / "cluster"
    assert len(os.fsencode(cluster / "munge" / "munge.socket")) > 107, cluster
    try:
        env = fleet_cluster.start(cluster)
    except ToolError as e:
        print(f"the one-node cluster did not start: {e}", file=sys.stderr)
        return 1
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "ci"), str(ROOT / "report"),
                                                      env.get("PYTHONPATH")]))
    try:
        check_fleet(gapbench, work, env)
        check_drained(gapbench, work, env)
    finally:
        stopped = fleet_cluster.stop(cluster)
        print(f"stopped {', '.join(stopped)}")
    assert stopped == ["slurmd", "slurmctld", "munged"], stopped
    print(f"the one-node fleet test took {time.monotonic() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
