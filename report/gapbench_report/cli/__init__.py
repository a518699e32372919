"""The command line: `gapbench-report COMMAND`, and what every command shares."""
