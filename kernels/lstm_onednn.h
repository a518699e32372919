// Family `lstm`, CPU `onednn` variant: oneDNN's LSTM primitive (lstm_forward, inference) over the
// whole sequence. The primitive, its memories and the weights in the layout it prefers are made
// once, in the constructor; run() only executes it and waits.
//
// Weights: oneDNN takes weights_layer [1][1][input][4][hidden] and weights_iter
// [1][1][hidden][4][hidden] (ldigo) with the gates in the order i, f, c̃, o, and the bias
// [1][1][4][hidden] (ldgo): exactly the reference's W rows 0..input-1, its rows input.., and b,
// so they are wrapped as they are, then reordered once into the (packed) layout the primitive
// asks for with format_tag::any.
#pragma once

#include <dnnl.hpp>

#include "kernels/lstm.h"

namespace gapbench::lstm {

class OnednnLstm {
 public:
  // Throws std::invalid_argument when the weights do not fit the shape.
  OnednnLstm(const Shape& shape, const Weights& weights);

  // Inputs the caller fills: x [steps][batch][input], h0 and c0 [batch][hidden].
  float* x() { return data(x_); }
  float* h0() { return data(h0_); }
  float* c0() { return data(c0_); }
  // Outputs of run(): h_seq [steps][batch][hidden], the last h and c [batch][hidden].
  const float* h_seq() const { return data(h_seq_); }
  const float* h_last() const { return data(h_last_); }
  const float* c_last() const { return data(c_last_); }

  void run();  // the whole sequence, synchronously
  const Shape& shape() const { return shape_; }

 private:
  static float* data(const dnnl::memory& m) { return static_cast<float*>(m.get_data_handle()); }

  Shape shape_;
  dnnl::engine engine_;
  dnnl::stream stream_;
  dnnl::memory x_, h0_, c0_, w_layer_, w_iter_, bias_, h_seq_, h_last_, c_last_;
  dnnl::lstm_forward primitive_;
};

}  // namespace gapbench::lstm
