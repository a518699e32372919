// Family `lstm`: one LSTM step and a whole sequence, CPU vs GPU, hand-assembled (BLAS + pointwise
// kernel) vs the libraries' fused LSTMs (oneDNN, cuDNN). The point: an LSTM's steps run one
// after another, so at small batch each step is a few small kernels and a GPU is bound by launch
// latency, not arithmetic. The cublas_graph variant replays the same two launches per step as a
// CUDA graph: the launch cost the graph removes is the difference.
//
// scope:step is the latency a user's loop pays per step. For blas and cublas it is one step
// inside the sequence (the recurrent SGEMM and the fused pointwise update; the input projection
// is hoisted out, as the seq variant runs it). oneDNN and cuDNN only run whole sequences, so
// their step is the primitive with steps = 1, projection included: what calling such a library
// once per step costs. Their `flops` count that projection too. The two kinds of step do
// different work, so they are compared by their `flops` rate, not their time; each step's label
// says which it is. seq's per-step time is its time divided by steps.
//
// On the GPU, kernel time is device time, the stream held while the host enqueues: it leaves out
// the launch cost that cublas_graph saves. The `_e2e` twins of the cublas, cublas_graph and
// cudnn steps are host wall time until the step is complete, as a user's loop waits for it: the
// launch cost shows there. `gapbench --benchmark_list_tests` lists the names
// (docs/reading-results.md#names).
//
// Every variant is validated once before timing against the float64 reference of the same seeded
// weights and inputs (kernels/lstm.h): seq: every h_t of the reference's rows and their final c;
// step: h and c after the first step from (x_0, h0, c0). The math:bf16 (oneDNN) and math:fp16
// (cuDNN) variants hold x, h and the weights in that format, with the tolerance of its rounding;
// bf16 skips on a CPU where oneDNN would emulate or refuse it, fp16 on a GPU without fp16
// tensor cores. cuDNN's math:tf32 reads float32 data as TF32 (PyTorch's default for float32),
// with TF32's input error in the tolerance; it skips before compute capability 8.0.
#include "bench/lstm.h"

#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "fixtures/device_probe.h"
#include "fixtures/setup_cache.h"
#include "kernels/lstm_onednn.h"

namespace gapbench::lstm {

void set_counters(State& state, const Shape& shape, Scope scope, double flops_per_iteration) {
  set_flops_counter(state, flops_per_iteration);
  const double items = scope == Scope::seq ? static_cast<double>(shape.batch) : 1.0;
  state.SetItemsProcessed(
      static_cast<std::int64_t>(static_cast<double>(state.iterations()) * items));
}

namespace {

// The blas variant's own buffers, kept between the body's calls for one benchmark.
struct BlasRun {
  explicit BlasRun(const LstmData& d)
      : lstm(d.problem.shape, d.problem.weights),
        h_seq(d.problem.shape.h_seq_size()),
        c(d.problem.shape.state_size()) {}
  BlasLstm lstm;
  std::vector<float> h_seq, c;
};

void blas_body(State& state, const Shape& shape, Scope scope) {
  const LstmData& d = cached<LstmData>(shape.key(), shape);
  BlasRun& run = cached<BlasRun>(current_benchmark(), d);
  const Problem& p = d.problem;
  if (scope == Scope::seq) {
    auto sequence = [&] {
      run.lstm.sequence(p.x.data(), p.h0.data(), p.c0.data(), run.h_seq.data(), run.c.data());
    };
    validate_once([&] {
      sequence();
      return check_sequence("blas", shape, d.ref, run.h_seq.data(), run.c.data());
    });
    for (auto _ : state) {
      sequence();
      benchmark::ClobberMemory();
    }
    set_counters(state, shape, scope, shape.sequence_flops());
  } else {
    run.lstm.project(p.x.data());  // the hoisted part of the sequence, not the step's
    // Step 0 from (h0, c0) into h_seq[0] and c, the same every iteration.
    auto step = [&] { run.lstm.step(0, p.h0.data(), p.c0.data(), run.h_seq.data(), run.c.data()); };
    validate_once([&] {
      step();
      return check_step("blas", shape, d.ref, run.h_seq.data(), run.c.data());
    });
    for (auto _ : state) {
      step();
      benchmark::ClobberMemory();
    }
    state.SetLabel(kHoistedStepLabel);
    set_counters(state, shape, scope, shape.recurrent_flops());
  }
}

void onednn_body(State& state, const Shape& shape, Scope scope, Arithmetic arithmetic) {
  // Emulated bf16 is slower than float32: timing it under the bf16 name would mislead.
  require_cpu_arithmetic(arithmetic);
  const LstmData& d = cached<LstmData>(shape.key(), shape);
  const Problem& p = d.problem;
  const Shape run_shape = scope == Scope::seq ? shape : shape.one_step();
  OnednnLstm& lstm = cached<OnednnLstm>(current_benchmark(), run_shape, p.weights, arithmetic);
  // A one-step run takes x_0, the first batch x input floats of x.
  lstm.set_inputs(p.x.data(), p.h0.data(), p.c0.data());
  validate_once([&] {
    lstm.run();
    const std::string what = std::string("onednn ") + math_name(arithmetic);
    return scope == Scope::seq ? check_sequence(what, shape, d.ref, lstm.h_seq().data(),
                                                lstm.c_last().data(), lstm.precision())
                               : check_step(what, shape, d.ref, lstm.h_last().data(),
                                            lstm.c_last().data(), lstm.precision());
  });
  for (auto _ : state) {
    lstm.run();
    benchmark::ClobberMemory();
  }
  if (scope == Scope::step) state.SetLabel(kLibraryStepLabel);
  set_counters(state, shape, scope,
               scope == Scope::seq ? shape.sequence_flops() : shape.cell_flops());
}

void register_shape(const Shape& shape) {
  for (Scope scope : {Scope::step, Scope::seq}) {
    auto name = [&](const std::string& variant) {
      return BenchName("lstm", variant)
          .axis("scope", scope_name(scope))
          .axis("batch", static_cast<long long>(shape.batch))
          .axis("input", static_cast<long long>(shape.input))
          .axis("hidden", static_cast<long long>(shape.hidden))
          .axis("steps", static_cast<long long>(shape.steps));
    };
    add_cpu(name("blas"), [=](State& st) { blas_body(st, shape, scope); });
    add_cpu(name("onednn"), [=](State& st) { onednn_body(st, shape, scope, Arithmetic::float32); });
    add_cpu(name("onednn").axis("math", math_name(Arithmetic::bf16)),
            [=](State& st) { onednn_body(st, shape, scope, Arithmetic::bf16); });
    // The float32 GPU variants kernel-timed (device time) and, for a step, end to end too (what
    // a user's loop waits for): the launch cost a graph saves shows only there.
    for (GpuTiming timing : {GpuTiming::kernel, GpuTiming::end_to_end}) {
      if (timing == GpuTiming::end_to_end && scope != Scope::step) continue;
      add_gpu(name(gpu_variant("cublas", timing)),
              GAPBENCH_GPU_BODY(cublas_gpu(shape, scope, false, timing)));
      add_gpu(name(gpu_variant("cublas_graph", timing)),
              GAPBENCH_GPU_BODY(cublas_gpu(shape, scope, true, timing)));
      add_gpu(name(gpu_variant("cudnn", timing)),
              GAPBENCH_GPU_BODY(cudnn_gpu(shape, scope, Arithmetic::float32, timing)));
    }
    // tf32 is PyTorch's default for float32 in cuDNN (allow_tf32): the like-for-like row for a
    // framework's float32 LSTM on compute capability 8.0 and later.
    for (Arithmetic arithmetic : {Arithmetic::tf32, Arithmetic::fp16}) {
      add_gpu(name("cudnn").axis("math", math_name(arithmetic)),
              GAPBENCH_GPU_BODY(cudnn_gpu(shape, scope, arithmetic, GpuTiming::kernel)));
    }
  }
}

}  // namespace
}  // namespace gapbench::lstm

namespace gapbench {

GAPBENCH_FAMILY(lstm) {
  using lstm::Shape;  // {batch, input, hidden, steps}
  // The classic Keras model: 100 steps of 50 features into 64 units, then a second layer of 32
  // units on those 64. DeepBench's RNN inference set: hidden 512 and 1024 (input = hidden),
  // batch 16 and 64, 25 and 100 steps. Quick: the Keras layer and DeepBench's hidden 512, batch
  // 64, 25 steps (the CPU target's shape).
  std::vector<Shape> shapes = {{64, 50, 64, 100}, {64, 512, 512, 25}};
  if (profile.full()) {
    shapes = {{64, 50, 64, 100}, {64, 64, 32, 100}};
    for (std::size_t hidden : {512, 1024})
      for (std::size_t batch : {16, 64})
        for (std::size_t steps : {25, 100}) shapes.push_back({batch, hidden, hidden, steps});
  }
  for (const Shape& shape : shapes) lstm::register_shape(shape);
}

}  // namespace gapbench
