#include "kernels/gemm_gpu.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>

#include "kernels/base/narrow_gpu.h"

namespace gapbench::gemm {
namespace {

cudaDataType_t input_type(Arithmetic arithmetic) {
  switch (arithmetic) {
    case Arithmetic::fp16:
      return CUDA_R_16F;
    case Arithmetic::bf16:
      return CUDA_R_16BF;
    case Arithmetic::float32:
    case Arithmetic::tf32:
      break;
  }
  return CUDA_R_32F;
}

}  // namespace

CublasGemm::CublasGemm(const SquareProblem& problem, Arithmetic arithmetic, cudaStream_t stream)
    : n_(problem.n),
      stream_(stream),
      arithmetic_(arithmetic),
      host_a16_(input_bytes(arithmetic) == 2 ? to_16bit(problem.a, arithmetic)
                                             : std::vector<std::uint16_t>()),
      host_b16_(input_bytes(arithmetic) == 2 ? to_16bit(problem.b, arithmetic)
                                             : std::vector<std::uint16_t>()),
      a_(n_ * n_ * input_bytes(arithmetic)),
      b_(n_ * n_ * input_bytes(arithmetic)),
      c_(n_ * n_),
      blas_(stream),
      host_c_(n_ * n_) {
  upload(problem);
  GAPBENCH_CHECK(cudaStreamSynchronize(stream_));
}

std::size_t CublasGemm::device_bytes(std::size_t n, Arithmetic arithmetic) {
  return n * n * (2 * input_bytes(arithmetic) + sizeof(float));
}

// From pageable host memory, in the arithmetic's input format (fp16/bf16 converted once, at
// construction, as a mixed-precision model's tensors already are).
void CublasGemm::upload(const SquareProblem& problem) {
  const bool half = input_bytes(arithmetic_) == 2;
  const void* a = half ? static_cast<const void*>(host_a16_.data()) : problem.a.data();
  const void* b = half ? static_cast<const void*>(host_b16_.data()) : problem.b.data();
  GAPBENCH_CHECK(cudaMemcpyAsync(a_.data(), a, a_.bytes(), cudaMemcpyHostToDevice, stream_));
  GAPBENCH_CHECK(cudaMemcpyAsync(b_.data(), b, b_.bytes(), cudaMemcpyHostToDevice, stream_));
}

void CublasGemm::download() { copy_to_host(host_c_.data(), c_, stream_); }

// Row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ: pass B first, no transposes.
void CublasGemm::multiply() {
  const int n = static_cast<int>(n_);
  const float one = 1.0f, zero = 0.0f;
  if (arithmetic_ == Arithmetic::float32) {
    GAPBENCH_CHECK(cublasSgemm(blas_.get(), CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one,
                               reinterpret_cast<const float*>(b_.data()), n,
                               reinterpret_cast<const float*>(a_.data()), n, &zero, c_.data(), n));
    return;
  }
  const cudaDataType_t in = input_type(arithmetic_);
  const cublasComputeType_t compute =
      arithmetic_ == Arithmetic::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  GAPBENCH_CHECK(cublasGemmEx(blas_.get(), CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, b_.data(), in,
                              n, a_.data(), in, n, &zero, c_.data(), CUDA_R_32F, n, compute,
                              CUBLAS_GEMM_DEFAULT));
}

void CublasGemm::end_to_end(const SquareProblem& problem) {
  upload(problem);
  multiply();
  download();
  GAPBENCH_CHECK(cudaStreamSynchronize(stream_));
}

Validation CublasGemm::check(const SquareProblem& problem, bool end_to_end_run) {
  GAPBENCH_CHECK(cudaMemsetAsync(c_.data(), 0xFF, c_.bytes(), stream_));
  std::fill(host_c_.begin(), host_c_.end(), std::numeric_limits<float>::quiet_NaN());
  if (end_to_end_run) {
    end_to_end(problem);
  } else {
    multiply();
    download();
    GAPBENCH_CHECK(cudaStreamSynchronize(stream_));
  }
  return problem.check(std::string("gemm ") + math_name(arithmetic_), host_c_.data(), arithmetic_);
}

}  // namespace gapbench::gemm
