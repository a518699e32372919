"""The tables C++ and the report both need are written once, in gapbench_report/tables/ (the C++
side is held to them by its own tests and by CMake): the report reads them, never a copy, and
names no fact that gapbench does not record."""

from __future__ import annotations

import re

import pytest

from gapbench_report.core import catalogue, metrics, tables
from gapbench_report.core.facts import EXPLAINING, WHY_FEWER_CPUS
from gapbench_report.inputs.results import PLAUSIBLE
from gapbench_report.versus import ceilings
from gapbench_report.versus import comparison as versus

# Keys the report reads that are not gapbench's facts: Google Benchmark's own context, the run
# context's load average, and the framework probe's.
NOT_GAPBENCH = re.compile(r"^(num_cpus|mhz_per_cpu|load_avg|library_build_type|framework\.)")


def recorded(key: str, known: dict) -> bool:
    """`key` is a fact gapbench records: listed, or matching a listed pattern ("{n}")."""
    if key in known:
        return True
    return any(re.fullmatch(re.sub(r"\\\{[a-z]+\\\}", r"[^.]+", re.escape(k)), key)
               for k in known if "{" in k)


def test_the_report_reads_the_tables():
    assert ceilings.PCIE_LANE_GBPS is tables.PCIE_LANE_GBPS
    assert versus.ISA_ORDER is tables.ONEDNN_ISA_ORDER
    assert metrics.CPU_ISA_WORDS is tables.FLOP_LOOP_WORDS
    assert catalogue.FAMILY_ORDER is tables.FAMILY_ORDER


def test_the_pcie_table_counts_each_line_code():
    assert tables.PCIE_LANE_GBPS[3] == pytest.approx(8 * 128 / 130 / 8)
    assert tables.PCIE_LANE_GBPS[5] == pytest.approx(3.938, abs=5e-4)
    assert tables.PCIE_LANE_GBPS[6] == pytest.approx(7.5625)
    assert sorted(tables.PCIE_LANE_GBPS) == list(range(1, 8))


def test_every_fact_the_report_names_is_one_gapbench_records():
    """A fact key in the report's tables (its plausible ranges, the facts that explain) that no
    C++ code records is a drifted copy: its rule could never fire."""
    known = tables.FACT_UNITS
    assert len(known) > 60
    named = {*PLAUSIBLE, *(key for key, *_ in EXPLAINING), *WHY_FEWER_CPUS,
             *versus.CPU_FACTS, *versus.DIRECTED}
    missing = sorted(k for k in named if not NOT_GAPBENCH.match(k) and not recorded(k, known))
    assert missing == [], "gapbench records none of these (tables/facts.json)"


def test_the_fact_check_finds_a_key_gapbench_does_not_record():
    known = {"cpu.cores": None, "gpu.{n}.name": None}
    assert recorded("gpu.0.name", known) and recorded("cpu.cores", known)
    assert not recorded("cpu.coresx", known) and not recorded("gpu.0.nam", known)
