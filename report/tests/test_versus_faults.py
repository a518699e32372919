"""The comparison's wrong answers of faults round 6 (docs/faults.md): a cause is credited only
from a fact that differs and binds, a fact that would explain is read, a row is paired only with
the same work, and a probe file that contradicts itself is refused. Each class is planted on one
side only, on both sides equal, and out of range, and the cause named is checked."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from gapbench_report.core import causes
from gapbench_report.inputs.results import ResultsError, load_results
from gapbench_report.versus import comparison as versus
from tests.synthetic import in_memory, runs
from tests.test_versus import ONEDNN_CONV, THREADED_ROWS, planted, work

BLAS_GEMM = "overhead/openblas/cpu/op:matmul/n:1024/real_time"
PLAIN = {"cpu.usable_cpus": "2", "cpu.affinity_cpus": "2", "cpu.quota_cpus": "none"}


def facts_named(w: versus.Work) -> list[str]:
    return [d.key for _, d in w.explanation.facts]


def first_item(c: versus.Comparison) -> str:
    return versus.verdict_lines(c)[0][1][0]


# ---- the CPUs this process may use: a limit is named only where it binds ----------------------

@pytest.mark.parametrize("here, named", [
    # One side only, binding.
    ({"cpu.usable_cpus": "1", "cpu.affinity_cpus": "2", "cpu.quota_cpus": "1"},
     "a container quota here"),
    # A quota above the affinity binds nothing: the affinity is what holds the process.
    ({"cpu.usable_cpus": "1", "cpu.affinity_cpus": "1", "cpu.affinity_list": "0",
      "cpu.quota_cpus": "1.5"}, "its CPU affinity here"),
    # A quota above the cores (out of range for this machine) binds nothing either.
    ({"cpu.usable_cpus": "1", "cpu.affinity_cpus": "1", "cpu.affinity_list": "0",
      "cpu.quota_cpus": "4"}, "its CPU affinity here"),
])
def test_a_cpu_limit_is_named_only_where_it_binds(here, named):
    fewer = planted("normal-1", "fewer", THREADED_ROWS, **here, **{"openblas.threads": "1"})
    c = versus.compare(fewer, planted("normal-1", "plain", **PLAIN))
    assert first_item(c).startswith(f"this process may use 1 CPU here and 2 there ({named}"), \
        first_item(c)
    assert "quota" not in first_item(c) or named == "a container quota here"


def test_the_same_quota_on_both_sides_explains_nothing():
    quota = {"cpu.usable_cpus": "1", "cpu.affinity_cpus": "2", "cpu.quota_cpus": "1"}
    c = versus.compare(planted("normal-1", "a", THREADED_ROWS, **quota),
                       planted("normal-1", "b", **quota))
    assert c.slower and not any(w.explanation.ceiling == "cpus" and w.explanation.explained
                                for w in c.slower)
    assert "quota" not in versus.verdict(c)


def test_usable_cpus_above_the_facts_it_comes_from_is_not_believed():
    """64 recorded on a 2-core machine under a 1-CPU quota: the quota holds the process."""
    context = {"cpu.usable_cpus": "64", "cpu.cores": "2", "cpu.affinity_cpus": "2",
               "cpu.quota_cpus": "1"}
    assert causes.usable_cpus(context) == (
        1, "the least of (cpu.cores 2, cpu.affinity_cpus 2, cpu.quota_cpus 1); cpu.usable_cpus "
           "64 is more than they allow")
    assert causes.usable_cpus({**context, "cpu.usable_cpus": "1"})[0] == 1  # as it should be
    fewer = planted("normal-1", "fewer", THREADED_ROWS, **context, **{"openblas.threads": "1"})
    c = versus.compare(fewer, planted("normal-1", "plain", **PLAIN))
    assert first_item(c).startswith("this process may use 1 CPU here and 2 there (a container "
                                    "quota here"), first_item(c)


# ---- a cap that binds nothing is no cause --------------------------------------------------------

@pytest.mark.parametrize("cap, isa, named", [
    ("sse41", "sse41", True),  # it binds: oneDNN ran an older instruction set
    ("bad", "avx512_core_bf16", False),  # invalid: oneDNN ignored it
    ("avx512_core_amx", "avx512_core_bf16", False),  # above the CPU
    ("avx512_core_bf16", "avx512_core_bf16", False),  # the CPU's own best
])
def test_an_isa_cap_is_a_cause_only_where_it_binds(cap, isa, named):
    slow = planted("normal-1", "capped", {ONEDNN_CONV: 2.0},
                   **{"onednn.isa_cap": cap, "onednn.isa": isa})
    w = work(versus.compare(slow, planted("normal-1", "plain")), ONEDNN_CONV)
    assert ("onednn.isa_cap" in facts_named(w)) is named, facts_named(w)


def test_a_forced_openblas_core_that_kept_the_kernels_is_no_cause():
    same_core = {"openblas.coretype": "Cooperlake", "openblas.core": "Cooperlake"}
    slow = planted("normal-1", "forced", {BLAS_GEMM: 2.0}, **same_core)
    w = work(versus.compare(slow, planted("normal-1", "plain")), BLAS_GEMM)
    assert "openblas.coretype" not in facts_named(w)
    other = planted("normal-1", "forced", {BLAS_GEMM: 2.0},
                    **{"openblas.coretype": "Haswell", "openblas.core": "Haswell"})
    assert "openblas.coretype" in facts_named(work(versus.compare(other, planted("normal-1")),
                                                   BLAS_GEMM))


def test_the_same_cap_on_both_sides_is_no_cause():
    cap = {"onednn.isa_cap": "sse41", "onednn.isa": "sse41"}
    w = work(versus.compare(planted("normal-1", "a", {ONEDNN_CONV: 2.0}, **cap),
                            planted("normal-1", "b", **cap)), ONEDNN_CONV)
    assert "onednn.isa_cap" not in facts_named(w)


# ---- facts that explain are read: library versions, the build ----------------------------------

@pytest.mark.parametrize("key, value, named", [
    ("openblas.version", "0.3.20", True),  # one side only
    ("openblas.version", "0.3.21", False),  # equal on both sides
    ("openblas.version", "unavailable (no openblas_get_config)", False),  # unknown
])
def test_a_library_version_is_read(key, value, named):
    slow = planted("normal-1", "downgraded", {BLAS_GEMM: 2.0}, **{key: value})
    w = work(versus.compare(slow, planted("normal-1", "plain")), BLAS_GEMM)
    assert (key in facts_named(w)) is named, facts_named(w)
    if named:
        assert "another OpenBLAS version (openblas.version 0.3.20" in \
            versus.reading(w, "downgraded", "plain")


def test_a_onednn_version_concerns_onednn_rows_alone():
    slow = planted("normal-1", "downgraded", {ONEDNN_CONV: 2.0, BLAS_GEMM: 2.0},
                   **{"onednn.version": "2.5.0"})
    c = versus.compare(slow, planted("normal-1", "plain"))
    assert "onednn.version" in facts_named(work(c, ONEDNN_CONV))
    assert "onednn.version" not in facts_named(work(c, BLAS_GEMM))


@pytest.mark.parametrize("here, there, named", [
    ("debug", "release", True),  # one side only: a Debug build is slower
    ("debug", "debug", False),  # equal on both sides
    ("release", "debug", False),  # the slower side is the better-optimised one: no cause
    ("weird", "release", False),  # a build type the report does not rank
])
def test_the_build_type_is_read_in_its_direction(here, there, named):
    slow = planted("normal-1", "built", {BLAS_GEMM: 3.0}, **{"gapbench.build_type": here})
    fast = planted("normal-1", "other", **{"gapbench.build_type": there})
    w = work(versus.compare(slow, fast), BLAS_GEMM)
    assert ("gapbench.build_type" in facts_named(w)) is named, facts_named(w)


def test_another_compiler_is_read():
    slow = planted("normal-1", "built", {BLAS_GEMM: 2.0}, **{"gapbench.compiler": "clang 14.0.6"})
    w = work(versus.compare(slow, planted("normal-1", "plain")), BLAS_GEMM)
    assert "gapbench.compiler" in facts_named(w)


# ---- rows of two profiles are not paired -------------------------------------------------------

PIPELINE = "pipeline/none/cpu/produce_ms:1/consume_ms:4/depth:0/workers:1/real_time"


@pytest.mark.parametrize("batches_there, comparable", [(8, False), (4, True)])
def test_a_row_doing_other_work_per_iteration_is_not_paired(batches_there, comparable):
    """The pipeline runs 4 batches an iteration in the quick profile and 8 in the full, under
    one name: its items per iteration tell, whatever its time."""
    def side(label: str, batches: int) -> versus.Side:
        seconds = batches * 0.005
        return versus.Side.of(label, [in_memory(runs(PIPELINE, [seconds] * 3,
                                                     items_per_second=[200.0] * 3),
                                                **{"gapbench.method.pipeline": "1"})])
    (w,) = versus.compare(side("quick", 4), side("full", batches_there)).works
    assert (not w.pair.reasons) is comparable
    if not comparable:
        assert w.pair.reasons == ("other work per iteration: 4 items here, 8 there",)


# ---- a probe file that contradicts itself ------------------------------------------------------

PROBE = Path(__file__).parent / "data" / "versus" / "framework" / "torch-one-thread" / \
    "default-stack" / "framework-torch.json"


def probe_file(tmp_path: Path, name: str, rows_of: str) -> Path:
    """A committed torch probe file that says it is `name`'s, its rows made `rows_of`'s."""
    doc = json.loads(PROBE.read_text(encoding="utf-8"))
    doc["context"]["framework.name"] = name
    for row in doc["benchmarks"]:
        for key in ("name", "run_name"):
            if key in row:
                row[key] = row[key].replace("framework/torch/", f"framework/{rows_of}/")
    path = tmp_path / f"framework-{name}.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_a_probe_file_of_one_framework_holding_anothers_rows_is_refused(tmp_path):
    with pytest.raises(ResultsError) as err:
        load_results(probe_file(tmp_path, "torch", "tensorflow"))
    assert str(err.value).endswith(
        "framework-torch.json: its framework.name is torch, but it holds rows of tensorflow "
        "(framework/tensorflow/...): not one probe's file")
    assert load_results(probe_file(tmp_path, "tensorflow", "tensorflow")).context[
        "framework.name"] == "tensorflow"
    assert load_results(PROBE).context["framework.name"] == "torch"


def test_a_probe_file_of_a_framework_the_probe_does_not_measure_is_refused(tmp_path):
    with pytest.raises(ResultsError) as err:
        load_results(probe_file(tmp_path, "jax", "jax"))
    assert "framework.name 'jax' is no framework gapbench-probe measures (torch, tensorflow)" in \
        str(err.value)


def test_the_report_knows_the_frameworks_the_probe_measures():
    from gapbench_report.inputs import results  # noqa: PLC0415
    plan = Path(__file__).resolve().parents[2] / "probe" / "gapbench_probe" / "plan.py"
    (frameworks,) = [ast.literal_eval(node.value) for node in ast.parse(plan.read_text(
        encoding="utf-8")).body if isinstance(node, ast.Assign)
        and [t.id for t in node.targets if isinstance(t, ast.Name)] == ["FRAMEWORKS"]]
    assert results.PROBE_FRAMEWORKS == frameworks


# ---- a verdict in one breath, whatever the names -----------------------------------------------

def test_the_verdict_stays_within_its_length_with_a_long_name_and_both_directions():
    """A 200-character baseline name gave a 427-character verdict; one cause each way and the
    not-comparable line, 337."""
    long = "results-of-a-machine-" * 10
    slow = planted("sse41", "sse41", {ONEDNN_CONV: 0.2})
    there = planted("normal-1", long, {BLAS_GEMM: 0.5})
    c = versus.compare(slow, there)
    assert c.slower and c.faster
    said = versus.verdict(c)
    assert len(said) <= versus.VERDICT_CHARS, said
    assert long not in said and versus.shortened(long) in said
    assert versus.shortened("ci-cpu-2core") == "ci-cpu-2core"
    lines = [("Slower here in 9 of 30 works:", ["x" * 200]), ("Faster here in 2:", ["y" * 200]),
             ("3 not comparable (configured otherwise: see the list).", [])]
    cut = versus.bounded(lines)
    assert len(versus.verdict(cut)) <= versus.VERDICT_CHARS
    assert cut[1] == ("Faster here in 2 (their causes: see the list).", [])


def test_the_framework_verdict_stays_within_the_same_length(tmp_path, capsys):
    """The H100's torch against the H200's gave 573 characters: the causes lose their figures,
    the faster direction's first, and the list below keeps them."""
    from gapbench_report.render import command as render  # noqa: PLC0415
    baselines = Path(__file__).resolve().parents[2] / "results" / "baselines"
    out = tmp_path / "r"
    assert render.main(["render", str(baselines / "h100-ubuntu24.json"),
                        str(baselines / "h100-ubuntu24.framework-torch.json"), "--baseline",
                        str(baselines / "h200-ubuntu24.json"), "--out", str(out)]) == 0
    capsys.readouterr()
    (against,) = json.loads((out / "comparison.json").read_text())["comparisons"]
    (torch,) = against["framework"]
    assert len(torch["verdict"]) <= versus.VERDICT_CHARS, torch["verdict"]
    assert torch["verdict"].startswith("Your torch is slower here than on h200-ubuntu24: ")
    assert "(see the list)" in torch["verdict"]


# ---- one machine's ceiling that moved is no cause ------------------------------------------------

def test_between_runs_of_one_machine_a_ceiling_that_moved_explains_nothing():
    """Two runs of one 2-vCPU VM a minute apart: its SGEMM read 100 then 50 GFLOP/s and its
    GEMM rows 1.5x slower. The same hardware had the same limit: the difference is the machine's
    unsteadiness, with the ceiling's move as its evidence, never "bound by the CPU SGEMM"."""
    def run(label: str, gemm_s: float, sgemm: float, machine: str) -> versus.Side:
        flops = 2 * 1024 ** 3
        return versus.Side.of(label, [in_memory(
            runs(BLAS_GEMM, [gemm_s] * 3, flops=[flops / gemm_s] * 3)
            + runs("peak/sgemm/cpu/n:1024/real_time", [1.0] * 3, flops=[sgemm * 0.99, sgemm,
                                                                        sgemm * 1.01]),
            **{"gapbench.method.overhead": "1", "machine.id": machine})])
    one = work(versus.compare(run("later", 0.03, 50e9, "m"), run("first", 0.02, 100e9, "m")),
               BLAS_GEMM)
    assert not one.explanation.explained
    assert "its CPU SGEMM itself moved: 50 GFLOP/s here, 100 GFLOP/s there" in \
        one.explanation.unsteady
    assert versus.reading(one, "later", "first").startswith("the machine itself was unsteady")
    two = work(versus.compare(run("slow", 0.03, 50e9, "a"), run("fast", 0.02, 100e9, "b")),
               BLAS_GEMM)
    assert two.explanation.explained and two.explanation.ceiling  # two machines: a cause
