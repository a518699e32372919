"""gapbench-ci: one command for what ci/ runs (builds, runs of the gapbench executable, git).

    gapbench-ci baseline NAME [--filter REGEX] [--repetitions N] ...   (ci/baseline)
    gapbench-ci nightly [--good REF] [--filter REGEX] ...               (ci/nightly)
    gapbench-ci gate-proof [--reduced] [--trials N] ...                 (ci/gate-proof)
    gapbench-ci gpu-check [--steps LIST] [--budget SECONDS] ...         (ci/gpu-check)
    gapbench-ci fleet submit|status ...                                 (docs/fleet.md)
    gapbench-ci steady-run RESULTS_FILE -- GAPBENCH [FLAGS]              (ctest -L bench)

`gapbench-ci COMMAND --help` gives a command's flags. Exit status: the command's own; 2 for an
unknown command, with one line on stderr.
"""

from __future__ import annotations

import sys

from gapbench_report.cli import kit as commandline

from gapbench_ci import baseline, fleet, gate_proof, gpu_check, nightly, steady_run

COMMANDS = {"baseline": baseline.main, "nightly": nightly.main, "gate-proof": gate_proof.main,
            "gpu-check": gpu_check.main, "fleet": fleet.main,
            "steady-run": steady_run.main}
PROG = "gapbench-ci"


def usage(status: int) -> int:
    print(__doc__.strip())
    return status


def main(argv: list[str] | None = None) -> int:
    commandline.open_standard_descriptors()
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        return commandline.run(PROG, lambda _: usage(0 if argv else 2), [])
    command, rest = argv[0], argv[1:]
    if command not in COMMANDS:
        return commandline.fail(PROG, f"unknown command {command!r} (use "
                                      f"{', '.join(COMMANDS)})")
    return COMMANDS[command](rest)


if __name__ == "__main__":
    sys.exit(main())
