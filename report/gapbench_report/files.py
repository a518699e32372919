"""Writing a file whole, for every command and chart: a reader sees the earlier file or the new
one, never half of one."""

from __future__ import annotations

import json
import os
import secrets
import signal
import stat
import threading
from collections.abc import Iterator, Mapping
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


def kind_of(mode: int) -> str | None:
    """What a file of this st_mode is in words ("a FIFO", "a device"), None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    return next((k for test, k in _KINDS.items() if test(mode)), "not a regular file")


def target_of(path: Path) -> Path:
    """Where a write to `path` goes: through a symlink to its target (which is then what gets
    replaced, the link staying a link). Refuses to replace anything but a regular file: a
    device, a FIFO or a folder given as an output is a mistake, never a file to rename over."""
    real = Path(os.path.realpath(path))
    try:
        mode = os.stat(real).st_mode
    except FileNotFoundError:
        return real
    kind = kind_of(mode)
    if kind:
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
    write_atomic_together({path: data})


def write_atomic_together(files: Mapping[Path, str | bytes]) -> None:
    """Writes several files as write_atomic writes one, so that they come from one run or none
    does (a page and its summary): every file is written whole and flushed under its temporary
    name first, and only then are they renamed, one after the other, with the terminating
    signals and SIGINT held off until the last rename is done."""
    targets = {}
    for path, data in files.items():
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        targets[target_of(path)] = data if isinstance(data, bytes) else data.encode("utf-8")
    with removed_on_signal() as made:
        try:
            ready = []
            for target, raw in targets.items():
                tmp = temporary_name(target)
                made.append(str(tmp))
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
                with os.fdopen(fd, "wb") as f:
                    f.write(raw)
                    f.flush()
                    os.fsync(f.fileno())
                ready.append((tmp, target))
            with signals_held():
                for tmp, target in ready:
                    os.replace(tmp, target)
        finally:
            for name in made:
                Path(name).unlink(missing_ok=True)


@contextmanager
def signals_held() -> Iterator[None]:
    """While inside: SIGINT and the terminating signals wait (the main thread only), so that a
    few renames are done all or, if an error stops them, as far as they got."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held = {signal.SIGINT, *TERMINATING_SIGNALS}
    before = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def json_text(data: object) -> str:
    """`data` as the tools write JSON: indented by one, a final newline."""
    return json.dumps(data, indent=1) + "\n"


def write_json_atomic(path: Path, data: object) -> None:
    """`data` as json_text, written as write_atomic writes."""
    write_atomic(path, json_text(data))
