// Family `lstm`: one standard LSTM layer (float32), its float64 reference, and the CPU BLAS
// variant. The oneDNN, cuBLAS and cuDNN variants (lstm_onednn.h, lstm_gpu.h, lstm_cudnn.h) take
// the same Shape and Weights and convert the weights to their own layout at set-up.
//
// The layer, per time step t = 0..steps-1 and batch row n:
//   z = [x_t, h_{t-1}] · W + b                       (4·hidden pre-activations)
//   i = σ(z_i)  f = σ(z_f)  g = tanh(z_g)  o = σ(z_o)
//   c_t = f ⊙ c_{t-1} + i ⊙ g        h_t = o ⊙ tanh(c_t)
// starting from given h_{-1} = h0 and c_{-1} = c0.
//
// The one weight layout (the reference's; every library's is converted from it):
//   W  [(input + hidden) x 4·hidden] row-major. Rows 0..input-1 multiply x_t, rows
//      input..input+hidden-1 multiply h_{t-1}; columns are four blocks of `hidden`, gates in the
//      order i, f, g, o (g is the candidate cell, oneDNN's c̃, cuDNN's "new memory").
//   b  [4·hidden], the same gate blocks.
// Tensors: x [steps][batch][input] (time-major, as cuDNN and oneDNN take it); h0, c0 and every
// state [batch][hidden]; the hidden sequence h_seq [steps][batch][hidden] (h_seq[t] = h_t).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/base/data.h"
#include "kernels/base/validate.h"

namespace gapbench::lstm {

struct Shape {
  std::size_t batch = 0, input = 0, hidden = 0, steps = 0;

  std::size_t gates() const { return 4 * hidden; }
  std::size_t weight_rows() const { return input + hidden; }
  std::size_t weight_size() const { return weight_rows() * gates(); }
  std::size_t x_size() const { return steps * batch * input; }
  std::size_t state_size() const { return batch * hidden; }
  std::size_t h_seq_size() const { return steps * batch * hidden; }
  // The same layer run for one time step (what the libraries' step variants run).
  Shape one_step() const { return {batch, input, hidden, 1}; }
  std::string key() const;  // "b64_i50_h64_t100"

  // Floating-point operations of the GEMMs (2 per multiply-add; the pointwise update, about
  // 30 operations per state element, is not counted, as in DeepBench).
  double cell_flops() const;       // one step from x_t: 2·batch·(input + hidden)·4·hidden
  double recurrent_flops() const;  // one step with x_t·W already done: 2·batch·hidden·4·hidden
  double sequence_flops() const { return cell_flops() * static_cast<double>(steps); }
};

// Throws std::invalid_argument when a size is zero or a dimension too large for the libraries'
// int sizes.
void check_shape(const Shape& shape);

struct Weights {
  std::vector<float> w;  // [(input + hidden) x 4·hidden], see above
  std::vector<float> b;  // [4·hidden]
};

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

// Throws std::invalid_argument naming both sizes when the weights do not fit the shape:
// "lstm: W has 100 floats, but input 50 + hidden 64 by 4 x hidden 64 needs 29184".
// Every variant's constructor calls it (and check_shape) first.
void check_weights(const Shape& shape, const Weights& weights);

// ---- float64 reference ----

// The batch rows of an LSTM never mix, so the reference follows a sample of them: the first,
// the last and evenly spread ones, `count` in all (every row when batch <= count).
std::vector<std::size_t> sample_rows(std::size_t batch, std::size_t count);

struct Reference {
  std::vector<std::size_t> rows;  // the batch rows followed
  std::vector<double> h, c;       // [steps][rows.size()][hidden]: h_t and c_t after each step
  // The largest |b| + Σ|x·w| + Σ|h·w| over every pre-activation computed: the scale of the
  // rounding error of the float32 sums, for the tolerance.
  double magnitude = 0.0;
  // The largest √(b² + Σ(x·w)² + Σ(h·w)²): the scale of the error of inputs read in a narrower
  // format (bf16, fp16), whose roundings are independent from term to term.
  double magnitude_l2 = 0.0;
  // The largest forget gate f computed: how much of an error in c survives a step.
  double forget_max = 0.0;
};

// The layer in float64 arithmetic (products of float32 inputs are exact in float64).
Reference reference(const Shape& shape, const Weights& weights, const float* x, const float* h0,
                    const float* c0, const std::vector<std::size_t>& rows);

// ---- tolerance and checks ----
//
// float32: a random walk of the per-step rounding over √steps; mixed precision: the narrow
// inputs' error, damped by the recurrence. Derived, with the measured margins, in
// docs/reading-results.md#the-lstm.
inline constexpr double kSafety = 4.0;
inline constexpr double kGateUlps = 16.0;
// What a variant computes in, and the formats it returns h and c in.
struct Precision {
  Arithmetic arithmetic = Arithmetic::float32;
  Arithmetic h_stored = Arithmetic::float32;
  Arithmetic c_stored = Arithmetic::float32;
};
Tolerance h_tolerance(const Shape& shape, const Reference& ref, Precision precision = {});
Tolerance c_tolerance(const Shape& shape, const Reference& ref, Precision precision = {});

// The whole sequence: every h_t (the intermediate ones and the final one) and the final c of the
// reference's rows. h_seq [steps][batch][hidden], c_last [batch][hidden].
Validation check_sequence(const std::string& what, const Shape& shape, const Reference& ref,
                          const float* h_seq, const float* c_last, Precision precision = {});
// One step from (x_0, h0, c0): h and c [batch][hidden] against the reference's first step.
Validation check_step(const std::string& what, const Shape& shape, const Reference& ref,
                      const float* h, const float* c, Precision precision = {});

// ---- the cuDNN variant's algorithm (kernels/lstm_cudnn.h), decided here for CPU tests ----
//
// cuDNN runs an RNN's recurrence step by step (STANDARD: a GEMM and a pointwise kernel per
// step, about 20 µs a step on an H200 whatever the size) or in one persistent kernel that keeps
// the recurrent weights on chip for all steps (PERSIST_STATIC, and PERSIST_STATIC_SMALL_H for
// small hidden sizes). cuDNN does not choose: the caller names the algorithm. The frameworks'
// choice for a forward pass over full-length sequences, which gapbench makes too (PyTorch's
// cuDNN RNN heuristic; one layer, one direction, no projection here):
//   - hidden <= 192 on compute capability 6.0 and later: PERSIST_STATIC_SMALL_H, any data type;
//   - float16 data with hidden <= 1024, hidden and input multiples of 128, and a batch the
//     device's rule accepts: PERSIST_STATIC. The rule: on 8.x and later with at least 98
//     multiprocessors (not 8.6), batch a multiple of 8 up to 128; on 7.x but 7.5, batch 8 or a
//     multiple of 16 other than 80 and 112, up to 128 at >= 40 steps, 96 at >= 20, 32 at >= 10;
//   - else STANDARD.
enum class RnnAlgorithm { standard, persist_static, persist_static_small_h };
// "standard", "persist_static", "persist_static_small_h" (for labels).
const char* rnn_algorithm_name(RnnAlgorithm algorithm);
// What the choice reads of the GPU.
struct GpuFacts {
  int major = 0, minor = 0;  // compute capability
  int multiprocessors = 0;
};
RnnAlgorithm framework_rnn_algorithm(const Shape& shape, Arithmetic arithmetic,
                                     const GpuFacts& gpu);

// ---- CPU `blas` variant ----
//
// The standard trick of LSTM implementations (cuDNN, oneDNN, Keras's fused kernels): x_t does not
// depend on the previous step, so the input projection of all steps is one large GEMM,
// [steps·batch x input] · W[0:input], before the loop (hoisted). Each step is then one SGEMM for
// all four gates, h_{t-1} · W[input:], and one vectorized pointwise pass that adds the projection
// and the bias and applies the gates. OpenBLAS (all its threads) runs the GEMMs.
class BlasLstm {
 public:
  BlasLstm(const Shape& shape, const Weights& weights);  // keeps a reference to `weights`

  // The hoisted input projection of the whole x [steps][batch][input] into xproj(), no bias.
  void project(const float* x);
  // Step t (after project()): h_prev, c_prev -> h, c, all [batch][hidden]. c may be c_prev.
  void step(std::size_t t, const float* h_prev, const float* c_prev, float* h, float* c);
  // The whole sequence: project(), then every step. h_seq [steps][batch][hidden]; c_last
  // [batch][hidden] ends as the final c.
  void sequence(const float* x, const float* h0, const float* c0, float* h_seq, float* c_last);

  const Shape& shape() const { return shape_; }
  const std::vector<float>& xproj() const { return xproj_; }  // [steps][batch][4·hidden]

 private:
  Shape shape_;
  const Weights& weights_;
  std::vector<float> xproj_, gates_;
};

// The pointwise update of one step: z = gates + xproj + b per batch row (gates, xproj
// [batch][4·hidden]), then the gates and the cell update. c may be c_prev (updated in place) or
// must not overlap it.
void pointwise(const Shape& shape, const float* gates, const float* xproj, const float* b,
               const float* c_prev, float* h, float* c);

}  // namespace gapbench::lstm
