"""What every gapbench-report command shares: bad arguments and every error end as one line on
stderr and exit status 2, never a traceback (CI reads the status and the line)."""

from __future__ import annotations

import argparse
import sys
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


def run(prog: str, body: Callable[[list[str]], int], argv: Sequence[str] | None,
        command: str | None = None) -> int:
    """body(argv)'s exit status, with every error as one line and 2. `command` is the
    sub-command's name, dropped when argv still starts with it (`gapbench-report nightly ...`
    run through ci/nightly)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if command and args[:1] == [command]:
        args = args[1:]
    try:
        return body(args)
    except SystemExit as e:  # --help
        return e.code if isinstance(e.code, int) else 0
    except KeyboardInterrupt:
        return fail(prog, "interrupted")
    except (UsageError, ResultsError, ToolError) as e:
        return fail(prog, e)
    except OSError as e:
        return fail(prog, f"cannot read or write a file: {e}")
    except Exception as e:  # noqa: BLE001 -- a bug must still be one line, not a traceback
        return fail(prog, f"internal error: {type(e).__name__}: {e}")
