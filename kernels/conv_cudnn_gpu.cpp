#include "kernels/conv_cudnn.h"

#if GAPBENCH_WITH_CUDNN

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/base/gpu_memory.h"
#include "kernels/base/narrow_gpu.h"

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

TensorDesc make_tensor_desc(std::size_t n, std::size_t c, std::size_t h, std::size_t w,
                            cudnnDataType_t type, cudnnTensorFormat_t format) {
  TensorDesc desc = create<TensorDesc>(cudnnCreateTensorDescriptor);
  GAPBENCH_CHECK(cudnnSetTensor4dDescriptor(desc.get(), format, type, as_int(n), as_int(c),
                                            as_int(h), as_int(w)));
  return desc;
}

std::vector<std::uint16_t> to_nhwc_half(const std::vector<float>& nchw, std::size_t n,
                                        std::size_t c, std::size_t h, std::size_t w) {
  std::vector<float> nhwc(n * c * h * w);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t ch = 0; ch < c; ++ch)
      for (std::size_t p = 0; p < h * w; ++p)
        nhwc[(i * h * w + p) * c + ch] = nchw[(i * c + ch) * h * w + p];
  return to_16bit(nhwc, Arithmetic::fp16);
}

std::vector<float> from_nhwc_half(const std::vector<std::uint16_t>& nhwc, std::size_t n,
                                  std::size_t c, std::size_t h, std::size_t w) {
  const std::vector<float> values = from_16bit(nhwc.data(), nhwc.size(), Arithmetic::fp16);
  std::vector<float> out(n * c * h * w);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t ch = 0; ch < c; ++ch)
      for (std::size_t p = 0; p < h * w; ++p)
        out[(i * c + ch) * h * w + p] = values[(i * h * w + p) * c + ch];
  return out;
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

cudnnMathType_t cudnn_math_type(Arithmetic arithmetic) {
  switch (arithmetic) {
    case Arithmetic::float32:
      return CUDNN_FMA_MATH;
    case Arithmetic::tf32:
    case Arithmetic::fp16:
      return CUDNN_TENSOR_OP_MATH;
    case Arithmetic::bf16:
      break;
  }
  throw std::invalid_argument(std::string("conv cudnn: no ") + gapbench::math_name(arithmetic) +
                              " variant (fp32, tf32 or fp16)");
}

bool math_allowed(Arithmetic arithmetic, cudnnMathType_t candidate) {
  if (arithmetic == Arithmetic::float32) return candidate == CUDNN_FMA_MATH;
  return candidate != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
}

CudnnConvolution::CudnnConvolution(cudnnHandle_t handle, const ConvShape& shape,
                                   Arithmetic arithmetic)
    : handle_(handle),
      arithmetic_(arithmetic),
      type_(arithmetic == Arithmetic::fp16 ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT),
      shape_((check_shape(shape), shape)) {
  const cudnnMathType_t math = cudnn_math_type(arithmetic);  // refuses bf16 before any cuDNN call
  const cudnnTensorFormat_t format = half_nhwc() ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  x_desc_ = make_tensor_desc(shape.n, shape.c, shape.h, shape.w, type_, format);
  y_desc_ = make_tensor_desc(shape.n, shape.k, shape.p(), shape.q(), type_, format);
  w_desc_ = create<FilterDesc>(cudnnCreateFilterDescriptor);
  // NHWC for a filter is K x R x S x C.
  GAPBENCH_CHECK(cudnnSetFilter4dDescriptor(w_desc_.get(), type_, format, as_int(shape.k),
                                            as_int(shape.c), as_int(shape.r), as_int(shape.s)));
  conv_desc_ = create<ConvDesc>(cudnnCreateConvolutionDescriptor);
  // Cross-correlation: what every framework's conv2d computes (and conv.h's reference). Sums in
  // float32 whatever the data type: mixed precision's accumulation.
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

  search();
}

// As PyTorch's cudnn.benchmark: cudnnFindConvolutionForwardAlgorithmEx on buffers of the layer's
// sizes with a workspace as large as the hungriest algorithm asks (up to half the free device
// memory), so no algorithm is passed over for want of one. Then, as the frameworks' autotuners
// (cuDNN's frontend: the best of several runs each), every algorithm that worked is run again,
// warm, and timed: the single cold run Find measures can include loading the kernel's module
// (lazy loading). On the H200, cudnnFindConvolutionForwardAlgorithm (cuDNN's own buffers, one
// cold run) left a default-math row on IMPLICIT_GEMM without workspace, at 2.6 times the math:fp32
// row's time; one or both of these is the likely cause.
void CudnnConvolution::search() {
  const auto t0 = std::chrono::steady_clock::now();
  cudaStream_t stream = nullptr;
  GAPBENCH_CHECK(cudnnGetStream(handle_, &stream));
  const std::size_t element = half_nhwc() ? 2 : sizeof(float);
  // The tensors zeroed: no algorithm reads uninitialised memory of ours.
  auto zeroed = [stream](std::size_t bytes) {
    DeviceBuffer<unsigned char> b(bytes);
    GAPBENCH_CHECK(cudaMemsetAsync(b.data(), 0, b.bytes(), stream));
    return b;
  };
  const DeviceBuffer<unsigned char> x = zeroed(shape_.input_size() * element);
  const DeviceBuffer<unsigned char> w = zeroed(shape_.filter_size() * element);
  const DeviceBuffer<unsigned char> y = zeroed(shape_.output_size() * element);

  std::size_t free_bytes = 0, total_bytes = 0;
  GAPBENCH_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  std::size_t workspace_limit = 0;
  for (int a = 0; a < CUDNN_CONVOLUTION_FWD_ALGO_COUNT; ++a) {
    std::size_t bytes = 0;
    // An algorithm that does not apply to this layer says so; it is simply not sized.
    if (cudnnGetConvolutionForwardWorkspaceSize(
            handle_, x_desc_.get(), w_desc_.get(), conv_desc_.get(), y_desc_.get(),
            static_cast<cudnnConvolutionFwdAlgo_t>(a), &bytes) == CUDNN_STATUS_SUCCESS &&
        bytes <= free_bytes / 2) {
      workspace_limit = std::max(workspace_limit, bytes);
    }
  }
  // cuDNN's scratch: poisoned, as every buffer handed to it (kernels/base/gpu_memory.h).
  const DeviceBuffer<unsigned char> workspace =
      poisoned_buffer<unsigned char>(workspace_limit, stream);

  int max_algos = 0;
  GAPBENCH_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(handle_, &max_algos));
  std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(static_cast<std::size_t>(max_algos));
  int returned = 0;
  GAPBENCH_CHECK(cudnnFindConvolutionForwardAlgorithmEx(
      handle_, x_desc_.get(), x.data(), w_desc_.get(), w.data(), conv_desc_.get(), y_desc_.get(),
      y.data(), max_algos, &returned, perf.data(), workspace.data(), workspace.bytes()));

  const Event start, stop;
  double best_seconds = -1.0;
  for (int i = 0; i < returned; ++i) {
    // Algorithms that failed (unsupported, too much workspace) carry their status.
    const cudnnConvolutionFwdAlgoPerf_t& candidate = perf[static_cast<std::size_t>(i)];
    if (candidate.status != CUDNN_STATUS_SUCCESS) continue;
    // The search may answer in another math than asked: float32 keeps FMA's algorithms only.
    if (!math_allowed(arithmetic_, candidate.mathType)) continue;
    // Run with the math mode the search measured this algorithm in.
    GAPBENCH_CHECK(cudnnSetConvolutionMathType(conv_desc_.get(), candidate.mathType));
    // The search reports the workspace it ran with; forward() gets at least what cuDNN asks.
    std::size_t needed = 0;
    GAPBENCH_CHECK(cudnnGetConvolutionForwardWorkspaceSize(handle_, x_desc_.get(), w_desc_.get(),
                                                           conv_desc_.get(), y_desc_.get(),
                                                           candidate.algo, &needed));
    needed = std::max(needed, candidate.memory);
    if (needed > workspace.bytes()) continue;
    const float one = 1.0f, zero = 0.0f;
    auto run = [&] {
      GAPBENCH_CHECK(cudnnConvolutionForward(
          handle_, &one, x_desc_.get(), x.data(), w_desc_.get(), w.data(), conv_desc_.get(),
          candidate.algo, workspace.data(), needed, &zero, y_desc_.get(), y.data()));
    };
    run();  // warm: loads the algorithm's kernels
    double seconds = -1.0;
    for (int r = 0; r < kSearchRuns; ++r) {
      start.record(stream);
      run();
      stop.record(stream);
      const double t = elapsed_seconds(start, stop);
      if (seconds < 0.0 || t < seconds) seconds = t;
    }
    candidates_.push_back({candidate.algo, candidate.mathType, needed, seconds});
    if (best_seconds < 0.0 || seconds < best_seconds) {
      best_seconds = seconds;
      algo_ = candidate.algo;
      algo_math_ = candidate.mathType;
      workspace_bytes_ = needed;
    }
  }
  search_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (best_seconds < 0.0) {
    throw std::runtime_error("cuDNN found no working forward algorithm for " + shape_.str() +
                             " in " + gapbench::math_name(arithmetic_) + " (" +
                             std::to_string(returned) + " tried)");
  }
  GAPBENCH_CHECK(cudnnSetConvolutionMathType(conv_desc_.get(), algo_math_));
}

std::string CudnnConvolution::description() const {
  return "algo:" + algorithm_name() + " workspace_bytes:" + std::to_string(workspace_bytes_) +
         " math:" + math_name(algo_math_) + (half_nhwc() ? " data:fp16 layout:nhwc" : "");
}

void CudnnConvolution::forward(const void* x, const void* w, void* y, void* workspace) const {
  const float one = 1.0f, zero = 0.0f;
  GAPBENCH_CHECK(cudnnConvolutionForward(handle_, &one, x_desc_.get(), x, w_desc_.get(), w,
                                         conv_desc_.get(), algo_, workspace, workspace_bytes_,
                                         &zero, y_desc_.get(), y));
}

}  // namespace gapbench::conv

#endif  // GAPBENCH_WITH_CUDNN
