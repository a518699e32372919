// Family `peak`, GPU ceilings: cuBLAS SGEMM in its default math mode (plain float32, no TF32), so
// it is the ceiling of the float32 work the other families do; and cuBLAS GEMM in each math
// mode (fp32, tf32, fp16, bf16), what mixed precision gains on this GPU (fp16 and bf16 through
// cuBLASLt as PyTorch runs them, C in their format; the label says so). Timed with events on
// the fixture's stream.
#include "bench/peak.h"
#include "fixtures/device_probe.h"
#include "fixtures/gpu_timer.h"
#include "fixtures/setup_cache.h"
#include "kernels/base/data.h"
#include "kernels/gemm_gpu.h"

namespace gapbench {

void bench_gemm_gpu(State& state, std::size_t n, Arithmetic arithmetic) {
  require_arithmetic(arithmetic);
  const auto& data = cached<gemm::SquareProblem>(gemm::SquareProblem::key(n), n, run_seed());
  auto& dev = cached<OnTimedStream<gemm::CublasGemm>>(
      gemm::SquareProblem::key(n) + ":" + math_name(arithmetic),
      gemm::CublasGemm::device_bytes(n, arithmetic), data, arithmetic);
  validate_once([&] { return dev.op.check(data, false); });
  time_kernel(
      state, dev.stream, kLibraryCallLaunches, [&] { dev.op.multiply(); }, dev.op.description());
  set_flops_counter(state, data.flops());
}

// The float32 GEMM is cuBLAS's SGEMM (kernels/gemm_gpu.h).
void bench_sgemm_gpu(State& state, std::size_t n) { bench_gemm_gpu(state, n, Arithmetic::float32); }

}  // namespace gapbench
