"""A one-node Slurm cluster on this machine, to try a fleet run and to test one (docs/fleet.md).

    python -m gapbench_ci.fleet_cluster start FOLDER    (prints: export SLURM_CONF=...)
    python -m gapbench_ci.fleet_cluster stop FOLDER

Slurm and MUNGE from the distribution (ci/setup --fleet): munged with a key of its own, then
slurmctld -D and slurmd -D from a slurm.conf in FOLDER that names this host (at 127.0.0.1)
with its cores, on two free private ports, with no accounting storage (jobs are followed with
squeue and scontrol). The Unix sockets (munged's, and those slurmd makes for each job step in
its spool folder) live in a short folder of their own, /tmp/gapbench-slurm-<hash of FOLDER>/:
a socket's path may have at most 107 bytes, and FOLDER may be deep. Run as root (slurmd starts
jobs as their user); no systemd needed. `stop` ends exactly the daemons that `start` recorded in
FOLDER/daemons.json, each checked to be still the same program before it is signalled, and
removes the sockets' folder. Exit status: 0 done, 2 with one line otherwise
(Slurm missing, a daemon that did not come up: its log's last line).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

from gapbench_report.cli import kit as commandline
from gapbench_report.cli.kit import ToolError, UsageError

from gapbench_ci import tools
from gapbench_ci.tools import program

PROG = "python -m gapbench_ci.fleet_cluster"
DAEMONS = "daemons.json"
PROGRAMS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "sinfo", "scontrol")
SOCKET_PATH_MAX = 107  # bytes: sun_path holds 108, the last a NUL
SOCKETS_ROOT = Path("/tmp")
# A path slurm.conf can hold as it is (no quoting there).
SLURM_CONF_PATH = re.compile(r"[\w./+@,:=-]+")


def missing_programs() -> list[str]:
    """Slurm's and MUNGE's programs not found here (sbin included: it is off a user's PATH)."""
    return [p for p in PROGRAMS if program(p) == p]


def sockets_folder(folder: Path) -> Path:
    """Where FOLDER's cluster keeps its Unix sockets: short whatever FOLDER's depth, and its own
    (named by a hash of FOLDER's path)."""
    tag = hashlib.sha256(os.fsencode(folder)).hexdigest()[:12]
    return SOCKETS_ROOT / f"gapbench-slurm-{tag}"


def munge_socket(folder: Path) -> Path:
    return sockets_folder(folder) / "munge.socket"


def spool(folder: Path) -> Path:
    """slurmd's spool: it makes a socket there per job step (<host>_<job>.<step>)."""
    return sockets_folder(folder) / "spool"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def slurm_conf(folder: Path, host: str, cpus: int) -> str:
    ctld, slurmd = free_port(), free_port()
    return f"""# A one-node cluster for gapbench's fleet (gapbench_ci.fleet_cluster)
ClusterName=gapbench
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld}
SlurmdPort={slurmd}
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={munge_socket(folder)}
SlurmUser=root
SlurmdUser=root
StateSaveLocation={folder}/state
SlurmdSpoolDir={spool(folder)}
SlurmctldPidFile={folder}/slurmctld.pid
SlurmdPidFile={folder}/slurmd.pid
SlurmctldLogFile={folder}/log/slurmctld.log
SlurmdLogFile={folder}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
MinJobAge=3600
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN
PartitionName=gapbench Nodes={host} Default=YES MaxTime=INFINITE State=UP
"""


def environment(folder: Path) -> dict[str, str]:
    return {**os.environ, "SLURM_CONF": str(folder / "slurm.conf")}


def log_end(path: Path) -> str:
    try:
        lines = [x for x in path.read_text(errors="replace").splitlines() if x.strip()]
    except OSError:
        return "no log"
    return lines[-1].strip() if lines else "an empty log"


def start(folder: Path, timeout: float = 30.0) -> dict[str, str]:
    """Starts munged, slurmctld and slurmd for FOLDER; returns the environment to use them
    (SLURM_CONF). ToolError when Slurm is missing or a daemon does not come up (the daemons
    started are stopped again)."""
    folder = folder.resolve()
    if not SLURM_CONF_PATH.fullmatch(str(folder)):
        raise UsageError(f"{str(folder)!r}: slurm.conf cannot name a folder with spaces, quotes, "
                         "# or control characters in its path; choose another")
    missing = missing_programs()
    if missing:
        raise ToolError(f"Slurm is not installed here (missing {', '.join(missing)}): run "
                        "bash ci/setup --fleet (Debian/Ubuntu packages slurm-wlm, munge)")
    if os.geteuid() != 0:
        raise ToolError("a one-node cluster needs root (slurmd starts jobs as their user)")
    if folder.exists() and any(folder.iterdir()):
        raise ToolError(f"{folder}: not empty; a cluster gets a folder of its own")
    host = socket.gethostname().split(".")[0]
    step_socket = spool(folder) / f"{host}_{2**32 - 1}.{2**32 - 1}"  # the longest a step has
    if len(os.fsencode(step_socket)) > SOCKET_PATH_MAX:
        raise ToolError(f"{step_socket}: a socket path of more than {SOCKET_PATH_MAX} bytes "
                        "(this host's name is too long for slurmd's step sockets)")
    make_sockets_folder(folder)
    for sub in ("munge", "state", "log"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    key = folder / "munge" / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o600)
    (folder / "slurm.conf").write_text(slurm_conf(folder, host, os.cpu_count() or 1))
    commands = {
        "munged": [program("munged"), "--foreground", "--force",
                   f"--socket={munge_socket(folder)}", f"--key-file={key}",
                   f"--pid-file={folder}/munge/munged.pid", f"--seed-file={folder}/munge/seed",
                   f"--log-file={folder}/log/munged.log"],
        "slurmctld": [program("slurmctld"), "-D", "-f", str(folder / "slurm.conf")],
        "slurmd": [program("slurmd"), "-D", "-f", str(folder / "slurm.conf")],
    }
    started: dict[str, int] = {}
    try:
        for name, argv in commands.items():
            with open(folder / "log" / f"{name}.out", "wb") as out:
                started[name] = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                                 stdin=subprocess.DEVNULL,
                                                 start_new_session=True).pid
            (folder / DAEMONS).write_text(json.dumps(started))
            if name == "munged":
                wait_for(lambda: munge_socket(folder).exists(), timeout,
                         f"munged did not start: {log_end(folder / 'log' / 'munged.out')}")
        env = environment(folder)
        wait_for(lambda: node_state(env).startswith("idle"), timeout,
                 f"the node did not come up idle within {timeout:g} s (slurmctld: "
                 f"{log_end(folder / 'log' / 'slurmctld.log')}; slurmd: "
                 f"{log_end(folder / 'log' / 'slurmd.log')})")
    except BaseException:
        stop(folder)
        raise
    return env


def make_sockets_folder(folder: Path) -> None:
    """A fresh sockets_folder(folder), root's, readable by all (a job's user reaches munged
    through it). One left by an earlier cluster of FOLDER that was not stopped is removed;
    anything else there (another user's, a symlink) is refused."""
    short = sockets_folder(folder)
    try:
        info = os.lstat(short)
    except FileNotFoundError:
        info = None
    if info is not None:
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
            raise ToolError(f"{short}: there already, and not this user's folder; remove it")
        shutil.rmtree(short)
    short.mkdir(mode=0o755)
    spool(folder).mkdir()


def remove_sockets_folder(folder: Path) -> None:
    short = sockets_folder(folder)
    if short.is_dir() and not short.is_symlink() and short.stat().st_uid == os.geteuid():
        shutil.rmtree(short, ignore_errors=True)


def node_state(env: dict[str, str]) -> str:
    done = tools.slurm(["sinfo", "-h", "-o", "%t"], env=env)
    return done.out.strip() if done.status == 0 else ""


def wait_for(condition, timeout: float, message: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise ToolError(message)
        time.sleep(0.2)


def same_program(pid: int, folder: Path) -> bool:
    """Whether `pid` is still one of this folder's daemons (a pid can be reused)."""
    try:
        return str(folder) in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return False


def stop(folder: Path, timeout: float = 15.0) -> list[str]:
    """Ends the daemons FOLDER/daemons.json names, slurmd first; returns their names."""
    folder = folder.resolve()
    try:
        daemons = json.loads((folder / DAEMONS).read_text())
    except (OSError, ValueError):
        daemons = {}
    if not isinstance(daemons, dict):
        daemons = {}
    stopped = []
    for name, pid in reversed(list(daemons.items())):
        if isinstance(pid, bool) or not isinstance(pid, int) or not same_program(pid, folder):
            continue
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while same_program(pid, folder) and not reaped(pid):
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                deadline = time.monotonic() + timeout
            time.sleep(0.1)
        stopped.append(name)
    remove_sockets_folder(folder)
    return stopped


def reaped(pid: int) -> bool:
    """Reaps `pid` if it is this process's child and has ended (else it lingers as a zombie,
    whose /proc entry still names the program)."""
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        return done == pid
    except ChildProcessError:  # not our child: init reaps it
        try:
            return Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z")
        except (OSError, IndexError):
            return True


def _run(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("start", "stop"):
        raise commandline.UsageError("usage: start FOLDER | stop FOLDER")
    folder = Path(argv[1])
    if argv[0] == "start":
        env = start(folder)
        print(f"export SLURM_CONF={env['SLURM_CONF']}")
    else:
        names = stop(folder)
        print(f"stopped: {', '.join(names)}" if names else "nothing to stop")
    return 0


def main(argv: list[str] | None = None) -> int:
    return commandline.run(PROG, _run, argv)


if __name__ == "__main__":
    sys.exit(main())
