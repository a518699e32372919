"""Capture a baseline: one full-profile run of this machine, checked and with its provenance.

    ci/baseline NAME [--filter REGEX] [--repetitions 10] [--spread-limit 0.25] [--binary PATH]
                     [--require-gpu] [--cmake-arg ARG]...
    ci/baseline NAME --adopt FILE... --commit SHA --how TEXT   (results measured elsewhere:
                     gapbench_ci/baseline_adopt.py)

Exit status: 0 written, 1 refused, 2 bad arguments or a tool error. What it checks and writes:
docs/regressions.md#baselines.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import re
import shlex
import statistics
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from gapbench_report import commandline
from gapbench_report import compare as cmp
from gapbench_report.commandline import ToolError, UsageError
from gapbench_report.files import write_atomic, write_json_atomic
from gapbench_report.results import Benchmark, Results, load_results

from gapbench_ci.runner import (
    REPO_ROOT,
    RunSpec,
    TreeState,
    doctor_facts,
    read_document,
    run_gapbench,
    run_logged,
    tree_state,
)

PROG = "ci/baseline"
# (Q3 - Q1) / median of a benchmark's repetitions. Measured on the 2-core CI VM (a shared cloud
# VM, as Colab's is), in quiet 11- and 30-minute runs with random interleaving: 30 of 39
# benchmarks over 10%, then 15 of 101 over 25% and the widest at 60% (OpenBLAS and oneDNN at
# small sizes on both vCPUs, which share the machine with everything else). Such a machine's
# noise is real and its baseline must still be possible, so the rule refuses only a run whose
# repetitions disagree by nearly 2x in their middle half: the machine changed under the run. A
# baseline is read across machines, as ratios, where the differences it should show are 2x and
# more: with 10 repetitions, a 75% spread still puts the median within about 20% (one standard
# error). Same-machine verdicts never use a baseline (the nightly builds both sides). A quiet,
# dedicated machine can ask for less with --spread-limit; the limit used is in the provenance
# and in the README row.
SPREAD_LIMIT = 0.75
DEFAULT_REPETITIONS = 10  # the full profile's
PROFILE = "full"
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
LIBRARY_KEYS = re.compile(r"^(openblas|onednn|cuda|cublas|cudnn|nvidia|gbench)\.")
README_BEGIN = "<!-- baselines:begin (ci/baseline keeps this table) -->"
README_END = "<!-- baselines:end -->"
README_HEADER = ["| baseline | machine | captured | gapbench commit | how | command |",
                 "|---|---|---|---|---|---|"]
README_TEMPLATE = f"""# Baselines

Results of named machines, each made by `ci/baseline` on that machine (see
[docs/regressions.md](../../docs/regressions.md#baselines)): the full profile, random
interleaving, and the spread of every benchmark's repetitions checked before anything is
written; or adopted from a run made elsewhere (`ci/baseline NAME --adopt FILE...`). Each JSON file carries its provenance under `provenance`: the machine's
`gapbench doctor --json` facts, the date, the gapbench commit, the library versions and the
exact command. Nothing here is typed in, estimated or copied from
elsewhere: a GPU baseline comes only from a run on that GPU.

Compare your machine with one: `gapbench-report render results/local/*.json --baseline
results/baselines/NAME.json --out DIR` (ratios that carry across hardware, never a regression).

{README_BEGIN}
{README_END}
"""


class Refused(Exception):
    """The run is no baseline; str() says why (one line per reason)."""


@dataclass(frozen=True)
class Noisy:
    name: str
    spread: float
    cv: float
    samples: int


def spread(samples: tuple[float, ...]) -> float:
    """(Q3 - Q1) / median, quartiles interpolated linearly (numpy's default)."""
    q1, median, q3 = statistics.quantiles(samples, n=4, method="inclusive")
    return (q3 - q1) / median


def coefficient_of_variation(samples: tuple[float, ...]) -> float:
    return statistics.stdev(samples) / statistics.mean(samples)


def noisy_benchmarks(benchmarks: dict[str, Benchmark], limit: float = SPREAD_LIMIT
                     ) -> list[Noisy]:
    out = []
    for name, b in benchmarks.items():
        if b.status == "ok" and len(b.samples) >= 2:
            s = spread(b.samples)
            if s > limit:
                out.append(Noisy(name, s, coefficient_of_variation(b.samples), len(b.samples)))
    return sorted(out, key=lambda n: -n.spread)


def check_run(results: Results, limit: float = SPREAD_LIMIT) -> dict:
    """Raises Refused when the run is no baseline; else a summary of its spread."""
    benchmarks = results.benchmarks()
    failed = [b for b in benchmarks.values() if b.status == "failed"]
    if failed:
        raise Refused("\n".join([f"{len(failed)} benchmark(s) failed; a baseline needs every "
                                 "benchmark to run or skip with a reason:"]
                                + [f"  {b.name}: {b.error}" for b in failed]))
    timed = [b for b in benchmarks.values() if b.status == "ok"]
    if not timed:
        raise Refused("nothing was timed (every benchmark skipped)")
    noisy = noisy_benchmarks(benchmarks, limit)
    if noisy:
        raise Refused("\n".join(
            [f"{len(noisy)} of {len(timed)} benchmarks spread too wide to be a baseline "
             f"((Q3 - Q1) / median above {limit:.0%}); run again when the machine is quiet:"]
            + [f"  {n.name}: spread {n.spread:.1%} (cv {n.cv:.1%}, {n.samples} repetitions)"
               for n in noisy]))
    spreads = {b.name: spread(b.samples) for b in timed if len(b.samples) >= 2}
    worst = max(spreads, key=spreads.get) if spreads else None
    return {"limit": limit, "worst": worst, "worst_spread": spreads.get(worst),
            "median_spread": statistics.median(spreads.values()) if spreads else None,
            "timed": len(timed), "skipped": sum(b.status == "skipped"
                                                for b in benchmarks.values())}


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


# ---- results/baselines/README.md -------------------------------------------------------------

def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def readme_row(name: str, prov: dict, sides: list[str] = ()) -> str:
    """NAME's row; `sides`: the stems of files kept beside it (its framework side)."""
    facts = prov["machine"]
    machine = "; ".join(p for p in (
        facts.get("cpu.model"), f"{facts.get('cpu.cores', '?')} cores",
        facts.get("gpu.name") or "no usable GPU", f"machine.id {facts.get('machine.id', '?')}")
        if p)
    commit = (prov["gapbench_commit"] or "unknown")[:12] + \
        (" (uncommitted changes)" if prov["gapbench_dirty"] else "")
    worst = prov["spread"].get("worst_spread")
    if prov.get("adopted"):  # measured elsewhere: the adopter's account, then what was checked
        how = (f"adopted: {prov['how']} Widest spread {worst:.1%} (limit "
               f"{prov['spread']['limit']:.0%})." if worst is not None else
               f"adopted: {prov['how']}")
        how += "".join(f" Beside it: [`{stem}`]({stem}.json)." for stem in sides)
        when = prov["captured_at"].replace("T", " ")
        command = prov["command"].split(" --how ")[0] + " --how TEXT"  # TEXT: the how column
        return (f"| [`{name}`]({name}.json) | {_cell(machine)} | {when} | `{commit}` | "
                f"{_cell(how)} | `{_cell(command)}` |")
    how = (f"profile {prov['profile']}, {prov['repetitions']} repetitions, random "
           f"interleaving, filter `{prov['filter']}`"
           + (f", min time {prov['min_time_s']:g} s" if prov["min_time_s"] else "")
           + (f", widest spread {worst:.1%}" if worst is not None else "")
           + (f" (limit {prov['spread']['limit']:.0%})" if "limit" in prov["spread"] else ""))
    when = prov["captured_at"].replace("T", " ")
    return (f"| [`{name}`]({name}.json) | {_cell(machine)} | {when} | `{commit}` | "
            f"{_cell(how)} | `{_cell(prov['command'])}` |")


def update_readme(text: str, name: str, row: str) -> str:
    """`text` with NAME's row added or replaced in the table between the markers (the table is
    created when missing), rows sorted by name."""
    if not text.strip():
        text = README_TEMPLATE
    elif README_BEGIN not in text or README_END not in text:
        text = text.rstrip("\n") + "\n\n" + README_BEGIN + "\n" + README_END + "\n"
    head, rest = text.split(README_BEGIN, 1)
    body, tail = rest.split(README_END, 1)
    rows = {}
    for line in body.splitlines():
        match = re.match(r"^\| \[`([^`]+)`\]", line)
        if match:
            rows[match[1]] = line
    rows[name] = row
    table = README_HEADER + [rows[k] for k in sorted(rows)]
    return head + README_BEGIN + "\n" + "\n".join(table) + "\n" + README_END + tail


# ---- capture ---------------------------------------------------------------------------------

def build_default(cmake_args: list[str]) -> Path:
    """The default preset's gapbench, configured and built where needed."""
    build = REPO_ROOT / "build" / "default"
    if cmake_args or not (build / "CMakeCache.txt").exists():
        run_logged(["cmake", "--preset", "default", *cmake_args], "configuring (preset default)",
                   cwd=REPO_ROOT)
    run_logged(["cmake", "--build", "--preset", "default", "--target", "gapbench"],
               "building (preset default)", cwd=REPO_ROOT)
    return build / "gapbench"


@contextmanager
def capturing_into(out_dir: Path) -> Iterator[None]:
    """One capture at a time into a folder: two at once would share the run file and the README
    (and, on one machine, disturb each other's timings). Held while the process lives; the lock
    goes with it, however it ends."""
    fd = os.open(out_dir, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ToolError(f"another {PROG} is capturing into {out_dir} now; run this one "
                            "when it has finished (two at once would disturb each other's "
                            "timings)") from None
        yield
    finally:
        os.close(fd)


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
    p.add_argument("--out-dir", type=Path, default=REPO_ROOT / "results" / "baselines",
                   help=argparse.SUPPRESS)  # for the tests
    return p


def _run(argv: list[str]) -> int:
    try:
        args = _parser().parse_args(argv)
        if not NAME_PATTERN.match(args.name):
            raise UsageError(f"name {args.name!r}: use letters, digits, '.', '_' and '-' "
                             "(at most 64), starting with a letter or digit")
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
            from gapbench_ci import baseline_adopt  # noqa: PLC0415 - it imports this module
            return baseline_adopt.run(args, argv)
        if args.commit or args.how:
            raise UsageError("--commit and --how go with --adopt")
        target = capture(args, shlex.join([PROG, *argv]))
    except Refused as e:
        print(f"{PROG}: refused, nothing written: {e}", file=sys.stderr)
        return 1
    print(target)
    return 0


def main(argv: list[str] | None = None) -> int:
    return commandline.run(PROG, _run, argv, command="baseline")


if __name__ == "__main__":
    sys.exit(main())
