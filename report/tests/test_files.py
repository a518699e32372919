"""files.write_atomic, the one writer every command and chart uses: the whole file or the earlier
one, never half of one, and no temporary file left behind."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gapbench_report import files
from gapbench_report.files import write_atomic, write_json_atomic


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

    def half_then_fail(self, data, *args, **kwargs):  # the disk fills up halfway
        Path.write_bytes(self, data[: len(data) // 2].encode())
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_text", half_then_fail)
    with pytest.raises(OSError, match="No space left"):
        write_atomic(path, "a new text that never arrives whole\n")
    assert path.read_text() == "earlier\n"
    assert [p.name for p in tmp_path.iterdir()] == ["x.md"]  # no temporary file


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
