"""Tests of compare: every status and rule on tiny results files written by a fixture (numeric
data) or kept under tests/data/compare (bad input)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from gapbench_report.compare import command as cmp
from gapbench_report.inputs.results import load_results

DATA = Path(__file__).parent / "data" / "compare"
NAME = "preprocess/vectorized/cpu/op:sumsq/rows:1000/cols:100/real_time"
GPU = "preprocess/vectorized/gpu/op:sumsq/rows:1000/cols:100/manual_time"
OTHER = "transfer/pinned/gpu/dir:h2d/bytes:4096/manual_time"
# Ten repetitions around 100 ns with a little noise; *1.10 and *0.90 separate completely.
BASE = [100.0, 100.3, 99.8, 100.1, 99.9, 100.2, 100.4, 99.7, 100.05, 99.95]
SCALE = {"ns": 1.0, "us": 1e-3, "ms": 1e-6, "s": 1e-9}


def scaled(times, factor):
    return [t * factor for t in times]


def _iteration(name, i, n, time, unit, process):
    return {"name": name, "family_index": 0, "per_family_instance_index": 0, "run_name": name,
            "run_type": "iteration", "repetitions": n, "repetition_index": i, "threads": 1,
            "iterations": 1000, "real_time": time, "cpu_time": time, "time_unit": unit,
            "bytes_per_second": 8e5 / time, "gapbench_process": process}


def _aggregates(name, times, unit):
    ordered = sorted(times)
    mid = len(ordered) // 2
    median = ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
    mean = sum(times) / len(times)
    stddev = (sum((t - mean) ** 2 for t in times) / (len(times) - 1)) ** 0.5
    values = {"mean": mean, "median": median, "stddev": stddev, "cv": stddev / mean}
    return [{"name": f"{name}_{kind}", "run_name": name, "run_type": "aggregate",
             "repetitions": len(times), "threads": 1, "aggregate_name": kind,
             "iterations": len(times), "real_time": v, "cpu_time": v, "time_unit": unit}
            for kind, v in values.items()]


def entries(name, spec, unit):
    """Google Benchmark 1.7 entries for one benchmark. spec: a list of times (in `unit`) or a
    dict with times, unit, error (a message for every repetition), aggregates (False: none),
    aggregates_only, one_process (True: every repetition from one run of gapbench; by default
    each comes from its own, as in the nightly's pooled files)."""
    if not isinstance(spec, dict):
        spec = {"times": spec}
    unit = spec.get("unit", unit)
    times = [t * SCALE[unit] for t in spec.get("times", [1.0])]  # given in ns
    if spec.get("aggregates_only"):
        return _aggregates(name, times, unit)
    one = spec.get("one_process", False)
    rows = [_iteration(name, i, len(times), t, unit, 0 if one else i)
            for i, t in enumerate(times)]
    if "error" in spec:
        for row in rows:
            row.update(error_occurred=True, error_message=spec["error"], real_time=0,
                       iterations=0)
        return rows
    with_aggregates = spec.get("aggregates", True) and len(times) > 1
    return rows + (_aggregates(name, times, unit) if with_aggregates else [])


def write_results(path, benchmarks, machine="machine-a", unit="ns", profile="full"):
    context = {"gapbench.schema": "1", "gapbench.version": "0.1.0", "gapbench.profile": profile,
               "gapbench.seed": "42", "machine.id": machine, "gpu.status": "ok",
               "date": "2026-01-01T00:00:00+00:00", "library_build_type": "release"}
    rows = [e for name, spec in benchmarks.items() for e in entries(name, spec, unit)]
    path.write_text(json.dumps({"context": context, "benchmarks": rows}, indent=1))
    return path


@pytest.fixture
def make(tmp_path):
    """make(filename, {name: times-or-spec}, machine=..., unit=...) -> path in tmp_path."""
    def _make(filename, benchmarks, **kw):
        return write_results(tmp_path / filename, benchmarks, **kw)
    return _make


@pytest.fixture
def run(make):
    """run(baseline_benchmarks, contender_benchmarks, **compare_kw) -> Comparison."""
    def _run(base, cont, base_kw=None, cont_kw=None, **kw):
        b = load_results(make("base.json", base, **(base_kw or {})))
        c = load_results(make("cont.json", cont, **(cont_kw or {})))
        return cmp.compare(b, c, **kw)
    return _run


def row(comparison, name=NAME):
    found = [r for r in comparison.rows if r.name == name]
    assert len(found) == 1, [r.name for r in comparison.rows]
    return found[0]


# --- statistics ------------------------------------------------------------------------------

def test_min_p_and_repetitions_needed():
    assert cmp.min_p_value(3, 3) == pytest.approx(1 / 20)
    assert cmp.min_p_value(5, 5) == pytest.approx(1 / 252)
    assert cmp.repetitions_needed(0.01) == 5  # 1/C(8,4) = 0.014 is not enough, 1/C(10,5) is
    assert cmp.repetitions_needed(0.05) == 4  # 1/C(6,3) = 0.05 is not < 0.05


def test_batch_matches_single_scipy_calls():
    from scipy.stats import mannwhitneyu
    pairs = [(BASE, scaled(BASE, 1.1)), (BASE[:5], scaled(BASE, 0.99)), ([1.0, 1.0, 2.0],
                                                                         [1.0, 2.0, 3.0])]
    for (b, c), (slower, faster) in zip(pairs, cmp.mann_whitney_batch(pairs)):
        method = "exact" if len(set(b + c)) == len(b + c) else "auto"
        assert slower == pytest.approx(
            mannwhitneyu(c, b, alternative="greater", method=method).pvalue)
        assert faster == pytest.approx(
            mannwhitneyu(c, b, alternative="less", method=method).pvalue)


# --- statuses, same machine -------------------------------------------------------------------

def test_identical_data_is_same(run):
    c = run({NAME: BASE}, {NAME: BASE})
    r = row(c)
    assert r.status == cmp.SAME
    assert r.change == 0
    assert r.p_value > 0.4
    assert (r.baseline_n, r.contender_n) == (10, 10)
    assert r.baseline_median == pytest.approx(100.025e-9)
    assert not cmp.has_regression(c)


def test_ten_percent_slower_with_clear_separation(run):
    c = run({NAME: BASE}, {NAME: scaled(BASE, 1.10)})
    r = row(c)
    assert r.status == cmp.SLOWER
    assert r.change == pytest.approx(0.10)
    assert r.p_value == pytest.approx(cmp.min_p_value(10, 10))  # exact test, full separation
    assert cmp.has_regression(c)


def test_significant_but_under_threshold_is_same(run):
    c = run({NAME: BASE}, {NAME: scaled(BASE, 1.02)})
    r = row(c)
    assert r.p_value < 0.01 and r.change == pytest.approx(0.02)  # the premise
    assert r.status == cmp.SAME
    assert "threshold" in r.note
    # ... and the same data is SLOWER once the threshold is lowered below the change.
    assert row(run({NAME: BASE}, {NAME: scaled(BASE, 1.02)}, threshold=0.01)).status == \
        cmp.SLOWER


def test_large_change_without_significance_is_same(run):
    noisy = [100.0 + 10 * k for k in range(10)]
    c = run({NAME: noisy}, {NAME: scaled(noisy, 1.10)})
    r = row(c)
    assert r.change >= 0.05 and r.p_value >= 0.01  # the premise: big but overlapping
    assert r.status == cmp.SAME
    assert "not significant" in r.note
    assert row(run({NAME: noisy}, {NAME: scaled(noisy, 1.10)}, alpha=0.5)).status == cmp.SLOWER


def test_faster(run):
    c = run({NAME: BASE}, {NAME: scaled(BASE, 0.90)})
    r = row(c)
    assert r.status == cmp.FASTER
    assert r.change == pytest.approx(-0.10)
    assert r.p_value < 0.01
    assert not cmp.has_regression(c)


def test_threshold_is_inclusive(run):
    base = [99.5 + 0.1 * k for k in range(11)]  # median 100 ns
    c = run({NAME: base}, {NAME: [t + 5 for t in base]})  # median 105 ns: exactly 5% slower
    r = row(c)
    raw = (r.contender_median - r.baseline_median) / r.baseline_median
    assert raw < 0.05  # the premise: float arithmetic lands just under 5%
    assert r.status == cmp.SLOWER


def test_missing_and_new(run):
    c = run({NAME: BASE, OTHER: BASE}, {NAME: BASE, GPU: BASE})
    assert row(c, OTHER).status == cmp.MISSING
    assert row(c, GPU).status == cmp.NEW
    assert row(c, OTHER).contender_median is None and row(c, OTHER).baseline_median is not None
    assert row(c, GPU).baseline_median is None and row(c, GPU).contender_median is not None
    # Sorted by name: a run's file order follows Google Benchmark's random interleaving.
    assert [r.name for r in c.rows] == sorted([NAME, OTHER, GPU])
    assert not cmp.has_regression(c)


def test_new_and_missing_say_when_that_side_failed_or_skipped(run):
    c = run({OTHER: {"times": BASE, "error": "skipped: no CUDA device"}},
            {GPU: {"times": BASE, "error": "kernel error"}})
    assert row(c, OTHER).status == cmp.MISSING
    assert row(c, OTHER).note == "only in baseline; skipped there: no CUDA device"
    assert row(c, GPU).status == cmp.NEW
    assert row(c, GPU).note == "only in contender; failed there: kernel error"


FAILED = {"times": BASE, "error": "validation failed: 3 elements off"}


def test_contender_failed_is_error_and_a_regression(run):
    c = run({NAME: BASE}, {NAME: FAILED})
    r = row(c)
    assert r.status == cmp.ERROR and r.new_failure
    assert "contender failed: validation failed" in r.note
    assert r.contender_n == 0  # errored repetitions are never times
    # As the nightly counts it: fails in this build, ran in the reference.
    assert c.new_failures == [NAME]
    assert cmp.has_regression(c)
    assert cmp.format_text(c).splitlines()[-1] == \
        "verdict: REGRESSION: 1 benchmark failed in the contender but not in the baseline"


def test_baseline_failed_is_error_too(run):
    c = run({NAME: {"times": BASE, "error": "cuda error"}}, {NAME: BASE})
    r = row(c)
    assert r.status == cmp.ERROR
    assert r.note.startswith("baseline failed")
    assert not r.new_failure and not cmp.has_regression(c)  # the contender is no worse


def test_failed_in_both_is_no_new_failure(run):
    c = run({NAME: FAILED}, {NAME: FAILED})
    assert row(c).status == cmp.ERROR and row(c).note.startswith("failed in both")
    assert c.new_failures == [] and not cmp.has_regression(c)


def test_failed_where_the_baseline_skipped_is_a_new_failure(run):
    c = run({NAME: {"times": BASE, "error": "skipped: no GPU"}}, {NAME: FAILED})
    assert c.new_failures == [NAME] and cmp.has_regression(c)


def test_a_new_benchmark_that_fails_is_no_regression(run):
    # Nothing to have run in the baseline: NEW, as the nightly counts only what ran before.
    c = run({NAME: BASE}, {NAME: BASE, GPU: FAILED})
    assert row(c, GPU).status == cmp.NEW
    assert c.new_failures == [] and not cmp.has_regression(c)


def test_slower_and_failed_are_both_in_the_verdict(run):
    c = run({NAME: BASE, OTHER: BASE, GPU: BASE}, {NAME: scaled(BASE, 1.1), OTHER: FAILED,
                                                    GPU: FAILED})
    assert cmp.format_text(c).splitlines()[-1] == ("verdict: REGRESSION: 1 benchmark slower, "
                                                   "2 benchmarks failed in the contender but not "
                                                   "in the baseline")


def test_skipped_in_either(run):
    skip = {"times": BASE, "error": "skipped: no CUDA device (cudaErrorNoDevice)"}
    c = run({NAME: BASE, GPU: skip}, {NAME: skip, GPU: BASE})
    assert row(c, NAME).status == cmp.SKIPPED
    assert row(c, NAME).note == "contender skipped: no CUDA device (cudaErrorNoDevice)"
    assert row(c, GPU).status == cmp.SKIPPED
    assert row(c, GPU).note.startswith("baseline skipped")


def test_failure_wins_over_skip(run):
    c = run({NAME: {"times": BASE, "error": "skipped: no GPU"}},
            {NAME: {"times": BASE, "error": "kernel error"}})
    assert row(c).status == cmp.ERROR


def test_three_vs_three_is_insufficient_and_names_five(run):
    c = run({NAME: BASE[:3]}, {NAME: scaled(BASE[:3], 2.0)})
    r = row(c)
    assert r.status == cmp.INSUFFICIENT_DATA
    assert "needs >= 5 repetitions per side for p < 0.01" in r.note
    assert r.change == pytest.approx(1.0)  # medians are still shown
    assert not cmp.has_regression(c)


def test_four_vs_four_insufficient_five_vs_five_decides(run):
    assert row(run({NAME: BASE[:4]}, {NAME: scaled(BASE[:4], 2.0)})).status == \
        cmp.INSUFFICIENT_DATA
    assert row(run({NAME: BASE[:5]}, {NAME: scaled(BASE[:5], 2.0)})).status == cmp.SLOWER


def test_insufficient_follows_alpha(run):
    r = row(run({NAME: BASE[:4]}, {NAME: scaled(BASE[:4], 2.0)}, alpha=0.05))
    assert r.status == cmp.SLOWER  # 1/70 < 0.05
    r = row(run({NAME: BASE[:3]}, {NAME: scaled(BASE[:3], 2.0)}, alpha=0.05))
    assert r.status == cmp.INSUFFICIENT_DATA  # 1/20 is not < 0.05
    assert "needs >= 4 repetitions per side for p < 0.05" in r.note


def test_only_aggregates_is_insufficient(make):
    base = load_results(DATA / "aggregates_only.json")
    cont = load_results(make("cont.json", {NAME: BASE}))
    r = row(cmp.compare(base, cont))
    assert r.status == cmp.INSUFFICIENT_DATA
    assert "only aggregates in baseline" in r.note
    assert r.baseline_median == pytest.approx(100.5e-9)  # Google Benchmark's median aggregate
    assert r.baseline_n == 0


def test_only_aggregates_on_both_sides(run):
    spec = {"times": BASE, "aggregates_only": True}
    r = row(run({NAME: spec}, {NAME: spec}))
    assert r.status == cmp.INSUFFICIENT_DATA
    assert "baseline and contender" in r.note


def test_unequal_repetition_counts(run):
    c = run({NAME: BASE[:5]}, {NAME: scaled(BASE, 1.2) + [125.0, 126.0]})
    r = row(c)
    assert (r.baseline_n, r.contender_n) == (5, 12)
    assert r.status == cmp.SLOWER
    assert r.p_value == pytest.approx(cmp.min_p_value(5, 12))
    assert row(run({NAME: BASE[:1]}, {NAME: scaled(BASE[:3], 2)})).status == \
        cmp.INSUFFICIENT_DATA  # 1 vs 3: at best p = 1/4


@pytest.mark.parametrize("factor", [1.0, 1.02, 1.10, 0.90])
def test_mixed_time_units_give_the_same_verdict(run, factor):
    same_unit = row(run({NAME: BASE}, {NAME: scaled(BASE, factor)}))
    mixed = row(run({NAME: BASE}, {NAME: {"times": scaled(BASE, factor), "unit": "ms"}}))
    assert mixed.status == same_unit.status
    assert mixed.p_value == pytest.approx(same_unit.p_value)
    assert mixed.contender_median == pytest.approx(same_unit.contender_median)


def test_equal_times_in_other_units_still_tie(run):
    ties = [100.3] * 5 + [99.7] * 5
    r = row(run({NAME: ties}, {NAME: {"times": ties, "unit": "us"}}))
    assert r.status == cmp.SAME
    assert r.change == 0
    assert r.p_value > 0.4


def test_all_equal_times_are_same(run):
    # No aggregates: load_results rejects the stddev aggregate of 0 that these would have.
    flat = {"times": [100.0] * 10, "aggregates": False}
    r = row(run({NAME: flat}, {NAME: flat}))
    assert r.status == cmp.SAME
    assert r.p_value == 1.0


def test_bad_parameters_raise(run):
    with pytest.raises(ValueError):
        run({NAME: BASE}, {NAME: BASE}, threshold=-0.1)
    with pytest.raises(ValueError):
        run({NAME: BASE}, {NAME: BASE}, alpha=1.0)


def test_context_differences_are_warned(run):
    c = run({NAME: BASE}, {NAME: BASE}, cont_kw={"profile": "quick"})
    assert c.warnings == ["gapbench.profile differs: baseline 'full', contender 'quick'"]


# --- different machines -----------------------------------------------------------------------

def _cross(run, **kw):
    skip = {"times": BASE, "error": "skipped: needs 12.0 GiB, 3.1 GiB free"}
    return run({NAME: BASE, OTHER: BASE, GPU: BASE}, {NAME: scaled(BASE, 1.5), GPU: skip,
                                                       "lstm/cudnn/gpu/batch:32": BASE},
               cont_kw={"machine": "machine-b"}, **kw)


def test_cross_machine_is_refused(run):
    c = _cross(run)
    assert c.machines_differ and not c.cross_machine
    assert "different machines" in c.refused_reason
    assert row(c).status == cmp.CROSS_MACHINE
    assert row(c).p_value is None and row(c).change == pytest.approx(0.5)
    assert row(c, OTHER).status == cmp.MISSING
    assert row(c, GPU).status == cmp.SKIPPED
    assert row(c, "lstm/cudnn/gpu/batch:32").status == cmp.NEW
    assert not any(r.status in (cmp.SLOWER, cmp.FASTER) for r in c.rows)
    assert not cmp.has_regression(c)
    text = cmp.format_text(c)
    assert "different machines" in text
    assert f"gapbench-report render {c.contender_path} --baseline {c.baseline_path} --out" in text
    assert "no verdict" in text


def test_cross_machine_when_asked(run):
    c = _cross(run, cross_machine=True)
    assert c.cross_machine and c.refused_reason is None
    assert row(c).status == cmp.SLOWER
    assert cmp.has_regression(c)
    assert "CROSS-MACHINE" in cmp.format_text(c)
    assert "CROSS-MACHINE" in cmp.format_markdown(c)


def test_no_regression_without_a_verdict():
    slower = cmp.Row(NAME, cmp.SLOWER, 1e-7, 2e-7, 1.0, 1e-5, 10, 10)
    given = cmp.Comparison("b", "c", "m1", "m1", 0.05, 0.01, False, False, None, [slower])
    refused = cmp.Comparison("b", "c", "m1", "m2", 0.05, 0.01, True, False, "differ", [slower])
    assert cmp.has_regression(given)
    assert not cmp.has_regression(refused)


def test_same_machine_is_not_labelled_cross(run):
    c = run({NAME: BASE}, {NAME: BASE}, cross_machine=True)
    assert not c.machines_differ and not c.cross_machine
    assert "CROSS-MACHINE" not in cmp.format_text(c)


# --- formatting -------------------------------------------------------------------------------

def test_format_time_units():
    assert cmp.format_time(100.025e-9) == "100.0 ns"
    assert cmp.format_time(1.5e-3) == "1.500 ms"
    assert cmp.format_time(12.3456e-6) == "12.35 us"
    assert cmp.format_time(2.0) == "2.000 s"
    assert cmp.format_time(1.5e-3, "us") == "1500 us"
    assert cmp.format_time(None) == "-"


def test_text_table_is_aligned(run):
    c = run({NAME: BASE, OTHER: scaled(BASE, 1e6)}, {NAME: scaled(BASE, 1.1), GPU: BASE})
    text = cmp.format_text(c)
    lines = text.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("Benchmark"))
    table = lines[header:header + 4]
    column = table[0].index("Status")
    assert [line[column:].split()[0] for line in table] == ["Status", "SLOWER", "NEW", "MISSING"]
    assert "+10.0%" in table[1] and "100.0 ns" in table[1] and "110.0 ns" in table[1]
    assert "100.0 ms" in table[3]  # unit chosen per row
    assert lines[-1] == "verdict: REGRESSION: 1 benchmark slower"


def test_text_shows_no_negative_zero(run):
    r = cmp.Row(NAME, cmp.SAME, 1e-7, 1e-7 * (1 - 1e-12), -1e-12, 0.5, 10, 10)
    assert cmp._row_cells(r)[4] == "+0.0%"


def test_markdown_has_a_table(run):
    c = run({NAME: BASE, OTHER: BASE}, {NAME: scaled(BASE, 1.1), OTHER: BASE})
    md = cmp.format_markdown(c)
    lines = md.splitlines()
    assert lines[0] == "### gapbench compare: REGRESSION: 1 benchmark slower"
    header = "| Benchmark | Status | Baseline | Contender | Change | p | n | Note |"
    assert lines.count(header) == 2  # changed rows, then the folded SAME rows
    assert lines[lines.index(header) + 1].startswith("|---|---|---:|")
    assert any(line.startswith(f"| `{NAME}` | SLOWER |") for line in lines)
    assert "<details><summary>1 SAME</summary>" in md


def test_markdown_escapes_pipes(run):
    c = run({NAME: BASE}, {NAME: {"times": BASE, "error": "bad | worse"}})
    assert "bad \\| worse" in cmp.format_markdown(c)


def test_json_is_stable_and_complete(run):
    c = run({NAME: BASE, OTHER: BASE}, {NAME: scaled(BASE, 1.1), GPU: BASE})
    data = json.loads(json.dumps(cmp.to_json(c)))
    assert set(data) == {"baseline", "contender", "threshold", "alpha", "machines_differ",
                         "cross_machine", "verdict_given", "refused_reason", "regression",
                         "new_failures", "warnings", "counts", "rows"}
    assert data["regression"] is True and data["new_failures"] == []
    assert {r["name"]: r["status"] for r in data["rows"]} == {NAME: "SLOWER", OTHER: "MISSING",
                                                               GPU: "NEW"}
    assert data["counts"]["SLOWER"] == 1 and data["counts"]["SAME"] == 0
    assert set(data["rows"][0]) == {"name", "status", "baseline_median_s", "contender_median_s",
                                    "change", "p_value", "baseline_n", "contender_n",
                                    "baseline_runs", "contender_runs", "note"}


# --- main: exit status and bad input ----------------------------------------------------------

def snapshot(folder: Path) -> dict:
    return {p.name: (p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
            for p in sorted(folder.iterdir())}


@pytest.fixture
def pair(make):
    """Writes baseline and contender; returns their paths."""
    def _pair(factor, **cont_kw):
        return (str(make("base.json", {NAME: BASE, OTHER: BASE})),
                str(make("cont.json", {NAME: scaled(BASE, factor), OTHER: BASE}, **cont_kw)))
    return _pair


def test_main_exit_zero_when_no_regression(pair, capsys, tmp_path):
    base, cont = pair(1.0)
    before = snapshot(tmp_path)
    assert cmp.main([base, cont]) == 0
    out = capsys.readouterr()
    assert "verdict: no regression" in out.out and out.err == ""
    assert snapshot(tmp_path) == before  # nothing written next to the inputs


def test_main_exit_one_on_regression(pair, capsys, tmp_path):
    base, cont = pair(1.1)
    before = snapshot(tmp_path)
    for extra in ([], ["--format", "markdown"], ["--json"]):
        assert cmp.main([base, cont, *extra]) == 1
    assert snapshot(tmp_path) == before
    assert cmp.main([base, cont, "--threshold", "0.2"]) == 0


def test_main_exit_one_when_the_contender_fails(make, capsys):
    # A CI gate on compare must not pass a build whose benchmarks fail validation.
    base = str(make("base.json", {NAME: BASE, OTHER: BASE}))
    cont = str(make("cont.json", {NAME: FAILED, OTHER: BASE}))
    assert cmp.main([base, cont]) == 1
    out = capsys.readouterr()
    assert out.out.splitlines()[-1] == \
        "verdict: REGRESSION: 1 benchmark failed in the contender but not in the baseline"
    assert out.err == ""
    assert cmp.main([base, cont, "--format", "markdown"]) == 1
    assert capsys.readouterr().out.startswith(
        "### gapbench compare: REGRESSION: 1 benchmark failed in the contender")
    assert cmp.main([base, cont, "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["regression"] is True and data["new_failures"] == [NAME]
    assert data["counts"]["ERROR"] == 1 and data["counts"]["SLOWER"] == 0


def test_main_a_failure_counts_across_machines(make, capsys):
    # Different machines refuse a verdict on times, not on a benchmark that fails.
    base = str(make("base.json", {NAME: BASE, OTHER: BASE}))
    cont = str(make("cont.json", {NAME: FAILED, OTHER: scaled(BASE, 1.5)}, machine="machine-b"))
    assert cmp.main([base, cont]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == (
        "verdict: REGRESSION: 1 benchmark failed in the contender but not in the baseline; "
        "no timing verdict (different machines)")


def test_main_exit_zero_when_only_the_baseline_failed(make, capsys):
    base = str(make("base.json", {NAME: FAILED, OTHER: BASE}))
    cont = str(make("cont.json", {NAME: BASE, OTHER: BASE}))
    assert cmp.main([base, cont]) == 0
    assert "verdict: no regression" in capsys.readouterr().out


def test_main_json(pair, capsys):
    base, cont = pair(0.9)
    assert cmp.main([base, cont, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [r["status"] for r in data["rows"]] == ["FASTER", "SAME"]


def test_main_markdown(pair, capsys):
    assert cmp.main([*pair(1.1), "--format", "markdown"]) == 1
    assert "| Benchmark | Status |" in capsys.readouterr().out


def test_main_cross_machine(pair, capsys):
    base, cont = pair(1.5, machine="machine-b")
    assert cmp.main([base, cont]) == 0
    assert "different machines" in capsys.readouterr().out
    assert cmp.main([base, cont, "--cross-machine"]) == 1


def _one_error_line(capsys, *words):
    out = capsys.readouterr()
    assert out.out == ""
    lines = out.err.splitlines()
    assert len(lines) == 1, out.err
    assert lines[0].startswith("gapbench-report compare: ")
    for word in words:
        assert word in lines[0]
    assert "Traceback" not in out.err


@pytest.mark.parametrize("bad, words", [
    ("missing.json", "no such file"),
    ("truncated.json", "not valid JSON"),
    ("not_json.json", "not valid JSON"),
    ("wrong_schema.json", "unknown schema version"),
])
def test_main_bad_input_exits_two(pair, capsys, bad, words):
    base, cont = pair(1.0)
    before = snapshot(DATA)
    assert cmp.main([base, str(DATA / bad)]) == 2
    _one_error_line(capsys, words)
    assert cmp.main([str(DATA / bad), cont]) == 2
    _one_error_line(capsys, words)
    assert snapshot(DATA) == before


@pytest.mark.parametrize("args, words", [
    (["--threshold", "-0.1"], "--threshold"),
    (["--threshold", "nan"], "--threshold"),
    (["--alpha", "0"], "--alpha"),
    (["--alpha", "1.5"], "--alpha"),
    (["--alpha", "x"], "invalid float"),
    (["--format", "html"], "invalid choice"),
    (["--nonsense"], "unrecognized"),
])
def test_main_bad_options_exit_two(pair, capsys, args, words):
    assert cmp.main([*pair(1.1), *args]) == 2
    _one_error_line(capsys, words)


def test_main_missing_arguments_exit_two(capsys):
    assert cmp.main([]) == 2
    _one_error_line(capsys, "give BASELINE and CONTENDER")


def test_main_help_exits_zero(capsys):
    assert cmp.main(["--help"]) == 0
    assert "--cross-machine" in capsys.readouterr().out


def test_main_never_lets_a_traceback_out(pair, capsys, monkeypatch):
    def boom(*args, **kwargs):
        raise RuntimeError("something\nunexpected")
    monkeypatch.setattr(cmp, "compare", boom)
    assert cmp.main(list(pair(1.0))) == 2
    _one_error_line(capsys, "internal error: RuntimeError: something unexpected")


# --- size -------------------------------------------------------------------------------------

def test_five_thousand_benchmarks(tmp_path):
    names = [f"preprocess/vectorized/cpu/op:sumsq/rows:{i}/cols:100/real_time"
             for i in range(5000)]
    base = {n: BASE for n in names}
    cont = dict(base)
    cont[names[10]] = scaled(BASE, 1.2)
    cont[names[20]] = scaled(BASE, 0.8)
    cont[names[30]] = scaled(BASE[:3], 1.2)
    del cont[names[40]]
    cont["lstm/cudnn/gpu/batch:32"] = BASE
    c = cmp.compare(load_results(write_results(tmp_path / "b.json", base)),
                    load_results(write_results(tmp_path / "c.json", cont)))
    statuses = {r.name: r.status for r in c.rows}
    assert len(statuses) == 5001
    assert statuses[names[10]] == cmp.SLOWER
    assert statuses[names[20]] == cmp.FASTER
    assert statuses[names[30]] == cmp.SLOWER  # 10 vs 3 reaches p = 1/286 < 0.01
    assert statuses[names[40]] == cmp.MISSING
    assert statuses["lstm/cudnn/gpu/batch:32"] == cmp.NEW
    counts = c.counts()
    assert counts[cmp.SAME] == 4996 and counts[cmp.SLOWER] == 2


# ---- judging by process ---------------------------------------------------------------------

def one_process(times):
    return {"times": times, "one_process": True}


def test_a_change_within_one_process_per_side_is_provisional_not_a_regression(run):
    """The issue's case: two single runs, the repetitions of each tight, the medians 10% apart.
    Between processes this machine varies 5-11%: no verdict without several runs per side."""
    c = run({NAME: one_process(BASE)}, {NAME: one_process(scaled(BASE, 1.10))})
    r = row(c)
    assert r.status == cmp.PROVISIONAL and r.p_value < 0.01
    assert (r.baseline_processes, r.contender_processes) == (1, 1)
    assert "5 runs per side would settle it" in r.note
    assert not cmp.has_regression(c)
    assert cmp._headline(c).startswith("no regression verdict: 1 benchmark changed")


def test_several_runs_per_side_are_judged_by_their_medians(make, capsys):
    """A side is a set of files: five runs per side, each a process of ten repetitions. The test
    runs on the five medians per side."""
    base = [str(make(f"a{i}.json", {NAME: one_process([t + i for t in BASE])})) for i in range(5)]
    cont = [str(make(f"b{i}.json", {NAME: one_process([1.2 * t + i for t in BASE])}))
            for i in range(5)]
    assert cmp.main(["--baseline", *base, "--contender", *cont, "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    (r,) = data["rows"]
    assert r["status"] == "SLOWER" and (r["baseline_runs"], r["contender_runs"]) == (5, 5)
    assert r["baseline_n"] == 50 and r["p_value"] == pytest.approx(1 / 252)


def test_runs_that_disagree_more_than_their_repetitions_give_no_verdict(make):
    """Five runs per side whose medians interleave: SAME, although pooling all repetitions as
    if they were independent would call the 3% shift significant."""
    offsets = [0, 6, -6, 3, -3]
    base = load_side_of(make, "a", [[t + o for t in BASE] for o in offsets])
    cont = load_side_of(make, "b", [[t * 1.03 + o for t in BASE] for o in offsets[::-1]])
    r = row(cmp.compare(base, cont))
    assert r.status == cmp.SAME and (r.baseline_processes, r.contender_processes) == (5, 5)


def load_side_of(make, prefix, runs):
    from gapbench_report.inputs.results import load_side
    return load_side([make(f"{prefix}{i}.json", {NAME: one_process(t)})
                      for i, t in enumerate(runs)])


def test_a_folder_is_a_side_and_sides_must_be_one_machine(make, tmp_path, capsys):
    (tmp_path / "runA").mkdir()
    (tmp_path / "runB").mkdir()
    for i in range(5):
        make(f"runA/f{i}.json", {NAME: one_process(BASE)})
        make(f"runB/f{i}.json", {NAME: one_process(BASE)})
    assert cmp.main([str(tmp_path / "runA"), str(tmp_path / "runB")]) == 0
    assert "SAME" in capsys.readouterr().out
    make("runB/other.json", {NAME: one_process(BASE)}, machine="machine-b")
    assert cmp.main([str(tmp_path / "runA"), str(tmp_path / "runB")]) == 2
    _one_error_line(capsys, "runB: holds the runs of 2 machines (f0: machine.id",
                    "other: machine.id machine-b, other.json): a side is one machine")
    (tmp_path / "empty").mkdir()
    assert cmp.main([str(tmp_path / "runA"), str(tmp_path / "empty")]) == 2
    _one_error_line(capsys, "no results files")


def test_positional_and_side_options_do_not_mix(pair, capsys):
    base, cont = pair(1.0)
    assert cmp.main([base, "--contender", cont]) == 2
    _one_error_line(capsys, "--baseline PATH... and --contender PATH...")


def test_a_bad_process_number_is_refused_in_one_line(make, capsys):
    path = make("bad.json", {NAME: BASE})
    data = json.loads(path.read_text())
    data["benchmarks"][0]["gapbench_process"] = "first"
    path.write_text(json.dumps(data))
    assert cmp.main([str(path), str(path)]) == 2
    _one_error_line(capsys, "gapbench_process is 'first', not a process number")


def test_one_run_of_many_family_files_is_one_run_even_for_peak(make, tmp_path, capsys):
    """peak/ rows appear in every family's file of one run: six files of one session are one
    run, not six, and give no verdict."""
    peak = "peak/read/cpu/mib:256/real_time/threads:1"
    for side, factor in (("a", 1.0), ("b", 1.3)):
        (tmp_path / side).mkdir()
        for family in ("conv", "lstm", "overhead", "pipeline", "preprocess", "transfer"):
            make(f"{side}/{family}.json", {peak: one_process(scaled(BASE, factor))})
    assert cmp.main([str(tmp_path / "a"), str(tmp_path / "b"), "--json"]) == 0
    (r,) = json.loads(capsys.readouterr().out)["rows"]
    assert r["status"] == "PROVISIONAL" and (r["baseline_runs"], r["contender_runs"]) == (1, 1)
    assert r["baseline_n"] == 10  # the first file's repetitions only


def test_a_path_named_twice_counts_once(make):
    from gapbench_report.inputs.results import load_side
    path = make("a.json", {NAME: one_process(BASE)})
    side = load_side([path, path])
    assert len(side.benchmarks()[NAME].process_medians) == 1


def test_same_host_compares_builds_whose_machine_ids_differ(make):
    """The nightly builds the known-good commit beside this one on one host: an id that the two
    builds compute differently is no other machine."""
    base = load_results(make("a.json", {NAME: BASE}, machine="id-old-formula"))
    cont = load_results(make("b.json", {NAME: scaled(BASE, 1.2)}, machine="id-new-formula"))
    assert not cmp.compare(base, cont).verdict_given
    c = cmp.compare(base, cont, same_host=True)
    assert c.verdict_given and not c.machines_differ and row(c).status == cmp.SLOWER


def strict_json(text: str) -> object:
    """json.loads that refuses Infinity, -Infinity and NaN, as every parser but Python's does."""
    def refuse(literal):
        raise ValueError(f"{literal} is not JSON")
    return json.loads(text, parse_constant=refuse)


def test_json_never_holds_infinity_or_nan():
    rows = [cmp.Row(NAME, cmp.SAME, 1e-300, 1.7e308, float("inf"), 0.5, 10, 10, "a note"),
            cmp.Row(OTHER, cmp.SAME, float("nan"), 1e-6, None, float("nan"), 10, 10)]
    c = cmp.Comparison("b", "c", "m", "m", 0.05, 0.01, False, False, None, rows)
    data = strict_json(json.dumps(cmp.to_json(c), allow_nan=False))
    first, second = data["rows"]
    assert first["change"] is None and first["contender_median_s"] == 1.7e308
    assert first["note"] == "a note; change is inf (not a finite number): null"
    assert second["baseline_median_s"] is None and second["p_value"] is None
    assert second["note"] == ("baseline_median_s is nan (not a finite number): null; "
                              "p_value is nan (not a finite number): null")


@pytest.mark.parametrize("base, cont", [([1e-3] * 10, [1e14] * 10), ([1e-3] * 10, [1e-3] * 10)])
def test_main_json_parses_strictly_at_the_edges_of_what_is_a_time(make, capsys, base, cont):
    """Times the loader accepts, from 1 ps to 11.6 days per iteration (given here in ns): every
    figure of the JSON is finite."""
    a, b = make("a.json", {NAME: base}), make("b.json", {NAME: cont})
    assert cmp.main([str(a), str(b), "--json"]) in (0, 1)
    row = strict_json(capsys.readouterr().out)["rows"][0]
    assert row["baseline_median_s"] == pytest.approx(base[0] * 1e-9)


def test_times_near_the_largest_float_are_refused_in_one_line(make, capsys):
    """The issue's file: times near 1e308 made the medians' ratio Infinity in --json."""
    a, b = make("a.json", {NAME: [1e-300] * 10}), make("b.json", {NAME: [1.7e308] * 10})
    assert cmp.main([str(a), str(b), "--json"]) == 2
    out = capsys.readouterr()
    assert out.out == "" and len(out.err.splitlines()) == 1
    assert "real_time is 1e-300 ns, outside 1e-12 to 1e+06 s" in out.err


def test_markdown_shows_html_from_names_and_notes_as_text():
    name = "preprocess/x/cpu/op:<img src=x>`|`/real_time"
    rows = [cmp.Row(name, cmp.ERROR, note="contender failed: <b>boom</b> | 2", new_failure=True)]
    text = cmp.format_markdown(cmp.Comparison("<base>", "c", "m", "m", 0.05, 0.01, False, False,
                                              None, rows))
    line = next(x for x in text.splitlines() if "| ERROR |" in x)
    assert line.startswith("| ``preprocess/x/cpu/op:<img src=x>`\\|`/real_time`` | ERROR |")
    assert "contender failed: &lt;b&gt;boom&lt;/b&gt; \\| 2 |" in line
    assert "- baseline &lt;base&gt; (machine m)" in text
