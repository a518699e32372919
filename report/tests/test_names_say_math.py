"""Every GPU benchmark's name says the math it may use: a row without a `math` axis is read as
float32 (no TF32), so a row whose library may choose TF32 or another reduced precision must carry
the axis. Checked on the names the built gapbench lists, in both profiles (no GPU needed)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from gapbench_report.inputs.results import parse_name

REPO = Path(__file__).resolve().parents[2]

# Every GPU variant, by family/variant (and, for startup, its `what`), with the math it computes in
# where its name has no math axis, and the code that holds it there. A variant this table does not
# know fails the test: a new GPU variant says here whether it calls a library, and in what math.
# None: it runs no library arithmetic (its own kernels, copies, launches, handle creation).
NO_AXIS_MATH = {
    "conv/naive": None,
    "conv/tiled": None,
    "preprocess/elementwise": None,
    "preprocess/elementwise_e2e": None,
    "preprocess/vectorized": None,
    "preprocess/vectorized_e2e": None,
    "transfer/device": None,
    "transfer/pageable": None,
    "transfer/pinned": None,
    "overhead/launch": None,
    "overhead/startup/context": None,
    "overhead/startup/first_launch": None,
    "overhead/startup/cublas_handle": None,
    "overhead/startup/cudnn_handle": None,
    "overhead/startup/cudnn_find_conv": "CUDNN_FMA_MATH (kFindMath in bench/overhead_gpu.cpp)",
    "lstm/cudnn": "CUDNN_FMA_MATH (cudnn_rnn_math_type in kernels/lstm_cudnn_gpu.cpp)",
    "lstm/cudnn_e2e": "CUDNN_FMA_MATH (cudnn_rnn_math_type in kernels/lstm_cudnn_gpu.cpp)",
    # cublasSgemm on a handle in CUBLAS_DEFAULT_MATH (CublasHandle, kernels/base/cuda_libraries.h)
    **{v: "cublasSgemm, CUBLAS_DEFAULT_MATH (CublasHandle)" for v in (
        "lstm/cublas", "lstm/cublas_e2e", "lstm/cublas_graph", "lstm/cublas_graph_e2e",
        "overhead/cublas", "overhead/cublas_e2e", "peak/sgemm",
        "pipeline/none", "pipeline/prefetch", "pipeline/parallel")},
}
# Variants that always carry the axis: their library's own default math may use TF32 (cuDNN's
# CUDNN_DEFAULT_MATH on compute capability 8.0 and later), so no plain row may exist.
MATH_REQUIRED = ("conv/cudnn", "conv/cudnn_e2e", "peak/gemm")


def variant_key(name: str) -> str:
    parsed = parse_name(name)
    key = f"{parsed.family}/{parsed.variant}"
    if key == "overhead/startup":
        key += "/" + parsed.axes.get("what", "?")
    return key


def unsaid_math(names: list[str]) -> list[str]:
    """The GPU rows whose name does not say their math: a row that needs the axis and lacks it,
    or a GPU variant NO_AXIS_MATH and MATH_REQUIRED do not know; each with the reason."""
    wrong = []
    for name in names:
        parsed = parse_name(name)
        if parsed.device != "gpu":
            continue
        key = variant_key(name)
        has_axis = "math" in parsed.axes
        if key in MATH_REQUIRED:
            if not has_axis:
                wrong.append(f"{name}: {key} may use TF32 in its library's default math; "
                             "it must carry math:<fp32|tf32|fp16>")
        elif key not in NO_AXIS_MATH:
            wrong.append(f"{name}: an unknown GPU variant {key}: say in NO_AXIS_MATH what math "
                         "it computes in without a math axis")
    return wrong


def test_a_plain_cudnn_conv_row_and_an_unknown_variant_are_refused():
    ok = ["conv/cudnn/gpu/n:2/c:64/hw:56/k:64/r:3/stride:1/pad:1/math:fp32/manual_time",
          "lstm/cudnn/gpu/scope:seq/batch:64/input:50/hidden:64/steps:100/manual_time",
          "overhead/startup/gpu/what:cudnn_find_conv/manual_time",
          "conv/onednn/cpu/n:2/c:64/hw:56/k:64/r:3/stride:1/pad:1/real_time"]
    assert unsaid_math(ok) == []
    plain = "conv/cudnn_e2e/gpu/n:2/c:64/hw:56/k:64/r:3/stride:1/pad:1/manual_time"
    new = "overhead/cudnn_pool/gpu/n:2/manual_time"
    startup = "overhead/startup/gpu/what:cudnn_find_pool/manual_time"
    wrong = unsaid_math([*ok, plain, new, startup])
    assert [w.split(":", 1)[0] for w in wrong] == [plain.split(":", 1)[0],
                                                    new.split(":", 1)[0],
                                                    startup.split(":", 1)[0]]
    assert "may use TF32" in wrong[0] and "unknown GPU variant overhead/cudnn_pool" in wrong[1]


def gapbench_binary() -> Path:
    path = Path(os.environ.get("GAPBENCH_BINARY", REPO / "build" / "default" / "gapbench"))
    if not path.exists():
        pytest.skip("no gapbench executable (set GAPBENCH_BINARY or build build/default)")
    return path


@pytest.mark.parametrize("profile", ["quick", "full"])
def test_every_gpu_row_gapbench_lists_says_its_math(profile):
    done = subprocess.run([str(gapbench_binary()), f"--profile={profile}",
                           "--benchmark_filter=/gpu/", "--benchmark_list_tests=true"],
                          capture_output=True, text=True, timeout=120, check=True)
    names = done.stdout.split()
    assert len(names) > 100
    assert unsaid_math(names) == []
    # Each math the cuDNN convolution runs is there, and the float32 one is FMA's (no TF32).
    conv = [n for n in names if variant_key(n) == "conv/cudnn"]
    assert {parse_name(n).axes["math"] for n in conv} == {"fp32", "tf32", "fp16"}
    keys = {variant_key(n) for n in names}
    assert set(MATH_REQUIRED) <= keys, "a variant the table requires the axis of is gone"
    stale = set(NO_AXIS_MATH) - keys
    assert not stale, f"NO_AXIS_MATH lists variants gapbench no longer has: {sorted(stale)}"


def test_the_forced_float32_is_in_the_code_the_table_names():
    """The functions the table cites exist and choose what it says (the C++ tests check them on
    the host; this keeps the table's citations true)."""
    sources = {p: (REPO / p).read_text(encoding="utf-8") for p in (
        "bench/overhead_gpu.cpp", "kernels/lstm_cudnn_gpu.cpp", "kernels/base/cuda_libraries.h",
        "kernels/conv_cudnn_gpu.cpp")}
    assert re.search(r"kFindMath = Arithmetic::float32", sources["bench/overhead_gpu.cpp"])
    assert re.search(r"case Arithmetic::float32:\s+return CUDNN_FMA_MATH;",
                     sources["kernels/lstm_cudnn_gpu.cpp"])
    assert "cublasSetMathMode(get(), CUBLAS_DEFAULT_MATH)" in \
        sources["kernels/base/cuda_libraries.h"]
    assert "CUDNN_DEFAULT_MATH" not in re.sub(r"case CUDNN_DEFAULT_MATH:\s+return \"default\";", "",
                                              sources["kernels/conv_cudnn_gpu.cpp"])
