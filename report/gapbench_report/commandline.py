"""The command line: `gapbench-report COMMAND ...` (main), and what every command shares: bad
arguments and every error end as one line on stderr and exit status 2, never a traceback (CI
reads the status and the line)."""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import warnings
from collections.abc import Callable, Sequence
from importlib import metadata

from gapbench_report import interrupt
from gapbench_report.labels import printable
from gapbench_report.results import ResultsError

USAGE = """gapbench-report: one command for the report's tools.

    gapbench-report render RESULTS... [--baseline FILE ...] --out DIR
    gapbench-report compare BASELINE CONTENDER [--threshold 0.05] [--json] ...
    gapbench-report diagnose RESULTS...
    gapbench-report check RESULTS --family NAME
    gapbench-report trend HISTORY... --out DIR [--filter REGEX] [--last N]
    gapbench-report explain TRACE... [--results DIR_OR_FILES] [--json] [--out DIR]
    gapbench-report fleet DIR --out OUT [--filter REGEX]
    gapbench-report COMMAND --help   (each command's flags)

Exit status: 0 fine, 1 a finding that fails the command (a regression, a failed check), 2 bad
input or a tool error, with one line on stderr."""

# The report's own commands, imported on demand: compare and check must not pay for matplotlib.
COMMANDS = {"render": "gapbench_report.render", "compare": "gapbench_report.compare",
            "diagnose": "gapbench_report.diagnose", "check": "gapbench_report.check",
            "trend": "gapbench_report.trend", "explain": "gapbench_report.explain",
            "fleet": "gapbench_report.fleet_report"}
# Other installed packages add commands under this entry-point group (gapbench-ci adds baseline
# and nightly): the analysis never imports the orchestration, which imports it.
ENTRY_POINT_GROUP = "gapbench_report.commands"
# Where a source checkout, which has no installed entry points, runs those commands instead.
CHECKOUT_SCRIPTS = {"baseline": "ci/baseline", "nightly": "ci/nightly"}


class UsageError(Exception):
    """Bad arguments: the message, one line."""


class ToolError(Exception):
    """Something around the benchmarks failed (git, a build, a crash); str() is one line."""


class Terminated(BaseException):
    """A terminating signal (SIGTERM, SIGHUP) arrived while a command waited on a child it
    started (gapbench_ci's tools.run turns them into this, as Python turns SIGINT into
    KeyboardInterrupt): the child has been stopped on the way out, and the command ends by the
    signal, after its cleanups."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


class Parser(argparse.ArgumentParser):
    """argparse that raises UsageError instead of printing its usage and exiting, and that
    names an unknown option before a missing argument (`ci/baseline -x` is a typo, not a
    baseline without a name)."""

    def parse_known_args(self, args=None, namespace=None):
        self._given = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def error(self, message: str):
        unknown = self.unknown_options(getattr(self, "_given", []))
        if unknown and message.startswith("the following arguments are required"):
            message = f"unrecognized arguments: {' '.join(unknown)}"
        raise UsageError(f"{message} (see --help)")

    def unknown_options(self, args: Sequence[str]) -> list[str]:
        """The words of `args` that look like options and are none of this parser's (nor an
        abbreviation of one), up to a "--"."""
        known = self._option_string_actions
        unknown = []
        for arg in args:
            if arg == "--":
                break
            if not arg.startswith("-") or arg == "-" or arg[1:2].isdigit():
                continue
            option = arg.split("=", 1)[0]
            if option in known or (option.startswith("--") and any(
                    k.startswith(option) for k in known if k.startswith("--"))):
                continue
            if not option.startswith("--") and option[:2] in known:  # -n5, -vv
                continue
            unknown.append(arg)
        return unknown


def parser(prog: str, doc: str, epilog: str | None = None) -> Parser:
    """The Parser of a command (every command builds its parser here). `doc` is the command's
    module docstring, or one line; its first line is the description.

    Without `epilog`, `doc` is laid out as the ci commands' docstrings are: a summary line, a
    blank line, the usage block, a blank line, the rest; the rest becomes the epilog, printed as
    written. With `epilog` ("" for none), that is the epilog, and --help fills it and the
    description to the terminal's width."""
    lines = doc.splitlines()
    if epilog is not None:
        return Parser(prog=prog, description=lines[0], epilog=epilog or None)
    end = next((i for i in range(2, len(lines)) if not lines[i].strip()), len(lines))
    return Parser(prog=prog, description=lines[0],
                  formatter_class=argparse.RawDescriptionHelpFormatter,
                  epilog="\n".join(lines[end + 1:]))


def fail(prog: str, message: object) -> int:
    """The one line of an error, on stderr, its control characters escaped (a name from a file
    may hold an ESC or a BEL, which the terminal would act on)."""
    print(f"{prog}: " + printable(" ".join(str(message).split())), file=sys.stderr)
    return 2


def open_standard_descriptors() -> None:
    """Descriptors 0, 1 and 2 open, to /dev/null where they were closed (`cmd >&-`), before any
    file is opened: a file would otherwise take the number, and console text (ours or a child's)
    would land in it."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            os.open(os.devnull, os.O_RDWR)  # the lowest free number: fd, as those below are open
    # Python found them closed at start-up and left these None.
    for name, fd, mode in (("stdin", 0, "r"), ("stdout", 1, "w"), ("stderr", 2, "w")):
        if getattr(sys, name) is None:
            setattr(sys, name, open(fd, mode, closefd=False))


def end_quietly_on_broken_pipe() -> None:
    """The reader of the output went away (`diagnose | head`): end as a Unix tool does, killed by
    SIGPIPE (which Python ignores, raising BrokenPipeError instead), without a word."""
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGPIPE)


def run(prog: str, body: Callable[[list[str]], int], argv: Sequence[str] | None,
        command: str | None = None) -> int:
    """body(argv)'s exit status, with every error as one line and 2; Ctrl-C is one line and
    130, a SIGTERM or SIGHUP that stopped a child one line and the end by that signal. `command`
    is the sub-command's name, dropped when argv still starts with it (`gapbench-report nightly
    ...` run through ci/nightly)."""
    open_standard_descriptors()
    args = list(sys.argv[1:] if argv is None else argv)
    if command and args[:1] == [command]:
        args = args[1:]
    try:
        try:
            # Ctrl-C while the command's modules were imported ended it at once (interrupt.py);
            # from here on it is KeyboardInterrupt, so that what the command does is undone.
            interrupt.raise_keyboard_interrupt()
            with warnings.catch_warnings():
                # numpy's and matplotlib's arithmetic warnings (an overflow while drawing an
                # absurd but finite figure) are lines of their source code, nothing to act on.
                warnings.simplefilter("ignore", RuntimeWarning)
                status = body(args)
        except SystemExit as e:  # --help
            status = e.code if isinstance(e.code, int) else 0
        sys.stdout.flush()  # a reader gone shows here, inside the try, not at exit
        return status
    except KeyboardInterrupt:
        fail(prog, "interrupted")
        return interrupt.INTERRUPTED
    except Terminated as e:
        fail(prog, f"stopped by {signal.Signals(e.signum).name}")
        signal.signal(e.signum, signal.SIG_DFL)  # end as the signal ends a process
        os.kill(os.getpid(), e.signum)
        return 128 + e.signum  # not reached
    except BrokenPipeError:
        end_quietly_on_broken_pipe()
        return 141  # not reached: the signal ends the process (141 is how a shell shows it)
    except (UsageError, ResultsError, ToolError) as e:
        return fail(prog, e)
    except OSError as e:
        return fail(prog, f"cannot read or write a file: {e}")
    except Exception as e:  # noqa: BLE001 -- a bug must still be one line, not a traceback
        return fail(prog, f"internal error: {type(e).__name__}: {e}")
    finally:
        interrupt.end_at_once(prog)  # the interpreter's exit: Ctrl-C is one line, no traceback


# ---- gapbench-report COMMAND ------------------------------------------------------------------

def installed_commands() -> dict[str, metadata.EntryPoint]:
    """The commands installed packages add (ENTRY_POINT_GROUP), by name; the first found wins,
    as on sys.path."""
    found = metadata.entry_points()
    # Python 3.10 and later select by group; 3.9 returns a dict of groups.
    group = (found.select(group=ENTRY_POINT_GROUP) if hasattr(found, "select")
             else found.get(ENTRY_POINT_GROUP, ()))
    commands: dict[str, metadata.EntryPoint] = {}
    for entry in group:
        commands.setdefault(entry.name, entry)
    return commands


def usage(status: int, extra: Sequence[str]) -> int:
    print(USAGE)
    if extra:
        print(f"\nCommands of other installed packages: {', '.join(sorted(extra))}.")
    return status


def main(argv: Sequence[str] | None = None) -> int:
    """gapbench-report's entry point: the command's exit status, or 2 with one line."""
    prog = "gapbench-report"
    open_standard_descriptors()
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] and argv[0] in COMMANDS:  # the report's own: no metadata needed, none read
        return importlib.import_module(COMMANDS[argv[0]]).main(argv[1:])
    try:
        installed = installed_commands()
    except Exception as e:  # noqa: BLE001 -- unreadable metadata is one line, not a traceback
        return fail(prog, f"cannot read the installed packages' commands ({ENTRY_POINT_GROUP}): "
                          f"{type(e).__name__}: {e}")
    extra = {name: e for name, e in installed.items() if name not in COMMANDS}
    if not argv or argv[0] in ("-h", "--help"):
        return run(prog, lambda _: usage(0 if argv else 2, list(extra)), [])
    command, rest = argv[0], argv[1:]
    if command in extra:
        try:
            command_main = extra[command].load()
        except Exception as e:  # noqa: BLE001 -- a broken install is one line, not a traceback
            return fail(prog, f"command {command!r} ({extra[command].value}) cannot be "
                              f"loaded: {type(e).__name__}: {e}")
        return command_main(rest)
    if command in CHECKOUT_SCRIPTS:
        return fail(prog, f"{command!r} is gapbench-ci's command, and no installed package "
                          f"provides it here (entry points {ENTRY_POINT_GROUP}): from a source "
                          f"checkout, run {CHECKOUT_SCRIPTS[command]}")
    return fail(prog, f"unknown command {command!r} (use {', '.join([*COMMANDS, *extra])})")
