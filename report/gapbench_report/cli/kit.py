"""What every command shares: its parser, and a run in which bad arguments and every error end as
one line on stderr and exit status 2, never a traceback (CI reads the status and the line). The
dispatcher, `gapbench-report COMMAND`, is cli.main."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import warnings
from collections.abc import Callable, Sequence

from gapbench_report.cli import interrupt
from gapbench_report.core.labels import printable
from gapbench_report.inputs.results import ResultsError


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
