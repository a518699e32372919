// Family `peak`: what its CPU and GPU files share.
#pragma once

#include <cstddef>
#include <vector>

#include "fixtures/harness.h"
#include "kernels/base/validate.h"

namespace gapbench {

void bench_sgemm_gpu(State& state, std::size_t n);  // bench/peak_gpu.cpp
void bench_gemm_gpu(State& state, std::size_t n, Arithmetic arithmetic);

// The two CPU ceilings other families are judged against, measured in a fraction of a second:
// SGEMM (OpenBLAS, n = 1024, every thread) in GFLOP/s and a one-thread streaming read of 256 MiB in
// GB/s, each the fastest of at least ten runs over half a second, after a warm-up. gapbench
// measures them at the start and the end of every run that includes peak/ or names a peak/ run
// (--peak: every family's bench run), so a report can tell a machine that changed speed during
// the run (a shared VM's neighbours, thermal limits) from a slow one.
// With them, the CPUs' parallel capacity: the register FMA loop of the widest float32 set this
// CPU runs (kernels/flops.h), the fastest of a few 20 ms bursts on one thread and on one thread
// per CPU online at once. On a VM the two differ by less than the count when the host puts the
// vCPUs on one core's hyperthreads or other work takes them, and that changes from minute to
// minute: threaded rows of two runs then disagree.
struct Ceilings {
  double sgemm_gflops = 0.0;
  double read_gbps = 0.0;
  double fma_one_gflops = 0.0;
  double fma_all_gflops = 0.0;
  int fma_threads = 0;
};
Ceilings probe_ceilings();

}  // namespace gapbench
