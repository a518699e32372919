"""`gapbench-report explain`: the classic causes in a user's own profiler trace, each fix priced."""
