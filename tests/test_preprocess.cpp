#include "kernels/preprocess.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "kernels/base/data.h"
#include "kernels/base/validate.h"

namespace gapbench::preprocess {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

std::string shape_name(ImageShape s) {
  return std::to_string(s.n) + "x" + std::to_string(s.h) + "x" + std::to_string(s.w) + "x" +
         std::to_string(s.c);
}

// ---- the reference against hand-computed values ----

TEST(Preprocess, SumsqReferenceHandComputed) {
  const std::vector<float> x = {1.0f, 2.0f, 3.0f, -0.5f, 0.0f, 4.0f};  // 2 x 3
  std::vector<double> out(2, -1.0);
  sumsq_reference(x.data(), 2, 3, out.data());
  EXPECT_EQ(out[0], 14.0);
  EXPECT_EQ(out[1], 16.25);
}

TEST(Preprocess, ImageReferenceHandComputedFlipped) {
  // One 1 x 2 image of 3 channels: pixel 0 = (0, 51, 255), pixel 1 = (102, 204, 10).
  const std::vector<std::uint8_t> in = {0, 51, 255, 102, 204, 10};
  const ImageShape shape{1, 1, 2, 3};
  const float delta = 0.5f;
  const std::uint8_t flip = 1;
  std::vector<double> out(6, -1.0);
  image_reference(in.data(), shape, &delta, &flip, out.data());
  // Flipped: output pixel 0 is input pixel 1, channels in order; 204/255 + 0.5 and
  // 255/255 + 0.5 clamp to 1.
  const std::vector<double> want = {0.9, 1.0, 10.0 / 255.0 + 0.5, 0.5, 0.7, 1.0};
  for (std::size_t k = 0; k < want.size(); ++k) EXPECT_NEAR(out[k], want[k], 1e-12) << k;
}

TEST(Preprocess, ImageReferenceHandComputedClampsAtZero) {
  const std::vector<std::uint8_t> in = {0, 51, 255, 102, 204, 10};
  const ImageShape shape{1, 1, 2, 3};
  const float delta = -0.5f;
  const std::uint8_t flip = 0;
  std::vector<double> out(6, -1.0);
  image_reference(in.data(), shape, &delta, &flip, out.data());
  const std::vector<double> want = {0.0, 0.0, 0.5, 0.0, 0.3, 0.0};
  for (std::size_t k = 0; k < want.size(); ++k) EXPECT_NEAR(out[k], want[k], 1e-12) << k;
}

// ---- the CPU variants against the reference ----

using SumsqVariant = void (*)(const float*, std::size_t, std::size_t, float*);
using ImageVariant = void (*)(const std::uint8_t*, ImageShape, const float*, const std::uint8_t*,
                              float*);

TEST(Preprocess, SumsqVariantsMatchReference) {
  const std::pair<const char*, SumsqVariant> variants[] = {
      {"sumsq_elementwise", &sumsq_elementwise}, {"sumsq_vectorized", &sumsq_vectorized}};
  for (std::size_t rows : {1u, 3u, 1001u}) {
    for (std::size_t cols : {1u, 7u, 15u, 16u, 17u, 31u, 33u, 100u, 257u}) {
      const auto x = uniform_floats(rows * cols, 7, rows * 1000 + cols);
      std::vector<double> ref(rows);
      sumsq_reference(x.data(), rows, cols, ref.data());
      for (const auto& [name, fn] : variants) {
        std::vector<float> got(rows, kNaN);  // an unwritten row fails
        fn(x.data(), rows, cols, got.data());
        const Validation v = validate(name, got, ref, {0.0, sumsq_rtol(cols)});
        EXPECT_TRUE(v.ok) << rows << "x" << cols << ": " << v.message();
      }
    }
  }
}

TEST(Preprocess, SumsqVariantsOnLargeValues) {
  // Values up to 1e3 in size: relative error does not depend on scale.
  const std::size_t rows = 5, cols = 1000;
  const auto x = uniform_floats(rows * cols, 3, 9, -1000.0f, 1000.0f);
  std::vector<double> ref(rows);
  sumsq_reference(x.data(), rows, cols, ref.data());
  for (SumsqVariant fn : {&sumsq_elementwise, &sumsq_vectorized}) {
    std::vector<float> got(rows, kNaN);
    fn(x.data(), rows, cols, got.data());
    const Validation v = validate("sumsq", got, ref, {0.0, sumsq_rtol(cols)});
    EXPECT_TRUE(v.ok) << v.message();
  }
}

TEST(Preprocess, ImageVariantsMatchReference) {
  const std::pair<const char*, ImageVariant> variants[] = {
      {"image_elementwise", &image_elementwise}, {"image_vectorized", &image_vectorized}};
  // c = 3 and 1 take the vectorized variant's specialised mirror, c = 2 and 4 its generic one.
  const ImageShape shapes[] = {{1, 1, 1, 3},  {2, 5, 7, 3}, {3, 16, 17, 1}, {2, 4, 9, 4},
                               {2, 3, 11, 2}, {4, 8, 1, 3}, {2, 33, 65, 3}};
  // Forced flips 0 and 1, then the mixed flips of random_augmentation. max_delta 0.6 makes both
  // clamps frequent.
  for (const ImageShape& shape : shapes) {
    const auto in = random_bytes(shape.pixels(), 13, shape.pixels());
    for (int mode : {0, 1, 2}) {
      Augmentation aug = random_augmentation(shape.n, 21 + shape.pixels(), 0.6f);
      if (mode < 2) aug.flip.assign(shape.n, static_cast<std::uint8_t>(mode));
      std::vector<double> ref(shape.pixels());
      image_reference(in.data(), shape, aug.delta.data(), aug.flip.data(), ref.data());
      for (const auto& [name, fn] : variants) {
        std::vector<float> got(shape.pixels(), kNaN);
        fn(in.data(), shape, aug.delta.data(), aug.flip.data(), got.data());
        const Validation v = validate(name, got, ref, {kImageAtol, kImageRtol});
        EXPECT_TRUE(v.ok) << shape_name(shape) << " flip mode " << mode << ": " << v.message();
      }
    }
  }
}

TEST(Preprocess, ImageFlipMirrorsPixelsNotChannels) {
  // 1 x 1 x 3 x 2 image, zero delta: flipped output pixels come in reverse, channels in order.
  const std::vector<std::uint8_t> in = {10, 20, 30, 40, 50, 60};
  const ImageShape shape{1, 1, 3, 2};
  const float delta = 0.0f;
  const std::uint8_t flip = 1;
  const std::vector<std::uint8_t> mirrored = {50, 60, 30, 40, 10, 20};
  for (ImageVariant fn : {&image_elementwise, &image_vectorized}) {
    std::vector<float> got(6, kNaN);
    fn(in.data(), shape, &delta, &flip, got.data());
    for (std::size_t k = 0; k < 6; ++k) {
      EXPECT_NEAR(got[k], mirrored[k] / 255.0, 1e-6) << k;
    }
  }
}

// ---- augmentation and tolerances ----

TEST(Preprocess, RandomAugmentationIsDeterministic) {
  const Augmentation a = random_augmentation(64, 42);
  const Augmentation b = random_augmentation(64, 42);
  EXPECT_EQ(a.delta, b.delta);
  EXPECT_EQ(a.flip, b.flip);
  const Augmentation other = random_augmentation(64, 43);
  EXPECT_NE(a.delta, other.delta);
}

TEST(Preprocess, RandomAugmentationRangesAndBothFlips) {
  for (float max_delta : {0.25f, 0.1f}) {
    const Augmentation a = random_augmentation(64, 42, max_delta);
    ASSERT_EQ(a.delta.size(), 64u);
    ASSERT_EQ(a.flip.size(), 64u);
    std::size_t flipped = 0, positive = 0;
    for (std::size_t i = 0; i < 64; ++i) {
      EXPECT_GE(a.delta[i], -max_delta) << i;
      EXPECT_LE(a.delta[i], max_delta) << i;
      EXPECT_TRUE(a.flip[i] == 0 || a.flip[i] == 1) << i;
      flipped += a.flip[i];
      positive += a.delta[i] > 0.0f;
    }
    EXPECT_GT(flipped, 0u);
    EXPECT_LT(flipped, 64u);
    // Deltas spread over both signs, not constant.
    EXPECT_GT(positive, 0u);
    EXPECT_LT(positive, 64u);
  }
}

TEST(Preprocess, SumsqRtol) {
  EXPECT_EQ(sumsq_rtol(1), 1e-5);
  EXPECT_EQ(sumsq_rtol(100), 1e-5);
  EXPECT_EQ(sumsq_rtol(std::size_t{1} << 20), 0x1p-4);
}

}  // namespace
}  // namespace gapbench::preprocess
