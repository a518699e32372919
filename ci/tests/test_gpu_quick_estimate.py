"""The quick profile's GPU run fits its 3 minutes: the estimate's model against what an H200 and
an H100 measured, the quick profile's GPU rows now against that estimate, and the report's
element-wise lesson at the GPU's quick sizes (element-wise at 10^4 rows, vectorized at 10^6)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from gapbench_report.core.metrics import preprocess_metrics
from gapbench_report.diagnose.rules import diagnose

from gapbench_ci import gpu_quick_estimate as quick
from tests.synthetic import in_memory, runs

REPO = Path(__file__).resolve().parents[2]
# Row costs from the GPU run on an H200 of 2026-11-26 (ci/gpu-quick-estimate --save-costs over
# its transfer, conv, lstm, overhead and pipeline files; preprocess's was cut off).
H200_COSTS = Path(__file__).parent / "data" / "h200-quick-gpu-costs.json"
# What each family's quick GPU run took there (peak's GPU rows beside each), in seconds.
H200_MEASURED_S = {"transfer": 34, "conv": 38, "lstm": 24, "overhead": 56, "pipeline": 12}
# The same from ci/gpu-check on an H100 (2026-11-27, --save-costs over its six quick families'
# files, before the plain default-math cuDNN conv rows were dropped), and what each family took.
H100_COSTS = Path(__file__).parent / "data" / "h100-quick-gpu-costs.json"
H100_MEASURED_S = {"conv": 48.7, "lstm": 28.8, "overhead": 43.4, "pipeline": 13.6,
                   "preprocess": 12.9, "transfer": 24.0}
QUICK_GPU_TARGET_S = 180


def test_the_model_matches_what_the_h200_measured():
    costs = quick.load_costs([H200_COSTS])
    families = quick.estimate(costs, costs)
    assert set(families) == set(H200_MEASURED_S)
    for name, measured in H200_MEASURED_S.items():
        assert not families[name].unmeasured
        assert abs(families[name].seconds - measured) <= max(3.0, 0.1 * measured), name


def test_the_model_comes_within_6_s_of_each_family_on_the_h100():
    """On the H100 the model undercounts overhead's and pipeline's run by 4-5 s (more start-up
    than the H200's), and is within 2 s elsewhere: 161 s for 172 measured."""
    costs = quick.load_costs([H100_COSTS])
    families = quick.estimate(costs, costs)
    assert set(families) == set(H100_MEASURED_S)
    for name, measured in H100_MEASURED_S.items():
        assert not families[name].unmeasured
        assert abs(families[name].seconds - measured) <= max(4.0, 0.15 * measured), name
    assert abs(sum(f.seconds for f in families.values()) - sum(H100_MEASURED_S.values())) <= 15


def test_a_row_cost_from_google_benchmark_json():
    entry = {"run_name": "x/gpu/manual_time", "run_type": "iteration", "time_unit": "us"}
    doc = {"benchmarks": [{**entry, "iterations": 1000, "real_time": 4.0, "cpu_time": 30.0}] * 5
           + [{**entry, "run_type": "aggregate", "iterations": 5, "real_time": 4.0,
               "cpu_time": 30.0}]}
    # Host time rules (30 us an iteration), and one more repetition for the search.
    assert quick.row_costs(doc) == {"x/gpu/manual_time": pytest.approx(6 * 1000 * 30e-6)}


def test_rows_without_a_measurement_are_counted_and_named():
    families = quick.estimate(["peak/a/gpu", "conv/x/gpu", "preprocess/y/gpu"],
                              {"peak/a/gpu": 2.0, "conv/x/gpu": 5.0})
    assert families["conv"].seconds == pytest.approx(quick.PROCESS_S + 7.0)
    assert families["preprocess"].unmeasured == ["preprocess/y/gpu"]
    assert families["preprocess"].seconds == pytest.approx(
        quick.PROCESS_S + 2.0 + quick.UNMEASURED_ROW_S)


def gapbench_binary() -> Path:
    path = Path(os.environ.get("GAPBENCH_BINARY", REPO / "build" / "default" / "gapbench"))
    if not path.exists():
        pytest.skip("no gapbench executable (set GAPBENCH_BINARY or build build/default)")
    return path


@pytest.mark.parametrize("costs", [H200_COSTS, H100_COSTS], ids=["h200", "h100"])
def test_the_quick_gpu_run_now_fits_three_minutes(costs):
    """The rows the quick profile lists now (no GPU needed to list them), costed from each GPU's
    files (a row they lack counts 1 s): within 3 minutes. Every row the H100 ran that gapbench
    still lists is costed from it; the plain cuDNN conv rows it also ran are gone."""
    names = quick.quick_gpu_names(gapbench_binary())
    families = quick.estimate(names, quick.load_costs([costs]))
    total = sum(f.seconds for f in families.values())
    assert total <= QUICK_GPU_TARGET_S, quick.table(families)
    if costs == H100_COSTS:
        assert not [n for f in families.values() for n in f.unmeasured]
        assert sum(f.rows for f in families.values()) == 172 - 6
    # The element-wise sum's launch storm (10^6 launches, 4 s a repetition) is not in quick.
    assert not [n for n in names if n.startswith("preprocess/elementwise")
                and "rows:1000000/" in n]
    assert "preprocess/elementwise/gpu/op:sumsq/rows:10000/cols:100/manual_time" in names
    assert "preprocess/vectorized/gpu/op:sumsq/rows:1000000/cols:100/manual_time" in names


def test_the_command_prints_each_family_and_the_unmeasured_rows(tmp_path):
    done = subprocess.run([str(REPO / "ci" / "gpu-quick-estimate"), str(H200_COSTS),
                           "--gapbench", str(gapbench_binary())],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert "| preprocess |" in done.stdout and "| all |" in done.stdout
    assert "unmeasured (1 s): preprocess/" in done.stdout
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    done = subprocess.run([str(REPO / "ci" / "gpu-quick-estimate"), str(bad)],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr


def sumsq(variant: str, device: str, rows: int, seconds: float) -> list[dict]:
    suffix = "manual_time" if device == "gpu" else "real_time"
    return runs(f"preprocess/{variant}/{device}/op:sumsq/rows:{rows}/cols:100/{suffix}",
                [seconds] * 5)


def test_the_element_wise_lesson_is_per_row_at_the_gpu_s_quick_sizes():
    """GPU element-wise at 10^4 rows (41 ms: 4.1 us a launch, as on the H200) against
    vectorized at 10^6 (0.13 ms): 31,500x per row, not the 315x of the two times."""
    entries = (sumsq("elementwise", "gpu", 10000, 0.041) + sumsq("vectorized", "gpu", 1000000,
                                                                 0.00013)
               + sumsq("elementwise", "cpu", 1000000, 0.24) + sumsq("vectorized", "cpu", 1000000,
                                                                    0.03))
    results = in_memory(entries)
    metrics = preprocess_metrics(list(results.benchmarks().values()))
    assert metrics["preprocess sumsq: GPU element-wise / vectorized time"] == \
        pytest.approx(31538, rel=1e-3)
    assert metrics["preprocess sumsq: CPU element-wise / vectorized time"] == pytest.approx(8.0)
    assert metrics["preprocess sumsq: GPU kernel speed-up over CPU vectorized"] == \
        pytest.approx(0.03 / 0.00013)
    lessons = [f for f in diagnose([results]) if f.rule == "elementwise_vs_vectorized"]
    assert any("on the gpu is 31538x slower" in f.title.lower() for f in lessons), \
        [f.title for f in lessons]

