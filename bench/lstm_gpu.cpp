// Family `lstm`, GPU variants (built only with CUDA): cublas and cublas_graph
// (kernels/lstm_gpu.h) and cudnn (kernels/lstm_cudnn.h). Each benchmark builds its variant once
// (cached<> by name; handles, weights, cuDNN descriptors and algorithm, graph capture and the
// capture that counts the work's launches are set-up, not timed; the timed region is the
// enqueue of the work alone), validates it, then times the enqueued work with CUDA events
// (time_kernel), or, for the `_e2e` twins, the host's wall time until it is complete
// (time_end_to_end: launches, then a synchronize; the inputs stay on the device, as in a user's
// loop).
#include <cuda_runtime_api.h>

#include <optional>
#include <string>
#include <vector>

#include "bench/lstm.h"
#include "fixtures/device_probe.h"
#include "fixtures/gpu_timer.h"
#include "fixtures/setup_cache.h"
#include "kernels/base/cuda_graph.h"
#include "kernels/lstm_cudnn.h"
#include "kernels/lstm_gpu.h"

namespace gapbench::lstm {
namespace {

void upload(float* dst, const float* src, std::size_t n, cudaStream_t stream) {
  GAPBENCH_CHECK(cudaMemcpyAsync(dst, src, n * sizeof(float), cudaMemcpyHostToDevice, stream));
}

void download(std::vector<float>& dst, const float* src, cudaStream_t stream) {
  GAPBENCH_CHECK(
      cudaMemcpyAsync(dst.data(), src, dst.size() * sizeof(float), cudaMemcpyDeviceToHost, stream));
}

// Poisoned (a NaN): an output a variant never writes cannot pass validation, even where
// cudaMalloc hands back the memory of an earlier benchmark that held the right answer.
void poison_floats(float* dst, std::size_t n, cudaStream_t stream) {
  poison(dst, n * sizeof(float), stream);
}

// Uploads the problem's inputs for a run of `run_shape` (a one-step run takes x_0 only).
template <class Lstm>
void upload_inputs(Lstm& lstm, const Problem& p, const Shape& run_shape, cudaStream_t stream) {
  upload(lstm.x(), p.x.data(), run_shape.x_size(), stream);
  upload(lstm.h0(), p.h0.data(), run_shape.state_size(), stream);
  upload(lstm.c0(), p.c0.data(), run_shape.state_size(), stream);
}

struct CublasRun {
  CublasRun(const LstmData& d, Scope scope, bool use_graph)
      : lstm(reserve(d.problem.shape), d.problem.weights, stream.get()), scope(scope) {
    upload_inputs(lstm, d.problem, d.problem.shape, stream.get());
    // The step variants time step 0 of the sequence; its hoisted projection is set-up.
    if (scope == Scope::step) lstm.enqueue_projection();
    stream.synchronize();  // the capture starts on an idle stream
    if (use_graph) graph.emplace(stream.get(), [this] { enqueue_eager(); });
    launches_ =
        graph ? graph->nodes() : captured_launches(stream.get(), [this] { enqueue_eager(); });
  }
  static const Shape& reserve(const Shape& shape) {
    require_free_device_memory(CublasLstm::device_bytes(shape));
    return shape;
  }
  void enqueue_eager() {
    if (scope == Scope::seq) {
      lstm.enqueue_sequence();
    } else {
      lstm.enqueue_step(0);
    }
  }
  void enqueue() {
    if (graph) {
      graph->launch(stream.get());
    } else {
      enqueue_eager();
    }
  }
  // What enqueue() launches, for the timer's hold (fixtures/hold_policy.h): counted once by
  // capturing it: an SGEMM's kernels and the pointwise kernel a step, and the projection's SGEMM
  // in seq (201 at 100 steps where an SGEMM is one kernel; counting each cuBLAS call as
  // kLibraryCallLaunches said 504, which left the stream unheld and put the host's launches in
  // the kernel time). A graph replays the same launches, so it counts as them.
  std::size_t launches() const { return launches_; }

  TimedStream stream;  // first: outlives the handle and the buffers used on it
  CublasLstm lstm;
  Scope scope;
  std::optional<CapturedGraph> graph;
  std::size_t launches_ = 0;
};

// Times `run.enqueue()` as kernel time, or end to end until the stream is idle. `label` is the
// benchmark's label (the step's kind, the library's configuration).
template <class Run>
void time_lstm(State& state, Run& run, GpuTiming timing, std::size_t launches,
               const std::string& label) {
  auto enqueue = [&] { run.enqueue(); };
  if (timing == GpuTiming::kernel) {
    time_kernel(state, run.stream, launches, enqueue, label);
  } else {
    time_end_to_end(
        state, run.stream, launches, enqueue,
        [&] {
          enqueue();
          run.stream.synchronize();
        },
        label);
  }
}

void bench_cublas(State& state, const Shape& shape, Scope scope, bool use_graph, GpuTiming timing) {
  const LstmData& d = cached<LstmData>(shape.key(), shape);
  CublasRun& run = cached<CublasRun>(current_benchmark(), d, scope, use_graph);
  const cudaStream_t s = run.stream.get();
  const char* what = use_graph ? "cublas_graph" : "cublas";
  validate_once([&] {
    const std::size_t outputs = scope == Scope::seq ? shape.h_seq_size() : shape.state_size();
    poison_floats(run.lstm.h_seq(), outputs, s);
    poison_floats(run.lstm.c_after(0), shape.state_size(), s);
    poison_floats(run.lstm.c_after(1), shape.state_size(), s);
    run.enqueue();
    std::vector<float> h(outputs), c(shape.state_size());
    download(h, run.lstm.h_seq(), s);
    download(c, run.lstm.c_after(scope == Scope::seq ? shape.steps - 1 : 0), s);
    run.stream.synchronize();
    return scope == Scope::seq ? check_sequence(what, shape, d.ref, h.data(), c.data())
                               : check_step(what, shape, d.ref, h.data(), c.data());
  });
  time_lstm(state, run, timing, run.launches(), scope == Scope::step ? kHoistedStepLabel : "");
  set_counters(state, shape, scope,
               scope == Scope::seq ? shape.sequence_flops() : shape.recurrent_flops());
}

#if GAPBENCH_WITH_CUDNN
struct CudnnRun {
  CudnnRun(const LstmData& d, const Shape& run_shape, Arithmetic arithmetic)
      : lstm(reserve(run_shape, arithmetic), d.problem.weights, stream.get(), arithmetic) {
    // A one-step run takes x_0, the first batch x input floats of x.
    lstm.set_inputs(d.problem.x.data(), d.problem.h0.data(), d.problem.c0.data());
    launches_ = count_launches();
  }
  static const Shape& reserve(const Shape& shape, Arithmetic arithmetic) {
    require_free_device_memory(CudnnLstm::device_bytes_estimate(shape, arithmetic));
    return shape;
  }

  void enqueue() { lstm.enqueue(); }
  // What cudnnRNNForward launches, for the timer's hold: counted by capturing it once. Where
  // cuDNN cannot be captured, estimated: STANDARD launches a few kernels a step (the recurrent
  // GEMM, the gates; the input projection once), counted as a library call a step and one more;
  // a persistent algorithm runs every step in one kernel, counted as three library calls (the
  // input projection, the recurrence, the final states).
  std::size_t count_launches() {
    // One run first, so that what cuDNN sets up at its first call is not captured.
    lstm.enqueue();
    stream.synchronize();
    try {
      return captured_launches(stream.get(), [this] { lstm.enqueue(); });
    } catch (const CudaError&) {
      if (lstm.algorithm() != RnnAlgorithm::standard) return 3 * kLibraryCallLaunches;
      return (lstm.shape().steps + 1) * kLibraryCallLaunches;
    }
  }
  std::size_t launches() const { return launches_; }

  TimedStream stream;
  CudnnLstm lstm;
  std::size_t launches_ = 0;
};

void bench_cudnn(State& state, const Shape& shape, Scope scope, Arithmetic arithmetic,
                 GpuTiming timing) {
  require_arithmetic(arithmetic);
  const LstmData& d = cached<LstmData>(shape.key(), shape);
  // The step variant: cuDNN runs whole sequences only, so one step is a sequence of 1.
  const Shape run_shape = scope == Scope::seq ? shape : shape.one_step();
  CudnnRun& run = cached<CudnnRun>(current_benchmark(), d, run_shape, arithmetic);
  validate_once([&] {
    run.lstm.poison_outputs();
    run.lstm.enqueue();
    const CudnnLstm::Outputs out = run.lstm.outputs();
    const std::string what = std::string("cudnn ") + math_name(arithmetic);
    const Precision precision = run.lstm.precision();
    return scope == Scope::seq
               ? check_sequence(what, shape, d.ref, out.h_seq.data(), out.c_last.data(), precision)
               : check_step(what, shape, d.ref, out.h_last.data(), out.c_last.data(), precision);
  });
  // The label says which algorithm and math mode ran, as conv's cuDNN labels do.
  const std::string config = run.lstm.description();
  time_lstm(state, run, timing, run.launches(),
            scope == Scope::step ? join_label(kLibraryStepLabel, config) : config);
  set_counters(state, shape, scope,
               scope == Scope::seq ? shape.sequence_flops() : shape.cell_flops());
}
#endif

}  // namespace

Body cublas_gpu(Shape shape, Scope scope, bool graph, GpuTiming timing) {
  return [=](State& st) { bench_cublas(st, shape, scope, graph, timing); };
}

Body cudnn_gpu(Shape shape, Scope scope, Arithmetic arithmetic, GpuTiming timing) {
#if GAPBENCH_WITH_CUDNN
  return [=](State& st) { bench_cudnn(st, shape, scope, arithmetic, timing); };
#else
  (void)shape;
  (void)scope;
  (void)arithmetic;
  (void)timing;
  return [](State&) { throw Skip("built without cuDNN"); };
#endif
}

}  // namespace gapbench::lstm
