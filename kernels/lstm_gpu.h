// Family `lstm`, GPU `cublas` and `cublas_graph` variants (kernels/lstm_gpu.cpp) and the fused
// pointwise kernel they share (kernels/lstm.cu). CUDA builds only.
//
// CublasLstm is the CPU `blas` variant on the GPU: the input projection of all steps hoisted into
// one cuBLAS SGEMM, then per step one SGEMM for all four gates (h_{t-1} · W[input:]) and one
// fused pointwise kernel: two launches a step. The weights stay in the reference's row-major
// layout: cuBLAS is column-major, so each row-major C = A·B runs as Cᵀ = Bᵀ·Aᵀ, no transposes.
// cuBLAS's default math mode: plain float32 (no TF32), the arithmetic of peak/sgemm/gpu.
//
// The graph variant captures the same calls once (kernels/base/cuda_graph.h) and replays them.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "kernels/base/cuda_libraries.h"
#include "kernels/base/gpu_memory.h"
#include "kernels/lstm.h"

namespace gapbench::lstm {

// One launch, one thread per state element: z = gates + xproj + b per batch row (gates, xproj
// [batch][4·hidden] on the device), then the gates and the cell update; h, c, c_prev
// [batch][hidden], c may be c_prev (in place). Returns the launch's status.
cudaError_t pointwise_gpu(std::size_t batch, std::size_t hidden, const float* gates,
                          const float* xproj, const float* b, const float* c_prev, float* h,
                          float* c, cudaStream_t stream);

class CublasLstm {
 public:
  // Uploads W and b and allocates every buffer (synchronously, before returning). Throws
  // std::invalid_argument when the weights do not fit the shape.
  CublasLstm(const Shape& shape, const Weights& weights, cudaStream_t stream);

  // Device memory this variant allocates for `shape` (for require_free_device_memory).
  static std::size_t device_bytes(const Shape& shape);

  // Device inputs the caller fills: x [steps][batch][input], h0 and c0 [batch][hidden].
  float* x() const { return x_.data(); }
  float* h0() const { return h0_.data(); }
  float* c0() const { return c0_.data(); }
  // Device outputs: h_seq [steps][batch][hidden] (h_t at t), c after step t [batch][hidden].
  float* h_seq() const { return h_seq_.data(); }
  float* c_after(std::size_t t) const { return c_[t % 2].data(); }

  // All asynchronous on the stream:
  void enqueue_projection();         // xproj = x · W[0:input], one SGEMM
  void enqueue_step(std::size_t t);  // SGEMM h_{t-1} · W[input:], then the pointwise kernel
  void enqueue_sequence();           // the projection, then every step

  const Shape& shape() const { return shape_; }
  cudaStream_t stream() const { return stream_; }

 private:
  Shape shape_;
  cudaStream_t stream_;
  DeviceBuffer<unsigned char> blas_workspace_;  // declared first: freed after the handle
  CublasHandle blas_;
  DeviceBuffer<float> w_, b_, x_, xproj_, gates_, h0_, c0_, h_seq_;
  DeviceBuffer<float> c_[2];  // c after step t is c_[t % 2]: no copy of c0 per sequence
};

}  // namespace gapbench::lstm
