// Family `peak`, GPU ceiling: cuBLAS SGEMM in its default math mode (plain float32, no TF32), so
// it is the ceiling of the float32 work the other families do, timed with events on its stream.
#include <cuda_runtime_api.h>

#include "bench/peak.h"
#include "fixtures/cuda_libraries.h"
#include "fixtures/device_probe.h"
#include "fixtures/gpu_timer.h"
#include "fixtures/setup_cache.h"
#include "kernels/gemm.h"

namespace gapbench {
namespace {

struct SgemmDevice {
  explicit SgemmDevice(const SgemmData& d)
      : a(reserve(d.n)), b(d.n * d.n), c(d.n * d.n), blas(stream.get()) {
    GAPBENCH_CHECK(cudaMemcpyAsync(a.data(), d.a.data(), a.bytes(), cudaMemcpyHostToDevice,
                                   stream.get()));
    GAPBENCH_CHECK(cudaMemcpyAsync(b.data(), d.b.data(), b.bytes(), cudaMemcpyHostToDevice,
                                   stream.get()));
    stream.synchronize();
  }
  static std::size_t reserve(std::size_t n) {
    require_free_device_memory(3 * n * n * sizeof(float));
    return n * n;
  }
  // Row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ: pass B first, no transposes.
  void multiply(std::size_t n) {
    const int N = static_cast<int>(n);
    const float one = 1.0f, zero = 0.0f;
    GAPBENCH_CHECK(cublasSgemm(blas.get(), CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &one, b.data(), N,
                               a.data(), N, &zero, c.data(), N));
  }

  TimedStream stream;
  DeviceBuffer<float> a, b, c;
  CublasHandle blas;
};

}  // namespace

void bench_sgemm_gpu(State& state, std::size_t n) {
  const SgemmData& data = cached<SgemmData>("sgemm:" + std::to_string(n), n);
  SgemmDevice& dev = cached<SgemmDevice>("sgemm:" + std::to_string(n), data);
  validate_once([&] {
    dev.multiply(n);
    std::vector<float> c(n * n);
    GAPBENCH_CHECK(cudaMemcpyAsync(c.data(), dev.c.data(), dev.c.bytes(), cudaMemcpyDeviceToHost,
                                   dev.stream.get()));
    dev.stream.synchronize();
    return gemm::validate_sampled("sgemm", c.data(), data.a.data(), data.b.data(), n, n, n, 256);
  });
  time_kernel(state, dev.stream, [&] { dev.multiply(n); });
  set_sgemm_counters(state, n);
}

}  // namespace gapbench
