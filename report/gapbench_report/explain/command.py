"""`gapbench-report explain`: the classic causes of a slow GPU (and of a slow host) in the user's
own profiler trace, each priced with gapbench's measurements of the machine. The rules:
docs/explain.md."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path

from gapbench_report.cli import kit as commandline
from gapbench_report.explain import against, against_writer
from gapbench_report.explain.prices import load_prices
from gapbench_report.explain.rules import Answer, explain, notes
from gapbench_report.explain.writer import as_json, html_page, markdown
from gapbench_report.inputs.files import write_atomic
from gapbench_report.inputs.traces import MAX_TRACE_MIB, read_profile, trace_files

PROG = "gapbench-report explain"
# --help's description: one whole sentence (the module's docstring wraps mid-sentence).
DESCRIPTION = ("What your PyTorch or TensorFlow profiler trace shows slowing each step, each cause "
               "priced with gapbench's results of the machine (docs/explain.md).")


def _parser() -> commandline.Parser:
    p = commandline.parser(PROG, DESCRIPTION, epilog="")
    p.add_argument("traces", nargs="+", metavar="TRACE",
                   help="PyTorch profiler traces (*.pt.trace.json[.gz]) or TensorFlow's "
                        "*.xplane.pb, or folders of them")
    p.add_argument("--results", nargs="+", default=[], metavar="DIR_OR_FILE",
                   help="gapbench results of one machine (files, or a folder of them) that price "
                        "the fixes")
    p.add_argument("--against", metavar="OTHER_TRACE",
                   help="another trace of the same step (the same framework's), on another "
                        "machine or stack: the step set against it, part by part")
    p.add_argument("--against-results", nargs="+", default=[], metavar="DIR_OR_FILE",
                   help="with --against: gapbench results of the other trace's machine, for its "
                        "ceilings (--results are this trace's machine's)")
    p.add_argument("--json", action="store_true", help="print JSON instead of Markdown")
    p.add_argument("--out", type=Path, help="also write explain.html and explain.md there")
    p.add_argument("--max-trace-mib", type=float, default=MAX_TRACE_MIB,
                   help=f"the largest trace read, as JSON (default {MAX_TRACE_MIB} MiB)")
    return p


def _run(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    if not 0 < args.max_trace_mib < math.inf:  # NaN too: it would let every trace through
        raise commandline.UsageError(f"--max-trace-mib must be a positive number of MiB, not "
                                     f"{args.max_trace_mib:g}")
    if args.against_results and not args.against:
        raise commandline.UsageError("--against-results needs --against OTHER_TRACE")
    if args.against:
        return _run_against(args)
    prices = load_prices(args.results)
    answers = []
    for path in trace_files(args.traces):
        profile = read_profile(path, args.max_trace_mib)
        answers.append(Answer(profile, explain(profile, prices), notes(profile, prices)))
    text = (json.dumps(as_json(answers, prices), indent=1) + "\n" if args.json
            else markdown(answers, prices))
    if args.out:
        write_atomic(args.out / "explain.md", markdown(answers, prices))
        write_atomic(args.out / "explain.html", html_page(answers, prices))
    sys.stdout.write(text)
    return 0


def _one_trace(given: list[str], option: str) -> Path:
    found = trace_files(given)
    if len(found) != 1:
        raise commandline.UsageError(f"{option} takes one trace, not {len(found)} "
                                     f"({', '.join(str(f) for f in found[:3])})")
    return found[0]


def _run_against(args) -> int:
    here = read_profile(_one_trace(args.traces, "TRACE with --against"), args.max_trace_mib)
    there = read_profile(_one_trace([args.against], "--against"), args.max_trace_mib)
    comparison = against.compare(here, there, against.load_side(args.results),
                                 against.load_side(args.against_results))
    if args.out:
        write_atomic(args.out / "explain.md", against_writer.markdown(comparison))
        write_atomic(args.out / "explain.html", against_writer.html_page(comparison))
    sys.stdout.write(json.dumps(against_writer.as_json(comparison), indent=1) + "\n" if args.json
                     else against_writer.markdown(comparison))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """0 (findings or none); 2 bad input or a missing library (one line on stderr)."""
    return commandline.run(PROG, _run, argv, command="explain")


if __name__ == "__main__":
    sys.exit(main())
