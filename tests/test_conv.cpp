#include "kernels/conv.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/base/data.h"
#include "kernels/base/validate.h"
#include "kernels/conv_onednn.h"
#include "kernels/onednn_isa.h"
#include "tests/conv_cases.h"
#include "tests/narrow.h"

namespace gapbench::conv {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

using cases::kSeed;
using cases::kSmallShapes;

// ---- shape ----

TEST(Conv, OutputSizeAndFlops) {
  const ConvShape tiny{1, 1, 28, 28, 1, 3, 3, 1, 0};
  EXPECT_EQ(tiny.p(), 26u);
  EXPECT_EQ(tiny.q(), 26u);
  EXPECT_EQ(tiny.flops(), 2.0 * 26 * 26 * 9);
  const ConvShape stem{32, 3, 224, 224, 64, 7, 7, 2, 3};
  EXPECT_EQ(stem.p(), 112u);
  EXPECT_EQ(stem.q(), 112u);
  const ConvShape odd{1, 1, 9, 10, 1, 3, 2, 2, 1};  // (9+2-3)/2+1, (10+2-2)/2+1
  EXPECT_EQ(odd.p(), 5u);
  EXPECT_EQ(odd.q(), 6u);
  EXPECT_EQ(odd.reduction(), 6u);
}

TEST(Conv, ValidShapesPassTheCheck) {
  for (const ConvShape& s : kSmallShapes) EXPECT_NO_THROW(check_shape(s)) << s.str();
}

// One clear message per impossible shape, naming the shape and the reason.
void expect_rejected(const ConvShape& s, const std::string& reason) {
  try {
    check_shape(s);
    ADD_FAILURE() << "accepted " << s.str();
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("impossible convolution (" + s.str() + ")"), std::string::npos) << what;
    EXPECT_NE(what.find(reason), std::string::npos) << what;
  }
}

TEST(Conv, ImpossibleShapesRejectedWithTheReason) {
  const ConvShape ok{2, 3, 8, 8, 4, 3, 3, 1, 1};
  for (std::size_t ConvShape::*dim : {&ConvShape::n, &ConvShape::c, &ConvShape::h, &ConvShape::w,
                                      &ConvShape::k, &ConvShape::r, &ConvShape::s}) {
    ConvShape s = ok;
    s.*dim = 0;
    expect_rejected(s, "every dimension must be at least 1");
  }
  ConvShape s = ok;
  s.stride = 0;
  expect_rejected(s, "stride must be at least 1");
  s = ok;
  s.pad = 3;  // a 3x3 filter padded by 3: the first output row sees only padding
  expect_rejected(s, "padding 3 is not smaller than the 3x3 filter");
  expect_rejected({1, 1, 8, 8, 1, 1, 1, 1, 1}, "padding 1 is not smaller than the 1x1 filter");
  expect_rejected({1, 1, 2, 9, 1, 5, 3, 1, 1}, "filter is larger than the padded 2x9 input");
  expect_rejected({1, 1, 9, 2, 1, 3, 5, 1, 1}, "filter is larger than the padded 9x2 input");
  expect_rejected({1, 1, 3, 3, 1, 5, 5, 1, 0}, "no output");
  expect_rejected({1u << 16, 1, 1u << 8, 1u << 7, 1, 1, 1, 1, 0}, "the input has 2^31");
  expect_rejected({1, 1u << 11, 32, 32, 1u << 11, 32, 32, 1, 0}, "the filter has 2^31");
  expect_rejected({1, 1, 1u << 16, 1u << 16, 1, 1, 1, 1, 0}, "the input has 2^31");
  // Sizes whose products overflow 64 bits are still one clear message.
  const std::size_t huge = std::size_t{1} << 40;
  expect_rejected({huge, huge, huge, huge, 1, 1, 1, 1, 0}, "2^31 elements or more");
  expect_rejected({1, 1, 4, 4, 1, 3, 3, 1, std::numeric_limits<std::size_t>::max()},
                  "not smaller than");
}

// ---- reference ----

TEST(Conv, ReferenceHandComputed) {
  // x = 1..9 as a 3x3 image, w = 1..4 as a 2x2 filter.
  const std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  const std::vector<float> w = {1, 2, 3, 4};
  std::vector<double> y(4, -1.0);
  reference({1, 1, 3, 3, 1, 2, 2, 1, 0}, x.data(), w.data(), y.data());
  EXPECT_EQ(y, (std::vector<double>{37, 47, 67, 77}));
  // Padding 1, stride 2: windows start at (-1,-1), (-1,1), (1,-1), (1,1).
  reference({1, 1, 3, 3, 1, 2, 2, 2, 1}, x.data(), w.data(), y.data());
  EXPECT_EQ(y, (std::vector<double>{1 * 4, 2 * 3 + 3 * 4, 4 * 2 + 7 * 4, 77}));
}

TEST(Conv, ReferenceSumsChannelsPerFilter) {
  // Two channels (all ones, all twos) of 2x2, two 1x1 filters: (1, 10) and (-1, 0.5).
  const std::vector<float> x = {1, 1, 1, 1, 2, 2, 2, 2};
  const std::vector<float> w = {1, 10, -1, 0.5f};
  std::vector<double> y(8, -1.0);
  reference({1, 2, 2, 2, 2, 1, 1, 1, 0}, x.data(), w.data(), y.data());
  EXPECT_EQ(y, (std::vector<double>{21, 21, 21, 21, 0, 0, 0, 0}));
}

TEST(Conv, MagnitudeBoundCoversEveryElement) {
  for (const ConvShape& s : kSmallShapes) {
    const Problem c(s, kSeed);
    // sum |x·w| per element, computed as the reference of |x| and |w|.
    std::vector<float> ax(c.x), aw(c.w);
    for (float& v : ax) v = std::fabs(v);
    for (float& v : aw) v = std::fabs(v);
    std::vector<double> abs_sum(s.output_size());
    reference(s, ax.data(), aw.data(), abs_sum.data());
    double largest = 0.0;
    for (double v : abs_sum) largest = std::max(largest, v);
    EXPECT_GE(c.magnitude, largest) << s.str();
    EXPECT_LE(c.magnitude, 10.0 * largest) << s.str() << ": bound far too loose";
  }
}

TEST(Conv, ToleranceFollowsTheArithmetic) {
  const ConvShape s{1, 64, 8, 8, 1, 3, 3, 1, 1};  // 576 terms
  const double u = 0x1.0p-24;
  const Tolerance f32 = tolerance(s, 100.0, Arithmetic::float32);
  EXPECT_NEAR(f32.atol, 576 * u * 100.0, 1e-3 * f32.atol);  // γ_L ≈ L·u
  EXPECT_EQ(f32.rtol, 0.0);
  const Tolerance tf32 = tolerance(s, 100.0, Arithmetic::tf32);
  // Two inputs read to 2^-10 each, then the float32 sum.
  EXPECT_NEAR(tf32.atol, (2 * 0x1.0p-10 + 576 * u) * 100.0, 1e-2 * tf32.atol);
  EXPECT_GT(tf32.atol, 10 * f32.atol);
  const Tolerance bf16 = tolerance(s, 100.0, Arithmetic::bf16);
  // Two inputs rounded to 2^-8 each, then the float32 sum.
  EXPECT_NEAR(bf16.atol, (2 * 0x1.0p-8 + 576 * u) * 100.0, 1e-2 * bf16.atol);
  EXPECT_GT(bf16.atol, 3 * tf32.atol);
  EXPECT_STREQ(math_name(Arithmetic::bf16), "bf16");
  EXPECT_STREQ(math_name(Arithmetic::float32), "fp32");
}

// float32 to the nearest bfloat16 (ties to even), kept as a float.
float round_bf16(float f) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &f, sizeof bits);
  bits += 0x7FFFu + ((bits >> 16) & 1u);
  bits &= 0xFFFF0000u;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
std::vector<float> rounded_bf16(const std::vector<float>& v) {
  std::vector<float> out(v.size());
  std::transform(v.begin(), v.end(), out.begin(), round_bf16);
  return out;
}

// The bf16 tolerance admits what bf16 inputs with float32 sums give (which the float32 one
// does not), and still catches a half-scaled output and a dropped half of the channels.
TEST(Conv, Bf16ToleranceAdmitsRoundedInputsAndCatchesRealErrors) {
  for (const ConvShape& s :
       {ConvShape{2, 16, 9, 9, 4, 3, 3, 1, 1}, ConvShape{1, 64, 10, 10, 8, 3, 3, 1, 1}}) {
    const Problem c(s, kSeed);
    std::vector<float> got(s.output_size());
    naive(s, rounded_bf16(c.x).data(), rounded_bf16(c.w).data(), got.data());
    const Validation ok = c.check("bf16 inputs", got, Arithmetic::bf16);
    EXPECT_TRUE(ok.ok) << s.str() << ": " << ok.message();
    EXPECT_FALSE(c.check("bf16 inputs", got, Arithmetic::float32).ok) << s.str();

    std::vector<float> half = got;
    for (float& v : half) v *= 0.5f;
    EXPECT_FALSE(c.check("half-scaled", half, Arithmetic::bf16).ok) << s.str();

    ConvShape fewer = s;  // the first half of the channels only: a dropped K-slice of the sum
    fewer.c = s.c / 2;
    std::vector<float> x_half, w_half;
    for (std::size_t n = 0; n < s.n; ++n) {
      const auto image = c.x.begin() + static_cast<std::ptrdiff_t>(n * s.c * s.h * s.w);
      x_half.insert(x_half.end(), image, image + static_cast<std::ptrdiff_t>(fewer.c * s.h * s.w));
    }
    for (std::size_t k = 0; k < s.k; ++k) {
      const auto filter = c.w.begin() + static_cast<std::ptrdiff_t>(k * s.c * s.r * s.s);
      w_half.insert(w_half.end(), filter,
                    filter + static_cast<std::ptrdiff_t>(fewer.c * s.r * s.s));
    }
    naive(fewer, x_half.data(), w_half.data(), got.data());
    EXPECT_FALSE(c.check("half the channels", got, Arithmetic::bf16).ok) << s.str();
  }
}

// The float32 tolerance is tight enough to catch the smallest plausible bugs.
TEST(Conv, ToleranceCatchesDroppedTapAndShift) {
  for (const ConvShape& s :
       {ConvShape{2, 3, 7, 9, 4, 3, 3, 1, 1}, ConvShape{1, 64, 10, 10, 4, 3, 3, 1, 1}}) {
    const Problem c(s, kSeed);
    std::vector<float> got(s.output_size());
    // One filter tap zeroed: every output of that filter misses one product.
    std::vector<float> w = c.w;
    w[4] = 0.0f;
    naive(s, c.x.data(), w.data(), got.data());
    EXPECT_FALSE(c.check("dropped tap", got).ok) << s.str();
    // Input shifted by one column.
    std::vector<float> x(c.x.size());
    for (std::size_t i = 1; i < x.size(); ++i) x[i] = c.x[i - 1];
    naive(s, x.data(), c.w.data(), got.data());
    EXPECT_FALSE(c.check("shifted", got).ok) << s.str();
  }
}

// ---- CPU variants ----

TEST(Conv, NaiveMatchesReference) {
  for (const ConvShape& s : kSmallShapes) {
    const Problem c(s, kSeed);
    std::vector<float> got(s.output_size(), kNaN);
    naive(s, c.x.data(), c.w.data(), got.data());
    const Validation v = c.check("naive", got);
    EXPECT_TRUE(v.ok) << s.str() << ": " << v.message();
  }
}

TEST(Conv, Im2colHandComputed) {
  const std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8, 9};  // 3x3, one channel
  const ConvShape s{1, 1, 3, 3, 1, 2, 2, 1, 0};
  ASSERT_EQ(im2col_scratch_size(s), 16u);
  std::vector<float> cols(16, kNaN);
  im2col(s, x.data(), cols.data());
  // Row (r, s) lists the input under tap (r, s) for outputs (0,0) (0,1) (1,0) (1,1).
  EXPECT_EQ(cols, (std::vector<float>{1, 2, 4, 5, 2, 3, 5, 6, 4, 5, 7, 8, 5, 6, 8, 9}));
  // Padding 1, stride 2: taps outside the image are zeros.
  const ConvShape padded{1, 1, 3, 3, 1, 2, 2, 2, 1};
  im2col(padded, x.data(), cols.data());
  EXPECT_EQ(cols, (std::vector<float>{0, 0, 0, 5, 0, 0, 4, 6, 0, 2, 0, 8, 1, 3, 7, 9}));
}

TEST(Conv, Im2colScratchOnlyWhenTheImageIsNotTheMatrix) {
  EXPECT_EQ(im2col_scratch_size({2, 8, 5, 5, 4, 1, 1, 1, 0}), 0u);
  EXPECT_EQ(im2col_scratch_size({2, 8, 5, 5, 4, 1, 1, 2, 0}), 8u * 3 * 3);
  EXPECT_EQ(im2col_scratch_size({2, 8, 5, 5, 4, 3, 3, 1, 1}), 8u * 9 * 25);
}

TEST(Conv, Im2colBlasMatchesReference) {
  for (const ConvShape& s : kSmallShapes) {
    const Problem c(s, kSeed);
    std::vector<float> scratch(im2col_scratch_size(s), kNaN);
    std::vector<float> got(s.output_size(), kNaN);
    im2col_blas(s, c.x.data(), c.w.data(), got.data(), scratch.data());
    const Validation v = c.check("im2col_blas", got);
    EXPECT_TRUE(v.ok) << s.str() << ": " << v.message();
  }
}

// The caller's NCHW in and out, the primitive's layout in between.
std::vector<float> onednn_conv(OnednnConvolution& dnn, const ConvShape& s, const float* x) {
  std::vector<float> y(s.output_size(), kNaN);
  dnn.load_input(x);
  dnn.forward();
  dnn.read_output(y.data());
  return y;
}

TEST(Conv, OnednnMatchesReference) {
  for (const ConvShape& s : kSmallShapes) {
    const Problem c(s, kSeed);
    OnednnConvolution dnn(s, c.w.data());
    EXPECT_GE(dnn.setup_seconds(), 0.0);
    EXPECT_FALSE(dnn.description().empty());
    const Validation v = c.check("onednn", onednn_conv(dnn, s, c.x.data()));
    EXPECT_TRUE(v.ok) << s.str() << " (" << dnn.description() << "): " << v.message();
    // A second input: the primitive is reusable, the filter kept, the new input loaded.
    const Problem other(s, 77);
    const std::vector<float> got = onednn_conv(dnn, s, other.x.data());
    std::vector<double> ref(s.output_size());
    reference(s, other.x.data(), c.w.data(), ref.data());
    const Validation again =
        validate("onednn again", got, ref,
                 tolerance(s, magnitude_bound(s, other.x.data(), c.w.data()), Arithmetic::float32));
    EXPECT_TRUE(again.ok) << s.str() << ": " << again.message();
  }
}

// forward() runs only the primitive: the output changes only when forward() runs again.
TEST(Conv, OnednnForwardComputesTheLoadedInputOnly) {
  const ConvShape s{2, 3, 6, 6, 4, 3, 3, 1, 1};
  const Problem c(s, kSeed), other(s, 77);
  OnednnConvolution dnn(s, c.w.data());
  const std::vector<float> first = onednn_conv(dnn, s, c.x.data());
  dnn.load_input(other.x.data());
  std::vector<float> stale(s.output_size(), kNaN);
  dnn.read_output(stale.data());
  EXPECT_EQ(stale, first);  // loaded, not yet computed
  dnn.forward();
  std::vector<float> fresh(s.output_size(), kNaN);
  dnn.read_output(fresh.data());
  EXPECT_TRUE(c.check("onednn", first).ok);
  EXPECT_NE(fresh, first);
}

// The layout it runs in is the one named in the label.
TEST(Conv, OnednnNamesItsLayout) {
  const ConvShape s{2, 16, 8, 8, 16, 3, 3, 1, 1};
  const Problem c(s, kSeed);
  const std::string d = OnednnConvolution(s, c.w.data()).description();
  const bool named = d.find("NHWC") != std::string::npos || d.find("NCHW") != std::string::npos ||
                     d.find("nChw") != std::string::npos || d.find("blocked") != std::string::npos;
  EXPECT_TRUE(named) << d;
}

TEST(Conv, OnednnRunsOnlyInOrder) {
  const ConvShape s{1, 2, 6, 6, 2, 3, 3, 1, 1};
  const Problem c(s, kSeed);
  OnednnConvolution dnn(s, c.w.data());
  std::vector<float> y(s.output_size());
  EXPECT_THROW(dnn.forward(), std::logic_error);
  dnn.load_input(c.x.data());
  EXPECT_THROW(dnn.read_output(y.data()), std::logic_error);
  dnn.forward();
  EXPECT_NO_THROW(dnn.read_output(y.data()));
}

// float16 inputs and a float16 output (cuDNN's fp16 NHWC variant) stay inside the fp16
// tolerance with the output's rounding added; a half-scaled output does not.
TEST(Conv, Fp16ToleranceCoversRoundedInputsAndOutput) {
  const auto fp16 = [](float v) { return narrowed(v, Arithmetic::fp16); };
  const ConvShape s{2, 64, 10, 10, 8, 3, 3, 1, 1};
  const Problem c(s, kSeed);
  std::vector<float> x(c.x.size()), w(c.w.size()), got(s.output_size());
  std::transform(c.x.begin(), c.x.end(), x.begin(), fp16);
  std::transform(c.w.begin(), c.w.end(), w.begin(), fp16);
  naive(s, x.data(), w.data(), got.data());
  for (float& v : got) v = fp16(v);
  const Validation ok = c.check("fp16", got, Arithmetic::fp16, kFp16Roundoff);
  EXPECT_TRUE(ok.ok) << ok.message();
  for (float& v : got) v *= 0.5f;
  EXPECT_FALSE(c.check("fp16 half-scaled", got, Arithmetic::fp16, kFp16Roundoff).ok);
}

// Skips where this CPU has no bf16 instructions: oneDNN would emulate or refuse them.
TEST(Conv, OnednnBf16MatchesReferenceWithTheBf16Tolerance) {
  if (const auto reason = onednn_arithmetic_unavailable_reason(Arithmetic::bf16))
    GTEST_SKIP() << *reason;
  for (const ConvShape& s : kSmallShapes) {
    const Problem c(s, kSeed);
    OnednnConvolution dnn(s, c.w.data(), Arithmetic::bf16);
    EXPECT_NE(dnn.description().find("math:bf16"), std::string::npos) << dnn.description();
    const Validation v = c.check("onednn bf16", onednn_conv(dnn, s, c.x.data()), Arithmetic::bf16);
    EXPECT_TRUE(v.ok) << s.str() << " (" << dnn.description() << "): " << v.message();
  }
}

// A 1 x 1 convolution with a filter of one returns its input as the primitive holds it: a bf16
// convolution rounds its float32 input to nearest even, as round_bf16 does.
TEST(Conv, OnednnBf16RoundsItsInputToNearestEven) {
  if (const auto reason = onednn_arithmetic_unavailable_reason(Arithmetic::bf16))
    GTEST_SKIP() << *reason;
  const std::vector<float> x{1.0f, 1.00390625f, 1.01171875f, -3.14159f, 0.0f, 1e-3f};
  const ConvShape s{1, 1, 1, x.size(), 1, 1, 1, 1, 0};
  const float one = 1.0f;
  OnednnConvolution dnn(s, &one, Arithmetic::bf16);
  const std::vector<float> got = onednn_conv(dnn, s, x.data());
  for (std::size_t i = 0; i < x.size(); ++i) EXPECT_EQ(got[i], round_bf16(x[i])) << x[i];
  EXPECT_NE(round_bf16(x[1]), x[1]);  // the case is one that rounds
}

TEST(Conv, OnednnHasOnlyFloat32AndBf16) {
  const ConvShape s{1, 2, 6, 6, 2, 3, 3, 1, 1};
  const Problem c(s, kSeed);
  EXPECT_THROW(OnednnConvolution(s, c.w.data(), Arithmetic::tf32), std::invalid_argument);
  EXPECT_THROW(OnednnConvolution(s, c.w.data(), Arithmetic::fp16), std::invalid_argument);
}

TEST(Conv, OnednnRejectsImpossibleShapeBeforeAllocating) {
  // Sizes no allocation could satisfy: the check must come first.
  const std::size_t huge = std::size_t{1} << 40;
  const std::vector<float> w(9, 1.0f);
  EXPECT_THROW(OnednnConvolution({huge, 1, 28, 28, 1, 3, 3, 1, 0}, w.data()),
               std::invalid_argument);
  EXPECT_THROW(OnednnConvolution({1, 1, 2, 2, 1, 3, 3, 1, 0}, w.data()), std::invalid_argument);
}

// ---- the tiled GPU kernel's plan (host arithmetic) ----

std::size_t ceil_div(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

TEST(Conv, TiledPlanCoversTheOutputWithinSharedMemory) {
  std::vector<ConvShape> shapes(std::begin(kSmallShapes), std::end(kSmallShapes));
  // The family's shapes.
  shapes.push_back({1, 1, 28, 28, 1, 3, 3, 1, 0});
  shapes.push_back({32, 3, 224, 224, 64, 7, 7, 2, 3});
  shapes.push_back({32, 64, 56, 56, 64, 3, 3, 1, 1});
  shapes.push_back({8, 64, 112, 112, 128, 3, 3, 1, 1});
  shapes.push_back({32, 256, 14, 14, 256, 3, 3, 1, 1});
  shapes.push_back({32, 256, 56, 56, 64, 1, 1, 1, 0});
  shapes.push_back({1, 3, 40, 40, 2, 11, 11, 1, 5});
  for (const ConvShape& s : shapes) {
    const TiledPlan plan = tiled_plan(s);
    SCOPED_TRACE(s.str());
    EXPECT_TRUE(plan.threads_q == 8 || plan.threads_q == 4);
    EXPECT_EQ(plan.tile_q, plan.threads_q * kTiledThreadQ);
    EXPECT_EQ(plan.tile_p * plan.tile_q * kTiledTileK,
              kTiledThreads * kTiledThreadK * kTiledThreadQ)
        << "one block's outputs are its threads' outputs";
    EXPECT_LE(plan.shared_bytes, kTiledSharedLimit);
    EXPECT_GE(plan.chunk, 1);
    EXPECT_LE(static_cast<std::size_t>(plan.chunk), std::min<std::size_t>(s.c, kTiledMaxChunk));
    EXPECT_EQ(plan.in_rows, (plan.tile_p - 1) * static_cast<int>(s.stride) + static_cast<int>(s.r));
    EXPECT_EQ(plan.in_cols, (plan.tile_q - 1) * static_cast<int>(s.stride) + static_cast<int>(s.s));
    EXPECT_GE(plan.in_pitch, plan.in_cols);
    EXPECT_EQ(plan.tiles_p, ceil_div(s.p(), plan.tile_p));
    EXPECT_EQ(plan.tiles_q, ceil_div(s.q(), plan.tile_q));
    EXPECT_EQ(plan.tiles_k, ceil_div(s.k, kTiledTileK));
    EXPECT_EQ(plan.blocks, plan.tiles_p * plan.tiles_q * plan.tiles_k * s.n);
    // Stride 1 reads are conflict-free; stride 2 spreads over the 16 even banks at best.
    const int conflicts =
        tiled_bank_conflicts(plan.in_pitch, plan.threads_q, static_cast<int>(s.stride));
    if (s.stride == 1) {
      EXPECT_EQ(conflicts, 1);
    } else if (s.stride == 2) {
      EXPECT_EQ(conflicts, 2);
    }
  }
}

TEST(Conv, TiledPlanPicksTheTileThatWastesLeast) {
  EXPECT_EQ(tiled_plan({32, 64, 56, 56, 64, 3, 3, 1, 1}).threads_q, 8);    // 8x32: 56 -> 64 cols
  EXPECT_EQ(tiled_plan({32, 256, 14, 14, 256, 3, 3, 1, 1}).threads_q, 4);  // 16x16 over 14x14
  EXPECT_EQ(tiled_plan({8, 64, 112, 112, 128, 3, 3, 1, 1}).threads_q, 4);  // 16x16 divides 112
}

TEST(Conv, TiledPitchAvoidsBankConflicts) {
  // A 34-float row (8x32 tile, 3x3 filter) puts lanes of neighbouring rows on the same banks.
  EXPECT_GT(tiled_bank_conflicts(34, 8, 1), 1);
  const int pitch = tiled_pitch(34, 8, 1);
  EXPECT_GE(pitch, 34);
  EXPECT_LT(pitch, 34 + 32);
  EXPECT_EQ(tiled_bank_conflicts(pitch, 8, 1), 1);
  EXPECT_EQ(tiled_bank_conflicts(tiled_pitch(18, 4, 1), 4, 1), 1);
}

TEST(Conv, TiledPlanRejectsFiltersTooLargeToStage) {
  try {
    tiled_plan({1, 1, 40, 40, 1, 21, 21, 1, 0});
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("shared memory"), std::string::npos) << e.what();
  }
  EXPECT_THROW(tiled_plan({1, 1, 2, 2, 1, 3, 3, 1, 0}), std::invalid_argument);  // no output
}

}  // namespace
}  // namespace gapbench::conv
