"""`gapbench-report diagnose RESULTS...`: what one run's figures say is slow, and why, as text
(the rules: diagnose.rules)."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from gapbench_report.cli import kit as commandline
from gapbench_report.core.labels import printable_text
from gapbench_report.diagnose.rules import PROG, diagnose, verdict
from gapbench_report.inputs.results import load_results


def _parser() -> commandline.Parser:
    p = commandline.parser(PROG, "What the run's figures say is slow, and why.", epilog="")
    p.add_argument("results", nargs="+", help="the run's results files (one per family)")
    return p


def _run(argv: list[str]) -> int:
    runs = [load_results(p) for p in _parser().parse_args(argv).results]
    findings = diagnose(runs)
    if not findings:
        print("Nothing in these figures points to a known cause of slowness.")
        return 0
    print(printable_text(verdict(findings)))
    for f in findings:
        tag = "lesson" if f.lesson else "gapbench defect" if f.defect else f.severity
        print(printable_text(f"[{tag}] {f.title}\n    {f.text}"))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """`gapbench-report diagnose RESULTS...`: the findings as text; 0, or 2 for unusable input."""
    return commandline.run(PROG, _run, argv)


if __name__ == "__main__":
    sys.exit(main())
