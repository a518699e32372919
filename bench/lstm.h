// Family `lstm`: what the CPU and GPU variants share. One shape's data (seeded weights, inputs and
// initial state) and its float64 reference are built once (fixtures/setup_cache.h) and every
// variant of the shape is validated against them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fixtures/harness.h"
#include "kernels/base/data.h"
#include "kernels/lstm.h"

namespace gapbench::lstm {

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

// What each variant's step is, for its label: cuBLAS's step leaves x_t's projection to the
// sequence's one hoisted GEMM, a library's one-step sequence does it itself. The two are
// compared by their `flops` rate, each counting its own work, not by time.
inline constexpr const char* kHoistedStepLabel =
    "step: x_t's projection hoisted out, as in seq; compare with cudnn/onednn by flops";
inline constexpr const char* kLibraryStepLabel =
    "step: a 1-step sequence, x_t's projection included; compare with blas/cublas by flops";

// GPU bodies, defined in bench/lstm_gpu.cpp (CUDA builds only; see GAPBENCH_GPU_BODY). Kernel
// timing is device time; end to end is host wall time until the step or sequence is complete
// (its launches and a synchronize; the inputs are on the device already, as in a user's loop).
Body cublas_gpu(Shape shape, Scope scope, bool graph, GpuTiming timing);
Body cudnn_gpu(Shape shape, Scope scope, Arithmetic arithmetic, GpuTiming timing);

}  // namespace gapbench::lstm
