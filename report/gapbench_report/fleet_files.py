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

    python -m gapbench_report.fleet_files FOLDER...   (digests these node folders; exit 0)
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import statistics
import sys
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from gapbench_report.files import write_atomic
from gapbench_report.results import (
    SECONDS_PER_UNIT,
    ResultsError,
    check_document,
    is_time,
    json_files,
    parse_name,
    read_document,
)

DOCTOR = "doctor.json"
TASK = "task.json"  # written last by a task of `gapbench-ci fleet submit`: its exit status
LOG = "gapbench.log"
DIGEST = ".gapbench-fleet-digest.json"  # hidden: never taken for a results file
DIGEST_VERSION = 1
FINDING = "finding."  # a run context's key for one of doctor's findings: "severity: text"
NOT_RESULTS = {DOCTOR, TASK}
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
        return str(self.context.get("machine.id") or self.facts.get("machine.id") or "")

    def fact(self, key: str) -> str:
        """A fact of the run (its results' context), else doctor's; "" when neither has it."""
        value = self.context.get(key, self.facts.get(key))
        return "" if value is None else str(value)


def node_folders(root: Path, skip: Sequence[Path] = ()) -> list[Path]:
    """The node folders of a fleet folder, sorted: every folder in it but hidden ones and
    `skip` (the report's own output). ResultsError (one line) when `root` is no fleet folder."""
    if not root.exists():
        raise ResultsError(f"{root}: no such folder")
    if not root.is_dir():
        raise ResultsError(f"{root}: not a folder: a fleet is a folder DIR with one folder per "
                           "node, DIR/<host>/")
    skipped = {p.resolve() for p in skip}
    folders = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")
                     and p.resolve() not in skipped)
    if not folders:
        loose = json_files(root)
        what = (f"{len(loose)} results file(s) but no node folder" if loose
                else "nothing" if not any(root.iterdir()) else "no node folder")
        raise ResultsError(f"{root}: not a fleet folder: it holds {what} (a fleet is DIR/<host>/ "
                           "per node, each with gapbench's results files and doctor.json)")
    return folders


def read_results_file(path: Path, node: Node) -> None:
    """Adds one results file's medians to `node`; ResultsError for a file that is no usable
    results file. A benchmark already read from another of the node's files keeps its first
    value (peak/ runs beside every family, as in one report of a run)."""
    data = read_document(path)
    context = check_document(path, data)
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
        if unit not in SECONDS_PER_UNIT or isinstance(value, bool) or not isinstance(
                value, (int, float)) or not is_time(value * SECONDS_PER_UNIT[unit]):
            raise ResultsError(f"{path}: {name}: real_time {value!r} {unit!r} is no time per "
                               "iteration")
        times.setdefault(name, []).append(value * SECONDS_PER_UNIT[unit])
        rate = raw.get("bytes_per_second")
        if isinstance(rate, (int, float)) and not isinstance(rate, bool):
            rates.setdefault(name, []).append(rate)
    if not node.context:
        node.context = context
    load = context.get("load_avg")
    if isinstance(load, list) and load and isinstance(load[0], (int, float)):
        node.load = max(node.load or 0.0, float(load[0]))
    for name, samples in times.items():
        node.medians.setdefault(name, statistics.median(samples))
    for name, samples in rates.items():
        node.bytes_per_second.setdefault(name, statistics.median(samples))
    node.files += 1


def read_doctor(path: Path, node: Node) -> None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        node.problems.append(f"{DOCTOR}: unreadable ({type(e).__name__}: "
                             f"{' '.join(str(e).split())})")
        return
    if not isinstance(data, dict) or not isinstance(data.get("facts"), dict):
        node.problems.append(f"{DOCTOR}: not gapbench doctor --json output (no 'facts')")
        return
    node.facts = data["facts"]
    for f in data.get("findings") or []:
        if isinstance(f, dict):
            node.findings.append((str(f.get("severity", "")), str(f.get("id", "")),
                                  str(f.get("text", ""))))


def last_log_line(folder: Path) -> str:
    try:
        lines = (folder / LOG).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    return next((line.strip() for line in reversed(lines) if line.strip()), "")


def read_task(path: Path, node: Node) -> None:
    try:
        status = json.loads(path.read_text(encoding="utf-8")).get("exit_status")
    except (OSError, UnicodeDecodeError, ValueError, AttributeError):
        node.problems.append(f"{TASK}: unreadable")
        return
    if isinstance(status, int) and not isinstance(status, bool):
        node.exit_status = status


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
    for p in sorted(folder.iterdir()):
        if not p.name.startswith(".") and p.is_file():
            info = p.stat()
            found[p.name] = [info.st_size, info.st_mtime_ns]
    return found


def read_node(folder: Path) -> Node:
    """One node folder, from its digest where its files are as they were when it was made."""
    files = sources(folder)
    try:
        digest = json.loads((folder / DIGEST).read_text(encoding="utf-8"))
        if digest["version"] == DIGEST_VERSION and digest["sources"] == files:
            node = Node(**digest["node"])
            node.label = folder.name
            node.findings = [tuple(f) for f in node.findings]
            return node
    except (OSError, ValueError, KeyError, TypeError):
        pass
    node = read_node_files(folder)
    try:
        write_atomic(folder / DIGEST, json.dumps({"version": DIGEST_VERSION, "sources": files,
                                                  "node": dataclasses.asdict(node)}))
    except OSError:
        pass  # a folder that cannot be written: read again next time
    return node


def read_node_files(folder: Path) -> Node:
    """One node folder; whatever cannot be read is in the Node's `problems`."""
    node = Node(folder.name)
    results = [p for p in json_files(folder) if p.name not in NOT_RESULTS]
    if (folder / TASK).is_file():
        read_task(folder / TASK, node)
    if (folder / DOCTOR).is_file():
        read_doctor(folder / DOCTOR, node)
    for path in results:
        try:
            read_results_file(path, node)
        except ResultsError as e:
            node.problems.append(str(e).replace(f"{path}: ", f"{path.name}: ", 1))
    if not node.findings:  # no doctor.json: the run context holds doctor's findings too
        for key, value in node.context.items():
            if key.startswith(FINDING) and isinstance(value, str) and ": " in value:
                severity, text = value.split(": ", 1)
                node.findings.append((severity, key[len(FINDING):], text))
    if node.exit_status:
        line = last_log_line(folder)
        node.problems.insert(0, f"gapbench {exit_text(node.exit_status)}"
                                + (f"; its log ends: {line}" if line else ""))
    if not results and not node.facts and node.exit_status is None:
        node.problems.append("empty: no results file, no doctor.json (the node wrote nothing)"
                             if not any(folder.iterdir()) else "no results file, no doctor.json")
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
