#include "kernels/gemm_gpu.h"

#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <cstdio>

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
