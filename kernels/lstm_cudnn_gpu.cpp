#include "kernels/lstm_cudnn.h"

#if GAPBENCH_WITH_CUDNN

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kernels/base/narrow_gpu.h"

namespace gapbench::lstm {

namespace {

constexpr int kLinearLayers = 8;  // LSTM: 4 gates x (input, recurrent)

int as_int(std::size_t n) { return static_cast<int>(n); }  // check_shape bounds every size

std::string dims_text(int nb, const int* dims) {
  std::string s = "{";
  for (int k = 0; k < nb; ++k) s += (k ? ", " : "") + std::to_string(dims[k]);
  return s + "}";
}

// Where element (r, c) of a rows x cols matrix (or a vector, cols = 1) lives: r·row + c·col.
struct Strides {
  std::size_t row = 0, col = 0;
};

// The strides of a weight or bias descriptor cuDNN describes as {1, rows, cols}. Unit dimensions
// are skipped, so only the order of the others matters; anything else (a transposed or unknown
// layout) is an error rather than a silently wrong placement.
Strides read_strides(cudnnTensorDescriptor_t desc, cudnnDataType_t want_type, std::size_t rows,
                     std::size_t cols, const std::string& what) {
  cudnnDataType_t type{};
  int nb = 0;
  int dims[3] = {}, strides[3] = {};
  GAPBENCH_CHECK(cudnnGetTensorNdDescriptor(desc, 3, &type, &nb, dims, strides));
  std::vector<std::pair<std::size_t, std::size_t>> found;  // non-unit (size, stride)
  for (int k = 0; k < nb && k < 3; ++k) {
    if (dims[k] != 1) found.emplace_back(dims[k], strides[k] > 0 ? strides[k] : 0);
  }
  std::vector<std::size_t> want;
  if (rows > 1) want.push_back(rows);
  if (cols > 1) want.push_back(cols);
  bool ok = type == want_type && nb == 3 && found.size() == want.size();
  for (std::size_t k = 0; ok && k < want.size(); ++k) {
    ok = found[k].first == want[k] && found[k].second > 0;
  }
  if (!ok) {
    throw std::runtime_error("lstm cudnn: " + what + " has dims " +
                             dims_text(std::min(nb, 3), dims) + ", expected {1, " +
                             std::to_string(rows) + ", " + std::to_string(cols) + "} of " +
                             (want_type == CUDNN_DATA_HALF ? "half" : "float"));
  }
  Strides out;
  std::size_t k = 0;
  if (rows > 1) out.row = found[k++].second;
  if (cols > 1) out.col = found[k].second;
  return out;
}

cudnnDataType_t data_type(Arithmetic arithmetic) {
  if (arithmetic == Arithmetic::float32 || arithmetic == Arithmetic::tf32) return CUDNN_DATA_FLOAT;
  if (arithmetic == Arithmetic::fp16) return CUDNN_DATA_HALF;
  throw std::invalid_argument(std::string("lstm cudnn: no ") + math_name(arithmetic) +
                              " variant (fp32, tf32 or fp16)");
}

const char* math_type_name(cudnnMathType_t math) {
  switch (math) {
    case CUDNN_FMA_MATH:
      return "fma";
    case CUDNN_TENSOR_OP_MATH:
      return "tensor_op";
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION:
      return "tensor_op_allow_conversion";
    default:
      break;
  }
  return "default";
}

cudnnRNNAlgo_t cudnn_algo(RnnAlgorithm algorithm) {
  switch (algorithm) {
    case RnnAlgorithm::persist_static:
      return CUDNN_RNN_ALGO_PERSIST_STATIC;
    case RnnAlgorithm::persist_static_small_h:
      return CUDNN_RNN_ALGO_PERSIST_STATIC_SMALL_H;
    case RnnAlgorithm::standard:
      break;
  }
  return CUDNN_RNN_ALGO_STANDARD;
}

// The current device's facts for framework_rnn_algorithm.
GpuFacts current_gpu() {
  int device = 0;
  GAPBENCH_CHECK(cudaGetDevice(&device));
  GpuFacts gpu;
  GAPBENCH_CHECK(cudaDeviceGetAttribute(&gpu.major, cudaDevAttrComputeCapabilityMajor, device));
  GAPBENCH_CHECK(cudaDeviceGetAttribute(&gpu.minor, cudaDevAttrComputeCapabilityMinor, device));
  GAPBENCH_CHECK(
      cudaDeviceGetAttribute(&gpu.multiprocessors, cudaDevAttrMultiProcessorCount, device));
  return gpu;
}

// A refusal of the algorithm for this shape, as opposed to a failure of the GPU or the call.
bool algorithm_refused(const CudaError& e) {
  return is_cudnn_status(e, CUDNN_STATUS_NOT_SUPPORTED) ||
         is_cudnn_status(e, CUDNN_STATUS_BAD_PARAM);
}

}  // namespace

// PyTorch's choice for each (lstm_cudnn.h).
cudnnMathType_t cudnn_rnn_math_type(Arithmetic arithmetic) {
  switch (arithmetic) {
    case Arithmetic::float32:
      return CUDNN_FMA_MATH;
    case Arithmetic::tf32:
      return CUDNN_DEFAULT_MATH;
    case Arithmetic::fp16:
      return CUDNN_TENSOR_OP_MATH;
    case Arithmetic::bf16:
      break;
  }
  throw std::invalid_argument(std::string("lstm cudnn: no ") + math_name(arithmetic) +
                              " variant (fp32, tf32 or fp16)");
}

std::size_t CudnnLstm::device_bytes_estimate(const Shape& s, Arithmetic arithmetic) {
  const std::size_t elements =
      s.weight_size() + s.gates() * 2 + s.x_size() + s.h_seq_size() + 4 * s.state_size();
  return elements * input_bytes(arithmetic) + (64u << 20);  // + workspace and dropout states
}

CudnnLstm::CudnnLstm(const Shape& shape, const Weights& weights, cudaStream_t stream,
                     Arithmetic arithmetic)
    : shape_((check_weights(shape, weights), shape)),
      arithmetic_(arithmetic),
      data_type_(data_type(arithmetic)),
      element_bytes_(input_bytes(arithmetic)),
      math_type_(cudnn_rnn_math_type(arithmetic)),
      stream_(stream),
      handle_(stream),
      seq_lengths_(poisoned_buffer<std::int32_t>(shape.batch, stream)),
      x_(poisoned_buffer<unsigned char>(shape.x_size() * element_bytes_, stream)),
      y_(poisoned_buffer<unsigned char>(shape.h_seq_size() * element_bytes_, stream)),
      h0_(poisoned_buffer<unsigned char>(shape.state_size() * element_bytes_, stream)),
      c0_(poisoned_buffer<unsigned char>(shape.state_size() * element_bytes_, stream)),
      hy_(poisoned_buffer<unsigned char>(shape.state_size() * element_bytes_, stream)),
      cy_(poisoned_buffer<unsigned char>(shape.state_size() * element_bytes_, stream)) {
  const int T = as_int(shape.steps), B = as_int(shape.batch);
  const int I = as_int(shape.input), H = as_int(shape.hidden);

  // A single layer applies no dropout, but the descriptor wants an initialised one (cuDNN
  // writes the states; poisoned first, as every buffer it gets).
  std::size_t states_bytes = 0;
  GAPBENCH_CHECK(cudnnDropoutGetStatesSize(handle_.get(), &states_bytes));
  dropout_states_ = poisoned_buffer<unsigned char>(states_bytes, stream_);
  GAPBENCH_CHECK(cudnnSetDropoutDescriptor(dropout_.get(), handle_.get(), 0.0f,
                                           dropout_states_.data(), states_bytes, 0));

  // Sequence-major [steps][batch][vector], every sequence full length (so no padding is used).
  const std::vector<std::int32_t> lengths(shape.batch, T);
  GAPBENCH_CHECK(cudnnSetRNNDataDescriptor(x_desc_.get(), data_type_,
                                           CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED, T, B, I,
                                           lengths.data(), nullptr));
  GAPBENCH_CHECK(cudnnSetRNNDataDescriptor(y_desc_.get(), data_type_,
                                           CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED, T, B, H,
                                           lengths.data(), nullptr));
  const int state_dims[3] = {1, B, H};
  const int state_strides[3] = {B * H, H, 1};
  GAPBENCH_CHECK(
      cudnnSetTensorNdDescriptor(state_desc_.get(), data_type_, 3, state_dims, state_strides));
  // cudnnRNNForward reads the lengths on the device, asynchronously.
  GAPBENCH_CHECK(cudaMemcpyAsync(seq_lengths_.data(), lengths.data(), seq_lengths_.bytes(),
                                 cudaMemcpyHostToDevice, stream_));
  GAPBENCH_CHECK(cudaStreamSynchronize(stream_));  // `lengths` goes out of scope

  const RnnAlgorithm wanted = framework_rnn_algorithm(shape, arithmetic, current_gpu());
  try {
    configure(wanted, weights);
    if (wanted != RnnAlgorithm::standard) trial_run();
  } catch (const CudaError& e) {
    if (wanted == RnnAlgorithm::standard || !algorithm_refused(e)) throw;
    cudaGetLastError();  // a refusal leaves no error behind, but clear any for the next call
    fallback_ = std::string(rnn_algorithm_name(wanted)) + ": " + e.status_name();
    configure(RnnAlgorithm::standard, weights);
  }
}

void CudnnLstm::configure(RnnAlgorithm algorithm, const Weights& weights) {
  algorithm_ = algorithm;
  GAPBENCH_CHECK(cudnnSetRNNDescriptor_v8(
      rnn_.get(), cudnn_algo(algorithm), CUDNN_LSTM, CUDNN_RNN_DOUBLE_BIAS, CUDNN_UNIDIRECTIONAL,
      CUDNN_LINEAR_INPUT, data_type_, /*mathPrec=*/CUDNN_DATA_FLOAT, math_type_,
      as_int(shape_.input), as_int(shape_.hidden), /*projSize=*/as_int(shape_.hidden),
      /*numLayers=*/1, dropout_.get(), CUDNN_RNN_PADDED_IO_ENABLED));
  GAPBENCH_CHECK(cudnnGetRNNWeightSpaceSize(handle_.get(), rnn_.get(), &weight_bytes_));
  std::size_t reserve_bytes = 0;  // training only
  GAPBENCH_CHECK(cudnnGetRNNTempSpaceSizes(handle_.get(), rnn_.get(), CUDNN_FWD_MODE_INFERENCE,
                                           x_desc_.get(), &workspace_bytes_, &reserve_bytes));
  weight_space_ = poisoned_buffer<unsigned char>(weight_bytes_, stream_);
  workspace_ = poisoned_buffer<unsigned char>(workspace_bytes_, stream_);
  fill_weight_space(weights);
}

void CudnnLstm::trial_run() {
  for (DeviceBuffer<unsigned char>* in : {&x_, &h0_, &c0_}) {
    GAPBENCH_CHECK(cudaMemsetAsync(in->data(), 0, in->bytes(), stream_));
  }
  enqueue();
  GAPBENCH_CHECK(cudaStreamSynchronize(stream_));
}

Precision CudnnLstm::precision() const {
  const Arithmetic stored =
      arithmetic_ == Arithmetic::fp16 ? Arithmetic::fp16 : Arithmetic::float32;
  return {arithmetic_, stored, stored};
}

std::string CudnnLstm::description() const {
  return std::string("algo:") + rnn_algorithm_name(algorithm_) +
         (fallback_.empty() ? "" : " (" + fallback_ + ")") + " math:" + math_type_name(math_type_);
}

void CudnnLstm::fill_weight_space(const Weights& weights) {
  const std::size_t H = shape_.hidden, G = shape_.gates();
  if (weight_bytes_ % element_bytes_ != 0) {
    throw std::runtime_error("lstm cudnn: weight space of " + std::to_string(weight_bytes_) +
                             " bytes is not whole elements");
  }
  // Built in float32, converted at the end. Padding stays zero.
  std::vector<float> image(weight_bytes_ / element_bytes_, 0.0f);
  const auto* base = weight_space_.data();
  // Index of a device address inside the image, checked against its end.
  auto index_of = [&](const void* addr, std::size_t last_offset, const std::string& what) {
    const auto offset = static_cast<const unsigned char*>(addr) - base;
    const auto element = static_cast<std::ptrdiff_t>(element_bytes_);
    if (offset < 0 || offset % element != 0 ||
        static_cast<std::size_t>(offset / element) + last_offset >= image.size()) {
      throw std::runtime_error("lstm cudnn: " + what + " lies outside the weight space");
    }
    return static_cast<std::size_t>(offset / element);
  };
  TensorDesc m_desc, b_desc;
  for (int id = 0; id < kLinearLayers; ++id) {
    void* m_addr = nullptr;
    void* b_addr = nullptr;
    GAPBENCH_CHECK(cudnnGetRNNWeightParams(handle_.get(), rnn_.get(), 0, weight_bytes_, base, id,
                                           m_desc.get(), &m_addr, b_desc.get(), &b_addr));
    const std::string what = "linear layer " + std::to_string(id);
    if (m_addr == nullptr || b_addr == nullptr) {
      throw std::runtime_error("lstm cudnn: no matrix or bias for " + what);
    }
    const bool on_input = id < 4;
    const std::size_t gate = static_cast<std::size_t>(id % 4);  // i, f, g, o: the reference's order
    const std::size_t cols = on_input ? shape_.input : H;
    const std::size_t row0 = on_input ? 0 : shape_.input;  // W's first row for this part

    const Strides m = read_strides(m_desc.get(), data_type_, H, cols, what + " matrix");
    const std::size_t m0 = index_of(m_addr, (H - 1) * m.row + (cols - 1) * m.col, what + " matrix");
    for (std::size_t r = 0; r < H; ++r) {
      for (std::size_t c = 0; c < cols; ++c) {
        image[m0 + r * m.row + c * m.col] = weights.w[(row0 + c) * G + gate * H + r];
      }
    }

    const Strides v = read_strides(b_desc.get(), data_type_, H, 1, what + " bias");
    const std::size_t b0 = index_of(b_addr, (H - 1) * v.row, what + " bias");
    for (std::size_t r = 0; r < H; ++r) {
      image[b0 + r * v.row] = on_input ? weights.b[gate * H + r] : 0.0f;
    }
  }
  upload(weight_space_, image.data());
}

void CudnnLstm::upload(const DeviceBuffer<unsigned char>& to, const float* from) {
  const std::size_t n = to.bytes() / element_bytes_;
  std::vector<std::uint16_t> narrow;
  const void* bytes = from;
  if (element_bytes_ == 2) {
    narrow = to_16bit(from, n, arithmetic_);
    bytes = narrow.data();
  }
  copy_to_device(to, static_cast<const unsigned char*>(bytes), stream_);
  GAPBENCH_CHECK(cudaStreamSynchronize(stream_));  // the host copies go out of scope
}

std::vector<float> CudnnLstm::download(const DeviceBuffer<unsigned char>& from) const {
  std::vector<unsigned char> bytes(from.bytes());
  copy_to_host(bytes.data(), from, stream_);
  GAPBENCH_CHECK(cudaStreamSynchronize(stream_));
  const std::size_t n = bytes.size() / element_bytes_;
  if (element_bytes_ == 2) {
    return from_16bit(reinterpret_cast<const std::uint16_t*>(bytes.data()), n, arithmetic_);
  }
  std::vector<float> out(n);
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

void CudnnLstm::set_inputs(const float* x, const float* h0, const float* c0) {
  upload(x_, x);
  upload(h0_, h0);
  upload(c0_, c0);
}

void CudnnLstm::poison_outputs() {
  for (const DeviceBuffer<unsigned char>* out : {&y_, &hy_, &cy_}) poison(*out, stream_);
  GAPBENCH_CHECK(cudaStreamSynchronize(stream_));
}

std::vector<CudnnLstm::DeviceRange> CudnnLstm::device_buffers() const {
  return {{"x", x_.data(), x_.bytes()},
          {"y", y_.data(), y_.bytes()},
          {"h0", h0_.data(), h0_.bytes()},
          {"c0", c0_.data(), c0_.bytes()},
          {"hy", hy_.data(), hy_.bytes()},
          {"cy", cy_.data(), cy_.bytes()},
          {"weight_space", weight_space_.data(), weight_space_.bytes()},
          {"workspace", workspace_.data(), workspace_.bytes()},
          {"dropout_states", dropout_states_.data(), dropout_states_.bytes()},
          {"seq_lengths", seq_lengths_.data(), seq_lengths_.bytes()}};
}

CudnnLstm::Outputs CudnnLstm::outputs() const {
  return {download(y_), download(hy_), download(cy_)};
}

void CudnnLstm::enqueue() {
  GAPBENCH_CHECK(cudnnRNNForward(handle_.get(), rnn_.get(), CUDNN_FWD_MODE_INFERENCE,
                                 seq_lengths_.data(), x_desc_.get(), x_.data(), y_desc_.get(),
                                 y_.data(), state_desc_.get(), h0_.data(), hy_.data(),
                                 state_desc_.get(), c0_.data(), cy_.data(), weight_bytes_,
                                 weight_space_.data(), workspace_bytes_, workspace_.data(),
                                 /*reserveSpaceSize=*/0, /*reserveSpace=*/nullptr));
}

}  // namespace gapbench::lstm

#endif  // GAPBENCH_WITH_CUDNN
