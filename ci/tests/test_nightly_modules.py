"""The nightly's modules depend one way: the command (nightly) on its parts; the state and the
summary on the gate; the gate on neither, and no part on the command."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests import PYTHONPATH

# What importing each part may load of gapbench_ci, itself included.
TOOLS = {"gapbench_ci.runner", "gapbench_ci.tools", "gapbench_ci.processes"}
MAY_LOAD = {
    "gapbench_ci.nightly_gate": TOOLS,
    "gapbench_ci.nightly_state": {*TOOLS, "gapbench_ci.nightly_gate"},
    "gapbench_ci.nightly_summary": {*TOOLS, "gapbench_ci.nightly_gate"},
}
LOADED = "import sys, {0}; print(*sorted(m for m in sys.modules if m.startswith('gapbench_ci.')))"


@pytest.mark.parametrize("module", MAY_LOAD)
def test_no_part_of_the_nightly_imports_the_command(module):
    # A fresh interpreter: this one has imported every module already.
    done = subprocess.run([sys.executable, "-c", LOADED.format(module)],
                          env={**os.environ, "PYTHONPATH": PYTHONPATH}, capture_output=True,
                          text=True, timeout=120, check=True)
    loaded = set(done.stdout.split())
    assert module in loaded  # the probe sees what it imported
    assert loaded - {module} - MAY_LOAD[module] == set()
