"""Assertions that the report's tests and the CI package's tests share (ci/tests reaches this
folder through its package path)."""

from __future__ import annotations

import importlib
import os
import time

import pytest


def help_and_one_line_for_a_bad_flag(capsys, module: str) -> None:
    """`module`'s main: --help works, a bad flag is one line ending "(see --help)", exit 2."""
    main = importlib.import_module(module).main
    assert main(["--help"]) == 0
    assert capsys.readouterr().out.startswith("usage: ")
    assert main(["x.json", "--no-such-flag"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].endswith("(see --help)"), err


def process_gone(pid: int, what: str) -> None:
    """Process `pid` has ended (within 5 s): a stopped command took what it started with it."""
    for _ in range(50):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    pytest.fail(f"process {pid} outlived {what}")
