#include "kernels/dense.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/base/validate.h"

namespace gapbench::dense {
namespace {

constexpr float kLr = 0.1f;

std::string shape_name(const DenseShape& s) {
  return std::to_string(s.batch) + "x" + std::to_string(s.in) + "x" + std::to_string(s.hidden) +
         "x" + std::to_string(s.out);
}

std::vector<double> widen(const std::vector<float>& v) { return {v.begin(), v.end()}; }

// The smallest |pre-activation| of the hidden layer, in float64.
double closest_to_kink(const DenseShape& s, const std::vector<double>& p,
                       const std::vector<float>& x) {
  double closest = INFINITY;
  for (std::size_t r = 0; r < s.batch; ++r)
    for (std::size_t j = 0; j < s.hidden; ++j) {
      double z = p[s.b1() + j];
      for (std::size_t i = 0; i < s.in; ++i) z += x[r * s.in + i] * p[s.w1() + i * s.hidden + j];
      closest = std::min(closest, std::fabs(z));
    }
  return closest;
}

// ---- the reference ----

TEST(Dense, ReferenceOpsHandComputed) {
  const std::vector<double> z = {-1.0, 0.5, 2.0, -0.25};  // 2 x 2
  const std::vector<double> bias = {0.5, -1.0};
  std::vector<double> h(4);
  bias_relu_reference(z.data(), bias.data(), 2, 2, h.data());
  EXPECT_EQ(h, (std::vector<double>{0.0, 0.0, 2.5, 0.0}));
  const std::vector<double> dh = {1.0, 2.0, 3.0, 4.0};
  std::vector<double> dz(4);
  relu_backward_reference(dh.data(), h.data(), 4, dz.data());
  EXPECT_EQ(dz, (std::vector<double>{0.0, 0.0, 3.0, 0.0}));  // off at exactly 0 too
}

TEST(Dense, SoftmaxCrossEntropyHandComputed) {
  // Row 0: equal logits over 4 classes; row 1: one logit ln(3) above the other three.
  const std::vector<double> logits = {0.5, 0.5, 0.5, 0.5, std::log(3.0), 0.0, 0.0, 0.0};
  const std::vector<double> bias = {0.0, 0.0, 0.0, 0.0};
  const std::vector<std::int32_t> labels = {2, 0};
  std::vector<double> dl(8), row_loss(2);
  const double loss = softmax_xent_reference(logits.data(), bias.data(), labels.data(), 2, 4,
                                             dl.data(), row_loss.data());
  EXPECT_NEAR(row_loss[0], std::log(4.0), 1e-15);
  EXPECT_NEAR(row_loss[1], std::log(2.0), 1e-15);  // p = 3/6
  EXPECT_NEAR(loss, (std::log(4.0) + std::log(2.0)) / 2, 1e-15);
  // (p - onehot) / rows
  const std::vector<double> want = {0.125, 0.125,    -0.375,   0.125,
                                    -0.25, 1.0 / 12, 1.0 / 12, 1.0 / 12};
  for (std::size_t k = 0; k < 8; ++k) EXPECT_NEAR(dl[k], want[k], 1e-15) << k;
}

TEST(Dense, BiasShiftsTheLogits) {
  // A bias of ln(3) on class 0 is the second row above.
  const std::vector<double> logits = {0.0, 0.0, 0.0, 0.0};
  const std::vector<double> bias = {std::log(3.0), 0.0, 0.0, 0.0};
  const std::int32_t label = 0;
  std::vector<double> dl(4);
  EXPECT_NEAR(softmax_xent_reference(logits.data(), bias.data(), &label, 1, 4, dl.data(), nullptr),
              std::log(2.0), 1e-15);
}

TEST(Dense, ZeroParametersGiveUniformPredictions) {
  const DenseShape s{4, 6, 5, 3};
  const std::vector<double> params(s.params(), 0.0);
  const auto x = random_inputs(s, 1);
  const auto y = random_labels(s, 1);
  std::vector<double> grad(s.params(), -1.0);
  EXPECT_NEAR(gradient_reference(s, params.data(), x.data(), y.data(), grad.data()), std::log(3.0),
              1e-15);
  // Only b2 gets a gradient: mean over rows of 1/3 - onehot.
  for (std::size_t k = 0; k < s.out; ++k) {
    double want = 0.0;
    for (std::size_t r = 0; r < s.batch; ++r) want += (1.0 / 3 - (y[r] == int(k))) / s.batch;
    EXPECT_NEAR(grad[s.b2() + k], want, 1e-15) << k;
  }
  for (std::size_t i = 0; i < s.b2(); ++i) EXPECT_EQ(grad[i], 0.0) << i;
}

TEST(Dense, GradientMatchesFiniteDifferences) {
  for (const DenseShape& s : {DenseShape{3, 5, 4, 3}, DenseShape{2, 3, 6, 2}}) {
    std::vector<double> p = widen(initial_params(s, 5));
    const auto x = random_inputs(s, 5);
    const auto y = random_labels(s, 5);
    constexpr double h = 1e-5;
    // No unit sits within the step of ReLU's kink, where the loss is not differentiable.
    ASSERT_GT(closest_to_kink(s, p, x), 100 * h) << shape_name(s);
    std::vector<double> grad(s.params());
    gradient_reference(s, p.data(), x.data(), y.data(), grad.data());
    std::vector<double> fd(s.params());
    for (std::size_t i = 0; i < p.size(); ++i) {
      const double saved = p[i];
      p[i] = saved + h;
      const double up = loss_reference(s, p.data(), x.data(), y.data());
      p[i] = saved - h;
      const double down = loss_reference(s, p.data(), x.data(), y.data());
      p[i] = saved;
      fd[i] = (up - down) / (2 * h);
    }
    // Central differences: O(h²) truncation, O(ε/h) rounding, both far below 1e-8.
    const Validation v = validate("gradient", grad, fd, {1e-8, 1e-6});
    EXPECT_TRUE(v.ok) << shape_name(s) << ": " << v.message();
    // ReLU leaves some units on, so W1 gets a gradient.
    EXPECT_GT(*std::max_element(grad.begin() + s.w1(), grad.begin() + s.b1()), 0.0);
  }
}

TEST(Dense, InputsAreSeededAndInRange) {
  const DenseShape s = mnist_shape(64);
  EXPECT_EQ(s.params(), 784u * 128 + 128 + 128 * 10 + 10);
  const auto x = random_inputs(s, 42);
  EXPECT_EQ(x, random_inputs(s, 42));
  EXPECT_NE(x, random_inputs(s, 43));
  for (float v : x) ASSERT_TRUE(v >= 0.0f && v < 1.0f) << v;
  const auto y = random_labels(s, 42);
  std::vector<int> seen(s.out, 0);
  for (std::int32_t label : y) {
    ASSERT_TRUE(label >= 0 && label < static_cast<std::int32_t>(s.out)) << label;
    ++seen[label];
  }
  EXPECT_GT(*std::min_element(seen.begin(), seen.end()), 0);
  const auto p = initial_params(s, 42);
  const float w1_limit = std::sqrt(6.0f / (784 + 128));
  for (std::size_t i = s.w1(); i < s.b1(); ++i) ASSERT_LE(std::fabs(p[i]), w1_limit) << i;
  for (std::size_t i = s.b1(); i < s.w2(); ++i) ASSERT_LE(std::fabs(p[i]), 0.1f) << i;
  EXPECT_NE(p[s.b1()], 0.0f);  // biases are not zero
  EXPECT_NE(p[s.b2()], 0.0f);
}

// ---- the CPU step against the reference ----

const DenseShape kShapes[] = {{1, 5, 4, 3},     {7, 13, 9, 5},   {33, 17, 31, 10},
                              {64, 100, 40, 1}, mnist_shape(32), mnist_shape(128)};

TEST(Dense, CpuStepMatchesReference) {
  for (const DenseShape& s : kShapes) {
    const auto x = random_inputs(s, 11);
    const auto y = random_labels(s, 11);
    auto params = initial_params(s, 11);
    const StepReference ref = step_reference(s, params.data(), x.data(), y.data(), kLr);
    CpuWorkspace ws(s);
    const float loss = step_cpu(s, params.data(), x.data(), y.data(), kLr, ws);
    const Validation v = check_step(s, ref, loss, params.data());
    EXPECT_TRUE(v.ok) << shape_name(s) << ": " << v.message();
    EXPECT_EQ(v.count, s.params() + 1);
  }
}

TEST(Dense, CpuStepIsRepeatable) {
  const DenseShape s = mnist_shape(32);
  const auto x = random_inputs(s, 3);
  const auto y = random_labels(s, 3);
  auto a = initial_params(s, 3);
  auto b = a;
  CpuWorkspace ws(s);
  const float first = step_cpu(s, a.data(), x.data(), y.data(), kLr, ws);
  // The workspace's leftovers from the first call must not leak into the next.
  EXPECT_EQ(step_cpu(s, b.data(), x.data(), y.data(), kLr, ws), first);
  EXPECT_EQ(a, b);
  // Training on the batch lowers its loss.
  EXPECT_LT(step_cpu(s, a.data(), x.data(), y.data(), kLr, ws), first);
}

// ---- the tolerance catches wrong steps ----

class DenseTolerance : public ::testing::Test {
 protected:
  DenseTolerance()
      : s(mnist_shape(32)),
        x(random_inputs(s, 7)),
        y(random_labels(s, 7)),
        start(initial_params(s, 7)),
        ref(step_reference(s, start.data(), x.data(), y.data(), kLr)) {
    after.resize(s.params());
    for (std::size_t i = 0; i < after.size(); ++i) after[i] = static_cast<float>(ref.params[i]);
  }
  // The reference step with one tensor's update scaled by `factor`.
  std::vector<float> scaled_update(std::size_t offset, std::size_t n, double factor) const {
    std::vector<float> p = after;
    for (std::size_t i = offset; i < offset + n; ++i)
      p[i] = static_cast<float>(start[i] + factor * (ref.params[i] - start[i]));
    return p;
  }

  DenseShape s;
  std::vector<float> x;
  std::vector<std::int32_t> y;
  std::vector<float> start, after;
  StepReference ref;
};

TEST_F(DenseTolerance, TheRoundedReferencePasses) {
  const Validation v = check_step(s, ref, static_cast<float>(ref.loss), after.data());
  EXPECT_TRUE(v.ok) << v.message();
}

TEST_F(DenseTolerance, AnUpdateOffByOnePercentFails) {
  const struct {
    const char* name;
    std::size_t offset, n;
  } tensors[] = {{"W1", s.w1(), s.in * s.hidden},
                 {"b1", s.b1(), s.hidden},
                 {"W2", s.w2(), s.hidden * s.out},
                 {"b2", s.b2(), s.out}};
  for (const auto& t : tensors) {
    const auto p = scaled_update(t.offset, t.n, 1.01);
    const Validation v = check_step(s, ref, static_cast<float>(ref.loss), p.data());
    EXPECT_FALSE(v.ok) << t.name;
    EXPECT_NE(v.what.find(t.name), std::string::npos) << v.what;
    const auto none = scaled_update(t.offset, t.n, 0.0);  // no update at all
    EXPECT_FALSE(check_step(s, ref, static_cast<float>(ref.loss), none.data()).ok) << t.name;
  }
}

TEST_F(DenseTolerance, AWrongLossFails) {
  const Validation v = check_step(s, ref, static_cast<float>(ref.loss * 1.01), after.data());
  EXPECT_FALSE(v.ok);
  EXPECT_EQ(v.what, "loss");
}

TEST(Dense, KinkAllowanceOnlyWhereAUnitSitsAtTheKink) {
  const DenseShape s{3, 5, 4, 3};
  const auto x = random_inputs(s, 5);
  const auto y = random_labels(s, 5);
  auto p = initial_params(s, 5);
  StepReference ref = step_reference(s, p.data(), x.data(), y.data(), kLr);
  EXPECT_EQ(ref.at_kink, (std::vector<std::uint8_t>{0, 0, 0, 0}));
  EXPECT_EQ(ref.kink_w1, 0.0);
  EXPECT_EQ(ref.kink_b1, 0.0);
  // Put unit 2 at the kink in row 1: its bias cancels its input (up to float rounding).
  double z = 0.0;
  for (std::size_t i = 0; i < s.in; ++i) z += x[1 * s.in + i] * p[s.w1() + i * s.hidden + 2];
  p[s.b1() + 2] = static_cast<float>(-z);
  ref = step_reference(s, p.data(), x.data(), y.data(), kLr);
  EXPECT_EQ(ref.at_kink, (std::vector<std::uint8_t>{0, 0, 1, 0}));
  EXPECT_GT(ref.kink_b1, 0.0);
  EXPECT_GT(ref.kink_w1, 0.0);
  EXPECT_GT(ref.b1_at_kink.atol, ref.b1.atol);
  EXPECT_GT(ref.w1_at_kink.atol, ref.w1.atol);
  // The CPU step still passes there, whichever side of the kink it lands on.
  CpuWorkspace ws(s);
  const float loss = step_cpu(s, p.data(), x.data(), y.data(), kLr, ws);
  const Validation v = check_step(s, ref, loss, p.data());
  EXPECT_TRUE(v.ok) << v.message();
  EXPECT_EQ(v.count, s.params() + 1);
}

TEST(Dense, KinkAllowanceCoversAFlipOnlyWhereItCanHappen) {
  // Unit 2 at the kink in row 1, as above. A float32 pass that put it on the other side of ReLU
  // would move db1[2] by lr·|g| and W1[i, 2] by lr·|g|·x[1, i] (|g| = kink_b1 here: one row).
  const DenseShape s{3, 5, 4, 3};
  const auto x = random_inputs(s, 5);
  const auto y = random_labels(s, 5);
  auto p = initial_params(s, 5);
  double z = 0.0;
  for (std::size_t i = 0; i < s.in; ++i) z += x[1 * s.in + i] * p[s.w1() + i * s.hidden + 2];
  p[s.b1() + 2] = static_cast<float>(-z);
  const StepReference ref = step_reference(s, p.data(), x.data(), y.data(), kLr);
  ASSERT_GT(ref.kink_b1, 0.0);
  const auto flipped = [&](std::size_t unit) {
    std::vector<float> after(s.params());
    for (std::size_t i = 0; i < after.size(); ++i) after[i] = static_cast<float>(ref.params[i]);
    after[s.b1() + unit] = static_cast<float>(ref.params[s.b1() + unit] + kLr * ref.kink_b1);
    for (std::size_t i = 0; i < s.in; ++i) {
      const std::size_t k = s.w1() + i * s.hidden + unit;
      after[k] = static_cast<float>(ref.params[k] + kLr * ref.kink_b1 * x[1 * s.in + i]);
    }
    return after;
  };
  const Validation at_kink = check_step(s, ref, static_cast<float>(ref.loss), flipped(2).data());
  EXPECT_TRUE(at_kink.ok) << at_kink.message();
  // The same change on a unit away from the kink is an error.
  const Validation away = check_step(s, ref, static_cast<float>(ref.loss), flipped(0).data());
  EXPECT_FALSE(away.ok);
  EXPECT_EQ(away.what, "updated W1");
}

}  // namespace
}  // namespace gapbench::dense
