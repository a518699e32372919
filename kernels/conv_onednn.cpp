#include "kernels/conv_onednn.h"

#include <chrono>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <stdexcept>

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

}  // namespace

struct OnednnConvolution::Impl {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  dnnl::convolution_forward conv;
  // The caller's layouts (plain NCHW) and the primitive's; the caller's are only wrapped.
  memory user_src, user_dst;
  memory src, weights, dst;
  std::optional<dnnl::reorder> src_in, dst_out;  // only where the formats differ
  std::string implementation;
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

  // Formats left to oneDNN ("any"): it picks the blocked layouts its fast kernels need.
  const memory::desc src_any(src_dims, in, tag::any), weight_any(weight_dims, in, tag::any),
      dst_any(dst_dims, f32, tag::any);
  const auto prop = dnnl::prop_kind::forward_inference;
  const auto direct = dnnl::algorithm::convolution_direct;
#if DNNL_VERSION_MAJOR >= 3  // newer distributions and PyPI; Debian 12 has 2.6
  const dnnl::convolution_forward::primitive_desc pd(m.engine, prop, direct, src_any, weight_any,
                                                     dst_any, strides, padding, padding);
#else
  const dnnl::convolution_forward::desc desc(prop, direct, src_any, weight_any, dst_any, strides,
                                             padding, padding);
  const dnnl::convolution_forward::primitive_desc pd(desc, m.engine);
#endif
  m.conv = dnnl::convolution_forward(pd);
  m.implementation = pd.impl_info_str();

  const memory::desc user_src_md(src_dims, in, tag::nchw);
  const memory::desc user_weight_md(weight_dims, f32, tag::oihw);
  const memory::desc user_dst_md(dst_dims, f32, tag::nchw);
  // Handles are set per call (forward) for the caller's buffers.
  m.user_src = memory(user_src_md, m.engine, DNNL_MEMORY_NONE);
  m.user_dst = memory(user_dst_md, m.engine, DNNL_MEMORY_NONE);

  if (pd.src_desc() != user_src_md) {
    m.src = memory(pd.src_desc(), m.engine);
    m.src_in = dnnl::reorder(m.user_src, m.src);
  } else {
    m.src = m.user_src;
  }
  if (pd.dst_desc() != user_dst_md) {
    m.dst = memory(pd.dst_desc(), m.engine);
    m.dst_out = dnnl::reorder(m.dst, m.user_dst);
  } else {
    m.dst = m.user_dst;
  }
  // The filter, reordered (or copied) once into memory this object owns.
  memory user_weights(user_weight_md, m.engine, const_cast<float*>(w));  // read only
  m.weights = memory(pd.weights_desc(), m.engine);
  dnnl::reorder(user_weights, m.weights).execute(m.stream, user_weights, m.weights);
  m.stream.wait();
  m.setup_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

OnednnConvolution::~OnednnConvolution() = default;

void OnednnConvolution::forward(const float* x, float* y) {
  if (impl_->arithmetic != Arithmetic::float32)
    throw std::invalid_argument("conv onednn: a bf16 convolution takes bf16 input");
  run(const_cast<float*>(x), y);  // oneDNN only reads a source
}

void OnednnConvolution::forward(const std::uint16_t* x, float* y) {
  if (impl_->arithmetic != Arithmetic::bf16)
    throw std::invalid_argument("conv onednn: a float32 convolution takes float32 input");
  run(const_cast<std::uint16_t*>(x), y);
}

void OnednnConvolution::run(void* x, float* y) {
  Impl& m = *impl_;
  m.user_src.set_data_handle(x);
  m.user_dst.set_data_handle(y);
  if (m.src_in) m.src_in->execute(m.stream, m.user_src, m.src);
  m.conv.execute(m.stream,
                 {{DNNL_ARG_SRC, m.src}, {DNNL_ARG_WEIGHTS, m.weights}, {DNNL_ARG_DST, m.dst}});
  if (m.dst_out) m.dst_out->execute(m.stream, m.dst, m.user_dst);
  m.stream.wait();
}

double OnednnConvolution::setup_seconds() const { return impl_->setup_seconds; }

Arithmetic OnednnConvolution::arithmetic() const { return impl_->arithmetic; }

std::string OnednnConvolution::description() const {
  const bool in = impl_->src_in.has_value(), out = impl_->dst_out.has_value();
  const char* reorders = in && out ? "reorders input and output"
                         : in      ? "reorders input"
                         : out     ? "reorders output"
                                   : "no reorders";
  const std::string math = impl_->arithmetic == Arithmetic::float32
                               ? ""
                               : std::string(", math:") + math_name(impl_->arithmetic);
  return impl_->implementation + ", " + reorders + math;
}

std::vector<std::uint16_t> to_bf16(const std::vector<float>& x) {
  std::vector<std::uint16_t> out(x.size());
  if (x.empty()) return out;
  const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  const memory::dims dims{dim(x.size())};
  memory from({dims, memory::data_type::f32, tag::a}, engine, const_cast<float*>(x.data()));
  memory to({dims, memory::data_type::bf16, tag::a}, engine, out.data());
  dnnl::reorder(from, to).execute(stream, from, to);
  stream.wait();
  return out;
}

}  // namespace gapbench::conv
