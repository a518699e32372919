"""gapbench's own benchmark list, per profile, as committed beside this module
(gapbench_benchmarks.txt): where the probe's shapes come from (plan.py), so that they cannot
drift from the families'. The probe never needs gapbench itself to plan.

    python -m gapbench_probe.gapbench_list --regenerate|--check GAPBENCH

--regenerate writes the file from GAPBENCH's `--profile=<p> --benchmark_list_tests`; --check
(ctest probe.shapes_match_gapbench) exits 1 naming every line that differs. Exit 2: bad input.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

PROFILES = ("quick", "full")
# Left out: peak/'s CPU ceilings, whose names follow the machine (threads:all is one per usable
# core, mib: the last-level cache), so that no committed list could match every CPU. Its GPU
# names (the GEMM sizes) are fixed: the probe's large GPU matmuls take theirs.
UNPROBED_FAMILY = "peak"
UNPROBED_DEVICE = "cpu"
# What Google Benchmark appends after gapbench's own parts: its settings (iterations:3 and the
# like, which are no axes), then the timing (real_time), then threads:N.
SETTINGS = ("min_time", "iterations", "repeats")
TIMINGS = ("real_time", "manual_time", "process_time")
COMMITTED = Path(__file__).with_name("gapbench_benchmarks.txt")  # package data
HEADER = """\
# gapbench's benchmark list, per profile, for the families gapbench-probe runs: its shapes.
# Made by `python -m gapbench_probe.gapbench_list --regenerate GAPBENCH` (in probe/); ctest
# probe.shapes_match_gapbench fails when the built gapbench lists anything else.
"""


@dataclass(frozen=True)
class Listed:
    """One name of gapbench's list, in its parts: family/variant/device/axis:value.../timing."""

    family: str
    variant: str
    device: str
    axes: tuple[tuple[str, str], ...]


def parse(name: str) -> Listed:
    family, variant, device, *rest = name.split("/")
    end = next((i for i, part in enumerate(rest)
                if part in TIMINGS or part.split(":", 1)[0] in SETTINGS), len(rest))
    return Listed(family, variant, device, tuple(tuple(a.split(":", 1)) for a in rest[:end]))


def probed(names: str) -> str:
    """The lines of a `--benchmark_list_tests` output that the probe can draw on."""
    def unprobed(line: str) -> bool:
        family, _, device = (line.split("/") + ["", ""])[:3]
        return family == UNPROBED_FAMILY and device == UNPROBED_DEVICE
    return "".join(line for line in names.splitlines(keepends=True) if not unprobed(line))


def sections(text: str) -> dict[str, list[str]]:
    """The file's names per profile: a `[profile]` line opens each profile's names."""
    names: dict[str, list[str]] = {}
    profile = None
    for line in text.splitlines():
        if line.startswith("[") and line.endswith("]"):
            profile = names.setdefault(line[1:-1], [])
        elif line and not line.startswith("#"):
            profile.append(line)
    return names


@cache
def listed(profile: str) -> tuple[Listed, ...]:
    """gapbench's benchmarks in `profile`, in gapbench's order, from the committed file."""
    text = COMMITTED.read_text(encoding="utf-8")
    return tuple(parse(name) for name in sections(text)[profile])


def from_gapbench(gapbench: str) -> str:
    """The file's text, as `gapbench` lists its benchmarks now."""
    parts = [HEADER]
    for profile in PROFILES:
        done = subprocess.run([gapbench, f"--profile={profile}", "--benchmark_list_tests"],
                              capture_output=True, text=True, check=False, timeout=120)
        if done.returncode != 0:
            error = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
            raise OSError(f"{gapbench} --profile={profile} --benchmark_list_tests: {error}")
        parts.append(f"[{profile}]\n{probed(done.stdout)}")
    return "".join(parts)


def differences(committed: str, current: str) -> list[str]:
    """One line per name that only one of the two lists has, by profile."""
    old, new = sections(committed), sections(current)
    lines = []
    for profile in PROFILES:
        before, now = old.get(profile, []), new.get(profile, [])
        had, has = set(before), set(now)
        added = [f"  --profile={profile}: gapbench lists {n}, the file does not"
                 for n in now if n not in had]
        gone = [f"  --profile={profile}: the file lists {n}, gapbench does not"
                for n in before if n not in has]
        lines += added + gone
        if not added and not gone and before != now:
            lines.append(f"  --profile={profile}: the same names in another order")
    return lines


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    prog = "python -m gapbench_probe.gapbench_list"
    if len(argv) != 2 or argv[0] not in ("--regenerate", "--check"):
        print(f"usage: {prog} --regenerate|--check GAPBENCH", file=sys.stderr)
        return 2
    flag, gapbench = argv
    path = COMMITTED
    try:
        current = from_gapbench(gapbench)
    except (OSError, subprocess.SubprocessError) as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return 2
    if flag == "--regenerate":
        path.write_text(current, encoding="utf-8")
        print(f"wrote {path}")
        return 0
    found = differences(path.read_text(encoding="utf-8"), current)
    if found:
        print(f"{path} differs from {gapbench}'s list; if gapbench is right, run "
              f"`{prog} --regenerate {gapbench}` in probe/ and review the probe's cases:",
              *found, sep="\n", file=sys.stderr)
        return 1
    print(f"{path} matches {gapbench}'s list")
    return 0


if __name__ == "__main__":
    sys.exit(main())
