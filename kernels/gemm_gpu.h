// cuBLAS GEMM of a gemm::SquareProblem (kernels/gemm.h) on the caller's stream, in each
// arithmetic of the `math` axis:
//   float32  cublasSgemm in cuBLAS's default math mode: plain float32, no TF32, C float32. The
//            ceiling peak/sgemm/gpu and overhead's matmul (kernel and end-to-end) time it.
//   tf32     cublasGemmEx on the float32 data with CUBLAS_COMPUTE_32F_FAST_TF32: tensor cores
//            read A and B as TF32 (what TensorFlow does to float32 matmuls on Ampere and newer),
//            C float32.
//   fp16     A, B and C held in float16 (or bfloat16), float32 accumulation and scale
//   bf16     (CUBLAS_COMPUTE_32F, CUDA_R_32F), as torch.mm runs a half-precision matmul and a
//            framework's mixed precision its matmuls; A and B converted (rounded to nearest)
//            once, here. Run as PyTorch runs it through cuBLASLt: cublasLtMatmul with a 32 MiB
//            workspace (what cuBLAS asks for on Hopper) and the first algorithm of
//            cublasLtMatmulAlgoGetHeuristic, chosen once at construction. Should the heuristic
//            offer none, cublasGemmEx with the same types runs instead (cublas_lt() says which).
// CUDA builds only.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernels/base/cuda_libraries.h"
#include "kernels/base/gpu_memory.h"
#include "kernels/gemm.h"

namespace gapbench::gemm {

namespace detail {
struct DestroyLtMatmulDesc {
  void operator()(cublasLtMatmulDesc_t d) const noexcept {
    GAPBENCH_CHECK_NOTHROW(cublasLtMatmulDescDestroy(d));
  }
};
struct DestroyLtLayout {
  void operator()(cublasLtMatrixLayout_t d) const noexcept {
    GAPBENCH_CHECK_NOTHROW(cublasLtMatrixLayoutDestroy(d));
  }
};
struct DestroyLtPreference {
  void operator()(cublasLtMatmulPreference_t p) const noexcept {
    GAPBENCH_CHECK_NOTHROW(cublasLtMatmulPreferenceDestroy(p));
  }
};
}  // namespace detail

class CublasGemm {
 public:
  // Allocates A, B and C and uploads A and B (synchronously, before returning); for fp16 and
  // bf16 also the workspace, the cuBLASLt descriptors and the algorithm. The stream comes last,
  // as fixtures' OnTimedStream passes it.
  CublasGemm(const SquareProblem& problem, Arithmetic arithmetic, cudaStream_t stream);
  CublasGemm(const SquareProblem& problem, cudaStream_t stream)
      : CublasGemm(problem, Arithmetic::float32, stream) {}

  // Device memory it allocates for an n×n problem (for require_free_device_memory).
  static std::size_t device_bytes(std::size_t n, Arithmetic arithmetic = Arithmetic::float32);

  // C = A·B, asynchronous on the stream.
  void multiply();
  // What a framework user pays for one product of host matrices: A and B in from pageable host
  // memory (held there in the arithmetic's input format, as a mixed-precision model's tensors
  // are), the multiply, C back (in its format), synchronize.
  void end_to_end(const SquareProblem& problem);
  // One product, alone or end to end, into a poisoned C (all-ones bits are a NaN in every
  // format), checked with the tolerance of the arithmetic and of C's format.
  Validation check(const SquareProblem& problem, bool end_to_end);

  Arithmetic arithmetic() const { return arithmetic_; }
  // Whether multiply() is a cublasLtMatmul (fp16 and bf16, when the heuristic offered one).
  bool cublas_lt() const { return lt_algo_found_; }
  // For a benchmark label: "" for float32 and tf32; "cublasLt heuristic, 32 MiB workspace,
  // C fp16" (or "cublasGemmEx, C fp16" where the heuristic offered nothing).
  std::string description() const;

 private:
  void upload(const SquareProblem& problem);
  void download();
  // The cuBLASLt descriptors and the heuristic's first algorithm (fp16 and bf16).
  void plan_lt();

  std::size_t n_;
  cudaStream_t stream_;
  Arithmetic arithmetic_;
  std::vector<std::uint16_t> host_a16_, host_b16_;  // fp16 / bf16 only: A and B converted
  DeviceBuffer<unsigned char> a_, b_;  // n×n elements in the arithmetic's input format
  DeviceBuffer<unsigned char> c_;      // n×n elements in C's format (output_bytes)
  CublasHandle blas_;
  std::vector<unsigned char> host_c_;  // C as it comes back, in its format
  // fp16 / bf16 only (plan_lt):
  DeviceBuffer<unsigned char> workspace_;
  std::optional<CublasLtHandle> lt_;
  CudaOwner<cublasLtMatmulDesc_t, detail::DestroyLtMatmulDesc> lt_desc_;
  CudaOwner<cublasLtMatrixLayout_t, detail::DestroyLtLayout> lt_a_, lt_b_, lt_c_;
  cublasLtMatmulAlgo_t lt_algo_{};
  bool lt_algo_found_ = false;
};

}  // namespace gapbench::gemm
