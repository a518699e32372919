#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "kernels/base/cuda_check.h"
#include "kernels/base/data.h"
#include "kernels/base/gpu_memory.h"
#include "kernels/base/validate.h"
#include "kernels/preprocess.h"
#include "tests/gpu_copy.h"
#include "tests/gpu_test.h"

namespace gapbench::preprocess {
namespace {

using testing_gpu::nan_buffer;
using testing_gpu::to_device;
using testing_gpu::to_host;

using SumsqGpu = cudaError_t (*)(const float*, std::size_t, std::size_t, float*, cudaStream_t);
using ImageGpu = cudaError_t (*)(const std::uint8_t*, ImageShape, const float*, const std::uint8_t*,
                                 float*, cudaStream_t);

struct SumsqCase {
  std::size_t rows, cols;
};

void check_sumsq(const char* name, SumsqGpu fn, const SumsqCase& shape) {
  const Stream stream;
  const auto x = uniform_floats(shape.rows * shape.cols, 17, shape.rows + shape.cols);
  std::vector<double> ref(shape.rows);
  sumsq_reference(x.data(), shape.rows, shape.cols, ref.data());
  const auto dx = to_device(x, stream);
  const auto dout = nan_buffer<float>(shape.rows, stream);
  GAPBENCH_CHECK(fn(dx.data(), shape.rows, shape.cols, dout.data(), stream.get()));
  const auto got = to_host(dout, stream);
  const Validation v = validate(name, got, ref, {0.0, sumsq_rtol(shape.cols)});
  EXPECT_TRUE(v.ok) << shape.rows << "x" << shape.cols << ": " << v.message();
}

void check_image(const char* name, ImageGpu fn, const ImageShape& shape, int flip_mode) {
  const Stream stream;
  const auto in = random_bytes(shape.pixels(), 19, shape.pixels());
  Augmentation aug = random_augmentation(shape.n, 23 + shape.n, 0.6f);
  if (flip_mode < 2) aug.flip.assign(shape.n, static_cast<std::uint8_t>(flip_mode));
  std::vector<double> ref(shape.pixels());
  image_reference(in.data(), shape, aug.delta.data(), aug.flip.data(), ref.data());
  const auto din = to_device(in, stream);
  const auto ddelta = to_device(aug.delta, stream);
  const auto dflip = to_device(aug.flip, stream);
  const auto dout = nan_buffer<float>(shape.pixels(), stream);
  GAPBENCH_CHECK(fn(din.data(), shape, ddelta.data(), dflip.data(), dout.data(), stream.get()));
  const auto got = to_host(dout, stream);
  const Validation v = validate(name, got, ref, {kImageAtol, kImageRtol});
  EXPECT_TRUE(v.ok) << shape.n << "x" << shape.h << "x" << shape.w << "x" << shape.c
                    << " flip mode " << flip_mode << ": " << v.message();
}

// Columns around and off the warp width; rows off the 8 rows per block of the batched kernel.
const SumsqCase kSumsqCases[] = {{1, 1},   {1, 100},    {3, 7},   {9, 31}, {17, 32},
                                 {33, 33}, {1001, 100}, {5, 257}, {4, 0}};

TEST(PreprocessGpu, SumsqVectorizedMatchesReference) {
  GAPBENCH_SKIP_WITHOUT_GPU();
  for (const SumsqCase& c : kSumsqCases)
    check_sumsq("sumsq_vectorized_gpu", &sumsq_vectorized_gpu, c);
}

TEST(PreprocessGpu, SumsqVectorizedGridStridesOverManyRows) {
  GAPBENCH_SKIP_WITHOUT_GPU();
  // More rows than the capped grid has warps (65535 blocks x 8 warps), so warps loop over rows.
  check_sumsq("sumsq_vectorized_gpu", &sumsq_vectorized_gpu, {600001, 3});
}

TEST(PreprocessGpu, SumsqElementwiseMatchesReference) {
  GAPBENCH_SKIP_WITHOUT_GPU();
  for (const SumsqCase& c : kSumsqCases) {
    check_sumsq("sumsq_elementwise_gpu", &sumsq_elementwise_gpu, c);
  }
}

const ImageShape kImageShapes[] = {{1, 1, 1, 3}, {2, 5, 7, 3},  {3, 16, 17, 1},
                                   {2, 4, 9, 4}, {2, 3, 11, 2}, {5, 33, 65, 3}};

TEST(PreprocessGpu, ImageVectorizedMatchesReference) {
  GAPBENCH_SKIP_WITHOUT_GPU();
  for (const ImageShape& shape : kImageShapes) {
    for (int flip_mode : {0, 1, 2}) {
      check_image("image_vectorized_gpu", &image_vectorized_gpu, shape, flip_mode);
    }
  }
}

TEST(PreprocessGpu, ImageVectorizedGridStridesOverLargeBatch) {
  GAPBENCH_SKIP_WITHOUT_GPU();
  // 3 x 1500 x 1999 x 3 = 27 million elements, more than the capped grid's 16.8 million threads.
  check_image("image_vectorized_gpu", &image_vectorized_gpu, {3, 1500, 1999, 3}, 2);
}

TEST(PreprocessGpu, ImageElementwiseMatchesReference) {
  GAPBENCH_SKIP_WITHOUT_GPU();
  for (const ImageShape& shape : kImageShapes) {
    for (int flip_mode : {0, 1, 2}) {
      check_image("image_elementwise_gpu", &image_elementwise_gpu, shape, flip_mode);
    }
  }
}

}  // namespace
}  // namespace gapbench::preprocess
