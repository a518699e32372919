// Memory-bandwidth kernels: the suite measures its own CPU memory peak with them (family `peak`)
// and the CPU side of family `transfer` pays a host copy where the GPU path pays a PCIe copy.
#pragma once

#include <cstddef>

namespace gapbench::membw {

// dst[0..n) = src[0..n); the C library's memcpy (what a framework's CPU path uses).
void copy(float* dst, const float* src, std::size_t n);

// STREAM's triad, a[i] = b[i] + scalar * c[i]: two reads and a write per element, vectorized.
void triad(float* a, const float* b, const float* c, float scalar, std::size_t n);

// Sum of x[0..n): a pure streaming read, the ceiling of a reduction such as a row-wise sum of
// squares. Float lanes, flushed into a float64 total every block, keep it exact enough to check.
double read_sum(const float* x, std::size_t n);
double read_sum_reference(const float* x, std::size_t n);

// float64 reference of triad.
void triad_reference(const float* b, const float* c, float scalar, std::size_t n, double* out);

// MiB of the buffer a bandwidth measurement streams so that it reads memory, not a cache: four
// times the cache the measuring cores reach (fixtures/cache_size.h: their CCX's L3 on AMD, the
// socket's LLC on Intel), rounded up to a power of two, and at least 256 MiB: below that a
// memory-side cache the probe cannot see (an L4, a memory-side HBM cache) could still hold the
// buffer, and 256 MiB costs a fraction of a second to touch. 0 bytes (unknown) gives the floor.
std::size_t streaming_buffer_mib(std::size_t reachable_cache_bytes);

}  // namespace gapbench::membw
