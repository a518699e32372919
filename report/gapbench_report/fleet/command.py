"""`gapbench-report fleet DIR --out OUT`: which node of a fleet is slow for this work, and why.
It reads DIR (inputs.fleet), judges each hardware group (fleet.judge) and writes the page
(fleet.page). How to read the page: docs/fleet.md."""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from pathlib import Path

from gapbench_report.cli import kit as commandline
from gapbench_report.fleet.judge import build_fleet
from gapbench_report.fleet.page import html_report, markdown_report
from gapbench_report.inputs.files import FolderBusy, OutputSet
from gapbench_report.inputs.fleet import node_folders, printable, read_fleet
from gapbench_report.inputs.results import ResultsError

PROG = "gapbench-report fleet"


def render_fleet(root: Path, out: Path, keep: re.Pattern | None = None) -> Path:
    """Reads DIR, writes summary.md and index.html into `out` together (both from this run, or
    neither written; files.OutputSet: a second report into `out` meanwhile is refused); returns
    index.html."""
    if out.exists() and not out.is_dir():
        raise ResultsError(f"{out}: exists and is not a directory")
    nodes = read_fleet(node_folders(root, skip=[out]))
    fleet = build_fleet(root, nodes, keep)
    # Text from a node passed printable() on its way in; a surrogate left anywhere else (a
    # path given on the command line) is escaped here rather than refused by the encoder.
    pages = {"summary.md": encoded(markdown_report(fleet)),
             "index.html": encoded(html_report(fleet))}
    try:
        with OutputSet(out, PROG) as outputs:
            outputs.replace(pages)
    except FolderBusy as e:
        raise ResultsError(str(e)) from None
    return out / "index.html"


def encoded(text: str) -> bytes:
    return text.encode("utf-8", "backslashreplace")


def _parser() -> commandline.Parser:
    p = commandline.parser(PROG, "One page on a fleet: which node is slow for this work, and "
                                 "why (docs/fleet.md).", epilog="")
    p.add_argument("fleet", type=Path, help="the fleet folder: DIR/<host>/ per node")
    p.add_argument("--out", required=True, type=Path, help="the folder to write into")
    p.add_argument("--filter", metavar="REGEX",
                   help="compare only the benchmarks matching REGEX (your kind of work)")
    return p


def _run(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    try:
        keep = re.compile(args.filter) if args.filter else None
    except re.error as e:
        raise commandline.UsageError(f"--filter {args.filter!r}: {e}") from None
    print(printable(str(render_fleet(args.fleet, args.out, keep))))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return commandline.run(PROG, _run, argv, "fleet")


if __name__ == "__main__":
    sys.exit(main())
