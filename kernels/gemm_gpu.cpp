#include "kernels/gemm_gpu.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "kernels/base/narrow_gpu.h"

namespace gapbench::gemm {
namespace {

// What cuBLAS asks for on Hopper (4 MiB suffices before it), and PyTorch gives its cuBLASLt
// matmuls there.
constexpr std::size_t kLtWorkspaceBytes = 32u << 20;

bool half_data(Arithmetic arithmetic) { return input_bytes(arithmetic) == 2; }

// A and B's element type; C's too for fp16 and bf16 (float32 otherwise).
cudaDataType_t input_type(Arithmetic arithmetic) {
  switch (arithmetic) {
    case Arithmetic::fp16:
      return CUDA_R_16F;
    case Arithmetic::bf16:
      return CUDA_R_16BF;
    case Arithmetic::float32:
    case Arithmetic::tf32:
      break;
  }
  return CUDA_R_32F;
}

// Bytes of one C element: C is held in the input format (fp16, bf16) or float32.
std::size_t output_bytes(Arithmetic arithmetic) { return input_bytes(arithmetic); }

template <class Owner, class Create, class... Args>
Owner make_lt(Create create, Args... args) {
  typename Owner::pointer raw = nullptr;
  GAPBENCH_CHECK(create(&raw, args...));
  return Owner(raw);
}

}  // namespace

CublasGemm::CublasGemm(const SquareProblem& problem, Arithmetic arithmetic, cudaStream_t stream)
    : n_(problem.n),
      stream_(stream),
      arithmetic_(arithmetic),
      host_a16_(half_data(arithmetic) ? to_16bit(problem.a, arithmetic)
                                      : std::vector<std::uint16_t>()),
      host_b16_(half_data(arithmetic) ? to_16bit(problem.b, arithmetic)
                                      : std::vector<std::uint16_t>()),
      a_(n_ * n_ * input_bytes(arithmetic)),
      b_(n_ * n_ * input_bytes(arithmetic)),
      c_(n_ * n_ * output_bytes(arithmetic)),
      blas_(stream),
      host_c_(n_ * n_ * output_bytes(arithmetic)) {
  if (half_data(arithmetic_)) plan_lt();
  upload(problem);
  GAPBENCH_CHECK(cudaStreamSynchronize(stream_));
}

std::size_t CublasGemm::device_bytes(std::size_t n, Arithmetic arithmetic) {
  return n * n * (2 * input_bytes(arithmetic) + output_bytes(arithmetic)) +
         (half_data(arithmetic) ? kLtWorkspaceBytes : 0);
}

// As PyTorch's cuBLASLt GEMM: float32 compute and scale, no transposes, every matrix n×n with
// leading dimension n (column-major: the row-major product runs as Cᵀ = Bᵀ·Aᵀ), the workspace
// as the heuristic's limit, and its first answer.
void CublasGemm::plan_lt() {
  using Desc = CudaOwner<cublasLtMatmulDesc_t, detail::DestroyLtMatmulDesc>;
  using Layout = CudaOwner<cublasLtMatrixLayout_t, detail::DestroyLtLayout>;
  const cudaDataType_t type = input_type(arithmetic_);
  const auto n = static_cast<std::uint64_t>(n_);
  const auto ld = static_cast<std::int64_t>(n_);
  workspace_ = DeviceBuffer<unsigned char>(kLtWorkspaceBytes);
  lt_.emplace();
  lt_desc_ = make_lt<Desc>(cublasLtMatmulDescCreate, cublas_compute_type(arithmetic_), CUDA_R_32F);
  lt_a_ = make_lt<Layout>(cublasLtMatrixLayoutCreate, type, n, n, ld);
  lt_b_ = make_lt<Layout>(cublasLtMatrixLayoutCreate, type, n, n, ld);
  lt_c_ = make_lt<Layout>(cublasLtMatrixLayoutCreate, type, n, n, ld);

  const auto preference =
      make_lt<CudaOwner<cublasLtMatmulPreference_t, detail::DestroyLtPreference>>(
          cublasLtMatmulPreferenceCreate);
  const std::uint64_t workspace = workspace_.bytes();
  GAPBENCH_CHECK(cublasLtMatmulPreferenceSetAttribute(
      preference.get(), CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof workspace));
  cublasLtMatmulHeuristicResult_t result{};
  int returned = 0;
  GAPBENCH_CHECK(cublasLtMatmulAlgoGetHeuristic(lt_->get(), lt_desc_.get(), lt_a_.get(),
                                                lt_b_.get(), lt_c_.get(), lt_c_.get(),
                                                preference.get(), 1, &result, &returned));
  lt_algo_found_ = returned > 0 && result.state == CUBLAS_STATUS_SUCCESS;
  if (lt_algo_found_) lt_algo_ = result.algo;
}

// From pageable host memory, in the arithmetic's input format (fp16/bf16 converted once, at
// construction, as a mixed-precision model's tensors already are).
void CublasGemm::upload(const SquareProblem& problem) {
  const bool half = half_data(arithmetic_);
  const void* a = half ? static_cast<const void*>(host_a16_.data()) : problem.a.data();
  const void* b = half ? static_cast<const void*>(host_b16_.data()) : problem.b.data();
  GAPBENCH_CHECK(cudaMemcpyAsync(a_.data(), a, a_.bytes(), cudaMemcpyHostToDevice, stream_));
  GAPBENCH_CHECK(cudaMemcpyAsync(b_.data(), b, b_.bytes(), cudaMemcpyHostToDevice, stream_));
}

void CublasGemm::download() { copy_to_host(host_c_.data(), c_, stream_); }

// Row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ: pass B first, no transposes.
void CublasGemm::multiply() {
  const int n = static_cast<int>(n_);
  const float one = 1.0f, zero = 0.0f;
  if (arithmetic_ == Arithmetic::float32) {
    GAPBENCH_CHECK(cublasSgemm(blas_.get(), CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one,
                               reinterpret_cast<const float*>(b_.data()), n,
                               reinterpret_cast<const float*>(a_.data()), n, &zero,
                               reinterpret_cast<float*>(c_.data()), n));
    return;
  }
  if (lt_algo_found_) {
    GAPBENCH_CHECK(cublasLtMatmul(lt_->get(), lt_desc_.get(), &one, b_.data(), lt_a_.get(),
                                  a_.data(), lt_b_.get(), &zero, c_.data(), lt_c_.get(), c_.data(),
                                  lt_c_.get(), &lt_algo_, workspace_.data(), workspace_.bytes(),
                                  stream_));
    return;
  }
  const cudaDataType_t in = input_type(arithmetic_);
  const cudaDataType_t out = half_data(arithmetic_) ? in : CUDA_R_32F;
  GAPBENCH_CHECK(cublasGemmEx(blas_.get(), CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, b_.data(), in,
                              n, a_.data(), in, n, &zero, c_.data(), out, n,
                              cublas_compute_type(arithmetic_), CUBLAS_GEMM_DEFAULT));
}

std::string CublasGemm::description() const {
  if (!half_data(arithmetic_)) return "";
  const std::string c = std::string(", C ") + math_name(arithmetic_);
  if (!lt_algo_found_) return "cublasGemmEx" + c;
  return "cublasLt heuristic, " + std::to_string(workspace_.bytes() >> 20) + " MiB workspace" + c;
}

void CublasGemm::end_to_end(const SquareProblem& problem) {
  upload(problem);
  multiply();
  download();
  GAPBENCH_CHECK(cudaStreamSynchronize(stream_));
}

Validation CublasGemm::check(const SquareProblem& problem, bool end_to_end_run) {
  poison(c_, stream_);
  std::fill(host_c_.begin(), host_c_.end(), static_cast<unsigned char>(kPoisonByte));
  if (end_to_end_run) {
    end_to_end(problem);
  } else {
    multiply();
    download();
    GAPBENCH_CHECK(cudaStreamSynchronize(stream_));
  }
  std::vector<float> c(n_ * n_);
  if (half_data(arithmetic_)) {
    std::vector<std::uint16_t> bits(n_ * n_);
    std::memcpy(bits.data(), host_c_.data(), host_c_.size());
    c = from_16bit(bits.data(), bits.size(), arithmetic_);
  } else {
    std::memcpy(c.data(), host_c_.data(), host_c_.size());
  }
  // C comes back in the arithmetic's own format: one more rounding, of that format.
  const Arithmetic stored = half_data(arithmetic_) ? arithmetic_ : Arithmetic::float32;
  return problem.check(std::string("gemm ") + math_name(arithmetic_), c.data(), arithmetic_,
                       stored);
}

}  // namespace gapbench::gemm
