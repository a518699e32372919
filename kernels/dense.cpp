// Op `dense`, CPU side: seeded inputs, the float64 reference and its tolerance, then the CPU step.
// Random values come from gapbench::element_hash (header-only, kernels/base/data.h), as in
// kernels/preprocess.cpp, so the kernels library needs nothing else from fixtures/.
#include "kernels/dense.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <tuple>

#include "kernels/base/data.h"  // element_hash only (inline, header-only)

namespace gapbench::dense {

namespace {

// Stream ids of the draws ("densexin", "denselab", "densepar" in ASCII).
constexpr std::uint64_t kInputStream = 0x64656e736578696eull;
constexpr std::uint64_t kLabelStream = 0x64656e73656c6162ull;
constexpr std::uint64_t kParamStream = 0x64656e7365706172ull;

// fill_uniform's formula (24 random bits per value) over [lo, hi), for element i.
float uniform_at(std::uint64_t seed, std::uint64_t stream, std::size_t i, float lo, float hi) {
  const auto bits = static_cast<float>(element_hash(seed, stream, i) >> 40);
  return lo + bits * ((hi - lo) * 0x1.0p-24f);
}

// ---- float64 building blocks; A and B may be float or double ----

// C[m×n] = A[m×k] · B[k×n]
template <class A, class B>
void matmul(const A* a, const B* b, std::size_t m, std::size_t k, std::size_t n, double* c) {
  std::fill(c, c + m * n, 0.0);
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t p = 0; p < k; ++p) {
      const double aip = a[i * k + p];
      for (std::size_t j = 0; j < n; ++j) c[i * n + j] += aip * static_cast<double>(b[p * n + j]);
    }
}

// C[m×n] = Aᵀ · B, A stored k×m, B stored k×n
template <class A, class B>
void matmul_tn(const A* a, const B* b, std::size_t m, std::size_t k, std::size_t n, double* c) {
  std::fill(c, c + m * n, 0.0);
  for (std::size_t p = 0; p < k; ++p)
    for (std::size_t i = 0; i < m; ++i) {
      const double api = a[p * m + i];
      for (std::size_t j = 0; j < n; ++j) c[i * n + j] += api * static_cast<double>(b[p * n + j]);
    }
}

// C[m×n] = A · Bᵀ, A stored m×k, B stored n×k
void matmul_nt(const double* a, const double* b, std::size_t m, std::size_t k, std::size_t n,
               double* c) {
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      double sum = 0.0;
      for (std::size_t p = 0; p < k; ++p) sum += a[i * k + p] * b[j * k + p];
      c[i * n + j] = sum;
    }
}

// out[c] = Σ_r x[r, c]
void column_sums(const double* x, std::size_t rows, std::size_t cols, double* out) {
  std::fill(out, out + cols, 0.0);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) out[c] += x[r * cols + c];
}

// Everything one float64 pass computes, kept for the step's tolerance.
struct Pass {
  std::vector<double> z1;       // x·W1, before the bias
  std::vector<double> h;        // ReLU(z1 + b1)
  std::vector<double> dlogits;  // (softmax - onehot) / batch
  std::vector<double> g;        // dlogits · W2ᵀ: the hidden units' gradient before ReLU's mask
  double loss = 0.0;
};

Pass forward_backward(const DenseShape& s, const double* params, const float* x,
                      const std::int32_t* labels, double* grad) {
  Pass pass;
  pass.z1.resize(s.batch * s.hidden);
  pass.h.resize(s.batch * s.hidden);
  matmul(x, params + s.w1(), s.batch, s.in, s.hidden, pass.z1.data());
  bias_relu_reference(pass.z1.data(), params + s.b1(), s.batch, s.hidden, pass.h.data());
  std::vector<double> logits(s.batch * s.out);
  matmul(pass.h.data(), params + s.w2(), s.batch, s.hidden, s.out, logits.data());
  pass.dlogits.resize(s.batch * s.out);
  pass.loss = softmax_xent_reference(logits.data(), params + s.b2(), labels, s.batch, s.out,
                                     pass.dlogits.data(), nullptr);
  if (grad == nullptr) return pass;

  matmul_tn(pass.h.data(), pass.dlogits.data(), s.hidden, s.batch, s.out, grad + s.w2());
  column_sums(pass.dlogits.data(), s.batch, s.out, grad + s.b2());
  pass.g.resize(s.batch * s.hidden);
  matmul_nt(pass.dlogits.data(), params + s.w2(), s.batch, s.out, s.hidden, pass.g.data());
  std::vector<double> dz1(s.batch * s.hidden);
  relu_backward_reference(pass.g.data(), pass.h.data(), dz1.size(), dz1.data());
  matmul_tn(x, dz1.data(), s.in, s.batch, s.hidden, grad + s.w1());
  column_sums(dz1.data(), s.batch, s.hidden, grad + s.b1());
  return pass;
}

double max_abs(const double* v, std::size_t n) {
  double m = 0.0;
  for (std::size_t i = 0; i < n; ++i) m = std::max(m, std::fabs(v[i]));
  return m;
}

// Which hidden units sit at ReLU's kink, and what that can add to their W1 and b1 gradients
// (see StepReference). Unit j is at the kink in row r when its float64 pre-activation is within
// the float32 rounding bound of a length-`in` dot product plus a bias add,
// γ·(Σ_p |x_rp·w_pj| + |b_j|), of 0 (the bound gemm::validate_sampled uses): a float32 pass may
// then mask g[r, j] where float64 does not, or the reverse, which moves dW1[p, j] by at most
// |x_rp|·|g_rj| and db1[j] by |g_rj|, summed over such rows.
void find_kinks(const DenseShape& s, const float* params, const float* x, const Pass& pass,
                StepReference& ref) {
  const double gamma = static_cast<double>(s.in + 1) * kFloat32Roundoff;
  std::vector<double> w1_abs(s.in * s.hidden);
  for (std::size_t i = 0; i < w1_abs.size(); ++i) w1_abs[i] = std::fabs(params[s.w1() + i]);
  std::vector<double> x_abs(s.batch * s.in);
  for (std::size_t i = 0; i < x_abs.size(); ++i) x_abs[i] = std::fabs(x[i]);
  std::vector<double> magnitude(s.batch * s.hidden);  // Σ_p |x_rp·w_pj|
  matmul(x_abs.data(), w1_abs.data(), s.batch, s.in, s.hidden, magnitude.data());
  std::vector<double> share_w1(s.hidden, 0.0), share_b1(s.hidden, 0.0);
  ref.at_kink.assign(s.hidden, 0);
  for (std::size_t r = 0; r < s.batch; ++r) {
    const double x_max = max_abs(x_abs.data() + r * s.in, s.in);
    for (std::size_t j = 0; j < s.hidden; ++j) {
      const std::size_t k = r * s.hidden + j;
      const double bias = params[s.b1() + j];
      if (std::fabs(pass.z1[k] + bias) <= gamma * (magnitude[k] + std::fabs(bias))) {
        ref.at_kink[j] = 1;
        share_w1[j] += x_max * std::fabs(pass.g[k]);
        share_b1[j] += std::fabs(pass.g[k]);
      }
    }
  }
  ref.kink_w1 = max_abs(share_w1.data(), s.hidden);
  ref.kink_b1 = max_abs(share_b1.data(), s.hidden);
}

}  // namespace

// ---- inputs ----

std::vector<float> random_inputs(const DenseShape& s, std::uint64_t seed) {
  std::vector<float> x(s.batch * s.in);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = uniform_at(seed, kInputStream, i, 0.0f, 1.0f);
  return x;
}

std::vector<std::int32_t> random_labels(const DenseShape& s, std::uint64_t seed) {
  std::vector<std::int32_t> y(s.batch);
  for (std::size_t i = 0; i < y.size(); ++i) {
    y[i] = static_cast<std::int32_t>(element_hash(seed, kLabelStream, i) % s.out);
  }
  return y;
}

std::vector<float> initial_params(const DenseShape& s, std::uint64_t seed) {
  std::vector<float> p(s.params());
  const auto fill = [&](std::size_t offset, std::size_t n, float limit) {
    for (std::size_t i = offset; i < offset + n; ++i)
      p[i] = uniform_at(seed, kParamStream, i, -limit, limit);
  };
  const auto glorot = [](std::size_t fan_in, std::size_t fan_out) {
    return static_cast<float>(std::sqrt(6.0 / static_cast<double>(fan_in + fan_out)));
  };
  fill(s.w1(), s.in * s.hidden, glorot(s.in, s.hidden));
  fill(s.b1(), s.hidden, 0.1f);
  fill(s.w2(), s.hidden * s.out, glorot(s.hidden, s.out));
  fill(s.b2(), s.out, 0.1f);
  return p;
}

// ---- float64 reference ----

void bias_relu_reference(const double* z, const double* bias, std::size_t rows, std::size_t cols,
                         double* h) {
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c)
      h[r * cols + c] = std::max(z[r * cols + c] + bias[c], 0.0);
}

double softmax_xent_reference(const double* logits, const double* bias, const std::int32_t* labels,
                              std::size_t rows, std::size_t classes, double* dlogits,
                              double* row_loss) {
  double total = 0.0;
  std::vector<double> z(classes);
  for (std::size_t r = 0; r < rows; ++r) {
    double top = -std::numeric_limits<double>::infinity();
    for (std::size_t k = 0; k < classes; ++k) {
      z[k] = logits[r * classes + k] + bias[k];
      top = std::max(top, z[k]);
    }
    double sum = 0.0;
    for (std::size_t k = 0; k < classes; ++k) sum += std::exp(z[k] - top);
    const auto label = static_cast<std::size_t>(labels[r]);
    const double loss = std::log(sum) - (z[label] - top);
    total += loss;
    if (row_loss != nullptr) row_loss[r] = loss;
    for (std::size_t k = 0; k < classes; ++k) {
      const double p = std::exp(z[k] - top) / sum;
      dlogits[r * classes + k] = (p - (k == label ? 1.0 : 0.0)) / static_cast<double>(rows);
    }
  }
  return total / static_cast<double>(rows);
}

void relu_backward_reference(const double* dh, const double* h, std::size_t n, double* dz) {
  for (std::size_t i = 0; i < n; ++i) dz[i] = h[i] > 0.0 ? dh[i] : 0.0;
}

double loss_reference(const DenseShape& s, const double* params, const float* x,
                      const std::int32_t* labels) {
  return forward_backward(s, params, x, labels, nullptr).loss;
}

double gradient_reference(const DenseShape& s, const double* params, const float* x,
                          const std::int32_t* labels, double* grad) {
  return forward_backward(s, params, x, labels, grad).loss;
}

StepReference step_reference(const DenseShape& s, const float* params, const float* x,
                             const std::int32_t* labels, float lr) {
  const std::vector<double> start(params, params + s.params());
  std::vector<double> grad(s.params());
  const Pass pass = forward_backward(s, start.data(), x, labels, grad.data());
  StepReference ref;
  ref.loss = pass.loss;
  ref.params.resize(s.params());
  const double rate = lr;
  for (std::size_t i = 0; i < start.size(); ++i) ref.params[i] = start[i] - rate * grad[i];
  find_kinks(s, params, x, pass, ref);
  const auto tolerance = [&](std::size_t offset, std::size_t n) {
    const double rounding = 2.0 * kFloat32Roundoff * max_abs(ref.params.data() + offset, n);
    return Tolerance{rounding + rate * kGradRtol * max_abs(grad.data() + offset, n), 0.0};
  };
  ref.w1 = tolerance(s.w1(), s.in * s.hidden);
  ref.b1 = tolerance(s.b1(), s.hidden);
  ref.w2 = tolerance(s.w2(), s.hidden * s.out);
  ref.b2 = tolerance(s.b2(), s.out);
  ref.w1_at_kink = {ref.w1.atol + rate * ref.kink_w1, 0.0};
  ref.b1_at_kink = {ref.b1.atol + rate * ref.kink_b1, 0.0};
  ref.loss_tolerance = {0.0, kLossRtol};
  return ref;
}

Validation check_step(const DenseShape& s, const StepReference& ref, float loss,
                      const float* params_after) {
  Validation v = validate("loss", &loss, &ref.loss, 1, ref.loss_tolerance);
  if (!v.ok) return v;
  std::size_t count = 1;
  // W1 (in rows of `hidden`) and b1 (one row) by hidden unit: those at the kink, and the rest.
  const auto check_by_unit = [&](const std::string& what, std::size_t offset, std::size_t rows,
                                 const Tolerance& away, const Tolerance& at) {
    for (const std::uint8_t kink : {0, 1}) {
      std::vector<float> got;
      std::vector<double> want;
      for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t j = 0; j < s.hidden; ++j) {
          if (ref.at_kink[j] != kink) continue;
          got.push_back(params_after[offset + r * s.hidden + j]);
          want.push_back(ref.params[offset + r * s.hidden + j]);
        }
      v = validate(kink ? what + " (units at ReLU's kink)" : what, got, want, kink ? at : away);
      if (!v.ok) return false;
      count += got.size();
    }
    return true;
  };
  if (!check_by_unit("updated W1", s.w1(), s.in, ref.w1, ref.w1_at_kink)) return v;
  if (!check_by_unit("updated b1", s.b1(), 1, ref.b1, ref.b1_at_kink)) return v;
  for (const auto& [what, offset, n, tol] :
       {std::tuple{"updated W2", s.w2(), s.hidden * s.out, ref.w2},
        std::tuple{"updated b2", s.b2(), s.out, ref.b2}}) {
    v = validate(what, params_after + offset, ref.params.data() + offset, n, tol);
    if (!v.ok) return v;
    count += n;
  }
  v.count = count;
  v.what = "dense step";
  return v;
}

// ---- CPU step ----

CpuWorkspace::CpuWorkspace(const DenseShape& s)
    : h(s.batch * s.hidden),
      logits(s.batch * s.out),
      dlogits(s.batch * s.out),
      dh(s.batch * s.hidden),
      grad(s.params()),
      bias_sum(std::max(s.hidden, s.out)) {}

float step_cpu(const DenseShape& s, float* params, const float* x, const std::int32_t* labels,
               float lr, CpuWorkspace& ws) {
  const auto B = static_cast<blasint>(s.batch), I = static_cast<blasint>(s.in),
             H = static_cast<blasint>(s.hidden), O = static_cast<blasint>(s.out);
  const float* w1 = params + s.w1();
  const float* b1 = params + s.b1();
  const float* w2 = params + s.w2();
  const float* b2 = params + s.b2();
  float* h = ws.h.data();
  float* dl = ws.dlogits.data();
  float* dh = ws.dh.data();
  float* grad = ws.grad.data();

  // Forward: h = ReLU(x·W1 + b1), logits = h·W2 (b2 is added in the softmax loop).
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, B, H, I, 1.0f, x, I, w1, H, 0.0f, h, H);
  for (std::size_t r = 0; r < s.batch; ++r)
    for (std::size_t j = 0; j < s.hidden; ++j) {
      float& v = h[r * s.hidden + j];
      v = std::max(v + b1[j], 0.0f);
    }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, B, O, H, 1.0f, h, H, w2, O, 0.0f,
              ws.logits.data(), O);

  // Softmax cross-entropy, and dlogits = (p - onehot) / batch.
  const float inv_batch = 1.0f / static_cast<float>(s.batch);
  double loss = 0.0;
  for (std::size_t r = 0; r < s.batch; ++r) {
    const float* z = ws.logits.data() + r * s.out;
    float* d = dl + r * s.out;
    float top = -std::numeric_limits<float>::infinity();
    for (std::size_t k = 0; k < s.out; ++k) top = std::max(top, z[k] + b2[k]);
    float sum = 0.0f;
    for (std::size_t k = 0; k < s.out; ++k) {
      d[k] = std::exp(z[k] + b2[k] - top);
      sum += d[k];
    }
    const auto label = static_cast<std::size_t>(labels[r]);
    loss += std::log(sum) - (z[label] + b2[label] - top);
    const float inv_sum = 1.0f / sum;
    for (std::size_t k = 0; k < s.out; ++k) {
      d[k] = (d[k] * inv_sum - (k == label ? 1.0f : 0.0f)) * inv_batch;
    }
  }

  // Backward: dW2 = hᵀ·dlogits, db2 = Σ_rows dlogits, dh = dlogits·W2ᵀ masked by ReLU,
  // dW1 = xᵀ·dh, db1 = Σ_rows dh. Bias sums accumulate in float64 (free at these sizes).
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, H, O, B, 1.0f, h, H, dl, O, 0.0f,
              grad + s.w2(), O);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B, H, O, 1.0f, dl, O, w2, O, 0.0f, dh, H);
  for (std::size_t i = 0; i < ws.dh.size(); ++i) dh[i] = h[i] > 0.0f ? dh[i] : 0.0f;
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, I, H, B, 1.0f, x, I, dh, H, 0.0f,
              grad + s.w1(), H);
  const auto bias_grad = [&](const float* rows, std::size_t cols, float* out) {
    double* sum = ws.bias_sum.data();
    std::fill(sum, sum + cols, 0.0);
    for (std::size_t r = 0; r < s.batch; ++r)
      for (std::size_t c = 0; c < cols; ++c) sum[c] += rows[r * cols + c];
    for (std::size_t c = 0; c < cols; ++c) out[c] = static_cast<float>(sum[c]);
  };
  bias_grad(dl, s.out, grad + s.b2());
  bias_grad(dh, s.hidden, grad + s.b1());

  // SGD over the packed parameters.
  cblas_saxpy(static_cast<blasint>(s.params()), -lr, grad, 1, params, 1);
  return static_cast<float>(loss / static_cast<double>(s.batch));
}

Problem::Problem(std::size_t batch, std::uint64_t seed)
    : shape(mnist_shape(batch)),
      x(random_inputs(shape, seed)),
      labels(random_labels(shape, seed)),
      params(initial_params(shape, seed)),
      ref(step_reference(shape, params.data(), x.data(), labels.data(), kLearningRate)) {}

}  // namespace gapbench::dense
