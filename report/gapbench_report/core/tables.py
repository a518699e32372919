"""The tables that gapbench's C++ and this report both need, each written once, as JSON in
gapbench_report/tables/: CMake turns them into a C++ header at configure time
(cmake/gapbench_tables.cmake), and the report reads them here. A C++ side that drifts from one
fails its test (tests/test_onednn_isa.cpp, tests/test_flops.cpp, the configure-time family
check, the fact-key test); report/tests/test_tables.py holds the Python side to them. The bench
workflow reads stability.json's drift limit too."""

from __future__ import annotations

import json
from importlib import resources


def _table(name: str) -> dict:
    return json.loads(resources.files("gapbench_report").joinpath("tables", name)
                      .read_text(encoding="utf-8"))


_PCIE = _table("pcie.json")["generations"]
# A PCIe lane's usable bandwidth per direction by generation, GB/s (after its line code).
PCIE_LANE_GBPS = {g["generation"]: g["gigatransfers_per_lane"] * g["payload"] / g["line"] / 8
                  for g in _PCIE}

_ISA = _table("isa.json")
# oneDNN's instruction sets from worst to best (onednn.isa's values).
ONEDNN_ISA_ORDER = tuple(_ISA["onednn"])
# gapbench's own FLOP-peak loops (peak/flops rows' `isa` axis) and their words.
FLOP_LOOP_WORDS = {loop["name"]: loop["words"] for loop in _ISA["flop_loops"]}

_FAMILIES = _table("families.json")
# The families in the order a reader meets the causes.
FAMILY_ORDER = tuple(_FAMILIES["families"])

# Every fact key gapbench records in a results file's context ("{n}" stands for a number), and
# its unit where it has one.
FACT_UNITS = {fact["key"]: fact["unit"] for fact in _table("facts.json")["facts"]}

_METHODS = _table("methods.json")
# Why each key's method changed (family, or family/variant/device), oldest first: its version is
# 1 + the number of its reasons (cmake/gapbench_methods.cmake records them in every run).
METHOD_CHANGES = {key: list(why) for family in _METHODS["families"].values()
                  for key, why in family["changes"].items()}
# Each key's version at the commits files were made at before runs recorded them (a key not
# listed was at 1).
METHODS_AT_COMMIT = {commit: dict(table) for commit, table in _METHODS["at_commit"].items()}

# How far a family run's SGEMM probe may move between its start and its end (a fraction, either
# way) before the machine changed speed during the run; the bench workflow reruns past it.
SGEMM_DRIFT_LIMIT = float(_table("stability.json")["sgemm_drift_limit"])
