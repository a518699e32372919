// Tests' model of the narrow formats: a float32 value as float16, bfloat16 or TF32 holds it, so a
// test can build what a mixed-precision variant computes without the hardware.
#pragma once

#include <cmath>

#include "kernels/base/validate.h"

namespace gapbench {

// x with `bits` significant bits: rounded to nearest even (float16: 11, bfloat16: 8) or truncated
// (TF32 as tensor cores may read it: 11). Exponent range aside, what those formats hold.
inline float keep_bits(float x, int bits, bool truncate = false) {
  int e = 0;
  const double m = std::frexp(static_cast<double>(x), &e);
  const double scaled = std::ldexp(m, bits);
  return static_cast<float>(
      std::ldexp(truncate ? std::trunc(scaled) : std::nearbyint(scaled), e - bits));
}

// x as `arithmetic` holds an input: float16 and bfloat16 rounded to nearest, TF32 truncated (the
// worse of what tensor cores may do), float32 as it is.
inline float narrowed(float x, Arithmetic arithmetic) {
  switch (arithmetic) {
    case Arithmetic::fp16:
      return keep_bits(x, 11);
    case Arithmetic::bf16:
      return keep_bits(x, 8);
    case Arithmetic::tf32:
      return keep_bits(x, 11, true);
    case Arithmetic::float32:
      break;
  }
  return x;
}

}  // namespace gapbench
