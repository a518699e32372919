"""The processes gapbench_ci starts, and that none of them outlives the command: tools.run()'s
machinery.

- A child starts in a process group (and session) of its own, so that everything it starts can
  be stopped together; and with Linux's parent-death signal (prctl PR_SET_PDEATHSIG), so that it
  is killed even when this process is (SIGKILL, the OOM killer), which no handler can see. The
  kernel sends that signal when the *thread* that started the child ends: run() waits for its
  child in that thread, so the thread outlives it. Only the child itself gets it; what the child
  started is reached through its group on every other way out.
- While a child runs, SIGTERM and SIGHUP (a cancelled CI job, `timeout`, a closed terminal)
  raise cli.kit.Terminated in the main thread, as SIGINT raises KeyboardInterrupt: the child
  and its group are stopped on the way out, and the command then ends by that signal.
- Its output is read as it comes and kept bounded: stdout up to OUT_LIMIT (a query's answer;
  more is a runaway, stopped), stderr's last TAIL_BYTES (its last line is what is shown).
- When the child has ended, what it left behind is stopped: the rest of its group, and any
  process that still holds its output pipes (a grandchild that left the group with setsid):
  the command's end is never a wait on them. Each is named on stderr.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from gapbench_report.cli.kit import Terminated

# Seconds between asking a group to stop (SIGTERM) and making it (SIGKILL).
STOP_GRACE_S = 5
# Seconds to read what an ended child's pipes still hold before looking for who holds them.
DRAIN_S = 0.2
OUT_LIMIT = 32 << 20  # bytes of captured stdout: a benchmark list or doctor's JSON is < 1 MiB
TAIL_BYTES = 64 << 10  # bytes of stderr kept: its end
CHUNK = 1 << 16
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
# The signals that end this process while a child runs, turned into Terminated.
ENDING = tuple(getattr(signal, n) for n in ("SIGTERM", "SIGHUP") if hasattr(signal, n))


class TooMuchOutput(Exception):
    """The child printed more than OUT_LIMIT on a captured stdout; it has been stopped."""


def _prctl():
    """libc's prctl, looked up before any fork (the child only calls it), None off Linux."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _prctl()


def in_child(parent: int, mask: set[int]):
    """The preexec_fn: the signal mask this process had (start() blocks some while it forks),
    and, on Linux, the child killed when `parent` dies (a parent that died before the prctl is
    caught by its pid)."""

    def prepare() -> None:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        if _PRCTL is not None:
            _PRCTL(PR_SET_PDEATHSIG, signal.SIGKILL)
            if os.getppid() != parent:
                os._exit(128 + signal.SIGKILL)

    return prepare


@contextmanager
def ending_signals_raise() -> Iterator[None]:
    """While inside (the main thread only: handlers belong to it): SIGTERM and SIGHUP raise
    Terminated, unless they were ignored (nohup), which they stay."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def raise_terminated(signum, _frame):
        raise Terminated(signum)

    taken = {s: signal.getsignal(s) for s in ENDING if signal.getsignal(s) == signal.SIG_DFL}
    for s in taken:
        signal.signal(s, raise_terminated)
    try:
        yield
    finally:
        for s, before in taken.items():
            signal.signal(s, before)


def start(argv: list[str], input: bytes | None, **popen) -> tuple[subprocess.Popen, Reader]:
    """Popen in a session of its own, killed when this process dies, and the Reader of its
    pipes. SIGINT, SIGTERM and SIGHUP wait while it forks: one that came after the fork and
    before Popen returned would leave a child that nothing knows of; it is raised here once
    the child is known, and stops it."""
    held = {signal.SIGINT, *ENDING}
    before = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    process = reader = None
    try:
        process = subprocess.Popen(argv, start_new_session=True,
                                   preexec_fn=in_child(os.getpid(), before), **popen)
        reader = Reader(process, input)
    finally:
        try:
            signal.pthread_sigmask(signal.SIG_SETMASK, before)  # what came meanwhile: now
        except BaseException:
            if process is not None:
                end_everything(process, reader or Reader(process, None))
            raise
    return process, reader


# ---- its output ----------------------------------------------------------------------------

class Reader:
    """Reads a child's stdout and stderr pipes (and writes its input) as they come, keeping
    stdout up to OUT_LIMIT and stderr's last TAIL_BYTES."""

    def __init__(self, process: subprocess.Popen, input: bytes | None):
        self.process = process
        self.out, self.err = bytearray(), bytearray()
        self.selector = selectors.DefaultSelector()
        for stream, keep in ((process.stdout, self.out), (process.stderr, self.err)):
            if stream is not None:
                self.selector.register(stream, selectors.EVENT_READ, keep)
        self.input = memoryview(input or b"")
        if process.stdin is not None:
            if input:
                os.set_blocking(process.stdin.fileno(), False)
                self.selector.register(process.stdin, selectors.EVENT_WRITE, None)
            else:
                process.stdin.close()

    def open(self) -> bool:
        return bool(self.selector.get_map())

    def pipes(self) -> list[int]:
        return [key.fd for key in self.selector.get_map().values()]

    def step(self, timeout: float) -> None:
        """Waits up to `timeout` s for output (or room for input) and takes what came."""
        for key, _ in self.selector.select(max(timeout, 0)):
            if key.data is None:
                self._write(key)
                continue
            chunk = os.read(key.fd, CHUNK)
            if not chunk:
                self._close(key)
            elif key.data is self.out:
                if len(self.out) > OUT_LIMIT:  # said once; what comes after is dropped
                    continue
                self.out += chunk
                if len(self.out) > OUT_LIMIT:
                    raise TooMuchOutput
            else:
                self.err += chunk
                if len(self.err) > 2 * TAIL_BYTES:
                    del self.err[:-TAIL_BYTES]  # its first line may now be cut short

    def _write(self, key) -> None:
        try:
            written = os.write(key.fd, self.input[:CHUNK])
        except BrokenPipeError:  # it stopped reading: the rest of the input is not needed
            written = len(self.input)
        self.input = self.input[written:]
        if not self.input:
            self._close(key)

    def _close(self, key) -> None:
        self.selector.unregister(key.fileobj)
        with contextlib.suppress(OSError):
            key.fileobj.close()

    def drain(self, seconds: float) -> None:
        """Reads for up to `seconds`, until every pipe is at its end."""
        deadline = time.monotonic() + seconds
        while self.open() and time.monotonic() < deadline:
            self.step(deadline - time.monotonic())

    def close(self) -> None:
        for key in list(self.selector.get_map().values()):
            self._close(key)
        self.selector.close()

    def text(self) -> tuple[str, str]:
        return self.out.decode(errors="replace"), self.err.decode(errors="replace")


def wait(process: subprocess.Popen, reader: Reader, deadline: float) -> bool:
    """Reads its output until it ends (True) or the deadline passes (False)."""
    while process.poll() is None:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        if reader.open():
            reader.step(min(left, 0.1))
        else:
            try:
                process.wait(min(left, 0.5))
            except subprocess.TimeoutExpired:
                pass
    return True


# ---- stopping it and what it left -----------------------------------------------------------

def group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:  # a member changed its user: still there
        return True


def stop_group(process: subprocess.Popen, grace: float | None = None) -> bool:
    """Ends the child's process group (its leader is the child): SIGTERM, then SIGKILL to what
    is left after `grace` s, whether or not the leader went at the first (a member that ignores
    SIGTERM must not stay). True when anything of the group was still there to stop."""
    grace = STOP_GRACE_S if grace is None else grace
    group = process.pid
    try:
        os.killpg(group, signal.SIGTERM)
    except ProcessLookupError:
        process.poll()
        return False
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        process.poll()  # the leader reaped, so that it no longer counts as a member
        if not group_alive(group):
            return True
        time.sleep(0.02)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(grace)
    return True


def pipe_holders(fds: list[int]) -> list[int]:
    """The processes, other than this one, that hold an end of one of these pipes (Linux:
    /proc/PID/fd); [] where /proc cannot say."""
    wanted = set()
    for fd in fds:
        with contextlib.suppress(OSError):
            wanted.add(f"pipe:[{os.fstat(fd).st_ino}]")
    holders = []
    try:
        pids = [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()]
    except OSError:
        return []
    for pid in pids:
        if pid == os.getpid():
            continue
        try:
            links = {os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}
        except OSError:  # gone, or not ours to read
            continue
        if links & wanted:
            holders.append(pid)
    return holders


def kill_all(pids: list[int], grace: float | None = None) -> None:
    """SIGTERM to each, SIGKILL to those still there after `grace` s."""
    grace = STOP_GRACE_S if grace is None else grace
    for sig in (signal.SIGTERM, signal.SIGKILL):
        alive = []
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
                alive.append(pid)
        deadline = time.monotonic() + grace
        while sig == signal.SIGTERM and alive and time.monotonic() < deadline:
            alive = [p for p in alive if _exists(p)]
            time.sleep(0.02)
        pids = alive
        if not pids:
            return


def _exists(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().split(b") ", 1)[-1][:1] != b"Z"  # a zombie has ended
    except OSError:
        return False


def end_everything(process: subprocess.Popen, reader: Reader) -> list[str]:
    """Stops the child's group and every process still holding its pipes; returns what was
    left behind, in words, for the caller to name (empty when the child left nothing)."""
    left = []
    if stop_group(process):
        left.append("processes of its group")
    reader.drain(DRAIN_S)
    if reader.open():
        holders = pipe_holders(reader.pipes())
        if holders:
            kill_all(holders)
            left.append("process(es) " + ", ".join(map(str, holders)) + " holding its output "
                        "(started outside its group)")
        reader.drain(DRAIN_S)
    reader.close()
    return left


def after_end(process: subprocess.Popen, reader: Reader, what: str) -> None:
    """The child has ended: reads its output's end, then stops what it left running, said on
    stderr (a grandchild holding its output pipe would otherwise hold the command up)."""
    reader.drain(DRAIN_S)
    if not reader.open() and not group_alive(process.pid):
        reader.close()
        return
    left = end_everything(process, reader)
    if left:
        print(f"gapbench-ci: {what} ended and left {' and '.join(left)} running: stopped",
              file=sys.stderr, flush=True)
