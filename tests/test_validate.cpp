#include "kernels/base/validate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/base/data.h"

namespace gapbench {
namespace {

TEST(Validate, AcceptsWithinTolerance) {
  const std::vector<double> ref = {1.0, -2.0, 100.0};
  const std::vector<float> got = {1.0f + 1e-7f, -2.0f, 100.001f};
  const Validation v = validate("x", got, ref, {1e-6, 1e-5});
  EXPECT_TRUE(v.ok) << v.message();
  EXPECT_EQ(v.mismatches, 0u);
  EXPECT_EQ(v.count, 3u);
}

TEST(Validate, ReportsTheWorstElement) {
  const std::vector<double> ref = {1.0, 2.0, 3.0, 4.0};
  const std::vector<float> got = {1.0f, 2.1f, 3.0f, 4.5f};
  const Validation v = validate("out", got, ref, {0.0, 1e-3});
  EXPECT_FALSE(v.ok);
  EXPECT_EQ(v.mismatches, 2u);
  EXPECT_EQ(v.worst_index, 3u);
  EXPECT_DOUBLE_EQ(v.worst_ref, 4.0);
  EXPECT_NEAR(v.worst_excess, 0.5 / 4e-3, 1e-6);
  const std::string m = v.message();
  EXPECT_NE(m.find("validation failed: out: 2 of 4"), std::string::npos) << m;
  EXPECT_NE(m.find("worst [3]"), std::string::npos) << m;
}

TEST(Validate, NanIsAMismatch) {
  const std::vector<double> ref = {1.0, 2.0};
  const std::vector<float> got = {1.0f, std::nanf("")};
  const Validation v = validate("nan", got, ref, {1.0, 1.0});
  EXPECT_FALSE(v.ok);
  EXPECT_EQ(v.worst_index, 1u);
}

TEST(Validate, ExactToleranceRejectsAnyDifference) {
  const std::vector<float> ref = {1.0f, 2.0f};
  const std::vector<float> got = {1.0f, std::nextafter(2.0f, 3.0f)};
  EXPECT_FALSE(validate("bits", got, ref, Tolerance::exact()).ok);
  EXPECT_TRUE(validate("bits", ref, ref, Tolerance::exact()).ok);
}

TEST(Validate, SizeMismatchFails) {
  const std::vector<float> got(3, 1.0f);
  const std::vector<double> ref(4, 1.0);
  const Validation v = validate("sizes", got, ref, {1.0, 1.0});
  EXPECT_FALSE(v.ok);
  EXPECT_NE(v.message().find("size 3 vs reference 4"), std::string::npos) << v.message();
}

TEST(Data, SameSeedSameValuesOtherSeedOtherValues) {
  const auto a = uniform_floats(1000, 7, 1);
  const auto b = uniform_floats(1000, 7, 1);
  const auto c = uniform_floats(1000, 8, 1);
  const auto d = uniform_floats(1000, 7, 2);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(a, d);
}

TEST(Data, UniformFloatsStayInRangeAndAreNotConstant) {
  const auto v = uniform_floats(100000, 1, 0, -2.0f, 3.0f);
  float lo = v[0], hi = v[0];
  double sum = 0.0;
  for (float x : v) {
    lo = std::min(lo, x);
    hi = std::max(hi, x);
    sum += x;
  }
  EXPECT_GE(lo, -2.0f);
  EXPECT_LT(hi, 3.0f);
  EXPECT_LT(lo, -1.9f);
  EXPECT_GT(hi, 2.9f);
  EXPECT_NEAR(sum / v.size(), 0.5, 0.05);
}

TEST(Data, RandomBytesCoverTheRange) {
  const auto v = random_bytes(100000, 3, 0);
  std::vector<int> seen(256, 0);
  for (auto b : v) seen[b] = 1;
  int distinct = 0;
  for (int s : seen) distinct += s;
  EXPECT_EQ(distinct, 256);
}

}  // namespace
}  // namespace gapbench
