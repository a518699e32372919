"""gbjson.write_atomic, the probe's one writer: the whole file or the earlier one, through a
symlink to its target, never over a FIFO or a device, with room for a long name, and no
temporary file left by a failure or a terminating signal."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from gapbench_probe import gbjson

PROBE = Path(__file__).resolve().parents[1]


def test_through_a_symlink_the_target_is_replaced_and_the_link_stays(tmp_path):
    target = tmp_path / "shared" / "framework-torch.json"
    target.parent.mkdir()
    target.write_text("{}")
    link = tmp_path / "framework-torch.json"
    link.symlink_to(target)
    gbjson.write_atomic(link, {"new": True})
    assert link.is_symlink() and json.loads(target.read_text()) == {"new": True}
    assert [p.name for p in target.parent.iterdir()] == ["framework-torch.json"]


def test_a_fifo_is_refused_and_left_as_it_is(tmp_path):
    fifo = tmp_path / "framework-torch.json"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="not a regular file: not replaced"):
        gbjson.write_atomic(fifo, {"new": True})
    assert fifo.is_fifo() and [p.name for p in tmp_path.iterdir()] == [fifo.name]


def test_a_name_of_250_bytes_is_written(tmp_path):
    path = tmp_path / ("f" * 245 + ".json")
    gbjson.write_atomic(path, {"k": 1})
    assert json.loads(path.read_text()) == {"k": 1} and len(list(tmp_path.iterdir())) == 1


CHILD = """
import os, signal, sys
from gapbench_probe import gbjson
def signal_instead(*_args):  # the temporary file is written; the rename never comes
    os.kill(os.getpid(), getattr(signal, sys.argv[2]))
gbjson.os.replace = signal_instead
gbjson.write_atomic(sys.argv[1], {"new": True})
"""


@pytest.mark.parametrize("name", ["SIGHUP", "SIGTERM", "SIGQUIT", "SIGUSR1", "SIGALRM"])
def test_a_terminating_signal_during_the_write_removes_the_temporary_file(tmp_path, name):
    path = tmp_path / "framework-torch.json"
    path.write_text('{"old": true}')
    done = subprocess.run([sys.executable, "-c", CHILD, str(path), name], timeout=60,
                          check=False, env={**os.environ, "PYTHONPATH": str(PROBE)})
    assert done.returncode == -getattr(signal, name)
    assert json.loads(path.read_text()) == {"old": True}
    assert [p.name for p in tmp_path.iterdir()] == [path.name]
