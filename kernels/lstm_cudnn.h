// Family `lstm`, GPU `cudnn` variant: cuDNN's RNN forward (v9 API: cudnnSetRNNDescriptor_v8,
// cudnnRNNForward) over the whole sequence, inference mode, one layer, one direction, configured
// as PyTorch configures it for torch.nn.LSTM. Everything (descriptors, weight space, workspace)
// is made once in the constructor; enqueue() is the one cudnnRNNForward call.
// CUDA builds with cuDNN only (GAPBENCH_WITH_CUDNN).
//
// Algorithm: the frameworks' choice (framework_rnn_algorithm in kernels/lstm.h): a persistent
// kernel for small hidden sizes (PERSIST_STATIC_SMALL_H) and for float16 at multiples of 128
// (PERSIST_STATIC), else STANDARD. cuDNN may refuse a persistent algorithm for a shape only when
// it runs, so the constructor runs it once on zeroed inputs; on CUDNN_STATUS_NOT_SUPPORTED or
// BAD_PARAM it falls back to STANDARD and description() says so.
//
// Math (the `math` axis), as PyTorch sets it (cudnn_rnn_math_type):
//   float32  float32 data and compute, CUDNN_FMA_MATH: no tensor cores, no TF32 (PyTorch with
//            torch.backends.cudnn.allow_tf32 = False); the arithmetic of the cuBLAS variants.
//   tf32     float32 data, CUDNN_DEFAULT_MATH: cuDNN may read the GEMMs' inputs as TF32 on
//            compute capability 8.0 and later (PyTorch's default, allow_tf32 = True). Not
//            CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION, which may also convert float32 to float16.
//   fp16     x, h, c, the weights and the outputs in float16, float32 compute (mathPrec float),
//            CUDNN_TENSOR_OP_MATH: what a framework's fp16 autocast runs on tensor cores.
// I/O: sequence-major, unpacked, with padded I/O enabled (PyTorch's layout for an unpacked
// batch); every sequence is full length, so no padding is used.
//
// Weights: cuDNN's weight space holds, per "linear layer" id 0..7, a matrix and a bias: ids 0..3
// act on x_t, 4..7 on h_{t-1}, each in the gate order i, f, new memory (the reference's g), o.
// cudnnGetRNNWeightParams gives each one's address and a tensor descriptor {1, hidden, cols}
// (cols = input or hidden) whose strides say where element (unit r, input c) lives; the
// constructor places the reference's W[row0 + c][gate·hidden + r] there by those strides, so it
// does not depend on cuDNN storing rows or columns first, nor on the algorithm's layout (a
// descriptor of other dimensions is an error, not a guess). cuDNN adds two biases per gate
// (CUDNN_RNN_DOUBLE_BIAS, its default and the frameworks'): the input one gets b, the recurrent
// one zero. (For fp16 the weights, and the bias, are rounded to float16.)
//
// Every device buffer handed to cuDNN (device_buffers(): x, y, h0, c0, hy, cy, the weight space,
// the workspace, the dropout states, the sequence lengths; inference needs no reserve space) is
// poisoned when allocated, before what is meant to fill it (kernels/base/gpu_memory.h): a byte of
// ours cuDNN reads without our having written it is NaN, and fails validation, and initcheck
// counts all of it as written, so an uninitialized read it still reports is in memory cuDNN owns.
#pragma once

#if GAPBENCH_WITH_CUDNN

#include <cudnn.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/base/cuda_libraries.h"
#include "kernels/base/gpu_memory.h"
#include "kernels/lstm.h"

namespace gapbench::lstm {

namespace detail {
template <class Handle, cudnnStatus_t (*Destroy)(Handle)>
struct CudnnDestroy {
  void operator()(Handle h) const noexcept { GAPBENCH_CHECK_NOTHROW(Destroy(h)); }
};
template <class Handle, cudnnStatus_t (*Create)(Handle*), cudnnStatus_t (*Destroy)(Handle)>
class CudnnDescriptor {
 public:
  CudnnDescriptor() {
    Handle h = nullptr;
    GAPBENCH_CHECK(Create(&h));
    owner_.reset(h);
  }
  Handle get() const { return owner_.get(); }

 private:
  CudaOwner<Handle, CudnnDestroy<Handle, Destroy>> owner_;
};
}  // namespace detail

// cuDNN's RNN math type for an arithmetic of the math axis (above): FMA for float32, DEFAULT
// for tf32, TENSOR_OP for fp16; std::invalid_argument for bf16. Host only.
cudnnMathType_t cudnn_rnn_math_type(Arithmetic arithmetic);

class CudnnLstm {
 public:
  // Throws std::invalid_argument when the weights do not fit the shape or the arithmetic is not
  // float32, tf32 or fp16, and a CudaError (or std::runtime_error for a weight layout it does
  // not understand) when cuDNN refuses, STANDARD included.
  CudnnLstm(const Shape& shape, const Weights& weights, cudaStream_t stream,
            Arithmetic arithmetic = Arithmetic::float32);

  // Device memory for everything but the weight space and workspace, whose sizes cuDNN tells
  // only once the descriptors exist (they are about the weights' size and a few MiB).
  static std::size_t device_bytes_estimate(const Shape& shape,
                                           Arithmetic arithmetic = Arithmetic::float32);

  // Outside any timing, each waiting for the stream. set_inputs copies x [steps][batch][input],
  // h0 and c0 [batch][hidden] in, converted to the data format (fp16: rounded to nearest).
  // poison_outputs fills the outputs with all-ones bits, a NaN in float32 and float16, so an
  // output cuDNN never writes cannot pass validation. outputs() copies them out as float32.
  void set_inputs(const float* x, const float* h0, const float* c0);
  void poison_outputs();
  struct Outputs {
    std::vector<float> h_seq;   // [steps][batch][hidden]
    std::vector<float> h_last;  // [batch][hidden]
    std::vector<float> c_last;  // [batch][hidden]
  };
  Outputs outputs() const;

  void enqueue();  // the whole sequence, asynchronously on the stream
  const Shape& shape() const { return shape_; }
  // The arithmetic and output formats, for check_sequence / check_step: h and c come out
  // float16 for fp16, float32 otherwise (tf32 reads its inputs narrower, stores float32).
  Precision precision() const;
  // The algorithm that runs (after any fall-back).
  RnnAlgorithm algorithm() const { return algorithm_; }
  // "algo:persist_static_small_h math:fma" for a benchmark label; after a fall-back
  // "algo:standard (persist_static_small_h: CUDNN_STATUS_NOT_SUPPORTED) math:fma".
  std::string description() const;
  // Every device buffer this hands cuDNN, each poisoned before it was filled (see above).
  struct DeviceRange {
    const char* name;
    const void* data;
    std::size_t bytes;
  };
  std::vector<DeviceRange> device_buffers() const;

 private:
  using RnnDesc = detail::CudnnDescriptor<cudnnRNNDescriptor_t, cudnnCreateRNNDescriptor,
                                          cudnnDestroyRNNDescriptor>;
  using DataDesc = detail::CudnnDescriptor<cudnnRNNDataDescriptor_t, cudnnCreateRNNDataDescriptor,
                                           cudnnDestroyRNNDataDescriptor>;
  using TensorDesc = detail::CudnnDescriptor<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor,
                                             cudnnDestroyTensorDescriptor>;
  using DropoutDesc =
      detail::CudnnDescriptor<cudnnDropoutDescriptor_t, cudnnCreateDropoutDescriptor,
                              cudnnDestroyDropoutDescriptor>;

  // The RNN descriptor for `algorithm`, then the weight space (filled) and workspace it needs.
  void configure(RnnAlgorithm algorithm, const Weights& weights);
  // One forward pass on zeroed inputs, waited for: where cuDNN refuses an algorithm it says so.
  void trial_run();
  void fill_weight_space(const Weights& weights);
  // Host floats into a whole device buffer of the data format, and back.
  void upload(const DeviceBuffer<unsigned char>& to, const float* from);
  std::vector<float> download(const DeviceBuffer<unsigned char>& from) const;

  Shape shape_;
  Arithmetic arithmetic_;
  cudnnDataType_t data_type_;
  std::size_t element_bytes_;
  cudnnMathType_t math_type_;
  RnnAlgorithm algorithm_ = RnnAlgorithm::standard;
  std::string fallback_;  // why the frameworks' algorithm did not run, if it did not
  cudaStream_t stream_;
  CudnnHandle handle_;
  // Buffers before the descriptors that point at them (members are destroyed in reverse).
  DeviceBuffer<unsigned char> dropout_states_;
  DropoutDesc dropout_;
  RnnDesc rnn_;
  DataDesc x_desc_, y_desc_;
  TensorDesc state_desc_;  // h and c: {layers 1, batch, hidden}
  DeviceBuffer<std::int32_t> seq_lengths_;
  DeviceBuffer<unsigned char> x_, y_, h0_, c0_, hy_, cy_;  // in the data format
  std::size_t weight_bytes_ = 0, workspace_bytes_ = 0;
  DeviceBuffer<unsigned char> weight_space_, workspace_;
};

}  // namespace gapbench::lstm

#endif  // GAPBENCH_WITH_CUDNN
