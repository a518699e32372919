// cuBLAS GEMM of a gemm::SquareProblem (kernels/gemm.h) on the caller's stream, C in float32,
// in each arithmetic of the `math` axis:
//   float32  cublasSgemm in cuBLAS's default math mode: plain float32, no TF32. The ceiling
//            peak/sgemm/gpu and overhead's matmul (kernel and end-to-end) time it.
//   tf32     cublasGemmEx on the float32 data with CUBLAS_COMPUTE_32F_FAST_TF32: tensor cores
//            read A and B as TF32 (what TensorFlow does to float32 matmuls on Ampere and newer).
//   fp16     A and B held in float16, float32 accumulation (CUBLAS_COMPUTE_32F), as mixed
//   bf16     precision runs a framework's matmuls; converted (rounded to nearest) once, here.
// CUDA builds only.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/base/cuda_libraries.h"
#include "kernels/base/gpu_memory.h"
#include "kernels/gemm.h"

namespace gapbench::gemm {

class CublasGemm {
 public:
  // Allocates A, B and C and uploads A and B (synchronously, before returning). The stream
  // comes last, as fixtures' OnTimedStream passes it.
  CublasGemm(const SquareProblem& problem, Arithmetic arithmetic, cudaStream_t stream);
  CublasGemm(const SquareProblem& problem, cudaStream_t stream)
      : CublasGemm(problem, Arithmetic::float32, stream) {}

  // Device memory it allocates for an n×n problem (for require_free_device_memory).
  static std::size_t device_bytes(std::size_t n, Arithmetic arithmetic = Arithmetic::float32);

  // C = A·B, asynchronous on the stream.
  void multiply();
  // What a framework user pays for one product of host matrices: A and B in from pageable host
  // memory (held there in the arithmetic's input format, as a mixed-precision model's tensors
  // are), the multiply, C back, synchronize.
  void end_to_end(const SquareProblem& problem);
  // One product, alone or end to end, into a poisoned C (all-ones bits are a NaN), checked with
  // the tolerance of the arithmetic.
  Validation check(const SquareProblem& problem, bool end_to_end);

  Arithmetic arithmetic() const { return arithmetic_; }

 private:
  void upload(const SquareProblem& problem);
  void download();

  std::size_t n_;
  cudaStream_t stream_;
  Arithmetic arithmetic_;
  std::vector<std::uint16_t> host_a16_, host_b16_;  // fp16 / bf16 only: A and B converted
  DeviceBuffer<unsigned char> a_, b_;  // n×n elements in the arithmetic's input format
  DeviceBuffer<float> c_;
  CublasHandle blas_;
  std::vector<float> host_c_;
};

}  // namespace gapbench::gemm
