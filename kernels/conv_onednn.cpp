#include "kernels/conv_onednn.h"

#include <chrono>
#include <oneapi/dnnl/dnnl.hpp>
#include <stdexcept>
#include <utility>

namespace gapbench::conv {

namespace {

using dnnl::memory;
using tag = memory::format_tag;

memory::dim dim(std::size_t v) { return static_cast<memory::dim>(v); }

memory::data_type input_type(Arithmetic arithmetic) {
  if (arithmetic == Arithmetic::float32) return memory::data_type::f32;
  if (arithmetic == Arithmetic::bf16) return memory::data_type::bf16;
  throw std::invalid_argument(std::string("conv onednn: no ") + math_name(arithmetic) +
                              " variant (float32 or bf16)");
}

// The name of `md`'s layout among those oneDNN picks for activations, or "blocked". (The dims
// and type are passed in: their getters were renamed between oneDNN 2 and 3.)
std::string layout_name(const memory::desc& md, const memory::dims& dims, memory::data_type type) {
  const std::pair<tag, const char*> known[] = {
      {tag::nhwc, "NHWC"}, {tag::nchw, "NCHW"}, {tag::nChw8c, "nChw8c"}, {tag::nChw16c, "nChw16c"}};
  for (const auto& [t, name] : known) {
    if (md == memory::desc(dims, type, t)) return name;
  }
  return "blocked";
}

}  // namespace

struct OnednnConvolution::Impl {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  dnnl::convolution_forward conv;
  // The caller's plain NCHW layouts, wrapped per call, and the primitive's, owned here.
  memory user_src, user_dst;
  memory src, weights, dst, scratchpad;
  dnnl::reorder src_in, dst_out;
  bool loaded = false, computed = false;
  std::string implementation, layout;
  double setup_seconds = 0.0;
  Arithmetic arithmetic = Arithmetic::float32;
};

OnednnConvolution::OnednnConvolution(const ConvShape& shape, const float* w, Arithmetic arithmetic)
    : impl_((check_shape(shape), input_type(arithmetic), std::make_unique<Impl>())) {
  Impl& m = *impl_;
  m.arithmetic = arithmetic;
  const auto in = input_type(arithmetic);
  const auto t0 = std::chrono::steady_clock::now();
  const memory::dims src_dims{dim(shape.n), dim(shape.c), dim(shape.h), dim(shape.w)};
  const memory::dims weight_dims{dim(shape.k), dim(shape.c), dim(shape.r), dim(shape.s)};
  const memory::dims dst_dims{dim(shape.n), dim(shape.k), dim(shape.p()), dim(shape.q())};
  const memory::dims strides{dim(shape.stride), dim(shape.stride)};
  const memory::dims padding{dim(shape.pad), dim(shape.pad)};
  const auto f32 = memory::data_type::f32;

  // Formats left to oneDNN ("any"): it picks the layouts its fast kernels need.
  const memory::desc src_any(src_dims, in, tag::any), weight_any(weight_dims, in, tag::any),
      dst_any(dst_dims, f32, tag::any);
  const auto prop = dnnl::prop_kind::forward_inference;
  const auto direct = dnnl::algorithm::convolution_direct;
  // The scratchpad is ours, allocated once, so that no execution allocates (TensorFlow does so).
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
#if DNNL_VERSION_MAJOR >= 3  // newer distributions and PyPI; Debian 12 has 2.6
  const dnnl::convolution_forward::primitive_desc pd(m.engine, prop, direct, src_any, weight_any,
                                                     dst_any, strides, padding, padding, attr);
#else
  const dnnl::convolution_forward::desc desc(prop, direct, src_any, weight_any, dst_any, strides,
                                             padding, padding);
  const dnnl::convolution_forward::primitive_desc pd(desc, attr, m.engine);
#endif
  m.conv = dnnl::convolution_forward(pd);
  m.implementation = pd.impl_info_str();
  const std::string src_layout = layout_name(pd.src_desc(), src_dims, in),
                    dst_layout = layout_name(pd.dst_desc(), dst_dims, f32);
  m.layout = src_layout == dst_layout ? src_layout : src_layout + " in, " + dst_layout + " out";

  // Handles are set per call for the caller's buffers.
  m.user_src = memory({src_dims, f32, tag::nchw}, m.engine, DNNL_MEMORY_NONE);
  m.user_dst = memory({dst_dims, f32, tag::nchw}, m.engine, DNNL_MEMORY_NONE);
  m.src = memory(pd.src_desc(), m.engine);
  m.dst = memory(pd.dst_desc(), m.engine);
  m.scratchpad = memory(pd.scratchpad_desc(), m.engine);
  m.src_in = dnnl::reorder(m.user_src, m.src);
  m.dst_out = dnnl::reorder(m.dst, m.user_dst);
  // The filter, reordered (and for bf16 rounded) once into memory this object owns.
  memory user_weights({weight_dims, f32, tag::oihw}, m.engine, const_cast<float*>(w));  // read
  m.weights = memory(pd.weights_desc(), m.engine);
  dnnl::reorder(user_weights, m.weights).execute(m.stream, user_weights, m.weights);
  m.stream.wait();
  m.setup_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

OnednnConvolution::~OnednnConvolution() = default;

void OnednnConvolution::load_input(const float* x) {
  Impl& m = *impl_;
  m.user_src.set_data_handle(const_cast<float*>(x));  // a reorder only reads its source
  m.src_in.execute(m.stream, m.user_src, m.src);
  m.stream.wait();
  m.loaded = true;
}

void OnednnConvolution::forward() {
  Impl& m = *impl_;
  if (!m.loaded) throw std::logic_error("conv onednn: forward() before load_input()");
  m.conv.execute(m.stream, {{DNNL_ARG_SRC, m.src},
                            {DNNL_ARG_WEIGHTS, m.weights},
                            {DNNL_ARG_DST, m.dst},
                            {DNNL_ARG_SCRATCHPAD, m.scratchpad}});
  m.stream.wait();
  m.computed = true;
}

void OnednnConvolution::read_output(float* y) {
  Impl& m = *impl_;
  if (!m.computed) throw std::logic_error("conv onednn: read_output() before forward()");
  m.user_dst.set_data_handle(y);
  m.dst_out.execute(m.stream, m.dst, m.user_dst);
  m.stream.wait();
}

double OnednnConvolution::setup_seconds() const { return impl_->setup_seconds; }

Arithmetic OnednnConvolution::arithmetic() const { return impl_->arithmetic; }

std::string OnednnConvolution::description() const {
  const std::string math = impl_->arithmetic == Arithmetic::float32
                               ? ""
                               : std::string(", math:") + math_name(impl_->arithmetic);
  return impl_->implementation + ", " + impl_->layout + math;
}

}  // namespace gapbench::conv
