"""`gapbench-report diagnose`: the rules that turn one machine's figures into the classic causes of
a slow GPU."""
