#include "kernels/membw.h"

#include <cstring>

namespace gapbench::membw {

void copy(float* dst, const float* src, std::size_t n) { std::memcpy(dst, src, n * sizeof(float)); }

void triad(float* __restrict a, const float* __restrict b, const float* __restrict c, float scalar,
           std::size_t n) {
  // Contiguous, no aliasing: the compiler vectorizes this loop with the widest SIMD available.
  for (std::size_t i = 0; i < n; ++i) a[i] = b[i] + scalar * c[i];
}

void triad_reference(const float* b, const float* c, float scalar, std::size_t n, double* out) {
  for (std::size_t i = 0; i < n; ++i) {
    out[i] = static_cast<double>(b[i]) + static_cast<double>(scalar) * static_cast<double>(c[i]);
  }
}

}  // namespace gapbench::membw
