"""The two atomic writers, held to one contract: the probe's (gbjson.write_atomic) and the
report's (gapbench_report/inputs/files.py, write_json_atomic). The probe keeps its own because it is
installed alone into a framework's Python, without the report's numpy, scipy and matplotlib;
this test is what keeps the two alike.

The report's writer is loaded from this checkout's file (it needs only the standard library), not
imported: the Python running the probe's tests may have another checkout's report installed.
"""

from __future__ import annotations

import errno
import importlib.util
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from gapbench_probe import gbjson

PROBE = Path(__file__).resolve().parents[1]
REPORT_FILES = PROBE.parent / "report" / "gapbench_report" / "files.py"
DATA = {"benchmarks": [{"name": "x/y/cpu/n:1", "real_time": 1.5}], "context": {"é": "ü"}}
WHOLE = (json.dumps(DATA, indent=1) + "\n").encode()
EARLIER = b'{"earlier": true}\n'



@dataclass(frozen=True)
class Writer:
    module: Path  # its file
    function: str
    write: Callable[[Path, object], None]


def load(path: Path):
    spec = importlib.util.spec_from_file_location("report_files_under_contract", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(params=["probe", "report"])
def writer(request) -> Writer:
    if request.param == "probe":
        return Writer(Path(gbjson.__file__), "write_atomic", gbjson.write_atomic)
    if not REPORT_FILES.is_file():
        pytest.skip(f"no {REPORT_FILES}: the probe's sources without the report's")
    return Writer(REPORT_FILES, "write_json_atomic", load(REPORT_FILES).write_json_atomic)


def earlier_file(tmp_path: Path) -> Path:
    path = tmp_path / "results.json"
    path.write_bytes(EARLIER)
    return path


def test_writes_the_same_bytes_creating_the_folder(tmp_path, writer):
    path = tmp_path / "a" / "b" / "results.json"
    writer.write(path, DATA)
    assert path.read_bytes() == WHOLE and os.listdir(path.parent) == ["results.json"]


def test_replaces_an_earlier_file_whole(tmp_path, writer):
    path = earlier_file(tmp_path)
    writer.write(path, DATA)
    assert path.read_bytes() == WHOLE and os.listdir(tmp_path) == ["results.json"]


def full_disk(*_args):
    raise OSError(errno.ENOSPC, "No space left on device")


def full_disk_on_write(real_fdopen):
    def fdopen(*args, **kw):
        f = real_fdopen(*args, **kw)
        f.write = full_disk
        return f
    return fdopen


@pytest.mark.parametrize("fails", ["write", "fsync", "replace"])
def test_a_failure_keeps_the_earlier_file_and_leaves_no_temporary_one(tmp_path, writer,
                                                                      monkeypatch, fails):
    path = earlier_file(tmp_path)
    monkeypatch.setattr(os, fails if fails != "write" else "fdopen",
                        full_disk if fails != "write" else full_disk_on_write(os.fdopen))
    with pytest.raises(OSError) as raised:
        writer.write(path, DATA)
    assert raised.value.errno == errno.ENOSPC
    assert path.read_bytes() == EARLIER and os.listdir(tmp_path) == ["results.json"]


def test_data_that_is_no_json_writes_nothing(tmp_path, writer):
    with pytest.raises(TypeError):
        writer.write(tmp_path / "results.json", {"k": object()})
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("exists", [True, False])
def test_through_a_symlink_the_target_is_written_and_the_link_stays(tmp_path, writer, exists):
    (tmp_path / "shared").mkdir()
    target = earlier_file(tmp_path / "shared") if exists else tmp_path / "shared" / "results.json"
    link = tmp_path / "results.json"
    link.symlink_to(target)
    writer.write(link, DATA)
    assert link.is_symlink() and target.read_bytes() == WHOLE
    assert os.listdir(target.parent) == ["results.json"]  # the temporary file was beside it


@pytest.mark.parametrize("kind", ["fifo", "directory", "symlink loop"])
def test_anything_but_a_regular_file_is_refused_and_left_as_it_is(tmp_path, writer, kind):
    path = tmp_path / "results.json"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    else:
        path.symlink_to(path)
    link = tmp_path / "link.json"
    link.symlink_to(path)
    for given in (path, link):
        with pytest.raises(OSError, match="not a regular file: not replaced|symbolic links"):
            writer.write(given, DATA)
    assert (path.is_symlink() if kind == "symlink loop" else
            path.is_fifo() if kind == "fifo" else path.is_dir())
    assert sorted(os.listdir(tmp_path)) == ["link.json", "results.json"]


@pytest.mark.parametrize("name", ["n" * 245 + ".json", "é" * 120 + ".json"])
def test_a_name_of_up_to_255_bytes_is_written(tmp_path, writer, name):
    writer.write(tmp_path / name, DATA)
    assert (tmp_path / name).read_bytes() == WHOLE and os.listdir(tmp_path) == [name]


# The writer in a child process; the signal comes when the temporary file is written, before
# the rename.
CHILD = """
import importlib.util, os, signal, sys
path, how, module, function = sys.argv[1:]
spec = importlib.util.spec_from_file_location("writer", module)
writer = importlib.util.module_from_spec(spec)
spec.loader.exec_module(writer)
def signal_instead(*_args):
    os.kill(os.getpid(), getattr(signal, how))
os.replace = signal_instead
getattr(writer, function)(path, {"new": True})
"""


@pytest.mark.parametrize("how", ["SIGTERM", "SIGHUP"])
def test_a_terminating_signal_keeps_the_earlier_file_and_removes_the_temporary_one(
        tmp_path, writer, how):
    path = earlier_file(tmp_path)
    done = subprocess.run([sys.executable, "-c", CHILD, path, how, writer.module, writer.function],
                          timeout=60, check=False, env={**os.environ, "PYTHONPATH": str(PROBE)})
    assert done.returncode == -getattr(signal, how)
    assert path.read_bytes() == EARLIER and os.listdir(tmp_path) == ["results.json"]


def test_signal_handlers_are_given_back(tmp_path, writer):
    before = {s: signal.getsignal(s) for s in gbjson.TERMINATING_SIGNALS}
    writer.write(tmp_path / "results.json", DATA)
    assert {s: signal.getsignal(s) for s in gbjson.TERMINATING_SIGNALS} == before
