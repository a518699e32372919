"""Google Benchmark's JSON, as gapbench writes it with Debian's Google Benchmark 1.7: one entry per
repetition, then the aggregates (mean, median, stddev, cv) where two or more repetitions ran; a
skip is an error whose message starts "skipped: " (1.7 has no skips of its own), any other error
is a failure. Written whole or not at all: a temporary file beside the target, then renamed."""

from __future__ import annotations

import errno
import json
import os
import secrets
import signal
import stat
import statistics
import threading
from pathlib import Path

from gapbench_probe.timing import Repetition

SKIP_PREFIX = "skipped: "
NS = 1e9


def _head(name: str, index: int) -> dict:
    return {"name": name, "family_index": index, "per_family_instance_index": 0,
            "run_name": name}


def iteration_entries(name: str, index: int, reps: list[Repetition],
                      work: dict[str, float]) -> list[dict]:
    """One entry per repetition; `work` per call becomes rates over its real time."""
    entries = []
    for i, rep in enumerate(reps):
        entry = {**_head(name, index), "run_type": "iteration",
                 "repetitions": len(reps), "repetition_index": i, "threads": 1,
                 "iterations": rep.iterations, "real_time": rep.real * NS,
                 "cpu_time": rep.cpu * NS, "time_unit": "ns"}
        entry.update({k: amount / rep.real for k, amount in work.items()})
        entry.update(rep.counters)
        entries.append(entry)
    return entries


def _stat(kind: str, values: list[float]) -> float:
    mean = statistics.fmean(values)
    if kind == "mean":
        return mean
    if kind == "median":
        return statistics.median(values)
    stddev = statistics.stdev(values)
    return stddev if kind == "stddev" else (stddev / mean if mean else 0.0)


def aggregate_entries(iterations: list[dict]) -> list[dict]:
    """mean, median, stddev and cv of the times and of every counter, as Google Benchmark adds
    them after a benchmark's repetitions (none for fewer than two)."""
    if len(iterations) < 2:
        return []
    first = iterations[0]
    counters = [k for k in first if k not in _ITERATION_KEYS]
    out = []
    for kind in ("mean", "median", "stddev", "cv"):
        entry = {"name": f"{first['run_name']}_{kind}", "family_index": first["family_index"],
                 "per_family_instance_index": 0, "run_name": first["run_name"],
                 "run_type": "aggregate", "repetitions": len(iterations), "threads": 1,
                 "aggregate_name": kind, "aggregate_unit": "percentage" if kind == "cv" else "time",
                 "iterations": len(iterations)}
        for key in ("real_time", "cpu_time"):
            entry[key] = _stat(kind, [e[key] for e in iterations])
        entry["time_unit"] = "ns"
        for key in counters:
            entry[key] = _stat(kind, [e[key] for e in iterations])
        out.append(entry)
    return out


_ITERATION_KEYS = {"name", "family_index", "per_family_instance_index", "run_name", "run_type",
                   "repetitions", "repetition_index", "threads", "iterations", "real_time",
                   "cpu_time", "time_unit"}


def error_entries(name: str, index: int, repetitions: int, message: str) -> list[dict]:
    """Every repetition as an error: a skip when `message` starts "skipped: ", else a failure."""
    return [{**_head(name, index), "run_type": "iteration",
             "repetitions": repetitions, "repetition_index": i, "threads": 1,
             "error_occurred": True, "error_message": message, "iterations": 0,
             "real_time": 0.0, "cpu_time": 0.0, "time_unit": "ns"}
            for i in range(repetitions)]


# Signals whose default action ends the process and that a handler can catch (SIGINT raises
# KeyboardInterrupt, and `finally` cleans up).
TERMINATING_SIGNALS = tuple(getattr(signal, name) for name in (
    "SIGHUP", "SIGQUIT", "SIGTERM", "SIGUSR1", "SIGUSR2", "SIGALRM", "SIGPIPE", "SIGXCPU",
    "SIGXFSZ", "SIGVTALRM", "SIGPROF") if hasattr(signal, name))
NAME_KEPT = 100  # bytes of the target's name in the temporary name (NAME_MAX is 255)


def write_atomic(path: Path, data: dict) -> None:
    """`data` as JSON into `path`: under a temporary name beside it (.NAME.PID.RANDOM.tmp),
    flushed to the disk, then renamed over it; a failure or a terminating signal leaves the
    earlier file as it was, and the temporary file is removed. Through a symlink the target is
    what gets replaced; anything but a regular file (a FIFO, a device, a symlink loop) is
    refused. Its folder is made where missing. As the report's files.py, by one contract test
    (tests/test_atomic_writer_contract.py)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    target = Path(os.path.realpath(path))
    try:
        regular = stat.S_ISREG(os.stat(target).st_mode)
    except FileNotFoundError:
        regular = True  # nothing there yet
    if not regular:
        raise OSError(errno.EINVAL, "not a regular file: not replaced", str(path))
    stem = os.fsencode(target.name)[:NAME_KEPT].decode("utf-8", "ignore")
    tmp = target.with_name(f".{stem}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    raw = (json.dumps(data, indent=1) + "\n").encode("utf-8")

    def remove_and_end(signum, _frame):
        tmp.unlink(missing_ok=True)
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    main = threading.current_thread() is threading.main_thread()  # where handlers may be set
    taken = [s for s in TERMINATING_SIGNALS
             if main and signal.getsignal(s) == signal.SIG_DFL]
    for s in taken:
        signal.signal(s, remove_and_end)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
        for s in taken:
            signal.signal(s, signal.SIG_DFL)
