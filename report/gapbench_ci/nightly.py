"""The nightly regression gate: this build against the last known-good one, on one machine.

    ci/nightly [--good REF] [--filter REGEX] [--profile quick|full] [--rounds 16]
               [--repetitions 2] [--min-time S] [--threshold 0.05] [--alpha 0.01]
               [--out results/nightly/last] [--state-dir results/nightly] [--cmake-arg ARG]...
               [--baseline-bin PATH --contender-bin PATH] [--no-state] [--state-origin TEXT]

1. Builds the working tree (build/nightly/current) and the known-good commit (exported with
   `git archive` into build/nightly/src-<commit>, built in build/nightly/good-<commit>). The
   known-good commit is --good if given, else the one in <state-dir>/known-good (written by the
   last night that passed), else HEAD~1 -- and then summary.md says so at the top, as it does
   when the history is missing: a lost state (the workflow keeps it in the Actions cache, which
   evicts it after 7 days without use) is never passed over in silence.
2. First pass: --rounds rounds of A B B A (A = known-good, B = this build), every run with
   Google Benchmark's random interleaving; each side's repetitions are pooled and compared with
   compare's statistics (one-sided Mann-Whitney U, p < alpha, and the median at least
   --threshold slower).
3. Rerun: only the benchmarks the first pass flagged SLOWER, with fresh interleaved rounds
   (--rerun-rounds, default 3 x --rounds). A regression is called only where the rerun flags it
   again; a benchmark that failed in this build but ran in the known-good one is a
   regression too.
4. Writes, under --out: baseline.json and contender.json (the pooled first pass), rerun-*.json,
   comparison.json, summary.md (for a CI job summary), report/ (the render of this build's run)
   and trend/ (the history's trend). Under --state-dir: history/<time>-<commit>.json (this
   night's medians) and, when the night passed on a clean tree, known-good.

Exit status: 0 no regression, 1 a confirmed regression (or a new failure), 2 a tool error (a
build that fails, bad arguments, a crash), with one line on stderr.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
import time
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path

from gapbench_report import commandline
from gapbench_report import compare as cmp
from gapbench_report.commandline import ToolError, UsageError
from gapbench_report.files import write_atomic, write_json_atomic
from gapbench_report.labels import md_cell, md_code
from gapbench_report.results import Results, is_time, json_files, load_results

from gapbench_ci.runner import (
    REPO_ROOT,
    NotACommit,
    RunSpec,
    Side,
    TreeState,
    build_gapbench,
    exact_filter,
    export_commit,
    git,
    is_shallow,
    pool,
    read_document,
    resolve_commit,
    run_gapbench,
    tree_state,
)

PROG = "ci/nightly"
# Many short runs: on a shared machine the spread between processes (6-11% for the gate proof's
# image kernels on the 2-core CI VM) is several times that within one, so 16 rounds of 2
# repetitions (64 samples per side from 32 runs) resolve a change far better than 2 rounds of 5;
# compare judges by run (each run's median is one sample), so at least 3 rounds are needed.
# Resampling 30 measured rounds put the first pass's detection of a 10% slowdown in the noisier
# image kernel at 87-92% with 8 rounds and 89-99% with 16. The rerun runs only the flagged
# benchmarks, so three times the rounds cost little and it rarely misses what the first pass
# caught. ci/gate-proof proves the gate at these settings.
DEFAULT_ROUNDS = 16
DEFAULT_REPETITIONS = 2
RERUN_FACTOR = 3
PROFILE_REPETITIONS = {"quick": 5, "full": 10}  # fixtures/harness.h Profile::repetitions()
KNOWN_GOOD_FILE = "known-good"
HISTORY_DIR = "history"
HISTORY_SCHEMA = "gapbench-nightly-history/1"
OUT_MARKER = ".gapbench-nightly"  # an --out folder this tool made, and may empty


def log(message: str) -> None:
    print(f"nightly: {message}", file=sys.stderr, flush=True)


# ---- the gate: two passes of interleaved runs ------------------------------------------------

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


# ---- the known-good commit ---------------------------------------------------------------------

@dataclass(frozen=True)
class KnownGood:
    commit: str
    how: str  # where it came from, for the summary
    fell_back: bool = False  # HEAD~1, for want of a usable recorded known-good


def choose_known_good(root: Path, given: str | None, state_dir: Path) -> KnownGood:
    """--good, else the commit recorded in <state-dir>/known-good, else HEAD~1 (fell_back:
    state_warning says so loudly). A git failure is an error, never a reason to fall back."""
    if given:
        return KnownGood(resolve_commit(root, given), f"--good {given}")
    recorded = state_dir / KNOWN_GOOD_FILE
    how = "HEAD~1 (no known-good recorded)"
    if recorded.exists():
        commit = recorded.read_text(encoding="utf-8").strip()
        try:
            return KnownGood(resolve_commit(root, commit), f"last good night ({recorded})")
        except NotACommit:
            how = f"HEAD~1 ({recorded} names {commit[:12]!r}, not a commit here)"
    try:
        return KnownGood(resolve_commit(root, "HEAD~1"), how, fell_back=True)
    except NotACommit:
        if is_shallow(root):
            raise ToolError("no known-good commit: none recorded, and HEAD~1 is not in this "
                            "shallow clone (actions/checkout needs fetch-depth: 0; or pass "
                            "--good REF)") from None
        raise ToolError("no known-good commit: none recorded, and HEAD has no parent (pass "
                        "--good REF)") from None


# ---- the state carried from night to night -------------------------------------------------------

# Why a state folder may be empty, when the caller does not say where it came from: the workflow
# keeps it in the Actions cache.
CACHE_EVICTION = "the Actions cache is evicted after 7 days without use"


@dataclass(frozen=True)
class StateFound:
    """What <state-dir> held before this night wrote anything."""

    known_good: bool  # a known-good file
    nights: int  # history records

    def as_json(self, state_dir: Path, origin: str | None, warning: str | None) -> dict:
        return {"dir": str(state_dir), "origin": origin, "known_good_recorded": self.known_good,
                "history_nights": self.nights, "warning": warning}


def read_state(state_dir: Path) -> StateFound:
    history = state_dir / HISTORY_DIR
    nights = len(json_files(history)) if history.is_dir() else 0
    return StateFound((state_dir / KNOWN_GOOD_FILE).exists(), nights)


def state_warning(found: StateFound, state_dir: Path, fell_back: bool, keeps_history: bool,
                  origin: str | None = None) -> str | None:
    """The loud line for the top of summary.md and the log when this night cannot carry on
    from the last one (the state is lost, new or partial); None when it can. fell_back: the
    known-good is HEAD~1 for want of a recorded one; origin: where the state came from (the
    workflow says whether the Actions cache had it)."""
    then = []
    if fell_back:
        then.append("compares against HEAD~1")
    if keeps_history and found.nights == 0:
        then.append("starts a new history")
    if not then:
        return None
    consequence = f"this night {' and '.join(then)}."
    nights = f"{found.nights} night{'s' if found.nights != 1 else ''}"
    if not found.known_good and found.nights == 0:
        return (f"**State lost or new:** no known-good commit and no history were found in "
                f"{state_dir} ({origin or CACHE_EVICTION}); {consequence}")
    if found.known_good and fell_back:
        return (f"**Known-good commit unusable:** {state_dir / KNOWN_GOOD_FILE} names no "
                f"commit of this clone (a rewritten history?); {consequence}")
    if not found.known_good:
        return (f"**No known-good commit:** {state_dir} holds a history of {nights} but no "
                f"known-good (no night has passed on a clean tree since it began, or the file "
                f"was lost); {consequence}")
    return (f"**History lost:** {state_dir} holds a known-good commit but no history "
            f"({origin or CACHE_EVICTION}); {consequence}")


def build_sides(args, root: Path, tree: TreeState, good: KnownGood | None
                ) -> tuple[Side, Side, dict]:
    """Builds (or takes) the two executables; returns the sides and what to say about them.
    `good` is None when the executables are given."""
    if good is None:
        return (Side("baseline", args.baseline_bin.resolve()),
                Side("contender", args.contender_bin.resolve()),
                {"baseline": f"given executable {args.baseline_bin}",
                 "contender": f"given executable {args.contender_bin}", "good_commit": None})
    build_root = args.build_root
    current = build_gapbench(root, build_root / "current", args.cmake_arg, args.jobs)
    if tree.commit == good.commit and not tree.dirty:
        log("no change since the known-good commit: comparing the build with itself (A/A)")
        good_bin = current
    else:
        short = good.commit[:12]
        source = build_root / f"src-{short}"
        for old in build_root.glob("src-*"):  # one known-good tree at a time
            if old.name != source.name:
                shutil.rmtree(old, ignore_errors=True)
        for old in build_root.glob("good-*"):
            if old.name != f"good-{short}":
                shutil.rmtree(old, ignore_errors=True)
        if not (source / "CMakeLists.txt").exists():
            export_commit(root, good.commit, source)
        good_bin = build_gapbench(source, build_root / f"good-{short}", args.cmake_arg,
                                  args.jobs)
    subject = git(root, "log", "-1", "--format=%s", good.commit)
    return (Side("baseline", good_bin), Side("contender", current),
            {"baseline": f"{good.commit[:12]} {subject} — {good.how}",
             "contender": f"{tree.label} (this working tree)", "good_commit": good.commit})


# ---- history ------------------------------------------------------------------------------------

def history_record(verdict: Verdict, tree: TreeState, good_commit: str | None, spec: RunSpec,
                   when: datetime) -> dict:
    cont = verdict.first.contender
    medians = {n: b.median for n, b in cont.benchmarks().items()
               if b.status == "ok" and is_time(b.median)}
    return {"schema": HISTORY_SCHEMA, "date": when.isoformat(timespec="seconds"),
            "commit": tree.commit, "dirty": tree.dirty, "good_commit": good_commit,
            "machine": cont.machine, "cpu": cont.context.get("cpu.model"),
            "gpu": cont.context.get("gpu.name"), "profile": spec.profile,
            "filter": spec.filter, "regression": verdict.regression,
            "confirmed": verdict.confirmed, "failures": verdict.failures, "medians": medians}


def write_history(state_dir: Path, record: dict, when: datetime, tree: TreeState) -> Path:
    label = tree.label if tree.commit else "unknown"
    path = state_dir / HISTORY_DIR / f"{when.strftime('%Y%m%dT%H%M%SZ')}-{label}.json"
    write_json_atomic(path, record)
    return path


# ---- summary.md --------------------------------------------------------------------------------

def headline(v: Verdict) -> str:
    if v.regression:
        parts = []
        if v.confirmed:
            parts.append(f"{len(v.confirmed)} benchmark{'s' if len(v.confirmed) != 1 else ''} "
                         "slower")
        if v.failures:
            parts.append(f"{len(v.failures)} new failure{'s' if len(v.failures) != 1 else ''}")
        return "REGRESSION: " + ", ".join(parts)
    return "no regression"


def summary_markdown(v: Verdict, about: dict, spec: RunSpec, rounds: int,
                     notes: list[str]) -> str:
    c = v.final
    per_side = samples_per_side(spec, rounds)
    state = about.get("state") or {}
    context = v.first.contender.context
    lines = [f"# gapbench nightly: {headline(v)}", "",
             f"- this build: {md_cell(about['contender'])}",
             f"- known-good: {md_cell(about['baseline'])}",
             f"- machine: {md_cell(context.get('cpu.model', '?'))} · "
             f"{md_cell(context.get('gpu.name') or 'no usable GPU')} · "
             f"machine.id {md_cell(c.contender_machine)}",
             f"- runs: profile {spec.profile}, filter {md_code(spec.filter)}, {rounds} round"
             f"{'s' if rounds != 1 else ''} of A B B A (A = known-good), random interleaving, "
             f"{per_side} repetitions per side from {2 * rounds} runs",
             f"- rule: SLOWER when the one-sided Mann-Whitney U test on the runs' medians gives "
             f"p < {c.alpha:g} and "
             f"the median is at least {c.threshold:.0%} slower — in the first pass and again in "
             f"a rerun of only the flagged benchmarks (fresh rounds, {RERUN_FACTOR} times as many)",
             f"- first pass: {len(c.rows)} benchmark{'s' if len(c.rows) != 1 else ''}, "
             f"{len(v.flagged)} flagged SLOWER; "
             f"confirmed by the rerun: {len(v.confirmed)}"]
    if state.get("warning"):  # right under the headline: a lost state must not go unseen
        lines[2:2] = [md_cell(state["warning"]), ""]
    if state.get("origin"):
        lines.append(f"- state ({md_cell(state['dir'])}): {md_cell(state['origin'])}")
    if v.failures:
        lines.append(f"- failed in this build but not in the known-good: "
                     f"{', '.join(md_code(n) for n in v.failures)}")
    lines += [f"- note: {md_cell(n)}" for n in notes]
    lines += ["", cmp.format_markdown(c)]
    return "\n".join(lines) + "\n"


def comparison_json(v: Verdict, about: dict, spec: RunSpec, rounds: int) -> dict:
    return {"headline": headline(v), "regression": v.regression, "exit_status": v.exit_code,
            "baseline": about["baseline"], "contender": about["contender"],
            "profile": spec.profile, "filter": spec.filter, "rounds": rounds,
            "samples_per_side": samples_per_side(spec, rounds), "flagged": v.flagged,
            "confirmed": v.confirmed, "failures": v.failures,
            "final": cmp.to_json(v.final), "first": cmp.to_json(v.first.comparison),
            "rerun": cmp.to_json(v.rerun.comparison) if v.rerun else None,
            "state": about.get("state")}


# ---- command line -------------------------------------------------------------------------------

def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:  # argparse would say "invalid _positive_int value"
        raise argparse.ArgumentTypeError(f"needs a whole number, not {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _parser() -> commandline.Parser:
    p = commandline.parser(PROG, __doc__)
    p.add_argument("--good", help="the known-good commit (default: <state-dir>/known-good, "
                                  "else HEAD~1)")
    p.add_argument("--filter", default=".", help="benchmark filter (regex, default: all)")
    p.add_argument("--profile", choices=("quick", "full"), default="quick")
    p.add_argument("--rounds", type=_positive_int, default=DEFAULT_ROUNDS,
                   help=f"rounds of A B B A per pass (default {DEFAULT_ROUNDS})")
    p.add_argument("--rerun-rounds", type=_positive_int,
                   help="rounds of the rerun of the flagged benchmarks "
                        f"(default: {RERUN_FACTOR} x --rounds)")
    p.add_argument("--repetitions", type=_positive_int, default=DEFAULT_REPETITIONS,
                   help=f"repetitions per run (default {DEFAULT_REPETITIONS})")
    p.add_argument("--min-time", type=float, help="seconds per repetition (default: the "
                                                   "profile's)")
    p.add_argument("--threshold", type=float, default=cmp.DEFAULT_THRESHOLD)
    p.add_argument("--alpha", type=float, default=cmp.DEFAULT_ALPHA)
    p.add_argument("--out", type=Path, default=REPO_ROOT / "results" / "nightly" / "last")
    p.add_argument("--state-dir", type=Path, default=REPO_ROOT / "results" / "nightly",
                   help="holds known-good and history/ (default results/nightly)")
    p.add_argument("--build-root", type=Path, default=REPO_ROOT / "build" / "nightly")
    p.add_argument("--cmake-arg", action="append", default=[], metavar="ARG",
                   help="passed to both configure steps, e.g. -DGAPBENCH_CUDA=OFF")
    p.add_argument("--jobs", type=_positive_int, help="parallel build jobs")
    p.add_argument("--baseline-bin", type=Path, help="take this executable as the known-good "
                                                     "(with --contender-bin: no build)")
    p.add_argument("--contender-bin", type=Path)
    p.add_argument("--no-state", action="store_true",
                   help="write no history and leave known-good as it is")
    p.add_argument("--state-origin", metavar="TEXT",
                   help="where <state-dir> came from, quoted in the summary (the workflow: the "
                        "Actions cache key it restored, or that the cache had none)")
    return p


def _check(args) -> RunSpec:
    cmp.check_rule(args.threshold, args.alpha)
    if args.min_time is not None and not args.min_time > 0:
        raise UsageError(f"--min-time must be > 0, not {args.min_time:g}")
    spec = RunSpec(args.filter, args.profile, args.repetitions, args.min_time)
    if args.baseline_bin or args.contender_bin:
        if not (args.baseline_bin and args.contender_bin):
            raise UsageError("--baseline-bin and --contender-bin go together")
        for p in (args.baseline_bin, args.contender_bin):
            if not p.is_file():
                raise UsageError(f"{p}: no such executable")
    needed = cmp.repetitions_needed(args.alpha)
    if 2 * args.rounds < needed:  # each round runs each side twice
        raise UsageError(f"{args.rounds} round(s) give {2 * args.rounds} runs per side; compare "
                         f"judges by run and needs >= {needed} for p < {args.alpha:g} "
                         f"(--rounds {math.ceil(needed / 2)} or more)")
    if args.rerun_rounds is not None and 2 * args.rerun_rounds < needed:
        # Too few for the rerun to judge by run: it could never confirm, and every flag of the
        # first pass would be dropped as unconfirmed.
        raise UsageError(f"--rerun-rounds {args.rerun_rounds} gives {2 * args.rerun_rounds} runs "
                         f"per side; the rerun needs >= {needed} to confirm anything")
    return spec


def check_out(out: Path) -> None:
    """Refuses an --out folder that holds files this tool did not make: the night replaces it
    whole."""
    if out.exists() and any(out.iterdir()) and not (out / OUT_MARKER).exists():
        raise UsageError(f"{out} exists and was not made by {PROG}; choose another --out")


def new_night(out: Path) -> Path:
    """The folder this night is written into, beside --out: it takes --out's place only once it
    is complete (swap_in), so a night that fails leaves the last night's files as they were."""
    night = out.with_name(f".{out.name}.night-{os.getpid()}")
    shutil.rmtree(night, ignore_errors=True)  # a night of an earlier process of this number
    night.mkdir(parents=True)
    (night / OUT_MARKER).write_text("written by ci/nightly; replaced by its next run\n")
    return night


def swap_in(night: Path, out: Path) -> None:
    """The complete night in --out's place; the previous night's folder removed after."""
    previous = out.with_name(f".{out.name}.previous-{os.getpid()}")
    if out.exists():
        os.replace(out, previous)
    try:
        os.replace(night, out)
    except OSError:
        if previous.exists():
            os.replace(previous, out)
        raise
    shutil.rmtree(previous, ignore_errors=True)


def relocated(v: Verdict, night: Path, out: Path) -> Verdict:
    """The verdict with the paths of its files as they will be once the night is swapped in."""
    def moved(c: cmp.Comparison) -> cmp.Comparison:
        def path(p: str) -> str:
            return str(out / Path(p).relative_to(night)) if Path(p).is_relative_to(night) else p
        return replace(c, baseline_path=path(c.baseline_path),
                       contender_path=path(c.contender_path))
    rerun = None if v.rerun is None else replace(v.rerun, comparison=moved(v.rerun.comparison))
    return replace(v, first=replace(v.first, comparison=moved(v.first.comparison)), rerun=rerun,
                   final=moved(v.final))


def _run(argv: list[str] | None) -> int:
    args = _parser().parse_args(argv)
    spec = _check(args)
    out = Path(os.path.realpath(args.out))  # a link to the folder stays a link to the night
    check_out(out)
    root = REPO_ROOT
    tree = tree_state(root)
    started = time.monotonic()
    found = read_state(args.state_dir)  # before this night adds to it
    good = None if args.baseline_bin else choose_known_good(root, args.good, args.state_dir)
    warning = state_warning(found, args.state_dir, bool(good and good.fell_back),
                            not args.no_state, args.state_origin)
    if warning:  # before the builds, which take long and may fail
        log(warning.replace("**", ""))
    a, b, about = build_sides(args, root, tree, good)
    about["state"] = found.as_json(args.state_dir, args.state_origin, warning)
    night = new_night(out)
    try:
        verdict = _night(args, spec, tree, about, (a, b), night, out, started)
        swap_in(night, out)
    finally:
        shutil.rmtree(night, ignore_errors=True)
    if warning:  # again at the end, where the log is read
        log(warning.replace("**", ""))
    print(f"{PROG}: {headline(verdict)} ({args.out / 'summary.md'})")
    return verdict.exit_code


def _night(args, spec: RunSpec, tree: TreeState, about: dict, sides: tuple[Side, Side],
           night: Path, out: Path, started: float) -> Verdict:
    """The gate, the state it updates and the night's files, written into `night`."""
    log(f"A = {about['baseline']}; B = {about['contender']}")
    verdict = gate(sides, spec, args.rounds, night, threshold=args.threshold,
                   alpha=args.alpha, rerun_rounds=args.rerun_rounds)
    notes = []
    when = datetime.now(timezone.utc)
    if not args.no_state:
        record = history_record(verdict, tree, about["good_commit"], spec, when)
        path = write_history(args.state_dir, record, when, tree)
        log(f"history: {path}")
        if verdict.exit_code == 0 and tree.commit and not tree.dirty and about["good_commit"]:
            write_atomic(args.state_dir / KNOWN_GOOD_FILE, tree.commit + "\n")
            log(f"known-good is now {tree.commit[:12]}")
    notes += _reports(args, verdict, night)
    notes.append(f"took {(time.monotonic() - started) / 60:.1f} min")
    verdict = relocated(verdict, night, out)
    write_json_atomic(night / "comparison.json",
                      comparison_json(verdict, about, spec, args.rounds))
    write_atomic(night / "summary.md",
                 summary_markdown(verdict, about, spec, args.rounds, notes))
    return verdict


def _reports(args, verdict: Verdict, night: Path) -> list[str]:
    """The render of this build's run and the trend; a failure here is noted, never allowed to
    hide the verdict."""
    from gapbench_report import render, trend  # matplotlib: only once the runs are done

    notes = []
    try:
        render.render([verdict.first.contender], [], night / "report")
        notes.append("report of this build's run: report/index.html")
    except Exception as e:  # noqa: BLE001
        notes.append(f"the report could not be rendered: {type(e).__name__}: {e}")
    history = args.state_dir / HISTORY_DIR
    if not args.no_state and history.is_dir():
        try:
            trend.write_trend(trend.load_history([history]), night / "trend")
            notes.append("trend of the nightly medians: trend/index.html")
        except Exception as e:  # noqa: BLE001
            notes.append(f"the trend could not be drawn: {type(e).__name__}: {e}")
    return notes


def main(argv: list[str] | None = None) -> int:
    return commandline.run(PROG, _run, argv, command="nightly")


if __name__ == "__main__":
    sys.exit(main())
