"""The machine's facts without a framework: which gapbench gives the machine id, and the id of
gapbench's results already in the output folder where no gapbench answers."""

from __future__ import annotations

import json
import os
import subprocess

from gapbench_probe import machine
from gapbench_probe.machine import Doctor, find_gapbench, machine_id

NO_DOCTOR = Doctor(source="no gapbench executable found")


def executable(path):
    path.parent.mkdir(parents=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_each_preset_build_is_tried_default_first(tmp_path, monkeypatch):
    monkeypatch.setattr(machine, "REPO", tmp_path)
    monkeypatch.setenv("PATH", "")
    assert find_gapbench(None) is None
    release = executable(tmp_path / "build" / "release" / "gapbench")
    assert find_gapbench(None) == release
    default = executable(tmp_path / "build" / "default" / "gapbench")
    assert find_gapbench(None) == default


def results_file(folder, name, context, mtime):
    path = folder / name
    path.write_text(json.dumps({"context": context, "benchmarks": []}))
    os.utime(path, (mtime, mtime))
    return path


def test_without_a_gapbench_the_id_of_its_results_in_the_folder(tmp_path):
    results_file(tmp_path, "conv.json", {"machine.id": "older"}, 1_000)
    conv = results_file(tmp_path, "lstm.json", {"machine.id": "gapbench-id"}, 2_000)
    results_file(tmp_path, "framework-torch.json",  # the probe's own: never
                 {"machine.id": "probe-1234", "framework.name": "torch"}, 3_000)
    (tmp_path / "notes.json").write_text("not json")
    mid, source = machine_id(NO_DOCTOR, tmp_path)
    assert mid == "gapbench-id"
    assert source == f"machine.id of {conv} (no gapbench executable found)"
    # gapbench doctor's answer comes first; no results, the probe's own id.
    assert machine_id(Doctor({"machine.id": "doctor-id"}, "gapbench doctor"), tmp_path) == (
        "doctor-id", "gapbench doctor")
    assert machine_id(NO_DOCTOR, tmp_path / "empty")[0].startswith("probe-")


def test_a_libcuda_lacking_the_version_call_gives_no_version(monkeypatch):
    class Stub:  # ctypes.CDLL raises AttributeError for a symbol the library lacks
        def __getattr__(self, name):
            raise AttributeError(f"libcuda.so.1: undefined symbol: {name}")
    monkeypatch.setattr(machine.ctypes, "CDLL", lambda library: Stub())
    assert machine.driver_cuda_version() == (None, "libcuda.so.1 has no cuDriverGetVersion")


def _git(where, *args):
    subprocess.run(["git", "-C", str(where), "-c", "user.name=t", "-c", "user.email=t@t",
                    "-c", "commit.gpgsign=false", *args], check=True, capture_output=True)


def test_source_state_is_the_checkouts_commit_and_whether_it_is_clean(tmp_path, monkeypatch):
    monkeypatch.delenv("GAPBENCH_SOURCE_COMMIT", raising=False)
    package = tmp_path / "probe" / "gapbench_probe"
    package.mkdir(parents=True)
    (package / "run.py").write_text("x = 1\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-q", "-m", "one")
    head = subprocess.run(["git", "-C", str(tmp_path), "rev-parse", "HEAD"], check=True,
                          capture_output=True, text=True).stdout.strip()
    assert machine.source_state(package) == (head, "clean")
    (tmp_path / "results" / "baselines").mkdir(parents=True)
    (tmp_path / "results" / "baselines" / "new.json").write_text("{}")
    assert machine.source_state(package) == (head, "clean")  # what the tools write
    (package / "new.py").write_text("y = 2\n")
    assert machine.source_state(package) == (head, "dirty")


def test_source_state_outside_a_checkout_is_unknown(tmp_path, monkeypatch):
    monkeypatch.delenv("GAPBENCH_SOURCE_COMMIT", raising=False)
    package = tmp_path / "site-packages" / "gapbench_probe"
    package.mkdir(parents=True)
    assert machine.source_state(package) == ("unknown", "unknown")
    # Installed inside some checkout (the repository's ignored .venv): not that checkout's code.
    _git(tmp_path, "init", "-q")
    assert machine.source_state(package) == ("unknown", "unknown")
    monkeypatch.setenv("GAPBENCH_SOURCE_COMMIT", "abc123")
    assert machine.source_state(package) == ("abc123", "unknown")

