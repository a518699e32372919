"""Real bench workflow runs of a shared 2-vCPU VM, each beside one planted kind of other work
(data/shared-vm/README.md says how each was made): the report names the noise for what it is,
first, and never as a defect of gapbench's or of a library; two runs of one machine are never
told apart by a ceiling that moved."""

from __future__ import annotations

from pathlib import Path

import pytest

from gapbench_report.diagnose.rules import diagnose, verdict
from gapbench_report.inputs.results import Results, load_results
from gapbench_report.versus import comparison as versus

SHARED_VM = Path(__file__).parent / "data" / "shared-vm"
PLANTED = ("busy1", "membw1", "nice15", "pinned")
# Each case was run twice, back to back: "dev" runs were read while the rules were written,
# "holdout" runs only once they were done, to score them.
RUNS = ("dev", "holdout")


def files(case: str, run: str) -> list[Results]:
    return [load_results(p) for p in sorted((SHARED_VM / f"{case}-{run}").glob("*.json"))]


def side(case: str, run: str) -> versus.Side:
    return versus.Side.of(f"{case}-{run}", files(case, run))


def findings(case: str, run: str) -> tuple[dict, str]:
    found = diagnose(files(case, run))
    return {f.rule: f for f in found}, verdict(found)


@pytest.mark.parametrize("run", RUNS)
@pytest.mark.parametrize("case", ("plain", *PLANTED))
def test_no_run_beside_other_work_raises_a_gapbench_defect(case, run):
    found, said = findings(case, run)
    assert not [f.title for f in found.values() if f.defect]
    assert "defect in gapbench" not in said


@pytest.mark.parametrize("run", RUNS)
@pytest.mark.parametrize("case", ("busy1", "membw1", "nice15"))
def test_other_work_beside_the_run_is_named_first(case, run):
    found, said = findings(case, run)
    assert said.startswith("Other work used these CPUs during the run: ")
    assert found["other_work"].text.startswith("Other work used these CPUs during the run: ")
    # Each of these took about one CPU from each family's run.
    assert " CPUs during " in found["other_work"].text or " of a CPU during " in \
        found["other_work"].text


@pytest.mark.parametrize("run", RUNS)
def test_a_job_pinned_to_one_cpu_is_named_by_its_threads_that_take_turns(run):
    found, said = findings("pinned", run)
    fight = next(f for f in found.values() if f.rule == "threads_fight")
    assert "with 2 threads as with 1" in said.split(";")[0]
    assert "this job may use 1 of the 2 CPUs (its CPU affinity), and its 2 threads take turns" \
        in fight.text
    assert any(f.text.startswith("This process may use 1 CPU of 2 (its CPU affinity")
               for f in found.values())  # doctor's finding, quoted
    assert "parallel_capacity" not in found  # the affinity says it, not the CPUs


@pytest.mark.parametrize("run", RUNS)
def test_a_quiet_run_names_no_other_work(run):
    found, said = findings("plain", run)
    assert "other_work" not in found
    assert not said.startswith("Other work")


@pytest.mark.parametrize("case", PLANTED)
def test_each_planted_run_against_the_plain_one_names_the_cpus_shared_first(case):
    c = versus.compare(side(case, "dev"), side("plain", "dev"))
    lead, items = versus.verdict_lines(c)[0]
    assert lead.startswith("Slower here than on plain-dev in ")
    first = items[0]
    if case == "pinned":
        assert first.startswith("this process may use 1 CPU here and 2 there")
    else:
        assert first.startswith("other work used these CPUs during the run")


@pytest.mark.parametrize("case", ("plain", "nice15"))
def test_two_runs_back_to_back_credit_no_difference_to_a_ceiling(case):
    c = versus.compare(side(case, "holdout"), side(case, "dev"))
    assert c.one_machine
    for w in c.differing:
        assert not w.explanation.explained, versus.reading(w, "holdout", "dev")
        assert versus.cause(w, c)[0] != "ceiling"


def test_two_quiet_runs_that_differ_cite_the_cpus_capacity_that_moved():
    """plain-holdout against plain-dev, a minute apart on the quiet VM: 12 of 51 works differ
    beyond their spread (the threaded small ops' mode, the pipeline, a memcpy); the machine's
    unsteadiness is their cause, with the FMA probes' capacity that moved (1.3-2.1x)."""
    c = versus.compare(side("plain", "holdout"), side("plain", "dev"))
    line = versus.verdict(c)
    assert "the machine itself was unsteady (" in line
    assert "the CPUs' parallel capacity 1.3–2.1x one thread's" in line
    assert "unexplained" not in line
