#include "kernels/lstm_gpu.h"

#include <vector>

namespace gapbench::lstm {

namespace {

// cuBLAS's recommended workspace on Hopper (4 MiB suffices for older GPUs). Set explicitly so
// that graph capture never makes cuBLAS allocate one.
constexpr std::size_t kBlasWorkspaceBytes = 32u << 20;

template <class T>
void upload(const DeviceBuffer<T>& dst, const std::vector<T>& src, cudaStream_t stream) {
  GAPBENCH_CHECK(
      cudaMemcpyAsync(dst.data(), src.data(), dst.bytes(), cudaMemcpyHostToDevice, stream));
}

int as_int(std::size_t n) { return static_cast<int>(n); }  // check_shape bounds every size

}  // namespace

std::size_t CublasLstm::device_bytes(const Shape& s) {
  const std::size_t floats = s.weight_size() + s.gates() + s.x_size() +
                             s.steps * s.batch * s.gates() + s.batch * s.gates() +
                             4 * s.state_size() + s.h_seq_size();
  return floats * sizeof(float) + kBlasWorkspaceBytes;
}

CublasLstm::CublasLstm(const Shape& shape, const Weights& weights, cudaStream_t stream)
    : shape_((check_weights(shape, weights), shape)),
      stream_(stream),
      blas_workspace_(kBlasWorkspaceBytes),
      blas_(stream),
      w_(shape.weight_size()),
      b_(shape.gates()),
      x_(shape.x_size()),
      xproj_(shape.steps * shape.batch * shape.gates()),
      gates_(shape.batch * shape.gates()),
      h0_(shape.state_size()),
      c0_(shape.state_size()),
      h_seq_(shape.h_seq_size()),
      c_{DeviceBuffer<float>(shape.state_size()), DeviceBuffer<float>(shape.state_size())} {
  // After cublasSetStream (in CublasHandle), which resets the workspace to cuBLAS's own.
  GAPBENCH_CHECK(cublasSetWorkspace(blas_.get(), blas_workspace_.data(), blas_workspace_.bytes()));
  upload(w_, weights.w, stream_);
  upload(b_, weights.b, stream_);
  GAPBENCH_CHECK(cudaStreamSynchronize(stream_));  // the host vectors may go after we return
}

void CublasLstm::enqueue_projection() {
  const float one = 1.0f, zero = 0.0f;
  const int G = as_int(shape_.gates()), I = as_int(shape_.input);
  const int rows = as_int(shape_.steps * shape_.batch);
  // Row-major xproj[rows x G] = x[rows x I] · W[0:I][G], as column-major xprojᵀ = Wᵀ · xᵀ.
  GAPBENCH_CHECK(cublasSgemm(blas_.get(), CUBLAS_OP_N, CUBLAS_OP_N, G, rows, I, &one, w_.data(), G,
                             x_.data(), I, &zero, xproj_.data(), G));
}

void CublasLstm::enqueue_step(std::size_t t) {
  const float one = 1.0f, zero = 0.0f;
  const int G = as_int(shape_.gates()), H = as_int(shape_.hidden), B = as_int(shape_.batch);
  const std::size_t state = shape_.state_size();
  const float* h_prev = t == 0 ? h0_.data() : h_seq_.data() + (t - 1) * state;
  const float* c_prev = t == 0 ? c0_.data() : c_after(t - 1);
  const float* w_h = w_.data() + shape_.input * shape_.gates();
  // Row-major gates[B x G] = h_prev[B x H] · W[I:][G].
  GAPBENCH_CHECK(cublasSgemm(blas_.get(), CUBLAS_OP_N, CUBLAS_OP_N, G, B, H, &one, w_h, G, h_prev,
                             H, &zero, gates_.data(), G));
  GAPBENCH_CHECK(pointwise_gpu(shape_.batch, shape_.hidden, gates_.data(),
                               xproj_.data() + t * shape_.batch * shape_.gates(), b_.data(), c_prev,
                               h_seq_.data() + t * state, c_[t % 2].data(), stream_));
}

void CublasLstm::enqueue_sequence() {
  enqueue_projection();
  for (std::size_t t = 0; t < shape_.steps; ++t) enqueue_step(t);
}

}  // namespace gapbench::lstm
