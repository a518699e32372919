"""No process outlives the command that started it (tools.run, processes.py), whatever ends the
command: SIGTERM, SIGHUP, SIGINT, an exception, SIGKILL; an ended child's leftovers never hold
the command up; what a child prints is kept bounded; a command that cannot start names what is
missing. Each case is docs/faults.md's ("Processes")."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from gapbench_ci import tools
from tests import PYTHONPATH
from tests.checks import process_gone


def script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def read_pid(path: Path, seconds: float = 10) -> int:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        text = path.read_text().strip() if path.exists() else ""
        if text.endswith("."):
            return int(text[:-1])
        time.sleep(0.02)
    pytest.fail(f"{path} was never written")


def kill_if_there(pid: int) -> None:
    """A test that failed must still leave nothing running."""
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


# ---- a child's leftovers never hold the command up --------------------------------------------

@pytest.mark.parametrize("leave", ["setsid sleep 40", "sleep 40"], ids=["setsid", "in-group"])
def test_a_grandchild_holding_the_output_pipe_is_stopped_and_never_waited_on(tmp_path, capfd,
                                                                             leave):
    """The issue's case: `sh -c "setsid sleep 40 & echo hi"` returned only at its limit, with a
    false "still running ... stopped", and left the sleep running."""
    pid = tmp_path / "pid"
    start = time.monotonic()
    done = tools.run(["sh", "-c", f"{leave} & echo $! > {pid}.tmp; mv {pid}.tmp {pid}; "
                                  f"echo hi"], limit=8)
    took = time.monotonic() - start
    grandchild = int(pid.read_text())
    try:
        assert (done.status, done.out) == (0, "hi\n")
        assert took < 6, f"run() waited {took:.1f} s on a grandchild"
        process_gone(grandchild, "the command that started it")
        err = capfd.readouterr().err
        assert "ended and left" in err and "running: stopped" in err, err
    finally:
        kill_if_there(grandchild)


def test_sigkill_follows_sigterm_even_when_the_leader_died_of_it(tmp_path):
    """The leader dies of SIGTERM at once; a member of its group ignores SIGTERM. It was left
    running: SIGKILL went only to a group whose leader was still there."""
    pid = tmp_path / "pid"
    stubborn = script(tmp_path / "stubborn",
                      f"sh -c 'trap \"\" TERM; echo $$. > {pid}; while :; do sleep 0.1; done' &\n"
                      "sleep 60\n")
    with pytest.raises(tools.TimedOut):
        tools.run([stubborn], "stubborn", 1, stdout="discard")
    member = read_pid(pid)
    try:
        process_gone(member, "its group's SIGKILL")
    finally:
        kill_if_there(member)


# ---- whatever ends the command, the child goes with it ----------------------------------------

RUNNER = textwrap.dedent("""
    import sys
    from gapbench_ci import tools
    from gapbench_report.cli import kit as commandline
    def body(argv):
        tools.run([argv[0]], "the child", 60, stdout="discard")
        return 0
    sys.exit(commandline.run("prog", body, sys.argv[1:]))
""")


def start_parent(tmp_path: Path, child_body: str) -> tuple[subprocess.Popen, Path, Path]:
    """A Python process running `child_body` through tools.run as a command does; the child
    writes its pid and that of a process it started in its group into files."""
    child_pid, grandchild_pid = tmp_path / "child.pid", tmp_path / "grandchild.pid"
    child = script(tmp_path / "child", f"sleep 60 & echo $!. > {grandchild_pid}\n"
                                       f"echo $$. > {child_pid}\n{child_body}\n")
    parent = subprocess.Popen([sys.executable, "-c", RUNNER, str(child)],
                              env={**os.environ, "PYTHONPATH": PYTHONPATH},
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return parent, child_pid, grandchild_pid


@pytest.mark.parametrize("sig, status, line", [
    (signal.SIGTERM, -signal.SIGTERM, "prog: stopped by SIGTERM"),
    (signal.SIGHUP, -signal.SIGHUP, "prog: stopped by SIGHUP"),
    (signal.SIGINT, 130, "prog: interrupted"),
])
def test_the_child_and_what_it_started_stop_with_the_command(tmp_path, sig, status, line):
    """A cancelled CI job (SIGTERM), a closed terminal (SIGHUP), Ctrl-C: SIGTERM and SIGHUP
    ended the command at once, and its child, in a session of its own, ran on."""
    parent, child_pid, grandchild_pid = start_parent(tmp_path, "wait")
    child, grandchild = read_pid(child_pid), read_pid(grandchild_pid)
    try:
        parent.send_signal(sig)
        _, err = parent.communicate(timeout=20)
        assert parent.returncode == status
        assert err.splitlines() == [line]
        process_gone(child, "its command")
        process_gone(grandchild, "its command")
    finally:
        for pid in (child, grandchild):
            kill_if_there(pid)


def test_the_child_dies_with_a_sigkilled_command(tmp_path):
    """SIGKILL (the OOM killer, kill -9) reaches no handler: the child is told by the kernel
    (PR_SET_PDEATHSIG). What the child itself started is beyond it; so the child here is one
    program, as gapbench is."""
    child_pid = tmp_path / "child.pid"
    child = script(tmp_path / "child", f"echo $$. > {child_pid}\nexec sleep 60\n")
    parent = subprocess.Popen([sys.executable, "-c", RUNNER, str(child)],
                              env={**os.environ, "PYTHONPATH": PYTHONPATH},
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    pid = read_pid(child_pid)
    try:
        time.sleep(0.2)  # past the exec
        parent.kill()
        parent.communicate(timeout=20)
        process_gone(pid, "its SIGKILLed command")
    finally:
        kill_if_there(pid)


def test_an_exception_in_the_command_stops_the_child(tmp_path):
    pid = tmp_path / "pid"
    child = script(tmp_path / "child", f"echo $$. > {pid}\nsleep 60\n")

    def fail(_signum, _frame):
        raise RuntimeError("a bug while it ran")

    before = signal.signal(signal.SIGALRM, fail)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.5)
        with pytest.raises(RuntimeError, match="a bug"):
            tools.run([child], limit=30)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)
    process_gone(read_pid(pid), "the failed command")


def test_the_issues_baseline_cut_off_by_timeout_leaves_no_gapbench(tmp_path):
    """`timeout -s TERM 4 ci/baseline ...` left gapbench running under PID 1, outside the
    folder's lock. Here with a fake gapbench whose run takes an hour, and SIGTERM sent as
    timeout sends it, once the run has started (a loaded machine may take seconds to get
    there)."""
    from tests.fakes import make_fake
    pid = tmp_path / "gapbench.pid"
    fake = make_fake(tmp_path / "bin", "gapbench", hang=".")
    wrapper = script(tmp_path / "bin" / "slow-gapbench",
                     f'case "$*" in *benchmark_out*) echo $$. > {pid};; esac\nexec {fake} "$@"\n')
    command = [str(Path(__file__).parents[1] / "baseline"), "t", "--binary", str(wrapper),
               "--out-dir", str(tmp_path / "out")]
    log = tmp_path / "stderr"
    with log.open("w") as err:  # a file: a leaked gapbench would hold a pipe open
        baseline = subprocess.Popen(command, stderr=err)
    gapbench = None
    try:
        gapbench = read_pid(pid, 60)
        baseline.send_signal(signal.SIGTERM)
        assert baseline.wait(timeout=30) == -signal.SIGTERM
        assert log.read_text().splitlines()[-1] == "ci/baseline: stopped by SIGTERM"
        process_gone(gapbench, "ci/baseline")
        assert not list((tmp_path / "out").glob(".*"))  # its hidden run file removed too
    finally:
        baseline.kill()
        if gapbench is not None:
            kill_if_there(gapbench)


# ---- bounded output ----------------------------------------------------------------------------

MEMORY = textwrap.dedent("""
    import resource, sys
    from gapbench_ci import tools
    command = ["sh", "-c", sys.argv[1]]
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    try:
        done = tools.run(command, limit=60, ok=None)
        print(len(done.out), len(done.err), repr(done.last))
    except tools.CommandFailed as e:
        print("failed:", e)
    # MiB that run() added to the peak, whatever the interpreter held before it
    print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)
""")


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_a_flood_of_output_keeps_memory_bounded(stream):
    """300 MB of output: it was held whole (1 GB gave 2.9 GB of RSS)."""
    flood = "head -c 300000000 /dev/zero | tr '\\0' x" + (" >&2" if stream == "stderr" else "")
    done = subprocess.run([sys.executable, "-c", MEMORY, f"{flood}; echo the end >&2"],
                          env={**os.environ, "PYTHONPATH": PYTHONPATH}, capture_output=True,
                          text=True, timeout=120, check=True)
    *answer, rss = done.stdout.splitlines()
    assert int(rss) < 150, f"{rss} MiB more held for 300 MB of {stream}"
    if stream == "stdout":  # a runaway answer: stopped, a failure
        assert answer == ["failed: sh -c 'head -c 300000000 /dev/zero | tr '\"'\"'\\0'\"'\"' x; "
                          "echo the end >&2' printed more than 32 MiB, more than any "
                          "answer it gives: stopped"], answer
    else:  # its end kept, and the last line as ever
        out, err, last = answer[0].split(" ", 2)
        assert out == "0" and last.endswith("the end'") and int(err) <= 128 * 1024, answer


# ---- what is missing, named ------------------------------------------------------------------

def test_a_command_that_cannot_start_names_what_is_missing(tmp_path):
    """"X not found: bash ci/setup installs it" was said of all four."""
    with pytest.raises(tools.CommandFailed, match="^no-such-tool not found: bash ci/setup "):
        tools.run(["no-such-tool"])
    orphan = script(tmp_path / "orphan", "")
    orphan.write_text("#!/no/such/python3\nprint()\n")
    with pytest.raises(tools.CommandFailed, match=f"^it: cannot run {orphan}: its interpreter "
                                                  r"/no/such/python3 \(its #! line\) is not "
                                                  "there$"):
        tools.run([orphan], "it")
    with pytest.raises(tools.CommandFailed, match=f"^it: cannot run in {tmp_path}/gone: no "
                                                  "such folder$"):
        tools.run(["true"], "it", cwd=tmp_path / "gone")
    with pytest.raises(tools.CommandFailed, match=f"^{tmp_path}/bin/gapbench not found: no "
                                                  "such file$"):
        tools.run([tmp_path / "bin" / "gapbench"], "it")
