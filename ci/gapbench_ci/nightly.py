"""The nightly regression gate: this build against the last known-good one, on one machine.

    ci/nightly [--good REF] [--filter REGEX] [--profile quick|full] [--rounds 16]
               [--repetitions 2] [--min-time S] [--threshold 0.05] [--alpha 0.01]
               [--out results/nightly/last] [--state-dir results/nightly] [--cmake-arg ARG]...
               [--baseline-bin PATH --contender-bin PATH] [--no-state] [--state-origin TEXT]

Exit status: 0 no regression, 1 a confirmed regression or a new failure, 2 a tool error. How
it decides and what it writes: docs/regressions.md#nightly.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
import time
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

from gapbench_report.cli import kit as commandline
from gapbench_report.cli.kit import UsageError
from gapbench_report.compare import command as cmp
from gapbench_report.inputs.files import write_atomic, write_json_atomic

from gapbench_ci.nightly_gate import (
    DEFAULT_REPETITIONS,
    DEFAULT_ROUNDS,
    RERUN_FACTOR,
    Verdict,
    gate,
    log,
)
from gapbench_ci.nightly_state import (
    HISTORY_DIR,
    KnownGood,
    choose_known_good,
    history_record,
    read_state,
    state_warning,
    write_history,
    write_known_good,
)
from gapbench_ci.nightly_summary import comparison_json, headline, night_summary_markdown
from gapbench_ci.runner import (
    REPO_ROOT,
    RunSpec,
    Side,
    TreeState,
    build_gapbench,
    export_commit,
    git,
    tree_state,
)

PROG = "ci/nightly"
OUT_MARKER = ".gapbench-nightly"  # an --out folder this tool made, and may empty


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
    is complete (swap_in): a failed night never touches the previous one."""
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


def _run(argv: list[str]) -> int:
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
            write_known_good(args.state_dir, tree.commit)
            log(f"known-good is now {tree.commit[:12]}")
    notes += _reports(args, verdict, night)
    notes.append(f"took {(time.monotonic() - started) / 60:.1f} min")
    verdict = relocated(verdict, night, out)
    write_json_atomic(night / "comparison.json",
                      comparison_json(verdict, about, spec, args.rounds))
    write_atomic(night / "summary.md",
                 night_summary_markdown(verdict, about, spec, args.rounds, notes))
    return verdict


def _reports(args, verdict: Verdict, night: Path) -> list[str]:
    """The render of this build's run and the trend; a failure here is noted, never allowed to
    hide the verdict."""
    from gapbench_report.render import command as render
    from gapbench_report.trend import command as trend  # matplotlib: only once the runs are done

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
