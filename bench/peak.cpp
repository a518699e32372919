// Family `peak`: the machine's own ceilings, measured in the same run as the family they judge
// (each family's bench test runs `peak/` beside itself), so "the vectorized pass reaches 85% of
// memory bandwidth" compares two numbers from one machine, one build, one moment.
//
// Names: peak/<memcpy|triad|read>/cpu/mib:<buffer MiB>/real_time/threads:<n>, the buffer four
//   times the last-level cache and at least 256 MiB (kernels/membw.h: streaming_buffer_mib)
//   memcpy  one large memcpy per thread (its own slice of the buffers)
//   triad   STREAM's a = b + s*c
//   read    a streaming sum: reads only, the ceiling of a reduction (preprocess's sumsq reads
//           100 floats per float it writes); reads alone are slower than reads plus writes on
//           one core, so judge a reduction against this one
//   sgemm   the machine's float32 matrix-multiply ceiling: OpenBLAS on the CPU (every thread, as
//           OpenBLAS runs by default) and cuBLAS on the GPU (bench/peak_gpu.cpp); conv and lstm
//           judge their library variants against it. Names: peak/sgemm/<cpu|gpu>/n:<n>/...
// traffic_bytes_per_second counts memory traffic, reads plus writes (memcpy 2 bytes moved per
// byte copied, triad 3 arrays, read 1): the ceiling the preprocess family's counters compare
// with. bytes_per_second follows the one convention (fixtures/harness.h): memcpy's is the bytes
// copied, as for every copy; triad's and read's equal their traffic.
#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "bench/peak.h"
#include "fixtures/harness.h"
#include "fixtures/machine.h"
#include "fixtures/setup_cache.h"
#include "kernels/base/data.h"
#include "kernels/gemm.h"
#include "kernels/membw.h"

namespace gapbench {
namespace {

constexpr std::size_t kMiB = 1024 * 1024;

// One thread's slice of `total_floats`.
std::size_t slice_of(std::size_t total_floats, const State& state) {
  return total_floats / static_cast<std::size_t>(state.threads());
}

void bench_memcpy(State& state, std::size_t mib) {
  const std::size_t n = slice_of(mib * kMiB / sizeof(float), state);
  const std::vector<float> src = uniform_floats(n, run_seed(), 100 + state.thread_index());
  std::vector<float> dst(n, 0.0f);
  validate_once([&] {
    membw::copy(dst.data(), src.data(), n);
    return validate("memcpy", dst, src, Tolerance::exact());
  });
  for (auto _ : state) {
    membw::copy(dst.data(), src.data(), n);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * n * sizeof(float)));
  set_traffic_counter(state, 2 * n * sizeof(float));
}

void bench_triad(State& state, std::size_t mib) {
  const std::size_t n = slice_of(mib * kMiB / sizeof(float), state);
  const std::vector<float> b = uniform_floats(n, run_seed(), 200 + state.thread_index());
  const std::vector<float> c = uniform_floats(n, run_seed(), 300 + state.thread_index());
  std::vector<float> a(n, 0.0f);
  constexpr float kScalar = 3.0f;
  validate_once([&] {
    membw::triad(a.data(), b.data(), c.data(), kScalar, n);
    std::vector<double> ref(n);
    membw::triad_reference(b.data(), c.data(), kScalar, n, ref.data());
    // One multiply-add in float32 on values up to 4: at most two roundings.
    return validate("triad", a, ref, {1e-6, 2.5e-7});
  });
  for (auto _ : state) {
    membw::triad(a.data(), b.data(), c.data(), kScalar, n);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * 3 * n * sizeof(float)));
  set_traffic_counter(state, 3 * n * sizeof(float));
}

void bench_read(State& state, std::size_t mib) {
  const std::size_t n = slice_of(mib * kMiB / sizeof(float), state);
  // Non-negative values: the sum has no cancellation, so a relative tolerance is meaningful.
  const std::vector<float> x =
      uniform_floats(n, run_seed(), 400 + state.thread_index(), 0.0f, 1.0f);
  validate_once([&] {
    const double got = membw::read_sum(x.data(), n);
    const double ref = membw::read_sum_reference(x.data(), n);
    // Float sums of 64 terms each (error <= 64 * 2^-24 relative), then added in float64.
    return validate("read_sum", &got, &ref, 1, {0.0, 64 * 0x1.0p-24});
  });
  for (auto _ : state) benchmark::DoNotOptimize(membw::read_sum(x.data(), n));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * n * sizeof(float)));
  set_traffic_counter(state, n * sizeof(float));
}

void bench_sgemm_cpu(State& state, std::size_t n) {
  const auto& d = cached<gemm::SquareProblem>(gemm::SquareProblem::key(n), n, run_seed());
  std::vector<float> c(n * n, 0.0f);
  validate_once([&] {
    gemm::sgemm_cpu(d.a.data(), d.b.data(), c.data(), n, n, n);
    return d.check("sgemm", c.data());
  });
  for (auto _ : state) {
    gemm::sgemm_cpu(d.a.data(), d.b.data(), c.data(), n, n, n);
    benchmark::ClobberMemory();
  }
  set_flops_counter(state, d.flops());
}

}  // namespace

Ceilings probe_ceilings() {
  constexpr std::size_t kN = 1024;
  constexpr std::size_t kReadFloats = 256 * kMiB / sizeof(float);
  constexpr int kRuns = 10;
  constexpr double kWindowSeconds = 0.5;
  const gemm::SquareProblem d(kN, run_seed());
  std::vector<float> c(kN * kN);
  const std::vector<float> x = uniform_floats(kReadFloats, run_seed(), 600, 0.0f, 1.0f);
  // A ceiling is the best the machine gives: the fastest run, after a warm-up (caches, OpenBLAS's
  // threads, page faults), of at least ten spread over half a second. On the 2-core CI VM a
  // median moved by 40% when something took a core for a moment (the kernel reclaiming the
  // gigabytes a run just freed, a neighbour); the fastest over a window outlasts such moments.
  const auto fastest = [](const std::function<void()>& fn) {
    fn();
    double best = 0.0;
    double spent = 0.0;
    for (int i = 0; i < kRuns || spent < kWindowSeconds; ++i) {
      const double s = wall_seconds(fn);
      best = i == 0 ? s : std::min(best, s);
      spent += s;
    }
    return best;
  };
  Ceilings out;
  const double gemm =
      fastest([&] { gemm::sgemm_cpu(d.a.data(), d.b.data(), c.data(), kN, kN, kN); });
  const double read =
      fastest([&] { benchmark::DoNotOptimize(membw::read_sum(x.data(), kReadFloats)); });
  out.sgemm_gflops = 2.0 * kN * kN * kN / gemm * 1e-9;
  out.read_gbps = kReadFloats * sizeof(float) / read * 1e-9;
  return out;
}

GAPBENCH_FAMILY(peak) {
  // Buffers well past the last-level cache, all of it (256 MiB on small machines, more where
  // the cache is large); one thread and one per core this process may use (its affinity: a
  // container's cpuset of 2 on a 64-core host runs 2 threads, not 64 on 2 cores).
  const int all = static_cast<int>(usable_cores());
  const std::size_t floor_mib = membw::streaming_buffer_mib(last_level_cache_bytes());
  for (std::size_t mib : profile.pick<std::size_t>({floor_mib}, {floor_mib, 4 * floor_mib})) {
    for (int threads : all > 1 ? std::vector<int>{1, all} : std::vector<int>{1}) {
      for (auto [variant, body] :
           {std::pair{"memcpy", &bench_memcpy}, std::pair{"triad", &bench_triad},
            std::pair{"read", &bench_read}}) {
        add_cpu(BenchName("peak", variant).axis("mib", static_cast<long long>(mib)),
                [=, body = body](State& st) { body(st, mib); })
            ->Threads(threads);
      }
    }
  }
  // Large enough that OpenBLAS and cuBLAS run at their steady rate (on 2 CPU cores, 2048 takes
  // about 0.2 s; on an H100, 4096 about 3 ms).
  for (std::size_t n : profile.pick<std::size_t>({2048}, {1024, 2048})) {
    add_cpu(BenchName("peak", "sgemm").axis("n", static_cast<long long>(n)),
            [=](State& st) { bench_sgemm_cpu(st, n); });
  }
  for (std::size_t n : profile.pick<std::size_t>({4096}, {2048, 4096, 8192})) {
    add_gpu(BenchName("peak", "sgemm").axis("n", static_cast<long long>(n)),
            GAPBENCH_GPU_BODY([=](State& st) { bench_sgemm_gpu(st, n); }));
  }
  // What the precision a framework computes in is worth here: the same product on tensor cores
  // in each math mode. Skipped with the reason on a GPU whose tensor cores lack the mode.
  for (std::size_t n : profile.pick<std::size_t>({4096}, {2048, 4096, 8192})) {
    for (Arithmetic math :
         {Arithmetic::float32, Arithmetic::tf32, Arithmetic::fp16, Arithmetic::bf16}) {
      add_gpu(BenchName("peak", "gemm")
                  .axis("n", static_cast<long long>(n))
                  .axis("math", math_name(math)),
              GAPBENCH_GPU_BODY([=](State& st) { bench_gemm_gpu(st, n, math); }));
    }
  }
}

}  // namespace gapbench
