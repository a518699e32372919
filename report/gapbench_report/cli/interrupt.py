"""Ctrl-C while a command is still starting: one line and exit status 130, never a traceback.

A command spends its first fraction of a second (more on a loaded machine) importing numpy,
scipy and matplotlib, before cli.kit.run's handlers exist; Python's own SIGINT handler then
raises KeyboardInterrupt inside some import and prints its 20 to 50 lines. So each package's
__init__ (gapbench_report's, and gapbench_ci's, which imports it first) calls
install_when_a_command() before anything else is imported: when this process is one of the
commands, SIGINT ends it at once with one line. cli.kit.run hands SIGINT back to Python
(KeyboardInterrupt, which the command's cleanups see) when the command's own work starts, and
takes it again when it is done. A library import (the tests, a notebook) changes nothing.

What stays before this: Python's start and site's imports (a few milliseconds), where SIGINT
either kills the process (status 130 in a shell, no words) or, inside site, is a traceback
nothing here can reach.
"""

from __future__ import annotations

import os
import signal
import sys

INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a process that Ctrl-C ended
_prog: str | None = None  # set while this module's handler may be the one installed
PACKAGE_PREFIX, SCRIPT_PREFIX = "gapbench_", "gapbench-"  # the probe keeps its own copy


def command_name() -> str | None:
    """This process's command as its messages name it, None when it is no command of gapbench's
    Python packages (named PREFIX + a word: gapbench_report, and the CI's, whose __init__ imports
    this package first, so that one call here covers both before either imports anything else):
    a console script (PREFIX with a dash), or `python -m PACKAGE[.MODULE]`, which Python marks by
    sys.argv[0] == "-m" while the module is looked for (and its packages' __init__ run). A
    package's MODULE is named by its word and the module ("ci/baseline" for ci/'s wrappers)."""
    name = os.path.basename(sys.argv[0]) if sys.argv else ""
    if name.startswith(SCRIPT_PREFIX) and name.count("-") == 1:
        return name
    if name != "-m":
        return None
    argv = getattr(sys, "orig_argv", [])
    module = argv[argv.index("-m") + 1] if "-m" in argv[:-1] else ""
    package, _, rest = module.partition(".")
    if not package.startswith(PACKAGE_PREFIX) or "." in package:
        return None
    if rest and rest != "__main__":
        return package[len(PACKAGE_PREFIX):] + "/" + rest.replace("_", "-")
    return package.replace("_", "-")


def _end(signum, _frame):
    os.write(2, f"{_prog}: interrupted\n".encode(errors="replace"))
    os._exit(INTERRUPTED)


def install_when_a_command() -> None:
    """SIGINT ends this process at once with one line, when it is a command (and SIGINT is not
    ignored, as in a job started with `&`, which it stays)."""
    global _prog
    name = command_name()
    if name is None or _prog is not None:
        return
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        _prog = name
        signal.signal(signal.SIGINT, _end)


def raise_keyboard_interrupt() -> None:
    """The command's work starts: SIGINT is KeyboardInterrupt again (where it was ours)."""
    if _prog is not None and signal.getsignal(signal.SIGINT) is _end:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def end_at_once(prog: str | None = None) -> None:
    """The command's work is done: SIGINT ends it at once again (where it was ours before), so
    that the interpreter's exit is no traceback either."""
    global _prog
    if _prog is not None and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        _prog = prog or _prog
        signal.signal(signal.SIGINT, _end)
