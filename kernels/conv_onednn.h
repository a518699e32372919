// Family `conv`, CPU library variant: oneDNN's convolution primitive, as TensorFlow and PyTorch
// run convolutions on the CPU.
//
// Set-up (once, outside any timed loop, as a framework caches it): the primitive for the shape,
// with oneDNN choosing its preferred (blocked) memory formats; reorder primitives between those
// and the caller's plain NCHW / KCRS layouts; and the filter reordered once into the primitive's
// format (frameworks keep weights pre-packed). forward() then reorders the input in, runs the
// convolution and reorders the output back to NCHW where the formats differ, so a caller with
// NCHW tensors pays what a framework with NCHW tensors pays.
//
// Direct convolution (algorithm::convolution_direct), float32, oneDNN's default strict math and
// its own OpenMP threads (all cores).
#pragma once

#include <memory>
#include <string>

#include "kernels/conv.h"

namespace gapbench::conv {

class OnednnConvolution {
 public:
  // `w` is the K x C x R x S filter; it is copied (reordered) here. Throws std::invalid_argument
  // for an impossible shape (before creating anything) and dnnl::error if oneDNN refuses it.
  OnednnConvolution(const ConvShape& shape, const float* w);
  ~OnednnConvolution();
  OnednnConvolution(const OnednnConvolution&) = delete;
  OnednnConvolution& operator=(const OnednnConvolution&) = delete;

  // y (N x K x P x Q) from x (N x C x H x W); returns when y is written.
  void forward(const float* x, float* y);

  // Wall seconds the constructor spent: primitive and reorder creation (oneDNN JIT-compiles its
  // kernels here) and the filter's reorder.
  double setup_seconds() const;
  // oneDNN's name for the implementation it picked ("jit:avx2", "brg:avx512_core", ...), and
  // which tensors forward() reorders: "jit:avx2, reorders input and output".
  std::string description() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gapbench::conv
