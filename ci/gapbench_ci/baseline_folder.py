"""results/baselines/: the rule every baseline passes, the folder's README table and one writer
at a time. Shared by the two ways a baseline is made, capture (baseline.py) and adoption
(baseline_adopt.py); baseline.py imports baseline_adopt and both import this module, never the
other way round (ci/baseline runs baseline.py as __main__: a module that imported it back would
load a second copy, whose Refused the first does not catch).
"""

from __future__ import annotations

import fcntl
import os
import re
import statistics
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from gapbench_report.cli.kit import ToolError, UsageError
from gapbench_report.inputs.results import Benchmark, Results

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
# A baseline's name, whole (re.fullmatch: "$" would let a final newline through): a file name
# in the folder, and no path.
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
# Names Windows keeps for devices, whatever the case and the extension ("con.json" too): a
# checkout on Windows could not hold the file.
WINDOWS_RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(1, 10)),
                    *(f"lpt{i}" for i in range(1, 10))}
# What a writer killed in the folder left (SIGKILL, a crash: no handler ran): files.write_atomic's
# .NAME.PID.RANDOM.tmp, and a capture's hidden run file and gapbench's partial copy of it.
ATOMIC_TEMPORARY = re.compile(r"\..+\.(\d+)\.[0-9a-f]+\.tmp")
RUN_FILE = re.compile(r"\..+\.run\.json(\.partial\..+)?")
LIBRARY_KEYS = re.compile(r"^(openblas|onednn|cuda|cublas|cudnn|nvidia|gbench)\.")
README_BEGIN = "<!-- baselines:begin (ci/baseline keeps this table) -->"
README_END = "<!-- baselines:end -->"
README_HEADER = ["| baseline | machine | captured | gapbench commit | how | command |",
                 "|---|---|---|---|---|---|"]
README_TEMPLATE = f"""# Baselines

Results of named machines, each made by `ci/baseline` on that machine (see
[docs/regressions.md](../../docs/regressions.md#baselines)): the full profile, random
interleaving, and the spread of every benchmark's repetitions checked before anything is
written; or adopted from a run made elsewhere (`ci/baseline NAME --adopt FILE...`). Each JSON
file carries its provenance under `provenance`: the machine's `gapbench doctor --json` facts, the
date, the gapbench commit, the library versions and the exact command. Nothing here is typed in,
estimated or copied from elsewhere: a GPU baseline comes only from a run on that GPU.

Compare your machine with one: `gapbench-report render results/local/*.json --baseline
results/baselines/NAME.json --out DIR` (ratios that carry across hardware, never a regression).

{README_BEGIN}
{README_END}
"""


def check_name(name: str) -> None:
    """UsageError for a name that cannot be a baseline's file name, here or on Windows."""
    if not NAME_PATTERN.fullmatch(name):
        raise UsageError(f"name {name!r}: use letters, digits, '.', '_' and '-' (at most 64), "
                         "starting with a letter or digit")
    if name.split(".")[0].casefold() in WINDOWS_RESERVED:
        raise UsageError(f"name {name!r}: {name.split('.')[0]} is a device name on Windows "
                         "(CON, PRN, AUX, NUL, COM1-9, LPT1-9, with any extension), where a "
                         "checkout could not hold the file: choose another")


class Refused(Exception):
    """The run is no baseline; str() says why, in one line."""


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
        raise Refused(f"{len(failed)} benchmark(s) failed; a baseline needs every benchmark to "
                      "run or skip with a reason: "
                      + "; ".join(f"{b.name}: {' '.join(str(b.error).split())}" for b in failed))
    timed = [b for b in benchmarks.values() if b.status == "ok"]
    if not timed:
        raise Refused("nothing was timed (every benchmark skipped)")
    noisy = noisy_benchmarks(benchmarks, limit)
    if noisy:
        raise Refused(
            f"{len(noisy)} of {len(timed)} benchmarks spread too wide to be a baseline "
            f"((Q3 - Q1) / median above {limit:.0%}); run again when the machine is quiet: "
            + "; ".join(f"{n.name}: spread {n.spread:.1%} (cv {n.cv:.1%}, {n.samples} "
                        "repetitions)" for n in noisy))
    spreads = {b.name: spread(b.samples) for b in timed if len(b.samples) >= 2}
    worst = max(spreads, key=spreads.get) if spreads else None
    return {"limit": limit, "worst": worst, "worst_spread": spreads.get(worst),
            "median_spread": statistics.median(spreads.values()) if spreads else None,
            "timed": len(timed), "skipped": sum(b.status == "skipped"
                                                for b in benchmarks.values())}


# ---- results/baselines/README.md -------------------------------------------------------------

MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]#!|~])")


def _cell(text: object) -> str:
    """Text from outside (a file's facts, --how) as plain text in a table cell: no Markdown, no
    HTML of its own (`<script>` is shown, not run), and no end of the cell."""
    text = " ".join(str(text).split()).replace("&", "&amp;")
    return MARKDOWN_SPECIAL.sub(r"\\\1", text).replace("<", "&lt;").replace(">", "&gt;")


def _code(text: object) -> str:
    """`text` as a code span in a table cell, whatever backticks it holds (the fence is longer
    than its longest run of them)."""
    text = " ".join(str(text).split()).replace("|", "\\|")
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


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
        how = (f"adopted: {_cell(prov['how'])} Widest spread {worst:.1%} (limit "
               f"{prov['spread']['limit']:.0%})." if worst is not None else
               f"adopted: {_cell(prov['how'])}")
        how += "".join(f" Beside it: [`{stem}`]({stem}.json)." for stem in sides)
        when = _cell(str(prov["captured_at"] or "unknown").replace("T", " "))
        command = prov["command"].split(" --how ")[0] + " --how TEXT"  # TEXT: the how column
        return (f"| [`{name}`]({name}.json) | {_cell(machine)} | {when} | `{commit}` | "
                f"{how} | {_code(command)} |")
    how = (f"profile {prov['profile']}, {prov['repetitions']} repetitions, random "
           f"interleaving, filter {_code(prov['filter'])}"
           + (f", min time {prov['min_time_s']:g} s" if prov["min_time_s"] else "")
           + (f", widest spread {worst:.1%}" if worst is not None else "")
           + (f" (limit {prov['spread']['limit']:.0%})" if "limit" in prov["spread"] else ""))
    when = prov["captured_at"].replace("T", " ")
    return (f"| [`{name}`]({name}.json) | {_cell(machine)} | {when} | `{commit}` | "
            f"{how} | {_code(prov['command'])} |")


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


# ---- one writer at a time ---------------------------------------------------------------------

def remove_litter(out_dir: Path) -> list[str]:
    """Removes what writers killed in the folder left (called with the folder's lock held, so
    no capture is running): a temporary file of a process that is gone, a capture's run file.
    Returns their names."""
    removed = []
    for path in out_dir.iterdir():
        temporary = ATOMIC_TEMPORARY.fullmatch(path.name)
        if (temporary and not alive(int(temporary[1]))) or RUN_FILE.fullmatch(path.name):
            with suppress(FileNotFoundError):
                path.unlink()
                removed.append(path.name)
    return removed


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return pid < 2**22  # another user's process, or no pid at all
    return True


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
        remove_litter(out_dir)
        yield
    finally:
        os.close(fd)
