#include "kernels/gemm.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/base/data.h"

namespace gapbench::gemm {

void reference(const float* a, const float* b, std::size_t m, std::size_t n, std::size_t k,
               double* c) {
  std::fill(c, c + m * n, 0.0);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t p = 0; p < k; ++p) {
      const double aip = a[i * k + p];
      for (std::size_t j = 0; j < n; ++j) c[i * n + j] += aip * b[p * n + j];
    }
}

void sgemm_cpu(const float* a, const float* b, float* c, std::size_t m, std::size_t n,
               std::size_t k) {
  const auto M = static_cast<blasint>(m), N = static_cast<blasint>(n), K = static_cast<blasint>(k);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, a, K, b, N, 0.0f, c, N);
}

Validation validate_sampled(const std::string& what, const float* c, const float* a, const float* b,
                            std::size_t m, std::size_t n, std::size_t k, std::size_t samples,
                            Arithmetic arithmetic, Arithmetic stored) {
  const double e = input_roundoff(arithmetic);
  const double read = (1.0 + e) * (1.0 + e) - 1.0;  // two inputs, each read to relative error e
  samples = std::min(samples, m * n);
  std::vector<float> got(samples);
  std::vector<double> ref(samples);
  double bound = 0.0;
  for (std::size_t s = 0; s < samples; ++s) {
    // Fixed stream: the same elements on every run, spread over the whole matrix.
    const std::size_t idx = samples == m * n ? s : element_hash(0, 0x9e3779b9, s) % (m * n);
    const std::size_t i = idx / n, j = idx % n;
    double sum = 0.0, magnitude = 0.0;
    for (std::size_t p = 0; p < k; ++p) {
      const double term = static_cast<double>(a[i * k + p]) * b[p * n + j];
      sum += term;
      magnitude += std::fabs(term);
    }
    got[s] = c[idx];
    ref[s] = sum;
    bound = std::max(bound, (read + static_cast<double>(k) * kFloat32Roundoff) * magnitude);
  }
  // Storing rounds the computed value, within `bound` of the reference, to relative error
  // `out` (input_roundoff is 0 for float32, whose rounding the bound already counts).
  const double out = input_roundoff(stored);
  return validate(what, got.data(), ref.data(), samples, {bound * (1.0 + out), out});
}

// Stream ids of A and B under the seed.
SquareProblem::SquareProblem(std::size_t n, std::uint64_t seed)
    : n(n), a(uniform_floats(n * n, seed, 500)), b(uniform_floats(n * n, seed, 501)) {}

}  // namespace gapbench::gemm
