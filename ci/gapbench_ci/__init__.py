"""gapbench's orchestration: builds trees, runs the gapbench executable, drives git (baseline;
nightly, the command over nightly_gate, nightly_state and nightly_summary; gate_proof; gpu_check;
runner is what they share; `gapbench-ci COMMAND`, or `python -m gapbench_ci`, runs each). It
reads and judges the results through gapbench_report, which never imports this package."""

# First, before the commands' modules import numpy: Ctrl-C while a command starts is one line.
# gapbench_report's __init__ takes it for the CI's commands too (interrupt.command_name).
import gapbench_report  # noqa: F401
