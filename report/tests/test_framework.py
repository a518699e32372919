"""The framework family beside the libraries: the one mapping (TWINS) pairs each framework
benchmark with the library benchmarks of the same work and shape, and the report shows them."""

from __future__ import annotations

from gapbench_report import check, framework, model, render
from gapbench_report.diagnose import Run
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
                   lib(f"conv/cudnn/gpu/{CONV}", 8e-4))
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
    assert framework.fmt_ratio(332.4) == "332x" and framework.fmt_ratio(1.234) == "1.23x"


def test_the_largest_shape_is_judged_by_the_shape_not_stride_or_pad():
    wide = "n:2/c:256/hw:56/k:64/r:1/stride:1/pad:0"  # more work than CONV, and pad 0
    pairs = framework.pairs(in_memory(
        fw(f"conv/{CONV}", 4e-3) + fw(f"conv/{wide}", 9e-3)
        + lib(f"conv/onednn/cpu/{CONV}", 2e-3) + lib(f"conv/onednn/cpu/{wide}", 3e-3)
    ).benchmarks().values())
    assert framework.headlines(pairs) == [
        "torch on the CPU takes, at each op's largest size, this many times the library's time: "
        "conv 3x (oneDNN)"]


TF32_ON = {"torch": {**TORCH, "framework.tf32_matmul": "on", "framework.tf32_conv": "on"}}
GPU_LIBRARIES = (lib("overhead/cublas/gpu/op:matmul/n:512", 1e-4)
                 + lib("overhead/cublas/gpu/op:matmul/n:512/math:tf32", 4e-5)
                 + lib("overhead/cublas/gpu/op:dense/batch:32", 2e-5)
                 + lib("overhead/openblas/cpu/op:matmul/n:512", 2e-3))
FRAMEWORK_MATMULS = (fw("matmul/n:512", 8e-5, "gpu") + fw("dense/batch:32", 6e-5, "gpu")
                     + fw("matmul/n:512", 3e-3))


def gpu_pairs(contexts) -> dict[str, framework.Pair]:
    benchmarks = in_memory(FRAMEWORK_MATMULS + GPU_LIBRARIES).benchmarks().values()
    return {f"{p.framework.parsed.device}/{p.op}": p
            for p in framework.pairs(benchmarks, contexts)}


def test_a_framework_in_tf32_pairs_with_the_library_in_tf32_on_the_gpu():
    found = gpu_pairs(TF32_ON)
    matmul = found["gpu/matmul"]
    assert matmul.library.name == "overhead/cublas/gpu/op:matmul/n:512/math:tf32/manual_time"
    assert matmul.ratio == 2.0 and matmul.library_name == "cuBLAS TF32" and not matmul.note
    # No TF32 twin (gapbench's dense step is float32 only): kept, and marked.
    dense = found["gpu/dense"]
    assert dense.library.parsed.math == "fp32" and dense.note == framework.MIXED_MATH
    # The CPU has no TF32; with TF32 off, the float32 twins, unmarked.
    assert found["cpu/matmul"].library.parsed.variant == "openblas"
    off = gpu_pairs({"torch": {**TORCH, "framework.tf32_matmul": "off"}})
    assert off["gpu/matmul"].library.parsed.math == "fp32" and not off["gpu/dense"].note


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
