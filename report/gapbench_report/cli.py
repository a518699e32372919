"""gapbench-report: one command for the report's tools.

    gapbench-report render RESULTS... [--baseline FILE ...] --out DIR
    gapbench-report compare BASELINE CONTENDER [--threshold 0.05] [--json] ...
    gapbench-report diagnose RESULTS...
    gapbench-report check RESULTS --family NAME
    gapbench-report trend HISTORY... --out DIR [--filter REGEX] [--last N]
    gapbench-report explain TRACE... [--results DIR_OR_FILES] [--json] [--out DIR]
    gapbench-report baseline NAME [--filter REGEX] [--repetitions N]   (ci/baseline)
    gapbench-report nightly [--good REF] [--filter REGEX] ...           (ci/nightly)

Exit status: 0 fine, 1 a finding that fails the command (a regression, a failed check), 2 bad
input or a tool error, with one line on stderr.
"""

from __future__ import annotations

import importlib
import sys

from gapbench_report import commandline

# Imported on demand: compare and check must not pay for matplotlib. baseline and nightly are
# the orchestration package's (gapbench_ci, which imports this one; never the other way round).
COMMANDS = {"render": "gapbench_report.render", "compare": "gapbench_report.compare",
            "diagnose": "gapbench_report.diagnose", "check": "gapbench_report.check",
            "trend": "gapbench_report.trend", "explain": "gapbench_report.explain",
            "baseline": "gapbench_ci.baseline",
            "nightly": "gapbench_ci.nightly"}


def usage(status: int) -> int:
    print(__doc__.strip())
    return status


def main(argv: list[str] | None = None) -> int:
    commandline.open_standard_descriptors()
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        return commandline.run("gapbench-report", lambda _: usage(0 if argv else 2), [])
    command, rest = argv[0], argv[1:]
    if command not in COMMANDS:
        print(f"gapbench-report: unknown command {command!r} (use {', '.join(COMMANDS)})",
              file=sys.stderr)
        return 2
    module = importlib.import_module(COMMANDS[command])
    return module.main(rest)


if __name__ == "__main__":
    sys.exit(main())
