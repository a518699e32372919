"""gapbench-ci fleet submit|status: gapbench on many machines through Slurm (docs/fleet.md).

    gapbench-ci fleet submit --out DIR [--nodes N | --nodelist LIST] ...   (the sbatch job)
    gapbench-ci fleet status DIR                                          (where it stands)

The report on DIR is the report package's: gapbench-report fleet DIR --out REPORT.
`gapbench-ci fleet COMMAND --help` gives a command's flags.
"""

from __future__ import annotations

from gapbench_report.cli import kit as commandline

from gapbench_ci import fleet_status, fleet_submit

PROG = "gapbench-ci fleet"
COMMANDS = {"submit": fleet_submit.main, "status": fleet_status.main}


def main(argv: list[str] | None = None) -> int:
    argv = list(argv or [])
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv else 2
    if argv[0] not in COMMANDS:
        return commandline.fail(PROG, f"unknown command {argv[0]!r} (use {', '.join(COMMANDS)})")
    return COMMANDS[argv[0]](argv[1:])
