// Family `overhead`, GPU variants (built only with CUDA): cuBLAS matmul and dense step, launch
// and synchronize costs, and start-up costs (the child process's side is startup_probe_gpu).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

#include "bench/overhead.h"
#include "bench/peak.h"
#include "bench/peak_gpu.h"
#include "fixtures/child_probe.h"
#include "fixtures/cuda_graph.h"
#include "fixtures/cuda_libraries.h"
#include "fixtures/data.h"
#include "fixtures/device_probe.h"
#include "fixtures/gpu_timer.h"
#include "fixtures/setup_cache.h"
#include "kernels/conv.h"
#include "kernels/conv_cudnn.h"
#include "kernels/dense.h"
#include "kernels/gemm.h"
#include "kernels/launch.h"

namespace gapbench::overhead {

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// Host-to-device and back on the fixture's stream. From pageable memory (std::vector), as a
// framework's host tensors are.
template <class T>
void upload(const DeviceBuffer<T>& dst, const T* src, cudaStream_t stream) {
  GAPBENCH_CHECK(cudaMemcpyAsync(dst.data(), src, dst.bytes(), cudaMemcpyHostToDevice, stream));
}
template <class T>
void download(T* dst, const DeviceBuffer<T>& src, cudaStream_t stream) {
  GAPBENCH_CHECK(cudaMemcpyAsync(dst, src.data(), src.bytes(), cudaMemcpyDeviceToHost, stream));
}

// ---- matmul ----

void bench_matmul(State& state, std::size_t n, GpuTiming timing) {
  const SgemmData& data = cached<SgemmData>("sgemm:" + std::to_string(n), n);
  SgemmDevice& dev = cached<SgemmDevice>("sgemm:" + std::to_string(n), data);
  validate_once([&] { return dev.check(data, timing); });
  if (timing == GpuTiming::kernel) {
    time_kernel(state, dev.stream, [&] { dev.multiply(n); });
  } else {
    time_end_to_end(
        state, dev.stream, [&] { dev.multiply(n); }, [&] { dev.end_to_end(data); });
  }
  set_sgemm_counters(state, n);
}

// ---- dense step ----

// The step of kernels/dense.h on the device: cuBLAS for the GEMMs, the bias gradients (a GEMV
// with a vector of ones) and the SGD update (one axpy over the packed parameters), and the small
// kernels of kernels/dense.cu for the rest, all on the fixture's stream.
struct DenseDevice {
  explicit DenseDevice(const DenseData& d)
      : shape(d.shape),
        x(reserve(d.shape)),
        labels(shape.batch),
        params(shape.params()),
        grad(shape.params()),
        h(shape.batch * shape.hidden),
        logits(shape.batch * shape.out),
        dlogits(shape.batch * shape.out),
        dh(shape.batch * shape.hidden),
        row_loss(shape.batch),
        loss(1),
        ones(shape.batch),
        blas(stream.get()) {
    upload(x, d.x.data(), stream.get());
    upload(labels, d.labels.data(), stream.get());
    upload(params, d.params.data(), stream.get());
    const std::vector<float> host_ones(shape.batch, 1.0f);
    upload(ones, host_ones.data(), stream.get());
    stream.synchronize();  // before host_ones goes
  }
  static std::size_t reserve(const dense::DenseShape& s) {
    const std::size_t floats = s.batch * s.in + 2 * s.params() + 2 * s.batch * s.hidden +
                               2 * s.batch * s.out + 2 * s.batch + 1;
    require_free_device_memory(floats * sizeof(float) + s.batch * sizeof(std::int32_t));
    return s.batch * s.in;
  }

  // Row-major matrices, column-major cuBLAS: a row-major M×N product C = op(A)·op(B) is the
  // column-major Cᵀ = op(B)ᵀ·op(A)ᵀ, so every call passes B before A with the same ops, the
  // dimensions as (N, M, K), and each matrix's row length as its leading dimension.
  void step(float lr) {
    const cudaStream_t s = stream.get();
    const cublasHandle_t handle = blas.get();
    const int B = static_cast<int>(shape.batch), I = static_cast<int>(shape.in),
              H = static_cast<int>(shape.hidden), O = static_cast<int>(shape.out);
    const float one = 1.0f, zero = 0.0f, minus_lr = -lr;
    float* p = params.data();
    float* g = grad.data();
    const float* w1 = p + shape.w1();
    const float* b1 = p + shape.b1();
    const float* w2 = p + shape.w2();
    const float* b2 = p + shape.b2();
    const auto N = CUBLAS_OP_N, T = CUBLAS_OP_T;

    // Forward. h = x·W1 [B×H], then ReLU(h + b1) in place; logits = h·W2 [B×O].
    GAPBENCH_CHECK(
        cublasSgemm(handle, N, N, H, B, I, &one, w1, H, x.data(), I, &zero, h.data(), H));
    GAPBENCH_CHECK(dense::bias_relu_gpu(h.data(), b1, shape.batch, shape.hidden, s));
    GAPBENCH_CHECK(
        cublasSgemm(handle, N, N, O, B, H, &one, w2, O, h.data(), H, &zero, logits.data(), O));
    // Loss (b2 added inside) and dlogits = (softmax - onehot) / B [B×O].
    GAPBENCH_CHECK(dense::softmax_xent_gpu(logits.data(), b2, labels.data(), shape.batch, shape.out,
                                           dlogits.data(), row_loss.data(), s));
    GAPBENCH_CHECK(dense::mean_gpu(row_loss.data(), shape.batch, loss.data(), s));

    // Backward. dW2 = hᵀ·dlogits [H×O]; db2 = column sums of dlogits (as column-major O×B
    // times ones).
    GAPBENCH_CHECK(cublasSgemm(handle, N, T, O, H, B, &one, dlogits.data(), O, h.data(), H, &zero,
                               g + shape.w2(), O));
    GAPBENCH_CHECK(cublasSgemv(handle, N, O, B, &one, dlogits.data(), O, ones.data(), 1, &zero,
                               g + shape.b2(), 1));
    // dh = dlogits·W2ᵀ [B×H] (W2 before its update), masked where ReLU was off.
    GAPBENCH_CHECK(
        cublasSgemm(handle, T, N, H, B, O, &one, w2, O, dlogits.data(), O, &zero, dh.data(), H));
    GAPBENCH_CHECK(dense::relu_backward_gpu(dh.data(), h.data(), dh.size(), s));
    // dW1 = xᵀ·dh [I×H]; db1 = column sums of dh.
    GAPBENCH_CHECK(cublasSgemm(handle, N, T, H, I, B, &one, dh.data(), H, x.data(), I, &zero,
                               g + shape.w1(), H));
    GAPBENCH_CHECK(
        cublasSgemv(handle, N, H, B, &one, dh.data(), H, ones.data(), 1, &zero, g + shape.b1(), 1));

    // SGD: params -= lr · grad.
    GAPBENCH_CHECK(cublasSaxpy(handle, static_cast<int>(shape.params()), &minus_lr, g, 1, p, 1));
  }

  // The batch in from host memory, the step, the loss back, synchronize.
  void end_to_end(const DenseData& d, float* loss_out) {
    upload(x, d.x.data(), stream.get());
    upload(labels, d.labels.data(), stream.get());
    step(kLearningRate);
    download(loss_out, loss, stream.get());
    stream.synchronize();
  }

  // One step from the initial parameters, the way `timing` runs it; loss and updated parameters
  // checked against the float64 step.
  Validation check(const DenseData& d, GpuTiming timing) {
    upload(params, d.params.data(), stream.get());
    GAPBENCH_CHECK(cudaMemsetAsync(loss.data(), 0xFF, loss.bytes(), stream.get()));
    float got_loss = kNaN;
    if (timing == GpuTiming::kernel) {
      step(kLearningRate);
      download(&got_loss, loss, stream.get());
    } else {
      end_to_end(d, &got_loss);
    }
    std::vector<float> got_params(params.size(), kNaN);
    download(got_params.data(), params, stream.get());
    stream.synchronize();
    return dense::check_step(shape, d.ref, got_loss, got_params.data());
  }

  dense::DenseShape shape;
  TimedStream stream;
  DeviceBuffer<float> x;
  DeviceBuffer<std::int32_t> labels;
  DeviceBuffer<float> params, grad, h, logits, dlogits, dh, row_loss, loss, ones;
  CublasHandle blas;
};

void bench_dense(State& state, std::size_t batch, GpuTiming timing) {
  const DenseData& data = cached<DenseData>(dense_key(batch), batch);
  DenseDevice& dev = cached<DenseDevice>(dense_key(batch), data);
  validate_once([&] { return dev.check(data, timing); });
  // As on the CPU, iterations go on training on the same batch.
  if (timing == GpuTiming::kernel) {
    time_kernel(state, dev.stream, [&] { dev.step(kLearningRate); });
  } else {
    float loss = 0.0f;
    time_end_to_end(
        state, dev.stream, [&] { dev.step(kLearningRate); }, [&] { dev.end_to_end(data, &loss); });
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

// A new handle works: a small product checked like the matmul benchmarks' (SgemmDevice makes
// its own handle).
Validation check_new_cublas_handle() {
  const SgemmData data(64);
  SgemmDevice dev(data);
  return dev.check(data, GpuTiming::kernel);
}

#if GAPBENCH_WITH_CUDNN
// A new handle works: it fills a poisoned tensor with a seeded value, read back exactly.
Validation check_new_cudnn_handle() {
  const Stream stream;
  const CudnnHandle handle(stream.get());
  constexpr int kN = 1, kC = 2, kH = 8, kW = 8;
  const conv::TensorDesc desc = conv::make_tensor_desc(kN, kC, kH, kW);
  const DeviceBuffer<float> y(kN * kC * kH * kW);
  GAPBENCH_CHECK(cudaMemsetAsync(y.data(), 0xFF, y.bytes(), stream.get()));
  const float value = uniform_floats(1, run_seed(), 600, 0.5f, 1.0f)[0];
  GAPBENCH_CHECK(cudnnSetTensor(handle.get(), desc.get(), y.data(), &value));
  std::vector<float> got(y.size(), kNaN);
  download(got.data(), y, stream.get());
  stream.synchronize();
  return validate("cudnnSetTensor", got, std::vector<float>(y.size(), value), Tolerance::exact());
}
#endif

}  // namespace

Body matmul_gpu(std::size_t n, GpuTiming timing) {
  return [=](State& st) { bench_matmul(st, n, timing); };
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

// The search's choice computes the layer: the first image of its forward pass against the
// float64 reference (a whole batch's reference would take seconds on the CPU).
Validation check_found_convolution(const conv::CudnnConvolution& found, cudaStream_t stream) {
  const conv::ConvShape& shape = found.shape();
  const std::vector<float> x = uniform_floats(shape.input_size(), run_seed(), 610);
  const std::vector<float> w = uniform_floats(shape.filter_size(), run_seed(), 611);
  const DeviceBuffer<float> dx(x.size()), dw(w.size()), dy(shape.output_size());
  const DeviceBuffer<std::uint8_t> workspace(std::max<std::size_t>(1, found.workspace_bytes()));
  upload(dx, x.data(), stream);
  upload(dw, w.data(), stream);
  found.forward(dx.data(), dw.data(), dy.data(), workspace.data());
  std::vector<float> y(dy.size(), kNaN);
  download(y.data(), dy, stream);
  GAPBENCH_CHECK(cudaStreamSynchronize(stream));
  conv::ConvShape one = shape;
  one.n = 1;
  std::vector<double> ref(one.output_size());
  conv::reference(one, x.data(), w.data(), ref.data());
  const auto tol = conv::tolerance(one, conv::magnitude_bound(one, x.data(), w.data()),
                                   conv::Arithmetic::tf32);  // DEFAULT_MATH allows TF32
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
      return check_found_convolution(conv::CudnnConvolution(handle.get(), kFindShape),
                                     stream.get());
    });
    // Each iteration is a fresh search, as a framework's first step of a new layer shape does
    // (cudnn.benchmark=True in PyTorch); only the search itself is timed.
    for (auto _ : state) {
      const conv::CudnnConvolution found(handle.get(), kFindShape);
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
