"""The command line: `gapbench-report COMMAND ...`. Each command is a package of its own with
its entry, `<command>.command.main`, loaded on demand; what they share is cli.kit."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from importlib import metadata

from gapbench_report.cli.kit import fail, open_standard_descriptors, run

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
# Each is a package of its own, its entry <command>.command.
COMMANDS = {command: f"gapbench_report.{command}.command"
            for command in ("render", "compare", "diagnose", "check", "trend", "explain", "fleet")}
# Other installed packages add commands under this entry-point group (gapbench-ci adds baseline
# and nightly): the analysis never imports the orchestration, which imports it.
ENTRY_POINT_GROUP = "gapbench_report.commands"
# Where a source checkout, which has no installed entry points, runs those commands instead.
CHECKOUT_SCRIPTS = {"baseline": "ci/baseline", "nightly": "ci/nightly"}


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
