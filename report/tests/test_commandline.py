"""Tests of what the commands share: every error is one line on stderr and exit status 2."""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from gapbench_report.check import command as check
from gapbench_report.cli import kit as commandline
from gapbench_report.cli import main as dispatcher
from gapbench_report.cli.kit import ToolError
from gapbench_report.diagnose import command as diagnose
from gapbench_report.inputs.results import ResultsError
from tests.checks import help_and_one_line_for_a_bad_flag

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


# Every command of the report: --help works, a bad flag is one line and exit status 2 (those of
# gapbench_ci: ci/tests/test_ci_main.py).
COMMANDS = [f"gapbench_report.{command}.command"
            for command in ("check", "compare", "diagnose", "render", "trend", "explain", "fleet")]


@pytest.mark.parametrize("module", COMMANDS)
def test_every_command_has_help_and_one_line_for_a_bad_flag(capsys, module):
    help_and_one_line_for_a_bad_flag(capsys, module)


@pytest.mark.parametrize("error, line", [
    (commandline.UsageError("bad\n  flag"), "prog: bad flag"),
    (ResultsError("a.json: not JSON"), "prog: a.json: not JSON"),
    (ToolError("cmake failed"), "prog: cmake failed"),
    (PermissionError(13, "Permission denied"), "prog: cannot read or write a file: "
                                               "[Errno 13] Permission denied"),
    (RuntimeError("a bug"), "prog: internal error: RuntimeError: a bug"),
])
def test_run_turns_every_error_into_one_line_and_2(capsys, error, line):
    def body(_argv):
        raise error
    assert commandline.run("prog", body, []) == 2
    assert capsys.readouterr().err.splitlines() == [line]


def test_ctrl_c_is_one_line_and_130_as_a_shell_reports_it(capsys):
    def body(_argv):
        raise KeyboardInterrupt
    assert commandline.run("prog", body, []) == 130
    assert capsys.readouterr().err.splitlines() == ["prog: interrupted"]


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


# ---- gapbench-report COMMAND: the report's own, and those of installed packages ---------------

def _hello(argv):
    """A command another package installs (see with_entry_points)."""
    print(f"hello {argv}")
    return 7


def with_entry_points(monkeypatch, tmp_path, lines: str) -> None:
    """An installed distribution on sys.path whose entry points (group gapbench_report.commands)
    are `lines`: what pip writes for a package that declares them."""
    info = tmp_path / "gapbench_test_commands-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: gapbench-test-commands\n"
                                   "Version: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{dispatcher.ENTRY_POINT_GROUP}]\n{lines}\n")
    monkeypatch.syspath_prepend(str(tmp_path))


def test_a_command_of_an_installed_package_is_found_by_its_entry_point(capsys, monkeypatch,
                                                                        tmp_path):
    with_entry_points(monkeypatch, tmp_path, "hello = tests.test_commandline:_hello")
    assert "hello" in dispatcher.installed_commands()
    assert dispatcher.main(["hello", "--x"]) == 7
    assert capsys.readouterr().out == "hello ['--x']\n"
    assert dispatcher.main(["--help"]) == 0
    # This environment may have gapbench-report installed too (its baseline and nightly).
    listed = re.search(r"^Commands of other installed packages: (.*)\.$", capsys.readouterr().out,
                       re.M)
    assert listed and "hello" in listed.group(1).split(", ")


def test_an_entry_point_cannot_replace_a_command_of_the_report(capsys, monkeypatch, tmp_path):
    with_entry_points(monkeypatch, tmp_path, "check = tests.test_commandline:_hello")
    assert dispatcher.main(["check", "--help"]) == 0
    assert "hello" not in capsys.readouterr().out


def test_the_reports_own_commands_never_read_the_metadata(capsys, monkeypatch):
    """An installed package can neither replace nor slow down or break the report's commands."""
    def scan():
        raise AssertionError("metadata read")
    monkeypatch.setattr(dispatcher, "installed_commands", scan)
    assert dispatcher.main(["check", "--help"]) == 0
    assert capsys.readouterr().out.startswith("usage: gapbench check")


def test_an_entry_point_that_does_not_load_is_one_line_and_2(capsys, monkeypatch, tmp_path):
    with_entry_points(monkeypatch, tmp_path, "broken = gapbench_no_such_module:main")
    assert dispatcher.main(["broken"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("gapbench-report: command 'broken' "
                                               "(gapbench_no_such_module:main) cannot be loaded")


@pytest.mark.parametrize("command", ["baseline", "nightly"])
def test_without_installed_metadata_baseline_says_where_to_run_it(capsys, monkeypatch, command):
    """A source checkout (PYTHONPATH=report) has no entry points: one line, exit status 2."""
    monkeypatch.setattr(dispatcher, "installed_commands", dict)
    assert dispatcher.main([command, "--help"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (f"gapbench-report: '{command}' is gapbench-ci's command, and no "
                            "installed package provides it here (entry points "
                            "gapbench_report.commands): from a source checkout, run "
                            f"ci/{command}\n")


def test_an_unknown_command_is_one_line_naming_the_commands(capsys, monkeypatch):
    monkeypatch.setattr(dispatcher, "installed_commands", dict)
    assert dispatcher.main(["rendr"]) == 2
    assert capsys.readouterr().err == ("gapbench-report: unknown command 'rendr' (use render, "
                                       "compare, diagnose, check, trend, explain, fleet)\n")


def test_without_a_command_the_usage_and_2(capsys):
    assert dispatcher.main([]) == 2
    assert capsys.readouterr().out.startswith("gapbench-report: one command")


def test_the_checkout_runs_baseline_as_a_process_with_one_line(tmp_path):
    """The real lookup, in a process whose sys.path holds the sources and no metadata
    declaring the group (an installed copy of this project, if any, is hidden)."""
    code = ("import sys; from importlib import metadata; "
            "from gapbench_report.cli import main as dispatcher;"
            "metadata.entry_points = lambda: metadata.EntryPoints(()) if hasattr(metadata, "
            "'EntryPoints') else {}; sys.exit(dispatcher.main(['baseline', 'x']))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=ENV, timeout=120, check=False)
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
    assert "run ci/baseline" in done.stderr and "Traceback" not in done.stderr


# ---- closed descriptors, a reader gone, numpy's warnings ---------------------------------------

REPORT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(REPORT), "MPLBACKEND": "Agg"}
GOOD = REPORT / "tests" / "data" / "good.json"

# A child that closes descriptors 0-2, runs an entry point's main with --help, and says in a
# file (argv[2]) whether 0-2 were open on /dev/null afterwards.
CLOSED_CHILD = """
import importlib, os, sys
module, report = sys.argv[1], sys.argv[2]
out = os.open(report, os.O_WRONLY | os.O_CREAT, 0o644)
out = os.dup2(out, 9)
for fd in (0, 1, 2):
    os.close(fd)
importlib.import_module(module).main(["--help"])
null = os.stat(os.devnull)
opened = [os.path.samestat(os.fstat(fd), null) for fd in (0, 1, 2)]
os.write(9, repr(opened).encode())
"""


@pytest.mark.parametrize("module", ["gapbench_report.cli.main", *COMMANDS])
def test_every_entry_point_opens_closed_descriptors_on_dev_null(tmp_path, module):
    report = tmp_path / "report.txt"
    subprocess.run([sys.executable, "-c", CLOSED_CHILD, module, str(report)], env=ENV,
                   timeout=120, check=False)
    assert report.read_text() == "[True, True, True]"


def test_with_stdout_closed_a_command_runs_and_its_output_goes_nowhere(tmp_path):
    done = subprocess.run(f"exec {sys.executable} -m gapbench_report compare {GOOD} {GOOD} "
                          "--json >&-", shell=True, env=ENV, capture_output=True, text=True,
                          timeout=120, check=False)
    assert (done.returncode, done.stderr) == (0, "")


@pytest.mark.parametrize("args", [["diagnose", str(GOOD)], ["--help"]])
def test_a_reader_gone_ends_the_command_quietly_as_sigpipe_does(args):
    read, write = os.pipe()
    os.close(read)  # `| head` that has already read what it wanted
    try:
        done = subprocess.run([sys.executable, "-m", "gapbench_report", *args], stdout=write,
                              stderr=subprocess.PIPE, text=True, env=ENV, timeout=120,
                              check=False)
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (-signal.SIGPIPE, "")


def test_numpy_and_matplotlib_warnings_are_no_lines_on_stderr(tmp_path):
    """A link bandwidth of 1e308 GB/s: finite, so taken, and drawn with an overflow inside
    matplotlib's log scale."""
    data = json.loads((REPORT / "tests" / "data" / "render" / "transfer.json").read_text())
    data["context"]["pcie.bandwidth_max_gbps"] = "1e308"
    absurd = tmp_path / "transfer.json"
    absurd.write_text(json.dumps(data))
    done = subprocess.run([sys.executable, "-m", "gapbench_report", "render", str(absurd),
                           "--out", str(tmp_path / "r")], capture_output=True, text=True,
                          env=ENV, timeout=300, check=False)
    assert done.returncode == 0 and done.stdout.strip() == str(tmp_path / "r" / "index.html")
    assert done.stderr == ""


def test_unreadable_package_metadata_is_one_line_and_exit_2(capsys, monkeypatch):
    def broken(**_):
        raise OSError("a .dist-info that cannot be read")
    monkeypatch.setattr(dispatcher.metadata, "entry_points", broken)
    assert dispatcher.main(["baseline"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot read the installed packages' commands" in err
