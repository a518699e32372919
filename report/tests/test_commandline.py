"""Tests of what the commands share: every error is one line on stderr and exit status 2."""

from __future__ import annotations

import argparse
import importlib

import pytest

from gapbench_report import check, commandline, diagnose
from gapbench_report.commandline import ToolError
from gapbench_report.results import ResultsError

DOC = """Summary line.

    prog A [--b]
         [--c]

What follows the usage block.
More of it.
"""


def test_parser_takes_the_summary_and_what_follows_the_usage_block():
    p = commandline.parser("prog", DOC)
    assert p.description == "Summary line."
    assert p.epilog == "What follows the usage block.\nMore of it."
    with pytest.raises(commandline.UsageError, match=r"unrecognized arguments: --x \(see --help\)"):
        p.parse_args(["--x"])


def test_parser_with_an_epilog_of_its_own_fills_it():
    p = commandline.parser("prog", DOC, epilog="exit status: 0 fine")
    assert (p.description, p.epilog) == ("Summary line.", "exit status: 0 fine")
    assert p.formatter_class is argparse.HelpFormatter
    bare = commandline.parser("prog", "One line.", epilog="")
    assert (bare.description, bare.epilog) == ("One line.", None)


# Every command of both packages: --help works, a bad flag is one line and exit status 2.
COMMANDS = ["gapbench_report.check", "gapbench_report.compare", "gapbench_report.diagnose",
            "gapbench_report.render", "gapbench_report.trend", "gapbench_ci.baseline",
            "gapbench_ci.nightly", "gapbench_ci.gate_proof", "gapbench_ci.gpu_check"]


@pytest.mark.parametrize("module", COMMANDS)
def test_every_command_has_help_and_one_line_for_a_bad_flag(capsys, module):
    main = importlib.import_module(module).main
    assert main(["--help"]) == 0
    assert capsys.readouterr().out.startswith("usage: ")
    assert main(["x.json", "--no-such-flag"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].endswith("(see --help)"), err


@pytest.mark.parametrize("error, line", [
    (commandline.UsageError("bad\n  flag"), "prog: bad flag"),
    (ResultsError("a.json: not JSON"), "prog: a.json: not JSON"),
    (ToolError("cmake failed"), "prog: cmake failed"),
    (PermissionError(13, "Permission denied"), "prog: cannot read or write a file: "
                                               "[Errno 13] Permission denied"),
    (KeyboardInterrupt(), "prog: interrupted"),
    (RuntimeError("a bug"), "prog: internal error: RuntimeError: a bug"),
])
def test_run_turns_every_error_into_one_line_and_2(capsys, error, line):
    def body(_argv):
        raise error
    assert commandline.run("prog", body, []) == 2
    assert capsys.readouterr().err.splitlines() == [line]


def test_run_passes_the_status_and_drops_the_command_name():
    seen = []

    def body(argv):
        seen.append(argv)
        return 1
    assert commandline.run("prog", body, ["nightly", "--x"], command="nightly") == 1
    assert commandline.run("prog", body, ["--y"], command="nightly") == 1
    assert seen == [["--x"], ["--y"]]


def test_help_exits_0(capsys):
    def body(argv):
        commandline.parser("prog", DOC).parse_args(argv)
        return 1
    assert commandline.run("prog", body, ["-h"]) == 0
    assert "What follows" in capsys.readouterr().out


@pytest.mark.parametrize("main", [check.main, diagnose.main])
def test_check_and_diagnose_give_one_line_for_bad_arguments(capsys, main):
    assert main(["x.json", "--no-such-flag"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "--no-such-flag" in err[0]
