"""The nightly's decision: rounds of A B B A, judged with compare's statistics, and a regression
called only where a rerun of the flagged benchmarks flags it again (docs/regressions.md#nightly).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

from gapbench_report.compare import command as cmp
from gapbench_report.inputs.files import write_json_atomic
from gapbench_report.inputs.results import Results, load_results

from gapbench_ci.runner import RunSpec, Side, exact_filter, pool, read_document, run_gapbench

# Many short runs, as ci/gate-proof proves them: the spread between processes dwarfs the spread
# within one. Why 16 rounds of 2: docs/regressions.md#why-16-rounds-of-2-repetitions.
DEFAULT_ROUNDS = 16
DEFAULT_REPETITIONS = 2
RERUN_FACTOR = 3
PROFILE_REPETITIONS = {"quick": 5, "full": 10}  # fixtures/harness.h Profile::repetitions()


def log(message: str) -> None:
    print(f"nightly: {message}", file=sys.stderr, flush=True)


@dataclass
class Pass:
    """One interleaved comparison: the pooled files and compare's verdict on them."""

    comparison: cmp.Comparison
    baseline: Results
    contender: Results


@dataclass
class Verdict:
    first: Pass
    rerun: Pass | None
    final: cmp.Comparison  # the first pass's rows, flagged ones settled by the rerun
    flagged: list[str] = field(default_factory=list)  # SLOWER in the first pass
    confirmed: list[str] = field(default_factory=list)  # SLOWER in both passes
    failures: list[str] = field(default_factory=list)  # failed here, ran in the known-good

    @property
    def regression(self) -> bool:
        return bool(self.confirmed or self.failures)

    @property
    def exit_code(self) -> int:
        return 1 if self.regression else 0

    def status_of(self, name: str) -> str | None:
        return next((r.status for r in self.final.rows if r.name == name), None)


def samples_per_side(spec: RunSpec, rounds: int) -> int:
    reps = spec.repetitions or PROFILE_REPETITIONS[spec.profile]
    return 2 * rounds * reps  # each round runs each side twice


def interleaved_pass(sides: tuple[Side, Side], spec: RunSpec, rounds: int, workdir: Path,
                     tag: str, threshold: float, alpha: float, say=log) -> Pass:
    """`rounds` rounds of A B B A, each side's runs pooled (into <workdir>/<label>.json for the
    first pass, <workdir>/<tag>-<label>.json otherwise), then compared."""
    runs: tuple[list[dict], list[dict]] = ([], [])
    for i, which in enumerate([0, 1, 1, 0] * rounds):
        side = sides[which]
        out = workdir / "runs" / f"{tag}-{i // 4 + 1}-{i % 4 + 1}-{side.label}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        say(f"{tag}: round {i // 4 + 1}/{rounds}, run {i % 4 + 1}/4 ({side.label})")
        run_gapbench(side.binary, spec, out, env=side.env)
        runs[which].append(read_document(out))
    pooled = []
    for side, documents in zip(sides, runs):
        path = workdir / (f"{side.label}.json" if tag == "first" else f"{tag}-{side.label}.json")
        write_json_atomic(path, pool(documents))
        pooled.append(load_results(path))
    # Both sides ran here, by construction; their machine ids differ only where the known-good
    # build computes the id otherwise (the id's facts change between versions).
    comparison = cmp.compare(pooled[0], pooled[1], threshold=threshold, alpha=alpha,
                             same_host=True)
    return Pass(comparison, pooled[0], pooled[1])


def _change(row: cmp.Row) -> str:
    change = "?" if row.change is None else f"{row.change:+.1%}"
    p = "" if row.p_value is None else f", p={row.p_value:.2g}"
    return f"{change}{p}"


def settle(first: cmp.Comparison, rerun: cmp.Comparison | None
           ) -> tuple[cmp.Comparison, list[str]]:
    """The first pass's rows with each SLOWER row settled by the rerun: still SLOWER where the
    rerun flagged it again (confirmed), SAME (with both passes' figures in the note) where it
    did not, ERROR where it failed in the rerun."""
    again = {r.name: r for r in rerun.rows} if rerun else {}
    rows, confirmed = [], []
    for row in first.rows:
        if row.status != cmp.SLOWER:
            rows.append(row)
            continue
        second = again.get(row.name)
        if second is not None and second.status == cmp.SLOWER:
            confirmed.append(row.name)
            rows.append(replace(row, note=f"confirmed by the rerun ({_change(second)})"))
        elif second is not None and second.status == cmp.ERROR:
            rows.append(replace(row, status=cmp.ERROR, note=f"rerun: {second.note}"))
        else:
            then = "not rerun" if second is None else \
                f"rerun {second.status} ({_change(second)})"
            rows.append(replace(row, status=cmp.SAME,
                                note=f"first pass SLOWER ({_change(row)}), not confirmed: {then}"))
    return replace(first, rows=rows), confirmed


def gate(sides: tuple[Side, Side], spec: RunSpec, rounds: int, workdir: Path, *,
         threshold: float = cmp.DEFAULT_THRESHOLD, alpha: float = cmp.DEFAULT_ALPHA,
         rerun_rounds: int | None = None, say=log) -> Verdict:
    """The whole two-pass decision for sides (A = baseline, B = contender). The rerun has
    `rerun_rounds` rounds (default RERUN_FACTOR x `rounds`: it runs only the flagged benchmarks,
    so more rounds cost little, and a burst of noise during a short rerun would hide a real
    change).
    `say` gets the progress lines."""
    first = interleaved_pass(sides, spec, rounds, workdir, "first", threshold, alpha, say)
    flagged = [r.name for r in first.comparison.rows if r.status == cmp.SLOWER]
    rerun = None
    if flagged:
        say(f"rerunning the {len(flagged)} flagged: {', '.join(flagged)}")
        rerun = interleaved_pass(sides, replace(spec, filter=exact_filter(flagged)),
                                 rerun_rounds or RERUN_FACTOR * rounds, workdir, "rerun",
                                 threshold, alpha, say)
    final, confirmed = settle(first.comparison, rerun.comparison if rerun else None)
    return Verdict(first, rerun, final, flagged, confirmed, first.comparison.new_failures)
