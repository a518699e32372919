#include "kernels/lstm_onednn.h"

#include <unordered_map>

namespace gapbench::lstm {

namespace {

using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;
using dims = dnnl::memory::dims;

dnnl::memory::dim dim(std::size_t n) { return static_cast<dnnl::memory::dim>(n); }

// A copy of `user` (the reference's layout, wrapped without a copy) in the layout `want`, owned
// by oneDNN, so the primitive does not depend on the caller's weights outliving it.
dnnl::memory reordered(dnnl::memory user, const dnnl::memory::desc& want,
                       const dnnl::engine& engine, dnnl::stream& stream) {
  dnnl::memory out(want, engine);
  dnnl::reorder(user, out).execute(stream, user, out);
  stream.wait();
  return out;
}

}  // namespace

OnednnLstm::OnednnLstm(const Shape& s, const Weights& weights)
    : shape_((check_weights(s, weights), s)),
      engine_(dnnl::engine::kind::cpu, 0),
      stream_(engine_) {
  const auto T = dim(s.steps), N = dim(s.batch), I = dim(s.input), H = dim(s.hidden);
  const dnnl::memory::desc x_desc({T, N, I}, dt::f32, tag::tnc);
  const dnnl::memory::desc state_desc({1, 1, N, H}, dt::f32, tag::ldnc);
  const dnnl::memory::desc h_seq_desc({T, N, H}, dt::f32, tag::tnc);
  const dnnl::memory::desc bias_desc({1, 1, 4, H}, dt::f32, tag::ldgo);
  // `any`: let the primitive pick the weights' layout (a packed GEMM layout on CPUs).
  const dnnl::memory::desc w_layer_any({1, 1, I, 4, H}, dt::f32, tag::any);
  const dnnl::memory::desc w_iter_any({1, 1, H, 4, H}, dt::f32, tag::any);
  const auto prop = dnnl::prop_kind::forward_inference;
  const auto direction = dnnl::rnn_direction::unidirectional_left2right;
#if DNNL_VERSION_MAJOR >= 3  // newer distributions and PyPI; Debian 12 has 2.6
  const dnnl::lstm_forward::primitive_desc pd(engine_, prop, direction, x_desc, state_desc,
                                              state_desc, w_layer_any, w_iter_any, bias_desc,
                                              h_seq_desc, state_desc, state_desc);
#else
  const dnnl::lstm_forward::desc desc(prop, direction, x_desc, state_desc, state_desc, w_layer_any,
                                      w_iter_any, bias_desc, h_seq_desc, state_desc, state_desc);
  const dnnl::lstm_forward::primitive_desc pd(desc, engine_);
#endif

  x_ = dnnl::memory(x_desc, engine_);
  h0_ = dnnl::memory(state_desc, engine_);
  c0_ = dnnl::memory(state_desc, engine_);
  h_seq_ = dnnl::memory(h_seq_desc, engine_);
  h_last_ = dnnl::memory(state_desc, engine_);
  c_last_ = dnnl::memory(state_desc, engine_);

  // The reference's W rows 0..input-1 and rows input.. are ldigo as they stand; b is ldgo.
  float* w = const_cast<float*>(weights.w.data());  // only read: reorders take non-const memory
  const dnnl::memory w_layer_user({{1, 1, I, 4, H}, dt::f32, tag::ldigo}, engine_, w);
  const dnnl::memory w_iter_user({{1, 1, H, 4, H}, dt::f32, tag::ldigo}, engine_,
                                 w + s.input * s.gates());
  const dnnl::memory bias_user(bias_desc, engine_, const_cast<float*>(weights.b.data()));
  w_layer_ = reordered(w_layer_user, pd.weights_layer_desc(), engine_, stream_);
  w_iter_ = reordered(w_iter_user, pd.weights_iter_desc(), engine_, stream_);
  bias_ = reordered(bias_user, pd.bias_desc(), engine_, stream_);
  primitive_ = dnnl::lstm_forward(pd);
}

void OnednnLstm::run() {
  primitive_.execute(stream_, {{DNNL_ARG_SRC_LAYER, x_},
                               {DNNL_ARG_SRC_ITER, h0_},
                               {DNNL_ARG_SRC_ITER_C, c0_},
                               {DNNL_ARG_WEIGHTS_LAYER, w_layer_},
                               {DNNL_ARG_WEIGHTS_ITER, w_iter_},
                               {DNNL_ARG_BIAS, bias_},
                               {DNNL_ARG_DST_LAYER, h_seq_},
                               {DNNL_ARG_DST_ITER, h_last_},
                               {DNNL_ARG_DST_ITER_C, c_last_}});
  stream_.wait();
}

}  // namespace gapbench::lstm
