"""Makes the real runs that test_fleet.py judges: several runs of this machine, two made slower
for real, each as a node folder of a fleet (doctor.json and one results file per part).

    .venv/bin/python report/tests/fleet_real_runs.py GAPBENCH OUT [--busy N] [--warm S]

- normal-1 to normal-4: plain runs;
- sse41: oneDNN and OpenBLAS capped to SSE4.1 (DNNL_MAX_CPU_ISA=SSE41, OPENBLAS_CORETYPE=
  Nehalem), a real slower CPU path; doctor records the cap (onednn.isa_cap);
- loaded: while --busy processes spin on the cores (started --warm seconds before, so that the
  1-minute load average in the run context has risen).

The plain and capped runs go part by part (PARTS), each part run once per run before the next
part starts: the load that other users put on a shared machine then falls on every run alike.
The loaded run comes last, as its load average takes minutes to fall again. The committed copy
is report/tests/data/fleet/this-machine/. Not collected by pytest.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

PARTS = {"conv-onednn": "^conv/onednn/cpu/", "conv-im2col": "^conv/im2col_blas/cpu/",
         "conv-naive": "^conv/naive/cpu/", "openblas": "^overhead/openblas/cpu/",
         "peak": "^peak/(memcpy|triad)/cpu/"}
CAPPED = {"DNNL_MAX_CPU_ISA": "SSE41", "OPENBLAS_CORETYPE": "Nehalem"}
RUNS = {"normal-1": {}, "sse41": CAPPED, "normal-2": {}, "normal-3": {}, "normal-4": {}}
SPIN = "while True: pass"


def environment(env: dict[str, str]) -> dict[str, str]:
    """This process's environment without the caps, plus `env`."""
    return {**{k: v for k, v in os.environ.items() if k not in CAPPED}, **env}


def doctor(gapbench: Path, folder: Path, env: dict[str, str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "doctor.json", "w", encoding="utf-8") as out:
        subprocess.run([str(gapbench), "doctor", "--json"], stdout=out, env=environment(env),
                       check=True, timeout=600)


def part(gapbench: Path, folder: Path, name: str, env: dict[str, str]) -> None:
    subprocess.run([str(gapbench), "--profile=quick", f"--benchmark_filter={PARTS[name]}",
                    f"--benchmark_out={folder / (name + '.json')}"], env=environment(env),
                   stdout=subprocess.DEVNULL, check=True, timeout=3600)
    print(f"{folder.name} {name}: done (load average {os.getloadavg()[0]:.2f})", flush=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("gapbench", type=Path)
    p.add_argument("out", type=Path)
    p.add_argument("--busy", type=int, default=8 * (os.cpu_count() or 1),
                   help="spinning processes during the loaded run (default 8 per core)")
    p.add_argument("--warm", type=float, default=90.0,
                   help="seconds the spinning runs before the loaded run starts")
    args = p.parse_args(argv)
    for run, env in RUNS.items():
        doctor(args.gapbench, args.out / run, env)
    for name in PARTS:
        for run, env in RUNS.items():
            part(args.gapbench, args.out / run, name, env)
    doctor(args.gapbench, args.out / "loaded", {})
    spinners = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(args.busy)]
    try:
        time.sleep(args.warm)
        for name in PARTS:
            part(args.gapbench, args.out / "loaded", name, {})
    finally:
        for s in spinners:  # exactly the processes started here
            s.kill()
            s.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
