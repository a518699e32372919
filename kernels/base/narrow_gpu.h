// Host-side conversions between float32 and the 16-bit formats the GPU's mixed-precision variants
// hold their data in (CUDA builds only: cuda_fp16.h and cuda_bf16.h do the rounding).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/base/validate.h"

namespace gapbench {

// The 16-bit patterns of x[0..n) in float16 or bfloat16 (`arithmetic`), rounded to nearest even.
// Throws std::invalid_argument for an arithmetic that is not 16-bit.
std::vector<std::uint16_t> to_16bit(const float* x, std::size_t n, Arithmetic arithmetic);
inline std::vector<std::uint16_t> to_16bit(const std::vector<float>& x, Arithmetic arithmetic) {
  return to_16bit(x.data(), x.size(), arithmetic);
}
// Their float32 values (exact: every float16 and bfloat16 is a float32).
std::vector<float> from_16bit(const std::uint16_t* bits, std::size_t n, Arithmetic arithmetic);

}  // namespace gapbench
