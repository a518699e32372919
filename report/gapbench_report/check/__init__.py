"""`gapbench-report check`: a smoke check of one family's results file."""
