#include <gtest/gtest.h>

#include <algorithm>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/base/cuda_check.h"
#include "kernels/base/gpu_memory.h"
#include "kernels/conv.h"
#include "kernels/conv_cudnn.h"
#include "tests/conv_cases.h"
#include "tests/gpu_copy.h"
#include "tests/gpu_test.h"

#if GAPBENCH_WITH_CUDNN
#include "kernels/base/cuda_libraries.h"
#endif

namespace gapbench::conv {
namespace {

using cases::kSeed;
using cases::kSmallShapes;
using testing_gpu::nan_buffer;
using testing_gpu::to_device;
using testing_gpu::to_host;

using Launcher = cudaError_t (*)(const ConvShape&, const float*, const float*, float*,
                                 cudaStream_t);

// Shapes that cross every tile edge of the tiled kernel: several row, column and filter tiles
// with ragged ends, channels that are not a multiple of the staged chunk, both tile shapes
// (8 x 32 and 16 x 16), strides 1, 2 and 3 (the run-time-stride code), and the family's tiny
// input.
//                                n   c   h   w   k  r  s  stride pad
const ConvShape kTileShapes[] = {{2, 13, 37, 45, 37, 3, 3, 1, 1}, {1, 9, 14, 14, 40, 3, 3, 1, 1},
                                 {2, 20, 33, 70, 33, 5, 5, 2, 2}, {1, 3, 64, 64, 64, 7, 7, 2, 3},
                                 {1, 16, 30, 30, 65, 1, 1, 1, 0}, {1, 5, 40, 29, 7, 3, 3, 3, 1},
                                 {1, 1, 28, 28, 1, 3, 3, 1, 0},   {3, 8, 17, 100, 31, 3, 1, 1, 0}};

void check_launcher(const char* name, Launcher fn, const ConvShape& shape) {
  const Stream stream;
  const Problem c(shape, kSeed);
  const auto x = to_device(c.x, stream);
  const auto w = to_device(c.w, stream);
  const auto y = nan_buffer<float>(shape.output_size(), stream);
  GAPBENCH_CHECK(fn(shape, x.data(), w.data(), y.data(), stream.get()));
  const Validation v = c.check(name, to_host(y, stream));
  EXPECT_TRUE(v.ok) << shape.str() << ": " << v.message();
}

// One float32 NCHW forward pass of `conv` (float32 or tf32) on the problem's data, into a
// NaN-filled output with a poisoned workspace, checked at the tolerance of its arithmetic.
Validation cudnn_float32_forward(const CudnnConvolution& conv, const Problem& c,
                                 const Stream& stream) {
  const auto x = to_device(c.x, stream);
  const auto w = to_device(c.w, stream);
  const auto y = nan_buffer<float>(c.shape.output_size(), stream);
  const auto workspace = poisoned_buffer<std::uint8_t>(conv.workspace_bytes(), stream.get());
  conv.forward(x.data(), w.data(), y.data(), workspace.data());
  return c.check("cudnn", to_host(y, stream), conv.arithmetic());
}

TEST(ConvGpu, NaiveMatchesReference) {
  GAPBENCH_SKIP_WITHOUT_GPU();
  for (const ConvShape& s : kSmallShapes) check_launcher("naive_gpu", &naive_gpu, s);
  for (const ConvShape& s : kTileShapes) check_launcher("naive_gpu", &naive_gpu, s);
}

TEST(ConvGpu, TiledMatchesReference) {
  GAPBENCH_SKIP_WITHOUT_GPU();
  for (const ConvShape& s : kSmallShapes) check_launcher("tiled_gpu", &tiled_gpu, s);
  for (const ConvShape& s : kTileShapes) check_launcher("tiled_gpu", &tiled_gpu, s);
}

TEST(ConvGpu, NaiveGridStridesOverLargeOutput) {
  GAPBENCH_SKIP_WITHOUT_GPU();
  // 20.5 million outputs: more than the capped grid's 65535 x 256 = 16.8 million threads.
  check_launcher("naive_gpu", &naive_gpu, {4, 1, 1600, 1600, 2, 3, 3, 1, 1});
}

TEST(ConvGpu, TiledRejectsAFilterItCannotStage) {
  // Thrown before any CUDA call: no device needed.
  EXPECT_THROW(tiled_gpu({1, 1, 40, 40, 1, 21, 21, 1, 0}, nullptr, nullptr, nullptr, nullptr),
               std::invalid_argument);
  EXPECT_THROW(tiled_gpu({1, 1, 2, 2, 1, 3, 3, 1, 0}, nullptr, nullptr, nullptr, nullptr),
               std::invalid_argument);
}

#if GAPBENCH_WITH_CUDNN

TEST(ConvGpu, CudnnMatchesReference) {
  GAPBENCH_SKIP_WITHOUT_GPU();
  const Stream stream;
  const CudnnHandle handle(stream.get());
  std::vector<ConvShape> shapes(std::begin(kSmallShapes), std::end(kSmallShapes));
  shapes.insert(shapes.end(), std::begin(kTileShapes), std::end(kTileShapes));
  for (const ConvShape& s : shapes) {
    const CudnnConvolution conv(handle.get(), s, Arithmetic::float32);
    EXPECT_GT(conv.search_seconds(), 0.0) << s.str();
    EXPECT_FALSE(conv.algorithm_name().empty());
    const Validation v = cudnn_float32_forward(conv, Problem(s, kSeed), stream);
    EXPECT_TRUE(v.ok) << s.str() << " (" << conv.description() << "): " << v.message();
  }
}

// Each math mode said outright: fp32 (FMA, no TF32) and tf32 on float32 NCHW, fp16 on NHWC
// float16 with its output rounding in the tolerance. A mode the GPU lacks is left out.
TEST(ConvGpu, CudnnEachArithmeticMatchesReference) {
  GAPBENCH_SKIP_WITHOUT_GPU();
  const Stream stream;
  const CudnnHandle handle(stream.get());
  for (const ConvShape& s :
       {ConvShape{2, 16, 12, 12, 8, 3, 3, 1, 1}, ConvShape{2, 64, 14, 14, 64, 3, 3, 1, 1}}) {
    const Problem c(s, kSeed);
    for (Arithmetic a : {Arithmetic::float32, Arithmetic::tf32, Arithmetic::fp16}) {
      if (arithmetic_unavailable_reason(a)) continue;
      const CudnnConvolution conv(handle.get(), s, a);
      const bool half = a == Arithmetic::fp16;
      EXPECT_EQ(conv.half_nhwc(), half);
      DeviceBuffer<std::uint16_t> x16, w16, y16;
      DeviceBuffer<float> x32, w32, y32;
      if (half) {
        x16 = to_device(to_nhwc_half(c.x, s.n, s.c, s.h, s.w), stream);
        w16 = to_device(to_nhwc_half(c.w, s.k, s.c, s.r, s.s), stream);
        y16 = to_device(std::vector<std::uint16_t>(s.output_size(), 0xFFFF), stream);  // NaN
      } else {
        x32 = to_device(c.x, stream);
        w32 = to_device(c.w, stream);
        y32 = nan_buffer<float>(s.output_size(), stream);
      }
      const auto workspace = poisoned_buffer<std::uint8_t>(conv.workspace_bytes(), stream.get());
      if (half) {
        conv.forward(x16.data(), w16.data(), y16.data(), workspace.data());
      } else {
        conv.forward(x32.data(), w32.data(), y32.data(), workspace.data());
      }
      const std::vector<float> y =
          half ? from_nhwc_half(to_host(y16, stream), s.n, s.k, s.p(), s.q())
               : to_host(y32, stream);
      const Validation v = c.check("cudnn", y, a, half ? kFp16Roundoff : 0.0);
      EXPECT_TRUE(v.ok) << math_name(a) << " " << s.str() << " (" << conv.description()
                        << "): " << v.message();
    }
  }
  EXPECT_THROW(CudnnConvolution(handle.get(), {1, 1, 5, 5, 1, 3, 3, 1, 0}, Arithmetic::bf16),
               std::invalid_argument);
}

// Host code, so it runs without a GPU: NCHW float32 to NHWC float16 and back.
TEST(ConvGpu, NhwcHalfRoundTripsAndTransposes) {
  const std::size_t n = 2, c = 3, h = 2, w = 5;
  std::vector<float> x(n * c * h * w);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) - 10.0f;  // exact
  const std::vector<std::uint16_t> nhwc = to_nhwc_half(x, n, c, h, w);
  EXPECT_EQ(from_nhwc_half(nhwc, n, c, h, w), x);
  // Element (n=1, c=2, y=1, x=3) sits at ((1·h + 1)·w + 3)·c + 2 in NHWC.
  const std::vector<float> back = from_nhwc_half(nhwc, n, c, h, w);
  const std::vector<std::uint16_t> one{nhwc[((1 * h + 1) * w + 3) * c + 2]};
  EXPECT_EQ(from_nhwc_half(one, 1, 1, 1, 1)[0], x[((1 * c + 2) * h + 1) * w + 3]);
  EXPECT_EQ(back[((1 * c + 2) * h + 1) * w + 3], x[((1 * c + 2) * h + 1) * w + 3]);
}

TEST(ConvGpu, CudnnDescriptionNamesAlgorithmWorkspaceAndMath) {
  GAPBENCH_SKIP_WITHOUT_GPU();
  const Stream stream;
  const CudnnHandle handle(stream.get());
  const CudnnConvolution conv(handle.get(), {4, 64, 28, 28, 64, 3, 3, 1, 1}, Arithmetic::float32);
  const std::string d = conv.description();
  EXPECT_NE(d.find("algo:" + conv.algorithm_name()), std::string::npos) << d;
  EXPECT_NE(d.find("workspace_bytes:" + std::to_string(conv.workspace_bytes())), std::string::npos)
      << d;
  EXPECT_NE(d.find("math:fma"), std::string::npos) << d;
  EXPECT_GT(conv.search_seconds(), 0.0);
}

// The search as PyTorch's cudnn.benchmark: every working algorithm re-timed warm, the fastest
// kept with the workspace it needs, in each float32-data math (fp32 keeps FMA's algorithms
// only); and the algorithm kept computes the convolution.
TEST(ConvGpu, CudnnSearchKeepsTheFastestWarmAlgorithmWithItsWorkspace) {
  GAPBENCH_SKIP_WITHOUT_GPU();
  const Stream stream;
  const CudnnHandle handle(stream.get());
  const ConvShape s{4, 64, 28, 28, 64, 3, 3, 1, 1};
  const Problem c(s, kSeed);
  for (Arithmetic math : {Arithmetic::float32, Arithmetic::tf32}) {
    if (arithmetic_unavailable_reason(math)) continue;
    const CudnnConvolution conv(handle.get(), s, math);
    ASSERT_FALSE(conv.candidates().empty()) << conv.description();
    const auto fastest =
        std::min_element(conv.candidates().begin(), conv.candidates().end(),
                         [](const auto& a, const auto& b) { return a.seconds < b.seconds; });
    EXPECT_EQ(fastest->algo, conv.algorithm()) << conv.description();
    EXPECT_EQ(fastest->workspace_bytes, conv.workspace_bytes()) << conv.description();
    for (const auto& candidate : conv.candidates()) {
      EXPECT_GT(candidate.seconds, 0.0) << algorithm_name(candidate.algo);
      EXPECT_TRUE(math_allowed(math, candidate.math))
          << math_name(math) << " " << algorithm_name(candidate.algo) << " "
          << math_name(candidate.math);
    }
    const Validation v = cudnn_float32_forward(conv, c, stream);
    EXPECT_TRUE(v.ok) << conv.description() << ": " << v.message();
  }
}

// A failing cuDNN call becomes one CudaError naming the status and the call.
TEST(ConvGpu, CudnnStatusBecomesAClearError) {
  GAPBENCH_SKIP_WITHOUT_GPU();
  try {
    make_tensor_desc(0, 1, 1, 1);  // cuDNN refuses a zero dimension
    FAIL() << "no exception";
  } catch (const CudaError& e) {
    const std::string what = e.what();
    EXPECT_TRUE(is_cudnn_status(e, CUDNN_STATUS_BAD_PARAM)) << what;
    EXPECT_NE(what.find("conv_cudnn_gpu.cpp:"), std::string::npos) << what;
    EXPECT_NE(what.find("in `cudnnSetTensor4dDescriptor("), std::string::npos) << what;
  }
}

TEST(ConvGpu, CudnnRejectsImpossibleShapeBeforeAnyCudnnCall) {
  // A null handle: any cuDNN call would fail with CUDNN_STATUS_BAD_PARAM, not invalid_argument.
  try {
    CudnnConvolution conv(nullptr, {1, 1, 2, 2, 1, 3, 3, 1, 0}, Arithmetic::float32);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("impossible convolution"), std::string::npos);
  }
}

TEST(ConvGpu, AlgorithmAndMathNames) {
  EXPECT_EQ(algorithm_name(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM),
            "IMPLICIT_PRECOMP_GEMM");
  EXPECT_EQ(algorithm_name(CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED), "WINOGRAD_NONFUSED");
  EXPECT_EQ(algorithm_name(static_cast<cudnnConvolutionFwdAlgo_t>(99)), "algo_99");
  EXPECT_EQ(math_name(CUDNN_TENSOR_OP_MATH), "tensor_op");
  EXPECT_EQ(math_name(CUDNN_FMA_MATH), "fma");
}

// Host only: each arithmetic's math type, and which of the search's answers may time it. A
// float32 row never runs in cuDNN's default math (TF32 on compute capability 8.0 and later) nor
// in tensor-op math; no row in TENSOR_OP_MATH_ALLOW_CONVERSION (float32 rounded to float16).
TEST(ConvGpu, CudnnMathTypeOfEachArithmetic) {
  EXPECT_EQ(cudnn_math_type(Arithmetic::float32), CUDNN_FMA_MATH);
  EXPECT_EQ(cudnn_math_type(Arithmetic::tf32), CUDNN_TENSOR_OP_MATH);
  EXPECT_EQ(cudnn_math_type(Arithmetic::fp16), CUDNN_TENSOR_OP_MATH);
  EXPECT_THROW(cudnn_math_type(Arithmetic::bf16), std::invalid_argument);
  EXPECT_TRUE(math_allowed(Arithmetic::float32, CUDNN_FMA_MATH));
  for (cudnnMathType_t other :
       {CUDNN_DEFAULT_MATH, CUDNN_TENSOR_OP_MATH, CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION}) {
    EXPECT_FALSE(math_allowed(Arithmetic::float32, other)) << math_name(other);
  }
  for (Arithmetic a : {Arithmetic::tf32, Arithmetic::fp16}) {
    EXPECT_TRUE(math_allowed(a, CUDNN_TENSOR_OP_MATH)) << gapbench::math_name(a);
    EXPECT_TRUE(math_allowed(a, CUDNN_DEFAULT_MATH)) << gapbench::math_name(a);
    EXPECT_TRUE(math_allowed(a, CUDNN_FMA_MATH)) << gapbench::math_name(a);
    EXPECT_FALSE(math_allowed(a, CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)) << gapbench::math_name(a);
  }
}

#endif  // GAPBENCH_WITH_CUDNN

}  // namespace
}  // namespace gapbench::conv
