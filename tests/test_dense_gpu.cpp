#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "kernels/base/cuda_check.h"
#include "kernels/base/data.h"
#include "kernels/base/gpu_memory.h"
#include "kernels/base/validate.h"
#include "kernels/dense.h"
#include "tests/gpu_copy.h"
#include "tests/gpu_test.h"

namespace gapbench::dense {
namespace {

using testing_gpu::nan_buffer;
using testing_gpu::to_device;
using testing_gpu::to_host;

std::vector<double> widen(const std::vector<float>& v) { return {v.begin(), v.end()}; }

void check_bias_relu(std::size_t rows, std::size_t cols) {
  const Stream stream;
  const auto z = uniform_floats(rows * cols, 31, rows + cols);
  const auto bias = uniform_floats(cols, 32, cols);
  std::vector<double> ref(z.size());
  bias_relu_reference(widen(z).data(), widen(bias).data(), rows, cols, ref.data());
  const auto dz = to_device(z, stream);
  const auto dbias = to_device(bias, stream);
  GAPBENCH_CHECK(bias_relu_gpu(dz.data(), dbias.data(), rows, cols, stream.get()));
  // One float32 add, then an exact max.
  const Validation v = validate("bias_relu", to_host(dz, stream), ref, {0.0, kFloat32Roundoff});
  EXPECT_TRUE(v.ok) << rows << "x" << cols << ": " << v.message();
}

TEST(DenseGpu, BiasReluMatchesReference) {
  GAPBENCH_SKIP_WITHOUT_GPU();
  for (auto [rows, cols] :
       {std::pair{1, 1}, std::pair{3, 7}, std::pair{1000, 128}, std::pair{2048, 10}}) {
    check_bias_relu(rows, cols);
  }
}

TEST(DenseGpu, BiasReluGridStridesOverLargeInputs) {
  GAPBENCH_SKIP_WITHOUT_GPU();
  // 16.8 million elements: more than the capped grid's 65535 x 256 threads.
  check_bias_relu(131073, 128);
}

void check_softmax_xent(std::size_t rows, std::size_t classes) {
  const Stream stream;
  const auto logits = uniform_floats(rows * classes, 33, rows * 100 + classes, -4.0f, 4.0f);
  const auto bias = uniform_floats(classes, 34, classes);
  std::vector<std::int32_t> labels(rows);
  for (std::size_t r = 0; r < rows; ++r) {
    labels[r] = static_cast<std::int32_t>(element_hash(35, classes, r) % classes);
  }
  std::vector<double> ref_dl(rows * classes), ref_loss(rows);
  softmax_xent_reference(widen(logits).data(), widen(bias).data(), labels.data(), rows, classes,
                         ref_dl.data(), ref_loss.data());
  const auto dlogits = to_device(logits, stream);
  const auto dbias = to_device(bias, stream);
  const auto dlabels = to_device(labels, stream);
  const auto ddl = nan_buffer<float>(rows * classes, stream);
  const auto dloss = nan_buffer<float>(rows, stream);
  GAPBENCH_CHECK(softmax_xent_gpu(dlogits.data(), dbias.data(), dlabels.data(), rows, classes,
                                  ddl.data(), dloss.data(), stream.get()));
  // p carries the rounding of an exp, a sum of `classes` terms and a division (a few times 32
  // units of float32 roundoff at most); dlogits is p - onehot scaled by 1/rows. The loss is a log
  // of that sum minus a difference of logits up to 5 in size.
  const std::string shape = std::to_string(rows) + "x" + std::to_string(classes);
  Validation v =
      validate("dlogits", to_host(ddl, stream), ref_dl,
               {64 * kFloat32Roundoff / static_cast<double>(rows), 64 * kFloat32Roundoff});
  EXPECT_TRUE(v.ok) << shape << ": " << v.message();
  v = validate("row_loss", to_host(dloss, stream), ref_loss,
               {64 * kFloat32Roundoff, 64 * kFloat32Roundoff});
  EXPECT_TRUE(v.ok) << shape << ": " << v.message();
}

TEST(DenseGpu, SoftmaxXentMatchesReference) {
  GAPBENCH_SKIP_WITHOUT_GPU();
  for (std::size_t classes : {1u, 2u, 10u, 31u, 32u}) {
    for (std::size_t rows : {1u, 5u, 9u, 2048u}) check_softmax_xent(rows, classes);
  }
}

TEST(DenseGpu, SoftmaxXentGridStridesOverManyRows) {
  GAPBENCH_SKIP_WITHOUT_GPU();
  // More rows than the capped grid has warps (65535 blocks x 8 warps).
  check_softmax_xent(600001, 10);
}

TEST(DenseGpu, SoftmaxXentRefusesMoreClassesThanAWarp) {
  GAPBENCH_SKIP_WITHOUT_GPU();
  for (std::size_t classes : {0u, 33u}) {
    EXPECT_EQ(softmax_xent_gpu(nullptr, nullptr, nullptr, 4, classes, nullptr, nullptr, nullptr),
              cudaErrorInvalidValue);
  }
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // refused without a launch: nothing left behind
}

TEST(DenseGpu, MeanMatchesReference) {
  GAPBENCH_SKIP_WITHOUT_GPU();
  const Stream stream;
  for (std::size_t n : {1u, 255u, 256u, 257u, 2048u, 100003u}) {
    const auto x = uniform_floats(n, 36, n, 0.0f, 3.0f);
    double sum = 0.0;
    for (float v : x) sum += v;
    const double ref = sum / static_cast<double>(n);
    const auto dx = to_device(x, stream);
    const auto dout = nan_buffer<float>(1, stream);
    GAPBENCH_CHECK(mean_gpu(dx.data(), n, dout.data(), stream.get()));
    const float got = to_host(dout, stream)[0];
    // Non-negative terms: each thread's strided sum of n/256 terms, then 8 levels of the tree,
    // then the division.
    const double rtol = (static_cast<double>(n) / 256 + 10) * kFloat32Roundoff;
    const Validation v = validate("mean", &got, &ref, 1, {0.0, rtol});
    EXPECT_TRUE(v.ok) << n << ": " << v.message();
  }
  EXPECT_EQ(mean_gpu(nullptr, 0, nullptr, stream.get()), cudaErrorInvalidValue);
}

TEST(DenseGpu, ReluBackwardMatchesReference) {
  GAPBENCH_SKIP_WITHOUT_GPU();
  const Stream stream;
  for (std::size_t n : {1u, 1000u, 16777217u}) {
    const auto dh = uniform_floats(n, 37, n);
    auto h = uniform_floats(n, 38, n);
    for (std::size_t i = 0; i < n; i += 7) h[i] = 0.0f;  // exactly at the kink: off
    for (float& v : h) v = std::max(v, 0.0f);            // h is a ReLU output
    std::vector<double> ref(n);
    relu_backward_reference(widen(dh).data(), widen(h).data(), n, ref.data());
    const auto ddh = to_device(dh, stream);
    const auto dh_in = to_device(h, stream);
    GAPBENCH_CHECK(relu_backward_gpu(ddh.data(), dh_in.data(), n, stream.get()));
    const Validation v = validate("relu_backward", to_host(ddh, stream), ref, Tolerance::exact());
    EXPECT_TRUE(v.ok) << n << ": " << v.message();
  }
}

}  // namespace
}  // namespace gapbench::dense
