"""Reading a fleet folder: DIR/<host>/ per node (or DIR/<host>.<task>/ where tasks shared a
host), each with gapbench's results files (*.json), doctor.json (`gapbench doctor --json`),
gapbench.log and, from `gapbench-ci fleet submit`, task.json (the task's exit status).

A fleet of 1,000 nodes holds gigabytes of JSON, so each results file is read once into a Node's
medians: the document and its context are checked by results.check_document, each name by
results.parse_name, each time by results.is_time, as load_results checks them, but no Entry or
Benchmark is built (load_results would take minutes there). A node folder that cannot be read
(empty, truncated, crashed) becomes a Node with its `problems`, never an exception: the rest of
the fleet still renders. Nodes are read in parallel, one process per core, and each node's
reading is kept beside its files (DIGEST), to be used again while none of them has changed:
each task of `gapbench-ci fleet submit` digests its own folder as it ends (where the
submitting checkout's Python runs on the node), and `gapbench-ci fleet status` any task it
finds done without one, so that the report of a large fleet finds its nodes read already.

    python -m gapbench_report.inputs.fleet FOLDER...   (digests these node folders; exit 0)
"""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import signal
import statistics
import sys
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from gapbench_report.core.facts import load_average
from gapbench_report.core.labels import printable
from gapbench_report.core.metrics import number
from gapbench_report.inputs.files import kind_of, read_bounded, write_atomic
from gapbench_report.inputs.results import (
    RESULTS_LIMIT_BYTES,
    SECONDS_PER_UNIT,
    ResultsError,
    check_document,
    is_time,
    json_files,
    parse_json,
    parse_name,
    shown,
)

DOCTOR = "doctor.json"
TASK = "task.json"  # written last by a task of `gapbench-ci fleet submit`: its exit status
LOG = "gapbench.log"
DIGEST = ".gapbench-fleet-digest.json"  # hidden: never taken for a results file
# 2: problems found in more files (types, kinds, names); 3: another machine's files set apart
DIGEST_VERSION = 3
FINDING = "finding."  # a run context's key for one of doctor's findings: "severity: text"
NOT_RESULTS = {DOCTOR, TASK}
# What `gapbench-ci fleet submit` writes into DIR itself, beside the node folders.
RECORD = "fleet.json"
SCRIPT = "fleet.sbatch"
# Fewer nodes than this are read in this process: starting workers costs more than it saves.
PARALLEL_FROM = 16


@dataclass
class Node:
    """One node's run: a folder of DIR."""

    label: str  # the folder's name: the host, or host.task
    context: dict = field(default_factory=dict)  # the run context of its first results file
    facts: dict = field(default_factory=dict)  # doctor.json's facts
    findings: list[tuple[str, str, str]] = field(default_factory=list)  # severity, id, text
    medians: dict[str, float] = field(default_factory=dict)  # benchmark -> seconds
    bytes_per_second: dict[str, float] = field(default_factory=dict)  # where it counts bytes
    load: float | None = None  # the highest 1-minute load average its files started under
    files: int = 0  # results files read
    problems: list[str] = field(default_factory=list)  # why some or all of it is missing
    exit_status: int | None = None  # task.json's, where the task wrote one

    @property
    def machine(self) -> str:
        return printable(str(self.context.get("machine.id") or self.facts.get("machine.id")
                             or ""))

    def fact(self, key: str) -> str:
        """A fact of the run (its results' context), else doctor's; "" when neither has it."""
        value = self.context.get(key, self.facts.get(key))
        return "" if value is None else printable(str(value))


# The largest node file read: a results file as the report reads one, a log or a digest of a
# node that ran everything.
NODE_FILE_LIMIT_BYTES = RESULTS_LIMIT_BYTES


def read_text(path: Path) -> str:
    """A regular file's text (UTF-8), read by files.read_bounded within NODE_FILE_LIMIT_BYTES.
    A FIFO, a device, a socket or a folder is an OSError saying what it is, and is never opened:
    a FIFO would wait for a writer, a device might never end (or act on being opened)."""
    return read_bounded(path, NODE_FILE_LIMIT_BYTES, "node's file", pipes=False).decode("utf-8")


def why_unreadable(e: Exception, path: Path | str) -> str:
    """An error reading a node's file or folder `path`, in words: the OS's reason without the
    path (the caller names it), a symlink that leads nowhere or loops said so."""
    if isinstance(e, UnicodeDecodeError):
        return "not UTF-8 text"
    if isinstance(e, OSError) and e.errno == errno.ELOOP:
        return "a symbolic link that loops"
    if isinstance(e, OSError) and e.errno == errno.ENOENT and os.path.islink(path):
        return "a symbolic link to nothing"
    return e.strerror if isinstance(e, OSError) and e.strerror else f"{type(e).__name__}: {e}"


def finite_number(value: object) -> bool:
    """A JSON number that is finite (not true or false, not a string of digits)."""
    return not isinstance(value, bool) and isinstance(value, (int, float)) \
        and number(value) is not None


def read_json(path: Path) -> object:
    """A node's JSON file; ResultsError (one line, naming the file by its name) otherwise."""
    try:
        text = read_text(path)
    except (OSError, ValueError) as e:
        raise ResultsError(f"{path.name}: cannot be read: {why_unreadable(e, path)}") from None
    if not text.strip():
        raise ResultsError(f"{path.name}: empty file")
    return parse_json(Path(path.name), text)


def node_folders(root: Path, skip: Sequence[Path] = ()) -> list[Path]:
    """The node folders of a fleet folder, sorted: every folder in it but hidden ones and
    `skip` (the report's own output), and every symlink that leads nowhere (a node folder that
    is gone: listed as such). A folder that holds only what `gapbench-ci fleet submit` wrote
    (RECORD) has none yet. ResultsError (one line) when `root` is no fleet folder."""
    if not root.exists():
        raise ResultsError(f"{root}: no such folder")
    if not root.is_dir():
        raise ResultsError(f"{root}: not a folder: a fleet is a folder DIR with one folder per "
                           "node, DIR/<host>/")
    skipped = {os.path.realpath(p) for p in skip}
    folders = sorted(p for p in root.iterdir() if not p.name.startswith(".")
                     and (p.is_dir() or (p.is_symlink() and not p.exists()))
                     and os.path.realpath(p) not in skipped)
    if not folders and not (root / RECORD).exists():
        loose = [p for p in json_files(root) if p.name != RECORD]
        what = (f"{len(loose)} results file(s) but no node folder" if loose
                else "nothing" if not any(root.iterdir()) else "no node folder")
        raise ResultsError(f"{root}: not a fleet folder: it holds {what} (a fleet is DIR/<host>/ "
                           "per node, each with gapbench's results files and doctor.json)")
    return folders


def read_results_document(path: Path) -> tuple[object, dict]:
    """A results file's JSON and its checked context; ResultsError for one that is none."""
    data = read_json(path)
    return data, check_document(path, data)


def node_machine(node: Node, contexts: Sequence[dict]) -> tuple[str, str]:
    """The machine a node's folder is of, and what says so: doctor's machine.id where one of
    its results files is of it, else the one most of them carry (the first file's of a tie)."""
    ids = [str(c.get("machine.id")) for c in contexts]
    doctor = str(node.facts.get("machine.id", ""))
    if doctor in ids:
        return doctor, f"{DOCTOR} and {ids.count(doctor)} of its {len(ids)} results files"
    most = max(ids, key=ids.count)
    return most, f"{ids.count(most)} of its {len(ids)} results files"


def read_results_file(path: Path, node: Node, data: object, context: dict) -> None:
    """Adds one results file's medians to `node` (its document and context as
    read_results_document gives them); ResultsError for a file that is no usable results file.
    A benchmark already read from another of the node's files keeps its first value (peak/ runs
    beside every family, as in one report of a run)."""
    times: dict[str, list[float]] = {}
    rates: dict[str, list[float]] = {}
    for i, raw in enumerate(data["benchmarks"]):
        if not isinstance(raw, dict):
            raise ResultsError(f"{path}: benchmark #{i} is not an object")
        if raw.get("run_type", "iteration") == "aggregate":
            continue  # the repetitions are the samples; the medians are taken here
        name = raw.get("run_name", raw.get("name"))
        if not isinstance(name, str):
            raise ResultsError(f"{path}: benchmark #{i} has no name")
        parse_name(name)
        if raw.get("error_occurred") is True or raw.get("skipped") is True:
            continue  # a failed or skipped benchmark has no time to compare
        unit = raw.get("time_unit", "ns")
        value = raw.get("real_time")
        if not isinstance(unit, str) or unit not in SECONDS_PER_UNIT or isinstance(
                value, bool) or not isinstance(value, (int, float)) or not is_time(
                value * SECONDS_PER_UNIT[unit]):
            raise ResultsError(f"{path}: {name}: real_time {shown(value)} {shown(unit)} is no "
                               "time per iteration")
        times.setdefault(name, []).append(value * SECONDS_PER_UNIT[unit])
        if "bytes_per_second" in raw:
            rate = raw["bytes_per_second"]
            if not finite_number(rate) or rate < 0:
                raise ResultsError(f"{path}: {name}: bytes_per_second is {shown(rate)}, not a "
                                   "finite number")
            rates.setdefault(name, []).append(float(rate))
    if not node.context:
        node.context = context
    if (load := load_average(context)) is not None:
        node.load = max(node.load or 0.0, load)
    for name, samples in times.items():
        node.medians.setdefault(name, statistics.median(samples))
    for name, samples in rates.items():
        node.bytes_per_second.setdefault(name, statistics.median(samples))
    node.files += 1


def read_doctor(path: Path, node: Node) -> None:
    try:
        data = read_json(path)
    except ResultsError as e:
        node.problems.append(str(e))
        return
    if not isinstance(data, dict) or not isinstance(data.get("facts"), dict):
        node.problems.append(f"{DOCTOR}: not gapbench doctor --json output (no 'facts' object)")
        return
    node.facts = data["facts"]
    findings = data.get("findings", [])
    if not isinstance(findings, list):
        node.problems.append(f"{DOCTOR}: findings is {shown(findings)}, not a list")
        return
    odd = 0
    for f in findings:
        fields = [f.get(k) for k in ("severity", "id", "text")] if isinstance(f, dict) else []
        if fields and all(isinstance(x, str) for x in fields):
            node.findings.append(tuple(printable(x) for x in fields))
        else:
            odd += 1
    if odd:
        node.problems.append(f"{DOCTOR}: {odd} of {len(findings)} findings not objects with a "
                             "severity, an id and a text (not shown)")


def last_log_line(folder: Path) -> str:
    try:
        text = read_text(folder / LOG)
    except (OSError, ValueError):  # absent, unreadable, not UTF-8, a FIFO: no last line
        return ""
    return printable(next((x.strip() for x in reversed(text.splitlines()) if x.strip()), ""))


def task_status(folder: Path) -> tuple[int | None, str]:
    """task.json's exit status, or None and why it has none ("" when there is no task.json:
    the task is running, or ended before it could write one)."""
    try:
        os.lstat(folder / TASK)
        data = read_json(folder / TASK)
    except FileNotFoundError:
        return None, ""
    except OSError as e:
        return None, f"{TASK}: cannot be read: {why_unreadable(e, folder / TASK)}"
    except ResultsError as e:
        return None, str(e)
    status = data.get("exit_status", "absent") if isinstance(data, dict) else "absent"
    if isinstance(status, bool) or not isinstance(status, int) or not 0 <= status <= 255:
        what = "has no exit_status" if status == "absent" else \
            f"exit_status is {shown(status)}, not a whole number from 0 to 255"
        return None, f"{TASK}: {what}"
    return status, ""


def exit_text(status: int) -> str:
    """A task's exit status in words: the shell's 128+N is signal N."""
    if status > 128:
        try:
            return f"killed by {signal.Signals(status - 128).name} (exit status {status})"
        except ValueError:
            pass
    return f"exit status {status}"


def sources(folder: Path) -> dict[str, list[int]]:
    """The files a node's reading comes from, each with its size and time of change."""
    found = {}
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        try:
            if not entry.name.startswith(".") and entry.is_file():
                info = entry.stat()
                found[entry.name] = [info.st_size, info.st_mtime_ns]
        except OSError:
            pass  # not there now, or not to be looked at: read_node_files says which
    return found


def read_node(folder: Path) -> Node:
    """One node folder, from its digest where its files are as they were when it was made.
    Never raises: whatever keeps a node from being read is that node's problem, and the rest of
    the fleet is read."""
    try:
        node = read_node_or_raise(folder)
    except Exception as e:  # noqa: BLE001 -- whatever it is, one node's, not the fleet's
        node = Node(folder.name, problems=[f"cannot be read: {why_unreadable(e, folder)}"])
    node.label = printable(folder.name)
    node.problems = [printable(p) for p in node.problems]
    return node


def read_node_or_raise(folder: Path) -> Node:
    files = sources(folder)
    node = from_digest(folder / DIGEST, files)
    if node is not None:
        return node
    node = read_node_files(folder)
    if not os.path.islink(folder / DIGEST):  # a digest is ours: never written through a link
        try:
            write_atomic(folder / DIGEST, json.dumps({
                "version": DIGEST_VERSION, "sources": files, "node": dataclasses.asdict(node)}))
        except OSError:
            pass  # a folder that cannot be written: read again next time
    return node


def from_digest(path: Path, files: dict[str, list[int]]) -> Node | None:
    """The Node a digest holds, if it was made from `files` as they are and is whole."""
    try:
        digest = json.loads(read_text(path))
        if digest["version"] != DIGEST_VERSION or digest["sources"] != files:
            return None
        node = Node(**digest["node"])
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return None
    well_formed = (
        isinstance(node.context, dict) and isinstance(node.facts, dict)
        and isinstance(node.findings, list) and all(
            isinstance(f, list) and len(f) == 3 and all(isinstance(x, str) for x in f)
            for f in node.findings)
        and isinstance(node.medians, dict) and all(is_time(v) for v in node.medians.values())
        and isinstance(node.bytes_per_second, dict)
        and all(finite_number(v) for v in node.bytes_per_second.values())
        and (node.load is None or finite_number(node.load))
        and finite_number(node.files) and isinstance(node.problems, list)
        and all(isinstance(p, str) for p in node.problems)
        and (node.exit_status is None or finite_number(node.exit_status)))
    if not well_formed:
        return None
    node.findings = [tuple(f) for f in node.findings]
    try:
        for name in node.medians:
            parse_name(name)
    except ResultsError:
        return None
    return node


def read_node_files(folder: Path) -> Node:
    """One node folder; whatever cannot be read is in the Node's `problems`."""
    node = Node(folder.name)
    if any("\udc80" <= c <= "\udcff" for c in folder.name):  # os.fsdecode's undecodable bytes
        node.problems.append("the folder's name is not UTF-8 (its bytes shown as \\xNN)")
    kinds = {}  # each file's name: None for a regular file, else what it is
    for entry in os.scandir(folder):
        if entry.name.startswith("."):
            continue
        try:
            kinds[entry.name] = kind_of(os.stat(entry.path).st_mode)
        except OSError as e:
            kinds[entry.name] = why_unreadable(e, entry.path)
    for name, kind in sorted(kinds.items()):
        if kind and (name.endswith(".json") or name == LOG):
            node.problems.append(f"{name}: {kind}, not a file: not read")
    results = sorted(folder / n for n, k in kinds.items()
                     if k is None and n.endswith(".json") and n not in NOT_RESULTS)
    status, why = task_status(folder) if kinds.get(TASK, "") is None else (None, "")
    node.exit_status = status
    if why:
        node.problems.append(why)
    if kinds.get(DOCTOR, "") is None:
        read_doctor(folder / DOCTOR, node)
    documents = []
    for path in results:
        try:
            documents.append((path, *read_results_document(path)))
        except ResultsError as e:
            node.problems.append(str(e).replace(f"{path}: ", f"{path.name}: ", 1))
    if documents:
        # Another machine's file copied into the folder would enter this machine's medians,
        # and its group's: it is set apart, named.
        machine, says = node_machine(node, [context for _, _, context in documents])
    for path, data, context in documents:
        if str(context.get("machine.id")) != machine:
            node.problems.append(
                f"{path.name}: another machine's file (machine.id "
                f"{printable(str(context.get('machine.id')))}; this node is "
                f"{printable(machine)}, as {says} say): not read")
            continue
        try:
            read_results_file(path, node, data, context)
        except ResultsError as e:
            node.problems.append(str(e).replace(f"{path}: ", f"{path.name}: ", 1))
    if not node.findings:  # no doctor.json: the run context holds doctor's findings too
        for key, value in node.context.items():
            if key.startswith(FINDING) and isinstance(value, str) and ": " in value:
                severity, text = value.split(": ", 1)
                node.findings.append((printable(severity), printable(key[len(FINDING):]),
                                      printable(text)))
    if node.exit_status:
        line = last_log_line(folder)
        node.problems.insert(0, f"gapbench {exit_text(node.exit_status)}"
                                + (f"; its log ends: {line}" if line else ""))
    if not results and not node.facts and node.exit_status is None:
        node.problems.append("empty: no results file, no doctor.json (the node wrote nothing)"
                             if not kinds else "no results file, no doctor.json")
    elif not results:
        line = last_log_line(folder)
        node.problems.append("no results file" + (f"; its log ends: {line}" if line and not
                                                  node.exit_status else ""))
    if node.files and not node.medians:  # files read, and not one time in them
        node.problems.append("no benchmark ran (every one failed or was skipped)")
    return node


def read_fleet(folders: Sequence[Path], workers: int | None = None) -> list[Node]:
    """Every node folder read, in the order given; in parallel for a large fleet."""
    workers = workers or os.cpu_count() or 1
    if len(folders) < PARALLEL_FROM or workers == 1:
        return [read_node(f) for f in folders]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(read_node, folders, chunksize=max(1, len(folders) // (4 * workers))))


if __name__ == "__main__":
    for argument in sys.argv[1:]:
        read_node(Path(argument))
