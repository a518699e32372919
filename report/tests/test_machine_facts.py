"""machine_facts: the facts that explain a slower run, set against one other machine's as the fleet
sets a run against the rest of its group (the real runs of report/tests/data/fleet)."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

from gapbench_report.fleet_files import node_folders, read_fleet
from gapbench_report.fleet_judge import build_fleet
from gapbench_report.machine_facts import Facts, Usual, differences, load_average
from gapbench_report.results import load_results

RUNS = Path(__file__).parent / "data" / "fleet" / "this-machine"


def facts(run: str) -> Facts:
    """One run's facts as two machines' results give them: a results file's context, with its
    doctor.json beside it."""
    context = load_results(RUNS / run / "peak.json").context
    doctor = json.loads((RUNS / run / "doctor.json").read_text(encoding="utf-8"))["facts"]
    return Facts.of_context(context, doctor)


def keys(found) -> list[str]:
    return [d.key for d in found]


def test_two_machines_differ_in_the_caps_one_of_them_ran_with():
    normal, capped = facts("normal-1"), facts("sse41")
    found = differences(capped, Usual.of([normal]))
    assert keys(found) == ["onednn.isa_cap", "openblas.coretype", "openblas.core", "onednn.isa"]
    assert (found[0].value, found[0].others) == ("SSE41", "")
    assert "`onednn.isa_cap` SSE41; the others: not set" in found[0].cited
    # The other way round, the same facts, each side's value swapped.
    back = differences(normal, Usual.of([capped]))
    assert [(d.key, d.value, d.others) for d in back] == [
        (d.key, d.others, d.value) for d in found]


def test_a_loaded_machine_differs_in_its_load_only():
    normal, loaded = facts("normal-1"), facts("loaded")
    assert loaded.load > 20 > 11 > normal.load  # the run context's 1-minute load average
    (found,) = differences(loaded, Usual.of([normal]), device="cpu")
    assert found.key == "load_avg" and found.value == f"{loaded.load:.2f}"
    assert "the run context's 1-minute load average" in found.cited


def test_a_machine_against_itself_differs_in_nothing():
    for run in ("normal-1", "sse41", "loaded"):
        assert differences(facts(run), Usual.of([facts(run)])) == []


def test_a_device_puts_its_facts_first():
    mine = {"gpu.ecc": "on", "cpu.governor": "powersave"}
    theirs = {"gpu.ecc": "off", "cpu.governor": "performance"}
    mine_facts, their_facts = (Facts.of(lambda k, f=f: f.get(k, ""), None) for f in (mine, theirs))
    assert keys(differences(mine_facts, Usual.of([their_facts]))) == ["cpu.governor", "gpu.ecc"]
    assert keys(differences(mine_facts, Usual.of([their_facts]), device="gpu")) == [
        "gpu.ecc", "cpu.governor"]


def test_the_fleet_sets_a_run_against_the_rest_of_its_group(tmp_path):
    """The fleet leaves a run's own values out of its group's counts (Usual.without): sse41 among
    the plain and the loaded runs is capped against theirs, as against one plain run."""
    names = ["normal-1", "normal-2", "normal-3", "normal-4", "loaded", "sse41"]
    runs = [facts(r) for r in names]
    group = Usual.of(runs)
    assert group.counts["onednn.isa_cap"] == Counter({"": 5, "SSE41": 1})
    assert group.without(runs[-1]).counts["onednn.isa_cap"] == Counter({"": 5, "SSE41": 0})
    mine = differences(runs[-1], group.without(runs[-1]), device="cpu")
    assert keys(mine) == keys(differences(runs[-1], Usual.of([runs[0]])))
    shutil.copytree(RUNS, tmp_path / "fleet")  # the report leaves its digests beside the files
    judged = build_fleet(tmp_path / "fleet", read_fleet(node_folders(tmp_path / "fleet")))
    (sse41,) = [o for o in judged.outliers if o.node.label == "sse41"]
    assert keys(sse41.differences) == keys(mine)


def test_the_load_average_is_the_first_finite_number():
    assert load_average({"load_avg": [1.5, 2, 3]}) == 1.5
    for odd in ([], [True], ["1.5"], [float("nan")], "1.5", None):
        assert load_average({"load_avg": odd}) is None
    assert load_average({}) is None
