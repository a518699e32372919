// Family `peak`, GPU side: one n×n cuBLAS SGEMM on a fixture-owned stream, shared by the
// ceiling (peak/sgemm/gpu) and overhead's matmul (kernel and end-to-end). Include only from
// *_gpu.cpp files.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <limits>
#include <vector>

#include "bench/peak.h"
#include "fixtures/cuda_libraries.h"
#include "fixtures/device_probe.h"
#include "fixtures/gpu_timer.h"
#include "kernels/gemm.h"

namespace gapbench {

struct SgemmDevice {
  explicit SgemmDevice(const SgemmData& d)
      : a(reserve(d.n)), b(d.n * d.n), c(d.n * d.n), blas(stream.get()), host_c(d.n * d.n) {
    GAPBENCH_CHECK(
        cudaMemcpyAsync(a.data(), d.a.data(), a.bytes(), cudaMemcpyHostToDevice, stream.get()));
    GAPBENCH_CHECK(
        cudaMemcpyAsync(b.data(), d.b.data(), b.bytes(), cudaMemcpyHostToDevice, stream.get()));
    stream.synchronize();
  }
  static std::size_t reserve(std::size_t n) {
    require_free_device_memory(3 * n * n * sizeof(float));
    return n * n;
  }
  // Row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ: pass B first, no transposes.
  void multiply(std::size_t n) {
    const int N = static_cast<int>(n);
    const float one = 1.0f, zero = 0.0f;
    GAPBENCH_CHECK(cublasSgemm(blas.get(), CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &one, b.data(), N,
                               a.data(), N, &zero, c.data(), N));
  }
  // What a framework user pays for one product of host matrices.
  void end_to_end(const SgemmData& d) {
    GAPBENCH_CHECK(
        cudaMemcpyAsync(a.data(), d.a.data(), a.bytes(), cudaMemcpyHostToDevice, stream.get()));
    GAPBENCH_CHECK(
        cudaMemcpyAsync(b.data(), d.b.data(), b.bytes(), cudaMemcpyHostToDevice, stream.get()));
    multiply(d.n);
    GAPBENCH_CHECK(
        cudaMemcpyAsync(host_c.data(), c.data(), c.bytes(), cudaMemcpyDeviceToHost, stream.get()));
    stream.synchronize();
  }
  // One product the way `timing` runs it, into a poisoned C (all-ones bits are a NaN), checked.
  Validation check(const SgemmData& d, GpuTiming timing) {
    GAPBENCH_CHECK(cudaMemsetAsync(c.data(), 0xFF, c.bytes(), stream.get()));
    std::fill(host_c.begin(), host_c.end(), std::numeric_limits<float>::quiet_NaN());
    if (timing == GpuTiming::kernel) {
      multiply(d.n);
      GAPBENCH_CHECK(cudaMemcpyAsync(host_c.data(), c.data(), c.bytes(), cudaMemcpyDeviceToHost,
                                     stream.get()));
      stream.synchronize();
    } else {
      end_to_end(d);
    }
    return gemm::validate_sampled("sgemm", host_c.data(), d.a.data(), d.b.data(), d.n, d.n, d.n,
                                  256);
  }

  TimedStream stream;
  DeviceBuffer<float> a, b, c;
  CublasHandle blas;
  std::vector<float> host_c;
};

}  // namespace gapbench
