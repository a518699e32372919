"""`gapbench-report fleet`: which node of a fleet is slow, and why."""
