"""gapbench-probe: gapbench's benchmarks through your own PyTorch or TensorFlow.

    gapbench-probe [--framework torch|tensorflow|all] [--device cpu|gpu|all]
                   [--profile quick|full] [--out DIR] [--filter REGEX] [--seed N]
                   [--gapbench PATH]

Runs with whichever Python runs it, and installs nothing. Writes DIR/framework-<name>.json
(default DIR: results/local, beside gapbench's own files), Google Benchmark's JSON in gapbench's
scheme, for `gapbench-report render`, `check` and `compare`. A framework that Python lacks gets
a file all the same, every benchmark skipped with the reason, except under `--framework all`
where a file of it is there already (another Python's figures): that one is kept. A framework
none of whose benchmarks matches --filter is not written at all.

Exit status: 0 every benchmark ran or was skipped with a reason; 1 a benchmark failed (a wrong
result or an error of the framework; the file is still written, with the error in it); 2 bad
input (one line on stderr).
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from gapbench_probe import __version__, interrupt
from gapbench_probe.gbjson import write_atomic
from gapbench_probe.machine import ask_doctor, machine_id
from gapbench_probe.plan import DEVICES, FRAMEWORKS, PROFILES

if TYPE_CHECKING:
    from gapbench_probe.run import Run

PROG = "gapbench-probe"
# The numpy the probe needs, and how to get it into the Python that runs it.
NEEDS_NUMPY = (f"needs numpy, which this Python ({sys.executable}) lacks: {sys.executable} -m "
               "pip install numpy (PyTorch and TensorFlow bring it)")


class UsageError(Exception):
    """Bad input; str() is the one line to show."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, no usage block
        raise UsageError(message)


def parser() -> Parser:
    p = Parser(prog=PROG, description=__doc__.split("\n\n")[0],
               formatter_class=argparse.RawDescriptionHelpFormatter,
               epilog="\n\n".join(__doc__.split("\n\n")[2:]))
    p.add_argument("--framework", default="all", metavar="|".join([*FRAMEWORKS, "all"]),
                   help="the framework to measure (default: all)")
    p.add_argument("--device", default="all", metavar="cpu|gpu|all",
                   help="where to run (default: all; a GPU the framework cannot see makes skips)")
    p.add_argument("--profile", default=os.environ.get("GAPBENCH_PROFILE", "quick"),
                   metavar="quick|full",
                   help="sizes and repetitions, as gapbench's (default: quick, or "
                        "GAPBENCH_PROFILE)")
    p.add_argument("--out", default="results/local", type=Path, metavar="DIR",
                   help="folder for framework-<name>.json (default: results/local)")
    p.add_argument("--filter", metavar="REGEX", help="only the benchmarks whose name matches")
    p.add_argument("--seed", metavar="N",
                   help="seed of the random input data (default 42, or GAPBENCH_SEED)")
    p.add_argument("--gapbench", metavar="PATH",
                   help="the gapbench executable whose `doctor` gives the machine id (default: "
                        "build/<preset>/gapbench of this checkout, default's first, else "
                        "gapbench on PATH; without one, the machine.id of gapbench's results "
                        "in --out)")
    p.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    return p


def one_of(what: str, value: str, choices: tuple[str, ...]) -> tuple[str, ...]:
    if value == "all":
        return choices
    if value not in choices:
        raise UsageError(f"unknown {what} {value!r} ({', '.join(choices)} or all)")
    return (value,)


def seed_of(given: str | None) -> int:
    """--seed, else GAPBENCH_SEED, else 42, as gapbench takes it: a whole number from 0 to
    2^64 - 1 (numpy refuses a negative seed, which would fail every benchmark)."""
    flag, text = ("--seed", given) if given is not None else \
        ("GAPBENCH_SEED", os.environ.get("GAPBENCH_SEED") or "42")
    if not (re.fullmatch(r"[0-9]+", text) and int(text) < 2**64):
        raise UsageError(f"{flag} needs a whole number from 0 to 2^64 - 1, got {text!r}")
    return int(text)


def parse(argv: list[str] | None) -> argparse.Namespace:
    args = parser().parse_args(argv)  # --help and --version need no numpy
    try:
        import numpy  # noqa: F401 -- every run needs it; the framework modules import it
    except ImportError:
        raise UsageError(NEEDS_NUMPY) from None
    from gapbench_probe import frameworks
    from gapbench_probe.run import selected

    args.frameworks = one_of("framework", args.framework, tuple(frameworks.ADAPTERS))
    args.devices = one_of("device", args.device, DEVICES)
    if args.profile not in PROFILES:
        raise UsageError(f"unknown profile {args.profile!r} (quick or full)")
    args.profile = PROFILES[args.profile]
    args.seed = seed_of(args.seed)
    try:
        args.pattern = re.compile(args.filter) if args.filter is not None else None
    except re.error as e:
        raise UsageError(f"--filter {args.filter!r} is not a regular expression: {e}") from None
    if args.gapbench and not os.access(args.gapbench, os.X_OK):
        raise UsageError(f"--gapbench {args.gapbench}: no such executable")
    if not any(selected(frameworks.ADAPTERS[f], args.profile, args.devices, args.pattern)
               for f in args.frameworks):
        raise UsageError(f"no benchmark matches --filter {args.filter!r}")
    writable(args.out)
    return args


def writable(folder: Path) -> None:
    """The output folder made and written to before anything runs: a run of minutes must not
    end in a folder it cannot write."""
    probe = folder / f".gapbench-probe.{os.getpid()}.tmp"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as e:
        raise UsageError(f"--out {folder}: cannot write there ({e.strerror or e})") from None


def open_standard_descriptors() -> None:
    """Descriptors 0, 1 and 2 open, to /dev/null where they were closed (`gapbench-probe >&-`),
    before any file is opened: a results file would otherwise take the number, and the progress
    lines would land in it. (The report's cli/kit.py does the same; the probe imports no
    report.)"""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            os.open(os.devnull, os.O_RDWR)  # the lowest free number: fd, as those below are open
    for name, fd, mode in (("stdin", 0, "r"), ("stdout", 1, "w"), ("stderr", 2, "w")):
        if getattr(sys, name) is None:  # Python found it closed at start-up
            setattr(sys, name, open(fd, mode, closefd=False))


def main(argv: list[str] | None = None) -> int:
    open_standard_descriptors()
    try:
        try:
            status = probe(sys.argv[1:] if argv is None else argv)
        except SystemExit as e:  # --help, --version
            status = e.code if isinstance(e.code, int) else 0
        sys.stdout.flush()  # a reader gone shows here, not at exit
        return status
    except UsageError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return interrupt.INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`gapbench-probe | head`): end as a Unix tool does, killed by
        # SIGPIPE (Python ignores it and raises this instead), without a word.
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGPIPE)
        return 141  # not reached


def probe(argv: list[str]) -> int:
    args = parse(argv)
    from gapbench_probe import frameworks
    from gapbench_probe.run import run_framework, selected

    # Imported (numpy turns a KeyboardInterrupt inside its import into an ImportError, read as
    # "needs numpy"): from here on Ctrl-C is KeyboardInterrupt, which stops gapbench's doctor
    # and the runs, and ends as one line.
    interrupt.raise_keyboard_interrupt()
    machine = machine_id(ask_doctor(args.gapbench), args.out)
    failed = False
    for name in args.frameworks:
        adapter, path = frameworks.ADAPTERS[name], args.out / f"framework-{name}.json"
        if not selected(adapter, args.profile, args.devices, args.pattern):
            print(f"{PROG}: no {name} benchmark matches --filter {args.filter!r}: {path} not "
                  "written")
            continue
        run = run_framework(adapter, args.devices, args.profile, args.seed, machine,
                            args.pattern)
        status = run.context["framework.status"]
        if status != "ok" and args.framework == "all":
            # Not asked for by name: the file may hold the figures another Python measured.
            if path.exists():
                print(f"{PROG}: {status}: {path} kept as it was", file=sys.stderr)
            elif write(path, run):
                print(f"{PROG}: {status}: wrote {path}, every benchmark skipped", file=sys.stderr)
            else:
                return 2
            continue
        if run.failed and not run.timed and not run.skipped and path.exists():
            # Nothing measured, everything failed: no reason to lose the figures of a run
            # that worked.
            print(f"{PROG}: every {name} benchmark failed ({run.failed[0]}): {path} kept as it "
                  "was", file=sys.stderr)
            failed = True
            continue
        if not write(path, run):
            return 2
        skipped = sum(run.skipped.values())
        print(f"{PROG}: wrote {path}: {run.timed} timed, {skipped} skipped, "
              f"{len(run.failed)} failed")
        for reason, count in run.skipped.items():
            print(f"  skipped {count}: {reason}")
        failed = failed or bool(run.failed)
    return 1 if failed else 0


def write(path: Path, run: Run) -> bool:
    try:
        write_atomic(path, run.document())
    except OSError as e:
        print(f"{PROG}: {path}: cannot write: {e.strerror or e}", file=sys.stderr)
        return False
    return True
