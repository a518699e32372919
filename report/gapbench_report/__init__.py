"""gapbench's report: reads the JSON that the gapbench executable writes (never links its code)."""
