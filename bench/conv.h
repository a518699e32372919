// Family `conv`: what the CPU and GPU variants share. One shape's data (seeded input and filter)
// and its float64 reference are built once (fixtures/setup_cache.h) and checked against by every
// variant, each with the tolerance of its arithmetic (kernels/conv.h).
#pragma once

#include <string>
#include <vector>

#include "fixtures/harness.h"
#include "kernels/base/validate.h"
#include "kernels/conv.h"

namespace gapbench::conv {

// A shape's Problem under the run's seed, built once per process.
const Problem& cached_problem(const ConvShape& shape);

// flops (2·N·K·C·R·S·P·Q per iteration, as a rate) and items_per_second (images).
void set_conv_counters(State& state, const ConvShape& shape);

enum class GpuVariant { naive, tiled, cudnn, cudnn_e2e };

// GPU bodies, defined in bench/conv_gpu.cpp (CUDA builds only; see GAPBENCH_GPU_BODY).
Body conv_gpu(ConvShape shape, GpuVariant variant);
// cuDNN in one math mode said outright (fp32 with TF32 off, tf32, fp16 NHWC; conv_cudnn.h).
Body conv_cudnn_math_gpu(ConvShape shape, Arithmetic arithmetic, GpuTiming timing);

}  // namespace gapbench::conv
