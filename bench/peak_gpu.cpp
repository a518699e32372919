// Family `peak`, GPU ceiling: cuBLAS SGEMM in its default math mode (plain float32, no TF32), so
// it is the ceiling of the float32 work the other families do, timed with events on its stream.
#include <string>

#include "bench/peak.h"
#include "bench/peak_gpu.h"
#include "fixtures/setup_cache.h"

namespace gapbench {

void bench_sgemm_gpu(State& state, std::size_t n) {
  const SgemmData& data = cached<SgemmData>("sgemm:" + std::to_string(n), n);
  SgemmDevice& dev = cached<SgemmDevice>("sgemm:" + std::to_string(n), data);
  validate_once([&] { return dev.check(data, GpuTiming::kernel); });
  time_kernel(state, dev.stream, [&] { dev.multiply(n); });
  set_sgemm_counters(state, n);
}

}  // namespace gapbench
