#include "kernels/base/narrow_gpu.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstring>
#include <stdexcept>
#include <string>

namespace gapbench {

namespace {

void require_16bit(Arithmetic arithmetic) {
  if (input_bytes(arithmetic) != 2) {
    throw std::invalid_argument(std::string("not a 16-bit format: ") + math_name(arithmetic));
  }
}

}  // namespace

std::vector<std::uint16_t> to_16bit(const float* x, std::size_t n, Arithmetic arithmetic) {
  require_16bit(arithmetic);
  std::vector<std::uint16_t> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (arithmetic == Arithmetic::fp16) {
      const __half h = __float2half_rn(x[i]);
      std::memcpy(&out[i], &h, sizeof out[i]);
    } else {
      const __nv_bfloat16 h = __float2bfloat16_rn(x[i]);
      std::memcpy(&out[i], &h, sizeof out[i]);
    }
  }
  return out;
}

std::vector<float> from_16bit(const std::uint16_t* bits, std::size_t n, Arithmetic arithmetic) {
  require_16bit(arithmetic);
  std::vector<float> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (arithmetic == Arithmetic::fp16) {
      __half_raw raw;
      raw.x = bits[i];
      out[i] = __half2float(__half(raw));
    } else {
      __nv_bfloat16_raw raw;
      raw.x = bits[i];
      out[i] = __bfloat162float(__nv_bfloat16(raw));
    }
  }
  return out;
}

}  // namespace gapbench
