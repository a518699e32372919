"""The fixed words of render's summary.md and index.html: each table's headers, each section's
blurb and anchor: the model fills the rows under them, the writers print both."""

from __future__ import annotations

from collections.abc import Sequence

from gapbench_report.core import framework

TABLE_ROWS_SHOWN = 60  # longer family tables start folded, in summary.md and index.html

CEILINGS_HEADERS = ("file (family)", "CPU float32 peak GFLOP/s", "OpenBLAS SGEMM GFLOP/s",
                    "CPU read GB/s (1 thread)", "GPU SGEMM GFLOP/s", "start → end probes (CPU)",
                    "ceilings")

CEILINGS_NUMERIC = {1, 2, 3, 4}

COMPUTE_PEAKS_HEADERS = ("device, math", "the hardware's limit", "library", "it reaches",
                         "share", "the limit from")

COMPUTE_PEAKS_BLURB = ("The hardware's own compute limit beside what each library reaches of "
                       "it. On the CPU the limit is measured: register-resident multiply-add "
                       "loops at the widest vector width the CPU has, no library "
                       "(peak/flops). On the GPU it is theoretical: SMs × the SM clock × the "
                       "FLOP per SM per clock of its architecture, dense (the table in "
                       "report/gapbench_report/core/metrics.py), against cuBLAS's fastest GEMM of "
                       "that math, so a cuBLAS or a clock that underdelivers shows here instead "
                       "of lowering the bar.")

FRAMEWORK_SECTION = "framework-vs-libraries"

FRAMEWORK_BLURB = ("The same work on the same shape through your framework (gapbench-probe) "
                   "and through the library underneath it (gapbench): the ratio is what the "
                   "framework adds, on this machine. Framework times are host wall time per "
                   "synchronized call; the GPU libraries' are kernel time, so a GPU ratio "
                   "includes the framework's launch and sync. A framework computing in TF32 on "
                   "the GPU is set against the library's TF32 where gapbench has one, else "
                   f"marked \"{framework.MIXED_MATH}\".")

FRAMEWORK_HEADERS = ("framework", "op", "device", "size", "framework time", "library",
                     "library time", "framework / library", "note")

VERSUS_SECTION = "machines"

VERSUS_BLURB = ("Every work both machines ran, the same benchmark (between a GPU and a CPU-only "
                "machine, the same work each did fastest, in the same scope and FLOPs), is set "
                "side by side: a ratio is how many times faster this machine does it. Each "
                "difference is put down to a firmly measured ceiling that bounds it, fully or "
                "partly, with both machines' figures for it; else to a recorded fact in which "
                "the slower machine differs; else, between two runs of one machine, to the "
                "machine itself being unsteady; else it is unexplained. Rows that are not the "
                "same work (another algorithm, math, layout, held or not, FLOPs, or another "
                "method) are listed as not comparable, never explained. "
                "comparison.json beside this page holds it all in figures. A difference between "
                "machines is not a regression.")

NOT_COMPARABLE_HEADERS = ("work", "this run", "there", "why not comparable")

VERSUS_CEILING_HEADERS = ("ceiling", "this run", "there", "here / there", "from (here; there)")

OWN_CEILINGS_BLURB = ("Each machine against its own ceilings: ratios measured within one "
                      "machine, which carry across hardware.")

VERSUS_CHART = "versus-"  # + the other machine's label: the key of its chart in render's charts


def with_there(headers: Sequence[str], there: str) -> list[str]:
    """A comparison's headers, its third column ("there") named by the other machine's label."""
    return [*headers[:2], there, *headers[3:]]
