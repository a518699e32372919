// Family `conv`: what the CPU and GPU variants share. One shape's data (seeded input and filter)
// and its float64 reference are built once (fixtures/setup_cache.h) and checked against by every
// variant, each with the tolerance of its arithmetic (kernels/conv.h).
#pragma once

#include <string>
#include <vector>

#include "fixtures/harness.h"
#include "fixtures/validate.h"
#include "kernels/conv.h"

namespace gapbench::conv {

struct ConvData {
  // Rejects an impossible shape (std::invalid_argument) before allocating anything.
  explicit ConvData(const ConvShape& s);

  Validation check(const std::vector<float>& y, Arithmetic arithmetic) const {
    return validate("conv", y, ref, tolerance(shape, magnitude, arithmetic));
  }

  ConvShape shape;
  std::vector<float> x, w;  // uniform in [-1, 1)
  std::vector<double> ref;  // float64 reference output
  double magnitude;         // magnitude_bound(shape, x, w)
};

// flops (2·N·K·C·R·S·P·Q per iteration, as a rate) and items_per_second (images).
void set_conv_counters(State& state, const ConvShape& shape);

enum class GpuVariant { naive, tiled, cudnn, cudnn_e2e };

// GPU bodies, defined in bench/conv_gpu.cpp (CUDA builds only; see GAPBENCH_GPU_BODY).
Body conv_gpu(ConvShape shape, GpuVariant variant);

}  // namespace gapbench::conv
