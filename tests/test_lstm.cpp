// kernels/lstm.{h,cpp} and kernels/lstm_onednn.{h,cpp}: the reference against hand-computed
// values, the weight-shape check, the tolerance's power to catch real mistakes, and every CPU
// variant (blas sequence and step, oneDNN sequence and one-step run) against the reference.
#include "kernels/lstm.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/lstm.h"
#include "kernels/lstm_onednn.h"
#include "kernels/onednn_isa.h"
#include "tests/narrow.h"

namespace gapbench::lstm {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// batch 1, hidden not a multiple of 32 (37, 33), one time step, input 1, input > hidden.
const Shape kShapes[] = {{1, 3, 5, 2},   {1, 7, 37, 1},   {3, 16, 37, 5}, {2, 5, 33, 1},
                         {5, 37, 37, 3}, {4, 50, 64, 10}, {1, 1, 1, 4},   {6, 70, 9, 7}};

std::string name(const Shape& s) { return s.key(); }

Reference full_reference(const Problem& p) {
  return reference(p.shape, p.weights, p.x.data(), p.h0.data(), p.c0.data(),
                   sample_rows(p.shape.batch, p.shape.batch));
}

double sigmoid(double z) { return 1.0 / (1.0 + std::exp(-z)); }

// ---- the reference ----

TEST(Lstm, ReferenceWithZeroWeightsHalvesTheCell) {
  // All pre-activations 0: i = f = o = 1/2, g = 0, so c_t = c_{t-1}/2, h_t = tanh(c_t)/2.
  const Shape s{1, 2, 3, 2};
  const Weights w{std::vector<float>(s.weight_size(), 0.0f), std::vector<float>(s.gates(), 0.0f)};
  const std::vector<float> x(s.x_size(), 0.7f), h0 = {0.1f, -0.2f, 0.3f}, c0 = {1.0f, -2.0f, 0.5f};
  const Reference ref = reference(s, w, x.data(), h0.data(), c0.data(), {0});
  for (std::size_t j = 0; j < 3; ++j) {
    EXPECT_NEAR(ref.c[j], c0[j] / 2.0, 1e-15);
    EXPECT_NEAR(ref.h[j], std::tanh(c0[j] / 2.0) / 2.0, 1e-15);
    EXPECT_NEAR(ref.c[3 + j], c0[j] / 4.0, 1e-15);
    EXPECT_NEAR(ref.h[3 + j], std::tanh(c0[j] / 4.0) / 2.0, 1e-15);
  }
}

TEST(Lstm, ReferenceHandComputedOneUnit) {
  // input 1, hidden 1: W rows (x, h), columns (i, f, g, o).
  const Shape s{1, 1, 1, 2};
  const Weights w{{0.5f, -1.0f, 2.0f, 0.25f, 1.5f, 0.75f, -0.5f, 1.0f}, {0.1f, 0.2f, -0.3f, 0.4f}};
  const std::vector<float> x = {1.0f, -2.0f}, h0 = {0.5f}, c0 = {-1.0f};
  const Reference ref = reference(s, w, x.data(), h0.data(), c0.data(), {0});
  // The same by hand, with the float32 weights' exact values.
  const auto f32 = [](float v) { return static_cast<double>(v); };
  double h = 0.5, c = -1.0;
  for (double xt : {1.0, -2.0}) {
    const double i = sigmoid(f32(0.5f) * xt + f32(1.5f) * h + f32(0.1f));
    const double f = sigmoid(f32(-1.0f) * xt + f32(0.75f) * h + f32(0.2f));
    const double g = std::tanh(f32(2.0f) * xt + f32(-0.5f) * h + f32(-0.3f));
    const double o = sigmoid(f32(0.25f) * xt + f32(1.0f) * h + f32(0.4f));
    c = f * c + i * g;
    h = o * std::tanh(c);
  }
  EXPECT_NEAR(ref.h[1], h, 1e-12);
  EXPECT_NEAR(ref.c[1], c, 1e-12);
  // Magnitude: the largest |b| + Σ|terms| over both steps.
  EXPECT_GT(ref.magnitude, 0.0);
}

TEST(Lstm, SampleRowsTakesFirstLastAndDistinctRows) {
  EXPECT_EQ(sample_rows(3, 8), (std::vector<std::size_t>{0, 1, 2}));
  const auto rows = sample_rows(64, 8);
  ASSERT_EQ(rows.size(), 8u);
  EXPECT_EQ(rows.front(), 0u);
  EXPECT_EQ(rows.back(), 63u);
  for (std::size_t k = 1; k < rows.size(); ++k) EXPECT_LT(rows[k - 1], rows[k]);
  EXPECT_EQ(sample_rows(5, 1), (std::vector<std::size_t>{0}));
}

// ---- bad input ----

TEST(Lstm, MismatchedWeightsRejectedWithOneClearMessage) {
  const Shape s{4, 50, 64, 10};
  Problem p(s, 1);
  p.weights.w.resize(50 * 4 * 64);  // W for x only: the recurrent rows are missing
  try {
    BlasLstm lstm(s, p.weights);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              "lstm: W has 12800 floats, but input 50 + hidden 64 by 4 x hidden 64 needs 29184");
  }
  EXPECT_THROW(OnednnLstm(s, p.weights), std::invalid_argument);
  EXPECT_THROW(reference(s, p.weights, p.x.data(), p.h0.data(), p.c0.data(), {0}),
               std::invalid_argument);

  Problem q(s, 1);
  q.weights.b.resize(64);  // one gate's bias instead of four
  try {
    check_weights(s, q.weights);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "lstm: b has 64 floats, but 4 x hidden 64 needs 256");
  }
  EXPECT_THROW(OnednnLstm(s, q.weights), std::invalid_argument);
}

TEST(Lstm, ZeroSizedShapeRejected) {
  EXPECT_THROW(check_shape({0, 3, 4, 5}), std::invalid_argument);
  EXPECT_THROW(check_shape({2, 3, 4, 0}), std::invalid_argument);
  EXPECT_NO_THROW(check_shape({1, 1, 1, 1}));
}

// ---- the tolerance: loose enough for float32, tight enough to catch mistakes ----

// The blas result of `p`, checked against `ref`.
Validation blas_sequence(const Problem& p, const Reference& ref) {
  BlasLstm lstm(p.shape, p.weights);
  std::vector<float> h(p.shape.h_seq_size(), kNaN), c(p.shape.state_size(), kNaN);
  lstm.sequence(p.x.data(), p.h0.data(), p.c0.data(), h.data(), c.data());
  return check_sequence("blas", p.shape, ref, h.data(), c.data());
}

TEST(Lstm, ToleranceCatchesWrongGatesBiasAndState) {
  for (const Shape& s : {Shape{4, 50, 64, 10}, Shape{2, 512, 512, 3}}) {
    const Problem p(s, 3);
    const Reference ref = full_reference(p);
    ASSERT_TRUE(blas_sequence(p, ref).ok) << name(s);

    Problem swapped = p;  // forget and output gates exchanged (a wrong gate order)
    for (std::size_t k = 0; k < s.weight_rows(); ++k)
      for (std::size_t j = 0; j < s.hidden; ++j)
        std::swap(swapped.weights.w[k * s.gates() + s.hidden + j],
                  swapped.weights.w[k * s.gates() + 3 * s.hidden + j]);
    EXPECT_FALSE(blas_sequence(swapped, ref).ok) << name(s);

    Problem unbiased = p;  // the bias left out
    std::fill(unbiased.weights.b.begin(), unbiased.weights.b.end(), 0.0f);
    EXPECT_FALSE(blas_sequence(unbiased, ref).ok) << name(s);

    Problem nudged = p;  // one bias element off by 0.01 (about a third of its size)
    nudged.weights.b[s.hidden + 5] += 0.01f;
    EXPECT_FALSE(blas_sequence(nudged, ref).ok) << name(s);

    Problem stale = p;  // the initial cell state ignored
    std::fill(stale.c0.begin(), stale.c0.end(), 0.0f);
    EXPECT_FALSE(blas_sequence(stale, ref).ok) << name(s);
  }
}

TEST(Lstm, ToleranceHasRoomAboveFloat32Error) {
  // The worst element of a correct float32 run uses well under the tolerance: the bound is not
  // so tight that a different summation order (another BLAS, another thread count) fails.
  for (const Shape& s : {Shape{4, 50, 64, 10}, Shape{64, 50, 64, 100}, Shape{2, 512, 512, 25}}) {
    const Problem p(s, 5);
    const Reference ref = reference(p.shape, p.weights, p.x.data(), p.h0.data(), p.c0.data(),
                                    sample_rows(s.batch, 4));
    const Validation v = blas_sequence(p, ref);
    EXPECT_TRUE(v.ok) << v.message();
    EXPECT_LT(v.worst_excess, 0.05) << name(s) << ": " << v.message();
  }
}

// ---- the pointwise update ----

TEST(Lstm, PointwiseMatchesFloat64GatesOverWideRange) {
  // Pre-activations from -30 to 30 (saturated gates included), |c_prev| up to 10.
  const Shape s{3, 1, 41, 1};
  const std::size_t G = s.gates(), H = s.hidden;
  std::vector<float> gates(s.batch * G), xproj(s.batch * G), b(G), c_prev(s.state_size());
  for (std::size_t k = 0; k < gates.size(); ++k) {
    gates[k] = -30.0f + 60.0f * static_cast<float>(k) / static_cast<float>(gates.size());
    xproj[k] = 0.001f * static_cast<float>(k % 7);
  }
  for (std::size_t k = 0; k < G; ++k) b[k] = 0.01f * static_cast<float>(k % 5);
  for (std::size_t k = 0; k < c_prev.size(); ++k) c_prev[k] = 10.0f * std::sin(float(k));
  std::vector<float> h(s.state_size(), kNaN), c(s.state_size(), kNaN);
  pointwise(s, gates.data(), xproj.data(), b.data(), c_prev.data(), h.data(), c.data());
  std::vector<double> h_ref(h.size()), c_ref(c.size());
  for (std::size_t n = 0; n < s.batch; ++n) {
    for (std::size_t j = 0; j < H; ++j) {
      auto z = [&](std::size_t gate) {
        const std::size_t k = n * G + gate * H + j;
        return static_cast<double>(static_cast<float>(gates[k] + xproj[k]) + b[gate * H + j]);
      };
      const double cj = sigmoid(z(1)) * c_prev[n * H + j] + sigmoid(z(0)) * std::tanh(z(2));
      c_ref[n * H + j] = cj;
      h_ref[n * H + j] = sigmoid(z(3)) * std::tanh(cj);
    }
  }
  // A few ulp of the values involved (|c| <= 11, h in (-1, 1)).
  EXPECT_TRUE(validate("h", h, h_ref, {8 * kFloat32Roundoff, 0.0}).ok);
  const Validation vc = validate("c", c, c_ref, {8 * kFloat32Roundoff, 8 * kFloat32Roundoff});
  EXPECT_TRUE(vc.ok) << vc.message();
}

TEST(Lstm, PointwiseSaturatesWithoutNaN) {
  const Shape s{1, 1, 3, 1};
  // Gate blocks of 3: i, f, g, o.
  std::vector<float> gates = {1e30f,  -1e30f,  1e30f, -1e30f, 1e30f, 1e30f,
                              200.0f, -200.0f, 0.0f,  1e30f,  1e30f, -1e30f};
  const std::vector<float> xproj(12, 0.0f), b(12, 0.0f), c_prev = {1.0f, 2.0f, 3.0f};
  std::vector<float> h(3, kNaN), c(3, kNaN);
  pointwise(s, gates.data(), xproj.data(), b.data(), c_prev.data(), h.data(), c.data());
  // i = (1, 0, 1), f = (0, 1, 1), g = (1, -1, 0), o = (1, 1, 0).
  EXPECT_FLOAT_EQ(c[0], 1.0f);
  EXPECT_FLOAT_EQ(c[1], 2.0f);
  EXPECT_FLOAT_EQ(c[2], 3.0f);
  EXPECT_NEAR(h[0], std::tanh(1.0), 1e-6);
  EXPECT_NEAR(h[1], std::tanh(2.0), 1e-6);
  EXPECT_NEAR(h[2], 0.0, 1e-6);
}

// ---- the CPU variants against the reference ----

TEST(Lstm, BlasSequenceMatchesReference) {
  for (const Shape& s : kShapes) {
    const Problem p(s, 11);
    const Validation v = blas_sequence(p, full_reference(p));
    EXPECT_TRUE(v.ok) << name(s) << ": " << v.message();
  }
}

TEST(Lstm, BlasStepByStepEqualsSequence) {
  // Stepping by hand (what the step benchmark times) gives the sequence, bit for bit.
  for (const Shape& s : kShapes) {
    const Problem p(s, 13);
    BlasLstm lstm(s, p.weights);
    std::vector<float> h_seq(s.h_seq_size(), kNaN), c_last(s.state_size(), kNaN);
    lstm.sequence(p.x.data(), p.h0.data(), p.c0.data(), h_seq.data(), c_last.data());

    BlasLstm stepper(s, p.weights);
    stepper.project(p.x.data());
    std::vector<float> h = p.h0, c = p.c0, h_next(s.state_size(), kNaN);
    const Reference ref = full_reference(p);
    for (std::size_t t = 0; t < s.steps; ++t) {
      stepper.step(t, h.data(), c.data(), h_next.data(), c.data());
      if (t == 0) {
        const Validation v = check_step("blas step", s, ref, h_next.data(), c.data());
        EXPECT_TRUE(v.ok) << name(s) << ": " << v.message();
      }
      for (std::size_t k = 0; k < h.size(); ++k)
        ASSERT_EQ(h_next[k], h_seq[t * s.state_size() + k]) << name(s) << " t " << t;
      h = h_next;
    }
    EXPECT_EQ(c, c_last) << name(s);
  }
}

// oneDNN's run of `p` (the whole sequence, or one step), checked against `ref`.
Validation onednn_run(const Problem& p, const Reference& ref, bool one_step,
                      Arithmetic arithmetic) {
  const Shape& s = p.shape;
  OnednnLstm lstm(one_step ? s.one_step() : s, p.weights, arithmetic);
  lstm.set_inputs(p.x.data(), p.h0.data(), p.c0.data());
  lstm.run();
  const std::string what = std::string("onednn ") + math_name(arithmetic);
  return one_step ? check_step(what, s, ref, lstm.h_last().data(), lstm.c_last().data(),
                               lstm.precision())
                  : check_sequence(what, s, ref, lstm.h_seq().data(), lstm.c_last().data(),
                                   lstm.precision());
}

TEST(Lstm, OnednnSequenceMatchesReference) {
  for (const Shape& s : kShapes) {
    const Problem p(s, 17);
    const Validation v = onednn_run(p, full_reference(p), false, Arithmetic::float32);
    EXPECT_TRUE(v.ok) << name(s) << ": " << v.message();
  }
  // The last h oneDNN returns on its own is the sequence's last h_t.
  const Shape s{3, 16, 37, 5};
  const Problem p(s, 17);
  OnednnLstm lstm(s, p.weights);
  lstm.set_inputs(p.x.data(), p.h0.data(), p.c0.data());
  lstm.run();
  const std::vector<float> h_seq = lstm.h_seq(), h_last = lstm.h_last();
  EXPECT_TRUE(std::equal(h_last.begin(), h_last.end(), h_seq.end() - s.state_size()));
}

TEST(Lstm, OnednnOneStepMatchesReferenceFirstStep) {
  for (const Shape& s : kShapes) {
    const Problem p(s, 19);
    const Validation v = onednn_run(p, full_reference(p), true, Arithmetic::float32);
    EXPECT_TRUE(v.ok) << name(s) << ": " << v.message();
  }
}

TEST(Lstm, OnednnDoesNotNeedTheCallersWeightsAfterConstruction) {
  const Shape s{2, 5, 33, 3};
  const Problem p(s, 23);
  auto weights = std::make_unique<Weights>(p.weights);
  OnednnLstm lstm(s, *weights);
  std::fill(weights->w.begin(), weights->w.end(), kNaN);
  weights.reset();
  lstm.set_inputs(p.x.data(), p.h0.data(), p.c0.data());
  lstm.run();
  const Validation v =
      check_sequence("onednn", s, full_reference(p), lstm.h_seq().data(), lstm.c_last().data());
  EXPECT_TRUE(v.ok) << v.message();
}

TEST(Lstm, OnednnRejectsArithmeticsItHasNoVariantFor) {
  const Problem p(Shape{2, 5, 8, 2}, 1);
  EXPECT_THROW(OnednnLstm(p.shape, p.weights, Arithmetic::fp16), std::invalid_argument);
  EXPECT_THROW(OnednnLstm(p.shape, p.weights, Arithmetic::tf32), std::invalid_argument);
}

// ---- mixed precision: the tolerance of a narrow format ----

// What a mixed-precision LSTM computes, modelled in float64: x, W and each h_{t-1} read in
// `precision.arithmetic`'s format, exact sums and gates (the float32 ones are far finer than the
// narrow format), h_t and c_t stored in their formats. Only the reference's rows are computed;
// the others stay NaN, as nothing reads them.
struct Outputs {
  std::vector<float> h_seq, c_last;
};
Outputs narrow_model(const Problem& p, const std::vector<std::size_t>& rows, Precision precision) {
  const Shape& s = p.shape;
  auto narrow_all = [](std::vector<float> v, Arithmetic a) {
    for (float& e : v) e = narrowed(e, a);
    return v;
  };
  const Weights w{narrow_all(p.weights.w, precision.arithmetic), p.weights.b};
  const std::vector<float> x = narrow_all(p.x, precision.arithmetic);
  std::vector<float> h = narrow_all(p.h0, precision.arithmetic);
  std::vector<float> c = narrow_all(p.c0, precision.c_stored);
  Outputs out{std::vector<float>(s.h_seq_size(), kNaN), {}};
  const Shape one = s.one_step();
  for (std::size_t t = 0; t < s.steps; ++t) {
    const Reference step =
        reference(one, w, x.data() + t * s.batch * s.input, h.data(), c.data(), rows);
    for (std::size_t r = 0; r < rows.size(); ++r) {
      for (std::size_t j = 0; j < s.hidden; ++j) {
        const std::size_t k = rows[r] * s.hidden + j;
        h[k] = narrowed(static_cast<float>(step.h[r * s.hidden + j]), precision.h_stored);
        c[k] = narrowed(static_cast<float>(step.c[r * s.hidden + j]), precision.c_stored);
        out.h_seq[t * s.state_size() + k] = h[k];
      }
    }
  }
  out.c_last = c;
  return out;
}

// oneDNN's bf16 (h in bf16, c float32), cuDNN's fp16 (h and c in fp16) and cuDNN's tf32 (inputs
// read as TF32, truncated, h and c float32).
const Precision kNarrow[] = {{Arithmetic::bf16, Arithmetic::bf16, Arithmetic::float32},
                             {Arithmetic::fp16, Arithmetic::fp16, Arithmetic::fp16},
                             {Arithmetic::tf32, Arithmetic::float32, Arithmetic::float32}};

TEST(Lstm, NarrowToleranceAdmitsTheFormatsRoundingAndCatchesRealErrors) {
  for (const Shape& s : {Shape{4, 50, 64, 10}, Shape{64, 50, 64, 100}, Shape{8, 512, 512, 25}}) {
    const Problem p(s, 29);
    const Reference ref = reference(p.shape, p.weights, p.x.data(), p.h0.data(), p.c0.data(),
                                    sample_rows(s.batch, 4));
    for (const Precision& precision : kNarrow) {
      const std::string what = name(s) + " " + math_name(precision.arithmetic);
      auto check = [&](const Outputs& o) {
        return check_sequence(what, s, ref, o.h_seq.data(), o.c_last.data(), precision);
      };
      const Outputs model = narrow_model(p, ref.rows, precision);
      const Validation ok = check(model);
      EXPECT_TRUE(ok.ok) << ok.message();
      // Room for the libraries' own summation order and gate functions.
      EXPECT_LT(ok.worst_excess, 0.5) << ok.message();
      // fp16's and TF32's rounding can hide in a wide float32 bound (many terms, few steps).
      if (precision.arithmetic == Arithmetic::bf16) {
        EXPECT_FALSE(check_sequence(what, s, ref, model.h_seq.data(), model.c_last.data()).ok)
            << what << ": the float32 tolerance should not admit bf16's rounding";
      }

      Problem swapped = p;  // forget and output gates exchanged (a wrong gate order)
      for (std::size_t k = 0; k < s.weight_rows(); ++k)
        for (std::size_t j = 0; j < s.hidden; ++j)
          std::swap(swapped.weights.w[k * s.gates() + s.hidden + j],
                    swapped.weights.w[k * s.gates() + 3 * s.hidden + j]);
      EXPECT_FALSE(check(narrow_model(swapped, ref.rows, precision)).ok) << what << ": gates";

      Problem dropped = p;  // the recurrent product over half of h_{t-1} left out (a K-slice)
      for (std::size_t k = s.input + s.hidden / 2; k < s.weight_rows(); ++k)
        for (std::size_t g = 0; g < s.gates(); ++g) dropped.weights.w[k * s.gates() + g] = 0.0f;
      EXPECT_FALSE(check(narrow_model(dropped, ref.rows, precision)).ok) << what << ": k-slice";

      Outputs halved = model;  // h_t half-scaled
      for (float& v : halved.h_seq) v *= 0.5f;
      EXPECT_FALSE(check(halved).ok) << what << ": half-scaled h";
    }
  }
}

// ---- the cuDNN variant's algorithm ----

const GpuFacts kH200{9, 0, 132}, kA100{8, 0, 108}, kA30{8, 0, 56}, kRtx3090{8, 6, 82},
    kV100{7, 0, 80}, kT4{7, 5, 40}, kP100{6, 0, 56}, kMaxwell{5, 2, 24};

TEST(Lstm, FrameworkAlgorithmIsPersistentForSmallHidden) {
  const Shape keras{64, 50, 64, 100};  // hidden <= 192: any data type, from 6.0 on
  for (Arithmetic a : {Arithmetic::float32, Arithmetic::tf32, Arithmetic::fp16}) {
    for (const GpuFacts& gpu : {kH200, kA30, kRtx3090, kT4, kP100}) {
      EXPECT_EQ(framework_rnn_algorithm(keras, a, gpu), RnnAlgorithm::persist_static_small_h)
          << math_name(a) << " on " << gpu.major << "." << gpu.minor;
    }
    EXPECT_EQ(framework_rnn_algorithm(keras, a, kMaxwell), RnnAlgorithm::standard);
  }
  EXPECT_EQ(framework_rnn_algorithm({8, 7, 192, 3}, Arithmetic::float32, kH200),
            RnnAlgorithm::persist_static_small_h);
  EXPECT_EQ(framework_rnn_algorithm({8, 7, 193, 3}, Arithmetic::float32, kH200),
            RnnAlgorithm::standard);
}

TEST(Lstm, FrameworkAlgorithmIsPersistentStaticForFp16AtMultiplesOf128) {
  const Shape deepbench{64, 512, 512, 25};
  EXPECT_EQ(framework_rnn_algorithm(deepbench, Arithmetic::fp16, kH200),
            RnnAlgorithm::persist_static);
  EXPECT_EQ(framework_rnn_algorithm(deepbench, Arithmetic::fp16, kA100),
            RnnAlgorithm::persist_static);
  EXPECT_EQ(framework_rnn_algorithm({16, 1024, 1024, 100}, Arithmetic::fp16, kH200),
            RnnAlgorithm::persist_static);
  // float32 and TF32 stay STANDARD at these sizes, as in PyTorch.
  EXPECT_EQ(framework_rnn_algorithm(deepbench, Arithmetic::float32, kH200), RnnAlgorithm::standard);
  EXPECT_EQ(framework_rnn_algorithm(deepbench, Arithmetic::tf32, kH200), RnnAlgorithm::standard);
  // Shape: hidden and input multiples of 128, hidden <= 1024.
  EXPECT_EQ(framework_rnn_algorithm({64, 50, 512, 25}, Arithmetic::fp16, kH200),
            RnnAlgorithm::standard);
  EXPECT_EQ(framework_rnn_algorithm({64, 1152, 1152, 25}, Arithmetic::fp16, kH200),
            RnnAlgorithm::standard);
  // Batch on 8.x: a multiple of 8 up to 128; small GPUs (A30) and 8.6 never.
  EXPECT_EQ(framework_rnn_algorithm({12, 512, 512, 25}, Arithmetic::fp16, kH200),
            RnnAlgorithm::standard);
  EXPECT_EQ(framework_rnn_algorithm({136, 512, 512, 25}, Arithmetic::fp16, kH200),
            RnnAlgorithm::standard);
  EXPECT_EQ(framework_rnn_algorithm(deepbench, Arithmetic::fp16, kA30), RnnAlgorithm::standard);
  EXPECT_EQ(framework_rnn_algorithm(deepbench, Arithmetic::fp16, kRtx3090), RnnAlgorithm::standard);
  // 7.0: batch and steps together; 7.5 never.
  EXPECT_EQ(framework_rnn_algorithm(deepbench, Arithmetic::fp16, kV100),
            RnnAlgorithm::persist_static);
  EXPECT_EQ(framework_rnn_algorithm({64, 512, 512, 10}, Arithmetic::fp16, kV100),
            RnnAlgorithm::standard);
  EXPECT_EQ(framework_rnn_algorithm({80, 512, 512, 100}, Arithmetic::fp16, kV100),
            RnnAlgorithm::standard);
  EXPECT_EQ(framework_rnn_algorithm(deepbench, Arithmetic::fp16, kT4), RnnAlgorithm::standard);
}

TEST(Lstm, RnnAlgorithmNamesAreDistinct) {
  EXPECT_STREQ(rnn_algorithm_name(RnnAlgorithm::standard), "standard");
  EXPECT_STREQ(rnn_algorithm_name(RnnAlgorithm::persist_static), "persist_static");
  EXPECT_STREQ(rnn_algorithm_name(RnnAlgorithm::persist_static_small_h), "persist_static_small_h");
}

// Skips where this CPU has no bf16 instructions: oneDNN would emulate or refuse them.
TEST(Lstm, OnednnBf16MatchesReferenceWithTheBf16Tolerance) {
  if (const auto reason = onednn_arithmetic_unavailable_reason(Arithmetic::bf16))
    GTEST_SKIP() << *reason;
  for (const Shape& s : {Shape{4, 50, 64, 10}, Shape{64, 50, 64, 100}, Shape{8, 512, 512, 25},
                         Shape{3, 16, 37, 5}, Shape{1, 1, 1, 4}}) {
    const Problem p(s, 31);
    const Reference ref = reference(p.shape, p.weights, p.x.data(), p.h0.data(), p.c0.data(),
                                    sample_rows(s.batch, 4));
    for (bool one_step : {false, true}) {
      const Validation v = onednn_run(p, ref, one_step, Arithmetic::bf16);
      EXPECT_TRUE(v.ok) << name(s) << (one_step ? " step: " : ": ") << v.message();
      EXPECT_LT(v.worst_excess, 0.5) << name(s) << ": " << v.message();
    }
  }
}

}  // namespace
}  // namespace gapbench::lstm
