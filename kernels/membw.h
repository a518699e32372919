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
// times the last-level cache (every instance of it: a 64-core EPYC has 8 L3 slices of 32 MiB, and
// each core's thread streams its slice of the buffer through its own), at least 256 MiB, rounded
// up to a power of two. 0 bytes (unknown) gives the 256 MiB floor.
std::size_t streaming_buffer_mib(std::size_t last_level_cache_bytes);

}  // namespace gapbench::membw
