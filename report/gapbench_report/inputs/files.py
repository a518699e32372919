"""Reading an input file within a limit (read_bounded), and writing a file whole, for every
command and chart: a reader sees the earlier file or the new one, never half of one; a folder of
outputs replaced as one set (OutputSet)."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import secrets
import select
import shutil
import signal
import stat
import threading
import time
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


# ---- reading ---------------------------------------------------------------------------------

# How long a pipe (`--baseline <(...)`, /dev/stdin) may take to deliver the whole file: its
# writer is another process, which may stall for ever.
PIPE_SECONDS = 60.0
MIB = 2**20


class InputError(OSError):
    """An input that read_bounded refuses; str() is one line without the path (the caller names
    it)."""

    def __init__(self, text: str):
        super().__init__(errno.EINVAL, text)

    def __str__(self) -> str:
        return self.strerror


def read_bounded(path: str | Path, limit_bytes: int, what: str, pipes: bool = True,
                 pipe_seconds: float = PIPE_SECONDS) -> bytes:
    """The bytes of `path`, a regular file or a pipe, of at most `limit_bytes`; `what` names the
    kind of file in the messages ("results file"). Refused in one line (InputError) without being
    read past the limit: a file larger than it (told by its size, before any byte is read), a
    device, a socket or a folder (never opened: a device may never end, or act on being opened),
    and a pipe or FIFO that is written past the limit, that has no writer when it is opened (so
    nothing ever waits on a FIFO nobody writes), or whose writer takes longer than
    `pipe_seconds` to finish; without `pipes`, any pipe or FIFO (never opened). Other errors (no
    such file, no permission) are the OS's."""
    kind = kind_of(os.stat(path).st_mode)
    if kind not in (None, "a FIFO") or (kind and not pipes):
        raise InputError(f"{kind}, not a regular file")
    # O_NONBLOCK: opening a FIFO never waits for a writer; a regular file ignores it.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb", buffering=0) as f:
        info = os.fstat(fd)
        kind = kind_of(info.st_mode)  # what was opened, if it was replaced since the stat
        if kind is None:
            if info.st_size > limit_bytes:
                raise InputError(too_large(info.st_size, limit_bytes, what))
            os.set_blocking(fd, True)
            chunks, size = [], 0
            while chunk := f.read(limit_bytes + 1 - size):  # one that grows stops at the limit
                chunks.append(chunk)
                size += len(chunk)
                if size > limit_bytes:
                    break
            data = b"".join(chunks)
            if len(data) > limit_bytes:
                raise InputError(too_large(len(data), limit_bytes, what, at_least=True))
            return data
        if kind != "a FIFO" or not pipes:
            raise InputError(f"{kind}, not a regular file")
        return read_pipe(fd, limit_bytes, what, pipe_seconds)


def read_pipe(fd: int, limit_bytes: int, what: str, seconds: float) -> bytes:
    """A pipe's bytes to its end, within the limit and the time; opened without blocking."""
    chunks, size = [], 0
    deadline = time.monotonic() + seconds
    first = True
    while True:
        try:
            chunk = os.read(fd, min(MIB, limit_bytes + 1 - size))
        except BlockingIOError:  # a writer, nothing written yet
            chunk = None
        if chunk == b"":
            if first:  # nobody had it open for writing, or its writer wrote nothing
                raise InputError("a FIFO or pipe with no writer (nothing was written to it)")
            return b"".join(chunks)
        first = False
        if chunk:
            chunks.append(chunk)
            size += len(chunk)
            if size > limit_bytes:
                raise InputError(too_large(size, limit_bytes, what, at_least=True))
            continue
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise InputError(f"a pipe whose writer did not finish within {seconds:g} s "
                             f"({size:,} bytes read)")


def too_large(size: int, limit: int, what: str, at_least: bool = False) -> str:
    return (f"{'at least ' if at_least else ''}{size_words(size)}, over the limit of "
            f"{size_words(limit)} for a {what}")


def size_words(n: int) -> str:
    return f"{n / MIB:,.1f}".removesuffix(".0") + " MiB" if n >= MIB else f"{n:,} bytes"


# ---- writing ---------------------------------------------------------------------------------

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


# ---- a folder of outputs, replaced as one set -------------------------------------------------

SET_RECORD = ".gapbench-output-set.json"  # the names of the files of the set last written
STAGING = ".gapbench-staging-"  # + random: where a set's charts are drawn before they replace


class FolderBusy(OSError):
    """Another command holds the folder's lock; str() is the one line to show."""

    def __str__(self) -> str:
        return self.strerror


class OutputSet:
    """A command's outputs in `folder` (a page, its summary, its JSON and its charts), replaced as
    one set: while inside, the folder is locked (a second command writing into it is refused,
    FolderBusy, rather than mixing its files with this one's), and the charts are made in a
    hidden staging folder (`staging`). replace() then writes them and the pages beside them with
    write_atomic_together, and removes the files of the set before that this one does not have
    (SET_RECORD names them; `stale` are the names of files an older version may have left,
    fnmatch patterns). A command that fails or is stopped before replace() leaves the earlier set
    as it was; its staging folder is removed on the way out, or by the next command."""

    def __init__(self, folder: Path, command: str, stale: tuple[str, ...] = ()):
        self.folder = Path(folder)
        self.command = command
        self.stale = stale
        self.staging = self.folder
        self._lock: int | None = None

    def __enter__(self) -> OutputSet:
        if self.folder.exists() and not self.folder.is_dir():
            raise OSError(errno.ENOTDIR, f"{self.folder}: exists and is not a directory")
        self.folder.mkdir(parents=True, exist_ok=True)
        # The lock is the folder's own (flock on it): no lock file to leave behind.
        fd = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise FolderBusy(errno.EBUSY, f"{self.folder}: another {self.command} is writing "
                                          "into this folder now; run this one when it has "
                                          "finished, or give another --out") from None
        self._lock = fd
        for left in self.folder.glob(f"{STAGING}*"):  # a killed command's: none runs now
            shutil.rmtree(left, ignore_errors=True)
        self.staging = self.folder / f"{STAGING}{os.getpid()}.{secrets.token_hex(4)}"
        self.staging.mkdir()
        return self

    def __exit__(self, *_) -> None:
        shutil.rmtree(self.staging, ignore_errors=True)
        if self._lock is not None:
            os.close(self._lock)  # the lock goes with it
            self._lock = None

    def previous(self) -> set[str]:
        """The names of the set last written here (SET_RECORD), as far as it can be read."""
        try:
            names = json.loads(read_bounded(self.folder / SET_RECORD, MIB, "set record",
                                            pipes=False))
        except (OSError, ValueError):
            return set()
        return {n for n in names if plain_name(n)} if isinstance(names, list) else set()

    def replace(self, pages: Mapping[str, str | bytes]) -> list[str]:
        """Writes the staged files and `pages` (file name -> content) into the folder as one set,
        then removes what an earlier set had that this one has not. Returns the set's names."""
        files: dict[str, str | bytes] = {p.name: p.read_bytes()
                                         for p in sorted(self.staging.iterdir())
                                         if p.is_file() and plain_name(p.name)}
        files.update(pages)
        names = sorted(files)
        before = self.previous()
        write_atomic_together({self.folder / n: data for n, data in files.items()}
                              | {self.folder / SET_RECORD: json_text(names)})
        gone = before | {p.name for pattern in self.stale for p in self.folder.glob(pattern)}
        for name in sorted(gone - set(names)):
            if plain_name(name) and (self.folder / name).is_file():
                try:
                    (self.folder / name).unlink()
                except OSError:
                    pass  # gone meanwhile, or not ours to remove: the new set is whole
        return names


def plain_name(name: object) -> bool:
    """A file name of the folder itself that a set may hold: no path, not hidden."""
    return isinstance(name, str) and name not in ("", ".", "..") and "/" not in name \
        and "\0" not in name and not name.startswith(".")
