"""gapbench-ci steady-run: one family's bench run, run once more when the machine changed speed
during it, the steadier of the two kept.

    gapbench-ci steady-run RESULTS_FILE -- GAPBENCH [GAPBENCH'S FLAGS]

Runs GAPBENCH with its flags (which must write RESULTS_FILE: --benchmark_out). Where the SGEMM
ceiling it probed at the run's end moved more than the stability table's limit from the one at
its start (report/gapbench_report/tables/stability.json), it runs again: on a shared VM the
other work, or the host's placement of the vCPUs, has often moved on a minute later. The run
whose probes moved less stays as RESULTS_FILE, with the context key `gapbench.rerun` saying
which run it is and how both moved; the other is kept as reruns/NAME beside it, out of the
report's way. A second run that fails leaves the first in place, said in the same key.

Exit status: gapbench's own for the first run (0, or 1 when a benchmark failed, 2 for bad
arguments); 0 after a rerun that kept a run; 2 with one line on stderr for bad arguments here.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from gapbench_report.cli import kit as commandline
from gapbench_report.cli.kit import UsageError
from gapbench_report.core import metrics
from gapbench_report.inputs.files import write_json_atomic

from gapbench_ci import tools

PROG = "gapbench-ci steady-run"
RERUNS = "reruns"


def probes_moved(path: Path) -> float | None:
    """How far the file's end SGEMM probe is from its start one (a signed fraction), or None
    where the file has no pair of probes (a run of peak/ alone, an unreadable file)."""
    try:
        context = json.loads(path.read_text(encoding="utf-8")).get("context", {})
        start = float(context["stability.sgemm_gflops_start"])
        end = float(context["stability.sgemm_gflops_end"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return end / start - 1 if start > 0 else None


def moved_words(path: Path, moved: float) -> str:
    context = json.loads(path.read_text(encoding="utf-8"))["context"]
    return (f"SGEMM probe {float(context['stability.sgemm_gflops_start']):g} → "
            f"{float(context['stability.sgemm_gflops_end']):g} GFLOP/s ({moved:+.0%})")


def write_with_note(source: Path, target: Path, note: str) -> None:
    """source's results, with `gapbench.rerun` set to note, written atomically as target."""
    data = json.loads(source.read_text(encoding="utf-8"))
    data["context"]["gapbench.rerun"] = note
    write_json_atomic(target, data)


def steady_run(results: Path, command: list[str]) -> int:
    first = tools.run(command, limit=tools.RUN_S, ok=None, echo=True)
    moved = probes_moved(results)
    if first.status != 0 or moved is None or abs(moved) <= metrics.STABILITY_DRIFT:
        return first.status
    first_words = moved_words(results, moved)
    kept = results.parent / RERUNS / results.name
    kept.parent.mkdir(exist_ok=True)
    shutil.copyfile(results, kept)
    print(f"{PROG}: the machine changed speed during this run ({first_words}, more than "
          f"{metrics.STABILITY_DRIFT:.0%}): running it once more", file=sys.stderr, flush=True)
    second = tools.run(command, limit=tools.RUN_S, ok=None, echo=True)
    again = probes_moved(results) if second.status == 0 else None
    if again is None:  # gapbench left the first run's file in place, or wrote one without probes
        write_with_note(kept, results, f"run 1 of 2 kept: run 2 failed (exit status "
                                       f"{second.status}); this run's {first_words}")
        return 0
    second_words = moved_words(results, again)
    if abs(again) <= abs(moved):  # run 1 stays in reruns/
        write_with_note(results, results,
                        f"run 2 of 2 kept: run 1's {first_words}, this run's {second_words}")
        return 0
    # Run 1 was steadier: it comes back, run 2 takes its place in reruns/.
    second_copy = kept.with_name(f".{kept.name}.run2")
    shutil.copyfile(results, second_copy)
    write_with_note(kept, results,
                    f"run 1 of 2 kept: this run's {first_words}, run 2's {second_words}")
    second_copy.replace(kept)
    return 0


def main(argv: list[str] | None = None) -> int:
    def body(args: list[str]) -> int:
        if "--" not in args:
            raise UsageError("give the results file, then -- and the gapbench command")
        split = args.index("--")
        head, command = args[:split], args[split + 1:]
        parser = commandline.parser(PROG, __doc__)
        parser.add_argument("results", type=Path, help="the file gapbench writes")
        options = parser.parse_args(head)
        if not command:
            raise UsageError("no gapbench command after --")
        if not any(a == f"--benchmark_out={options.results}" for a in command):
            raise UsageError(f"the command must write {options.results} "
                             f"(--benchmark_out={options.results})")
        return steady_run(options.results, command)
    return commandline.run(PROG, body, argv, "steady-run")
