"""Compare a contender run with a baseline: a status per benchmark and an exit status a CI trusts.
The statistics and the statuses: docs/report.md#compare.

compare() builds a Comparison of plain rows; format_text(), format_markdown() and to_json() only
present it; main() parses arguments and returns the exit status."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from gapbench_report.cli import kit as commandline
from gapbench_report.cli.kit import UsageError
from gapbench_report.core.labels import md_cell, md_code, printable_text
from gapbench_report.inputs.results import SECONDS_PER_UNIT, Benchmark, Results, load_side

SAME = "SAME"
SLOWER = "SLOWER"
FASTER = "FASTER"
MISSING = "MISSING"
NEW = "NEW"
ERROR = "ERROR"
PROVISIONAL = "PROVISIONAL"
SKIPPED = "SKIPPED"
INSUFFICIENT_DATA = "INSUFFICIENT_DATA"
CROSS_MACHINE = "CROSS_MACHINE"
# Fixed order for summaries and JSON counts: verdicts that need attention first.
STATUSES = (SLOWER, ERROR, PROVISIONAL, MISSING, INSUFFICIENT_DATA, SKIPPED, NEW, FASTER, SAME,
            CROSS_MACHINE)

DEFAULT_THRESHOLD = 0.05
DEFAULT_ALPHA = 0.01
# scipy's exact null distribution is cheap up to here and far better than the normal
# approximation at the repetition counts benchmarks use (5-30).
EXACT_MAX_SAMPLES = 50
# Times converted from different units (ms vs ns) may differ in the last bit; rounding to 12
# significant digits, far beyond any timer's resolution, keeps equal times equal (ties).
SIGNIFICANT_DIGITS = 12
# A change of exactly the threshold (5.5 vs 5.0 ns at 10%) must count despite float rounding,
# and equal medians written in different units must show no change.
CHANGE_EPSILON = 1e-9
PROG = "gapbench-report compare"


@dataclass(frozen=True)
class Row:
    name: str
    status: str
    baseline_median: float | None = None  # seconds
    contender_median: float | None = None  # seconds
    change: float | None = None  # (contender - baseline) / baseline of the medians
    p_value: float | None = None  # one-sided, in the direction the median moved
    baseline_n: int = 0  # timed repetitions
    contender_n: int = 0
    note: str = ""
    new_failure: bool = False  # failed in the contender, not in the baseline: a regression
    baseline_processes: int = 0  # runs of gapbench the samples came from
    contender_processes: int = 0


@dataclass(frozen=True)
class Comparison:
    baseline_path: str
    contender_path: str
    baseline_machine: str
    contender_machine: str
    threshold: float
    alpha: float
    machines_differ: bool
    cross_machine: bool  # statistics were run across machines because it was asked for
    refused_reason: str | None  # set when no regression verdict was given
    rows: list[Row] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def verdict_given(self) -> bool:
        return self.refused_reason is None

    @property
    def new_failures(self) -> list[str]:
        """Benchmarks that failed in the contender but not in the baseline."""
        return [r.name for r in self.rows if r.new_failure]

    def counts(self) -> dict[str, int]:
        found = {s: 0 for s in STATUSES}
        for row in self.rows:
            found[row.status] += 1
        return found


# ---------------------------------------------------------------------------------------------
# Statistics


def min_p_value(n1: int, n2: int) -> float:
    """Smallest one-sided p the Mann-Whitney U test can give for sizes n1, n2 (complete
    separation): one arrangement out of C(n1 + n2, n1)."""
    return 1.0 / math.comb(n1 + n2, n1)


def repetitions_needed(alpha: float) -> int:
    """Smallest equal repetition count per side for which the test can reach p < alpha."""
    n = 1
    while min_p_value(n, n) >= alpha:
        n += 1
    return n


def _round_significant(x: np.ndarray) -> np.ndarray:
    """x (positive) rounded to SIGNIFICANT_DIGITS; values one ulp apart come out equal."""
    scale = 10.0 ** (np.floor(np.log10(x)) - (SIGNIFICANT_DIGITS - 1))
    return np.round(x / scale) * scale


def _no_ties(x: np.ndarray) -> np.ndarray:
    """Per row of x (both samples side by side): True where no two values tie."""
    ordered = np.sort(x, axis=1)
    return ~np.any(ordered[:, 1:] == ordered[:, :-1], axis=1)


def mann_whitney_batch(pairs: Sequence[tuple[Sequence[float], Sequence[float]]]
                       ) -> list[tuple[float, float]]:
    """(p contender slower, p contender faster) for each (baseline, contender) sample pair.

    scipy's per-call overhead is about 1 ms, so pairs of equal sizes and method are stacked
    and tested in one vectorized call; 5,000 rows then take milliseconds, not seconds.
    """
    if not pairs:
        return []
    # Imported here: scipy.stats takes about a second to import, which runs that need no test
    # (bad input, --help, a refused cross-machine comparison) should not pay.
    from scipy.stats import mannwhitneyu

    out: list[tuple[float, float]] = [(1.0, 1.0)] * len(pairs)
    groups: dict[tuple[int, int], list[int]] = {}
    for i, (base, cont) in enumerate(pairs):
        groups.setdefault((len(base), len(cont)), []).append(i)
    for (n1, n2), members in groups.items():
        base = _round_significant(
            np.array([pairs[i][0] for i in members], dtype=float).reshape(len(members), n1))
        cont = _round_significant(
            np.array([pairs[i][1] for i in members], dtype=float).reshape(len(members), n2))
        no_ties = _no_ties(np.hstack([base, cont]))
        small = max(n1, n2) <= EXACT_MAX_SAMPLES
        for exact in (True, False):
            pick = no_ties & small if exact else ~(no_ties & small)
            if not pick.any():
                continue
            method = "exact" if exact else "auto"
            slower = mannwhitneyu(cont[pick], base[pick], alternative="greater",
                                  method=method, axis=1).pvalue
            faster = mannwhitneyu(cont[pick], base[pick], alternative="less",
                                  method=method, axis=1).pvalue
            # All-equal samples have no spread; a NaN there would mean "no evidence" anyway.
            slower, faster = np.nan_to_num(slower, nan=1.0), np.nan_to_num(faster, nan=1.0)
            for j, i in enumerate(np.asarray(members)[pick]):
                out[i] = (float(slower[j]), float(faster[j]))
    return out


# ---------------------------------------------------------------------------------------------
# Comparison


def _change(base: float | None, cont: float | None) -> float | None:
    if base is None or cont is None or base <= 0:
        return None
    change = (cont - base) / base
    return 0.0 if abs(change) < CHANGE_EPSILON else change  # unit conversion noise


def _timed_row(name: str, base: Benchmark, cont: Benchmark, status: str, note: str) -> Row:
    """A row for two benchmarks that both ran, before or without the test."""
    bm, cm = base.median, cont.median
    return Row(name, status, bm, cm, _change(bm, cm), None, len(base.samples),
               len(cont.samples), note, baseline_processes=len(base.process_medians),
               contender_processes=len(cont.process_medians))


def by_process(base: Benchmark, cont: Benchmark, alpha: float) -> bool:
    """Whether both sides have enough processes for the test on their medians to reach alpha."""
    n1, n2 = len(base.process_medians), len(cont.process_medians)
    return n1 > 1 and n2 > 1 and min_p_value(n1, n2) < alpha


def runs_to_settle(alpha: float) -> int:
    return repetitions_needed(alpha)


def _skip_note(base: Benchmark, cont: Benchmark) -> str:
    parts = []
    if base.skip_reason is not None:
        parts.append(f"baseline skipped: {base.skip_reason}")
    if cont.skip_reason is not None:
        parts.append(f"contender skipped: {cont.skip_reason}")
    return "; ".join(parts)


def _one_side_note(where: str, b: Benchmark) -> str:
    if b.error is not None:
        return f"{where}; failed there: {b.error}"
    if b.skip_reason is not None:
        return f"{where}; skipped there: {b.skip_reason}"
    return where


def _error_note(base: Benchmark, cont: Benchmark) -> str:
    if cont.error is not None and base.error is not None:
        return f"failed in both: {cont.error}"
    if cont.error is not None:
        return f"contender failed: {cont.error}"
    return f"baseline failed (no reference): {base.error}"


def _insufficient_note(base: Benchmark, cont: Benchmark, alpha: float) -> str | None:
    """Why the test cannot decide, or None when it can."""
    needed = (f"needs >= {repetitions_needed(alpha)} repetitions per side for p < {alpha:g} "
              f"(and {repetitions_needed(alpha)} runs per side for a verdict)")
    empty = [side for side, b in (("baseline", base), ("contender", cont)) if not b.samples]
    if empty:
        return f"only aggregates in {' and '.join(empty)}, no repetitions; {needed}"
    n1, n2 = len(base.samples), len(cont.samples)
    if min_p_value(n1, n2) >= alpha:
        return f"{n1} vs {n2} repetitions: smallest possible p is {min_p_value(n1, n2):.3g}; " \
               f"{needed}"
    return None


def _classify(name: str, base: Benchmark | None, cont: Benchmark | None, alpha: float,
              test: bool) -> Row | None:
    """The row for a benchmark when no test decides it; None when the test must run."""
    if cont is None:
        return Row(name, MISSING, base.median, None, None, None, len(base.samples), 0,
                   _one_side_note("only in baseline", base))
    if base is None:
        return Row(name, NEW, None, cont.median, None, None, 0, len(cont.samples),
                   _one_side_note("only in contender", cont))
    if base.error is not None or cont.error is not None:
        return Row(name, ERROR, base.median, cont.median, None, None, len(base.samples),
                   len(cont.samples), _error_note(base, cont),
                   new_failure=cont.error is not None and base.error is None)
    if base.skip_reason is not None or cont.skip_reason is not None:
        return Row(name, SKIPPED, base.median, cont.median, None, None, len(base.samples),
                   len(cont.samples), _skip_note(base, cont))
    if not test:
        return _timed_row(name, base, cont, CROSS_MACHINE, "different machines: not tested")
    why = _insufficient_note(base, cont, alpha)
    if why is not None:
        return _timed_row(name, base, cont, INSUFFICIENT_DATA, why)
    return None


def _verdict(name: str, base: Benchmark, cont: Benchmark, p_slower: float, p_faster: float,
             threshold: float, alpha: float, processes: bool) -> Row:
    bm, cm = base.median, cont.median
    change = _change(bm, cm)
    # Report the one-sided p in the direction the median moved; at no movement, the smaller.
    p = p_slower if change > 0 else p_faster if change < 0 else min(p_slower, p_faster)
    big = abs(change) >= threshold - CHANGE_EPSILON and change != 0
    n1, n2 = len(base.process_medians), len(cont.process_medians)
    if p < alpha and big and not processes:
        status = PROVISIONAL
        note = (f"{'slower' if change > 0 else 'faster'} in the repetitions of {n1} vs {n2} "
                f"run{'s' if max(n1, n2) > 1 else ''}, which vary less than runs do; "
                f"{runs_to_settle(alpha)} runs per side would settle it")
    elif p < alpha and big:
        status, note = (SLOWER if change > 0 else FASTER), ""
    elif p < alpha:
        status, note = SAME, f"significant but under the {threshold * 100:g}% threshold"
    elif big:
        status, note = SAME, f"not significant (p >= {alpha:g})"
    else:
        status, note = SAME, ""
    return Row(name, status, bm, cm, change, p, len(base.samples), len(cont.samples), note,
               baseline_processes=n1, contender_processes=n2)


def _context_warnings(baseline: Results, contender: Results) -> list[str]:
    """Differences that do not stop the comparison but a reader should know about."""
    found = []
    for key in ("gapbench.profile", "gapbench.seed"):
        b, c = baseline.context.get(key), contender.context.get(key)
        if b != c:
            found.append(f"{key} differs: baseline {b!r}, contender {c!r}")
    return found


def compare(baseline: Results, contender: Results, *, threshold: float = DEFAULT_THRESHOLD,
            alpha: float = DEFAULT_ALPHA, cross_machine: bool = False,
            same_host: bool = False) -> Comparison:
    """Compares every benchmark of the two runs; see the module docstring for the statuses.
    `same_host`: both sides ran on this host by construction (the nightly), so their machine
    ids may differ only because the two builds compute them differently."""
    if not threshold >= 0 or not math.isfinite(threshold):
        raise ValueError(f"threshold must be a number >= 0, not {threshold!r}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be between 0 and 1, not {alpha!r}")
    differ = baseline.machine != contender.machine and not same_host
    refused = None
    if differ and not cross_machine:
        refused = (f"baseline and contender come from different machines "
                   f"({baseline.machine} vs {contender.machine}); no regression verdict across "
                   "hardware")
    base_all, cont_all = baseline.benchmarks(), contender.benchmarks()
    # Sorted: a run's file order follows Google Benchmark's random interleaving.
    names = sorted(set(base_all) | set(cont_all))
    rows: list[Row | None] = []
    pending: list[tuple[int, str, Benchmark, Benchmark]] = []
    for name in names:
        base, cont = base_all.get(name), cont_all.get(name)
        row = _classify(name, base, cont, alpha, test=refused is None)
        if row is None:
            pending.append((len(rows), name, base, cont))
        rows.append(row)
    level = [by_process(b, c, alpha) for _, _, b, c in pending]
    pvalues = mann_whitney_batch([
        (b.process_medians, c.process_medians) if processes else (b.samples, c.samples)
        for (_, _, b, c), processes in zip(pending, level)])
    for (i, name, b, c), (p_slower, p_faster), processes in zip(pending, pvalues, level):
        rows[i] = _verdict(name, b, c, p_slower, p_faster, threshold, alpha, processes)
    return Comparison(str(baseline.path), str(contender.path), baseline.machine,
                      contender.machine, threshold, alpha, differ, differ and cross_machine,
                      refused, [r for r in rows if r is not None],
                      _context_warnings(baseline, contender))


def has_regression(c: Comparison) -> bool:
    """True when a verdict was given and some benchmark is SLOWER, or when some benchmark failed
    in the contender but not in the baseline (verdict or not)."""
    return bool(c.new_failures) or (c.verdict_given and any(r.status == SLOWER for r in c.rows))


# ---------------------------------------------------------------------------------------------
# Formatting


def format_time(seconds: float | None, unit: str | None = None) -> str:
    """A time with 4 significant digits, in the given unit or the largest one that keeps the
    value >= 1."""
    if seconds is None:
        return "-"
    unit = unit or time_unit(seconds)
    value = seconds / SECONDS_PER_UNIT[unit]
    decimals = 0 if value >= 1000 else 1 if value >= 100 else 2 if value >= 10 else 3
    return f"{value:.{decimals}f} {unit}"


def time_unit(seconds: float) -> str:
    for unit, scale in sorted(SECONDS_PER_UNIT.items(), key=lambda u: -u[1]):
        if seconds >= scale:
            return unit
    return "ns"


def _row_cells(row: Row) -> list[str]:
    """Benchmark, status, baseline, contender, change, p, n, note — both medians in one unit
    (the baseline's) so they can be read against each other."""
    ref = row.baseline_median if row.baseline_median is not None else row.contender_median
    unit = time_unit(ref) if ref is not None else None
    # abs() below the printed precision keeps float noise from showing as "-0.0%".
    change = "-" if row.change is None else f"{row.change if abs(row.change) >= 5e-4 else 0:+.1%}"
    p = "-" if row.p_value is None else (f"{row.p_value:.4f}" if row.p_value >= 1e-4
                                         else f"{row.p_value:.1e}")
    return [row.name, row.status, format_time(row.baseline_median, unit),
            format_time(row.contender_median, unit), change, p,
            f"{row.baseline_n}/{row.contender_n}"
            + (f" ({row.baseline_processes}/{row.contender_processes} runs)"
               if max(row.baseline_processes, row.contender_processes) > 1 else ""), row.note]


_HEADER = ["Benchmark", "Status", "Baseline", "Contender", "Change", "p", "n", "Note"]
_RIGHT = {2, 3, 4, 5, 6}  # numeric columns, right-aligned


def _benchmarks(n: int) -> str:
    return f"{n} benchmark{'s' if n != 1 else ''}"


def _headline(c: Comparison) -> str:
    failed = len(c.new_failures)
    failures = f"{_benchmarks(failed)} failed in the contender but not in the baseline"
    if not c.verdict_given:
        if failed:
            return f"REGRESSION: {failures}; no timing verdict (different machines)"
        return "no verdict (different machines)"
    slower = c.counts()[SLOWER]
    found = ([f"{_benchmarks(slower)} slower"] if slower else []) + ([failures] if failed else [])
    if found:
        return "REGRESSION: " + ", ".join(found)
    provisional = c.counts()[PROVISIONAL]
    if provisional:
        return (f"no regression verdict: {_benchmarks(provisional)} changed within too few runs "
                f"(PROVISIONAL); {runs_to_settle(c.alpha)} runs per side would settle it")
    return "no regression"


def _summary(c: Comparison) -> str:
    return ", ".join(f"{n} {s}" for s, n in c.counts().items() if n) or "no benchmarks"


def _render_hint(c: Comparison) -> str:
    return (f"for why the two machines differ: gapbench-report render "
            f"{c.contender_path} --baseline {c.baseline_path} --out DIR")


def _preamble(c: Comparison) -> list[str]:
    lines = [f"baseline {c.baseline_path} (machine {c.baseline_machine}) vs contender "
             f"{c.contender_path} (machine {c.contender_machine})",
             f"threshold {c.threshold:.1%}, alpha {c.alpha:g}, one-sided Mann-Whitney U on the "
             "runs' medians (on the repetitions where too few runs: PROVISIONAL)"]
    if c.refused_reason:
        lines.append(f"{c.refused_reason}; pass --cross-machine to test anyway; "
                     f"{_render_hint(c)}")
    elif c.cross_machine:
        lines.append("CROSS-MACHINE comparison (--cross-machine): times from different "
                     "hardware differ for reasons other than the code; " + _render_hint(c))
    lines += [f"warning: {w}" for w in c.warnings]
    return lines


def format_text(c: Comparison) -> str:
    table = [_HEADER] + [_row_cells(r) for r in c.rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(_HEADER) - 1)]
    lines = _preamble(c) + [""]
    for cells in table:
        padded = [cell.rjust(w) if i in _RIGHT else cell.ljust(w)
                  for i, (cell, w) in enumerate(zip(cells, widths))]
        lines.append("  ".join(padded + [cells[-1]]).rstrip())
    lines += ["", f"summary: {_summary(c)}", f"verdict: {_headline(c)}"]
    return "\n".join(lines) + "\n"


def _md_table(rows: list[Row]) -> list[str]:
    lines = ["| " + " | ".join(_HEADER) + " |",
             "|" + "|".join("---:" if i in _RIGHT else "---" for i in range(len(_HEADER))) + "|"]
    for row in rows:
        name, *rest = _row_cells(row)
        lines.append("| " + " | ".join([md_code(name, table=True), *map(md_cell, rest)]) + " |")
    return lines


def format_markdown(c: Comparison) -> str:
    """For a GitHub job summary: the rows that need a look in a table, the SAME rows folded
    away so that 5,000 benchmarks stay readable (and under the summary's size limit)."""
    lines = [f"### gapbench compare: {_headline(c)}", ""]
    lines += [f"- {md_cell(line)}" for line in _preamble(c)]
    lines += ["", f"**{_summary(c)}**", ""]
    same = [r for r in c.rows if r.status == SAME]
    other = [r for r in c.rows if r.status != SAME]
    if other or not same:
        lines += _md_table(other) + [""]
    if same:
        lines += [f"<details><summary>{len(same)} SAME</summary>", ""] + _md_table(same) + \
                 ["", "</details>", ""]
    return "\n".join(lines)


def to_json(c: Comparison) -> dict:
    """Machine-readable; keys are stable, times in seconds, absent values null."""
    return {
        "baseline": {"path": c.baseline_path, "machine": c.baseline_machine},
        "contender": {"path": c.contender_path, "machine": c.contender_machine},
        "threshold": c.threshold,
        "alpha": c.alpha,
        "machines_differ": c.machines_differ,
        "cross_machine": c.cross_machine,
        "verdict_given": c.verdict_given,
        "refused_reason": c.refused_reason,
        "regression": has_regression(c),
        "new_failures": c.new_failures,
        "warnings": list(c.warnings),
        "counts": c.counts(),
        "rows": [_row_json(r) for r in c.rows],
    }


def _row_json(r: Row) -> dict:
    """JSON has no Infinity or NaN: a figure that is not a finite number becomes null, and the
    note says which (strict parsers refuse the literals Python would write)."""
    figures = {"baseline_median_s": r.baseline_median, "contender_median_s": r.contender_median,
               "change": r.change, "p_value": r.p_value}
    not_finite = [k for k, v in figures.items() if v is not None and not math.isfinite(v)]
    notes = [r.note] if r.note else []
    notes += [f"{k} is {figures[k]} (not a finite number): null" for k in not_finite]
    return {"name": r.name, "status": r.status,
            **{k: None if k in not_finite else v for k, v in figures.items()},
            "baseline_n": r.baseline_n, "contender_n": r.contender_n,
            "baseline_runs": r.baseline_processes, "contender_runs": r.contender_processes,
            "note": "; ".join(notes)}


# ---------------------------------------------------------------------------------------------
# Command line


def _parser() -> commandline.Parser:
    p = commandline.parser(PROG, __doc__,
                           epilog="exit status: 0 no regression; 1 a regression: a benchmark "
                                  "SLOWER, or failed in the contender but not in the baseline; "
                                  "2 bad input or a tool error")
    p.add_argument("paths", nargs="*", metavar="BASELINE CONTENDER",
                   help="the reference results and the results to judge: a file or a folder "
                        "of results files each")
    p.add_argument("--baseline", nargs="+", metavar="PATH", dest="baseline_paths",
                   help="the reference side: files or folders, several runs for a verdict")
    p.add_argument("--contender", nargs="+", metavar="PATH", dest="contender_paths",
                   help="the side to judge: files or folders")
    p.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD,
                   help="smallest relative change of the median that counts (default 0.05)")
    p.add_argument("--alpha", type=float, default=DEFAULT_ALPHA,
                   help="significance level of the one-sided test (default 0.01)")
    p.add_argument("--cross-machine", action="store_true",
                   help="run the test even though the files come from different machines")
    p.add_argument("--format", choices=("text", "markdown"), default="text")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    return p


def check_rule(threshold: float, alpha: float) -> None:
    """Raises UsageError for a --threshold or --alpha the test cannot use (compare's and the
    nightly's flags)."""
    if not (math.isfinite(threshold) and threshold >= 0):
        raise UsageError(f"--threshold must be >= 0, not {threshold:g}")
    if not 0 < alpha < 1:
        raise UsageError(f"--alpha must be between 0 and 1 (exclusive), not {alpha:g}")


def _run(argv: list[str] | None) -> int:
    args = _parser().parse_args(argv)
    check_rule(args.threshold, args.alpha)
    if args.baseline_paths or args.contender_paths:
        if args.paths or not (args.baseline_paths and args.contender_paths):
            raise UsageError("give --baseline PATH... and --contender PATH..., or two paths")
        base_paths, cont_paths = args.baseline_paths, args.contender_paths
    elif len(args.paths) == 2:
        base_paths, cont_paths = args.paths[:1], args.paths[1:]
    else:
        raise UsageError("give BASELINE and CONTENDER (see --help)")
    baseline = load_side(base_paths)
    contender = load_side(cont_paths)
    c = compare(baseline, contender, threshold=args.threshold, alpha=args.alpha,
                cross_machine=args.cross_machine)
    if args.json:
        out = json.dumps(to_json(c), indent=1, allow_nan=False) + "\n"
    else:
        out = format_markdown(c) if args.format == "markdown" else format_text(c)
    sys.stdout.write(printable_text(out))
    sys.stdout.flush()
    return 1 if has_regression(c) else 0


def main(argv: list[str] | None = None) -> int:
    """0 no regression, 1 regression (a benchmark slower, or failed in the contender only), 2 bad
    input or a tool error (one line on stderr)."""
    return commandline.run(PROG, _run, argv)


if __name__ == "__main__":
    sys.exit(main())
