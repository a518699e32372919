// Family `peak`: what its CPU and GPU files share.
#pragma once

#include <cstddef>
#include <vector>

#include "fixtures/harness.h"

namespace gapbench {

// Two seeded n×n float32 matrices (row-major), shared by the CPU and GPU sgemm ceilings.
struct SgemmData {
  explicit SgemmData(std::size_t n);
  std::size_t n;
  std::vector<float> a, b;
};

// The `flops` counter of one n×n×n multiply per iteration (2n³ floating-point operations).
void set_sgemm_counters(State& state, std::size_t n);

void bench_sgemm_gpu(State& state, std::size_t n);  // bench/peak_gpu.cpp

}  // namespace gapbench
