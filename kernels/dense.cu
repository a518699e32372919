// Op `dense`, GPU side: the small kernels of the training step that are not cuBLAS calls (the
// step's GEMMs, bias gradients and SGD update are cuBLAS, in bench/overhead_gpu.cpp), then their
// launchers. Arithmetic is float32, as in step_cpu; each kernel's float64 reference is in
// kernels/dense.cpp.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/dense.h"
#include "kernels/grid_stride.cuh"

namespace gapbench::dense {

namespace {

using grid::blocks_for;
using grid::kFullMask;
using grid::kWarp;
constexpr unsigned kThreads = 256;

// ---- kernels ----

__global__ void bias_relu_kernel(float* __restrict__ z, const float* __restrict__ bias,
                                 std::size_t total, std::size_t cols) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += stride) {
    z[i] = fmaxf(z[i] + bias[i % cols], 0.0f);
  }
}

// One warp per row, lane k holding class k (classes <= 32). Grid-stride over rows by warps; the
// row loop is warp-uniform, so every lane of a warp reaches the full-mask shuffles together.
__global__ void softmax_xent_kernel(const float* __restrict__ logits,
                                    const float* __restrict__ bias,
                                    const std::int32_t* __restrict__ labels, std::size_t rows,
                                    unsigned classes, float inv_rows, float* __restrict__ dlogits,
                                    float* __restrict__ row_loss) {
  const unsigned lane = threadIdx.x % kWarp;
  const std::size_t warp =
      (static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp;
  const std::size_t warps = static_cast<std::size_t>(gridDim.x) * blockDim.x / kWarp;
  const bool active = lane < classes;
  for (std::size_t r = warp; r < rows; r += warps) {
    const float z = active ? logits[r * classes + lane] + bias[lane] : -INFINITY;
    float top = z;
    for (unsigned offset = kWarp / 2; offset > 0; offset /= 2) {
      top = fmaxf(top, __shfl_xor_sync(kFullMask, top, offset));
    }
    const float e = active ? expf(z - top) : 0.0f;
    float sum = e;
    for (unsigned offset = kWarp / 2; offset > 0; offset /= 2) {
      sum += __shfl_xor_sync(kFullMask, sum, offset);
    }
    const int label = labels[r];
    const float z_label = __shfl_sync(kFullMask, z, label);
    if (active) {
      const float p = e / sum;
      dlogits[r * classes + lane] =
          (p - (static_cast<int>(lane) == label ? 1.0f : 0.0f)) * inv_rows;
    }
    if (lane == 0) row_loss[r] = logf(sum) - (z_label - top);
  }
}

// One block: strided partial sums, then a tree in shared memory; thread 0 writes the mean.
__global__ void mean_kernel(const float* __restrict__ x, std::size_t n, float* __restrict__ out) {
  __shared__ float partial[kThreads];
  float acc = 0.0f;
  for (std::size_t i = threadIdx.x; i < n; i += blockDim.x) acc += x[i];
  partial[threadIdx.x] = acc;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) *out = partial[0] / static_cast<float>(n);
}

__global__ void relu_backward_kernel(float* __restrict__ dh, const float* __restrict__ h,
                                     std::size_t n) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    if (!(h[i] > 0.0f)) dh[i] = 0.0f;
  }
}

}  // namespace

// ---- launchers ----

cudaError_t bias_relu_gpu(float* z, const float* bias, std::size_t rows, std::size_t cols,
                          cudaStream_t stream) {
  const std::size_t total = rows * cols;
  if (total > 0) {
    bias_relu_kernel<<<static_cast<unsigned>(blocks_for(total, kThreads)), kThreads, 0, stream>>>(
        z, bias, total, cols);
  }
  return cudaGetLastError();
}

cudaError_t softmax_xent_gpu(const float* logits, const float* bias, const std::int32_t* labels,
                             std::size_t rows, std::size_t classes, float* dlogits, float* row_loss,
                             cudaStream_t stream) {
  if (classes == 0 || classes > kWarp) return cudaErrorInvalidValue;
  if (rows > 0) {
    constexpr std::size_t kWarpsPerBlock = kThreads / kWarp;
    softmax_xent_kernel<<<static_cast<unsigned>(blocks_for(rows, kWarpsPerBlock)), kThreads, 0,
                          stream>>>(logits, bias, labels, rows, static_cast<unsigned>(classes),
                                    1.0f / static_cast<float>(rows), dlogits, row_loss);
  }
  return cudaGetLastError();
}

cudaError_t mean_gpu(const float* x, std::size_t n, float* out, cudaStream_t stream) {
  if (n == 0) return cudaErrorInvalidValue;
  mean_kernel<<<1, kThreads, 0, stream>>>(x, n, out);
  return cudaGetLastError();
}

cudaError_t relu_backward_gpu(float* dh, const float* h, std::size_t n, cudaStream_t stream) {
  if (n > 0) {
    relu_backward_kernel<<<static_cast<unsigned>(blocks_for(n, kThreads)), kThreads, 0, stream>>>(
        dh, h, n);
  }
  return cudaGetLastError();
}

}  // namespace gapbench::dense
