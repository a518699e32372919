"""`gapbench-report trend`: the nightly medians, night by night."""
