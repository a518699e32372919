"""The hardware's own compute limits: the CPU's physical FLOP peak (peak/flops rows) that every
CPU row's share of peak and the above-ceiling check read, the GPU's theoretical peak from the
per-compute-capability table, and a family file read without its ceilings.

The CPU cases plant peak/flops rows of a chosen peak into copies of the committed CPU baseline
(ci-cpu-2core.json), its own peak/flops rows taken out, so that each case sets the peak its
library rows are judged against; `without_peak()` is that baseline as a file from before the
rows."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from gapbench_report.core import metrics
from gapbench_report.diagnose import rules as diagnose
from gapbench_report.inputs.results import check_results, load_results
from gapbench_report.render import command as render
from gapbench_report.render import model
from tests.synthetic import in_memory, runs, write

REPO = Path(__file__).resolve().parents[2]
BASELINES = REPO / "results" / "baselines"
CPU_BASELINE = BASELINES / "ci-cpu-2core.json"
SGEMM = "peak/sgemm/cpu/n:2048/real_time"
ONEDNN_CONV = "conv/onednn/cpu/n:32/c:64/hw:56/k:64/r:3/stride:1/pad:1/real_time"


def flops_rows(isa: str, math: str, per_thread: float, threads: tuple[int, ...] = (1, 2)
               ) -> list[dict]:
    """peak/flops/cpu rows of one ISA and math, `per_thread` FLOP/s a thread."""
    return [e for n in threads
            for e in runs(f"peak/flops/cpu/isa:{isa}/math:{math}/real_time/threads:{n}",
                          [0.1] * 3, flops=[per_thread * n] * 3)]


def planted(peak_fp32: float | None, *, extra: list[dict] = (), context: dict | None = None,
            drop: tuple[str, ...] = ()):
    """The committed CPU baseline, its own peak/flops rows replaced by rows whose fastest
    all-CPU float32 row is `peak_fp32` (AVX2; SSE4.1 a quarter of it; None: no such rows),
    `extra` entries added, `drop` rows removed."""
    data = json.loads(CPU_BASELINE.read_text(encoding="utf-8"))
    data["benchmarks"] = [e for e in data["benchmarks"] if e["run_name"] not in drop
                          and not e["run_name"].startswith("peak/flops/")]
    if peak_fp32 is not None:
        data["benchmarks"] += (flops_rows("avx2", "fp32", peak_fp32 / 2)
                               + flops_rows("sse41", "fp32", peak_fp32 / 8))
    data["benchmarks"] += list(extra)
    data["context"].update(context or {})
    return check_results(CPU_BASELINE, data)


def without_peak():
    """The committed CPU baseline as a file from before the peak/flops rows."""
    return planted(None)


def openblas_best() -> float:
    """OpenBLAS's fastest float32 row in the committed CPU baseline, FLOP/s (its share's
    numerator: metrics.cpu_library_shares)."""
    share, row = metrics.cpu_library_shares(
        list(planted(1e12).benchmarks().values()))["OpenBLAS"]
    return share * 1e12


def rate(results, name: str) -> float:
    return results.benchmarks()[name].counter("flops")


# ---- the CPU's physical peak ------------------------------------------------------------------

def test_the_physical_peak_is_the_fastest_row_of_its_math_at_all_cpus():
    entries = (flops_rows("sse41", "fp32", 2e10) + flops_rows("avx2", "fp32", 9e10)
               + flops_rows("avx2", "bf16", 5e11, threads=(1,)))
    # A one-thread row faster than every all-CPU row (a turbo clock) is not the machine's peak.
    entries += runs("peak/flops/cpu/isa:avx512/math:fp32/real_time/threads:1", [0.1] * 3,
                    flops=[1.9e11] * 3)
    benchmarks = list(in_memory(entries).benchmarks().values())
    peak = metrics.cpu_flop_peak(benchmarks, "fp32")
    assert peak.name == "peak/flops/cpu/isa:avx2/math:fp32/real_time/threads:2"
    assert metrics.cpu_peak_words(peak) == "this CPU's float32 AVX2 FMA peak on 2 CPUs"
    assert metrics.cpu_flop_peak(benchmarks, "bf16").counter("flops") == 5e11
    assert metrics.cpu_flop_peak(benchmarks, "fp16") is None
    # A skipped ISA is never the peak.
    from tests.synthetic import skipped
    only_skips = skipped("peak/flops/cpu/isa:avx512/math:fp32/real_time/threads:2", "no AVX-512")
    assert metrics.cpu_flop_peak(list(in_memory(only_skips).benchmarks().values()),
                                 "fp32") is None


def test_every_cpu_librarys_share_is_read_against_the_physical_peak():
    """OpenBLAS's SGEMM becomes a library row with its own share; the conv's portable share is
    against the physical peak, not OpenBLAS's."""
    results = planted(200e9)
    shares = metrics.cpu_library_shares(list(results.benchmarks().values()))
    blas, onednn = shares["OpenBLAS"], shares["oneDNN"]
    assert blas[0] == pytest.approx(openblas_best() / 200e9)
    assert onednn[1].name.startswith("conv/onednn/cpu/")
    ratios = metrics.portable_metrics(results)
    conv = ratios["conv n 32 · c 64 · hw 56 · k 64 · r 3, fastest float32 library: share of "
                  "its CPU's float32 FMA peak"]
    assert conv == pytest.approx(rate(results, ONEDNN_CONV) / 200e9)
    assert not any("SGEMM peak" in k for k in ratios)
    # Without the peak rows (a file from before them), the SGEMM stays the ceiling.
    old = without_peak()
    assert any("share of its device's SGEMM peak" in k for k in metrics.portable_metrics(old))


def test_the_page_shows_each_library_against_the_cpus_limit(tmp_path):
    results = planted(200e9)
    report = model.build_report([results], [])
    rows = {(r[0], r[2]): r for r in report.compute_peaks}
    blas = f"{openblas_best() / 200e9:.0%}"
    onednn = f"{metrics.cpu_library_shares(list(results.benchmarks().values()))['oneDNN'][0]:.0%}"
    assert rows["CPU, float32", "OpenBLAS"][4] == blas
    assert "AVX2 FMA" in rows["CPU, float32", "OpenBLAS"][5]
    assert rows["CPU, float32", "oneDNN"][1] == "200 GFLOP/s"
    assert report.compute_peaks_line == (
        f"OpenBLAS reaches {blas} of this CPU's float32 AVX2 FMA peak on 2 CPUs (its Zen "
        f"kernels, chosen for this CPU); oneDNN reaches {onednn}.")
    # A file from before the rows: the limit is unknown, and says why.
    (old,) = model.build_report([without_peak()], []).compute_peaks
    assert old[1] == "unknown" and "no peak/flops row" in old[5]
    summary_dir = tmp_path / "r"
    render.render([results], [], summary_dir)
    summary = (summary_dir / "summary.md").read_text(encoding="utf-8")
    assert "### Each library against the hardware's limit" in summary
    assert report.compute_peaks_line in summary


# ---- the slow BLAS ------------------------------------------------------------------------

def slow_blas(results):
    return [f for f in diagnose.diagnose([results]) if f.rule == "slow_blas"]


def test_a_blas_far_below_the_cpus_limit_is_a_finding_priced_by_the_best_library():
    """OpenBLAS's best row (openblas_best) just under and just over
    SLOW_BLAS_SHARE of the physical peak; a oneDNN conv planted at 95% of that peak prices it
    (the issue's case: OpenBLAS's Haswell kernels forced on an AVX-512 CPU, oneDNN near the
    peak)."""
    best = openblas_best()
    context = {"openblas.core": "Haswell", "openblas.coretype": "Haswell"}

    def case(share):
        peak = best / share
        return planted(peak, context=context, extra=runs(
            ONEDNN_CONV.replace("n:32", "n:2"), [1e-3] * 3, flops=[0.95 * peak] * 3))
    assert slow_blas(case(diagnose.SLOW_BLAS_SHARE + 0.01)) == []
    (finding,) = slow_blas(case(diagnose.SLOW_BLAS_SHARE - 0.01))
    assert finding.title == "OpenBLAS reaches 59% of this CPU's float32 peak"
    assert "its Haswell kernels, forced by OPENBLAS_CORETYPE=Haswell" in finding.text
    assert "oneDNN reaches 95%" in finding.text and "Unset OPENBLAS_CORETYPE" in finding.text
    # Priced: at oneDNN's share OpenBLAS's work would be 0.95 / 0.59 times faster.
    assert finding.impact == pytest.approx(0.95 / (diagnose.SLOW_BLAS_SHARE - 0.01), rel=1e-3)
    assert finding.cause.startswith("a slow BLAS (OpenBLAS at 59%")
    # Without the forcing recorded, it names the kernels OpenBLAS chose and no variable.
    (finding,) = slow_blas(planted(best / 0.5))
    assert "its Zen kernels, chosen for this CPU" in finding.text
    assert "OPENBLAS_CORETYPE" not in finding.text


def test_a_slow_blas_that_no_library_beats_is_said_unpriced():
    onednn = [n for n in json.loads(CPU_BASELINE.read_text())["benchmarks"]
              if "/onednn/" in n["run_name"]]
    results = planted(openblas_best() / 0.5, drop=tuple({e["run_name"] for e in onednn}))
    (finding,) = slow_blas(results)
    assert finding.impact is None and "not priced" in finding.text


# ---- the above-ceiling self-check on the CPU ----------------------------------------------

def above(results, files=()):
    return [f for f in diagnose.diagnose([results, *files]) if f.rule == "above_ceiling"]


def test_onednn_is_judged_against_the_physical_peak_either_side_of_its_margin():
    """A oneDNN conv planted at 300 GFLOP/s, the file's fastest CPU row, just under and just
    over PHYSICAL_MARGIN times the physical peak."""
    fast = ONEDNN_CONV.replace("n:32", "n:2")
    extra = runs(fast, [1e-3] * 3, flops=[3e11] * 3)
    for e in extra:
        e["label"] = "jit:avx2, reorders input and output"
    margin = diagnose.PHYSICAL_MARGIN
    assert above(planted(3e11 / (margin - 0.01), extra=extra)) == []
    (finding,) = above(planted(3e11 / (margin + 0.01), extra=extra))
    assert finding.defect and finding.subject == fast
    assert "the CPU's float32 peak" in finding.title
    assert "oneDNN's kernels" in finding.text and "AVX2 FMA" in finding.text


def test_a_peak_that_other_work_lowered_is_held_to_its_best_not_its_median():
    """A shared 2-vCPU VM: the peak's 2-thread repetitions read 107-161 GFLOP/s (median 122) and
    the 1-thread row a steady 102-108; a oneDNN row at 173 is honest. Noise only ever lowers a
    peak, so the bound is the best repetition, or one CPU's best x 2 where that is more (216)."""
    fast = ONEDNN_CONV.replace("n:32", "n:2")

    def case(row_flops: float) -> list:
        data = json.loads(CPU_BASELINE.read_text(encoding="utf-8"))
        data["benchmarks"] = [e for e in data["benchmarks"]
                              if not e["run_name"].startswith("peak/flops/")]
        name = "peak/flops/cpu/isa:avx2/math:fp32/real_time/threads:{}"
        data["benchmarks"] += runs(name.format(2), [0.1] * 3, flops=[107e9, 122e9, 161e9])
        data["benchmarks"] += runs(name.format(1), [0.1] * 3, flops=[102e9, 105e9, 108e9])
        extra = runs(fast, [1e-3] * 3, flops=[row_flops] * 3)
        for e in extra:
            e["label"] = "jit:avx2"
        data["benchmarks"] += extra
        return above(check_results(CPU_BASELINE, data))

    assert [f.subject for f in case(173e9)] == []  # 1.42x the median, within the bound
    (finding,) = [f for f in case(250e9) if f.subject == fast]  # past 1.1 x 216
    assert "216 GFLOP/s, one CPU's best repetition x 2" in finding.text


def test_openblas_sgemm_above_the_physical_peak_is_gapbenchs_defect():
    sgemm = rate(without_peak(), SGEMM)
    found = above(planted(sgemm / 1.5))
    assert SGEMM in {f.subject for f in found}
    assert all("peak/flops" not in f.subject for f in found)  # the peak is not judged


def test_a_winograd_row_whose_label_says_so_may_pass_the_physical_peak():
    wino = "conv/onednn/cpu/n:32/c:64/hw:56/k:64/r:3/stride:1/pad:1/algo:wino/real_time"
    extra = runs(wino, [1e-3] * 3, flops=[5e11] * 3)
    for e in extra:
        e["label"] = "jit_wino_4x3:avx512_core, reorders input"
    results = planted(2.5e11, extra=extra)
    assert wino not in {f.subject for f in above(results)}
    # The same rate with a direct kernel's label is flagged.
    for e in extra:
        e["label"] = "brgconv:avx512_core"
    assert wino in {f.subject for f in above(planted(2.5e11, extra=extra))}


def test_a_capped_peak_judges_no_library_the_cap_does_not_bind():
    """GAPBENCH_MAX_CPU_ISA=sse41 on an AVX2 CPU, OpenBLAS on its own kernels: OpenBLAS passes
    the SSE4.1 loop's peak honestly. No defect is raised against it (the SGEMM rule judges,
    as in a file without the peak), and the words say the peak was capped."""
    from tests.synthetic import skipped
    capped = [e for n in (1, 2) for e in skipped(
        f"peak/flops/cpu/isa:avx2/math:fp32/real_time/threads:{n}",
        "this CPU lacks AVX2 (GAPBENCH_MAX_CPU_ISA=sse41 caps it at sse41)")]
    data = json.loads(CPU_BASELINE.read_text(encoding="utf-8"))
    data["benchmarks"] = [e for e in data["benchmarks"]
                          if not e["run_name"].startswith("peak/flops/")]
    data["benchmarks"] += flops_rows("sse41", "fp32", openblas_best() / 4) + capped
    results = check_results(CPU_BASELINE, data)
    benchmarks = list(results.benchmarks().values())
    assert metrics.cpu_flop_cap(benchmarks) == "sse41"
    assert above(results) == []
    assert "(GAPBENCH_MAX_CPU_ISA=sse41 capped it)" in model.build_report(
        [results], []).compute_peaks_line
    assert metrics.cpu_flop_cap(list(load_results(CPU_BASELINE).benchmarks().values())) is None


def test_the_committed_cpu_baseline_is_within_its_own_peak():
    """Measured, not planted: every library row of the CPU baseline at or below its FMA peak
    (none above the self-check's margin), and OpenBLAS far from slow on its own kernels."""
    results = load_results(CPU_BASELINE)
    assert metrics.cpu_flop_peak(list(results.benchmarks().values()), "fp32") is not None
    assert above(results) == [] and slow_blas(results) == []


def test_without_the_physical_peak_the_cpu_keeps_the_sgemm_rule():
    """A file from before peak/flops: im2col with OpenBLAS against 1.25x the SGEMM, oneDNN
    unjudged (the committed baseline's oneDNN at 0.96x SGEMM raises nothing either way)."""
    assert above(without_peak()) == []


# ---- the ceilings in another file (peak once per workflow) --------------------------------

def family_and_peak(tmp_path, peak_name="peak.json", write_peak=True):
    conv = runs("conv/onednn/cpu/n:1/c:64/hw:56/k:64/r:3/stride:1/pad:1/real_time", [1e-3] * 3,
                flops=[3e11] * 3)
    family = write(tmp_path / "conv.json", conv, **{metrics.PEAK_FILE_KEY: peak_name})
    peak = (write(tmp_path / "peak.json", flops_rows("avx2", "fp32", 1e11)
                  + runs(SGEMM, [0.1] * 3, flops=[1.4e11] * 3))
            if write_peak else None)
    return load_results(family), (load_results(peak) if peak else None)


def test_a_family_file_is_judged_against_the_peak_file_it_names(tmp_path):
    family, peak = family_and_peak(tmp_path)
    assert metrics.ceilings_missing(family, [family, peak]) is None
    assert [f.subject for f in above(family, [peak])] == [
        "conv/onednn/cpu/n:1/c:64/hw:56/k:64/r:3/stride:1/pad:1/real_time"]
    row = model.ceilings_rows([family, peak])[0]
    assert row[1] == "200 (±0%)" and row[-1].endswith("ceilings from peak.json")


def test_a_file_read_without_its_ceilings_says_so_in_one_line(tmp_path):
    family, peak = family_and_peak(tmp_path)
    # Named, in its folder, but not given.
    line = metrics.ceilings_missing(family, [family])
    assert "conv.json (conv) is read without its ceilings" in line
    assert "pass it too" in line and "share of peak is unknown" in line
    report = model.build_report([family], [])
    assert [n for n in report.notes if "without its ceilings" in n] == [line]
    assert report.ceilings[0][-1].startswith("unknown")
    assert above(family) == []  # nothing to judge against, and no crash
    # Named, and nowhere.
    (tmp_path / "peak.json").unlink()
    assert "nor beside it" in metrics.ceilings_missing(family, [family])
    # No peak rows and no file named.
    bare = in_memory(runs("conv/onednn/cpu/n:1/real_time", [1e-3] * 3))
    assert "names no file of them" in metrics.ceilings_missing(bare, [bare])
    # The page renders, the note in it.
    index = render.render([family], [], tmp_path / "r")
    assert "read without its ceilings" in index.read_text(encoding="utf-8")


def peak_file_at(path: Path, per_thread: float = 1e11, **context: str):
    path.parent.mkdir(parents=True, exist_ok=True)
    return load_results(write(path, flops_rows("avx2", "fp32", per_thread)
                              + runs(SGEMM, [0.1] * 3, flops=[1.4e11] * 3), **context))


def test_a_peak_path_with_a_folder_in_it_is_found_once_given(tmp_path):
    family, _ = family_and_peak(tmp_path, peak_name="peaks/peak.json", write_peak=False)
    peak = peak_file_at(tmp_path / "peaks" / "peak.json")
    assert "pass it too" in metrics.ceilings_missing(family, [family])
    assert metrics.ceilings_missing(family, [family, peak]) is None  # it was never matched
    assert metrics.peak_rows(family, [family, peak])


def test_of_two_peak_files_of_one_name_the_one_beside_is_used(tmp_path):
    family, beside = family_and_peak(tmp_path)
    elsewhere = peak_file_at(tmp_path / "other" / "peak.json", per_thread=1e9)
    for files in ([family, elsewhere, beside], [family, beside, elsewhere]):
        peak = metrics.cpu_flop_peak(metrics.judged_benchmarks(family, files), "fp32")
        assert peak.counter("flops") == 2e11  # beside's all-CPU row, not elsewhere's 2e9
    # Only the other one given: not this run's, and said so.
    assert metrics.peak_rows(family, [family, elsewhere]) is None
    assert "pass it too" in metrics.ceilings_missing(family, [family, elsewhere])


@pytest.mark.parametrize("key, its, mine, words", [
    ("machine.id", "another-machine", None,
     "has machine.id another-machine, this file test-machine: its ceilings are another "
     "machine's, not this run's"),
    ("openblas.coretype", "Prescott", None,
     "has openblas.coretype Prescott, this file unset: its ceilings are another setting's"),
    ("onednn.isa_cap", "SSE41", None, "has onednn.isa_cap SSE41, this file unset"),
    ("onednn.isa_cap", None, "AVX2", "has onednn.isa_cap unset, this file AVX2"),
])
def test_a_peak_file_of_another_machine_or_cap_is_refused_and_said(tmp_path, key, its, mine,
                                                                   words):
    conv = runs("conv/onednn/cpu/n:1/c:64/hw:56/k:64/r:3/stride:1/pad:1/real_time", [1e-3] * 3,
                flops=[3e11] * 3)
    family = load_results(write(tmp_path / "conv.json", conv, **{
        metrics.PEAK_FILE_KEY: "peak.json", **({key: mine} if mine else {})}))
    peak = peak_file_at(tmp_path / "peak.json", **({key: its} if its else {}))
    assert metrics.peak_rows(family, [family, peak]) is None  # never judged by it silently
    line = metrics.ceilings_missing(family, [family, peak])
    assert words in line and "conv.json (conv) is read without its ceilings" in line
    assert above(family, [peak]) == []  # no "379% of the hardware's limit"


# ---- the GPU's theoretical peak -------------------------------------------------------------

def gpu(cc: str, sms: int, mhz: float, **more: str) -> dict:
    return {"gpu.compute_capability": cc, "gpu.sm_count": str(sms),
            "gpu.clock_sm_mhz": str(mhz), **more}


# Datasheet dense figures (TFLOP/s; NVIDIA's sparse tensor figures halved) at the clock each
# datasheet computes them at: the table times the SMs and that clock must give them.
DATASHEETS = [
    # H100 SXM5: 132 SMs; fp32 67 at its 1980 MHz boost; tf32 989 and fp16/bf16 1979 with
    # sparsity, computed at 1830 MHz, the H100 whitepaper's boost clock for tensor-core work.
    ("H100 SXM", gpu("9.0", 132, 1980), "fp32", 66.9),
    ("H100 SXM", gpu("9.0", 132, 1830), "tf32", 989.4 / 2),
    ("H100 SXM", gpu("9.0", 132, 1830), "fp16", 1978.9 / 2),
    ("H100 SXM", gpu("9.0", 132, 1830), "bf16", 1978.9 / 2),
    # The H200 is the same GH100 with 132 SMs and the same datasheet figures.
    ("H200", gpu("9.0", 132, 1980), "fp32", 66.9),
    ("H200", gpu("9.0", 132, 1830), "bf16", 1978.9 / 2),
    ("A100", gpu("8.0", 108, 1410), "fp32", 19.5),
    ("A100", gpu("8.0", 108, 1410), "tf32", 156),
    ("A100", gpu("8.0", 108, 1410), "fp16", 312),
    ("V100 SXM2", gpu("7.0", 80, 1530), "fp32", 15.7),
    ("V100 SXM2", gpu("7.0", 80, 1530), "fp16", 125),
    ("T4", gpu("7.5", 40, 1590), "fp32", 8.1),
    ("T4", gpu("7.5", 40, 1590), "fp16", 65),
    ("A40", gpu("8.6", 84, 1740), "fp32", 37.4),
    ("A40", gpu("8.6", 84, 1740), "fp16", 149.7),
    ("L40", gpu("8.9", 142, 2490), "fp32", 90.5),
    ("L40", gpu("8.9", 142, 2490), "fp16", 181),
    ("L4", gpu("8.9", 60, 2040), "tf32", 31.3),
    ("L4", gpu("8.9", 60, 2040), "fp16", 62.7),
    # B200: 148 SMs; fp32 75 at 1980 MHz; dense tensor figures at its 1860 MHz tensor clock.
    ("B200", gpu("10.0", 148, 1980), "fp32", 75.0),
    ("B200", gpu("10.0", 148, 1860), "tf32", 1130),
    ("B200", gpu("10.0", 148, 1860), "bf16", 2250),
    ("RTX PRO 6000 Blackwell", gpu("12.0", 188, 2617), "fp32", 126),
    ("RTX PRO 6000 Blackwell", gpu("12.0", 188, 2617), "fp16", 503.8),
    ("RTX PRO 6000 Blackwell", gpu("12.0", 188, 2617), "tf32", 251.9),
]


@pytest.mark.parametrize("board, context, math, teraflops", DATASHEETS,
                         ids=[f"{d[0]}-{d[2]}" for d in DATASHEETS])
def test_the_gpu_table_gives_each_datasheets_dense_figure(board, context, math, teraflops):
    assert metrics.gpu_theoretical_flops(context, math) == pytest.approx(teraflops * 1e12,
                                                                         rel=0.01)


def test_every_listed_capability_has_every_math():
    for cc in ("7.0", "7.5", "8.0", "8.6", "8.9", "9.0", "10.0", "12.0"):
        assert set(metrics.GPU_FLOP_PER_SM_CLOCK[cc]) == {"fp32", "tf32", "fp16", "bf16"}
    # No tensor-core TF32 before Ampere: no theoretical figure, not float32's.
    assert metrics.gpu_theoretical_flops(gpu("7.5", 40, 1590), "tf32") is None


def test_the_clock_during_the_run_else_the_maximum_said_so():
    context = gpu("9.0", 132, 1500, **{"gpu.clock_sm_max_mhz": "1980"})
    assert metrics.gpu_theoretical_flops(context, "fp32") == pytest.approx(132 * 1500e6 * 256)
    assert "during the run" in metrics.gpu_clock(context).source
    del context["gpu.clock_sm_mhz"]
    assert metrics.gpu_theoretical_flops(context, "fp32") == pytest.approx(132 * 1980e6 * 256)
    assert "maximum clock" in metrics.gpu_clock(context).source
    del context["gpu.clock_sm_max_mhz"]
    assert metrics.gpu_theoretical_flops(context, "fp32") is None
    assert metrics.gpu_theoretical_missing(context) == [
        "gpu.clock_sm_mhz (or gpu.clock_sm_max_mhz)"]
    assert metrics.gpu_theoretical_missing({"gpu.compute_capability": "6.1"}) == [
        "compute capability 6.1 not in the table", "gpu.sm_count",
        "gpu.clock_sm_mhz (or gpu.clock_sm_max_mhz)"]


@pytest.mark.parametrize("name, shares", [
    # cuBLAS's fastest GEMM of each math over 132 SMs x 1980 MHz (the clock the context
    # recorded) x the table: float32 51.7 of 66.9 TFLOP/s; the tensor maths lower, as the
    # tensor cores do not hold 1980 MHz under load (the datasheet counts them at 1830).
    ("h100-ubuntu24", {"float32": 0.773, "TF32": 0.670, "fp16": 0.627, "bf16": 0.657}),
    ("h200-ubuntu24", {"float32": 0.767, "TF32": 0.682, "fp16": 0.607, "bf16": 0.642}),
])
def test_cublas_share_of_the_theoretical_peak_on_the_committed_gpus(name, shares):
    results = load_results(BASELINES / f"{name}.json")
    ratios = metrics.portable_metrics(results)
    for math, share in shares.items():
        key = f"GPU cuBLAS {math} GEMM: share of the GPU's theoretical peak"
        assert ratios[key] == pytest.approx(share, abs=0.001), key
    rows = {r[0]: r for r in model.build_report([results], []).compute_peaks}
    assert rows["GPU, float32"][1] == "66.9 TFLOP/s" and rows["GPU, float32"][4] == "77%"
    assert "132 SMs × 1980 MHz (clock during the run" in rows["GPU, float32"][5]


def test_a_gpu_file_without_the_facts_says_which_are_missing():
    results = load_results(BASELINES / "h100-ubuntu24.json")
    data = {"context": {k: v for k, v in results.context.items()
                        if k not in ("gpu.sm_count", "gpu.clock_sm_mhz", "gpu.clock_sm_max_mhz")},
            "benchmarks": [copy.deepcopy(e.raw) for e in results.entries]}
    older = check_results(results.path, data)
    rows = {r[0]: r for r in model.build_report([older], []).compute_peaks}
    assert rows["GPU, float32"][1] == "unknown" and rows["GPU, float32"][4] == "unknown"
    assert rows["GPU, float32"][5] == ("unknown: gpu.sm_count, gpu.clock_sm_mhz (or "
                                       "gpu.clock_sm_max_mhz) missing from the context")
    assert not any("theoretical" in k for k in metrics.portable_metrics(older))
