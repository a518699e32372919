"""Tiny synthetic gapbench results for the tests: entries, documents, files, in-memory Results."""

from __future__ import annotations

import json
from pathlib import Path

from gapbench_report.inputs.results import SECONDS_PER_UNIT, SKIP_PREFIX, Results, _check_entry

# A context that load_results accepts and that no diagnosis rule fires on.
BASE_CONTEXT = {
    "gapbench.schema": "2",
    "gapbench.version": "0.1.0",
    "gapbench.profile": "quick",
    "gapbench.seed": "42",
    "machine.id": "test-machine",
    "gpu.status": "ok",
}


def runs(name: str, seconds: list[float], unit: str = "ns",
         **counters: list[float]) -> list[dict]:
    """One iteration entry per repetition, its time given in seconds and written in `unit`;
    each counter is a list with one value per repetition."""
    entries = []
    for i, s in enumerate(seconds):
        time = s / SECONDS_PER_UNIT[unit]
        entry = {"name": name, "family_index": 0, "per_family_instance_index": 0,
                 "run_name": name, "run_type": "iteration", "repetitions": len(seconds),
                 "repetition_index": i, "threads": 1, "iterations": 1, "real_time": time,
                 "cpu_time": time, "time_unit": unit}
        entry.update({k: v[i] for k, v in counters.items()})
        entries.append(entry)
    return entries


def failed(name: str, message: str, repetitions: int = 3) -> list[dict]:
    """A benchmark that ended in an error with `message` (one starting "skipped: " is a skip)."""
    return [{"name": name, "family_index": 0, "per_family_instance_index": 0, "run_name": name,
             "run_type": "iteration", "repetitions": repetitions, "repetition_index": i,
             "threads": 1, "error_occurred": True, "error_message": message,
             "iterations": 0, "real_time": 0.0, "cpu_time": 0.0, "time_unit": "ns"}
            for i in range(repetitions)]


def skipped(name: str, reason: str, repetitions: int = 3) -> list[dict]:
    """A benchmark skipped with `reason` (without the "skipped: " prefix)."""
    return failed(name, SKIP_PREFIX + reason, repetitions)


def document(entries: list[dict], **context: str) -> dict:
    return {"context": {**BASE_CONTEXT, **context}, "benchmarks": entries}


def write(path: Path, entries: list[dict], **context: str) -> Path:
    path.write_text(json.dumps(document(entries, **context)), encoding="utf-8")
    return path


def in_memory(entries: list[dict], **context: str) -> Results:
    """Results as load_results would return them, without a file."""
    path = Path("<memory>")
    return Results(path, {**BASE_CONTEXT, **context},
                   [_check_entry(path, i, raw) for i, raw in enumerate(entries)])
