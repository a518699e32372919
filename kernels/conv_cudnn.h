// Family `conv`, GPU library variant: cuDNN's forward convolution through its descriptor
// ("legacy") API, the one TensorFlow and PyTorch long used and still present in cuDNN 9.
//
// CudnnConvolution is the set-up a framework does once per layer shape (PyTorch with
// cudnn.benchmark = True): tensor, filter and convolution descriptors, then the algorithm search:
// cudnnFindConvolutionForwardAlgorithmEx on scratch buffers with a workspace as large as the
// hungriest algorithm asks (up to half the free memory), then each algorithm that worked timed
// again warm, best of kSearchRuns, as the frameworks' autotuners do (a single cold run can
// include loading the kernels). The fastest is kept; its name, workspace size and math mode, and
// the search's wall time, are readable afterwards. Constructing one is the whole set-up, so
// "what does cuDNN's algorithm search cost for this layer" is the construction time
// (search_seconds()), on its own.
//
// Math: one arithmetic of the math axis, always said outright (cudnn_math_type):
//   float32  CUDNN_FMA_MATH: float32 NCHW, no tensor cores, no TF32. The search keeps only
//            algorithms that ran in that math (math_allowed).
//   tf32     CUDNN_TENSOR_OP_MATH on float32 NCHW data: TF32 tensor cores (Ampere and newer).
//   fp16     CUDNN_TENSOR_OP_MATH, x, w and y float16 in NHWC (w as KRSC), the layout tensor
//            cores prefer, float32 accumulation (the convolution's compute type).
// Never CUDNN_DEFAULT_MATH, which frameworks leave for float32 convolutions: it lets cuDNN use
// TF32 on compute capability 8.0 and later, so a row under a float32 name would time TF32 (on
// an H100 such a row took 90 us where true float32 took 152). Any algorithm may be Winograd or
// FFT, which round differently from the direct sum; conv.h's tolerances allow for them.
//
// Built only with CUDA and cuDNN (GAPBENCH_WITH_CUDNN); every cuDNN call goes through
// GAPBENCH_CHECK, so a failure throws CudaError naming the status, the call, file and line.
#pragma once

#include "kernels/base/cuda_libraries.h"  // header-only: GAPBENCH_CHECK for cuDNN, CudaOwner
#include "kernels/conv.h"

#if GAPBENCH_WITH_CUDNN
#include <cudnn.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gapbench::conv {

namespace detail {
struct DestroyTensorDesc {
  void operator()(cudnnTensorDescriptor_t d) const noexcept {
    GAPBENCH_CHECK_NOTHROW(cudnnDestroyTensorDescriptor(d));
  }
};
struct DestroyFilterDesc {
  void operator()(cudnnFilterDescriptor_t d) const noexcept {
    GAPBENCH_CHECK_NOTHROW(cudnnDestroyFilterDescriptor(d));
  }
};
struct DestroyConvDesc {
  void operator()(cudnnConvolutionDescriptor_t d) const noexcept {
    GAPBENCH_CHECK_NOTHROW(cudnnDestroyConvolutionDescriptor(d));
  }
};
}  // namespace detail

using TensorDesc = CudaOwner<cudnnTensorDescriptor_t, detail::DestroyTensorDesc>;
using FilterDesc = CudaOwner<cudnnFilterDescriptor_t, detail::DestroyFilterDesc>;
using ConvDesc = CudaOwner<cudnnConvolutionDescriptor_t, detail::DestroyConvDesc>;

// A tensor descriptor of n x c x h x w, float32 NCHW unless said otherwise.
TensorDesc make_tensor_desc(std::size_t n, std::size_t c, std::size_t h, std::size_t w,
                            cudnnDataType_t type = CUDNN_DATA_FLOAT,
                            cudnnTensorFormat_t format = CUDNN_TENSOR_NCHW);

// A float32 N x C x H x W (NCHW) tensor as float16 bits in NHWC, rounded to nearest; and back.
std::vector<std::uint16_t> to_nhwc_half(const std::vector<float>& nchw, std::size_t n,
                                        std::size_t c, std::size_t h, std::size_t w);
std::vector<float> from_nhwc_half(const std::vector<std::uint16_t>& nhwc, std::size_t n,
                                  std::size_t c, std::size_t h, std::size_t w);

// cuDNN's name for a forward algorithm without its prefix: "IMPLICIT_PRECOMP_GEMM", "WINOGRAD".
std::string algorithm_name(cudnnConvolutionFwdAlgo_t algo);
// "default", "tensor_op", "tensor_op_allow_conversion", "fma".
std::string math_name(cudnnMathType_t math);

// The convolution math type of an arithmetic of the math axis (see above): FMA for float32,
// TENSOR_OP for tf32 and fp16. std::invalid_argument for bf16 (no variant). Host only.
cudnnMathType_t cudnn_math_type(Arithmetic arithmetic);
// Whether an algorithm the search ran in `candidate` math may time `arithmetic`: float32 only in
// FMA math (cuDNN's search may answer in another math than asked: such a candidate could use
// TF32); tf32 and fp16 in any math but TENSOR_OP_MATH_ALLOW_CONVERSION, which may also round
// float32 data to float16. Host only.
bool math_allowed(Arithmetic arithmetic, cudnnMathType_t candidate);

class CudnnConvolution {
 public:
  // Descriptors for `shape` in one arithmetic of the math axis (see above), then the algorithm
  // search (synchronous; allocates and frees its own device buffers). `handle` must outlive this
  // object; forward() runs on the handle's stream. Throws std::invalid_argument for an impossible
  // shape (before any cuDNN call) or bf16, CudaError when a cuDNN call fails,
  // std::runtime_error when no algorithm works for the shape in that math.
  CudnnConvolution(cudnnHandle_t handle, const ConvShape& shape, Arithmetic arithmetic);

  const ConvShape& shape() const { return shape_; }
  cudnnConvolutionFwdAlgo_t algorithm() const { return algo_; }
  std::string algorithm_name() const { return conv::algorithm_name(algo_); }
  std::size_t workspace_bytes() const { return workspace_bytes_; }
  // Wall seconds of the whole search (Find and the warm re-timing).
  double search_seconds() const { return search_seconds_; }
  // Every algorithm that worked in the search, with its math mode, workspace and best warm time
  // (algorithm() is the fastest of them).
  struct Candidate {
    cudnnConvolutionFwdAlgo_t algo;
    cudnnMathType_t math;
    std::size_t workspace_bytes;
    double seconds;
  };
  const std::vector<Candidate>& candidates() const { return candidates_; }
  // "algo:IMPLICIT_PRECOMP_GEMM workspace_bytes:4718592 math:tensor_op", for a benchmark label;
  // an fp16 one adds " data:fp16 layout:nhwc".
  std::string description() const;
  // float16 NHWC tensors (the fp16 arithmetic) rather than float32 NCHW.
  bool half_nhwc() const { return type_ == CUDNN_DATA_HALF; }

  // y = conv(x, w), asynchronous on the handle's stream. `workspace` holds workspace_bytes()
  // (may be null when that is 0). Device pointers to float32 NCHW tensors, or float16 NHWC ones
  // where half_nhwc().
  void forward(const void* x, const void* w, void* y, void* workspace) const;

  // The arithmetic it runs (fp16: float16 NHWC data).
  Arithmetic arithmetic() const { return arithmetic_; }

 private:
  // The search (see above); sets algo_, algo_math_, workspace_bytes_, search_seconds_.
  void search();

  // Timed runs of each algorithm in the search, after a warm one (the best counts).
  static constexpr int kSearchRuns = 3;

  cudnnHandle_t handle_;
  Arithmetic arithmetic_;
  cudnnDataType_t type_ = CUDNN_DATA_FLOAT;
  ConvShape shape_;
  TensorDesc x_desc_, y_desc_;
  FilterDesc w_desc_;
  ConvDesc conv_desc_;
  cudnnConvolutionFwdAlgo_t algo_ = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  cudnnMathType_t algo_math_ = CUDNN_FMA_MATH;
  std::size_t workspace_bytes_ = 0;
  double search_seconds_ = 0.0;
  std::vector<Candidate> candidates_;
};

}  // namespace gapbench::conv

#endif  // GAPBENCH_WITH_CUDNN
