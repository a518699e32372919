"""Smoke runs of ci/baseline, ci/nightly and compare on the real gapbench executable (ctest's
smoke.ci_baseline, smoke.ci_nightly, smoke.ci_compare): one small filter, few repetitions, every
file checked.

    python smoke_ci.py baseline|nightly|compare GAPBENCH OUT_DIR

The machine may be busy: a baseline refused for its spread (exit 1, nothing written) and a
nightly regression on identical executables (rare: it takes a flag twice) are outcomes of the
tool working; anything else fails the test.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FILTER = "^preprocess/vectorized/cpu/op:sumsq/"


def run(command: list[str]) -> int:
    print("+", " ".join(command), flush=True)
    return subprocess.run(command, check=False).returncode


def baseline(exe: str, out: Path) -> int:
    code = run([str(ROOT / "ci" / "baseline"), "smoke", "--binary", exe, "--filter", FILTER,
                "--repetitions", "5", "--min-time", "0.01", "--out-dir", str(out)])
    if code == 1:
        assert not (out / "smoke.json").exists(), "a refused baseline must write nothing"
        print("refused (the machine is busy): nothing written, as it should be")
        return 0
    assert code == 0, f"ci/baseline exited {code}"
    data = json.loads((out / "smoke.json").read_text())
    prov = data["provenance"]
    assert prov["profile"] == "full" and prov["repetitions"] == 5 and prov["random_interleaving"]
    assert prov["machine"]["machine.id"] == data["context"]["machine.id"]
    assert all(e["name"].startswith("preprocess/vectorized/cpu/op:sumsq/")
               for e in data["benchmarks"])
    assert "[`smoke`](smoke.json)" in (out / "README.md").read_text()
    return 0


def nightly(exe: str, out: Path) -> int:
    code = run([str(ROOT / "ci" / "nightly"), "--baseline-bin", exe, "--contender-bin", exe,
                "--profile", "full", "--filter", FILTER + "rows:10000/", "--rounds", "3",
                "--repetitions", "3", "--min-time", "0.01", "--out", str(out / "last"),
                "--state-dir", str(out / "state")])
    assert code in (0, 1), f"ci/nightly exited {code}"
    for name in ("summary.md", "comparison.json", "baseline.json", "contender.json",
                 "report/index.html", "trend/index.html"):
        assert (out / "last" / name).exists(), name
    assert len(list((out / "state" / "history").glob("*.json"))) == 1
    summary = (out / "last" / "summary.md").read_text()
    assert summary.startswith("# gapbench nightly: ")
    return 0


def compare(exe: str, out: Path) -> int:
    """Two runs of one build, one process each, on this machine: whatever their repetitions say
    (processes differ by 5-11% here), compare must give no regression verdict: a change seen
    within one process per side is PROVISIONAL."""
    for side in ("a", "b"):
        assert run([exe, "--benchmark_filter=^(preprocess/vectorized/cpu|transfer/memcpy/cpu)/",
                    "--benchmark_repetitions=5", "--benchmark_min_time=0.02",
                    f"--benchmark_out={out / side}.json"]) == 0
    done = subprocess.run([sys.executable, "-m", "gapbench_report", "compare", str(out / "a.json"),
                           str(out / "b.json"), "--json"], capture_output=True, text=True,
                          check=False)
    print(done.stderr, end="")
    assert done.returncode == 0, f"compare exited {done.returncode}: {done.stdout[-2000:]}"
    data = json.loads(done.stdout)
    assert not data["regression"] and data["counts"]["SLOWER"] == 0
    changed = [r for r in data["rows"] if r["status"] == "PROVISIONAL"]
    print(f"{len(changed)} of {len(data['rows'])} benchmarks moved within one process per side "
          "(PROVISIONAL, not a verdict)")
    return 0


def main() -> int:
    what, exe, out = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    return {"baseline": baseline, "nightly": nightly, "compare": compare}[what](exe, out)


if __name__ == "__main__":
    sys.exit(main())
