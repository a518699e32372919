// Family `conv`, GPU library variant: cuDNN's forward convolution through its descriptor
// ("legacy") API, the one TensorFlow and PyTorch long used and still present in cuDNN 9.
//
// CudnnConvolution is the set-up a framework does once per layer shape: tensor, filter and
// convolution descriptors, then cudnnFindConvolutionForwardAlgorithm, which runs every forward
// algorithm on scratch buffers cuDNN allocates itself and ranks them by measured time. The fastest
// that succeeded is kept; its name, workspace size and math mode, and the search's wall time, are
// readable afterwards. Constructing one is the whole set-up, so "what does cuDNN's algorithm
// search cost for this layer" is the construction time (search_seconds()), on its own.
//
// Math: CUDNN_DEFAULT_MATH, as frameworks leave it for float32 convolutions (PyTorch's
// allow_tf32 and TensorFlow's TF32 default): cuDNN may use TF32 tensor cores on Ampere and newer
// GPUs, and may pick Winograd or FFT algorithms. Validate with Arithmetic::tf32 (conv.h).
//
// Built only with CUDA and cuDNN (GAPBENCH_WITH_CUDNN); every cuDNN call goes through
// GAPBENCH_CHECK, so a failure throws CudaError naming the status, the call, file and line.
#pragma once

#include "kernels/base/cuda_libraries.h"  // header-only: GAPBENCH_CHECK for cuDNN, CudaOwner
#include "kernels/conv.h"

#if GAPBENCH_WITH_CUDNN
#include <cudnn.h>

#include <cstddef>
#include <string>

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

// A float32 NCHW tensor descriptor of n x c x h x w.
TensorDesc make_tensor_desc(std::size_t n, std::size_t c, std::size_t h, std::size_t w);

// cuDNN's name for a forward algorithm without its prefix: "IMPLICIT_PRECOMP_GEMM", "WINOGRAD".
std::string algorithm_name(cudnnConvolutionFwdAlgo_t algo);
// "default", "tensor_op", "tensor_op_allow_conversion", "fma".
std::string math_name(cudnnMathType_t math);

class CudnnConvolution {
 public:
  // Descriptors for `shape`, then the algorithm search (synchronous; allocates and frees its own
  // device buffers). `handle` must outlive this object; forward() runs on the handle's stream.
  // Throws std::invalid_argument for an impossible shape (before any cuDNN call), CudaError when
  // a cuDNN call fails, std::runtime_error when no algorithm works for the shape.
  CudnnConvolution(cudnnHandle_t handle, const ConvShape& shape,
                   cudnnMathType_t math = CUDNN_DEFAULT_MATH);

  const ConvShape& shape() const { return shape_; }
  cudnnConvolutionFwdAlgo_t algorithm() const { return algo_; }
  std::string algorithm_name() const { return conv::algorithm_name(algo_); }
  std::size_t workspace_bytes() const { return workspace_bytes_; }
  // Wall seconds of cudnnFindConvolutionForwardAlgorithm.
  double search_seconds() const { return search_seconds_; }
  // "algo:IMPLICIT_PRECOMP_GEMM workspace_bytes:4718592 math:tensor_op", for a benchmark label.
  std::string description() const;

  // y = conv(x, w), asynchronous on the handle's stream. `workspace` holds workspace_bytes()
  // (may be null when that is 0). Device pointers.
  void forward(const float* x, const float* w, float* y, void* workspace) const;

 private:
  cudnnHandle_t handle_;
  ConvShape shape_;
  TensorDesc x_desc_, y_desc_;
  FilterDesc w_desc_;
  ConvDesc conv_desc_;
  cudnnConvolutionFwdAlgo_t algo_ = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  cudnnMathType_t algo_math_ = CUDNN_DEFAULT_MATH;
  std::size_t workspace_bytes_ = 0;
  double search_seconds_ = 0.0;
};

}  // namespace gapbench::conv

#endif  // GAPBENCH_WITH_CUDNN
