// Family `lstm`: what the CPU and GPU variants share. One shape's data (seeded weights, inputs and
// initial state) and its float64 reference are built once (fixtures/setup_cache.h) and every
// variant of the shape is validated against them.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "fixtures/data.h"
#include "fixtures/harness.h"
#include "kernels/lstm.h"

namespace gapbench::lstm {

// One layer's weights and inputs, seeded: W and b uniform in ±1/√hidden (the usual LSTM
// initialisation's scale, which keeps the gates off saturation), x, h0 and c0 uniform in ±1.
// Never zero, so a variant that ignores h0, c0 or the bias cannot pass.
struct Problem {
  Problem(const Shape& s, std::uint64_t seed)
      : shape(s),
        weights{uniform_floats(s.weight_size(), seed, 41, -scale(s), scale(s)),
                uniform_floats(s.gates(), seed, 42, -scale(s), scale(s))},
        x(uniform_floats(s.x_size(), seed, 43)),
        h0(uniform_floats(s.state_size(), seed, 44)),
        c0(uniform_floats(s.state_size(), seed, 45)) {}
  static float scale(const Shape& s) { return 1.0f / std::sqrt(static_cast<float>(s.hidden)); }

  Shape shape;
  Weights weights;
  std::vector<float> x, h0, c0;
};

// The reference follows this many batch rows (the rows never mix): a full float64 sequence of
// hidden 1024 for all 64 rows would take minutes.
inline constexpr std::size_t kReferenceRows = 8;

struct LstmData {
  explicit LstmData(const Shape& s)
      : problem(s, run_seed()),
        ref(reference(s, problem.weights, problem.x.data(), problem.h0.data(), problem.c0.data(),
                      sample_rows(s.batch, kReferenceRows))) {}
  Problem problem;
  Reference ref;
};

enum class Scope { step, seq };
inline const char* scope_name(Scope scope) { return scope == Scope::step ? "step" : "seq"; }

// Counters of one benchmark: `flops` (the GEMMs' work per iteration, as a rate) and
// items_per_second (seq: sequences, i.e. batch rows, per second; step: steps per second).
void set_counters(State& state, const Shape& shape, Scope scope, double flops_per_iteration);

// GPU bodies, defined in bench/lstm_gpu.cpp (CUDA builds only; see GAPBENCH_GPU_BODY).
Body cublas_gpu(Shape shape, Scope scope, bool graph);
Body cudnn_gpu(Shape shape, Scope scope);

}  // namespace gapbench::lstm
