"""Capture a baseline: one full-profile run of this machine, checked and with its provenance.

    ci/baseline NAME [--filter REGEX] [--repetitions 10] [--spread-limit 0.25] [--binary PATH]
                     [--require-gpu] [--cmake-arg ARG]...
    ci/baseline NAME --adopt FILE... --commit SHA --how TEXT [--replace]   (results measured
                     elsewhere: gapbench_ci/baseline_adopt.py)

Exit status: 0 written, 1 refused, 2 bad arguments or a tool error. What it checks and writes:
docs/regressions.md#baselines.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from datetime import datetime, timezone
from pathlib import Path

from gapbench_report.cli import kit as commandline
from gapbench_report.cli.kit import ToolError, UsageError
from gapbench_report.compare import command as cmp
from gapbench_report.inputs.files import write_atomic, write_json_atomic
from gapbench_report.inputs.results import load_results

from gapbench_ci import baseline_adopt, tools
from gapbench_ci.baseline_folder import (
    LIBRARY_KEYS,
    PROG,
    SPREAD_LIMIT,
    Refused,
    capturing_into,
    check_name,
    check_run,
    readme_row,
    update_readme,
)
from gapbench_ci.runner import (
    REPO_ROOT,
    RunSpec,
    TreeState,
    doctor_facts,
    read_document,
    run_gapbench,
    tree_state,
)

DEFAULT_REPETITIONS = 10  # the full profile's
PROFILE = "full"


def provenance(name: str, command: str, doctor: dict, spec: RunSpec, repetitions: int,
               spread_summary: dict, when: datetime, tree: TreeState) -> dict:
    facts = doctor.get("facts", {})
    return {
        "name": name,
        "captured_at": when.isoformat(timespec="seconds"),
        "command": command,
        "gapbench_commit": tree.commit,
        "gapbench_dirty": tree.dirty,
        "gapbench_version": facts.get("gapbench.version"),
        "profile": spec.profile,
        "repetitions": repetitions,
        "min_time_s": spec.min_time,  # null: the profile's
        "random_interleaving": spec.interleave,
        "filter": spec.filter,
        "spread": spread_summary,
        "libraries": {k: v for k, v in facts.items() if LIBRARY_KEYS.match(k)},
        "machine": facts,
        "machine_findings": doctor.get("findings", []),
    }


# ---- capture ---------------------------------------------------------------------------------

def build_default(cmake_args: list[str]) -> Path:
    """The default preset's gapbench, configured and built where needed."""
    build = REPO_ROOT / "build" / "default"
    if cmake_args or not (build / "CMakeCache.txt").exists():
        tools.configure(REPO_ROOT, preset="default", extra=cmake_args,
                        what="configuring (preset default)", echo=True)
    tools.build(preset="default", what="building (preset default)", cwd=REPO_ROOT, echo=True)
    return build / "gapbench"


def capture(args, command: str) -> Path:
    out_dir: Path = args.out_dir
    tree = tree_state(REPO_ROOT)  # before the run writes anything into the tree
    binary = args.binary if args.binary else build_default(args.cmake_arg)
    if not binary.is_file():
        raise ToolError(f"{binary}: no such executable")
    doctor = doctor_facts(binary)
    if "gapbench.test_inject_fraction" in doctor["facts"]:
        raise Refused(f"{binary} is a GAPBENCH_TEST_INJECT build (ci/gate-proof's), whose times "
                      "carry an injected slowdown")
    if args.require_gpu and doctor["facts"].get("gpu.status") != "ok":
        raise ToolError(f"--require-gpu: gapbench cannot use the GPU here: "
                        f"{doctor['facts'].get('gpu.status', 'unknown')} (see {binary} doctor)")
    spec = RunSpec(args.filter, PROFILE, args.repetitions, args.min_time, interleave=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    with capturing_into(out_dir):
        run = out_dir / f".{args.name}.run.json"  # never taken for a baseline: hidden, removed
        try:
            print(f"{PROG}: running {binary} {shlex.join(spec.args())}", file=sys.stderr,
                  flush=True)
            run_gapbench(binary, spec, run, quiet=False)
            results = load_results(run)
            summary = check_run(results, args.spread_limit)
            when = datetime.now(timezone.utc)
            data = read_document(run)
            data["provenance"] = provenance(args.name, command, doctor, spec, args.repetitions,
                                            summary, when, tree)
            target = out_dir / f"{args.name}.json"
            write_json_atomic(target, data)
        finally:
            run.unlink(missing_ok=True)
        readme = out_dir / "README.md"
        text = readme.read_text(encoding="utf-8") if readme.exists() else ""
        write_atomic(readme, update_readme(text, args.name,
                                           readme_row(args.name, data["provenance"])))
        return target


def _parser() -> commandline.Parser:
    p = commandline.parser(PROG, __doc__)
    p.add_argument("name", help="the baseline's name, e.g. cpu-2core or colab-t4 "
                                "(letters, digits, . _ -)")
    p.add_argument("--filter", default=".", help="benchmark filter (regex; default: all)")
    p.add_argument("--repetitions", type=int, default=DEFAULT_REPETITIONS,
                   help=f"repetitions per benchmark (default {DEFAULT_REPETITIONS})")
    p.add_argument("--min-time", type=float,
                   help="seconds per repetition (default: the full profile's)")
    p.add_argument("--spread-limit", type=float, default=SPREAD_LIMIT,
                   help="the widest (Q3 - Q1) / median a benchmark's repetitions may have "
                        f"(default {SPREAD_LIMIT:g})")
    p.add_argument("--binary", type=Path, help="use this gapbench instead of building "
                                               "build/default")
    p.add_argument("--require-gpu", action="store_true",
                   help="stop before the run when gapbench cannot use a GPU here (a GPU "
                        "baseline without its GPU variants would be no GPU baseline)")
    p.add_argument("--cmake-arg", action="append", default=[], metavar="ARG",
                   help="passed to `cmake --preset default`, e.g. "
                        "-DCMAKE_CUDA_ARCHITECTURES=native")
    adopt = p.add_argument_group("adopting results measured elsewhere (no run here)")
    adopt.add_argument("--adopt", nargs="+", type=Path, metavar="FILE",
                       help="gapbench results files of one machine (and its gapbench-probe "
                            "files), merged into NAME.json")
    adopt.add_argument("--commit", help="with --adopt: the gapbench commit they were built from")
    adopt.add_argument("--how", help="with --adopt: how they were made, in words (machine, OS, "
                                     "build, libraries, profile), for the provenance")
    adopt.add_argument("--replace", action="store_true",
                       help="with --adopt: replace the baseline NAME that is already there "
                            "(without it, an existing name is refused)")
    p.add_argument("--out-dir", type=Path, default=REPO_ROOT / "results" / "baselines",
                   help=argparse.SUPPRESS)  # for the tests
    return p


def _run(argv: list[str]) -> int:
    try:
        args = _parser().parse_args(argv)
        check_name(args.name)
        needed = cmp.repetitions_needed(cmp.DEFAULT_ALPHA)
        if args.repetitions < needed:
            raise UsageError(f"--repetitions {args.repetitions}: compare needs at least "
                             f"{needed} per side")
        if args.min_time is not None and not args.min_time > 0:
            raise UsageError(f"--min-time must be > 0, not {args.min_time:g}")
        if not 0 < args.spread_limit <= 1:
            raise UsageError(
                f"--spread-limit must be in (0, 1], not {args.spread_limit:g}")
        if args.adopt:
            target = baseline_adopt.run(args, shlex.join([PROG, *argv]))
        elif args.commit is not None or args.how is not None or args.replace:
            raise UsageError("--commit, --how and --replace go with --adopt")
        else:
            target = capture(args, shlex.join([PROG, *argv]))
    except Refused as e:
        print(f"{PROG}: refused, nothing written: " + " ".join(str(e).split()), file=sys.stderr)
        return 1
    print(target)
    return 0


def main(argv: list[str] | None = None) -> int:
    return commandline.run(PROG, _run, argv, command="baseline")


if __name__ == "__main__":
    sys.exit(main())
