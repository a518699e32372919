"""Estimate the quick profile's GPU run, family by family, from an earlier GPU run's results.

    ci/gpu-quick-estimate RESULTS... [--gapbench BIN] [--save-costs FILE]

RESULTS are Google Benchmark JSON files (one family's GPU run each, as ci/gpu-check writes them)
or a table of row costs that --save-costs wrote. A row's wall time is about (repetitions + 1) x
its iterations x the larger of its real and CPU time per iteration: the extra repetition is
Google Benchmark's search for the iteration count, and the larger time because a kernel-timed
row reports device time while the host spends more per iteration. Each family's run adds
PROCESS_S (start-up, the stability probes, a CUDA context). On an H200's files (2026-11-26)
this gives 35, 40, 26, 54 and 10 s for transfer, conv, lstm, overhead and pipeline, against 34,
38, 24, 56 and 12 s measured.

With --gapbench, the rows are those its quick profile lists now (--benchmark_list_tests needs no
GPU), with peak's GPU rows beside each family as ci/gpu-check runs them; rows the results lack
count UNMEASURED_ROW_S each, and are listed. Without it, the rows in the results.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from gapbench_report.cli import kit as commandline
from gapbench_report.cli.kit import ToolError
from gapbench_report.inputs.files import write_json_atomic

from gapbench_ci import tools

PROG = "ci/gpu-quick-estimate"
# One family's process around its rows: start-up, the stability probes, a CUDA context.
PROCESS_S = 3.4
# A row the results do not have: about what a kernel-timed row of a short kernel costs (most
# rows measured 0.3-2.5 s on an H200).
UNMEASURED_ROW_S = 1.0
_UNIT_S = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def row_costs(document: dict) -> dict[str, float]:
    """Each row's estimated wall seconds in one Google Benchmark JSON document."""
    runs: dict[str, list[dict]] = {}
    for b in document.get("benchmarks", []):
        if b.get("run_type") == "iteration" and not b.get("error_occurred"):
            runs.setdefault(b.get("run_name") or b.get("name", "?"), []).append(b)
    out = {}
    for name, reps in runs.items():
        per_rep = [b["iterations"] * max(b["real_time"], b["cpu_time"]) * _UNIT_S[b["time_unit"]]
                   for b in reps]
        out[name] = sum(per_rep) * (len(per_rep) + 1) / len(per_rep)
    return out


def load_costs(paths: Iterable[Path]) -> dict[str, float]:
    """Row costs from results files or cost tables; a row in several files (peak's, beside each
    family) counts at its mean."""
    seen: dict[str, list[float]] = {}
    for path in paths:
        try:
            document = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise ToolError(f"{path}: not readable as JSON ({e})") from None
        costs = document.get("costs") if isinstance(document, dict) else None
        if costs is None:
            costs = row_costs(document)
        for name, seconds in costs.items():
            seen.setdefault(name, []).append(float(seconds))
    return {name: sum(v) / len(v) for name, v in seen.items()}


@dataclass
class Family:
    name: str
    rows: int = 0
    seconds: float = PROCESS_S
    unmeasured: list[str] = field(default_factory=list)


def estimate(names: Iterable[str], costs: dict[str, float]) -> dict[str, Family]:
    """Each family's estimate for running `names` (peak's GPU rows go beside every family)."""
    names = list(names)
    peak = [n for n in names if n.startswith("peak/")]
    families: dict[str, Family] = {}
    for name in names:
        family = name.split("/", 1)[0]
        if family != "peak":
            families.setdefault(family, Family(family))
    for family in families.values():
        for name in [*peak, *(n for n in names if n.split("/", 1)[0] == family.name)]:
            family.rows += 1
            if name in costs:
                family.seconds += costs[name]
            else:
                family.seconds += UNMEASURED_ROW_S
                family.unmeasured.append(name)
    return families


def quick_gpu_names(gapbench: Path) -> list[str]:
    return tools.list_benchmarks(gapbench, "quick", "/gpu/")


def table(families: dict[str, Family]) -> str:
    lines = ["| family | rows | unmeasured | estimate |", "|---|---|---|---|"]
    for f in families.values():
        lines.append(f"| {f.name} | {f.rows} | {len(f.unmeasured)} | {f.seconds:.0f} s |")
    total = sum(f.seconds for f in families.values())
    lines.append(f"| all | {sum(f.rows for f in families.values())} | "
                 f"{sum(len(f.unmeasured) for f in families.values())} | {total:.0f} s |")
    return "\n".join(lines)


def _run(argv: list[str]) -> int:
    p = commandline.parser(PROG, __doc__)
    p.add_argument("results", nargs="+", type=Path, help="results files or cost tables")
    p.add_argument("--gapbench", type=Path, help="estimate the rows its quick profile lists")
    p.add_argument("--save-costs", type=Path, metavar="FILE",
                   help="write the row costs as a table (a small file to keep)")
    args = p.parse_args(argv)
    costs = load_costs(args.results)
    if args.save_costs:
        write_json_atomic(args.save_costs, {"costs": {n: round(s, 3)
                                                      for n, s in sorted(costs.items())}})
    names = quick_gpu_names(args.gapbench) if args.gapbench else list(costs)
    families = estimate(names, costs)
    print(table(families))
    for f in families.values():
        for name in f.unmeasured:
            print(f"unmeasured ({UNMEASURED_ROW_S:.0f} s): {name}")
    return 0


def main(argv: list[str] | None = None) -> int:
    return commandline.run(PROG, _run, argv, command="gpu-quick-estimate")


if __name__ == "__main__":
    sys.exit(main())
