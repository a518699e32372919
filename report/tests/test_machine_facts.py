"""machine_facts: the facts that explain a slower run, set against one other machine's as the fleet
sets a run against the rest of its group (the real runs of report/tests/data/fleet)."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

from gapbench_report.core.facts import Facts, Usual, differences, load_average
from gapbench_report.fleet.judge import build_fleet
from gapbench_report.inputs.fleet import node_folders, read_fleet
from gapbench_report.inputs.results import load_results

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


def on(**facts: str) -> Facts:
    """Facts from keyword arguments, dots written as double underscores."""
    values = {k.replace("__", "."): v for k, v in facts.items()}
    return Facts.of(lambda k: values.get(k, ""), None)


PLAIN = dict(cpu__cores="2", cpu__affinity_cpus="2", cpu__affinity_list="0-1",
             cpu__quota_cpus="none", cpu__quota_source="none found", cpu__usable_cpus="2",
             openblas__threads="2", onednn__threads="2")


def test_fewer_cpus_under_a_quota_are_named_first_with_their_direction_and_cause():
    quota = on(**PLAIN | dict(
        cpu__quota_cpus="1", cpu__quota_source="cgroup v1 cpu.cfs_quota_us",
        cpu__quota_setting="cgroup v1 cpu.cfs_quota_us 100000 / cpu.cfs_period_us 100000 in "
                           "/sys/fs/cgroup/cpu/q", cpu__usable_cpus="1"))
    found = differences(quota, Usual.of([on(**PLAIN)]), device="cpu")
    assert keys(found) == ["cpu.usable_cpus"]  # the libraries' threads: the same (2) on both
    (cpus,) = found
    assert cpus.how == "lower" and (cpus.value, cpus.their_value) == ("1", "2")
    assert cpus.contrast("here", "there") == (
        "this process may use 1 CPU here and 2 there (a container quota here)")
    assert cpus.contrast("on a", "on b", evidence=True) == (
        "this process may use 1 CPU on a and 2 on b (a container quota on a: cgroup v1 "
        "cpu.cfs_quota_us 100000 / cpu.cfs_period_us 100000)")
    assert "a container quota: cgroup v1 cpu.cfs_quota_us 100000" in cpus.cited
    # The faster side differs in nothing that makes it slower.
    assert differences(on(**PLAIN), Usual.of([quota])) == []


def test_a_pinned_process_names_its_affinity_before_the_threads_that_follow_from_it():
    pinned = on(**PLAIN | dict(cpu__affinity_cpus="1", cpu__affinity_list="0",
                               cpu__usable_cpus="1", openblas__threads="1",
                               onednn__threads="1"))
    found = differences(pinned, Usual.of([on(**PLAIN)]), device="cpu")
    assert keys(found) == ["cpu.usable_cpus", "openblas.threads", "onednn.threads"]
    assert found[0].contrast("here", "there", evidence=True) == (
        "this process may use 1 CPU here and 2 there (its CPU affinity here: CPU 0, as "
        "taskset -c 0 sets it)")
    assert found[1].contrast("here", "there") == (
        "OpenBLAS used another number of threads (`openblas.threads` 1 here, 2 there)")


def test_files_from_before_the_cpus_were_recorded_differ_in_nothing_new():
    old = on(cpu__cores="2", openblas__threads="2")
    assert differences(old, Usual.of([on(**PLAIN)])) == []
    assert differences(on(**PLAIN), Usual.of([old])) == []


PLANTED = Path(__file__).parent / "data" / "versus" / "this-machine"


def planted(case: str) -> Facts:
    """A planted-cause run's facts, from its results file's context alone (as versus reads them)."""
    return Facts.of_context(load_results(PLANTED / case / "gapbench.json").context)


def test_each_planted_cause_is_the_first_fact_named_against_a_plain_run():
    plain = Usual.of([planted("plain-1")])
    quota = differences(planted("quota-1cpu"), plain, device="cpu")
    assert quota[0].key == "cpu.usable_cpus"
    assert quota[0].contrast("here", "there") == (
        "this process may use 1 CPU here and 2 there (a container quota here)")
    assert quota[0].evidence == "cgroup v1 cpu.cfs_quota_us 100000 / cpu.cfs_period_us 100000"
    # OpenBLAS and oneDNN count the CPUs they see, not the quota: 2 threads on both.
    assert not {"openblas.threads", "onednn.threads"} & set(keys(quota))

    pinned = differences(planted("pinned-1cpu"), plain, device="cpu")
    assert keys(pinned)[:3] == ["cpu.usable_cpus", "openblas.threads", "onednn.threads"]
    assert pinned[0].contrast("here", "there", evidence=True) == (
        "this process may use 1 CPU here and 2 there (its CPU affinity here: CPU 0, as "
        "taskset -c 0 sets it)")

    capped = differences(planted("isa-capped"), plain, device="cpu")
    assert keys(capped)[:3] == ["onednn.isa_cap", "openblas.coretype", "openblas.core"]

    # Back to back, nothing about the CPUs or the libraries differs.
    again = keys(differences(planted("plain-2"), plain, device="cpu"))
    assert not set(again) - {"load_avg"}, again


def test_doctor_names_the_planted_cpu_limits_on_one_machine():
    def findings(case: str) -> dict[str, str]:
        doctor = json.loads((PLANTED / case / "doctor.json").read_text(encoding="utf-8"))
        return {f["id"]: f["text"] for f in doctor["findings"]}
    assert ("This process may use 1 CPU of 2 (a container quota: cgroup v1 cpu.cfs_quota_us "
            "100000 / cpu.cfs_period_us 100000)") in findings("quota-1cpu")["fewer_usable_cpus"]
    assert "OpenBLAS will run 2 threads" in findings("quota-1cpu")["fewer_usable_cpus"]
    assert ("This process may use 1 CPU of 2 (its CPU affinity allows CPU 0 only"
            in findings("pinned-1cpu")["fewer_usable_cpus"])
    for case in ("plain-1", "plain-2", "isa-capped", "loaded"):
        assert "fewer_usable_cpus" not in findings(case)
    # The run's context carries the same finding, for a report that only has the file.
    context = load_results(PLANTED / "quota-1cpu" / "gapbench.json").context
    assert context["finding.fewer_usable_cpus"].startswith("warning: This process may use 1 CPU")


def test_the_planted_runs_ran_one_build_whose_families_each_have_their_own_source():
    contexts = [load_results(PLANTED / case / "gapbench.json").context
                for case in ("plain-1", "plain-2", "pinned-1cpu", "quota-1cpu", "isa-capped",
                             "loaded")]
    sources = [{k: v for k, v in c.items() if k.startswith("gapbench.source.")} for c in contexts]
    assert all(s == sources[0] for s in sources)
    assert {"gapbench.source.conv", "gapbench.source.lstm", "gapbench.source.peak"} <= set(
        sources[0])
    assert len(set(sources[0].values())) == len(sources[0])  # each family its own
