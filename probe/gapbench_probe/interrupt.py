"""Ctrl-C while gapbench-probe starts (Python imports torch or TensorFlow for seconds): one line
and exit status 130, never a traceback. The package's __init__ calls install_when_a_command()
before anything else is imported: when this process is the command (the gapbench-probe script,
or `python -m gapbench_probe`), SIGINT ends it at once with one line, until cli.main hands it
back to Python (KeyboardInterrupt, which main turns into the same line). gapbench_report has
the same for its commands; the probe installs alone, so it keeps its own few lines."""

from __future__ import annotations

import os
import signal
import sys

INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a process that Ctrl-C ended
PROG = "gapbench-probe"


def is_the_command() -> bool:
    """The console script, or `python -m gapbench_probe` (sys.argv[0] is "-m" while Python
    looks for the module, which is when this package's __init__ runs)."""
    script = os.path.basename(sys.argv[0]) if sys.argv else ""
    argv = getattr(sys, "orig_argv", [])
    return script == PROG or (script == "-m" and "-m" in argv[:-1]
                              and argv[argv.index("-m") + 1].split(".")[0] == "gapbench_probe")


def _end(signum, _frame):
    os.write(2, f"{PROG}: interrupted\n".encode())
    os._exit(INTERRUPTED)


def install_when_a_command() -> None:
    if is_the_command() and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _end)


def raise_keyboard_interrupt() -> None:
    """The command's work starts: SIGINT is KeyboardInterrupt again, where it was ours."""
    if signal.getsignal(signal.SIGINT) is _end:
        signal.signal(signal.SIGINT, signal.default_int_handler)
