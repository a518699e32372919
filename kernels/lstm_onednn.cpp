#include "kernels/lstm_onednn.h"

#include <stdexcept>
#include <string>

namespace gapbench::lstm {

namespace {

using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

dnnl::memory::dim dim(std::size_t n) { return static_cast<dnnl::memory::dim>(n); }

dt data_type(Arithmetic arithmetic) {
  if (arithmetic == Arithmetic::float32) return dt::f32;
  if (arithmetic == Arithmetic::bf16) return dt::bf16;
  throw std::invalid_argument(std::string("lstm onednn: no ") + math_name(arithmetic) +
                              " variant (float32 or bf16)");
}

// `from` in `to`'s layout and data type, written into `to` (both already exist).
void reorder(dnnl::memory from, dnnl::memory to, dnnl::stream& stream) {
  dnnl::reorder(from, to).execute(stream, from, to);
  stream.wait();
}

// The same dims as `m`, float32 in the plain layout `plain`.
dnnl::memory::desc as_f32(const dnnl::memory& m, tag plain) {
  return {m.get_desc().dims(), dt::f32, plain};
}

tag plain_tag(const dnnl::memory& m) {
  return m.get_desc().dims().size() == 3 ? tag::tnc : tag::ldnc;
}

}  // namespace

OnednnLstm::OnednnLstm(const Shape& s, const Weights& weights, Arithmetic arithmetic)
    : shape_((check_weights(s, weights), s)),
      arithmetic_((data_type(arithmetic), arithmetic)),
      engine_(dnnl::engine::kind::cpu, 0),
      stream_(engine_) {
  const auto T = dim(s.steps), N = dim(s.batch), I = dim(s.input), H = dim(s.hidden);
  const dt data = data_type(arithmetic);
  const dnnl::memory::desc x_desc({T, N, I}, data, tag::tnc);
  const dnnl::memory::desc h_desc({1, 1, N, H}, data, tag::ldnc);
  const dnnl::memory::desc c_desc({1, 1, N, H}, dt::f32, tag::ldnc);  // c stays float32
  const dnnl::memory::desc h_seq_desc({T, N, H}, data, tag::tnc);
  const dnnl::memory::desc bias_desc({1, 1, 4, H}, dt::f32, tag::ldgo);
  // `any`: let the primitive pick the weights' layout (a packed GEMM layout on CPUs).
  const dnnl::memory::desc w_layer_any({1, 1, I, 4, H}, data, tag::any);
  const dnnl::memory::desc w_iter_any({1, 1, H, 4, H}, data, tag::any);
  const auto prop = dnnl::prop_kind::forward_inference;
  const auto direction = dnnl::rnn_direction::unidirectional_left2right;
#if DNNL_VERSION_MAJOR >= 3  // newer distributions and PyPI; Debian 12 has 2.6
  const dnnl::lstm_forward::primitive_desc pd(engine_, prop, direction, x_desc, h_desc, c_desc,
                                              w_layer_any, w_iter_any, bias_desc, h_seq_desc,
                                              h_desc, c_desc);
#else
  const dnnl::lstm_forward::desc desc(prop, direction, x_desc, h_desc, c_desc, w_layer_any,
                                      w_iter_any, bias_desc, h_seq_desc, h_desc, c_desc);
  const dnnl::lstm_forward::primitive_desc pd(desc, engine_);
#endif

  x_ = dnnl::memory(x_desc, engine_);
  h0_ = dnnl::memory(h_desc, engine_);
  c0_ = dnnl::memory(c_desc, engine_);
  h_seq_ = dnnl::memory(h_seq_desc, engine_);
  h_last_ = dnnl::memory(h_desc, engine_);
  c_last_ = dnnl::memory(c_desc, engine_);

  // The reference's W rows 0..input-1 and rows input.. are ldigo as they stand; b is ldgo. They
  // are reordered (and for bf16 rounded) into memories oneDNN owns, so the primitive does not
  // depend on the caller's weights outliving it.
  float* w = const_cast<float*>(weights.w.data());  // only read: reorders take non-const memory
  const dnnl::memory w_layer_user({{1, 1, I, 4, H}, dt::f32, tag::ldigo}, engine_, w);
  const dnnl::memory w_iter_user({{1, 1, H, 4, H}, dt::f32, tag::ldigo}, engine_,
                                 w + s.input * s.gates());
  const dnnl::memory bias_user(bias_desc, engine_, const_cast<float*>(weights.b.data()));
  w_layer_ = dnnl::memory(pd.weights_layer_desc(), engine_);
  w_iter_ = dnnl::memory(pd.weights_iter_desc(), engine_);
  bias_ = dnnl::memory(pd.bias_desc(), engine_);
  reorder(w_layer_user, w_layer_, stream_);
  reorder(w_iter_user, w_iter_, stream_);
  reorder(bias_user, bias_, stream_);
  primitive_ = dnnl::lstm_forward(pd);
}

void OnednnLstm::fill(dnnl::memory& m, const float* from) {
  const dnnl::memory user(as_f32(m, plain_tag(m)), engine_, const_cast<float*>(from));
  reorder(user, m, stream_);
}

void OnednnLstm::set_inputs(const float* x, const float* h0, const float* c0) {
  fill(x_, x);
  fill(h0_, h0);
  fill(c0_, c0);
}

std::vector<float> OnednnLstm::floats(const dnnl::memory& m) const {
  const dnnl::memory::desc desc = as_f32(m, plain_tag(m));
  std::vector<float> out(desc.get_size() / sizeof(float));
  reorder(m, dnnl::memory(desc, engine_, out.data()), stream_);
  return out;
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
