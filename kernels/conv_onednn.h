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
// Direct convolution (algorithm::convolution_direct), oneDNN's default strict math and its own
// OpenMP threads (all cores). Float32 throughout, or (Arithmetic::bf16) the input and filter
// held in bfloat16, the output float32, sums in float32: what a framework's bf16 autocast runs.
// Whether this CPU runs bf16 natively is kernels/onednn_isa.h's rule, asked before creating one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

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

  // y (N x K x P x Q) from x (N x C x H x W); returns when y is written. x is float32 for a
  // float32 convolution and bfloat16 bits (to_bf16) for a bf16 one; the other throws
  // std::invalid_argument.
  void forward(const float* x, float* y);
  void forward(const std::uint16_t* x, float* y);

  Arithmetic arithmetic() const;

  // Wall seconds the constructor spent: primitive and reorder creation (oneDNN JIT-compiles its
  // kernels here) and the filter's reorder.
  double setup_seconds() const;
  // oneDNN's name for the implementation it picked ("jit:avx2", "brg:avx512_core", ...), and
  // which tensors forward() reorders: "jit:avx2, reorders input and output".
  std::string description() const;

 private:
  void run(void* x, float* y);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// float32 to bfloat16 bits, rounded to nearest even (oneDNN's conversion).
std::vector<std::uint16_t> to_bf16(const std::vector<float>& x);

}  // namespace gapbench::conv
