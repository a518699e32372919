// Family `overhead`, op `dense`: one training step of the classic MNIST-style dense network,
// x[batch × in] → hidden = ReLU(x·W1 + b1) → logits = hidden·W2 + b2 → softmax cross-entropy
// (mean over the batch) → backward → plain SGD, params -= lr · grad. 784 → 128 → 10 in the
// benchmark; any shape in the tests.
//
// Layout: row-major matrices; the parameters are one packed float vector [W1 | b1 | W2 | b2]
// (W1 is in × hidden, W2 hidden × out), and so is the gradient, so SGD is one axpy.
// ReLU's derivative at 0 is taken as 0 (the unit counts as off), here and in every kernel.
//
// This file: the float64 reference (loss, gradient, one step, and the tolerance a float32 step is
// held to), the CPU step (OpenBLAS GEMMs plus small loops), and the GPU pieces that are not
// cuBLAS calls (kernels/dense.cu). The GPU step itself, cuBLAS calls and these kernels, is
// kernels/dense_gpu.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/base/validate.h"

#if GAPBENCH_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace gapbench::dense {

struct DenseShape {
  std::size_t batch = 0, in = 0, hidden = 0, out = 0;
  // Offsets of each tensor in the packed parameter (and gradient) vector.
  std::size_t w1() const { return 0; }
  std::size_t b1() const { return in * hidden; }
  std::size_t w2() const { return b1() + hidden; }
  std::size_t b2() const { return w2() + hidden * out; }
  std::size_t params() const { return b2() + out; }
};

// The MNIST-style network at a given batch size.
inline DenseShape mnist_shape(std::size_t batch) { return {batch, 784, 128, 10}; }

// Seeded inputs: pixels in [0, 1), labels in [0, out), and initial parameters (weights Glorot
// uniform, biases uniform in ±0.1: non-zero, so a kernel that drops a bias cannot pass).
std::vector<float> random_inputs(const DenseShape& s, std::uint64_t seed);
std::vector<std::int32_t> random_labels(const DenseShape& s, std::uint64_t seed);
std::vector<float> initial_params(const DenseShape& s, std::uint64_t seed);

// ---- float64 reference ----

// The ops the step is made of, on float64 arrays (also the references of the GPU kernels).
// h[r, c] = max(z[r, c] + bias[c], 0)
void bias_relu_reference(const double* z, const double* bias, std::size_t rows, std::size_t cols,
                         double* h);
// Adds bias to each row of logits, then per row: p = softmax, loss = -log p[label],
// dlogits = (p - onehot(label)) / rows. Returns the mean loss; row_loss (nullable) gets each row's.
double softmax_xent_reference(const double* logits, const double* bias, const std::int32_t* labels,
                              std::size_t rows, std::size_t classes, double* dlogits,
                              double* row_loss);
// dz = h > 0 ? dh : 0
void relu_backward_reference(const double* dh, const double* h, std::size_t n, double* dz);

// Mean loss of the batch at `params` (packed, float64).
double loss_reference(const DenseShape& s, const double* params, const float* x,
                      const std::int32_t* labels);
// The same, and its gradient with respect to every parameter (packed like params).
double gradient_reference(const DenseShape& s, const double* params, const float* x,
                          const std::int32_t* labels, double* grad);

// One step from float32 parameters, in float64, with the tolerances a float32 step is held to.
struct StepReference {
  double loss = 0.0;
  std::vector<double> params;  // after the update
  // Per tensor, for |got - ref| of the updated parameters:
  // docs/reading-results.md#the-dense-training-step.
  Tolerance w1, b1, w2, b2;
  // Units at ReLU's kink: at_kink marks them, kink_w1 / kink_b1 is the largest gradient share a
  // float32 pass may keep or drop (0 when none), w1_at_kink / b1_at_kink the widened tolerances.
  std::vector<std::uint8_t> at_kink;
  double kink_w1 = 0.0, kink_b1 = 0.0;
  Tolerance w1_at_kink, b1_at_kink;
  Tolerance loss_tolerance;
};
inline constexpr double kGradRtol = 1e-3;
inline constexpr double kLossRtol = 1e-3;
StepReference step_reference(const DenseShape& s, const float* params, const float* x,
                             const std::int32_t* labels, float lr);

// A float32 step's loss and updated parameters against the reference: the first tensor that
// fails, or a passing Validation over all of them.
Validation check_step(const DenseShape& s, const StepReference& ref, float loss,
                      const float* params_after);

// The step's learning rate (plain SGD, as the classic Keras example would use).
inline constexpr float kLearningRate = 0.1f;

// One batch of the MNIST-style net: seeded inputs, labels and initial parameters, and the float64
// reference step (at kLearningRate) from them, shared by the CPU and GPU steps.
struct Problem {
  Problem(std::size_t batch, std::uint64_t seed);
  static std::string key(std::size_t batch) { return "dense:" + std::to_string(batch); }

  DenseShape shape;
  std::vector<float> x;
  std::vector<std::int32_t> labels;
  std::vector<float> params;  // before the step
  StepReference ref;
};

// ---- CPU step ----

// Scratch space of one step at one shape.
struct CpuWorkspace {
  explicit CpuWorkspace(const DenseShape& s);
  std::vector<float> h, logits, dlogits, dh, grad;
  std::vector<double> bias_sum;
};

// One step in place on `params`; returns the mean loss (of the parameters before the update).
float step_cpu(const DenseShape& s, float* params, const float* x, const std::int32_t* labels,
               float lr, CpuWorkspace& ws);

#if GAPBENCH_WITH_CUDA
// ---- GPU kernels (kernels/dense.cu): device pointers, asynchronous on `stream`; each returns
// its launch status for the caller's GAPBENCH_CHECK. ----

// In place: z[r, c] = max(z[r, c] + bias[c], 0).
cudaError_t bias_relu_gpu(float* z, const float* bias, std::size_t rows, std::size_t cols,
                          cudaStream_t stream);
// softmax_xent_reference in float32, one warp per row: classes must be 1..32
// (cudaErrorInvalidValue otherwise), every label in [0, classes).
cudaError_t softmax_xent_gpu(const float* logits, const float* bias, const std::int32_t* labels,
                             std::size_t rows, std::size_t classes, float* dlogits, float* row_loss,
                             cudaStream_t stream);
// out[0] = mean of x[0..n); n must be positive (cudaErrorInvalidValue otherwise).
cudaError_t mean_gpu(const float* x, std::size_t n, float* out, cudaStream_t stream);
// In place: dh[i] = h[i] > 0 ? dh[i] : 0.
cudaError_t relu_backward_gpu(float* dh, const float* h, std::size_t n, cudaStream_t stream);
#endif

}  // namespace gapbench::dense
