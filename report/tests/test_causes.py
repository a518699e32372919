"""One home per cause (core/causes.py): doctor's rules (C++) and the report's causes agree, and
every stage reads a cause from there rather than a copy."""

from __future__ import annotations

import re
from pathlib import Path

from gapbench_report.core import causes
from gapbench_report.core.causes import BY_CEILING, CAUSES, CPUS, DOCTOR_TITLES
from gapbench_report.diagnose import rules as diagnose
from gapbench_report.versus import ceilings
from gapbench_report.versus import comparison as versus

REPO = Path(__file__).resolve().parents[2]
# A rule's finding: r.found(<id, or a choice of ids>, severity, text); an id is a string literal of
# that first argument that is not compared with (`prefix == "cublas" ? "cublas_mismatch" : ...`).
FOUND = re.compile(r"\br\.found\(([^,;]*),")
ID = re.compile(r'(?<!== )"([a-z0-9_]+)"')


def doctor_rule_ids(source: str) -> list[str]:
    """The ids that gapbench doctor's rules write (`r.found("<id>", Severity::...)`, or a
    choice of ids as its first argument)."""
    return [rule for first in FOUND.findall(source) for rule in ID.findall(first)]


def test_every_doctor_rule_has_a_cause():
    """A rule added to fixtures/doctor_rules.cpp without its cause here would read as its id
    ("Fewer usable cpus"); a cause whose rule is gone is a stale entry."""
    ids = doctor_rule_ids((REPO / "fixtures" / "doctor_rules.cpp").read_text(encoding="utf-8"))
    assert len(ids) >= 15
    assert sorted(set(ids) - set(DOCTOR_TITLES)) == [], "add a Cause to core/causes.py"
    assert sorted(set(DOCTOR_TITLES) - set(ids)) == [], "a cause names a rule doctor lacks"


def test_the_rule_scan_finds_a_rule_without_a_cause():
    planted = ('r.found("fewer_usable_cpus", Severity::warning, t);\n  r.found(\n  "new_rule", '
               'Severity::info, x);\n'
               '  r.found(p == "a" ? "one_id" : "other_id", Severity::info, "");')
    assert doctor_rule_ids(planted) == ["fewer_usable_cpus", "new_rule", "one_id", "other_id"]
    assert "new_rule" not in DOCTOR_TITLES


def test_each_cause_is_one_entry():
    titles = [c.title for c in CAUSES]
    assert len(titles) == len(set(titles))
    ids = [rule for c in CAUSES for rule in c.doctor]
    assert len(ids) == len(set(ids))
    assert len(BY_CEILING) == len([c for c in CAUSES if c.ceiling])


def test_the_stages_read_the_causes():
    assert diagnose.MACHINE_TITLES is DOCTOR_TITLES
    assert set(ceilings.KINDS) == set(BY_CEILING)
    assert ceilings.KINDS["cpus"].words == CPUS.ceiling_words
    assert versus.CPU_FACTS == frozenset(CPUS.facts)
    assert versus.fewer_cpus_why is causes.fewer_cpus_why


def test_the_cpus_cause_reads_its_figure_and_what_set_it():
    quota = {"cpu.cores": "2", "cpu.affinity_cpus": "2", "cpu.quota_cpus": "1",
             "cpu.quota_setting": "cgroup v1 cpu.cfs_quota_us 100000 / cpu.cfs_period_us "
                                  "100000 in /sys/fs/cgroup/cpu"}
    assert causes.usable_cpus(quota) == (1, "the least of (cpu.cores 2, cpu.affinity_cpus 2, "
                                            "cpu.quota_cpus 1)")
    assert causes.fewer_cpus_why(quota) == (
        "a container quota", "cgroup v1 cpu.cfs_quota_us 100000 / cpu.cfs_period_us 100000")
    assert causes.usable_cpus({}) is None
