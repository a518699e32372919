"""files.write_atomic, the one writer every command and chart uses: the whole file or the earlier
one, never half of one, and no temporary file left behind."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from gapbench_report.inputs import files
from gapbench_report.inputs.files import write_atomic, write_json_atomic

REPORT = Path(__file__).resolve().parents[1]


def test_writes_text_bytes_and_json_creating_the_folder(tmp_path):
    folder = tmp_path / "a" / "b"
    write_atomic(folder / "x.md", "täxt\n")
    write_atomic(folder / "y.png", b"\x89PNG\x00")
    write_json_atomic(folder / "z.json", {"k": [1, 2]})
    assert (folder / "x.md").read_bytes() == "täxt\n".encode()
    assert (folder / "y.png").read_bytes() == b"\x89PNG\x00"
    assert (folder / "z.json").read_text() == '{\n "k": [\n  1,\n  2\n ]\n}\n'
    assert json.loads((folder / "z.json").read_text()) == {"k": [1, 2]}
    assert sorted(p.name for p in folder.iterdir()) == ["x.md", "y.png", "z.json"]


def test_replaces_an_earlier_file_whole(tmp_path):
    path = tmp_path / "x.md"
    write_atomic(path, "old and longer\n")
    write_atomic(path, "new\n")
    assert path.read_text() == "new\n"
    assert [p.name for p in tmp_path.iterdir()] == ["x.md"]


def test_a_failed_write_keeps_the_earlier_file(tmp_path, monkeypatch):
    path = tmp_path / "x.md"
    write_atomic(path, "earlier\n")

    def full(_fd):  # the disk is full when the data goes from the cache to the disk
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "fsync", full)
    with pytest.raises(OSError, match="No space left"):
        write_atomic(path, "a new text that never arrives whole\n")
    assert path.read_text() == "earlier\n"
    assert [p.name for p in tmp_path.iterdir()] == ["x.md"]  # no temporary file


def test_files_written_together_all_arrive_or_none(tmp_path, monkeypatch):
    """write_atomic_together: ci/baseline's baseline, its framework side and the README, as one
    set."""
    a, b, c = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "README.md"
    for path in (a, b, c):
        write_atomic(path, "earlier\n")
    files.write_atomic_together({a: "new a\n", b: b"new b\n", c: "new README\n"})
    assert [p.read_text() for p in (a, b, c)] == ["new a\n", "new b\n", "new README\n"]
    synced = []

    def full_at_the_third(fd):  # the disk fills while the last file goes to it
        synced.append(fd)
        if len(synced) == 3:
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "fsync", full_at_the_third)
    with pytest.raises(OSError, match="No space left"):
        files.write_atomic_together({a: "newer a\n", b: "newer b\n", c: "newer README\n"})
    assert [p.read_text() for p in (a, b, c)] == ["new a\n", "new b\n", "new README\n"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["README.md", "a.json", "b.json"]
    # A target that cannot be replaced (a folder) stops the set before any file is replaced.
    monkeypatch.undo()
    (tmp_path / "d").mkdir()
    with pytest.raises(OSError, match="is a directory, not a regular file"):
        files.write_atomic_together({a: "x\n", tmp_path / "d": "y\n"})
    assert a.read_text() == "new a\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["README.md", "a.json", "b.json", "d"]


def test_a_failed_rename_keeps_the_earlier_file(tmp_path, monkeypatch):
    path = tmp_path / "x.json"
    write_json_atomic(path, {"k": 1})

    def refuse(*_args):
        raise PermissionError("rename refused")

    monkeypatch.setattr(files.os, "replace", refuse)
    with pytest.raises(PermissionError):
        write_json_atomic(path, {"k": 2})
    assert json.loads(path.read_text()) == {"k": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["x.json"]


def test_unserialisable_json_writes_nothing(tmp_path):
    with pytest.raises(TypeError):
        write_json_atomic(tmp_path / "x.json", {"k": object()})
    assert not list(tmp_path.iterdir())


# ---- links, things that are no files, long names, limits and signals ---------------------------

def test_through_a_symlink_the_target_is_replaced_and_the_link_stays(tmp_path):
    target = tmp_path / "data" / "real.json"
    target.parent.mkdir()
    target.write_text("old\n")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    write_atomic(link, "new\n")
    assert link.is_symlink() and link.resolve() == target
    assert target.read_text() == "new\n"
    assert sorted(p.name for p in target.parent.iterdir()) == ["real.json"]  # written beside it


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_anything_but_a_regular_file_is_refused_and_left_as_it_is(tmp_path, kind):
    path = tmp_path / "out.json"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()
    link = tmp_path / "link.json"
    link.symlink_to(path)
    for given in (path, link):
        with pytest.raises(OSError, match=r"not a regular file: not replaced"):
            write_atomic(given, "text\n")
    assert (stat.S_ISFIFO if kind == "fifo" else stat.S_ISDIR)(os.lstat(path).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.json", "out.json"]


def test_a_name_of_255_bytes_still_has_room_for_the_temporary_name(tmp_path):
    path = tmp_path / ("n" * 250 + ".json")
    write_atomic(path, "whole\n")
    assert path.read_text() == "whole\n" and len(list(tmp_path.iterdir())) == 1
    accented = tmp_path / ("é" * 125 + ".md")  # 250 bytes: the cut must not split a character
    write_atomic(accented, "whole\n")
    assert accented.read_text() == "whole\n"


# A child process that writes PATH (an earlier file there) with write_atomic; what it does
# first is the test's: raise the file size limit or send itself a signal in the middle.
CHILD = """
import os, resource, signal, sys
from gapbench_report.inputs import files
path, how = sys.argv[1], sys.argv[2]
if how == "fsize":
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))  # SIGXFSZ: Python ignores it
else:  # the signal comes when the temporary file is written, before the rename
    def signal_instead(*_args):
        os.kill(os.getpid(), getattr(signal, how))
    files.os.replace = signal_instead
files.write_atomic(path, "x" * 100000)
"""


def child_writes(tmp_path, how: str) -> subprocess.CompletedProcess:
    path = tmp_path / "results.json"
    path.write_text("earlier\n")
    return subprocess.run([sys.executable, "-c", CHILD, str(path), how], capture_output=True,
                          text=True, timeout=60, check=False,
                          env={**os.environ, "PYTHONPATH": str(REPORT)})


def test_a_file_size_limit_keeps_the_earlier_file(tmp_path):
    done = child_writes(tmp_path, "fsize")
    assert done.returncode != 0 and "File too large" in done.stderr
    assert (tmp_path / "results.json").read_text() == "earlier\n"
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]


@pytest.mark.parametrize("name", ["SIGHUP", "SIGTERM", "SIGQUIT", "SIGUSR1", "SIGALRM"])
def test_a_terminating_signal_during_the_write_removes_the_temporary_file(tmp_path, name):
    done = child_writes(tmp_path, name)
    assert done.returncode == -getattr(signal, name)  # ended by the signal, as without a handler
    assert (tmp_path / "results.json").read_text() == "earlier\n"
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]


def test_signal_handlers_are_given_back_after_the_write(tmp_path):
    write_atomic(tmp_path / "x.md", "text\n")
    assert all(signal.getsignal(s) == signal.SIG_DFL for s in files.TERMINATING_SIGNALS
               if s not in (signal.SIGPIPE, signal.SIGXFSZ))  # Python ignores these two


# ---- files.read_bounded: every input file within a limit and a time ---------------------------

def test_a_file_within_the_limit_is_read_and_one_past_it_is_refused_unread(tmp_path):
    path = tmp_path / "r.json"
    path.write_bytes(b"x" * 1000)
    assert files.read_bounded(path, 1000, "results file") == b"x" * 1000
    big = tmp_path / "big.json"
    with open(big, "wb") as f:
        f.truncate(10 * 2**30)  # sparse: 10 GiB told by its size, never read
    with pytest.raises(files.InputError, match=r"^10,240 MiB, over the limit of 128 MiB for a "
                                               r"results file$"):
        files.read_bounded(big, 128 * 2**20, "results file")


@pytest.mark.parametrize("device, words", [("/dev/zero", "a device"), ("/dev/null", "a device")])
def test_a_device_is_refused_unopened(device, words):
    with pytest.raises(files.InputError, match=f"^{words}, not a regular file$"):
        files.read_bounded(device, 2**20, "results file")


def test_a_socket_and_a_folder_are_refused(tmp_path):
    import socket  # noqa: PLC0415
    path = tmp_path / "s.json"
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(path))
        with pytest.raises(files.InputError, match="^a socket, not a regular file$"):
            files.read_bounded(path, 2**20, "results file")
    with pytest.raises(files.InputError, match="^a directory, not a regular file$"):
        files.read_bounded(tmp_path, 2**20, "results file")


def test_a_fifo_nobody_writes_is_refused_at_once(tmp_path):
    fifo = tmp_path / "f.json"
    os.mkfifo(fifo)
    with pytest.raises(files.InputError, match="no writer"):
        files.read_bounded(fifo, 2**20, "results file")
    with pytest.raises(files.InputError, match="^a FIFO, not a regular file$"):
        files.read_bounded(fifo, 2**20, "node's file", pipes=False)


def test_a_pipe_is_read_to_its_end_within_the_limit():
    """As `--baseline <(cat x.json)` gives it: /dev/fd/N of a pipe whose writer runs."""
    writer = subprocess.Popen([sys.executable, "-c", "import sys, time; time.sleep(0.3); "
                               "sys.stdout.write('{}' * 50000)"], stdout=subprocess.PIPE)
    try:
        data = files.read_bounded(f"/dev/fd/{writer.stdout.fileno()}", 2**20, "results file")
    finally:
        writer.stdout.close()
        writer.wait()
    assert data == b"{}" * 50000


def test_a_pipe_past_the_limit_or_too_slow_is_refused():
    endless = subprocess.Popen(["cat", "/dev/zero"], stdout=subprocess.PIPE)
    stalled = subprocess.Popen(["sleep", "30"], stdout=subprocess.PIPE)
    try:
        with pytest.raises(files.InputError, match="^at least 1 MiB, over the limit of 1 MiB"):
            files.read_bounded(f"/dev/fd/{endless.stdout.fileno()}", 2**20, "results file")
        with pytest.raises(files.InputError, match="did not finish within 0.5 s"):
            files.read_bounded(f"/dev/fd/{stalled.stdout.fileno()}", 2**20, "results file",
                               pipe_seconds=0.5)
    finally:
        for p in (endless, stalled):
            p.kill()
            p.stdout.close()
            p.wait()


# ---- files.OutputSet: a folder of outputs replaced as one set ---------------------------------

def test_an_output_set_replaces_the_earlier_set_and_removes_what_it_no_longer_has(tmp_path):
    out = tmp_path / "out"
    with files.OutputSet(out, "test") as outputs:
        (outputs.staging / "a.png").write_bytes(b"a1")
        (outputs.staging / "old.png").write_bytes(b"old")
        outputs.replace({"index.html": "first"})
    (out / "mine.txt").write_text("not the set's")
    with files.OutputSet(out, "test") as outputs:
        (outputs.staging / "a.png").write_bytes(b"a2")
        outputs.replace({"index.html": "second"})
    assert sorted(p.name for p in out.iterdir()) == [files.SET_RECORD, "a.png", "index.html",
                                                      "mine.txt"]
    assert (out / "a.png").read_bytes() == b"a2"


def test_an_output_set_that_fails_before_it_is_replaced_leaves_the_earlier_one(tmp_path):
    out = tmp_path / "out"
    with files.OutputSet(out, "test") as outputs:
        (outputs.staging / "a.png").write_bytes(b"first")
        outputs.replace({"index.html": "first"})
    with pytest.raises(RuntimeError), files.OutputSet(out, "test") as outputs:
        (outputs.staging / "a.png").write_bytes(b"second")
        raise RuntimeError("the page could not be made")
    assert (out / "a.png").read_bytes() == b"first"
    assert sorted(p.name for p in out.iterdir()) == [files.SET_RECORD, "a.png", "index.html"]


def test_a_second_writer_into_the_folder_is_refused_and_a_killed_ones_litter_removed(tmp_path):
    out = tmp_path / "out"
    (out / f"{files.STAGING}123.abcd").mkdir(parents=True)  # left by a SIGKILLed command
    with files.OutputSet(out, "gapbench-report render"):
        assert not (out / f"{files.STAGING}123.abcd").exists()
        other = subprocess.run(
            [sys.executable, "-c", "import sys; from gapbench_report.inputs import files\n"
             "try:\n with files.OutputSet(sys.argv[1], 'gapbench-report render'): pass\n"
             "except files.FolderBusy as e: print(e)", str(out)],
            capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPORT)})
    assert other.stdout.strip() == (f"{out}: another gapbench-report render is writing into "
                                    "this folder now; run this one when it has finished, or "
                                    "give another --out")
    with files.OutputSet(out, "test"):  # free again
        pass
