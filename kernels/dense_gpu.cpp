#include "kernels/dense_gpu.h"

#include <limits>
#include <vector>

namespace gapbench::dense {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

}  // namespace

CublasDenseStep::CublasDenseStep(const Problem& problem, cudaStream_t stream)
    : shape_(problem.shape),
      stream_(stream),
      x_(shape_.batch * shape_.in),
      labels_(shape_.batch),
      params_(shape_.params()),
      grad_(shape_.params()),
      h_(shape_.batch * shape_.hidden),
      logits_(shape_.batch * shape_.out),
      dlogits_(shape_.batch * shape_.out),
      dh_(shape_.batch * shape_.hidden),
      row_loss_(shape_.batch),
      loss_(1),
      ones_(shape_.batch),
      blas_(stream) {
  copy_to_device(x_, problem.x.data(), stream_);
  copy_to_device(labels_, problem.labels.data(), stream_);
  copy_to_device(params_, problem.params.data(), stream_);
  const std::vector<float> host_ones(shape_.batch, 1.0f);
  copy_to_device(ones_, host_ones.data(), stream_);
  GAPBENCH_CHECK(cudaStreamSynchronize(stream_));  // before host_ones goes
}

std::size_t CublasDenseStep::device_bytes(const DenseShape& s) {
  const std::size_t floats = s.batch * s.in + 2 * s.params() + 2 * s.batch * s.hidden +
                             2 * s.batch * s.out + 2 * s.batch + 1;
  return floats * sizeof(float) + s.batch * sizeof(std::int32_t);
}

// Row-major matrices, column-major cuBLAS: a row-major M×N product C = op(A)·op(B) is the
// column-major Cᵀ = op(B)ᵀ·op(A)ᵀ, so every call passes B before A with the same ops, the
// dimensions as (N, M, K), and each matrix's row length as its leading dimension.
void CublasDenseStep::step(float lr) {
  const cudaStream_t s = stream_;
  const cublasHandle_t handle = blas_.get();
  const int B = static_cast<int>(shape_.batch), I = static_cast<int>(shape_.in),
            H = static_cast<int>(shape_.hidden), O = static_cast<int>(shape_.out);
  const float one = 1.0f, zero = 0.0f, minus_lr = -lr;
  float* p = params_.data();
  float* g = grad_.data();
  const float* w1 = p + shape_.w1();
  const float* b1 = p + shape_.b1();
  const float* w2 = p + shape_.w2();
  const float* b2 = p + shape_.b2();
  const auto N = CUBLAS_OP_N, T = CUBLAS_OP_T;

  // Forward. h = x·W1 [B×H], then ReLU(h + b1) in place; logits = h·W2 [B×O].
  GAPBENCH_CHECK(
      cublasSgemm(handle, N, N, H, B, I, &one, w1, H, x_.data(), I, &zero, h_.data(), H));
  GAPBENCH_CHECK(bias_relu_gpu(h_.data(), b1, shape_.batch, shape_.hidden, s));
  GAPBENCH_CHECK(
      cublasSgemm(handle, N, N, O, B, H, &one, w2, O, h_.data(), H, &zero, logits_.data(), O));
  // Loss (b2 added inside) and dlogits = (softmax - onehot) / B [B×O].
  GAPBENCH_CHECK(softmax_xent_gpu(logits_.data(), b2, labels_.data(), shape_.batch, shape_.out,
                                  dlogits_.data(), row_loss_.data(), s));
  GAPBENCH_CHECK(mean_gpu(row_loss_.data(), shape_.batch, loss_.data(), s));

  // Backward. dW2 = hᵀ·dlogits [H×O]; db2 = column sums of dlogits (as column-major O×B
  // times ones).
  GAPBENCH_CHECK(cublasSgemm(handle, N, T, O, H, B, &one, dlogits_.data(), O, h_.data(), H, &zero,
                             g + shape_.w2(), O));
  GAPBENCH_CHECK(cublasSgemv(handle, N, O, B, &one, dlogits_.data(), O, ones_.data(), 1, &zero,
                             g + shape_.b2(), 1));
  // dh = dlogits·W2ᵀ [B×H] (W2 before its update), masked where ReLU was off.
  GAPBENCH_CHECK(
      cublasSgemm(handle, T, N, H, B, O, &one, w2, O, dlogits_.data(), O, &zero, dh_.data(), H));
  GAPBENCH_CHECK(relu_backward_gpu(dh_.data(), h_.data(), dh_.size(), s));
  // dW1 = xᵀ·dh [I×H]; db1 = column sums of dh.
  GAPBENCH_CHECK(cublasSgemm(handle, N, T, H, I, B, &one, dh_.data(), H, x_.data(), I, &zero,
                             g + shape_.w1(), H));
  GAPBENCH_CHECK(cublasSgemv(handle, N, H, B, &one, dh_.data(), H, ones_.data(), 1, &zero,
                             g + shape_.b1(), 1));

  // SGD: params -= lr · grad.
  GAPBENCH_CHECK(cublasSaxpy(handle, static_cast<int>(shape_.params()), &minus_lr, g, 1, p, 1));
}

void CublasDenseStep::end_to_end(const Problem& problem, float* loss_out) {
  copy_to_device(x_, problem.x.data(), stream_);
  copy_to_device(labels_, problem.labels.data(), stream_);
  step(kLearningRate);
  copy_to_host(loss_out, loss_, stream_);
  GAPBENCH_CHECK(cudaStreamSynchronize(stream_));
}

Validation CublasDenseStep::check(const Problem& problem, bool end_to_end_run) {
  copy_to_device(params_, problem.params.data(), stream_);
  poison(loss_, stream_);
  float got_loss = kNaN;
  if (end_to_end_run) {
    end_to_end(problem, &got_loss);
  } else {
    step(kLearningRate);
    copy_to_host(&got_loss, loss_, stream_);
  }
  std::vector<float> got_params(params_.size(), kNaN);
  copy_to_host(got_params.data(), params_, stream_);
  GAPBENCH_CHECK(cudaStreamSynchronize(stream_));
  return check_step(shape_, problem.ref, got_loss, got_params.data());
}

}  // namespace gapbench::dense
