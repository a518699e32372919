// Family `preprocess`, GPU side: the kernels, then the launchers declared in preprocess.h.
//
// `*_elementwise_gpu` dispatches eagerly, one small launch per item (per row for sumsq, per image
// for image), as a framework's per-item Python loop does; the launch overhead is the point.
// `*_vectorized_gpu` is one launch over the whole batch. Both use the same device code per
// element, so they differ only in how the work is dispatched.
//
// Arithmetic is float32 as on the CPU: sumsq accumulates v*v per lane then reduces across the
// warp (a different summation order from the CPU, covered by sumsq_rtol); image computes
// x * (1.0f/255.0f) + delta clamped with fmaxf/fminf, the CPU variants' formula. nvcc contracts
// the multiply-add to one FMA, as g++ does for C++ on FMA hardware; either way the result is
// within kImageAtol of the reference.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/grid_stride.cuh"
#include "kernels/preprocess.h"

namespace gapbench::preprocess {

namespace {

using grid::blocks_for;
using grid::kFullMask;
using grid::kWarp;

// ---- kernels ----

// Sum over the 32 lanes of a warp; every lane of the warp must call it (full mask).
__device__ __forceinline__ float warp_sum(float v) {
  for (unsigned offset = kWarp / 2; offset > 0; offset /= 2) {
    v += __shfl_down_sync(kFullMask, v, offset);
  }
  return v;  // the total is in lane 0
}

// One warp sums the squares of one row: lanes stride over the columns (coalesced), then reduce;
// lane 0 writes. Every lane of the warp must call it (the shuffle uses the full mask).
__device__ __forceinline__ void warp_sumsq_row(const float* __restrict__ row, std::size_t cols,
                                               unsigned lane, float* __restrict__ out) {
  float acc = 0.0f;
  for (std::size_t j = lane; j < cols; j += kWarp) {
    const float v = row[j];
    acc += v * v;
  }
  acc = warp_sum(acc);
  if (lane == 0) *out = acc;
}

// Batched sumsq: one warp per row, grid-stride over rows. The row loop is warp-uniform (every
// lane of a warp has the same `warp`), so whole warps enter warp_sumsq_row together. Launched
// with blockDim.x a multiple of 32, so there are no partial warps.
__global__ void sumsq_rows_kernel(const float* __restrict__ x, std::size_t rows, std::size_t cols,
                                  float* __restrict__ out) {
  const unsigned lane = threadIdx.x % kWarp;
  const std::size_t warp =
      (static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp;
  const std::size_t warps = static_cast<std::size_t>(gridDim.x) * blockDim.x / kWarp;
  for (std::size_t r = warp; r < rows; r += warps) {
    warp_sumsq_row(x + r * cols, cols, lane, out + r);
  }
}

// Per-row sumsq: launched with exactly one warp (<<<1, 32>>>) for one row.
__global__ void sumsq_one_row_kernel(const float* __restrict__ row, std::size_t cols,
                                     float* __restrict__ out) {
  warp_sumsq_row(row, cols, threadIdx.x % kWarp, out);
}

__device__ __forceinline__ float brighten(std::uint8_t v, float delta) {
  const float y = static_cast<float>(v) * (1.0f / 255.0f) + delta;
  return fminf(fmaxf(y, 0.0f), 1.0f);
}

// The image op over n images of h x w x c (HWC), one thread per output element, grid-stride.
// Index is 32-bit when the whole index range fits (integer division is much cheaper), else
// 64-bit. Output writes are coalesced; a flipped row's reads run right-to-left by pixel.
template <class Index>
__global__ void image_kernel(const std::uint8_t* __restrict__ in, Index total, Index image_elements,
                             Index row_elements, Index w, Index c, const float* __restrict__ delta,
                             const std::uint8_t* __restrict__ flip, float* __restrict__ out) {
  const Index stride = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index k = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; k < total;
       k += stride) {
    const Index image = k / image_elements;
    const Index in_row = k % row_elements;  // position inside the row: x * c + ch
    const Index row_start = k - in_row;
    Index src = k;
    if (flip[image]) {
      const Index x = in_row / c;
      const Index ch = in_row - x * c;
      src = row_start + (w - 1 - x) * c + ch;
    }
    out[k] = brighten(in[src], delta[image]);
  }
}

// One launch of image_kernel over `shape` (n images starting at the given pointers).
void launch_image(const std::uint8_t* in, ImageShape shape, const float* delta,
                  const std::uint8_t* flip, float* out, cudaStream_t stream) {
  constexpr unsigned kThreads = 256;
  const std::size_t total = shape.pixels();
  const std::size_t blocks = blocks_for(total, kThreads);
  // 32-bit indices when k + stride cannot wrap: total plus one grid's worth of threads fits.
  if (total + blocks * kThreads <= UINT32_MAX) {
    image_kernel<std::uint32_t><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
        in, static_cast<std::uint32_t>(total), static_cast<std::uint32_t>(shape.image_elements()),
        static_cast<std::uint32_t>(shape.w * shape.c), static_cast<std::uint32_t>(shape.w),
        static_cast<std::uint32_t>(shape.c), delta, flip, out);
  } else {
    image_kernel<std::size_t><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
        in, total, shape.image_elements(), shape.w * shape.c, shape.w, shape.c, delta, flip, out);
  }
}

}  // namespace

// ---- launchers ----

cudaError_t sumsq_elementwise_gpu(const float* x, std::size_t rows, std::size_t cols, float* out,
                                  cudaStream_t stream) {
  for (std::size_t r = 0; r < rows; ++r) {
    sumsq_one_row_kernel<<<1, kWarp, 0, stream>>>(x + r * cols, cols, out + r);
    const cudaError_t status = cudaGetLastError();
    if (status != cudaSuccess) return status;
  }
  return cudaGetLastError();
}

cudaError_t sumsq_vectorized_gpu(const float* x, std::size_t rows, std::size_t cols, float* out,
                                 cudaStream_t stream) {
  constexpr std::size_t kWarpsPerBlock = 8;
  constexpr unsigned kThreads = kWarpsPerBlock * kWarp;
  if (rows > 0) {
    const std::size_t blocks = blocks_for(rows, kWarpsPerBlock);
    sumsq_rows_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(x, rows, cols, out);
  }
  return cudaGetLastError();
}

cudaError_t image_elementwise_gpu(const std::uint8_t* in, ImageShape shape, const float* delta,
                                  const std::uint8_t* flip, float* out, cudaStream_t stream) {
  const std::size_t elements = shape.image_elements();
  if (elements > 0) {
    const ImageShape one{1, shape.h, shape.w, shape.c};
    for (std::size_t i = 0; i < shape.n; ++i) {
      launch_image(in + i * elements, one, delta + i, flip + i, out + i * elements, stream);
      const cudaError_t status = cudaGetLastError();
      if (status != cudaSuccess) return status;
    }
  }
  return cudaGetLastError();
}

cudaError_t image_vectorized_gpu(const std::uint8_t* in, ImageShape shape, const float* delta,
                                 const std::uint8_t* flip, float* out, cudaStream_t stream) {
  if (shape.pixels() > 0) launch_image(in, shape, delta, flip, out, stream);
  return cudaGetLastError();
}

}  // namespace gapbench::preprocess
