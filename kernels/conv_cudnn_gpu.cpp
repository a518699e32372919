#include "kernels/conv_cudnn.h"

#if GAPBENCH_WITH_CUDNN

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <vector>

namespace gapbench::conv {

namespace {

int as_int(std::size_t v) { return static_cast<int>(v); }  // check_shape bounds every dimension

template <class Desc, class Create>
Desc create(Create create_fn) {
  typename Desc::pointer raw = nullptr;
  GAPBENCH_CHECK(create_fn(&raw));
  return Desc(raw);
}

}  // namespace

TensorDesc make_tensor_desc(std::size_t n, std::size_t c, std::size_t h, std::size_t w) {
  TensorDesc desc = create<TensorDesc>(cudnnCreateTensorDescriptor);
  GAPBENCH_CHECK(cudnnSetTensor4dDescriptor(desc.get(), CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT,
                                            as_int(n), as_int(c), as_int(h), as_int(w)));
  return desc;
}

std::string algorithm_name(cudnnConvolutionFwdAlgo_t algo) {
  switch (algo) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM:
      return "IMPLICIT_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM:
      return "IMPLICIT_PRECOMP_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM:
      return "GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT:
      return "DIRECT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT:
      return "FFT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING:
      return "FFT_TILING";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD:
      return "WINOGRAD";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED:
      return "WINOGRAD_NONFUSED";
    default:
      return "algo_" + std::to_string(static_cast<int>(algo));
  }
}

std::string math_name(cudnnMathType_t math) {
  switch (math) {
    case CUDNN_DEFAULT_MATH:
      return "default";
    case CUDNN_TENSOR_OP_MATH:
      return "tensor_op";
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION:
      return "tensor_op_allow_conversion";
    case CUDNN_FMA_MATH:
      return "fma";
    default:
      return "math_" + std::to_string(static_cast<int>(math));
  }
}

CudnnConvolution::CudnnConvolution(cudnnHandle_t handle, const ConvShape& shape,
                                   cudnnMathType_t math)
    : handle_(handle), shape_((check_shape(shape), shape)) {
  x_desc_ = make_tensor_desc(shape.n, shape.c, shape.h, shape.w);
  y_desc_ = make_tensor_desc(shape.n, shape.k, shape.p(), shape.q());
  w_desc_ = create<FilterDesc>(cudnnCreateFilterDescriptor);
  GAPBENCH_CHECK(cudnnSetFilter4dDescriptor(w_desc_.get(), CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW,
                                            as_int(shape.k), as_int(shape.c), as_int(shape.r),
                                            as_int(shape.s)));
  conv_desc_ = create<ConvDesc>(cudnnCreateConvolutionDescriptor);
  // Cross-correlation: what every framework's conv2d computes (and conv.h's reference).
  GAPBENCH_CHECK(cudnnSetConvolution2dDescriptor(
      conv_desc_.get(), as_int(shape.pad), as_int(shape.pad), as_int(shape.stride),
      as_int(shape.stride), 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  GAPBENCH_CHECK(cudnnSetConvolutionMathType(conv_desc_.get(), math));

  // cuDNN's output shape must be ours, or y would be read with the wrong layout.
  int n = 0, k = 0, p = 0, q = 0;
  GAPBENCH_CHECK(cudnnGetConvolution2dForwardOutputDim(conv_desc_.get(), x_desc_.get(),
                                                       w_desc_.get(), &n, &k, &p, &q));
  if (n != as_int(shape.n) || k != as_int(shape.k) || p != as_int(shape.p()) ||
      q != as_int(shape.q())) {
    throw std::runtime_error("cuDNN computes a " + std::to_string(n) + "x" + std::to_string(k) +
                             "x" + std::to_string(p) + "x" + std::to_string(q) + " output for " +
                             shape.str() + ", not " + std::to_string(shape.p()) + "x" +
                             std::to_string(shape.q()));
  }

  int max_algos = 0;
  GAPBENCH_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(handle_, &max_algos));
  std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(static_cast<std::size_t>(max_algos));
  int returned = 0;
  const auto t0 = std::chrono::steady_clock::now();
  GAPBENCH_CHECK(cudnnFindConvolutionForwardAlgorithm(handle_, x_desc_.get(), w_desc_.get(),
                                                      conv_desc_.get(), y_desc_.get(), max_algos,
                                                      &returned, perf.data()));
  search_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  // Results come fastest first; algorithms that failed (unsupported, workspace not allocatable)
  // carry their status and are skipped.
  for (int i = 0; i < returned; ++i) {
    if (perf[static_cast<std::size_t>(i)].status != CUDNN_STATUS_SUCCESS) continue;
    const cudnnConvolutionFwdAlgoPerf_t& best = perf[static_cast<std::size_t>(i)];
    algo_ = best.algo;
    algo_math_ = best.mathType;
    workspace_bytes_ = best.memory;
    // Run with the math mode the search measured this algorithm in.
    GAPBENCH_CHECK(cudnnSetConvolutionMathType(conv_desc_.get(), best.mathType));
    // The search reports the workspace it measured with; ask for the size forward() needs.
    std::size_t needed = 0;
    GAPBENCH_CHECK(cudnnGetConvolutionForwardWorkspaceSize(
        handle_, x_desc_.get(), w_desc_.get(), conv_desc_.get(), y_desc_.get(), algo_, &needed));
    workspace_bytes_ = std::max(workspace_bytes_, needed);
    return;
  }
  throw std::runtime_error("cuDNN found no working forward algorithm for " + shape.str() + " (" +
                           std::to_string(returned) + " tried)");
}

std::string CudnnConvolution::description() const {
  return "algo:" + algorithm_name() + " workspace_bytes:" + std::to_string(workspace_bytes_) +
         " math:" + math_name(algo_math_);
}

void CudnnConvolution::forward(const float* x, const float* w, float* y, void* workspace) const {
  const float one = 1.0f, zero = 0.0f;
  GAPBENCH_CHECK(cudnnConvolutionForward(handle_, &one, x_desc_.get(), x, w_desc_.get(), w,
                                         conv_desc_.get(), algo_, workspace, workspace_bytes_,
                                         &zero, y_desc_.get(), y));
}

}  // namespace gapbench::conv

#endif  // GAPBENCH_WITH_CUDNN
