// Family `peak`, GPU ceiling: cuBLAS SGEMM in its default math mode (plain float32, no TF32), so
// it is the ceiling of the float32 work the other families do, timed with events on its stream.
#include "bench/peak.h"
#include "fixtures/gpu_timer.h"
#include "fixtures/setup_cache.h"
#include "kernels/base/data.h"
#include "kernels/gemm_gpu.h"

namespace gapbench {

void bench_sgemm_gpu(State& state, std::size_t n) {
  const auto& data = cached<gemm::SquareProblem>(gemm::SquareProblem::key(n), n, run_seed());
  auto& dev = cached<OnTimedStream<gemm::CublasSgemm>>(gemm::SquareProblem::key(n),
                                                       gemm::CublasSgemm::device_bytes(n), data);
  validate_once([&] { return dev.op.check(data, false); });
  time_kernel(state, dev.stream, [&] { dev.op.multiply(); });
  set_flops_counter(state, data.flops());
}

}  // namespace gapbench
