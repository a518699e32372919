// Family `peak`: the machine's own ceilings. The bench workflow measures them once, into
// peak.json, and every family's file names that file (context `peak.results_file`), so "the
// vectorized pass reaches 85% of memory bandwidth" compares two numbers from one machine, one
// build and one workflow; a run of everything (a baseline's) carries them in its own file.
//
// Names: peak/<memcpy|triad|read>/cpu/mib:<region MiB>/real_time/threads:<n>, the memory each
//   row streams round, sized by kernels/membw.h's streaming_buffer_mib from
//   fixtures/cache_size.h's reachable cache; StreamingBuffers below says how it is made and
//   streamed (docs/reading-results.md#the-peak-family)
//   memcpy  one large memcpy per thread (its own slice of the buffers)
//   triad   STREAM's a = b + s*c
//   read    a streaming sum: reads only, the ceiling of a reduction (preprocess's sumsq reads
//           100 floats per float it writes); reads alone are slower than reads plus writes on
//           one core, so judge a reduction against this one
//   flops   the CPU's arithmetic peak, no library: register-resident loops in each vector
//           instruction set the CPU has (kernels/flops.h), one thread and every usable CPU.
//           Names: peak/flops/cpu/isa:<sse41|avx2|avx512|avx512_bf16>/math:<fp32|bf16>/...;
//           counter `flops` (an FMA lane counts 2). A set this CPU lacks, or that
//           GAPBENCH_MAX_CPU_ISA caps away, is skipped: "this CPU lacks ...". Every CPU row's
//           share of peak is read against the fastest fp32 one
//   sgemm   a library's float32 matrix multiply: OpenBLAS on the CPU (every thread, as OpenBLAS
//           runs by default), a row like the others with its own share of the flops peak; and
//           cuBLAS on the GPU (bench/peak_gpu.cpp), the GPU's measured float32 ceiling.
//           Names: peak/sgemm/<cpu|gpu>/n:<n>/...
// traffic_bytes_per_second counts memory traffic, reads plus writes (memcpy 2 bytes moved per
// byte copied, triad 3 arrays, read 1): the ceiling the preprocess family's counters compare
// with. bytes_per_second follows the one convention (fixtures/harness.h): memcpy's is the bytes
// copied, as for every copy; triad's and read's equal their traffic.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bench/overhead.h"
#include "bench/peak.h"
#include "fixtures/cache_size.h"
#include "fixtures/device_probe.h"
#include "fixtures/harness.h"
#include "fixtures/host_buffer.h"
#include "fixtures/machine.h"
#include "fixtures/setup_cache.h"
#include "kernels/base/data.h"
#include "kernels/flops.h"
#include "kernels/gemm.h"
#include "kernels/membw.h"

namespace gapbench {
namespace {

constexpr std::size_t kMiB = 1024 * 1024;

// The streaming rows' memory: one region, made once per size and shared by every memcpy, triad
// and read row at every thread count: allocating and first-touching gigabytes inside each body
// (Google Benchmark calls it once per repetition and again while it sizes the iteration count)
// cost a 480 MiB-L3 Xeon most of its run.
//
// One region, cut in as many parts as a row has arrays (read 1, memcpy 2, triad 3), so that every
// row's bytes come round only after the whole region has passed through the cache: why, and what
// it saves over STREAM's three arrays, in docs/reading-results.md#the-peak-family.
//
// An iteration streams one window of each part, at most kWindowMiB in all (each thread its share),
// the next window each time, round the thread's slice: an iteration costs the same on a 480
// MiB-L3 Xeon (a 2 GiB region) as on a 32 MiB-L3 VM (256 MiB, one window: the whole region).
constexpr std::size_t kWindowMiB = 256;

// Non-negative values in [0, 1), 24 bits each, from the element's index alone (a multiplicative
// hash: one multiply a value, at memory speed): any values do for a rate, and the same values
// whatever thread writes them.
void fill_pattern(float* out, std::size_t at, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    out[i] = static_cast<float>(((at + i) * 0x9E3779B97F4A7C15ull >> 16) & 0xFFFFFF) * 0x1.0p-24f;
  }
}

struct StreamingBuffers {
  std::size_t mib = 0;
  std::size_t floats = 0;
  // In huge pages: 4 KiB pages cost the first touch one fault per 4 KiB.
  std::unique_ptr<float[], HostBufferFree> region;

  explicit StreamingBuffers(std::size_t region_mib)
      : mib(region_mib), floats(region_mib * kMiB / sizeof(float)) {
    require_host_memory(floats * sizeof(float));
    region = huge_page_floats(floats);
    // Each worker its part, the first to touch it (on a NUMA machine, near the thread that
    // streams it). The values stay in [0, 1) where a row reads them: memcpy and triad write only
    // their first part, from parts nothing writes or memcpy fills with these same values.
    constexpr std::size_t kChunk = std::size_t{1} << 20;
    const std::size_t chunks = (floats + kChunk - 1) / kChunk;
    const std::size_t workers = std::min(usable_cores(), chunks);
    std::vector<std::thread> threads;
    for (std::size_t w = 0; w < workers; ++w) {
      threads.emplace_back([&, w] {
        for (std::size_t i = chunks * w / workers; i < chunks * (w + 1) / workers; ++i) {
          const std::size_t at = i * kChunk;
          fill_pattern(region.get() + at, at, std::min(kChunk, floats - at));
        }
      });
    }
    for (auto& t : threads) t.join();
  }

  // One window of each part (a row with fewer parts ignores the rest).
  struct Window {
    float* a;        // part 0: the one memcpy and triad write
    const float* b;  // part 1
    const float* c;  // part 2
    std::size_t n;
  };

  // One thread's round of windows over its slice of the region, cut in `parts` equal parts.
  // Where it stopped is kept per row shape and thread, so the next repetition goes on from
  // there rather than re-reading a window it has just read.
  class Round {
   public:
    Round(const StreamingBuffers& buffers, const State& state, std::size_t parts)
        : region_(buffers.region.get()) {
      const auto threads = static_cast<std::size_t>(state.threads());
      const auto t = static_cast<std::size_t>(state.thread_index());
      const std::size_t slice = buffers.floats / threads;
      part_ = slice / parts;
      begin_ = t * slice;
      n_ = std::min(part_, kWindowMiB * kMiB / sizeof(float) / threads / parts);
      windows_ = part_ / n_;
      const std::lock_guard<std::mutex> lock(buffers.cursors_mutex_);
      cursor_ = &buffers.cursors_[(parts * 4096 + threads) * 4096 + t];
    }
    std::size_t window_floats() const { return n_; }
    // The window this thread streams next, the round moved on past it.
    Window next() {
      float* at = region_ + begin_ + *cursor_ * n_;
      *cursor_ = (*cursor_ + 1) % windows_;
      return {at, at + part_, at + 2 * part_, n_};
    }

   private:
    float* region_;
    std::size_t begin_ = 0, part_ = 0, n_ = 0, windows_ = 1;
    std::size_t* cursor_ = nullptr;
  };

 private:
  // Each thread writes only its own entry; std::map's entries stay where they are as others are
  // added.
  mutable std::mutex cursors_mutex_;
  mutable std::map<std::size_t, std::size_t> cursors_;
};

// The buffers of `mib` MiB, made by the first body (of any thread) that asks; a body keeps its
// reference for its run. Freed with the set-up cache (after a failure and at the run's end).
std::shared_ptr<const StreamingBuffers> streaming_buffers(std::size_t mib) {
  static std::mutex mutex;
  static std::shared_ptr<const StreamingBuffers> current;
  static const bool registered =
      (detail::on_release([] { current.reset(); }), true);  // under no body's lock: bodies ended
  (void)registered;
  const std::lock_guard<std::mutex> lock(mutex);
  if (!current || current->mib != mib) {
    current.reset();  // one size at a time
    current = std::make_shared<const StreamingBuffers>(mib);
  }
  return current;
}

void bench_memcpy(State& state, std::size_t mib) {
  const auto buffers = streaming_buffers(mib);
  StreamingBuffers::Round round(*buffers, state, 2);
  validate_once([&] {
    const auto w = round.next();  // not timed again before the round comes back to it
    membw::copy(w.a, w.b, w.n);
    return validate("memcpy", w.a, w.b, w.n, Tolerance::exact());
  });
  for (auto _ : state) {
    const auto w = round.next();
    membw::copy(w.a, w.b, w.n);
    benchmark::ClobberMemory();
  }
  const std::size_t bytes = round.window_floats() * sizeof(float);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes));
  set_traffic_counter(state, 2 * bytes);
}

void bench_triad(State& state, std::size_t mib) {
  const auto buffers = streaming_buffers(mib);
  StreamingBuffers::Round round(*buffers, state, 3);
  constexpr float kScalar = 3.0f;
  validate_once([&] {
    const auto w = round.next();  // not timed again before the round comes back to it
    membw::triad(w.a, w.b, w.c, kScalar, w.n);
    std::vector<double> ref(w.n);
    membw::triad_reference(w.b, w.c, kScalar, w.n, ref.data());
    // One multiply-add in float32 on values up to 4: at most two roundings.
    return validate("triad", w.a, ref.data(), w.n, {1e-6, 2.5e-7});
  });
  for (auto _ : state) {
    const auto w = round.next();
    membw::triad(w.a, w.b, w.c, kScalar, w.n);
    benchmark::ClobberMemory();
  }
  const std::size_t bytes = round.window_floats() * sizeof(float);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * 3 * bytes));
  set_traffic_counter(state, 3 * bytes);
}

void bench_read(State& state, std::size_t mib) {
  const auto buffers = streaming_buffers(mib);
  StreamingBuffers::Round round(*buffers, state, 1);
  validate_once([&] {
    const auto w = round.next();  // not timed again before the round comes back to it
    const double got = membw::read_sum(w.a, w.n);
    const double ref = membw::read_sum_reference(w.a, w.n);
    // Float sums of 64 terms each (error <= 64 * 2^-24 relative), then added in float64.
    return validate("read_sum", &got, &ref, 1, {0.0, 64 * 0x1.0p-24});
  });
  for (auto _ : state) {
    const auto w = round.next();
    benchmark::DoNotOptimize(membw::read_sum(w.a, w.n));
  }
  const std::size_t bytes = round.window_floats() * sizeof(float);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes));
  set_traffic_counter(state, bytes);
}

// Steps of the loop per iteration: about a tenth of a millisecond on one core, so the loop's
// start (loading twelve registers) is noise and a quick run still takes hundreds of iterations.
constexpr std::int64_t kFlopsStepsPerCall = std::int64_t{1} << 16;
// Steps the check runs: its tolerance stays several times smaller than one step's change
// (kernels/flops.h), so a lost or repeated step fails it.
constexpr std::int64_t kFlopsCheckSteps = 256;

void bench_flops(State& state, flops::Isa isa) {
  if (const auto why = flops::unavailable_reason(isa)) throw Skip(*why);
  validate_once([&] { return flops::check(isa, kFlopsCheckSteps); });
  std::vector<float> out(flops::outputs(isa));
  for (auto _ : state) {
    flops::run(isa, kFlopsStepsPerCall, out.data());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  set_flops_counter(state, flops::flops_per_step(isa) * kFlopsStepsPerCall);
}

// The FMA loop's GFLOP/s on `threads` threads at once, the fastest of kBursts bursts of
// `steps` steps each (every thread runs the loop; the wall time covers them all).
double fma_gflops(flops::Isa isa, int threads, std::int64_t steps) {
  constexpr int kBursts = 5;
  std::vector<std::vector<float>> out(threads, std::vector<float>(flops::outputs(isa)));
  double best = 0.0;
  for (int b = 0; b < kBursts; ++b) {
    const double s = wall_seconds([&] {
      std::vector<std::thread> team;
      for (int t = 1; t < threads; ++t) {
        team.emplace_back([&, t] { flops::run(isa, steps, out[t].data()); });
      }
      flops::run(isa, steps, out[0].data());
      for (auto& member : team) member.join();
    });
    best = b == 0 ? s : std::min(best, s);
  }
  benchmark::DoNotOptimize(out.data());
  return threads * static_cast<double>(steps) * flops::flops_per_step(isa) / best * 1e-9;
}

// The widest float32 loop this CPU runs, GAPBENCH_MAX_CPU_ISA's cap obeyed.
flops::Isa widest_float32_isa() {
  flops::Isa widest = flops::Isa::sse41;
  for (flops::Isa isa : flops::kMeasured) {
    if (flops::isa_math(isa) == Arithmetic::float32 && !flops::unavailable_reason(isa)) {
      widest = isa;
    }
  }
  return widest;
}

}  // namespace

Ceilings probe_ceilings() {
  constexpr std::size_t kN = 1024;
  constexpr std::size_t kReadFloats = 256 * kMiB / sizeof(float);
  constexpr int kRuns = 10;
  constexpr double kWindowSeconds = 0.5;
  const gemm::SquareProblem d(kN, run_seed());
  std::vector<float> c(kN * kN);
  // Any values do for a rate; a constant fill costs a memset, not a random generator's pass.
  const auto x = huge_page_floats(kReadFloats);
  std::fill(x.get(), x.get() + kReadFloats, 0.5f);
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
      fastest([&] { benchmark::DoNotOptimize(membw::read_sum(x.get(), kReadFloats)); });
  out.sgemm_gflops = 2.0 * kN * kN * kN / gemm * 1e-9;
  out.read_gbps = kReadFloats * sizeof(float) / read * 1e-9;
  // Bursts of about 20 ms: long enough for a scheduler slice to show, short enough for five of
  // each to cost a fifth of a second.
  const flops::Isa isa = widest_float32_isa();
  require_valid(flops::check(isa, kFlopsCheckSteps));
  constexpr std::int64_t kCalibrationSteps = 1 << 16;
  const double per_step = wall_seconds([&] {
                            std::vector<float> out_lanes(flops::outputs(isa));
                            flops::run(isa, kCalibrationSteps, out_lanes.data());
                            benchmark::DoNotOptimize(out_lanes.data());
                          }) /
                          kCalibrationSteps;
  const auto steps = static_cast<std::int64_t>(std::clamp(0.02 / per_step, 1e4, 1e9));
  out.fma_threads = static_cast<int>(cpus_online());
  out.fma_one_gflops = fma_gflops(isa, 1, steps);
  out.fma_all_gflops = fma_gflops(isa, out.fma_threads, steps);
  return out;
}

GAPBENCH_FAMILY(peak) {
  // Buffers four times past the cache the measuring cores reach (256 MiB on small machines,
  // more where that cache is large; GAPBENCH_CACHE_BYTES overrides what the probe reads); one
  // thread and one per core this process may use (its affinity: a container's cpuset of 2 on a
  // 64-core host runs 2 threads, not 64 on 2 cores). A bad GAPBENCH_CACHE_BYTES or
  // GAPBENCH_MAX_CPU_ISA is refused here, before anything runs.
  const int all = static_cast<int>(usable_cores());
  const std::vector<int> thread_counts = all > 1 ? std::vector<int>{1, all} : std::vector<int>{1};
  const std::size_t floor_mib = membw::streaming_buffer_mib(measuring_cache().bytes);
  (void)flops::isa_cap();
  for (std::size_t mib : profile.pick<std::size_t>({floor_mib}, {floor_mib, 4 * floor_mib})) {
    for (int threads : thread_counts) {
      for (auto [variant, body] :
           {std::pair{"memcpy", &bench_memcpy}, std::pair{"triad", &bench_triad},
            std::pair{"read", &bench_read}}) {
        add_cpu(BenchName("peak", variant).axis("mib", static_cast<long long>(mib)),
                [=, body = body](State& st) { body(st, mib); })
            ->Threads(threads);
      }
    }
  }
  for (flops::Isa isa : flops::kMeasured) {
    for (int threads : thread_counts) {
      add_cpu(BenchName("peak", "flops")
                  .axis("isa", flops::isa_name(isa))
                  .axis("math", math_name(flops::isa_math(isa))),
              [=](State& st) { bench_flops(st, isa); })
          ->Threads(threads);
    }
  }
  // Large enough that OpenBLAS and cuBLAS run at their steady rate (on 2 CPU cores, 2048 takes
  // about 0.2 s; on an H100, 4096 about 3 ms).
  for (std::size_t n : profile.pick<std::size_t>({2048}, {1024, 2048})) {
    add_cpu(BenchName("peak", "sgemm").axis("n", static_cast<long long>(n)),
            [=](State& st) { overhead::sgemm_cpu_body(st, n, "sgemm"); });
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
