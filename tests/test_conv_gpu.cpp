#include <gtest/gtest.h>

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
    const CudnnConvolution conv(handle.get(), s);
    EXPECT_GT(conv.search_seconds(), 0.0) << s.str();
    EXPECT_FALSE(conv.algorithm_name().empty());
    const Problem c(s, kSeed);
    const auto x = to_device(c.x, stream);
    const auto w = to_device(c.w, stream);
    const auto y = nan_buffer<float>(s.output_size(), stream);
    DeviceBuffer<std::uint8_t> workspace(conv.workspace_bytes());
    conv.forward(x.data(), w.data(), y.data(), workspace.data());
    const Validation v = c.check("cudnn", to_host(y, stream), Arithmetic::tf32);
    EXPECT_TRUE(v.ok) << s.str() << " (" << conv.description() << "): " << v.message();
  }
}

TEST(ConvGpu, CudnnDescriptionNamesAlgorithmWorkspaceAndMath) {
  GAPBENCH_SKIP_WITHOUT_GPU();
  const Stream stream;
  const CudnnHandle handle(stream.get());
  const CudnnConvolution conv(handle.get(), {4, 64, 28, 28, 64, 3, 3, 1, 1});
  const std::string d = conv.description();
  EXPECT_NE(d.find("algo:" + conv.algorithm_name()), std::string::npos) << d;
  EXPECT_NE(d.find("workspace_bytes:" + std::to_string(conv.workspace_bytes())), std::string::npos)
      << d;
  EXPECT_NE(d.find("math:"), std::string::npos) << d;
  EXPECT_GT(conv.search_seconds(), 0.0);
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
    CudnnConvolution conv(nullptr, {1, 1, 2, 2, 1, 3, 3, 1, 0});
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

#endif  // GAPBENCH_WITH_CUDNN

}  // namespace
}  // namespace gapbench::conv
