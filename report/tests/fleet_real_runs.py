"""Makes the real runs that test_fleet.py judges: several runs of this machine, two made slower
for real, each as a node folder of a fleet (doctor.json, results.json, gapbench.log).

    .venv/bin/python report/tests/fleet_real_runs.py GAPBENCH OUT [--filter RE] [--busy N]

- normal-1, normal-2, normal-3: plain runs;
- sse41: oneDNN and OpenBLAS capped to SSE4.1 (DNNL_MAX_CPU_ISA=SSE41, OPENBLAS_CORETYPE=
  Nehalem), a real slower CPU path; doctor records the cap (onednn.isa_cap);
- loaded: while --busy processes spin on the cores (started --warm seconds before, so that the
  1-minute load average in the run context has risen).

They run interleaved (normal, sse41, normal, loaded, normal), so a change in the machine's own
load falls on every kind. The committed copy is report/tests/data/fleet/this-machine/; the
command that made it is in its README.md. Not collected by pytest.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

FILTER = r"^(conv|overhead)/[^/]+/cpu/|^peak/"
CAPPED = {"DNNL_MAX_CPU_ISA": "SSE41", "OPENBLAS_CORETYPE": "Nehalem"}
SPIN = "while True: pass"


def run(gapbench: Path, folder: Path, filter_: str, env: dict[str, str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    environment = {**{k: v for k, v in os.environ.items() if k not in CAPPED}, **env}
    with open(folder / "doctor.json", "w", encoding="utf-8") as doctor:
        subprocess.run([str(gapbench), "doctor", "--json"], stdout=doctor, env=environment,
                       check=True)
    with open(folder / "gapbench.log", "w", encoding="utf-8") as log:
        subprocess.run([str(gapbench), "--profile=quick", f"--benchmark_filter={filter_}",
                        f"--benchmark_out={folder / 'results.json'}"], stdout=log,
                       stderr=subprocess.STDOUT, env=environment, check=True)
    print(f"{folder.name}: done (load average now {os.getloadavg()[0]:.2f})", flush=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("gapbench", type=Path)
    p.add_argument("out", type=Path)
    p.add_argument("--filter", default=FILTER)
    p.add_argument("--busy", type=int, default=4 * (os.cpu_count() or 1),
                   help="spinning processes during the loaded run (default 4 per core)")
    p.add_argument("--warm", type=float, default=75.0,
                   help="seconds the spinning runs before the loaded run starts")
    args = p.parse_args(argv)
    plain: dict[str, str] = {}  # the caps unset, whatever the caller's shell had
    run(args.gapbench, args.out / "normal-1", args.filter, plain)
    run(args.gapbench, args.out / "sse41", args.filter, CAPPED)
    run(args.gapbench, args.out / "normal-2", args.filter, plain)
    spinners = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(args.busy)]
    try:
        time.sleep(args.warm)
        run(args.gapbench, args.out / "loaded", args.filter, plain)
    finally:
        for s in spinners:  # exactly the processes started here
            s.kill()
            s.wait()
    run(args.gapbench, args.out / "normal-3", args.filter, plain)
    return 0


if __name__ == "__main__":
    sys.exit(main())
