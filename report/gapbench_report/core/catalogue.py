"""The report's catalogue, the one home of each: the families in the order a reader meets the
causes, a line on each, and the severities of a finding. Adding a family:
docs/contributing.md#adding-a-family."""

from __future__ import annotations

from gapbench_report.core import tables

# Families in the order a reader meets the causes (tables/families.json, which CMake checks
# bench/ against); unknown ones follow alphabetically.
FAMILY_ORDER = tables.FAMILY_ORDER
FAMILY_BLURB = {
    "preprocess": "Element-wise loops vs vectorized operations, on the CPU and the GPU "
                  "(kernel only and end-to-end with the copies).",
    "conv": "Hand-written convolutions vs cuDNN, oneDNN and im2col + BLAS.",
    "lstm": "One LSTM step and a whole sequence: CPU vs GPU, custom vs cuDNN.",
    "transfer": "Host-device copies: pageable vs pinned memory, sync vs async, 4 KiB to 256 MiB.",
    "pipeline": "An input pipeline with and without prefetch.",
    "overhead": "Launch, sync, transfer and start-up costs against the size of the work.",
    "threads": "Threads that fight for the cores: oneDNN's conv and LSTM step and OpenBLAS's "
               "GEMM with one thread and with one per CPU online, as twin rows back to back. "
               "Where all threads are slower than one, other work or a slow handoff between "
               "the CPUs stalls each thread that waits for another.",
    "framework": "The same work through your own PyTorch or TensorFlow (gapbench-probe): eager "
                 "and compiled, host wall time per call, each call synchronized.",
    "peak": "The machine's own ceilings: the CPU's multiply-add peak with no library (each "
            "vector width it has, one thread and all), CPU memory bandwidth (memcpy, triad, "
            "streaming read), OpenBLAS's SGEMM, and on the GPU each math mode's GEMM (what its "
            "tensor cores reach).",
}
# The families whose end-to-end (`_e2e`) variants copy from and to pageable host memory, as a
# framework's host tensors are (bench/conv_gpu.cpp, bench/preprocess_gpu.cpp, bench/overhead.cpp):
# their times hold those slow copies. lstm's keep their data on the device (launches and a
# synchronize only).
PAGEABLE_E2E = ("conv", "preprocess", "overhead")
# The families whose shapes name the same work on every device (versus.comparison.pairs): a
# machine's time for one is comparable with another machine's, whichever device each ran it on.
SHARED_WORK = ("conv", "lstm", "overhead")
# A finding's severity, most urgent first (findings are ranked and shown in this order):
# "problem" fix this, "warning" costs you speed, "info" context. gapbench's doctor writes the
# same three into a results file's context (fixtures/doctor_rules.h, enum class Severity).
SEVERITIES = ("problem", "warning", "info")


def family_rank(family: str) -> tuple[int, str]:
    """Sort key: the families of FAMILY_ORDER in its order, then unknown ones alphabetically."""
    try:
        return FAMILY_ORDER.index(family), family
    except ValueError:
        return len(FAMILY_ORDER), family
