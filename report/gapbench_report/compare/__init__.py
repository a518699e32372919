"""`gapbench-report compare`: two runs of one machine, a Mann-Whitney U test per benchmark."""
