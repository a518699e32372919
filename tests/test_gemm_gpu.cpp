#include "kernels/gemm_gpu.h"

#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <cstdio>
#include <string>

#include "kernels/base/data.h"
#include "tests/gpu_test.h"

namespace gapbench::gemm {
namespace {

// Every arithmetic of the math axis against the float64 reference with its own tolerance; an
// arithmetic this GPU's tensor cores lack skips with the reason.
TEST(GemmGpu, EachArithmeticMatchesTheReference) {
  GAPBENCH_SKIP_WITHOUT_GPU();
  const Stream stream;
  for (std::size_t n : {64, 257, 1024}) {
    const SquareProblem problem(n, 9);
    for (Arithmetic arithmetic :
         {Arithmetic::float32, Arithmetic::tf32, Arithmetic::fp16, Arithmetic::bf16}) {
      if (const auto reason = arithmetic_unavailable_reason(arithmetic)) {
        std::printf("skipped %s: %s\n", math_name(arithmetic), reason->c_str());
        continue;
      }
      CublasGemm gemm(problem, arithmetic, stream.get());
      const Validation v = gemm.check(problem, false);
      EXPECT_TRUE(v.ok) << math_name(arithmetic) << " n=" << n << ": " << v.message();
    }
  }
}

// fp16 and bf16 run as PyTorch runs them: a cublasLtMatmul with the heuristic's algorithm and a
// workspace, C in their own format, at sizes the tensor cores like and at odd ones; float32 and
// tf32 stay cuBLAS's.
TEST(GemmGpu, HalfPrecisionRunsThroughCublasLtAndMatchesTheReference) {
  GAPBENCH_SKIP_WITHOUT_GPU();
  const Stream stream;
  for (std::size_t n : {8, 129, 512}) {
    const SquareProblem problem(n, 13);
    for (Arithmetic arithmetic : {Arithmetic::fp16, Arithmetic::bf16}) {
      if (arithmetic_unavailable_reason(arithmetic)) continue;
      CublasGemm gemm(problem, arithmetic, stream.get());
      EXPECT_TRUE(gemm.cublas_lt()) << math_name(arithmetic) << " n=" << n;
      EXPECT_NE(gemm.description().find(std::string("C ") + math_name(arithmetic)),
                std::string::npos)
          << gemm.description();
      const Validation v = gemm.check(problem, false);
      EXPECT_TRUE(v.ok) << math_name(arithmetic) << " n=" << n << ": " << v.message();
      // The same algorithm again gives the same C (no state carried between calls).
      EXPECT_TRUE(gemm.check(problem, false).ok) << math_name(arithmetic) << " n=" << n;
    }
    for (Arithmetic arithmetic : {Arithmetic::float32, Arithmetic::tf32}) {
      if (arithmetic_unavailable_reason(arithmetic)) continue;
      const CublasGemm gemm(problem, arithmetic, stream.get());
      EXPECT_FALSE(gemm.cublas_lt()) << math_name(arithmetic);
      EXPECT_EQ(gemm.description(), "") << math_name(arithmetic);
    }
  }
}

// End to end (A and B in from host memory in the arithmetic's format, C back) in every mode.
TEST(GemmGpu, EndToEndMatchesTheReferenceInEachArithmetic) {
  GAPBENCH_SKIP_WITHOUT_GPU();
  const Stream stream;
  const SquareProblem problem(96, 9);
  for (Arithmetic arithmetic :
       {Arithmetic::float32, Arithmetic::tf32, Arithmetic::fp16, Arithmetic::bf16}) {
    if (arithmetic_unavailable_reason(arithmetic)) continue;
    CublasGemm gemm(problem, arithmetic, stream.get());
    const Validation v = gemm.check(problem, true);
    EXPECT_TRUE(v.ok) << math_name(arithmetic) << ": " << v.message();
  }
}

}  // namespace
}  // namespace gapbench::gemm
