// Dense matrix multiply, the suite's one GEMM convention: row-major C[m×n] = A[m×k] · B[k×n],
// float32 data. The fast paths are the libraries' (cblas_sgemm, cublasSgemm); this file holds the
// float64 reference they are validated against and the rounding bound that sets the tolerance.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/base/validate.h"

namespace gapbench::gemm {

// C = A · B with float64 accumulation.
void reference(const float* a, const float* b, std::size_t m, std::size_t n, std::size_t k,
               double* c);

// cblas_sgemm on row-major data (OpenBLAS, all its threads).
void sgemm_cpu(const float* a, const float* b, float* c, std::size_t m, std::size_t n,
               std::size_t k);

// Checks `samples` seeded elements of c against the float64 reference (a full float64 product of
// a 4096² GEMM would take minutes), with the worst-case rounding bound of a dot product of length
// k in `arithmetic`, plus one rounding of each result to `stored`, the format C is held in
// (float32, or float16 / bfloat16 as a half-precision matmul returns it):
// docs/reading-results.md#gemm-and-convolution.
Validation validate_sampled(const std::string& what, const float* c, const float* a, const float* b,
                            std::size_t m, std::size_t n, std::size_t k, std::size_t samples,
                            Arithmetic arithmetic = Arithmetic::float32,
                            Arithmetic stored = Arithmetic::float32);

// The square multiply every SGEMM benchmark times: two seeded n×n matrices A and B (row-major,
// uniform in [-1, 1)).
struct SquareProblem {
  SquareProblem(std::size_t n, std::uint64_t seed);
  static std::string key(std::size_t n) { return "sgemm:" + std::to_string(n); }
  double flops() const { return 2.0 * static_cast<double>(n) * static_cast<double>(n * n); }
  // C = A·B, 256 sampled elements checked with the tolerance of `arithmetic`, C held in `stored`.
  Validation check(const std::string& what, const float* c,
                   Arithmetic arithmetic = Arithmetic::float32,
                   Arithmetic stored = Arithmetic::float32) const {
    return validate_sampled(what, c, a.data(), b.data(), n, n, n, 256, arithmetic, stored);
  }

  std::size_t n;
  std::vector<float> a, b;
};

}  // namespace gapbench::gemm
