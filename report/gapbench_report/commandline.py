"""What every gapbench-report command shares: bad arguments and every error end as one line on
stderr and exit status 2, never a traceback (CI reads the status and the line)."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import warnings
from collections.abc import Callable, Sequence

from gapbench_report.results import ResultsError


class UsageError(Exception):
    """Bad arguments: the message, one line."""


class ToolError(Exception):
    """Something around the benchmarks failed (git, a build, a crash); str() is one line."""


class Parser(argparse.ArgumentParser):
    """argparse that raises UsageError instead of printing its usage and exiting."""

    def error(self, message: str):
        raise UsageError(f"{message} (see --help)")


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
    print(f"{prog}: " + " ".join(str(message).split()), file=sys.stderr)
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
    """body(argv)'s exit status, with every error as one line and 2. `command` is the
    sub-command's name, dropped when argv still starts with it (`gapbench-report nightly ...`
    run through ci/nightly)."""
    open_standard_descriptors()
    args = list(sys.argv[1:] if argv is None else argv)
    if command and args[:1] == [command]:
        args = args[1:]
    try:
        try:
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
        return fail(prog, "interrupted")
    except BrokenPipeError:
        end_quietly_on_broken_pipe()
        return 141  # not reached: the signal ends the process (141 is how a shell shows it)
    except (UsageError, ResultsError, ToolError) as e:
        return fail(prog, e)
    except OSError as e:
        return fail(prog, f"cannot read or write a file: {e}")
    except Exception as e:  # noqa: BLE001 -- a bug must still be one line, not a traceback
        return fail(prog, f"internal error: {type(e).__name__}: {e}")
