#include "kernels/gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/base/data.h"
#include "tests/narrow.h"

namespace gapbench {
namespace {

TEST(Gemm, OpenBlasMatchesTheReferenceOnOddShapes) {
  for (auto [m, n, k] : {std::tuple{1, 1, 1}, std::tuple{7, 13, 5}, std::tuple{33, 17, 65}}) {
    const auto a = uniform_floats(m * k, 1, 1), b = uniform_floats(k * n, 1, 2);
    std::vector<float> c(m * n, 0.0f);
    std::vector<double> ref(m * n);
    gemm::sgemm_cpu(a.data(), b.data(), c.data(), m, n, k);
    gemm::reference(a.data(), b.data(), m, n, k, ref.data());
    EXPECT_TRUE(validate("c", c.data(), ref.data(), c.size(), {1e-5, 1e-5}).ok);
    // Every element sampled when there are fewer elements than samples.
    const auto v = gemm::validate_sampled("c", c.data(), a.data(), b.data(), m, n, k, 1000);
    EXPECT_TRUE(v.ok) << v.message();
    EXPECT_EQ(v.count, static_cast<std::size_t>(m * n));
  }
}

TEST(Gemm, SampledValidationCatchesAWrongBlock) {
  const std::size_t n = 64;
  const auto a = uniform_floats(n * n, 3, 1), b = uniform_floats(n * n, 3, 2);
  std::vector<float> c(n * n);
  gemm::sgemm_cpu(a.data(), b.data(), c.data(), n, n, n);
  ASSERT_TRUE(gemm::validate_sampled("c", c.data(), a.data(), b.data(), n, n, n, 256).ok);
  // A skipped quarter of the k range: off by far more than rounding.
  std::vector<float> half(n * n);
  gemm::sgemm_cpu(a.data(), b.data(), half.data(), n, n, n);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j)
      for (std::size_t p = 0; p < n / 4; ++p) half[i * n + j] -= a[i * n + p] * b[p * n + j];
  EXPECT_FALSE(gemm::validate_sampled("c", half.data(), a.data(), b.data(), n, n, n, 256).ok);
}

// a and b read as `arithmetic` reads them, and their product in float32: what a correct GEMM in
// that arithmetic returns.
struct NarrowedProduct {
  std::vector<float> a, b, c;
};

NarrowedProduct narrowed_product(const std::vector<float>& a, const std::vector<float>& b,
                                 std::size_t n, Arithmetic arithmetic) {
  NarrowedProduct p{std::vector<float>(a.size()), std::vector<float>(b.size()),
                    std::vector<float>(n * n)};
  for (std::size_t i = 0; i < a.size(); ++i) {
    p.a[i] = narrowed(a[i], arithmetic);
    p.b[i] = narrowed(b[i], arithmetic);
  }
  gemm::sgemm_cpu(p.a.data(), p.b.data(), p.c.data(), n, n, n);
  return p;
}

// The tolerance of `arithmetic` (C stored as `stored`) still catches a dropped eighth of k and
// a half-scaled C.
void expect_real_errors_caught(const char* name, const NarrowedProduct& p,
                               const std::vector<float>& a, const std::vector<float>& b,
                               std::size_t n, Arithmetic arithmetic, Arithmetic stored) {
  std::vector<float> wrong = p.c;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j)
      for (std::size_t q = 0; q < n / 8; ++q) wrong[i * n + j] -= p.a[i * n + q] * p.b[q * n + j];
  EXPECT_FALSE(gemm::validate_sampled(name, wrong.data(), a.data(), b.data(), n, n, n, 256,
                                      arithmetic, stored)
                   .ok)
      << name << ": dropped k-slice";
  for (float& v : wrong = p.c) v *= 0.5f;
  EXPECT_FALSE(gemm::validate_sampled(name, wrong.data(), a.data(), b.data(), n, n, n, 256,
                                      arithmetic, stored)
                   .ok)
      << name << ": half-scaled";
}

// fp16 and bf16 products come back in their own format (as torch.mm returns a half-precision
// product): a C rounded to it passes with `stored`, and a dropped eighth of k or a half-scaled C
// still fails.
TEST(Gemm, StoredFormatsRoundingIsAdmittedAndRealErrorsStillCaught) {
  const std::size_t n = 192;
  // All-positive inputs: |C| = Σ|a·b|, the largest C can be against the bound.
  const auto a = uniform_floats(n * n, 5, 1, 0.0f, 1.0f);
  const auto b = uniform_floats(n * n, 5, 2, 0.0f, 1.0f);
  for (const Arithmetic arithmetic : {Arithmetic::fp16, Arithmetic::bf16}) {
    const char* name = math_name(arithmetic);
    NarrowedProduct p = narrowed_product(a, b, n, arithmetic);
    for (float& v : p.c) v = narrowed(v, arithmetic);
    const auto ok = gemm::validate_sampled(name, p.c.data(), a.data(), b.data(), n, n, n, 256,
                                           arithmetic, arithmetic);
    EXPECT_TRUE(ok.ok) << name << ": " << ok.message();
    expect_real_errors_caught(name, p, a, b, n, arithmetic, arithmetic);
  }
}

// Each arithmetic's tolerance admits a product of inputs read as that arithmetic reads them,
// which the float32 one does not, and still catches a dropped eighth of k and a half-scaled C.
TEST(Gemm, EachArithmeticsToleranceAdmitsItsRoundingAndCatchesRealErrors) {
  const std::size_t n = 256;
  const auto a = uniform_floats(n * n, 4, 1), b = uniform_floats(n * n, 4, 2);
  for (const Arithmetic arithmetic : {Arithmetic::tf32, Arithmetic::fp16, Arithmetic::bf16}) {
    const char* name = math_name(arithmetic);
    const NarrowedProduct p = narrowed_product(a, b, n, arithmetic);
    const auto ok =
        gemm::validate_sampled(name, p.c.data(), a.data(), b.data(), n, n, n, 256, arithmetic);
    EXPECT_TRUE(ok.ok) << name << ": " << ok.message();
    EXPECT_FALSE(gemm::validate_sampled(name, p.c.data(), a.data(), b.data(), n, n, n, 256).ok)
        << name << ": the float32 tolerance should not admit its rounding";
    expect_real_errors_caught(name, p, a, b, n, arithmetic, Arithmetic::float32);
  }
}

}  // namespace
}  // namespace gapbench
