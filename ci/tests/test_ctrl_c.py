"""Ctrl-C at any moment of a command's start, for real: every Python command of gapbench_report,
gapbench_ci (and ci/'s bash wrappers that start them) and gapbench_probe ends with one line,
"<command>: interrupted", and exit status 130, never a traceback (it printed 20 to 50 lines while
numpy and matplotlib were imported, the first 0.3 s and more on a loaded machine).

Each command runs with `python -X importtime`, whose lines on stderr say when the package's own
first code has run; SIGINT is sent at several moments from then on, through the imports and into
the command's work. Before that moment the interpreter runs only Python's start and site's
.pth files (docs/faults.md says what that leaves)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import PYTHONPATH, REPO
from tests.fakes import make_fake

MOMENTS = (0.0, 0.05, 0.15, 0.3, 0.6)  # seconds after the package's first code ran
PACKAGE_READY = re.compile(r"\|\s+(gapbench_report|gapbench_ci|gapbench_probe)\s*$")


def commands(tmp: Path) -> dict[str, tuple[list[str], set[str]]]:
    """name: (argv, the names its line may give: the dispatcher's while it starts, the
    command's once its work began); each runs far longer than the last moment."""
    hangs = make_fake(tmp / "bin", "gapbench", hang=".")  # its run takes an hour
    doctor_hangs = tmp / "bin" / "doctor-hangs"
    doctor_hangs.write_text("#!/bin/sh\nexec sleep 30\n")
    doctor_hangs.chmod(0o755)
    python = [sys.executable, "-X", "importtime"]
    baseline = ["t", "--binary", str(hangs), "--filter", ".", "--out-dir", str(tmp / "out")]
    renders = [str(p) for p in sorted((REPO / "report" / "tests" / "data" / "versus").glob(
        "*/*.json"))]
    return {
        "ci/baseline": ([str(REPO / "ci" / "report-python"), "-X", "importtime", "-m",
                         "gapbench_ci.baseline", *baseline], {"ci/baseline"}),
        "gapbench-ci": ([*python, "-m", "gapbench_ci", "baseline", *baseline],
                        {"gapbench-ci", "ci/baseline"}),
        "gapbench-report": ([*python, "-m", "gapbench_report", "render", *renders, "--out",
                             str(tmp / "page")], {"gapbench-report", "gapbench-report render"}),
        "gapbench-probe": ([*python, "-m", "gapbench_probe", "--gapbench", str(doctor_hangs),
                            "--out", str(tmp / "probe")], {"gapbench-probe"}),
    }


def interrupt_at(argv: list[str], moment: float) -> tuple[int, list[str]]:
    """Starts argv, waits until its package's first code ran, then `moment` s, sends SIGINT;
    its exit status and its stderr without importtime's lines."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([PYTHONPATH, str(REPO / "probe")])}
    process = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True, start_new_session=True)
    try:
        lines = []
        for line in process.stderr:
            lines.append(line)
            if PACKAGE_READY.search(line):
                break
        else:
            pytest.fail("the command ended before its package was imported: " + "".join(lines))
        time.sleep(moment)
        process.send_signal(signal.SIGINT)
        rest = process.stderr.read()
        status = process.wait(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    said = [x for x in ("".join(lines) + rest).splitlines() if not x.startswith("import time:")]
    return status, said


@pytest.mark.parametrize("name", ["ci/baseline", "gapbench-ci", "gapbench-report",
                                  "gapbench-probe"])
def test_ctrl_c_at_any_moment_is_one_line_and_130(tmp_path, name):
    argv, names = commands(tmp_path)[name]
    seen = []
    for moment in MOMENTS:
        status, said = interrupt_at(argv, moment)
        seen.append((moment, status, said))
        assert not any("Traceback" in x for x in said), (moment, said)
    # Its last word is the one line; a command already at work may have said what it runs.
    lines = [f"{n}: interrupted" for n in names]
    assert all(status == 130 and said and said[-1] in lines for _, status, said in seen), seen
