// Family `conv`, CPU library variant: oneDNN's convolution primitive, as TensorFlow and PyTorch
// run convolutions on the CPU.
//
// Set-up (once, outside any timed loop, as a framework caches it): the primitive for the shape,
// with oneDNN choosing its preferred memory formats (`any`: NHWC for its brgemm kernels on
// AVX-512, a channel-blocked nChw8c/nChw16c for its older jit kernels), and the filter reordered
// once into the primitive's format (frameworks keep weights pre-packed). The caller's tensors are
// plain NCHW; load_input() reorders one into the primitive's source format and read_output()
// reorders the result back, both outside the timing. forward() is then the primitive alone on
// activations already in its layout: the floor a framework reaches when its tensors are in that
// layout between layers (TensorFlow's NHWC is brgconv's own on AVX-512, so TensorFlow runs no
// reorder of its activations there; an NCHW framework pays one on the way in and one out).
//
// Direct convolution (algorithm::convolution_direct), oneDNN's default strict math, its own
// OpenMP threads (all cores) and a scratchpad this object owns (allocated once, as TensorFlow
// passes its own). Float32 throughout, or (Arithmetic::bf16) the input and filter held in
// bfloat16, the output float32, sums in float32: what a framework's bf16 autocast runs. Whether
// this CPU runs bf16 natively is kernels/onednn_isa.h's rule, asked before creating one.
#pragma once

#include <memory>
#include <string>

#include "kernels/conv.h"

namespace gapbench::conv {

class OnednnConvolution {
 public:
  // `w` is the K x C x R x S filter; it is copied (reordered, and for bf16 rounded) here.
  // Throws std::invalid_argument for an impossible shape or an arithmetic other than float32 and
  // bf16 (before creating anything), and dnnl::error if oneDNN refuses it.
  OnednnConvolution(const ConvShape& shape, const float* w,
                    Arithmetic arithmetic = Arithmetic::float32);
  ~OnednnConvolution();
  OnednnConvolution(const OnednnConvolution&) = delete;
  OnednnConvolution& operator=(const OnednnConvolution&) = delete;

  // x (N x C x H x W, float32) into the primitive's source format and data type, which this
  // object holds (for bf16 rounded to nearest even, as a framework's cast does).
  void load_input(const float* x);
  // The convolution of the loaded input, into the primitive's destination; returns when it is
  // written. Throws std::logic_error before any input was loaded.
  void forward();
  // y (N x K x P x Q, float32) from the last forward(); std::logic_error before any.
  void read_output(float* y);

  Arithmetic arithmetic() const;

  // Wall seconds the constructor spent: primitive and reorder creation (oneDNN JIT-compiles its
  // kernels here) and the filter's reorder.
  double setup_seconds() const;
  // oneDNN's name for the implementation it picked ("jit:avx2", "brgconv:avx512_core", ...) and
  // its activations' layout: "brgconv:avx512_core, NHWC".
  std::string description() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gapbench::conv
