"""`gapbench-report render`: one run (and its baselines) as charts, a diagnosis, summary.md and
index.html."""
