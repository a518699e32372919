"""The CI package's tests (ctest's ci.pytest; by hand: cd ci && ../.venv/bin/python -m pytest).

They reuse the report's test helpers rather than copy them: this package's path goes on to
report/tests, so `tests.synthetic` (results made in memory) and `tests.fakes` (a fake gapbench
executable) are report/tests' own modules. Both suites are therefore the package `tests`: each
runs in a pytest process of its own (ctest's report.pytest and ci.pytest).
"""

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# What a child process needs to import this checkout's two packages, not an installed copy.
PYTHONPATH = os.pathsep.join([str(REPO / "ci"), str(REPO / "report")])

__path__.append(str(REPO / "report" / "tests"))
