"""gapbench-ci steady-run: one family's bench run, made of two runs of gapbench, a moment apart,
pooled; a run during which the machine changed speed is replaced by one more.

    gapbench-ci steady-run RESULTS_FILE -- GAPBENCH [GAPBENCH'S FLAGS]

Runs GAPBENCH with its flags (which must write RESULTS_FILE: --benchmark_out) twice and writes
RESULTS_FILE as the two runs pooled; a run whose SGEMM probes moved past the stability table's
limit is replaced by a third, the two steadiest pooled. Why, and what the file then holds:
docs/setup.md#the-workflows.

Exit status: 0; the status of the first run of gapbench that failed (1 when a benchmark failed, 2
for bad arguments), whose file is then left as it wrote it; 2 with one line on stderr for bad
arguments here.
"""

from __future__ import annotations

import sys
from pathlib import Path

from gapbench_report.cli import kit as commandline
from gapbench_report.cli.kit import UsageError
from gapbench_report.core import metrics
from gapbench_report.inputs.files import write_json_atomic
from gapbench_report.inputs.results import ResultsError, read_document

from gapbench_ci import tools
from gapbench_ci.runner import pool

PROG = "gapbench-ci steady-run"
RERUNS = "reruns"
POOLED = 2  # runs pooled into one family's file
# The CPU accounting, averaged over the runs by their windows.
WEIGHTED = ("stability.own_cpus", "stability.other_cpus", "stability.steal")


def probes_moved(doc: dict) -> float | None:
    """How far a run's end SGEMM probe is from its start one (a signed fraction), or None where
    the run has no pair of probes (a run of peak/ alone)."""
    held = metrics.ceilings_held_in(doc.get("context", {})).get("SGEMM")
    return held[1] / held[0] - 1 if held else None


def run_document(results: Path) -> dict:
    """What a run of gapbench wrote, read as the report reads a results file (a regular file,
    within its size limit; one line naming the file otherwise)."""
    doc = read_document(results)
    if not isinstance(doc, dict) or not isinstance(doc.get("context"), dict):
        raise ResultsError(f"{results}: not a gapbench results file (no context)")
    return doc


def unsteady(moved: float | None) -> bool:
    return moved is not None and abs(moved) > metrics.STABILITY_DRIFT


def moved_words(doc: dict) -> str:
    start, end = metrics.ceilings_held_in(doc["context"])["SGEMM"]
    return f"SGEMM probe {start:g} → {end:g} GFLOP/s ({end / start - 1:+.0%})"


def pooled(docs: list[dict]) -> dict:
    """The runs as one results document (runner.pool), its context the first run's with the
    last run's end probes and the CPU accounting over all of them."""
    data = pool(docs)
    context = data["context"]
    for key, value in docs[-1]["context"].items():
        if key.startswith("stability.") and key.endswith("_end"):
            context[key] = value
    windows = [float(d["context"].get("stability.window_s", 0) or 0) for d in docs]
    if all(w > 0 for w in windows) and all(
            key in d["context"] for d in docs for key in WEIGHTED):
        context["stability.window_s"] = f"{sum(windows):.2f}"
        for key in WEIGHTED:
            mean = sum(float(d["context"][key]) * w for d, w in zip(docs, windows)) / sum(windows)
            context[key] = f"{mean:.3f}" if key == "stability.steal" else f"{mean:.2f}"
    return data


def steady_run(results: Path, command: list[str]) -> int:
    runs: list[tuple[int, dict]] = []  # (its number, what it wrote)
    while len(runs) < POOLED or (len(runs) == POOLED
                                 and any(unsteady(probes_moved(d)) for _, d in runs)):
        if len(runs) == POOLED:
            number, doc = next(r for r in runs if unsteady(probes_moved(r[1])))
            print(f"{PROG}: the machine changed speed during run {number} ({moved_words(doc)}, "
                  f"more than {metrics.STABILITY_DRIFT:.0%}): one more run", file=sys.stderr,
                  flush=True)
        done = tools.run(command, limit=tools.RUN_S, ok=None, echo=True)
        if done.status != 0:
            keep_aside(results, [d for _, d in runs])
            return done.status  # its file, as gapbench wrote it, says what failed
        runs.append((len(runs) + 1, run_document(results)))
    steadiest = sorted(runs, key=lambda r: abs(probes_moved(r[1]) or 0.0))[:POOLED]
    kept = sorted(steadiest, key=lambda r: r[0])
    dropped = [r for r in runs if r not in kept]
    data = pooled([d for _, d in kept])
    if dropped:
        number, doc = dropped[0]
        data["context"][metrics.RERUN_KEY] = (
            f"runs {' and '.join(str(n) for n, _ in kept)} of {len(runs)} pooled: run "
            f"{number}'s {moved_words(doc)}; the pooled runs' "
            + ", ".join(moved_words(d) for _, d in kept))
        keep_aside(results, [doc])
    write_json_atomic(results, data)
    return 0


def keep_aside(results: Path, docs: list[dict]) -> None:
    """The runs not in the family's file, as reruns/NAME (the last of them)."""
    if docs:
        aside = results.parent / RERUNS / results.name
        aside.parent.mkdir(exist_ok=True)
        write_json_atomic(aside, docs[-1])


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
