"""The framework family beside the libraries: the one mapping (TWINS) pairs each framework
benchmark with the library benchmarks of the same work and shape, and the report shows them."""

from __future__ import annotations

from gapbench_report.check import command as check
from gapbench_report.core import framework
from gapbench_report.core.formats import fmt_ratio
from gapbench_report.core.run_model import Run
from gapbench_report.render import command as render
from gapbench_report.render import model
from tests.synthetic import in_memory, runs, skipped

TORCH = {"framework.name": "torch", "framework.version": "2.9.0", "framework.status": "ok"}
CONV = "n:2/c:64/hw:56/k:64/r:3/stride:1/pad:1"
LSTM_STEP = "scope:step/batch:64/input:50/hidden:64/steps:100"


def fw(op_axes: str, seconds: float, device: str = "cpu", name: str = "torch") -> list[dict]:
    return runs(f"framework/{name}/{device}/op:{op_axes}/real_time", [seconds] * 3)


def lib(name: str, seconds: float) -> list[dict]:
    timing = "manual_time" if "/gpu/" in name else "real_time"
    return runs(f"{name}/{timing}", [seconds] * 3)


def paired(*entries: list[dict]) -> dict[str, framework.Pair]:
    benchmarks = in_memory([e for group in entries for e in group]).benchmarks().values()
    return {p.framework.name: p for p in framework.pairs(benchmarks)}


def test_conv_pairs_with_the_fastest_library_of_the_same_shape_and_device():
    found = paired(fw(f"conv/{CONV}", 4e-3), fw(f"conv/{CONV}", 1e-3, "gpu"),
                   lib(f"conv/onednn/cpu/{CONV}", 2e-3), lib(f"conv/im2col_blas/cpu/{CONV}", 3e-3),
                   lib(f"conv/onednn/cpu/{CONV}/math:bf16", 1e-4),  # another precision: never
                   lib(f"conv/naive/cpu/{CONV}", 1e-5),  # not a library
                   lib("conv/onednn/cpu/n:32/c:64/hw:56/k:64/r:3/stride:1/pad:1", 1e-5),
                   lib(f"conv/cudnn/gpu/{CONV}/math:fp32", 8e-4))
    cpu = found[f"framework/torch/cpu/op:conv/{CONV}/real_time"]
    assert cpu.library.name == f"conv/onednn/cpu/{CONV}/real_time" and cpu.ratio == 2.0
    gpu = found[f"framework/torch/gpu/op:conv/{CONV}/real_time"]
    assert gpu.library.parsed.variant == "cudnn" and gpu.ratio == 1.25
    assert framework.library_words(gpu.library.parsed.variant) == "cuDNN"


def test_an_lstm_step_pairs_with_the_library_steps_that_also_project_the_input():
    found = paired(fw(f"lstm/{LSTM_STEP}", 1e-4), fw(f"lstm/{LSTM_STEP}/mode:compiled", 5e-5),
                   lib(f"lstm/blas/cpu/{LSTM_STEP}", 1e-6), lib(f"lstm/onednn/cpu/{LSTM_STEP}",
                                                               5e-5))
    eager = found[f"framework/torch/cpu/op:lstm/{LSTM_STEP}/real_time"]
    assert eager.library.parsed.variant == "onednn" and eager.ratio == 2.0
    compiled = found[f"framework/torch/cpu/op:lstm/{LSTM_STEP}/mode:compiled/real_time"]
    assert compiled.compiled and compiled.ratio == 1.0


def test_copies_pair_with_the_synchronous_copy_of_the_same_memory():
    size = 64 * 2**20
    found = paired(fw(f"copy/dir:h2d/memory:pinned/bytes:{size}", 3e-3, "gpu"),
                   fw(f"copy/dir:h2d/memory:pageable/bytes:{size}", 9e-3, "gpu"),
                   lib(f"transfer/pinned/gpu/dir:h2d/mode:sync/bytes:{size}", 2.5e-3),
                   lib(f"transfer/pinned/gpu/dir:h2d/mode:async/bytes:{size}", 2e-3),
                   lib(f"transfer/pageable/gpu/dir:h2d/mode:sync/bytes:{size}", 6e-3))
    assert {p.library.name: round(p.ratio, 2) for p in found.values()} == {
        f"transfer/pinned/gpu/dir:h2d/mode:sync/bytes:{size}/manual_time": 1.2,
        f"transfer/pageable/gpu/dir:h2d/mode:sync/bytes:{size}/manual_time": 1.5}


def test_what_has_no_twin_has_no_row():
    found = paired(fw("sumsq/style:elementwise/rows:10000/cols:100", 0.05),
                   fw("sumsq/style:vectorized/rows:10000/cols:100", 1e-4),
                   lib("preprocess/elementwise/cpu/op:sumsq/rows:10000/cols:100", 1e-3),
                   lib("preprocess/vectorized/cpu/op:sumsq/rows:10000/cols:100", 5e-5),
                   fw("pipeline/produce_ms:2/consume_ms:2/depth:0/workers:1", 4e-3),
                   lib("pipeline/none/cpu/produce_ms:2/consume_ms:2/depth:0/workers:1", 4e-3),
                   fw("matmul/n:16", 4e-6))  # gapbench did not run this size
    assert list(found) == ["framework/torch/cpu/op:sumsq/style:vectorized/rows:10000/cols:100/"
                           "real_time"]


def test_headlines_give_each_op_at_its_largest_size_eager():
    pairs = framework.pairs(in_memory(
        fw("matmul/n:16", 4e-6) + fw("matmul/n:1024", 1.1e-2) + fw(f"conv/{CONV}", 4e-3)
        + fw("dense/batch:32/mode:compiled", 1e-4) + fw("dense/batch:32", 9e-4)
        + lib("overhead/openblas/cpu/op:matmul/n:16", 1e-7)
        + lib("overhead/openblas/cpu/op:matmul/n:1024", 1e-2)
        + lib(f"conv/onednn/cpu/{CONV}", 2e-3)
        + lib("overhead/openblas/cpu/op:dense/batch:32", 3e-4)).benchmarks().values(),
        {"torch": {"framework.version": "2.9.0"}})
    assert framework.headlines(pairs) == [
        "torch 2.9.0 on the CPU takes, at each op's largest size, this many times the library's "
        "time: matmul 1.1x (OpenBLAS), conv 2x (oneDNN), dense 3x (OpenBLAS)"]
    assert fmt_ratio(332.4) == "332x" and fmt_ratio(1.234) == "1.23x"


def test_the_largest_shape_is_judged_by_the_shape_not_stride_or_pad():
    wide = "n:2/c:256/hw:56/k:64/r:1/stride:1/pad:0"  # more work than CONV, and pad 0
    pairs = framework.pairs(in_memory(
        fw(f"conv/{CONV}", 4e-3) + fw(f"conv/{wide}", 9e-3)
        + lib(f"conv/onednn/cpu/{CONV}", 2e-3) + lib(f"conv/onednn/cpu/{wide}", 3e-3)
    ).benchmarks().values())
    assert framework.headlines(pairs) == [
        "torch on the CPU takes, at each op's largest size, this many times the library's time: "
        "conv 3x (oneDNN)"]


TF32_ON = {**TORCH, "framework.tf32_matmul": "on", "framework.tf32_conv": "on"}
GPU_LIBRARIES = (lib("overhead/cublas/gpu/op:matmul/n:512", 1e-4)
                 + lib("overhead/cublas/gpu/op:matmul/n:512/math:tf32", 4e-5)
                 + lib("overhead/cublas/gpu/op:dense/batch:32", 2e-5)
                 + lib("overhead/openblas/cpu/op:matmul/n:512", 2e-3))
FRAMEWORK_MATMULS = (fw("matmul/n:512", 8e-5, "gpu") + fw("dense/batch:32", 6e-5, "gpu")
                     + fw("matmul/n:512", 3e-3))


def probe_pairs(framework_entries, library_entries, context, library_context=None
                ) -> list[framework.Pair]:
    """The pairs of a probe file (its context: what its framework computed in, for files from
    before the math axis) beside gapbench's file, as a run holds them."""
    probe = in_memory(framework_entries, **context)
    library = in_memory(library_entries, **(library_context or {}))
    benchmarks = [*library.benchmarks().values(), *probe.benchmarks().values()]
    return framework.pairs(benchmarks, framework.framework_contexts([probe]))


def gpu_pairs(context) -> dict[str, framework.Pair]:
    return {f"{p.framework.parsed.device}/{p.op}": p
            for p in probe_pairs(FRAMEWORK_MATMULS, GPU_LIBRARIES, context)}


def test_a_framework_in_tf32_pairs_with_the_library_in_tf32_on_the_gpu():
    found = gpu_pairs(TF32_ON)
    matmul = found["gpu/matmul"]
    assert matmul.library.name == "overhead/cublas/gpu/op:matmul/n:512/math:tf32/manual_time"
    assert matmul.ratio == 2.0 and matmul.library_name == "cuBLAS TF32" and not matmul.note
    # No TF32 twin (gapbench's dense step is float32 only): kept, and marked.
    dense = found["gpu/dense"]
    assert dense.library.math == "fp32" and dense.note == framework.MIXED_MATH
    # The CPU has no TF32; with TF32 off, the float32 twins, unmarked.
    assert found["cpu/matmul"].library.parsed.variant == "openblas"
    off = gpu_pairs({**TORCH, "framework.tf32_matmul": "off"})
    assert off["gpu/matmul"].library.math == "fp32" and not off["gpu/dense"].note


def test_the_table_and_headline_say_tf32_against_float32():
    pairs = list(gpu_pairs(TF32_ON).values())
    rows = {row[1] + " " + row[2]: row for row in model.framework_rows(pairs)}
    assert rows["matmul GPU"][5:] == ["cuBLAS TF32 (overhead/cublas)", "40 µs", "2x", ""]
    # The dense step also says what each side times: not the same op with a call around it.
    sides = ("framework: a whole training step through Python, autograd and the optimizer; "
             "library: that step's kernels alone")
    assert rows["dense GPU"][5:] == ["cuBLAS (overhead/cublas)", "20 µs", "3x",
                                     f"framework TF32, library float32; {sides}"]
    assert framework.headlines(pairs)[0] == (
        "torch 2.9.0 on the GPU takes, at each op's largest size, this many times the library's "
        f"time: matmul 2x (cuBLAS TF32), dense 3x (cuBLAS; framework TF32, library float32; "
        f"{sides})")


def library_file(**context):
    return in_memory(lib(f"conv/onednn/cpu/{CONV}", 2e-3),
                     **{"gpu.status": "ok", "gpu.name": "NVIDIA T4", **context})


def framework_file(**context):
    return in_memory(fw(f"conv/{CONV}", 4e-3),
                     **{**TORCH, "gpu.status": "torch 2.9.0 is a CPU-only build (no CUDA)",
                        "machine.id": "test-machine", **context})


def test_the_machine_context_is_gapbench_own_whatever_the_order_of_the_files():
    runs_ = [framework_file(), library_file()]
    assert framework.library_first(runs_)[0] is runs_[1]
    assert Run.of(runs_).context["gpu.status"] == "ok"
    report = model.build_report(runs_, [])
    assert report.context["gpu.status"] == "ok" and report.context["gpu.name"] == "NVIDIA T4"
    assert framework.framework_contexts(runs_)["torch"]["framework.version"] == "2.9.0"
    assert [p.name for p in report.pairs] == ["torch 2.9.0"]


def test_a_framework_file_without_benchmarks_is_still_a_framework_file():
    empty = in_memory([], **TORCH, **{"gpu.status": "torch 2.9.0 is a CPU-only build (no CUDA)"})
    assert framework.is_framework_file(empty)
    assert not framework.is_framework_file(library_file())
    assert Run.of([empty, library_file()]).context["gpu.status"] == "ok"


def test_the_report_shows_the_framework_beside_the_library(tmp_path):
    index = render.render([library_file(), framework_file()], [], tmp_path / "r")
    summary = (tmp_path / "r" / "summary.md").read_text(encoding="utf-8")
    assert "## Your framework against the libraries" in summary
    assert ("| torch 2.9.0 | conv | CPU | n 2 · c 64 · hw 56 · k 64 · r 3 · stride 1 · pad 1 | "
            "4 ms | oneDNN (conv/onednn) | 2 ms | 2x |") in summary
    assert "this many times the library's time: conv 2x (oneDNN)" in summary
    page = index.read_text(encoding="utf-8")
    assert 'id="framework-vs-libraries"' in page and "framework-vs-libraries.svg" in page
    assert (tmp_path / "r" / "framework-vs-libraries.png").exists()
    # The probe measures no ceilings: its file has no row among gapbench's runs' ceilings.
    assert [row[0] for row in model.ceilings_rows([library_file(), framework_file()])] == [
        "conv"]


def test_no_pairs_no_section(tmp_path):
    render.render([library_file()], [], tmp_path / "r")
    assert "Your framework" not in (tmp_path / "r" / "summary.md").read_text(encoding="utf-8")
    assert not (tmp_path / "r" / "framework-vs-libraries.png").exists()


def test_check_accepts_a_compiled_case_skipped_for_a_compiler_that_does_not_work_here():
    no_compiler = "torch.compile does not work here: InductorError: no working C++ compiler"
    compiled = "framework/torch/cpu/op:dense/batch:32/mode:compiled/real_time"

    def probe_file(*entries):
        return in_memory([e for group in entries for e in group], **TORCH,
                         **{"framework.compiled_mode": "torch.compile"})
    assert check.problems(probe_file(fw("dense/batch:32", 1e-4), skipped(compiled, no_compiler)),
                          "framework") == []
    # Strict for everything else: an eager case, another reason, a file not the probe's.
    eager = "framework/torch/cpu/op:dense/batch:32/real_time"
    assert check.problems(probe_file(skipped(eager, no_compiler)), "framework")
    assert check.problems(probe_file(skipped(compiled, "out of memory")), "framework")
    assert check.problems(in_memory(skipped(compiled, no_compiler)), "framework")


NEW_PROBE = {**TORCH, "framework.version": "2.11.0",  # TF32 set per row
             "framework.tf32_matmul": "off by default; the probe's GPU cases: on for math:tf32, "
                                      "off for float32",
             "framework.tf32_conv": "on by default; the probe's GPU cases: on for math:tf32, off "
                                    "for float32"}
BIG_CONV = "n:32/c:64/hw:56/k:64/r:3/stride:1/pad:1"
LSTM_512 = "scope:seq/batch:64/input:512/hidden:512/steps:25"


def math_pairs(*entries, context=NEW_PROBE, **library_context) -> dict[str, framework.Pair]:
    """`context`: the probe file's; `library_context`: gapbench's file's."""
    flat = [e for group in entries for e in group]
    probe = [e for e in flat if e["name"].startswith("framework/")]
    library = [e for e in flat if not e["name"].startswith("framework/")]
    return {p.framework.name.removeprefix("framework/torch/gpu/op:").removesuffix("/real_time"):
            p for p in probe_pairs(probe, library, context, library_context)}


def test_each_math_pairs_with_the_library_in_the_same_math():
    """As the GEMM, conv and LSTM targets compare them: framework and library in one arithmetic,
    the fastest library row of it; the GEMM peak's cuBLAS stands beside the overhead family's."""
    found = math_pairs(
        fw("matmul/n:4096/math:fp16", 2.0e-4, "gpu"), fw("matmul/n:4096/math:bf16", 2.0e-4, "gpu"),
        fw("matmul/n:8192/math:fp16", 1.6e-3, "gpu"), fw("matmul/n:8192", 2.2e-2, "gpu"),
        fw("matmul/n:4096/math:tf32", 4e-4, "gpu"),
        lib("overhead/cublas/gpu/op:matmul/n:4096/math:fp16", 2.1e-4),
        lib("peak/gemm/gpu/n:4096/math:fp16", 1.9e-4),
        lib("peak/gemm/gpu/n:4096/math:bf16", 1.8e-4),
        lib("peak/gemm/gpu/n:8192/math:fp16", 1.7e-3),
        lib("peak/gemm/gpu/n:8192/math:bf16", 1e-4),  # another math: never
        lib("peak/gemm/gpu/n:8192/math:fp32", 2.3e-2), lib("peak/sgemm/gpu/n:8192", 2.2e-2),
        lib("peak/gemm/gpu/n:8192/math:tf32", 5e-3),
        fw(f"conv/{BIG_CONV}", 2.6e-4, "gpu"), fw(f"conv/{BIG_CONV}/math:tf32", 9e-5, "gpu"),
        fw(f"conv/{BIG_CONV}/math:fp16", 6.6e-5, "gpu"),
        lib(f"conv/cudnn/gpu/{BIG_CONV}", 3.47e-4), lib(f"conv/cudnn/gpu/{BIG_CONV}/math:fp32",
                                                        1.35e-4),
        lib(f"conv/cudnn/gpu/{BIG_CONV}/math:tf32", 8.5e-5),
        lib(f"conv/cudnn/gpu/{BIG_CONV}/math:fp16", 2.7e-5),
        fw(f"lstm/{LSTM_512}/math:fp16", 6e-4, "gpu"),
        lib(f"lstm/cudnn/gpu/{LSTM_512}/math:fp16", 5e-4))
    assert {name: (p.library.name.removesuffix("/manual_time"), p.math, p.note)
            for name, p in found.items()} == {
        "matmul/n:4096/math:fp16": ("peak/gemm/gpu/n:4096/math:fp16", "fp16", ""),
        "matmul/n:4096/math:bf16": ("peak/gemm/gpu/n:4096/math:bf16", "bf16", ""),
        "matmul/n:8192/math:fp16": ("peak/gemm/gpu/n:8192/math:fp16", "fp16", ""),
        "matmul/n:8192": ("peak/sgemm/gpu/n:8192", "fp32", ""),
        # float32 is float32 here, whatever the framework's default: the math:fp32 cuDNN row;
        # never the math:tf32 one, nor the unmarked one (cuDNN's default math, TF32 allowed)
        f"conv/{BIG_CONV}": (f"conv/cudnn/gpu/{BIG_CONV}/math:fp32", "fp32", ""),
        f"conv/{BIG_CONV}/math:tf32": (f"conv/cudnn/gpu/{BIG_CONV}/math:tf32", "tf32", ""),
        f"conv/{BIG_CONV}/math:fp16": (f"conv/cudnn/gpu/{BIG_CONV}/math:fp16", "fp16", ""),
        f"lstm/{LSTM_512}/math:fp16": (f"lstm/cudnn/gpu/{LSTM_512}/math:fp16", "fp16", ""),
    }  # matmul n:4096 math:tf32: gapbench ran no TF32 GEMM of that size here, so no row
    assert round(found["matmul/n:8192/math:fp16"].ratio, 3) == round(1.6e-3 / 1.7e-3, 3)
    assert found["matmul/n:4096/math:fp16"].library_name == "cuBLAS FP16"


def test_an_unmarked_cudnn_conv_is_tf32_from_compute_capability_8_and_float32_before():
    """The H100's files: conv/cudnn/gpu without a math axis ran in cuDNN's default math, TF32
    on that GPU (90 µs), beside the true float32 math:fp32 row (152 µs). torch's float32 conv
    (284 µs) pairs with the float32 one (1.86x, not 3.15x); its TF32 conv with the fastest TF32
    row, the unmarked one among them. Before 8.0 the unmarked row is float32."""
    entries = (fw(f"conv/{BIG_CONV}", 284e-6, "gpu"),
               fw(f"conv/{BIG_CONV}/math:tf32", 107e-6, "gpu"),
               lib(f"conv/cudnn/gpu/{BIG_CONV}", 90.2e-6),
               lib(f"conv/cudnn/gpu/{BIG_CONV}/math:fp32", 152.5e-6),
               lib(f"conv/cudnn/gpu/{BIG_CONV}/math:tf32", 90.4e-6))
    h100 = math_pairs(*entries, **{"gpu.compute_capability": "9.0"})
    float32 = h100[f"conv/{BIG_CONV}"]
    assert float32.library.name == f"conv/cudnn/gpu/{BIG_CONV}/math:fp32/manual_time"
    assert round(float32.ratio, 2) == 1.86 and float32.library_name == "cuDNN"
    tf32 = h100[f"conv/{BIG_CONV}/math:tf32"]
    assert tf32.library.name == f"conv/cudnn/gpu/{BIG_CONV}/manual_time"
    assert tf32.library_name == "cuDNN TF32" and tf32.math == "tf32" and not tf32.note
    turing = math_pairs(*entries, **{"gpu.compute_capability": "7.5"})
    assert turing[f"conv/{BIG_CONV}"].library.name == f"conv/cudnn/gpu/{BIG_CONV}/manual_time"


def test_the_framework_tf32_lstm_pairs_with_cudnn_tf32_once_gapbench_has_it():
    tf32 = fw(f"lstm/{LSTM_512}/math:tf32", 6e-4, "gpu")
    float32 = lib(f"lstm/cudnn/gpu/{LSTM_512}", 5.5e-4)
    before = math_pairs(tf32, float32)[f"lstm/{LSTM_512}/math:tf32"]
    assert before.library.math == "fp32" and before.note == framework.MIXED_MATH
    assert before.math == "tf32"
    after = math_pairs(tf32, float32, lib(f"lstm/cudnn/gpu/{LSTM_512}/math:tf32", 4e-4))
    pair = after[f"lstm/{LSTM_512}/math:tf32"]
    assert pair.library.math == "tf32" and not pair.note and round(pair.ratio, 6) == 1.5


def test_a_file_from_before_the_math_axis_keeps_its_tf32_pairs():
    """framework-torch.json of the first H200 run: torch's cuDNN TF32 on by default, its conv
    rows unmarked; they were TF32 and pair as such. A file of today's probe says that it set
    TF32 per row, and its unmarked rows are float32."""
    entries = (fw(f"conv/{BIG_CONV}", 2.6e-4, "gpu"),
               lib(f"conv/cudnn/gpu/{BIG_CONV}/math:fp32", 1.35e-4),
               lib(f"conv/cudnn/gpu/{BIG_CONV}/math:tf32", 8.5e-5))
    old = {**TORCH, "framework.tf32_matmul": "off", "framework.tf32_conv": "on"}
    assert math_pairs(*entries, context=old)[f"conv/{BIG_CONV}"].math == "tf32"
    assert math_pairs(*entries)[f"conv/{BIG_CONV}"].math == "fp32"


def test_headlines_leave_the_other_maths_to_the_table():
    pairs = list(math_pairs(fw("matmul/n:8192/math:fp16", 1.6e-3, "gpu"),
                            fw("matmul/n:8192", 2.2e-2, "gpu"),
                            lib("peak/gemm/gpu/n:8192/math:fp16", 1.7e-3),
                            lib("peak/sgemm/gpu/n:8192", 2e-2)).values())
    assert len(pairs) == 2
    assert framework.headlines(pairs) == [
        "torch 2.11.0 on the GPU takes, at each op's largest size, this many times the library's "
        "time: matmul 1.1x (cuBLAS SGEMM)"]
    rows = model.framework_rows(pairs)
    assert [row[3] for row in rows] == ["n 8192 · math fp16", "n 8192"]


CONV_TINY = "n:1/c:1/hw:28/k:1/r:3/stride:1/pad:0"
THREADS_CONV = f"op:conv/{CONV_TINY}"
THREADS_STEP = "op:lstm_step/batch:64/input:50/hidden:64"


def threads_twins(seconds: dict[str, float]) -> list[dict]:
    """gapbench's threads rows at each count, `seconds` per `variant/op axes`."""
    return [e for work, s in seconds.items() for count in ("1", "all")
            for e in lib(f"threads/{work.split('/', 1)[0]}/cpu/{work.split('/', 1)[1]}"
                         f"/lib_threads:{count}", s if count == "1" else 2 * s)]


def test_the_threads_twins_pair_with_gapbench_threads_rows_of_the_same_count():
    found = paired(
        fw(f"{THREADS_CONV[3:]}/lib_threads:1", 1e-5), fw(f"{THREADS_CONV[3:]}/lib_threads:all",
                                                          3e-5),
        fw(f"{THREADS_STEP[3:]}/lib_threads:1", 2e-4), fw(f"{THREADS_STEP[3:]}/lib_threads:all",
                                                          9e-3),
        fw("matmul/n:1024/lib_threads:1", 4e-2), fw("matmul/n:1024/lib_threads:all", 2e-2),
        fw("matmul/n:1024", 2.2e-2),  # the framework's own threads: the overhead family's twin
        threads_twins({f"onednn/{THREADS_CONV}": 5e-6, f"onednn/{THREADS_STEP}": 1e-4,
                       "openblas/op:matmul/n:1024": 1e-2}),
        lib("overhead/openblas/cpu/op:matmul/n:1024", 1.1e-2),
        lib(f"conv/onednn/cpu/{CONV_TINY}", 1e-6))  # the library's own threads: no set count
    ratios = {name.removeprefix("framework/torch/cpu/").removesuffix("/real_time"):
              (p.library.name.removesuffix("/real_time"), round(p.ratio, 6))
              for name, p in found.items()}
    assert ratios == {
        f"{THREADS_CONV}/lib_threads:1": (f"threads/onednn/cpu/{THREADS_CONV}/lib_threads:1", 2),
        f"{THREADS_CONV}/lib_threads:all": (f"threads/onednn/cpu/{THREADS_CONV}/lib_threads:all",
                                            3),
        f"{THREADS_STEP}/lib_threads:1": (f"threads/onednn/cpu/{THREADS_STEP}/lib_threads:1", 2),
        f"{THREADS_STEP}/lib_threads:all": (f"threads/onednn/cpu/{THREADS_STEP}/lib_threads:all",
                                            45),
        "op:matmul/n:1024/lib_threads:1": ("threads/openblas/cpu/op:matmul/n:1024/lib_threads:1",
                                           4),
        "op:matmul/n:1024/lib_threads:all": (
            "threads/openblas/cpu/op:matmul/n:1024/lib_threads:all", 1),
        "op:matmul/n:1024": ("overhead/openblas/cpu/op:matmul/n:1024", 2)}
    words = {p.library_name for p in found.values()}
    assert {"oneDNN, 1 thread", "OpenBLAS, every CPU", "OpenBLAS"} <= words


def test_headlines_leave_the_threads_twins_to_the_table():
    pairs = framework.pairs(in_memory(
        fw("matmul/n:1024", 2.2e-2) + fw("matmul/n:1024/lib_threads:1", 9e-2)
        + lib("overhead/openblas/cpu/op:matmul/n:1024", 1.1e-2)
        + threads_twins({"openblas/op:matmul/n:1024": 1e-2})).benchmarks().values())
    assert framework.headlines(pairs) == [
        "torch on the CPU takes, at each op's largest size, this many times the library's time: "
        "matmul 2x (OpenBLAS)"]
