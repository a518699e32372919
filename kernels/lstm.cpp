// Family `lstm`, CPU side: shapes and weight checks, the float64 reference, the tolerance, then
// the BLAS variant (hoisted input projection, one SGEMM and one vectorized pointwise pass a step).
#include "kernels/lstm.h"

#include <cblas.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace gapbench::lstm {

std::string Shape::key() const {
  return "b" + std::to_string(batch) + "_i" + std::to_string(input) + "_h" +
         std::to_string(hidden) + "_t" + std::to_string(steps);
}

double Shape::cell_flops() const {
  return 2.0 * static_cast<double>(batch) * static_cast<double>(weight_rows()) *
         static_cast<double>(gates());
}

double Shape::recurrent_flops() const {
  return 2.0 * static_cast<double>(batch) * static_cast<double>(hidden) *
         static_cast<double>(gates());
}

void check_shape(const Shape& s) {
  if (s.batch == 0 || s.input == 0 || s.hidden == 0 || s.steps == 0) {
    throw std::invalid_argument("lstm: batch " + std::to_string(s.batch) + ", input " +
                                std::to_string(s.input) + ", hidden " + std::to_string(s.hidden) +
                                ", steps " + std::to_string(s.steps) + ": every size must be > 0");
  }
  // BLAS, cuDNN and the GPU kernel take int sizes: the hoisted GEMM's steps·batch rows, W's rows
  // and columns, and one step's batch·4·hidden pre-activations must fit.
  const std::size_t largest = std::max({s.steps * s.batch, s.weight_rows(), s.batch * s.gates()});
  if (largest > static_cast<std::size_t>(INT_MAX)) {
    throw std::invalid_argument("lstm: shape " + s.key() + " is too large for int sizes");
  }
}

void check_weights(const Shape& s, const Weights& weights) {
  check_shape(s);
  const std::string dims = "input " + std::to_string(s.input) + " + hidden " +
                           std::to_string(s.hidden) + " by 4 x hidden " + std::to_string(s.hidden);
  if (weights.w.size() != s.weight_size()) {
    throw std::invalid_argument("lstm: W has " + std::to_string(weights.w.size()) +
                                " floats, but " + dims + " needs " +
                                std::to_string(s.weight_size()));
  }
  if (weights.b.size() != s.gates()) {
    throw std::invalid_argument("lstm: b has " + std::to_string(weights.b.size()) +
                                " floats, but 4 x hidden " + std::to_string(s.hidden) + " needs " +
                                std::to_string(s.gates()));
  }
}

// ---- float64 reference ----

std::vector<std::size_t> sample_rows(std::size_t batch, std::size_t count) {
  std::vector<std::size_t> rows;
  if (batch <= count) {
    for (std::size_t n = 0; n < batch; ++n) rows.push_back(n);
    return rows;
  }
  // count >= 2 here unless count is 0 or 1: then the first row only.
  if (count <= 1) return {0};
  for (std::size_t k = 0; k < count; ++k) rows.push_back(k * (batch - 1) / (count - 1));
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  return rows;
}

namespace {

double sigmoid(double z) { return 1.0 / (1.0 + std::exp(-z)); }

}  // namespace

Reference reference(const Shape& s, const Weights& weights, const float* x, const float* h0,
                    const float* c0, const std::vector<std::size_t>& rows) {
  check_weights(s, weights);
  const std::size_t H = s.hidden, G = s.gates(), R = rows.size();
  Reference ref;
  ref.rows = rows;
  ref.h.assign(s.steps * R * H, 0.0);
  ref.c.assign(s.steps * R * H, 0.0);
  std::vector<double> z(G), magnitude(G), squares(G), in(s.weight_rows()), c(H);
  for (std::size_t r = 0; r < R; ++r) {
    const std::size_t n = rows[r];
    if (n >= s.batch) throw std::invalid_argument("lstm reference: row out of range");
    for (std::size_t j = 0; j < H; ++j) {
      in[s.input + j] = h0[n * H + j];
      c[j] = c0[n * H + j];
    }
    for (std::size_t t = 0; t < s.steps; ++t) {
      const float* xt = x + (t * s.batch + n) * s.input;
      for (std::size_t k = 0; k < s.input; ++k) in[k] = xt[k];
      for (std::size_t g = 0; g < G; ++g) {
        z[g] = weights.b[g];
        magnitude[g] = std::fabs(static_cast<double>(weights.b[g]));
        squares[g] = z[g] * z[g];
      }
      for (std::size_t k = 0; k < s.weight_rows(); ++k) {
        const double v = in[k];
        const float* wk = weights.w.data() + k * G;
        for (std::size_t g = 0; g < G; ++g) {
          const double term = v * wk[g];
          z[g] += term;
          magnitude[g] += std::fabs(term);
          squares[g] += term * term;
        }
      }
      ref.magnitude =
          std::max(ref.magnitude, *std::max_element(magnitude.begin(), magnitude.end()));
      ref.magnitude_l2 =
          std::max(ref.magnitude_l2, std::sqrt(*std::max_element(squares.begin(), squares.end())));
      double* ht = ref.h.data() + (t * R + r) * H;
      double* ct = ref.c.data() + (t * R + r) * H;
      for (std::size_t j = 0; j < H; ++j) {
        const double i = sigmoid(z[j]), f = sigmoid(z[H + j]);
        ref.forget_max = std::max(ref.forget_max, f);
        const double g = std::tanh(z[2 * H + j]), o = sigmoid(z[3 * H + j]);
        c[j] = f * c[j] + i * g;
        ct[j] = c[j];
        ht[j] = o * std::tanh(c[j]);
        in[s.input + j] = ht[j];
      }
    }
  }
  return ref;
}

// ---- tolerance and checks ----

namespace {

double max_abs(const std::vector<double>& v) {
  double m = 0.0;
  for (double e : v) m = std::max(m, std::fabs(e));
  return m;
}

// How far independent per-step errors add up over the sequence: √steps.
double random_walk(const Shape& s) { return std::sqrt(static_cast<double>(s.steps)); }

// The header's bound for h and c: float32 sums and gates over a √steps random walk, plus the
// inputs read in a narrower format, carried over as many steps as the forget gate lets them last.
double error_bound(const Shape& s, const Reference& ref, Arithmetic arithmetic) {
  const double u = kFloat32Roundoff;
  const double terms = static_cast<double>(s.weight_rows() + 2);
  const double steps = random_walk(s);
  const double float32 =
      std::sqrt(terms) * u * ref.magnitude + kGateUlps * u * std::max(1.0, max_abs(ref.c));
  const double carried = std::min(steps, 1.0 / (1.0 - std::min(ref.forget_max, 0.999)));
  const double narrow = 2.0 * input_roundoff(arithmetic) * ref.magnitude_l2;
  return kSafety * (steps * float32 + carried * narrow);
}

// The reference rows' elements of a [batch][hidden] state, in the reference's order.
std::vector<float> gather_rows(const Shape& s, const Reference& ref, const float* state) {
  std::vector<float> out;
  out.reserve(ref.rows.size() * s.hidden);
  for (std::size_t n : ref.rows)
    out.insert(out.end(), state + n * s.hidden, state + (n + 1) * s.hidden);
  return out;
}

// Both checks as one result: the failing one (h first), else h's with both counts.
Validation merge(Validation h, const Validation& c) {
  if (!h.ok) return h;
  if (!c.ok) return c;
  h.count += c.count;
  return h;
}

}  // namespace

Tolerance h_tolerance(const Shape& s, const Reference& ref, Precision p) {
  return {error_bound(s, ref, p.arithmetic), input_roundoff(p.h_stored)};
}

Tolerance c_tolerance(const Shape& s, const Reference& ref, Precision p) {
  return {error_bound(s, ref, p.arithmetic),
          kSafety * random_walk(s) * kGateUlps * kFloat32Roundoff + input_roundoff(p.c_stored)};
}

Validation check_sequence(const std::string& what, const Shape& s, const Reference& ref,
                          const float* h_seq, const float* c_last, Precision p) {
  const std::size_t R = ref.rows.size(), H = s.hidden;
  std::vector<float> h_got;
  h_got.reserve(s.steps * R * H);
  for (std::size_t t = 0; t < s.steps; ++t) {
    const auto rows = gather_rows(s, ref, h_seq + t * s.batch * H);
    h_got.insert(h_got.end(), rows.begin(), rows.end());
  }
  const std::vector<double> c_ref(ref.c.end() - static_cast<std::ptrdiff_t>(R * H), ref.c.end());
  return merge(
      validate(what + " h_t", h_got, ref.h, h_tolerance(s, ref, p)),
      validate(what + " final c", gather_rows(s, ref, c_last), c_ref, c_tolerance(s, ref, p)));
}

Validation check_step(const std::string& what, const Shape& s, const Reference& ref, const float* h,
                      const float* c, Precision p) {
  const std::size_t RH = ref.rows.size() * s.hidden;
  const Shape one = s.one_step();
  const std::vector<double> h_ref(ref.h.begin(), ref.h.begin() + static_cast<std::ptrdiff_t>(RH));
  const std::vector<double> c_ref(ref.c.begin(), ref.c.begin() + static_cast<std::ptrdiff_t>(RH));
  return merge(validate(what + " step h", gather_rows(s, ref, h), h_ref, h_tolerance(one, ref, p)),
               validate(what + " step c", gather_rows(s, ref, c), c_ref, c_tolerance(one, ref, p)));
}

// ---- the cuDNN variant's algorithm ----

const char* rnn_algorithm_name(RnnAlgorithm algorithm) {
  switch (algorithm) {
    case RnnAlgorithm::persist_static:
      return "persist_static";
    case RnnAlgorithm::persist_static_small_h:
      return "persist_static_small_h";
    case RnnAlgorithm::standard:
      break;
  }
  return "standard";
}

namespace {

// Where a persistent kernel beats the step-by-step one for float16 (the device part of the rule
// in lstm.h): measured by the frameworks per architecture, not derived.
bool persistent_fits_device(const Shape& s, const GpuFacts& gpu) {
  const std::size_t b = s.batch;
  if (gpu.major == 7) {
    if (gpu.minor == 5) return false;
    return ((b % 16 == 0 && b != 80 && b != 112) || b == 8) &&
           ((s.steps >= 40 && b <= 128) || (s.steps >= 20 && b <= 96) ||
            (s.steps >= 10 && b <= 32));
  }
  if (gpu.major >= 8 && gpu.multiprocessors >= 98 && gpu.minor != 6) {
    return b % 8 == 0 && b <= 128;
  }
  return false;
}

}  // namespace

RnnAlgorithm framework_rnn_algorithm(const Shape& s, Arithmetic arithmetic, const GpuFacts& gpu) {
  if (gpu.major >= 6 && s.hidden <= 192) return RnnAlgorithm::persist_static_small_h;
  const bool persistent_shape = s.hidden <= 1024 && s.hidden % 128 == 0 && s.input % 128 == 0;
  if (arithmetic == Arithmetic::fp16 && persistent_shape && persistent_fits_device(s, gpu)) {
    return RnnAlgorithm::persist_static;
  }
  return RnnAlgorithm::standard;
}

// ---- the pointwise update ----

// GCC does not if-convert a float comparison (the clamp below) while it must preserve FP
// exception flags (-ftrapping-math, its default), so the loops would stay scalar; nothing here
// reads those flags. Clang vectorizes them as they are.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("no-trapping-math")
#endif

namespace {

// e^x in float32 to about 1 ulp, branch-free so that the loops calling it vectorize (std::exp
// is a library call the compiler cannot vectorize without -ffast-math). x is clamped to
// [-87, 87], where e^x and e^-x are normal floats. x = n·ln2 + r with |r| <= ln2/2 (ln2 split in
// two so n·ln2 is exact enough), e^r by its Taylor series to r^7 (the next term is < 6e-9
// relative), then 2^n put into the exponent bits.
inline float exp_approx(float x) {
  // Not std::min/max: a function from outside the pragma's options would not be inlined.
  x = x < -87.0f ? -87.0f : x;
  x = x > 87.0f ? 87.0f : x;
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f;  // 8 significant bits: n·kLn2Hi is exact
  constexpr float kLn2Lo = -2.12194440e-4f;
  constexpr float kRound = 12582912.0f;  // 1.5·2^23: adding it rounds to an integer
  const float n = (x * kLog2e + kRound) - kRound;
  const float r = (x - n * kLn2Hi) - n * kLn2Lo;
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const std::int32_t bits = (static_cast<std::int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

inline float sigmoid_f(float z) { return 1.0f / (1.0f + exp_approx(-z)); }
// 2σ(2z) - 1: absolute error a few ulp of 1, which is what the tolerance counts.
inline float tanh_f(float z) { return 2.0f / (1.0f + exp_approx(-2.0f * z)) - 1.0f; }

}  // namespace

namespace {

// One batch row. Every pointer is a __restrict parameter (GCC honours restrict on parameters,
// not on locals), so the loop needs no run-time alias checks: with a dozen streams the compiler
// would rather not vectorize it than check them all. c is read and written in place.
void pointwise_row(std::size_t H, const float* __restrict z, const float* __restrict x,
                   const float* __restrict b, float* __restrict c, float* __restrict h) {
  for (std::size_t j = 0; j < H; ++j) {
    const float i = sigmoid_f(z[j] + x[j] + b[j]);
    const float f = sigmoid_f(z[H + j] + x[H + j] + b[H + j]);
    const float g = tanh_f(z[2 * H + j] + x[2 * H + j] + b[2 * H + j]);
    const float o = sigmoid_f(z[3 * H + j] + x[3 * H + j] + b[3 * H + j]);
    const float cj = f * c[j] + i * g;
    c[j] = cj;
    h[j] = o * tanh_f(cj);
  }
}

}  // namespace

void pointwise(const Shape& s, const float* gates, const float* xproj, const float* b,
               const float* c_prev, float* h, float* c) {
  const std::size_t H = s.hidden, G = s.gates();
  if (c != c_prev) std::memcpy(c, c_prev, s.state_size() * sizeof(float));
  for (std::size_t n = 0; n < s.batch; ++n) {
    pointwise_row(H, gates + n * G, xproj + n * G, b, c + n * H, h + n * H);
  }
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif

// ---- CPU `blas` variant ----

BlasLstm::BlasLstm(const Shape& shape, const Weights& weights)
    : shape_(shape), weights_((check_weights(shape, weights), weights)) {
  xproj_.resize(shape.steps * shape.batch * shape.gates());
  gates_.resize(shape.batch * shape.gates());
}

void BlasLstm::project(const float* x) {
  const auto rows = static_cast<blasint>(shape_.steps * shape_.batch);
  const auto G = static_cast<blasint>(shape_.gates()), I = static_cast<blasint>(shape_.input);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, G, I, 1.0f, x, I, weights_.w.data(),
              G, 0.0f, xproj_.data(), G);
}

void BlasLstm::step(std::size_t t, const float* h_prev, const float* c_prev, float* h, float* c) {
  const auto B = static_cast<blasint>(shape_.batch), G = static_cast<blasint>(shape_.gates());
  const auto H = static_cast<blasint>(shape_.hidden);
  const float* w_h = weights_.w.data() + shape_.input * shape_.gates();
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, B, G, H, 1.0f, h_prev, H, w_h, G, 0.0f,
              gates_.data(), G);
  pointwise(shape_, gates_.data(), xproj_.data() + t * shape_.batch * shape_.gates(),
            weights_.b.data(), c_prev, h, c);
}

void BlasLstm::sequence(const float* x, const float* h0, const float* c0, float* h_seq,
                        float* c_last) {
  project(x);
  const std::size_t state = shape_.state_size();
  for (std::size_t t = 0; t < shape_.steps; ++t) {
    const float* h_prev = t == 0 ? h0 : h_seq + (t - 1) * state;
    // c is updated in place in c_last; the first step reads c0.
    step(t, h_prev, t == 0 ? c0 : c_last, h_seq + t * state, c_last);
  }
}

}  // namespace gapbench::lstm
