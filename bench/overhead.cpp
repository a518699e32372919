// Family `overhead`: why small work loses on a GPU. Launch, synchronize, transfer and start-up
// costs are fixed per call; the work has to be big enough to pay for them.
//
// - matmul (square SGEMM, n 16 to 4096) and dense (one training step of the MNIST-style
//   784 → 128 → 10 net, batch 32 to 2048): the CPU library against cuBLAS, as kernel time (the
//   data already on the device) and end to end (`_e2e`: from pageable host arrays, results back,
//   synchronized, as a framework's eager step pays). The report finds the size above which the
//   GPU wins.
// - launch: the price of one launch, one synchronize, and a CUDA graph's replay, on the host
//   clock: what a per-step loop of small kernels pays however fast the GPU is.
// - startup: what a process pays once (context, library handles, cuDNN's algorithm search, the
//   first launch with lazy module loading), in a fresh child process where it has to be.
// `gapbench --benchmark_list_tests` lists the names and axes (docs/reading-results.md#names).
//
// Validation before timing: matmul samples C against float64 dot products (kernels/gemm.h); the
// dense step's loss and updated parameters against a float64 step (kernels/dense.h); launches
// count themselves through the kernel's counter argument; a new cuBLAS or cuDNN handle does a
// small checked piece of work; a start-up child checks its context and that its launch ran.
#include "bench/overhead.h"

#include <algorithm>
#include <cstdio>
#include <exception>

#include "fixtures/child_probe.h"
#include "fixtures/device_probe.h"
#include "fixtures/setup_cache.h"
#include "kernels/base/data.h"
#include "kernels/gemm.h"

namespace gapbench::overhead {

namespace {

void bench_dense_cpu(State& state, std::size_t batch) {
  const auto& d = cached<dense::Problem>(dense::Problem::key(batch), batch, run_seed());
  dense::CpuWorkspace ws(d.shape);
  std::vector<float> params = d.params;
  validate_once([&] {
    const float loss = dense::step_cpu(d.shape, params.data(), d.x.data(), d.labels.data(),
                                       dense::kLearningRate, ws);
    return dense::check_step(d.shape, d.ref, loss, params.data());
  });
  // Every iteration trains on the same batch from where the last left off: the arithmetic of a
  // step does not depend on the values.
  for (auto _ : state) {
    benchmark::DoNotOptimize(dense::step_cpu(d.shape, params.data(), d.x.data(), d.labels.data(),
                                             dense::kLearningRate, ws));
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * batch));
}

BenchName named(const std::string& variant, const char* op, const char* axis, std::size_t value) {
  return BenchName("overhead", variant).axis("op", op).axis(axis, static_cast<long long>(value));
}

}  // namespace

void sgemm_cpu_body(State& state, std::size_t n, const std::string& what) {
  const auto& d = cached<gemm::SquareProblem>(gemm::SquareProblem::key(n), n, run_seed());
  std::vector<float> c(n * n, 0.0f);
  validate_once([&] {
    gemm::sgemm_cpu(d.a.data(), d.b.data(), c.data(), n, n, n);
    return d.check(what, c.data());
  });
  for (auto _ : state) {
    gemm::sgemm_cpu(d.a.data(), d.b.data(), c.data(), n, n, n);
    benchmark::ClobberMemory();
  }
  set_flops_counter(state, d.flops());
}

const char* name_of(LaunchWhat what) {
  switch (what) {
    case LaunchWhat::launch:
      return "launch";
    case LaunchWhat::launch_sync:
      return "launch_sync";
    case LaunchWhat::sync:
      return "sync";
    case LaunchWhat::graph:
      return "graph";
    case LaunchWhat::graph_sync:
      return "graph_sync";
  }
  return "?";
}

int run_startup_probe(int argc, char** argv) {
  const std::string what = argc == 1 ? argv[0] : "";
  if (what != kProbeContext && what != kProbeFirstLaunch) {
    std::fprintf(stderr, "gapbench startup-probe: usage: gapbench startup-probe %s|%s\n",
                 kProbeContext, kProbeFirstLaunch);
    return 2;
  }
  try {
#if GAPBENCH_WITH_CUDA
    const double seconds = startup_probe_gpu(what);
#else
    require_gpu();               // throws Skip("built without CUDA")
    const double seconds = 0.0;  // not reached
#endif
    std::printf("%s\n", probe::seconds_line(what, seconds).c_str());
    return probe::kExitOk;
  } catch (const Skip& skip) {
    std::printf("%s\n", probe::skipped_line(what, skip.what()).c_str());
    std::fprintf(stderr, "gapbench startup-probe: skipped: %s\n", skip.what());
    return probe::kExitSkipped;
  } catch (const std::exception& e) {
    std::printf("%s\n", probe::error_line(what, e.what()).c_str());
    std::fprintf(stderr, "gapbench startup-probe: %s\n", e.what());
    return probe::kExitError;
  }
}

}  // namespace gapbench::overhead

namespace gapbench {

GAPBENCH_FAMILY(overhead) {
  using namespace overhead;
  // CPU 4096 takes about a second on 2 cores: the quick profile stops at 1024. A kernel-timed
  // (held) GPU matmul of a few microseconds costs about 30 us of host time an iteration, 1.5-2.5 s
  // a row on an H200: quick holds them at the sweep's ends only, and times end to end (the
  // crossover with the CPU) at every size.
  const auto sizes = profile.pick<std::size_t>({16, 128, 512, 1024},
                                               {16, 32, 64, 128, 256, 512, 1024, 2048, 4096});
  const auto held_sizes = profile.full() ? sizes : std::vector<std::size_t>{16, 1024};
  for (std::size_t n : sizes) {
    const bool held = std::find(held_sizes.begin(), held_sizes.end(), n) != held_sizes.end();
    add_cpu(named("openblas", "matmul", "n", n), [=](State& st) {
      sgemm_cpu_body(st, n, "matmul");
    })->Unit(benchmark::kMicrosecond);
    for (GpuTiming timing : {GpuTiming::kernel, GpuTiming::end_to_end}) {
      if (timing == GpuTiming::kernel && !held) continue;
      // float32 as before (no math axis), then what each math mode changes about the crossover.
      for (Arithmetic math :
           {Arithmetic::float32, Arithmetic::tf32, Arithmetic::fp16, Arithmetic::bf16}) {
        BenchName name = named(gpu_variant("cublas", timing), "matmul", "n", n);
        if (math != Arithmetic::float32) name.axis("math", math_name(math));
        add_gpu(name, GAPBENCH_GPU_BODY(matmul_gpu(n, timing, math)))
            ->Unit(benchmark::kMicrosecond);
      }
    }
  }
  // The classic example's batch sizes, in both profiles (the sweep is the point).
  for (std::size_t batch : {32, 128, 512, 2048}) {
    add_cpu(named("openblas", "dense", "batch", batch), [=](State& st) {
      bench_dense_cpu(st, batch);
    })->Unit(benchmark::kMicrosecond);
    for (GpuTiming timing : {GpuTiming::kernel, GpuTiming::end_to_end}) {
      add_gpu(named(gpu_variant("cublas", timing), "dense", "batch", batch),
              GAPBENCH_GPU_BODY(dense_gpu(batch, timing)))
          ->Unit(benchmark::kMicrosecond);
    }
  }
  for (LaunchWhat what : {LaunchWhat::launch, LaunchWhat::launch_sync, LaunchWhat::sync,
                          LaunchWhat::graph, LaunchWhat::graph_sync}) {
    add_gpu(BenchName("overhead", "launch").axis("what", name_of(what)),
            GAPBENCH_GPU_BODY(launch_gpu(what)))
        ->Unit(benchmark::kMicrosecond);
  }
  // Start-up. A context takes tens of milliseconds or more, so the profile's minimum time needs
  // few children; a first launch takes far less than the child process around it, so its
  // children are counted out (Google Benchmark then adds /iterations:3 to its name).
  const auto startup = [](const char* what) {
    return BenchName("overhead", "startup").axis("what", what);
  };
  add_gpu(startup(kProbeContext), GAPBENCH_GPU_BODY(startup_child_gpu(kProbeContext)))
      ->Unit(benchmark::kMillisecond);
  add_gpu(startup("cublas_handle"), GAPBENCH_GPU_BODY(cublas_handle_gpu()))
      ->Unit(benchmark::kMillisecond);
  add_gpu(startup("cudnn_handle"), GAPBENCH_GPU_BODY(cudnn_handle_gpu()))
      ->Unit(benchmark::kMillisecond);
  add_gpu(startup("cudnn_find_conv"), GAPBENCH_GPU_BODY(cudnn_find_conv_gpu()))
      ->Unit(benchmark::kMillisecond);
  add_gpu(startup(kProbeFirstLaunch), GAPBENCH_GPU_BODY(startup_child_gpu(kProbeFirstLaunch)))
      ->Unit(benchmark::kMillisecond)
      ->Iterations(kFirstLaunchChildren);
}

}  // namespace gapbench
