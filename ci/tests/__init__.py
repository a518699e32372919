"""The CI package's tests (ctest's ci.pytest; by hand: cd ci && ../.venv/bin/python -m pytest).

This package's path goes on to report/tests: `tests.synthetic` and `tests.fakes` are the
report's helpers, shared (docs/contributing.md, "The layers": why the two suites never share a
process).
"""

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# What a child process needs to import this checkout's two packages, not an installed copy.
PYTHONPATH = os.pathsep.join([str(REPO / "ci"), str(REPO / "report")])

__path__.append(str(REPO / "report" / "tests"))
