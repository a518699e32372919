"""versus.py on the real runs: the H100 against the H200, the CPU baseline against each GPU and
back, the fleet data's plain run against its run with oneDNN and OpenBLAS capped, and a run
against itself; then the rules one by one (the share explained, what makes two rows not
comparable, the GPU memory's bandwidth, the facts cited), and render with a baseline folder."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from gapbench_report import model, render, versus
from gapbench_report.machine_facts import Facts, Usual, differences
from gapbench_report.results import Benchmark, load_results, parse_name
from tests.synthetic import in_memory, runs

REPO = Path(__file__).resolve().parents[2]
BASELINES = REPO / "results" / "baselines"
FLEET = Path(__file__).parent / "data" / "fleet" / "this-machine"

D2D = "transfer/device/gpu/dir:d2d/mode:async/bytes:268435456/manual_time"
LAUNCH = "overhead/launch/gpu/what:launch/manual_time"
SMALL_LSTM = "lstm/cudnn/gpu/scope:seq/batch:64/input:50/hidden:64/steps:100/manual_time"
CONV_FP32 = "conv/cudnn/gpu/n:32/c:64/hw:56/k:64/r:3/stride:1/pad:1/math:fp32/manual_time"
GEMM_FP32 = "overhead/cublas/gpu/op:matmul/n:4096/manual_time"


def side(name: str) -> versus.Side:
    """A committed baseline (results/baselines/NAME.json) or a fleet run (a folder)."""
    if (FLEET / name).is_dir():
        files = [load_results(p) for p in sorted((FLEET / name).glob("*.json"))
                 if p.name != "doctor.json"]
        return versus.Side.of(name, files)
    return versus.Side.of(name, [load_results(BASELINES / f"{name}.json")])


@pytest.fixture(scope="module")
def sides() -> dict[str, versus.Side]:
    return {n: side(n) for n in ("h100-ubuntu24", "h200-ubuntu24", "ci-cpu-2core", "normal-1",
                                 "sse41")}


def work(c: versus.Comparison, name: str) -> versus.Work:
    (found,) = [w for w in c.works if w.pair.here.name == name]
    return found


# ---- the H100 against the H200 -----------------------------------------------------------------

def test_the_h100_against_the_h200(sides):
    c = versus.compare(sides["h100-ubuntu24"], sides["h200-ubuntu24"])
    assert (c.here.commit, c.there.commit) == ("c742a4a", "42634e8")  # context; provenance
    # Device-to-device copies: 0.71x, put down to the memory's bandwidth, 3352 against 4917 GB/s
    # (from the table of bus widths: the files predate gpu.memory_bus_width_bits).
    d2d = work(c, D2D)
    assert round(d2d.pair.speed, 2) == 0.71 and d2d.pair.differs
    e = d2d.explanation
    assert (e.ceiling, e.how) == ("gpu_memory", "fully") and 0.8 < e.share < 1.25
    assert round(e.here.value / 1e9) == 3352 and round(e.there.value / 1e9) == 4917
    assert "from gapbench's table" in e.here.source and e.facts == ()
    # The same kernel launch: 1.31x faster here, and nothing recorded explains it (the hosts'
    # SGEMM is within 10%, the H200's the higher; no fact that concerns it differs).
    launch = work(c, LAUNCH)
    assert round(launch.pair.speed, 2) == 1.31 and launch.pair.differs
    assert not launch.explanation.explained and launch.explanation.facts == ()
    assert versus.reading(launch, "this run", "h200-ubuntu24").startswith(
        "unexplained by the recorded facts (the CPU SGEMM differs by less than 10%: 210 "
        "GFLOP/s against 224 GFLOP/s)")
    # Pinned PCIe copies and the float32 GEMM: the same within 1-2%, no finding.
    pinned = [w for w in c.works if w.pair.here.name.startswith("transfer/pinned/")
              and "bytes:268435456" in w.pair.here.name]
    assert len(pinned) == 4
    for w in [*pinned, work(c, GEMM_FP32)]:
        assert abs(w.pair.speed - 1) < 0.02 and not w.pair.differs and not w.pair.reasons
        assert w not in c.slower + c.faster
    # The small cuDNN LSTM, 62 µs against 1.68 ms, is no machine difference: not comparable.
    lstm = work(c, SMALL_LSTM)
    assert lstm.pair.speed > 20 and lstm in c.not_comparable and lstm not in c.faster
    assert lstm.pair.reasons == (
        "algorithm: persist_static_small_h here, not named there",
        "math mode: fma here, not named there",
        "held here, unheld there (an unheld kernel time includes the host's launches)",
        "another gapbench (commit c742a4a here, 42634e8 there) labelled it otherwise")
    # cuDNN chose another float32 algorithm on each: not comparable either.
    assert work(c, CONV_FP32).pair.reasons[0] == \
        "algorithm: WINOGRAD_NONFUSED here, FFT_TILING there"
    line = versus.verdict(c)
    assert line.startswith(
        "Slower here than on h200-ubuntu24: device memory copies (256 MiB) (0.71x: GPU memory "
        "bandwidth (theoretical), 3.35 TB/s against 4.92 TB/s; and 1 more it explains); "
        "unexplained by the recorded facts: cuDNN's algorithm search (0.33x);")
    assert "Faster here: pageable h2d copies (256 MiB, async) (1.16x: host memory bandwidth " \
           "(one thread's read), 10.4 GB/s against 8.34 GB/s); unexplained by the recorded " \
           "facts: kernel launches (1.31x);" in line
    assert line.endswith("43 not comparable (configured otherwise: see the list).")


def test_the_h200_against_the_h100_is_the_same_read_the_other_way(sides):
    there = versus.compare(sides["h100-ubuntu24"], sides["h200-ubuntu24"])
    back = versus.compare(sides["h200-ubuntu24"], sides["h100-ubuntu24"])
    assert work(back, D2D).explanation.how == "fully"
    assert round(work(back, D2D).pair.speed, 2) == 1.40
    assert len(back.not_comparable) == len(there.not_comparable)
    assert {w.pair.here.name for w in back.slower} == {w.pair.here.name for w in there.faster}


# ---- a GPU against the CPU-only machine, and back ---------------------------------------------

@pytest.mark.parametrize("gpu", ["h100-ubuntu24", "h200-ubuntu24"])
def test_a_gpu_against_the_cpu_baseline_is_the_gpus_speed_up(sides, gpu):
    """No benchmark name is shared: every pair is the same work each machine did fastest, on
    its own device; the big layer's is explained by the GPU's float32 GEMM peak against the
    CPU's SGEMM, and the small works that the GPU's compute would make far faster are
    unexplained, not put down to it."""
    c = versus.compare(sides[gpu], sides["ci-cpu-2core"])
    assert c.works and all(w.pair.across_devices for w in c.works) and not c.not_comparable
    conv = work(c, CONV_FP32)
    assert 300 < conv.pair.speed < 600 and conv.pair.there.parsed.variant == "onednn"
    e = conv.explanation
    assert (e.ceiling, e.there_ceiling, e.how) == ("gemm:gpu:fp32", "gemm:cpu:fp32", "fully")
    assert versus.ceiling_text(e).startswith(
        "float32 GPU GEMM peak here, CPU SGEMM there: ")
    small = [w for w in c.faster if w.pair.speed < 100 and w.explanation.how == "beyond"]
    assert small and all(not w.explanation.explained for w in small)
    assert versus.verdict(c).startswith("Slower here than on ci-cpu-2core: ")  # 16x16 matmul
    back = versus.compare(sides["ci-cpu-2core"], sides[gpu])
    assert work(back, "conv/onednn/cpu/n:32/c:64/hw:56/k:64/r:3/stride:1/pad:1/real_time"
                ).explanation.how == "fully"
    assert versus.verdict(back).startswith(
        f"Slower here than on {gpu}: conv (n 32 · c 64 · hw 56 · k 64 · r 3 · stride 1 · pad 1)"
        " in float32: CPU onednn here, GPU cudnn there (")


# ---- the CPU against itself capped ---------------------------------------------------------------

def test_the_plain_run_against_the_capped_one(sides):
    """normal-1 against sse41 (oneDNN capped to SSE4.1, OpenBLAS to Nehalem's kernels): the
    OpenBLAS rows are explained by the CPU SGEMM, with the OpenBLAS facts of the capped run;
    oneDNN's, whose ceiling OpenBLAS's SGEMM is not, by its cap alone."""
    c = versus.compare(sides["sse41"], sides["normal-1"])
    matmul = work(c, "overhead/openblas/cpu/op:matmul/n:1024/real_time")
    assert matmul.pair.speed < 0.5 and matmul.explanation.ceiling == "gemm:cpu:fp32"
    assert matmul.explanation.how == "fully"
    assert [d.key for _, d in matmul.explanation.facts] == ["openblas.coretype", "openblas.core"]
    assert all(machine == "sse41" for machine, _ in matmul.explanation.facts)
    onednn = work(c, "conv/onednn/cpu/n:2/c:64/hw:56/k:64/r:3/stride:1/pad:1/real_time")
    assert onednn.pair.speed < 0.6 and not onednn.explanation.explained
    assert [d.key for _, d in onednn.explanation.facts] == ["onednn.isa_cap", "onednn.isa"]
    text = versus.reading(onednn, "sse41", "normal-1")
    assert text == ("here, its oneDNN was capped to an older instruction set (onednn.isa_cap "
                    "SSE41; not set on normal-1); here, oneDNN chose another instruction set "
                    "(onednn.isa sse41; avx512_core_bf16 on normal-1)")
    # The other way round, the same facts are the capped machine's, never the plain one's.
    back = versus.compare(sides["normal-1"], sides["sse41"])
    onednn = work(back, "conv/onednn/cpu/n:2/c:64/hw:56/k:64/r:3/stride:1/pad:1/real_time")
    assert onednn.pair.speed > 1.6 and all(m == "sse41" for m, _ in onednn.explanation.facts)
    assert versus.reading(onednn, "normal-1", "sse41").startswith(
        "on sse41, its oneDNN was capped to an older instruction set (onednn.isa_cap SSE41; "
        "not set here)")
    assert "Faster here: CPU openblas overhead (op matmul · n 16) (4.40x: CPU SGEMM, 21.9 " \
           "GFLOP/s against 6.6 GFLOP/s; on sse41, its OpenBLAS was forced to another CPU's " \
           "kernels (openblas.coretype Nehalem; not set here)" in versus.verdict(back)


def test_a_ceiling_the_other_way_overrules_the_facts(sides):
    """The dense step at batch 128 ran 3.9x faster under the Nehalem cap (the loaded machine's
    noise, or OpenBLAS's small-matrix path): the plain run's SGEMM is 3.3x the capped one's, so
    the OpenBLAS kernels that made it so explain nothing of it."""
    c = versus.compare(sides["normal-1"], sides["sse41"])
    dense = work(c, "overhead/openblas/cpu/op:dense/batch:128/real_time")
    assert dense.pair.speed < 0.3 and dense.explanation.how == "against"
    assert dense.explanation.facts == ()
    assert versus.reading(dense, "normal-1", "sse41") == (
        "unexplained by the recorded facts (the CPU SGEMM differs the other way: 21.9 GFLOP/s "
        "against 6.6 GFLOP/s)")


# ---- a run against itself ----------------------------------------------------------------------

@pytest.mark.parametrize("name", ["h100-ubuntu24", "ci-cpu-2core", "normal-1"])
def test_a_run_against_itself_differs_in_nothing(sides, name):
    c = versus.compare(sides[name], side(name))
    assert c.works and not c.slower and not c.faster and not c.not_comparable and not c.sizes
    assert all(w.pair.speed == 1 for w in c.works)
    assert versus.verdict(c) == (f"Nothing differs from {name} by more than 10% in the "
                                 f"{len(c.works)} works both ran.")


# ---- the rules, each on its own ----------------------------------------------------------------

def row(name: str, seconds: list[float], label: str = "", math_: str = "fp32") -> Benchmark:
    return Benchmark(name, parse_name(name), tuple(seconds), {}, {}, label=label, math=math_)


@pytest.mark.parametrize("ceiling, speed, how", [
    (0.68, 0.713, "fully"),  # the H100's copies: share 1.13
    (1.25, 1.16, "fully"),  # share 1.50, but what it leaves is within 10%
    (2.0, 1.5, "beyond"),  # share 1.71, and 33% left over: the ceilings differ far more
    (1.30, 2.0, "partly"),  # share 0.38
    (1.12, 4.0, "no"),  # share 0.08
    (1.05, 2.0, "no"),  # ceilings within 10% explain nothing
    (0.5, 2.0, "against"),
])
def test_how_much_a_ceiling_explains(ceiling, speed, how):
    share = versus.share_of(ceiling, speed)
    assert versus.how_much(share, ceiling / speed) == how


def test_the_share_bounds_either_side():
    speed = math.e  # ln(speed) = 1: the share is ln(ceiling ratio)
    for share, how in ((0.79, "partly"), (0.81, "fully"), (1.24, "fully"), (1.26, "beyond"),
                       (0.24, "no"), (0.26, "partly")):
        ratio = math.exp(share)
        assert versus.how_much(versus.share_of(ratio, speed), ratio / speed) == how, share


COMMITS = ("1111111", "2222222")


@pytest.mark.parametrize("here, there, commits, reason", [
    (row("conv/cudnn/gpu/n:1/manual_time", [1.0], "algo:GEMM math:fma"),
     row("conv/cudnn/gpu/n:1/manual_time", [1.0], "algo:FFT math:fma"), ("", ""),
     "algorithm: GEMM here, FFT there"),
    (row("conv/cudnn/gpu/n:1/math:fp16/manual_time", [1.0], "data:fp16 layout:nhwc", "fp16"),
     row("conv/cudnn/gpu/n:1/math:fp16/manual_time", [1.0], "data:fp16 layout:nchw", "fp16"),
     ("", ""), "layout: nhwc here, nchw there"),
    (row("conv/cudnn/gpu/n:1/manual_time", [1.0], math_="tf32"),
     row("conv/cudnn/gpu/n:1/manual_time", [1.0], math_="fp32"), ("", ""),
     "math: TF32 here, float32 there"),
    (row("lstm/cublas/gpu/steps:100/manual_time", [1.0], "unheld: 301 launches"),
     row("lstm/cublas/gpu/steps:100/manual_time", [1.0]), ("", ""),
     "unheld here, held there (an unheld kernel time includes the host's launches)"),
    (row("overhead/cublas/gpu/n:16/math:fp16/manual_time", [1.0], "cublasLt heuristic", "fp16"),
     row("overhead/cublas/gpu/n:16/math:fp16/manual_time", [1.0], "", "fp16"), COMMITS,
     "another gapbench (commit 1111111 here, 2222222 there) labelled it otherwise: "
     "\"cublasLt heuristic\" here, \"none\" there"),
])
def test_what_makes_two_rows_not_comparable(here, there, commits, reason):
    assert versus.configuration_differs(here, there, commits) == [reason]


def test_rows_alike_in_their_configuration_are_comparable():
    a = row("conv/cudnn/gpu/n:1/manual_time", [1.0], "algo:GEMM math:fma")
    assert versus.configuration_differs(a, a, COMMITS) == []  # another commit, the same label
    b = row("conv/cudnn/gpu/n:1/manual_time", [2.0], "algo:GEMM workspace_bytes:9 math:fma")
    assert versus.configuration_differs(a, b, ("", "")) == []  # one commit unknown


def test_a_difference_within_the_repetitions_spread_is_none():
    name = "transfer/device/gpu/dir:d2d/manual_time"
    assert versus.Pair(row(name, [1.0, 1.2, 1.5]), row(name, [1.3, 1.4])).differs is False
    assert versus.Pair(row(name, [1.0, 1.1]), row(name, [1.3, 1.4])).differs is True
    assert versus.Pair(row(name, [1.0]), row(name, [1.09])).differs is False  # within 10%


def test_the_gpu_memorys_bandwidth_from_what_a_run_recorded():
    recorded = {"gpu.memory_bandwidth_theoretical_gbps": "3352.3", "gpu.name": "NVIDIA H200"}
    assert versus.gpu_memory_bandwidth(recorded).value == 3352.3e9
    measured_width = {"gpu.clock_mem_max_mhz": "5001", "gpu.memory_bus_width_bits": "256",
                      "gpu.memory_bandwidth_theoretical_gbps": "unavailable (why)"}
    assert versus.gpu_memory_bandwidth(measured_width).value == pytest.approx(320.064e9)
    from_table = {"gpu.clock_mem_max_mhz": "3201", "gpu.name": "NVIDIA H200"}
    figure = versus.gpu_memory_bandwidth(from_table)
    assert round(figure.value / 1e9) == 4917 and "gapbench's table" in figure.source
    assert versus.gpu_memory_bandwidth({"gpu.clock_mem_max_mhz": "1000",
                                        "gpu.name": "Some Other GPU"}) is None


def test_facts_every_new_run_records_never_differ_from_a_file_without_them():
    old = Facts.of_context({"cpu.model": "Xeon"})
    new = Facts.of_context({"cpu.model": "Xeon", "host.clocksource": "tsc",
                            "cpu.signature": "unavailable (not x86)"})
    assert differences(new, Usual.of([old])) == []
    hpet = Facts.of_context({"cpu.model": "Xeon", "host.clocksource": "hpet"})
    (found,) = differences(hpet, Usual.of([new]))
    assert (found.key, found.value, found.others) == ("host.clocksource", "hpet", "tsc")


def test_a_library_fact_concerns_that_librarys_rows_alone():
    capped = {"onednn.isa_cap": "SSE41"}
    slow = versus.Side.of("capped", [in_memory(
        runs("conv/onednn/cpu/n:1/real_time", [2.0, 2.1]) + runs(
            "conv/naive/cpu/n:1/real_time", [2.0, 2.1]), **capped)])
    fast = versus.Side.of("plain", [in_memory(
        runs("conv/onednn/cpu/n:1/real_time", [1.0, 1.1]) + runs(
            "conv/naive/cpu/n:1/real_time", [1.0, 1.1]))])
    c = versus.compare(slow, fast)
    assert [d.key for _, d in work(c, "conv/onednn/cpu/n:1/real_time").explanation.facts] == \
        ["onednn.isa_cap"]
    assert work(c, "conv/naive/cpu/n:1/real_time").explanation.facts == ()


def test_variants_run_at_other_sizes_only_are_listed():
    here = versus.Side.of("quick", [in_memory(runs("conv/naive/cpu/n:2/c:64/real_time",
                                                   [1.0]))])
    there = versus.Side.of("full", [in_memory(runs("conv/naive/cpu/n:32/c:64/real_time",
                                                   [9.0]))])
    c = versus.compare(here, there)
    assert c.works == () and c.sizes == (("CPU naive conv", ["n 2 · c 64"], ["n 32 · c 64"]),)
    assert versus.verdict(c).endswith("1 not comparable (configured otherwise: see the list).")


# ---- in the report and on disk -----------------------------------------------------------------

def test_a_finding_says_what_the_comparison_says_of_its_benchmark():
    """The cause's benchmark (here pinned h2d copies at 64 MiB) against the same benchmark on
    the other machine, in the comparison's words: no second engine."""
    copy = "transfer/pinned/gpu/dir:h2d/mode:sync/bytes:67108864/manual_time"
    pageable = copy.replace("pinned", "pageable")
    mine = in_memory(runs(copy, [2.7e-3] * 3, bytes_per_second=[25e9] * 3)
                     + runs(pageable, [13e-3] * 3, bytes_per_second=[5e9] * 3),
                     **{"pcie.bandwidth_max_gbps": "31.5"})
    theirs = in_memory(runs(copy, [5.4e-3] * 3, bytes_per_second=[12.5e9] * 3),
                       **{"pcie.bandwidth_max_gbps": "15.75"})
    theirs = type(theirs)(Path("t4-colab.json"), theirs.context, theirs.entries)
    report = model.build_report([mine], [theirs])
    finding = next(f for f in report.findings if f.rule == "pageable_vs_pinned")
    assert finding.text.endswith(
        "Against t4-colab: 2.00x its speed there, the PCIe link (theoretical, per direction), "
        "31.5 GB/s against 15.8 GB/s.")


def test_render_with_a_folder_as_the_baseline(tmp_path, capsys):
    """A fleet node's folder (its results files and doctor.json) is one machine; the
    comparison is written beside the page, and a later render without a baseline takes it
    away."""
    out = tmp_path / "r"
    assert render.main(["render", str(FLEET / "sse41"), "--baseline", str(FLEET / "normal-1"),
                        "--out", str(out)]) == 0
    capsys.readouterr()
    doc = json.loads((out / "comparison.json").read_text(encoding="utf-8"))
    (against,) = doc["comparisons"]
    assert doc["this"]["label"] == "this run" and against["baseline"]["label"] == "normal-1"
    assert against["verdict"].startswith("Slower here than on normal-1: CPU openblas overhead")
    matmul = next(w for w in against["works"]
                  if w["this"]["name"] == "overhead/openblas/cpu/op:matmul/n:1024/real_time")
    assert matmul["comparable"] and matmul["differs"] and matmul["explained"] == "fully"
    assert matmul["ceiling"]["key"] == "gemm:cpu:fp32"
    assert matmul["ceiling"]["this"]["unit"] == "FLOP/s" and 0.8 <= matmul["share_explained"]
    assert [f["key"] for f in matmul["facts"]] == ["openblas.coretype", "openblas.core"]
    assert matmul["speed_ratio"] == matmul["baseline"]["seconds"] / matmul["this"]["seconds"]
    page = (out / "index.html").read_text(encoding="utf-8")
    assert "<h3>Against normal-1</h3>" in page and "versus-normal-1.png" not in page
    assert (out / "versus-normal-1.png").is_file() and (out / "machines.png").is_file()
    assert render.main(["render", str(FLEET / "sse41"), "--out", str(out)]) == 0
    assert not (out / "comparison.json").exists()


def test_comparison_json_holds_each_work_of_the_h100_against_the_h200(tmp_path, capsys):
    out = tmp_path / "r"
    assert render.main(["render", str(BASELINES / "h100-ubuntu24.json"), "--baseline",
                        str(BASELINES / "h200-ubuntu24.json"), "--out", str(out)]) == 0
    capsys.readouterr()
    (against,) = json.loads((out / "comparison.json").read_text())["comparisons"]
    works = {w["this"]["name"]: w for w in against["works"]}
    d2d = works[D2D]
    assert (d2d["ceiling"]["key"], d2d["explained"]) == ("gpu_memory", "fully")
    assert round(d2d["ceiling"]["this"]["value"] / 1e9) == 3352
    assert round(d2d["ceiling"]["baseline"]["value"] / 1e9) == 4917
    assert d2d["not_comparable_because"] == [] and round(d2d["speed_ratio"], 2) == 0.71
    lstm = works[SMALL_LSTM]
    assert not lstm["comparable"] and lstm["explained"] is None and len(
        lstm["not_comparable_because"]) == 4
    assert works[GEMM_FP32]["differs"] is False
    assert against["baseline"]["gapbench_commit"] == "42634e8"


def test_a_folder_with_no_results_file_is_refused(tmp_path, capsys):
    node = tmp_path / "node"
    node.mkdir()
    (node / "doctor.json").write_text("{}", encoding="utf-8")
    code = render.main(["render", str(BASELINES / "ci-cpu-2core.json"), "--baseline",
                        str(node), "--out", str(tmp_path / "r")])
    assert code == 2
    assert f"{node}: a folder with no results files (*.json) in it" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_the_charts_of_the_h100_against_the_h200(sides, tmp_path):
    """Each machine's ceilings side by side (those both have), and each differing work's ratio
    beside its ceiling's: the copies' 0.71x beside the memory's 0.68x."""
    from gapbench_report import plots  # noqa: PLC0415
    report = model.build_report([load_results(BASELINES / "h100-ubuntu24.json")],
                                [load_results(BASELINES / "h200-ubuntu24.json")])
    ceilings = plots.metrics_chart_data(report.ceiling_columns)
    memory = ceilings.names.index("GPU memory bandwidth (theoretical), GB/s")
    assert [round(v) for v in ceilings.values[memory]] == [3352, 4917]
    assert "float32 GPU GEMM peak, TFLOP/s" in ceilings.names
    (section,) = report.versus
    chart = plots.versus_chart_data(section.bars, section.label)
    d2d = chart.labels.index("device memory copies (256 MiB)\n  ceiling: GPU memory bandwidth "
                             "(theoretical)")
    assert round(chart.speeds[d2d], 2) == 0.71 and round(chart.ceilings[d2d], 2) == 0.68
    assert len(chart.labels) == min(len(section.bars), plots.machines.VERSUS_BARS)
    for png in (plots.metrics_chart(report.ceiling_columns, tmp_path / "machines"),
                plots.versus_chart(section.bars, section.label, tmp_path / "versus")):
        assert png.read_bytes().startswith(b"\x89PNG") and png.with_suffix(".svg").is_file()
    assert plots.versus_chart_data([], "nobody") is None
