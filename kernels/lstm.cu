// Family `lstm`, GPU side: the fused pointwise kernel of one step, then its launcher (declared in
// kernels/lstm_gpu.h). The GEMMs are cuBLAS's (kernels/lstm_gpu.cpp).
//
// One thread per state element (batch row n, hidden unit j), grid-stride: it reads its four
// pre-activations (gates, hoisted projection, bias), applies the gates and writes c and h.
// Consecutive threads take consecutive j, so every read and write is coalesced. expf and tanhf
// are CUDA's accurate ones (no --use_fast_math): within 2 ulp, as the tolerance assumes. For
// very negative z, expf(-z) is +inf and σ(z) = 1/(1+inf) = 0, as it should be.
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstddef>

#include "kernels/grid_stride.cuh"
#include "kernels/lstm_gpu.h"

namespace gapbench::lstm {

namespace {

constexpr unsigned kThreads = 256;

__device__ __forceinline__ float sigmoid(float z) { return 1.0f / (1.0f + expf(-z)); }

// c_prev and c may alias (each element is read before it is written), so neither is __restrict__.
__global__ void pointwise_kernel(unsigned batch, unsigned hidden, const float* __restrict__ gates,
                                 const float* __restrict__ xproj, const float* __restrict__ b,
                                 const float* c_prev, float* __restrict__ h, float* c) {
  const unsigned total = batch * hidden;
  const unsigned stride = gridDim.x * blockDim.x;
  for (unsigned k = blockIdx.x * blockDim.x + threadIdx.x; k < total; k += stride) {
    const unsigned n = k / hidden;
    const unsigned j = k - n * hidden;
    const float* z = gates + static_cast<std::size_t>(n) * 4 * hidden;
    const float* x = xproj + static_cast<std::size_t>(n) * 4 * hidden;
    const float i = sigmoid(z[j] + x[j] + b[j]);
    const float f = sigmoid(z[hidden + j] + x[hidden + j] + b[hidden + j]);
    const float g = tanhf(z[2 * hidden + j] + x[2 * hidden + j] + b[2 * hidden + j]);
    const float o = sigmoid(z[3 * hidden + j] + x[3 * hidden + j] + b[3 * hidden + j]);
    const float cj = f * c_prev[k] + i * g;
    c[k] = cj;
    h[k] = o * tanhf(cj);
  }
}

}  // namespace

cudaError_t pointwise_gpu(std::size_t batch, std::size_t hidden, const float* gates,
                          const float* xproj, const float* b, const float* c_prev, float* h,
                          float* c, cudaStream_t stream) {
  const std::size_t total = batch * hidden;
  // 32-bit indices: k + stride must not wrap, and 4·hidden fits the gate offsets.
  if (total == 0) return cudaSuccess;
  if (total + grid::kMaxBlocks * kThreads > UINT_MAX || 4 * hidden > UINT_MAX) {
    return cudaErrorInvalidValue;
  }
  const std::size_t blocks = grid::blocks_for(total, kThreads);
  pointwise_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      static_cast<unsigned>(batch), static_cast<unsigned>(hidden), gates, xproj, b, c_prev, h, c);
  return cudaGetLastError();
}

}  // namespace gapbench::lstm
