// Family `overhead`, op `dense`, on the GPU: the step of kernels/dense.h as cuBLAS calls (the
// GEMMs, the bias gradients as a GEMV with a vector of ones, the SGD update as one axpy over the
// packed parameters) and the small kernels of kernels/dense.cu for the rest, all on the caller's
// stream. cuBLAS's default math mode, plain float32. CUDA builds only.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "kernels/base/cuda_libraries.h"
#include "kernels/base/gpu_memory.h"
#include "kernels/dense.h"

namespace gapbench::dense {

class CublasDenseStep {
 public:
  // Allocates every buffer and uploads the problem's batch and initial parameters
  // (synchronously, before returning).
  CublasDenseStep(const Problem& problem, cudaStream_t stream);

  // Device memory it allocates for `shape` (for require_free_device_memory).
  static std::size_t device_bytes(const DenseShape& shape);

  // One step with the batch already on the device, asynchronous: kLibraryCalls cuBLAS calls and
  // kKernels kernels of its own.
  void step(float lr);
  static constexpr std::size_t kLibraryCalls = 8, kKernels = 4;
  // The batch (inputs and labels) in from pageable host memory, the step, the loss back into
  // *loss_out, synchronize: a training loop that feeds from host arrays and reads the loss.
  void end_to_end(const Problem& problem, float* loss_out);
  // One step from the initial parameters, alone or end to end; loss and updated parameters
  // checked against the float64 step.
  Validation check(const Problem& problem, bool end_to_end_run);

 private:
  DenseShape shape_;
  cudaStream_t stream_;
  DeviceBuffer<float> x_;
  DeviceBuffer<std::int32_t> labels_;
  DeviceBuffer<float> params_, grad_, h_, logits_, dlogits_, dh_, row_loss_, loss_, ones_;
  CublasHandle blas_;
};

}  // namespace gapbench::dense
