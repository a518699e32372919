// Family `overhead`, GPU variants (built only with CUDA): cuBLAS matmul and dense step, launch
// and synchronize costs, and start-up costs (the child process's side is startup_probe_gpu).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

#include "bench/overhead.h"
#include "fixtures/child_probe.h"
#include "fixtures/device_probe.h"
#include "fixtures/gpu_timer.h"
#include "fixtures/setup_cache.h"
#include "kernels/base/cuda_graph.h"
#include "kernels/base/cuda_libraries.h"
#include "kernels/base/data.h"
#include "kernels/conv.h"
#include "kernels/conv_cudnn.h"
#include "kernels/dense_gpu.h"
#include "kernels/gemm_gpu.h"
#include "kernels/launch.h"

namespace gapbench::overhead {

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// ---- matmul ----

void bench_matmul(State& state, std::size_t n, GpuTiming timing, Arithmetic arithmetic) {
  require_arithmetic(arithmetic);
  const auto& data = cached<gemm::SquareProblem>(gemm::SquareProblem::key(n), n, run_seed());
  auto& dev = cached<OnTimedStream<gemm::CublasGemm>>(
      gemm::SquareProblem::key(n) + ":" + math_name(arithmetic),
      gemm::CublasGemm::device_bytes(n, arithmetic), data, arithmetic);
  validate_once([&] { return dev.op.check(data, timing == GpuTiming::end_to_end); });
  if (timing == GpuTiming::kernel) {
    time_kernel(
        state, dev.stream, kLibraryCallLaunches, [&] { dev.op.multiply(); }, dev.op.description());
  } else {
    time_end_to_end(
        state, dev.stream, kLibraryCallLaunches, [&] { dev.op.multiply(); },
        [&] { dev.op.end_to_end(data); }, dev.op.description());
  }
  set_flops_counter(state, data.flops());
}

// ---- dense step ----

constexpr std::size_t kDenseStepLaunches =
    dense::CublasDenseStep::kLibraryCalls * kLibraryCallLaunches + dense::CublasDenseStep::kKernels;

void bench_dense(State& state, std::size_t batch, GpuTiming timing) {
  const auto& data = cached<dense::Problem>(dense::Problem::key(batch), batch, run_seed());
  auto& dev = cached<OnTimedStream<dense::CublasDenseStep>>(
      dense::Problem::key(batch), dense::CublasDenseStep::device_bytes(data.shape), data);
  validate_once([&] { return dev.op.check(data, timing == GpuTiming::end_to_end); });
  // As on the CPU, iterations go on training on the same batch.
  if (timing == GpuTiming::kernel) {
    time_kernel(state, dev.stream, kDenseStepLaunches, [&] { dev.op.step(dense::kLearningRate); });
  } else {
    float loss = 0.0f;
    time_end_to_end(
        state, dev.stream, kDenseStepLaunches, [&] { dev.op.step(dense::kLearningRate); },
        [&] { dev.op.end_to_end(data, &loss); });
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * batch));
}

// ---- launch and synchronize ----

class LaunchPattern {
 public:
  explicit LaunchPattern(LaunchWhat what) : what_(what), counter_(1) {
    if (what == LaunchWhat::graph || what == LaunchWhat::graph_sync) {
      timed_graph_ = CapturedGraph(stream_.get(), [&] { enqueue(nullptr); });
      counting_graph_ = CapturedGraph(stream_.get(), [&] { enqueue(counter_.data()); });
    }
  }

  // Kernels one run launches (directly or in its graph).
  std::size_t kernels() const {
    switch (what_) {
      case LaunchWhat::launch:
      case LaunchWhat::graph:
        return kLaunchBatch;
      case LaunchWhat::launch_sync:
      case LaunchWhat::graph_sync:
        return 1;
      case LaunchWhat::sync:
        return 0;
    }
    return 0;
  }
  // One run of the pattern, ending when the stream is idle. `counting` runs the kernels with
  // the counter (and the counting graph), for validation.
  void run(bool counting) {
    switch (what_) {
      case LaunchWhat::launch:
      case LaunchWhat::launch_sync:
        enqueue(counting ? counter_.data() : nullptr);
        break;
      case LaunchWhat::sync:
        break;
      case LaunchWhat::graph:
      case LaunchWhat::graph_sync:
        (counting ? counting_graph_ : timed_graph_).launch(stream_.get());
        break;
    }
    stream_.synchronize();
  }

  // Every kernel of a run ran, and nothing is pending after its synchronize. `sync` launches
  // nothing itself, so it gets one kernel to wait for.
  Validation check() {
    GAPBENCH_CHECK(cudaMemsetAsync(counter_.data(), 0, sizeof(unsigned), stream_.get()));
    std::size_t expected = kernels();
    if (what_ == LaunchWhat::sync) {
      GAPBENCH_CHECK(launch::tick_gpu(counter_.data(), stream_.get()));
      expected = 1;
    }
    run(true);
    const cudaError_t idle = cudaStreamQuery(stream_.get());
    if (idle != cudaErrorNotReady) GAPBENCH_CHECK(idle);
    unsigned count = 0;
    GAPBENCH_CHECK(cudaMemcpyAsync(&count, counter_.data(), sizeof count, cudaMemcpyDeviceToHost,
                                   stream_.get()));
    stream_.synchronize();
    const double got = count, want = static_cast<double>(expected);
    Validation v = validate("kernels that ran", &got, &want, 1, Tolerance::exact());
    if (!v.ok) return v;
    const double pending = idle == cudaErrorNotReady ? 1.0 : 0.0, none = 0.0;
    return validate("work pending after the synchronize", &pending, &none, 1, Tolerance::exact());
  }

 private:
  void enqueue(unsigned* counter) {
    GAPBENCH_CHECK(launch::ticks_gpu(counter, kernels(), stream_.get()));
  }

  LaunchWhat what_;
  Stream stream_;
  DeviceBuffer<unsigned> counter_;
  CapturedGraph timed_graph_, counting_graph_;
};

// ---- start-up ----

cudaError_t create_context() {
  const cudaError_t set = cudaSetDevice(0);
  return set == cudaSuccess ? cudaFree(nullptr) : set;
}

// A new handle works: a small product checked like the matmul benchmarks' (CublasGemm makes
// its own handle).
Validation check_new_cublas_handle() {
  const gemm::SquareProblem data(64, run_seed());
  const Stream stream;
  gemm::CublasGemm sgemm(data, stream.get());
  return sgemm.check(data, false);
}

#if GAPBENCH_WITH_CUDNN
// A new handle works: it fills a poisoned tensor with a seeded value, read back exactly.
Validation check_new_cudnn_handle() {
  const Stream stream;
  const CudnnHandle handle(stream.get());
  constexpr int kN = 1, kC = 2, kH = 8, kW = 8;
  const conv::TensorDesc desc = conv::make_tensor_desc(kN, kC, kH, kW);
  const DeviceBuffer<float> y(kN * kC * kH * kW);
  poison(y, stream.get());
  const float value = uniform_floats(1, run_seed(), 600, 0.5f, 1.0f)[0];
  GAPBENCH_CHECK(cudnnSetTensor(handle.get(), desc.get(), y.data(), &value));
  std::vector<float> got(y.size(), kNaN);
  copy_to_host(got.data(), y, stream.get());
  stream.synchronize();
  return validate("cudnnSetTensor", got, std::vector<float>(y.size(), value), Tolerance::exact());
}
#endif

}  // namespace

Body matmul_gpu(std::size_t n, GpuTiming timing, Arithmetic arithmetic) {
  return [=](State& st) { bench_matmul(st, n, timing, arithmetic); };
}

Body dense_gpu(std::size_t batch, GpuTiming timing) {
  return [=](State& st) { bench_dense(st, batch, timing); };
}

Body launch_gpu(LaunchWhat what) {
  return [=](State& state) {
    LaunchPattern& pattern = cached<LaunchPattern>(current_benchmark(), what);
    validate_once([&] { return pattern.check(); });
    const auto run = [&] { pattern.run(false); };
    if (pattern.kernels() > 1) {
      // One run is a batch of launches: each counts as an iteration, so the time per iteration
      // is the time per launch, and the profile's minimum time is real time.
      while (state.KeepRunningBatch(static_cast<benchmark::IterationCount>(pattern.kernels()))) {
        state.SetIterationTime(wall_seconds(run));
      }
    } else {
      for (auto _ : state) state.SetIterationTime(wall_seconds(run));
    }
    state.SetItemsProcessed(state.iterations());
  };
}

Body startup_child_gpu(const std::string& what) {
  return [what](State& state) {
    const auto measure = [&] {
      return probe::read_seconds(what, run_self({"startup-probe", what}, kProbeTimeoutSeconds));
    };
    // The child checks its own work (its context is usable; its launch ran). This first child
    // also brings the executable and the CUDA libraries into the page cache, untimed.
    validate_once([&] {
      const double got = measure() > 0.0 ? 1.0 : 0.0, want = 1.0;
      return validate(what + " probe: a positive time", &got, &want, 1, Tolerance::exact());
    });
    for (auto _ : state) state.SetIterationTime(measure());
  };
}

Body cublas_handle_gpu() {
  return [](State& state) {
    validate_once(check_new_cublas_handle);
    for (auto _ : state) {
      cublasHandle_t handle = nullptr;
      const double seconds = wall_seconds([&] { GAPBENCH_CHECK(cublasCreate(&handle)); });
      GAPBENCH_CHECK(cublasDestroy(handle));  // not timed
      state.SetIterationTime(seconds);
    }
  };
}

Body cudnn_handle_gpu() {
#if GAPBENCH_WITH_CUDNN
  return [](State& state) {
    validate_once(check_new_cudnn_handle);
    for (auto _ : state) {
      cudnnHandle_t handle = nullptr;
      const double seconds = wall_seconds([&] { GAPBENCH_CHECK(cudnnCreate(&handle)); });
      GAPBENCH_CHECK(cudnnDestroy(handle));  // not timed
      state.SetIterationTime(seconds);
    }
  };
#else
  return [](State&) { throw Skip("built without cuDNN"); };
#endif
}

#if GAPBENCH_WITH_CUDNN
// The typical layer whose algorithm search is timed: ResNet's 3x3 64->64 56x56 convolution (the
// conv family's comparison layer) at batch 8.
constexpr conv::ConvShape kFindShape{8, 64, 56, 56, 64, 3, 3, 1, 1};
// Searched in float32 (FMA math: no TF32), as its name, without a math axis, says.
constexpr Arithmetic kFindMath = Arithmetic::float32;

// The search's choice computes the layer: the first image of its forward pass against the
// float64 reference (a whole batch's reference would take seconds on the CPU).
Validation check_found_convolution(const conv::CudnnConvolution& found, cudaStream_t stream) {
  const conv::ConvShape& shape = found.shape();
  const std::vector<float> x = uniform_floats(shape.input_size(), run_seed(), 610);
  const std::vector<float> w = uniform_floats(shape.filter_size(), run_seed(), 611);
  const DeviceBuffer<float> dx(x.size()), dw(w.size()), dy(shape.output_size());
  const DeviceBuffer<std::uint8_t> workspace =
      poisoned_buffer<std::uint8_t>(found.workspace_bytes(), stream);
  copy_to_device(dx, x.data(), stream);
  copy_to_device(dw, w.data(), stream);
  found.forward(dx.data(), dw.data(), dy.data(), workspace.data());
  std::vector<float> y(dy.size(), kNaN);
  copy_to_host(y.data(), dy, stream);
  GAPBENCH_CHECK(cudaStreamSynchronize(stream));
  conv::ConvShape one = shape;
  one.n = 1;
  std::vector<double> ref(one.output_size());
  conv::reference(one, x.data(), w.data(), ref.data());
  const auto tol =
      conv::tolerance(one, conv::magnitude_bound(one, x.data(), w.data()), found.arithmetic());
  return validate("cudnn convolution (first image)", y.data(), ref.data(), ref.size(), tol);
}
#endif

Body cudnn_find_conv_gpu() {
#if GAPBENCH_WITH_CUDNN
  return [](State& state) {
    const Stream stream;
    const CudnnHandle handle(stream.get());
    require_free_device_memory(
        (kFindShape.input_size() + kFindShape.filter_size() + kFindShape.output_size()) *
        sizeof(float));
    validate_once([&] {
      return check_found_convolution(conv::CudnnConvolution(handle.get(), kFindShape, kFindMath),
                                     stream.get());
    });
    // Each iteration is a fresh search, as a framework's first step of a new layer shape does
    // (cudnn.benchmark=True in PyTorch); only the search itself is timed.
    for (auto _ : state) {
      const conv::CudnnConvolution found(handle.get(), kFindShape, kFindMath);
      state.SetIterationTime(found.search_seconds());
      state.SetLabel(found.description());
    }
  };
#else
  return [](State&) { throw Skip("built without cuDNN"); };
#endif
}

double startup_probe_gpu(const std::string& what) {
  // Nothing in this process has called CUDA before this point (static initialisation only
  // registers the kernels), so this is the first CUDA call a framework makes.
  cudaError_t status = cudaSuccess;
  const double context_seconds = wall_seconds([&] { status = create_context(); });
  // No driver, no device, or one this build has no code for: a skip with the reason every GPU
  // benchmark gives. Anything else that failed is an error.
  if (auto reason = gpu_unavailable_reason()) throw Skip(*reason);
  check_status(status, "cudaSetDevice(0); cudaFree(nullptr)", __FILE__, __LINE__, true);
  int device = -1;
  GAPBENCH_CHECK(cudaGetDevice(&device));
  if (device != 0)
    throw std::runtime_error("the new context is on device " + std::to_string(device));
  if (what == kProbeContext) return context_seconds;

  // first_launch: set up (not timed), then the first kernel launch of this process and its
  // synchronize; with lazy module loading, the launch loads the kernel's module.
  const Stream stream;
  const DeviceBuffer<unsigned> counter(1);
  GAPBENCH_CHECK(cudaMemsetAsync(counter.data(), 0, sizeof(unsigned), stream.get()));
  stream.synchronize();
  cudaError_t launched = cudaSuccess;
  const double seconds = wall_seconds([&] {
    launched = launch::tick_gpu(counter.data(), stream.get());
    if (launched == cudaSuccess) launched = cudaStreamSynchronize(stream.get());
  });
  check_status(launched, "launch::tick_gpu(...); cudaStreamSynchronize(...)", __FILE__, __LINE__,
               true);
  unsigned count = 0;
  GAPBENCH_CHECK(cudaMemcpy(&count, counter.data(), sizeof count, cudaMemcpyDeviceToHost));
  if (count != 1) {
    throw std::runtime_error("the first launch did not run: its counter reads " +
                             std::to_string(count) + ", not 1");
  }
  return seconds;
}

}  // namespace gapbench::overhead
