// Family `overhead`: why small work loses on a GPU. Launch, synchronize, transfer and start-up
// costs are fixed per call; the work has to be big enough to pay for them.
//
// Names (GPU timings: kernel = CUDA events around the GPU work on the fixture's stream;
// e2e = host wall time of everything a framework user pays, see fixtures/gpu_timer.h):
//
//   overhead/openblas/cpu/op:matmul/n:<n>           square SGEMM, OpenBLAS (all its threads)
//   overhead/cublas/gpu/op:matmul/n:<n>             cuBLAS SGEMM, kernel time
//   overhead/cublas_e2e/gpu/op:matmul/n:<n>         copy A and B in from pageable host memory,
//                                                   multiply, copy C out, synchronize
//     n: 16 .. 4096 in powers of 2 (quick: 16, 128, 512, 1024). Counters: flops (rate); e2e also
//     overhead_share. The report finds the size above which each GPU series beats the CPU.
//
//   overhead/openblas/cpu/op:dense/batch:<b>        one training step of the MNIST-style net
//   overhead/cublas/gpu/op:dense/batch:<b>          (784 → 128 ReLU → 10, softmax cross-entropy,
//   overhead/cublas_e2e/gpu/op:dense/batch:<b>      forward + backward + SGD); b: 32, 128, 512,
//                                                   2048. items_per_second = samples/s.
//     cublas: kernel time of the step with its batch already on the device (from the first GEMM
//     to the update, including any gaps while the host enqueues the step's 12 calls);
//     cublas_e2e: the batch (inputs and labels) copied in from pageable host memory, the step,
//     and the loss copied back, then a synchronize: a training loop that feeds from host arrays
//     and reads the loss every step. Counter overhead_share as for matmul.
//
//   overhead/launch/gpu/what:<w>                    microseconds; host wall time
//     launch       back-to-back launches of an empty one-thread kernel, 1000 per timed batch
//                  then one synchronize: time per launch (throughput; items_per_second =
//                  launches/s)
//     launch_sync  one launch, then cudaStreamSynchronize: the latency of a dependent step
//     sync         cudaStreamSynchronize on an idle stream: the round trip alone
//     graph        the `launch` pattern (1000 kernels) captured once into a CUDA graph, replayed
//                  with one cudaGraphLaunch then a synchronize: time per kernel
//     graph_sync   a one-kernel graph launched, then synchronized: graph launch latency
//
//   overhead/startup/gpu/what:<w>                   milliseconds
//     context        CUDA context creation: cudaSetDevice(0) + cudaFree(0) as the first CUDA
//                    call of a fresh process (driver load and initialisation included), one child
//                    process (`gapbench startup-probe context`) per iteration
//     cublas_handle  cublasCreate, in this process after its context exists and after a first
//                    handle (the validation's) was made; each iteration creates one handle
//                    (timed) and destroys it (not timed)
//     cudnn_handle   cudnnCreate, the same way
//     cudnn_find_conv  cudnnFindConvolutionForwardAlgorithm for ResNet's 3x3 64->64 56x56 layer
//                    at batch 8 (kernels/conv_cudnn.h): what a framework's first step pays per
//                    new layer shape with autotuning on; its pick is validated, and named in the
//                    label
//     first_launch   the first launch (+ synchronize) of a kernel in a fresh process whose
//                    context already exists: with lazy module loading (CUDA_MODULE_LOADING=LAZY,
//                    the default since CUDA 12.2) it loads the kernel's module. One child per
//                    iteration, 3 per repetition: Google Benchmark names this one
//                    overhead/startup/gpu/what:first_launch/iterations:3/manual_time. Under
//                    CUDA_MODULE_LOADING=EAGER the module loads with the context instead.
//
// Validation before timing: matmul samples 256 elements of C against float64 dot products
// (kernels/gemm.h); the dense step's loss and updated parameters against a float64 step
// (kernels/dense.h, tolerance explained there); launches count themselves through the kernel's
// counter argument; a new cuBLAS handle runs a small SGEMM and a new cuDNN handle fills a tensor,
// both checked; a start-up child checks its context, and that its launch ran.
#include "bench/overhead.h"

#include <cstdio>
#include <exception>

#include "bench/peak.h"
#include "fixtures/child_probe.h"
#include "fixtures/data.h"
#include "fixtures/device_probe.h"
#include "fixtures/setup_cache.h"
#include "kernels/gemm.h"

namespace gapbench::overhead {

namespace {

void bench_matmul_cpu(State& state, std::size_t n) {
  const SgemmData& d = cached<SgemmData>("sgemm:" + std::to_string(n), n);
  std::vector<float> c(n * n, 0.0f);
  validate_once([&] {
    gemm::sgemm_cpu(d.a.data(), d.b.data(), c.data(), n, n, n);
    return gemm::validate_sampled("matmul", c.data(), d.a.data(), d.b.data(), n, n, n, 256);
  });
  for (auto _ : state) {
    gemm::sgemm_cpu(d.a.data(), d.b.data(), c.data(), n, n, n);
    benchmark::ClobberMemory();
  }
  set_sgemm_counters(state, n);
}

void bench_dense_cpu(State& state, std::size_t batch) {
  const DenseData& d = cached<DenseData>(dense_key(batch), batch);
  dense::CpuWorkspace ws(d.shape);
  std::vector<float> params = d.params;
  validate_once([&] {
    const float loss =
        dense::step_cpu(d.shape, params.data(), d.x.data(), d.labels.data(), kLearningRate, ws);
    return dense::check_step(d.shape, d.ref, loss, params.data());
  });
  // Every iteration trains on the same batch from where the last left off: the arithmetic of a
  // step does not depend on the values.
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        dense::step_cpu(d.shape, params.data(), d.x.data(), d.labels.data(), kLearningRate, ws));
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * batch));
}

BenchName named(const std::string& variant, const char* op, const char* axis, std::size_t value) {
  return BenchName("overhead", variant).axis("op", op).axis(axis, static_cast<long long>(value));
}

}  // namespace

DenseData::DenseData(std::size_t batch)
    : shape(dense::mnist_shape(batch)),
      x(dense::random_inputs(shape, run_seed())),
      labels(dense::random_labels(shape, run_seed())),
      params(dense::initial_params(shape, run_seed())),
      ref(dense::step_reference(shape, params.data(), x.data(), labels.data(), kLearningRate)) {}

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
  // CPU 4096 takes about a second on 2 cores: the quick profile stops at 1024.
  for (std::size_t n : profile.pick<std::size_t>({16, 128, 512, 1024},
                                                 {16, 32, 64, 128, 256, 512, 1024, 2048, 4096})) {
    add_cpu(named("openblas", "matmul", "n", n), [=](State& st) {
      bench_matmul_cpu(st, n);
    })->Unit(benchmark::kMicrosecond);
    for (GpuTiming timing : {GpuTiming::kernel, GpuTiming::end_to_end}) {
      add_gpu(named(gpu_variant("cublas", timing), "matmul", "n", n),
              GAPBENCH_GPU_BODY(matmul_gpu(n, timing)))
          ->Unit(benchmark::kMicrosecond);
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
