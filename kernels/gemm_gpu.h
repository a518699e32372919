// cuBLAS SGEMM of a gemm::SquareProblem (kernels/gemm.h) on the caller's stream: the ceiling
// peak/sgemm/gpu and overhead's matmul (kernel and end-to-end) both time it. cuBLAS's default
// math mode, plain float32 (no TF32). CUDA builds only.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

#include "kernels/base/cuda_libraries.h"
#include "kernels/base/gpu_memory.h"
#include "kernels/gemm.h"

namespace gapbench::gemm {

class CublasSgemm {
 public:
  // Allocates A, B and C and uploads A and B (synchronously, before returning).
  CublasSgemm(const SquareProblem& problem, cudaStream_t stream);

  // Device memory it allocates for an n×n problem (for require_free_device_memory).
  static std::size_t device_bytes(std::size_t n) { return 3 * n * n * sizeof(float); }

  // C = A·B, asynchronous on the stream.
  void multiply();
  // What a framework user pays for one product of host matrices: A and B in from pageable host
  // memory, the multiply, C back, synchronize.
  void end_to_end(const SquareProblem& problem);
  // One product, alone or end to end, into a poisoned C (all-ones bits are a NaN), checked.
  Validation check(const SquareProblem& problem, bool end_to_end);

 private:
  void upload(const SquareProblem& problem);

  std::size_t n_;
  cudaStream_t stream_;
  DeviceBuffer<float> a_, b_, c_;
  CublasHandle blas_;
  std::vector<float> host_c_;
};

}  // namespace gapbench::gemm
