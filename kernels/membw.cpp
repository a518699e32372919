#include "kernels/membw.h"

#include <cstring>
#include <limits>

namespace gapbench::membw {

void copy(float* dst, const float* src, std::size_t n) { std::memcpy(dst, src, n * sizeof(float)); }

void triad(float* __restrict a, const float* __restrict b, const float* __restrict c, float scalar,
           std::size_t n) {
  // Contiguous, no aliasing: the compiler vectorizes this loop with the widest SIMD available.
  for (std::size_t i = 0; i < n; ++i) a[i] = b[i] + scalar * c[i];
}

double read_sum(const float* __restrict x, std::size_t n) {
  constexpr std::size_t kLanes = 16;    // independent float sums: the loop vectorizes
  constexpr std::size_t kBlock = 1024;  // 64 adds per lane before each flush into the total
  double total = 0.0;
  std::size_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    float acc[kLanes] = {};
    for (std::size_t j = 0; j < kBlock; j += kLanes) {
      for (std::size_t l = 0; l < kLanes; ++l) acc[l] += x[i + j + l];
    }
    for (float a : acc) total += a;
  }
  for (; i < n; ++i) total += x[i];
  return total;
}

double read_sum_reference(const float* x, std::size_t n) {
  double total = 0.0;
  for (std::size_t i = 0; i < n; ++i) total += x[i];
  return total;
}

void triad_reference(const float* b, const float* c, float scalar, std::size_t n, double* out) {
  for (std::size_t i = 0; i < n; ++i) {
    out[i] = static_cast<double>(b[i]) + static_cast<double>(scalar) * static_cast<double>(c[i]);
  }
}

std::size_t streaming_buffer_mib(std::size_t reachable_cache_bytes) {
  constexpr std::size_t kMiB = std::size_t{1} << 20;
  // Rounded up without overflow; past half of size_t's range the buffer could not be addressed
  // anyway, so the doubling stops there rather than wrap to 0.
  const std::size_t cache_mib = reachable_cache_bytes / kMiB + (reachable_cache_bytes % kMiB != 0);
  constexpr std::size_t kLargest = std::numeric_limits<std::size_t>::max() / kMiB / 2 + 1;
  const std::size_t wanted = cache_mib >= kLargest / 4 ? kLargest : 4 * cache_mib;
  std::size_t mib = 256;
  while (mib < wanted) mib *= 2;
  return mib;
}

}  // namespace gapbench::membw
