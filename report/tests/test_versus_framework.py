"""versus_framework.py: the user's framework between two machines, each difference split into
the hardware's part (gapbench's own library row of the same work on both) and the stack's (the
rest, put down to the framework facts that differ). On the committed H100 and H200 with their
PyTorch probes (one torch, one cuDNN); on real probe runs of this machine with one stack
difference planted (report/tests/data/versus/framework/, README there); and on a planted
CPU-only build."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from gapbench_report.core.tables import FAMILY_ORDER
from gapbench_report.inputs import machines
from gapbench_report.inputs.machines import Baseline
from gapbench_report.inputs.results import Results, load_results
from gapbench_report.render import command as render
from gapbench_report.render import model
from gapbench_report.versus import framework as versus_framework

REPO = Path(__file__).resolve().parents[2]
BASELINES = REPO / "results" / "baselines"
PLANTED = Path(__file__).parent / "data" / "versus" / "framework"
# Every family's method version planted the same on both sides, so that the split itself is what
# these tests see, whatever the methods table says of the committed files' commits.
SAME_CODE = {f"gapbench.method.{f}": "1" for f in FAMILY_ORDER}


def same_code(found: Baseline) -> Baseline:
    return Baseline(found.label, tuple(Results(r.path, {**r.context, **SAME_CODE}, r.entries,
                                               r.provenance) for r in found.files), found.place)


def same_code_files(tmp_path: Path, name: str) -> Path:
    """The committed baseline NAME and its probe file, with SAME_CODE planted, as files."""
    for r in machines.machine_run(BASELINES / f"{name}.json").files:
        doc = json.loads(r.path.read_text(encoding="utf-8"))
        doc["context"].update(SAME_CODE)
        (tmp_path / r.path.name).write_text(json.dumps(doc), encoding="utf-8")
    return tmp_path / f"{name}.json"


def framework_comparison(runs, baselines) -> tuple[model.Report, versus_framework.Comparison]:
    report = model.build_report(runs, baselines)
    # the planted library run holds no peak/ rows: the one note it may get says so
    assert all("read without its ceilings" in n for n in report.notes), report.notes
    return report, report.framework_comparisons[0]


@pytest.fixture(scope="module")
def h100_h200():
    """The H100 against the H200, each found with its probe file beside it, as render does."""
    here = same_code(machines.machine_run(BASELINES / "h100-ubuntu24.json"))
    there = same_code(machines.machine_run(BASELINES / "h200-ubuntu24.json"))
    return framework_comparison(list(here.files), [there])


def test_a_results_file_brings_its_probe_file_from_beside_it():
    found = machines.machine_run(BASELINES / "h200-ubuntu24.json")
    assert [r.path.name for r in found.files] == ["h200-ubuntu24.json",
                                                  "h200-ubuntu24.framework-torch.json"]
    assert found.label == "h200-ubuntu24"
    # named as well, it is read once
    runs = machines.read_run([BASELINES / "h200-ubuntu24.json",
                               BASELINES / "h200-ubuntu24.framework-torch.json"])
    assert len(runs) == 2
    assert machines.probe_files_beside(
        BASELINES / "h200-ubuntu24.framework-torch.json") == []


def test_same_math_the_stack_is_about_1_and_the_hardware_is_the_library_rows(h100_h200):
    """Same torch 2.11.0+cu130 and cuDNN 9.19.0 on both. Found: 9 works split; each one's
    hardware part is its cuBLAS or cudaMemcpy row's ratio exactly as versus judged that row;
    the stack part is within 12% of 1 for all but the GPU dense training steps in eager mode
    (1.17x to 1.31x slower on the H100 with the same stack and the same cuBLAS kernel time: a
    step through Python, autograd and the optimizer, which gapbench's row does not time), and
    no fact differs, so those stay unexplained."""
    report, c = h100_h200
    fc = c.frameworks[0]
    assert fc.name == "torch" and not fc.facts
    split = [w for w in fc.works if w.stack is not None]
    assert len(split) == 9
    library = report.comparisons[0]
    for w in split:
        lib = w.library.work.pair
        assert w.hardware == pytest.approx(lib.here.median / lib.there.median)
        assert lib.here.math == lib.there.math == w.here.math == w.there.math
        judged = [v for v in library.works if v.pair.here.name == lib.here.name]
        if judged:  # the comparison judged this library row: the same ratio
            assert w.hardware == pytest.approx(1 / judged[0].pair.speed)
        assert w.ratio == pytest.approx(w.hardware * w.stack)
    host_bound = [w for w in split if w.here.parsed.axis("op") == "dense"
                  and w.here.parsed.axis("mode") is None]
    assert len(host_bound) == 4
    for w in split:
        if w in host_bound:
            assert 1.1 < w.stack < 1.35 and not w.facts, w.words
            assert "through Python" in versus_framework.reading(w, c)
        else:
            assert abs(math.log(w.stack)) < math.log(1.12), (w.words, w.stack)


def test_rows_of_another_math_are_not_comparable_and_tf32_pairs_by_math(h100_h200):
    """The H200's probe predates the math axis and recorded tf32_conv "on": its plain conv and
    LSTM rows ran TF32, the H100's plain ones float32."""
    _, c = h100_h200
    fc = c.frameworks[0]
    reasons = {w.here.name: w.reasons for w in fc.not_comparable}
    assert set(reasons) == {
        "framework/torch/gpu/op:conv/n:1/c:1/hw:28/k:1/r:3/stride:1/pad:0/real_time",
        "framework/torch/gpu/op:conv/n:2/c:64/hw:56/k:64/r:3/stride:1/pad:1/real_time",
        "framework/torch/gpu/op:lstm/scope:step/batch:64/input:50/hidden:64/steps:100/"
        "mode:compiled/real_time"}
    for why in reasons.values():
        assert why[0].startswith("math: float32 here, TF32 on h200-ubuntu24")
        assert "framework.tf32_conv on" in why[0]
    # The H100's math:tf32 LSTM rows pair with the H200's plain ones: both computed TF32.
    tf32 = [w for w in fc.works if not w.reasons and w.here.math == "tf32"]
    assert len(tf32) == 4
    for w in tf32:
        assert "/math:tf32/" in w.here.name and "math:" not in w.there.name
        # gapbench's H200 run has no TF32 LSTM row: the framework's ratio stands alone
        assert w.stack is None and "computes float32, the framework TF32" in w.library.why_not
    assert "3 not comparable (another math" in versus_framework.verdict(fc, c)


def test_facts_are_compared_by_meaning():
    meaning = versus_framework.meaning
    assert meaning("framework.tf32_matmul", "off") == meaning(
        "framework.tf32_matmul", "off by default; the probe's GPU cases: on for math:tf32") \
        == "off"
    assert meaning("framework.onednn", "unset (on by default)") == "on"
    assert meaning("framework.onednn", "0") == "off"
    assert meaning("framework.mixed_precision", "float32") == "off"
    assert meaning("framework.threads_intra_op", "0 (TensorFlow's choice)") == "0"
    assert meaning("framework.cuda_built", "none (CPU-only build)") == "none"
    assert meaning("framework.version", "unknown: RuntimeError") == ""
    found = versus_framework.fact_differences(
        {"framework.onednn": "0", "framework.tf32_conv": "on", "framework.version": "2.21.0"},
        {"framework.onednn": "1", "framework.tf32_conv": "on by default; the probe's ...",
         "framework.version": "unknown: no"})
    assert [d.fact.key for d in found] == ["framework.onednn"]


def cpu_only(probe: Path, out: Path) -> Path:
    """The H100's probe file as a CPU-only wheel's would read: its context says so, and each
    GPU row is skipped with the probe's reason."""
    data = json.loads(probe.read_text(encoding="utf-8"))
    data["context"].update({"framework.version": "2.11.0+cpu",
                            "framework.cuda_built": "none (CPU-only build)",
                            "framework.cudnn_built": "none",
                            "framework.gpu": "none: torch 2.11.0+cpu is a CPU-only build",
                            "gpu.status": "torch 2.11.0+cpu is a CPU-only build"})
    for row in data["benchmarks"]:
        if "/gpu/" in row["name"]:
            row.update({"error_occurred": True,
                        "error_message": "skipped: torch 2.11.0+cpu is a CPU-only build"})
    out.write_text(json.dumps(data), encoding="utf-8")
    return out


def test_a_cpu_only_build_is_named_where_one_side_ran_no_gpu_work(tmp_path):
    here = [load_results(BASELINES / "h100-ubuntu24.json"),
            load_results(cpu_only(BASELINES / "h100-ubuntu24.framework-torch.json",
                                  tmp_path / "h100.framework-torch.json"))]
    _, c = framework_comparison(here, [machines.machine_run(BASELINES / "h200-ubuntu24.json")])
    fc = c.frameworks[0]
    assert not fc.works
    assert fc.gpu_missing.startswith("torch ran no GPU work here, 26 works on h200-ubuntu24: "
                                     "torch 2.11.0+cpu is a CPU-only build (framework."
                                     "cuda_built none (CPU-only build) here, 13.0 on "
                                     "h200-ubuntu24)")
    assert versus_framework.verdict(fc, c).startswith("Your torch ran no GPU work here")


def test_one_side_without_a_probe_file_gets_the_command_that_makes_it():
    here = list(machines.machine_run(BASELINES / "h100-ubuntu24.json").files)
    _, c = framework_comparison(here, [load_results(BASELINES / "h200-ubuntu24.json")])
    text = versus_framework.verdict(c.frameworks[0], c)
    assert text.startswith("Your torch has a probe file on one machine only: none on "
                           "h200-ubuntu24. Make it there with `PYTHONPATH=probe python -m "
                           "gapbench_probe --framework torch --device gpu --profile quick "
                           "--out results/local")
    assert "as h200-ubuntu24.framework-torch.json" in text


def test_comparison_json_carries_both_parts(tmp_path):
    out = tmp_path / "out"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    here = same_code_files(tmp_path / "a", "h100-ubuntu24")
    there = same_code_files(tmp_path / "b", "h200-ubuntu24")
    assert render.main([str(here), "--baseline", str(there), "--out", str(out)]) == 0
    doc = json.loads((out / "comparison.json").read_text(encoding="utf-8"))
    [torch] = doc["comparisons"][0]["framework"]
    assert torch["framework"] == "torch" and torch["verdict"]
    split = [w for w in torch["works"] if w["stack"] is not None]
    assert len(split) == 9
    for w in split:
        assert w["time_ratio"] == pytest.approx(w["hardware"]["ratio"] * w["stack"]["ratio"])
        assert w["hardware"]["library"]["this"]["name"] == \
            w["hardware"]["library"]["baseline"]["name"]
    assert sum(not w["comparable"] for w in torch["works"]) == 3
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert "#### Your torch against h200-ubuntu24" in summary
    assert "| framework.tf32_conv |" in summary


# ---- real probe runs of this machine, one stack difference planted --------------------------

def planted(case: str, framework: str) -> tuple[model.Report, versus_framework.Comparison]:
    """This run: gapbench's library rows and the planted stack's probe; the baseline: the
    default stack's probe alone, a folder of this same machine, so the library rows are one."""
    folder = PLANTED / case
    here = [load_results(PLANTED / "library.json"),
            load_results(folder / "planted" / f"framework-{framework}.json")]
    return framework_comparison(here, [machines.machine_run(folder / "default-stack")])


@pytest.mark.parametrize("case, framework, fact", [
    ("tensorflow-onednn-off", "tensorflow", "framework.onednn"),
    ("torch-one-thread", "torch", "framework.threads_intra_op"),
])
def test_a_planted_stack_difference_is_put_down_to_the_planted_fact(case, framework, fact):
    _, c = planted(case, framework)
    [fc] = c.frameworks
    assert [d.fact.key for d in fc.facts] == [fact]
    assert "is this machine" in fc.library_note
    split = [w for w in fc.works if w.stack is not None]
    assert split
    for w in split:  # one library run serves both sides: the hardware part is 1 exactly
        assert w.hardware == 1.0 and w.stack == pytest.approx(w.ratio)
    acting = [w for w in fc.works if w.stack_acts]
    assert acting
    for w in acting:
        assert [d.fact.key for d in w.facts] == [fact]
    verdict = versus_framework.verdict(fc, c)
    words = next(f.words for f in versus_framework.FACTS if f.key == fact)
    assert words.format(fw=framework) in verdict


def test_a_broken_probe_file_beside_is_one_line_and_exit_2(tmp_path, capsys):
    shutil.copy(Path(__file__).parent / "data" / "good.json", tmp_path / "run.json")
    (tmp_path / "run.framework-torch.json").write_text("{ not json", encoding="utf-8")
    assert render.main([str(tmp_path / "run.json"), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "run.framework-torch.json" in err, err
    assert not (tmp_path / "out" / "index.html").exists()
