"""The input layer: every file the report reads (results, probe, peak, trace and fleet files), read
bounded and checked once."""
