#include "kernels/gemm_gpu.h"

#include <algorithm>
#include <limits>

namespace gapbench::gemm {

CublasSgemm::CublasSgemm(const SquareProblem& problem, cudaStream_t stream)
    : n_(problem.n),
      stream_(stream),
      a_(n_ * n_),
      b_(n_ * n_),
      c_(n_ * n_),
      blas_(stream),
      host_c_(n_ * n_) {
  upload(problem);
  GAPBENCH_CHECK(cudaStreamSynchronize(stream_));
}

void CublasSgemm::upload(const SquareProblem& problem) {
  copy_to_device(a_, problem.a.data(), stream_);
  copy_to_device(b_, problem.b.data(), stream_);
}

// Row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ: pass B first, no transposes.
void CublasSgemm::multiply() {
  const int n = static_cast<int>(n_);
  const float one = 1.0f, zero = 0.0f;
  GAPBENCH_CHECK(cublasSgemm(blas_.get(), CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, b_.data(), n,
                             a_.data(), n, &zero, c_.data(), n));
}

void CublasSgemm::end_to_end(const SquareProblem& problem) {
  upload(problem);
  multiply();
  copy_to_host(host_c_.data(), c_, stream_);
  GAPBENCH_CHECK(cudaStreamSynchronize(stream_));
}

Validation CublasSgemm::check(const SquareProblem& problem, bool end_to_end_run) {
  GAPBENCH_CHECK(cudaMemsetAsync(c_.data(), 0xFF, c_.bytes(), stream_));
  std::fill(host_c_.begin(), host_c_.end(), std::numeric_limits<float>::quiet_NaN());
  if (end_to_end_run) {
    end_to_end(problem);
  } else {
    multiply();
    copy_to_host(host_c_.data(), c_, stream_);
    GAPBENCH_CHECK(cudaStreamSynchronize(stream_));
  }
  return problem.check("sgemm", host_c_.data());
}

}  // namespace gapbench::gemm
