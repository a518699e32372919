"""Writing a file whole, for every command and chart: a reader sees the earlier file or the new
one, never half of one."""

from __future__ import annotations

import json
import os
import secrets
import signal
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# Signals whose default action ends the process and that a handler can catch. SIGINT is not
# among them: Python raises KeyboardInterrupt for it, and the write's `finally` cleans up.
TERMINATING_SIGNALS = tuple(getattr(signal, name) for name in (
    "SIGHUP", "SIGQUIT", "SIGTERM", "SIGUSR1", "SIGUSR2", "SIGALRM", "SIGPIPE", "SIGXCPU",
    "SIGXFSZ", "SIGVTALRM", "SIGPROF") if hasattr(signal, name))
# Bytes of the target's name kept in the temporary file's name: a target name of up to
# NAME_MAX (255) bytes must still leave room for the temporary name's prefix and suffix.
NAME_KEPT = 100
_KINDS = {stat.S_ISDIR: "a directory", stat.S_ISFIFO: "a FIFO", stat.S_ISCHR: "a device",
          stat.S_ISBLK: "a device", stat.S_ISSOCK: "a socket"}


def target_of(path: Path) -> Path:
    """Where a write to `path` goes: through a symlink to its target (which is then what gets
    replaced, the link staying a link). Refuses to replace anything but a regular file: a
    device, a FIFO or a folder given as an output is a mistake, never a file to rename over."""
    real = Path(os.path.realpath(path))
    try:
        mode = os.stat(real).st_mode
    except FileNotFoundError:
        return real
    if not stat.S_ISREG(mode):
        kind = next((k for test, k in _KINDS.items() if test(mode)), "not a regular file")
        raise OSError(f"{path} is {kind}, not a regular file: not replaced")
    return real


@contextmanager
def removed_on_signal() -> Iterator[list[str]]:
    """While inside: a terminating signal removes the files named in the yielded list, then
    ends the process as it would have ended without this (signals that are ignored stay
    ignored). Signal handlers belong to the main thread; elsewhere nothing changes."""
    made: list[str] = []
    if threading.current_thread() is not threading.main_thread():
        yield made
        return

    def remove_and_end(signum, _frame):
        for name in made:
            try:
                os.unlink(name)
            except OSError:
                pass
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    taken = [s for s in TERMINATING_SIGNALS if signal.getsignal(s) == signal.SIG_DFL]
    for s in taken:
        signal.signal(s, remove_and_end)
    try:
        yield made
    finally:
        for s in taken:
            signal.signal(s, signal.SIG_DFL)


def temporary_name(target: Path) -> Path:
    """A name beside `target` that no other writer uses: .NAME.PID.RANDOM.tmp, NAME cut short."""
    stem = os.fsencode(target.name)[:NAME_KEPT].decode("utf-8", "ignore")
    return target.with_name(f".{stem}.{os.getpid()}.{secrets.token_hex(4)}.tmp")


def write_atomic(path: Path, data: str | bytes) -> None:
    """Writes `data` (text as UTF-8) to `path`, creating its folder: under a temporary name
    beside it, flushed to the disk, then renamed over it. A failure or a terminating signal
    leaves the earlier file as it was, and the temporary file is removed."""
    write_together({Path(path): data})


def write_together(contents: dict[Path, str | bytes]) -> None:
    """Writes several files as write_atomic writes one, as a set: every file first under its
    temporary name, flushed to the disk, and only then each renamed over its target. A failure
    or a terminating signal while they are written leaves every target as it was, and the
    temporary files are removed (what remains is a rename, which needs no space)."""
    staged: list[tuple[Path, Path]] = []
    with removed_on_signal() as made:
        try:
            for path, data in contents.items():
                path = Path(path)
                path.parent.mkdir(parents=True, exist_ok=True)
                target = target_of(path)
                raw = data if isinstance(data, bytes) else data.encode("utf-8")
                tmp = temporary_name(target)
                made.append(str(tmp))
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
                staged.append((tmp, target))
                with os.fdopen(fd, "wb") as f:
                    f.write(raw)
                    f.flush()
                    os.fsync(f.fileno())
            for tmp, target in staged:
                os.replace(tmp, target)
        finally:
            for tmp, _ in staged:
                tmp.unlink(missing_ok=True)


def write_json_atomic(path: Path, data: object) -> None:
    """`data` as JSON (indented by one, a final newline), written as write_atomic writes."""
    write_atomic(path, json.dumps(data, indent=1) + "\n")
