// Family `lstm`, CPU `onednn` variant: oneDNN's LSTM primitive (lstm_forward, inference) over the
// whole sequence. The primitive, its memories and the weights in the layout it prefers are made
// once, in the constructor; run() only executes it and waits.
//
// Weights: oneDNN takes weights_layer [1][1][input][4][hidden] and weights_iter
// [1][1][hidden][4][hidden] (ldigo) with the gates in the order i, f, c̃, o, and the bias
// [1][1][4][hidden] (ldgo): exactly the reference's W rows 0..input-1, its rows input.., and b,
// so they are wrapped as they are, then reordered once into the (packed) layout the primitive
// asks for with format_tag::any.
//
// Arithmetic: float32 throughout, or (Arithmetic::bf16) x, h and the weights held in bfloat16 with
// float32 sums, gates, bias and c, oneDNN's bf16 LSTM configuration and what a framework's bf16
// autocast runs. h_t comes out in bfloat16 too. Whether this CPU runs bf16 natively is
// kernels/onednn_isa.h's rule, asked before creating one.
#pragma once

#include <dnnl.hpp>

#include <vector>

#include "kernels/lstm.h"

namespace gapbench::lstm {

class OnednnLstm {
 public:
  // Throws std::invalid_argument when the weights do not fit the shape or the arithmetic is not
  // float32 or bf16, and dnnl::error when oneDNN refuses the primitive.
  OnednnLstm(const Shape& shape, const Weights& weights,
             Arithmetic arithmetic = Arithmetic::float32);

  // Copies the inputs in (for bf16, rounded to nearest even): x [steps][batch][input], h0 and c0
  // [batch][hidden]. Not part of run(): a framework's tensors are already in the model's format.
  void set_inputs(const float* x, const float* h0, const float* c0);
  void run();  // the whole sequence, synchronously

  // Outputs of the last run(), as float32 (bf16 ones widened, exactly): h_seq
  // [steps][batch][hidden], the last h and c [batch][hidden].
  std::vector<float> h_seq() const { return floats(h_seq_); }
  std::vector<float> h_last() const { return floats(h_last_); }
  std::vector<float> c_last() const { return floats(c_last_); }

  const Shape& shape() const { return shape_; }
  // The arithmetic and output formats, for check_sequence / check_step.
  Precision precision() const { return {arithmetic_, arithmetic_, Arithmetic::float32}; }

 private:
  std::vector<float> floats(const dnnl::memory& m) const;
  void fill(dnnl::memory& m, const float* from);

  Shape shape_;
  Arithmetic arithmetic_;
  dnnl::engine engine_;
  mutable dnnl::stream stream_;
  dnnl::memory x_, h0_, c0_, w_layer_, w_iter_, bias_, h_seq_, h_last_, c_last_;
  dnnl::lstm_forward primitive_;
};

}  // namespace gapbench::lstm
